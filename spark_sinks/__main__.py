"""Run a Spark sink connector's job without a worker: ``python -m spark_sinks connector.properties``.

The same file works with ``spark-submit spark_sinks/__main__.py connector.properties
[--worker worker.properties]``, which is how a job moves to a Spark cluster:
spark-submit's ``--master`` (and ``--jars`` for Kafka or Avro) then decide
where it runs, unless the connector sets ``spark.master`` itself.

The worker file, if given, says where the topics are (``bootstrap.servers``
for Kafka, else ``embedded.log.dir``, default ``./headrace-data``) and where
connector state goes (``streaming.state.dir``, default ``./headrace-state``).
Ctrl-C or SIGTERM stops the query cleanly; its checkpoint lets a later run,
or the same connector under a worker, resume where it stopped.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

if __package__ in (None, ""):  # run as a script (spark-submit): make the package importable, not its modules
    _here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from connect.api import (  # noqa: E402 - after the path fix above
    ConnectException,
    DeadLetterQueue,
    SinkConnector,
    StreamingSinkTask,
    StreamingSinkTaskContext,
)

log = logging.getLogger("spark_sinks")

ALIASES = {
    "HdfsSparkSink": "spark_sinks.hdfs.HdfsSparkSink",
    "ElasticsearchSparkSink": "spark_sinks.search.ElasticsearchSparkSink",
}
ERROR_HEADER_PREFIX = "__connect.errors."
PROGRESS_LOG_INTERVAL = 10.0


def load_properties(path: str) -> dict[str, str]:
    from jproperties import Properties

    props = Properties()
    with open(path, "rb") as fh:
        props.load(fh, "utf-8")
    return {k: v.data for k, v in props.items()}


def connector_class(name: str) -> type[SinkConnector]:
    target = ALIASES.get(name, name)
    module, _, attr = target.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConnectException(f"connector.class {name}: not a Spark sink connector ({exc})") from exc
    if not (isinstance(cls, type) and issubclass(cls, SinkConnector)):
        raise ConnectException(f"connector.class {name}: not a sink connector")
    return cls


def log_settings(worker: Mapping[str, str]) -> dict[str, str]:
    servers = str(worker.get("bootstrap.servers") or "").strip()
    if servers:
        out = {"bootstrap.servers": servers}
        out.update({k: v for k, v in worker.items() if k.startswith(("security.", "sasl.", "ssl.")) and v})
        return out
    return {"embedded.log.dir": os.path.abspath(worker.get("embedded.log.dir") or "./headrace-data")}


class _DeadLetterQueue(DeadLetterQueue):
    """The connector's dead-letter topic, written straight to Kafka or to the embedded log."""

    def __init__(self, topic: str, settings: Mapping[str, str], connector: str, context_headers: bool) -> None:
        self.topic = topic
        self.connector = connector
        self.context_headers = context_headers
        self._errors: list[str] = []
        if settings.get("bootstrap.servers"):
            from confluent_kafka import Producer

            self._kafka: Any = Producer({**settings, "acks": "all"})
            self._log: Any = None
        else:
            from spark_sinks.logsource import LogDeadLetterWriter

            self._kafka = None
            self._log = LogDeadLetterWriter(settings["embedded.log.dir"])

    def report(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
               headers: Sequence[tuple[str, bytes | None]], error: BaseException | str) -> None:
        hdrs = list(headers)
        if self.context_headers:
            err = error if isinstance(error, BaseException) else ConnectException(str(error))
            items = [("topic", topic), ("partition", str(partition)), ("offset", str(offset)),
                     ("connector.name", self.connector), ("task.id", "0"), ("stage", "TASK_PUT"),
                     ("class.name", "spark_sinks"),
                     ("exception.class.name", f"{type(err).__module__}.{type(err).__qualname__}"),
                     ("exception.message", str(err)),
                     ("exception.stacktrace", "".join(traceback.format_exception(err)))]
            hdrs += [(ERROR_HEADER_PREFIX + k, v.encode("utf-8")) for k, v in items]
        if self._kafka is not None:
            def on_delivery(err: Any, _msg: Any) -> None:
                if err is not None:
                    self._errors.append(str(err))

            self._kafka.produce(self.topic, value, key, headers=hdrs, on_delivery=on_delivery)
            self._kafka.poll(0)
        else:
            self._log.send(self.topic, key, value, hdrs)

    def flush(self, timeout: float | None = None) -> None:
        if self._kafka is not None:
            remaining = self._kafka.flush(timeout if timeout is not None else -1)
            errors, self._errors = self._errors, []
            if remaining:
                errors.append(f"{remaining} record(s) unacknowledged")
        else:
            errors = self._log.flush(timeout)
        if errors:
            raise ConnectException(f"Could not write to the dead letter queue topic {self.topic}: {errors[0]}")


