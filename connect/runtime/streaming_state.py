"""The state folder of a streaming sink connector, and the check that it belongs to the log it reads.

A streaming task (a Spark query) resumes from its checkpoint: where it stopped in each partition. A
checkpoint written while reading one log, found by a connector of the same name reading another,
would make it skip that log's records silently. So the folder records what it was made for
(``source.json``: the log and the topics), and a task refuses to start on a folder made for another
source, in one line naming both.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.errors import ConnectException
from connect.runtime.worker_config import LEGACY_STREAMING_STATE_DIR, WorkerConfig

__all__ = ["SOURCE_FILE", "StreamingStateFolder"]

log = logging.getLogger(__name__)

SOURCE_FILE = "source.json"


def _describe(source: Mapping[str, Any]) -> str:
    topics = source.get("topics")
    what = f"topics {','.join(topics)}" if isinstance(topics, list) else f"topics matching {topics}"
    return f"{source.get('log')} ({what})"


class StreamingStateFolder:
    """``<streaming state root>/<connector>``, claimed for one log and one set of topics."""

    def __init__(self, worker_config: WorkerConfig, connector: str, log_settings: Mapping[str, str],
                 topics: Sequence[str], topics_regex: str | None) -> None:
        self.connector = connector
        self.path = os.path.join(worker_config.streaming_state_root, connector)
        self._explicit = bool(worker_config.streaming_state_dir)
        if "bootstrap.servers" in log_settings:
            servers = sorted(s.strip() for s in log_settings["bootstrap.servers"].split(",") if s.strip())
            where = "Kafka at " + ",".join(servers)
        else:
            where = "the embedded log at " + os.path.abspath(log_settings.get("embedded.log.dir", ""))
        self.source: dict[str, Any] = {"log": where, "topics": topics_regex or sorted(topics)}

    def claim(self) -> str:
        """The folder, created and marked as this source's; raises ConnectException when it is another's."""
        self._refuse_legacy_state()
        marker = os.path.join(self.path, SOURCE_FILE)
        try:
            with open(marker, encoding="utf-8") as fh:
                recorded = json.load(fh)
        except FileNotFoundError:
            recorded = None
        except (OSError, ValueError) as exc:
            raise ConnectException(f"Connector {self.connector}: cannot read {marker}: {exc}") from exc
        if recorded is not None and recorded != self.source:
            raise ConnectException(
                f"Connector {self.connector}: the streaming state in {self.path} was written reading "
                f"{_describe(recorded)}, not {_describe(self.source)}; refusing to resume from it (delete the "
                f"folder to start over, or give this worker its own streaming.state.dir)")
        if recorded is None:
            if os.path.isdir(self.path) and os.listdir(self.path):
                raise ConnectException(
                    f"Connector {self.connector}: {self.path} holds streaming state that does not say which log "
                    f"it was written reading; refusing to resume from it (if it is this connector's, from "
                    f"{_describe(self.source)}, write {json.dumps(self.source)} into {marker}; else delete the "
                    f"folder to start over)")
            os.makedirs(self.path, exist_ok=True)
            tmp = marker + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self.source, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, marker)
            log.info("Connector %s keeps its streaming state in %s, for %s", self.connector, self.path,
                     _describe(self.source))
        return self.path

    def _refuse_legacy_state(self) -> None:
        """State under the old default folder (``./headrace-state``) is not picked up silently by the new one."""
        if self._explicit or os.path.exists(self.path):
            return
        legacy = os.path.join(os.path.abspath(LEGACY_STREAMING_STATE_DIR), self.connector)
        if legacy != self.path and os.path.isdir(legacy) and os.listdir(legacy):
            raise ConnectException(
                f"Connector {self.connector}: found its streaming state in {legacy} (the former default); set "
                f"streaming.state.dir={os.path.dirname(legacy)} to resume from it, or move it to {self.path}")
