"""Plugins that tests/e2e/test_error_handling.py loads into a real worker through ``plugin.path``.

The file is copied into a plugin folder by the tests; it imports only the SDK, like any third-party plugin.

- RecordingSinkConnector / RecordingSinkTask: appends every record it is given as one JSON line
  (topic, partition, offset, key, value, headers). ``fail.puts`` makes its first N ``put`` calls raise
  RetriableException; records whose value contains ``reject.marker`` are handed to the errant-record
  reporter instead of being written, and ``flush`` waits for those reports to be acknowledged.
- FlakyTransform: raises RetriableException for its first ``failures`` calls, then passes records through.
"""

from __future__ import annotations

import json

from connect.api import (
    ConfigDef,
    ConfigType,
    DataException,
    Importance,
    RetriableException,
    SinkConnector,
    SinkTask,
    Transformation,
)

__all__ = ["FlakyTransform", "RecordingSinkConnector", "RecordingSinkTask"]


def _plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return str(value)


class RecordingSinkConnector(SinkConnector):
    def version(self):
        return "1.0"

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return RecordingSinkTask

    def task_configs(self, max_tasks):
        return [dict(self.props)]

    def stop(self):
        pass

    def config(self):
        return (
            ConfigDef()
            .define("out", ConfigType.STRING, importance=Importance.HIGH, documentation="JSON-lines output file")
            .define("fail.puts", ConfigType.INT, 0, importance=Importance.LOW,
                    documentation="how many put calls fail with RetriableException first")
            .define("reject.marker", ConfigType.STRING, "", importance=Importance.LOW,
                    documentation="values containing this text go to the errant record reporter")
        )


class RecordingSinkTask(SinkTask):
    def version(self):
        return "1.0"

    def start(self, props):
        self.out = open(props["out"], "a", encoding="utf-8")
        self.fail_puts = int(props.get("fail.puts") or 0)
        self.marker = props.get("reject.marker") or None
        self.reporter = self.context.errant_record_reporter() if self.marker else None
        self.pending = []

    def put(self, records):
        if self.fail_puts > 0:
            self.fail_puts -= 1
            self.context.timeout(100)  # as a Kafka sink task sets its redelivery backoff (default 1 s)
            raise RetriableException(f"not ready yet ({self.fail_puts} more failures to come)")
        for r in records:
            if self.marker and self.marker in str(r.value):
                self.pending.append(self.reporter.report(r, DataException(f"rejected by the sink: {r.value}")))
                continue
            line = {
                "topic": r.topic,
                "partition": r.kafka_partition,
                "offset": r.kafka_offset,
                "key": _plain(r.key),
                "value": _plain(r.value),
                "headers": [[h.key, _plain(h.value)] for h in r.headers],
            }
            self.out.write(json.dumps(line) + "\n")

    def flush(self, current_offsets):
        for future in self.pending:
            future.result(30)
        self.pending.clear()
        self.out.flush()

    def stop(self):
        self.out.close()


class FlakyTransform(Transformation):
    def configure(self, configs):
        self.left = int(configs.get("failures", 3))

    def apply(self, record):
        if self.left > 0:
            self.left -= 1
            raise RetriableException(f"transform backend unavailable ({self.left} more failures to come)")
        return record

    def config(self):
        return ConfigDef().define("failures", ConfigType.INT, 3, importance=Importance.LOW,
                                  documentation="how many calls fail before records pass")
