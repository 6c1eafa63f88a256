"""Source offsets: where each source partition of a connector has been read up to.

Keys and values use Kafka Connect's formats (the offset topic's): the key is
the JSON text of ``["<connector>", {source partition}]`` and the value the
JSON text of the offset map; a None value is a reset. ``FileOffsetStore``
keeps them in ``offset.storage.file.filename`` for standalone workers, and
``KafkaOffsetStore`` (``offset_backing_store``) in a compacted topic for
distributed ones.
"""

from __future__ import annotations

import abc
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from connect.api.connector import OffsetStorageReader
from connect.log.api import ClientStats

__all__ = ["ConnectorOffsetReader", "FileOffsetStore", "OffsetFileError", "OffsetStore", "offset_key"]

log = logging.getLogger(__name__)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def offset_key(connector: str, partition: Mapping[str, Any]) -> str:
    return _json([connector, partition])


class OffsetStore(abc.ABC):
    """Durable map of (connector, source partition) -> source offset."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, str] = {}

    @abc.abstractmethod
    def start(self) -> None: ...

    def stop(self) -> None:  # noqa: B027 - optional hook
        pass

    def client_stats(self) -> tuple[ClientStats, ...]:
        """Traffic of the log clients that carry the offsets (a file or memory: none)."""
        return ()

    @abc.abstractmethod
    def _persist(self, changes: Mapping[str, str | None]) -> None:
        """Make ``changes`` durable (None deletes); called with the lock held."""

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(offset_key(connector, partition))
        return None if raw is None else json.loads(raw)

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        with self._lock:
            items = list(self._data.items())
        out = []
        for key, value in items:
            name, partition = json.loads(key)
            if name == connector:
                out.append((partition, json.loads(value)))
        return out

    def put(self, connector: str, offsets: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        changes = {offset_key(connector, p): (None if o is None else _json(o)) for p, o in offsets}
        if not changes:
            return
        with self._lock:
            for key, value in changes.items():
                if value is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = value
            self._persist(changes)

    def put_raw_pairs(self, connector: str, pairs: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        """Commit offsets already keyed by ``offset_key`` (the source task's hot path keeps them so)."""
        self.put_raw({key: (None if off is None else _json(off)) for key, (_p, off) in pairs.items()})

    def put_raw(self, changes: Mapping[str, str | None]) -> None:
        with self._lock:
            for key, value in changes.items():
                if value is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = value
            self._persist(changes)

    def reset(self, connector: str) -> None:
        self.put(connector, [(p, None) for p, _ in self.connector_offsets(connector)])


class OffsetFileError(OSError):
    """The offsets file cannot be read; the message names the file and the reason."""


def _is_offset_key(key: str) -> bool:
    try:
        doc = json.loads(key)
    except ValueError:
        return False
    return isinstance(doc, list) and len(doc) == 2 and isinstance(doc[0], str) and isinstance(doc[1], dict)


class FileOffsetStore(OffsetStore):
    """Offsets in one JSON file, replaced atomically (write, fsync, rename) on every commit."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)

    def start(self) -> None:
        if self.path.exists():
            self._data = self._load()
        log.info("Loaded %d source offsets from %s", len(self._data), self.path)

    def _load(self) -> dict[str, str]:
        """The file's offsets; anything but this store's own format is refused, never half-read."""
        try:
            doc = json.loads(self.path.read_text("utf-8") or "{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise OffsetFileError(f"{self.path}: offset file is not valid JSON: {exc}") from None
        offsets = doc.get("offsets", doc) if isinstance(doc, dict) else doc
        if not isinstance(offsets, dict):
            raise OffsetFileError(f"{self.path}: offset file is not a JSON object of offsets "
                                  f'({{"version": 1, "offsets": {{...}}}}) but {type(offsets).__name__}')
        for key, value in offsets.items():
            if not isinstance(value, str) or not _is_offset_key(key):
                raise OffsetFileError(f"{self.path}: offset file entry {key!r} is not an offset written by a "
                                      "standalone worker (key [connector, partition], value a JSON text)")
        return dict(offsets)

    def _persist(self, changes: Mapping[str, str | None]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        # owner-only: offsets say what was read where, and nobody else needs to know
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "offsets": self._data}, fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class ConnectorOffsetReader(OffsetStorageReader):
    """What a source connector's tasks see: offsets of that connector only."""

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self.store = store
        self.connector = connector

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.store.get(self.connector, partition)