class _Context(StreamingSinkTaskContext):
    def __init__(self, config: Mapping[str, str], worker: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._settings = log_settings(worker)
        name = self._config.get("name", "spark-sink")
        root = os.path.abspath(worker.get("streaming.state.dir") or "headrace-state")
        self._state = os.path.join(root, name)
        topic = (self._config.get("errors.deadletterqueue.topic.name") or "").strip()
        headers = (self._config.get("errors.deadletterqueue.context.headers.enable") or "").lower() == "true"
        self._dlq = _DeadLetterQueue(topic, self._settings, name, headers) if topic else None

    def configs(self) -> Mapping[str, str]:
        return self._config

    def log_settings(self) -> Mapping[str, str]:
        return self._settings

    def state_dir(self) -> str:
        os.makedirs(self._state, exist_ok=True)
        return self._state

    def dead_letter_queue(self) -> DeadLetterQueue | None:
        return self._dlq


def validate(connector: SinkConnector, props: Mapping[str, str]) -> list[str]:
    errors = [f"{name}: {err}" for name, cv in connector.validate(dict(props)).items() for err in cv.errors]
    topics = [t for t in (props.get("topics") or "").split(",") if t.strip()]
    regex = (props.get("topics.regex") or "").strip()
    if bool(topics) == bool(regex):
        errors.append("topics/topics.regex: set exactly one of them")
    return errors


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_sinks", description=__doc__.splitlines()[0])
    parser.add_argument("connector", help="the connector's .properties file")
    parser.add_argument("--worker", help="a worker .properties file: where the topics are, where state goes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    try:
        props = load_properties(args.connector)
        worker = load_properties(args.worker) if args.worker else {}
        connector = connector_class(props.get("connector.class", ""))()
        errors = validate(connector, props)
        if errors:
            print(f"ERROR {args.connector}: " + "; ".join(errors), file=sys.stderr)
            return 1
        connector.start(props)
        configs = connector.task_configs(1)
        task_config = {**configs[0], **{k: props[k] for k in ("topics", "topics.regex", "name") if props.get(k)}}
        task = connector.task_class()()
        if not isinstance(task, StreamingSinkTask):
            raise ConnectException(f"{type(connector).__name__} does not run a streaming sink task")
        task.initialize(_Context(task_config, worker))
        task.start(task_config)
    except (ConnectException, OSError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("Stopping (signal %d)", signum)
        task.stop()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    stopped = threading.Event()

    def report() -> None:  # the worker's periodic progress line, for jobs without a worker
        last = None
        while not stopped.wait(PROGRESS_LOG_INTERVAL):
            progress = dict(task.progress())
            if progress != last:
                last = progress
                log.info("Progress of %s: %s", task_config.get("name"), ", ".join(f"{k}={v}" for k, v in
                                                                                progress.items()))

    threading.Thread(target=report, name="progress", daemon=True).start()
    try:
        task.run()
    except Exception as exc:  # noqa: BLE001 - the job failed: one line, then the trace in the log
        log.error("The job failed: %s", exc, exc_info=exc)
        print(f"ERROR {exc}", file=sys.stderr)
        return 2
    finally:
        stopped.set()
        connector.stop()
        dlq = task.context.dead_letter_queue()
        if dlq is not None:
            dlq.flush(10.0)
    log.info("Stopped; final progress: %s", dict(task.progress()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
