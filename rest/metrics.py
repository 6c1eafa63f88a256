"""Kafka Connect's metrics in the Prometheus text format, named as Strimzi's JMX-exporter rules name them.

A custom collector: every scrape asks the herder for one ``WorkerMetrics`` snapshot and turns it into metric
families, so the runtime keeps only the integer counters it already has, a task that goes away takes its
series with it, and there are no ``_created`` series. String attributes (status, connector class) follow
the JMX exporter's convention: a gauge of value 1 carrying the string in a label.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from connect.runtime.herder import Herder
from connect.runtime.metrics_snapshot import TaskMetrics, WorkerMetrics

__all__ = ["HerderMetricsCollector"]

_TASK_STATES = ("running", "paused", "failed", "unassigned", "destroyed", "restarting")
# WorkerTask.metrics() keys -> (Strimzi metric name, is a counter); the counters end in _total once exported
_SOURCE = {"records_polled": ("kafka_connect_source_task_source_record_poll", True),
           "records_written": ("kafka_connect_source_task_source_record_write", True)}
_SINK = {"records_read": ("kafka_connect_sink_task_sink_record_read", True),
         "records_put": ("kafka_connect_sink_task_sink_record_send", True),
         "offset_commit_completion": ("kafka_connect_sink_task_offset_commit_completion", True),
         "partition_count": ("kafka_connect_sink_task_partition_count", False)}
# the task-error group: the JMX exporter types these (no "-total" suffix) as gauges
_ERRORS = {"records_failed": "kafka_connect_task_error_total_record_failures",
           "records_skipped": "kafka_connect_task_error_total_records_skipped",
           "retries": "kafka_connect_task_error_total_retries",
           "errors_logged": "kafka_connect_task_error_total_errors_logged",
           "dlq_produce_requests": "kafka_connect_task_error_deadletterqueue_produce_requests",
           "dlq_produce_failures": "kafka_connect_task_error_deadletterqueue_produce_failures"}
_TASK_LABELS = ["connector", "task"]
# a Spark sink task's query progress (spark_sinks/task.py) -> (name, kind, scale); Kafka Connect has no such
# group. Spark reports milliseconds; Prometheus wants seconds. Its rows/s figures are Spark's own.
_SPARK = {"batches_completed": ("headrace_spark_sink_batches_completed", "counter", 1.0),
          "records_total": ("headrace_spark_sink_records", "counter", 1.0),
          "last_batch_records": ("headrace_spark_sink_last_batch_records", "gauge", 1.0),
          "last_batch_ms": ("headrace_spark_sink_last_batch_duration_seconds", "gauge", 0.001),
          "input_records_per_sec": ("headrace_spark_sink_input_rows_per_second", "gauge", 1.0),
          "records_per_sec": ("headrace_spark_sink_processed_rows_per_second", "gauge", 1.0)}
_SPARK_DOCS = {"headrace_spark_sink_batches_completed": "Micro-batches the Spark query completed",
               "headrace_spark_sink_records": "Records the Spark query wrote since the task started",
               "headrace_spark_sink_last_batch_records": "Records in the last non-empty micro-batch",
               "headrace_spark_sink_last_batch_duration_seconds": "How long the last non-empty micro-batch took",
               "headrace_spark_sink_input_rows_per_second": "Spark's inputRowsPerSecond of the last batch",
               "headrace_spark_sink_processed_rows_per_second": "Spark's processedRowsPerSecond of the last batch"}


class _Family:
    """One metric family as rows of label values; turned into prometheus_client's family, or written directly."""

    __slots__ = ("name", "type", "documentation", "labels", "rows")

    def __init__(self, kind: str, name: str, documentation: str, labels: list[str] | None = None,
                 value: float | None = None) -> None:
        self.type = kind
        self.name = name
        self.documentation = documentation
        self.labels = tuple(labels or ())
        self.rows: list[tuple[tuple[str, ...], float]] = []
        if value is not None:
            self.rows.append(((), value))

    def add_metric(self, labels: list[str], value: float) -> None:
        self.rows.append((tuple(labels), value))

    def to_metric(self) -> Metric:
        if self.type == "summary":  # rows of a summary come in pairs: _count then _sum (see _summary_rows)
            summary = SummaryMetricFamily(self.name, self.documentation, labels=list(self.labels))
            for (values, count), (_, total) in zip(self.rows[::2], self.rows[1::2], strict=True):
                summary.add_metric(list(values), count_value=int(count), sum_value=total)
            return summary
        cls = CounterMetricFamily if self.type == "counter" else GaugeMetricFamily
        family = cls(self.name, self.documentation, labels=list(self.labels))
        for values, value in self.rows:
            family.add_metric(list(values), value)
        return family

    def add_summary(self, labels: list[str], count: float, total: float) -> None:
        self.rows.append((tuple(labels), count))
        self.rows.append((tuple(labels), total))


def _counter(name: str, documentation: str, labels: list[str] | None = None, value: float | None = None) -> _Family:
    return _Family("counter", name, documentation, labels, value)


def _gauge(name: str, documentation: str, labels: list[str] | None = None, value: float | None = None) -> _Family:
    return _Family("gauge", name, documentation, labels, value)


class HerderMetricsCollector(Collector):
    def __init__(self, herder: Herder) -> None:
        self.herder = herder

    def families(self) -> list[_Family]:
        snapshot = self.herder.metrics_snapshot()
        return [*_worker_families(snapshot), *_connector_families(snapshot), *_task_families(snapshot.tasks),
                *_client_families(snapshot)]

    def collect(self) -> Iterator[Metric]:
        for family in self.families():
            yield family.to_metric()

    def render(self) -> bytes:
        """The Prometheus text format, byte for byte what ``generate_latest`` writes for ``collect()``.

        ``generate_latest`` makes and formats every sample's labels afresh (a dict, sorting, escaping: about
        6 us a sample), 70 ms of CPU for 800 tasks' 13,600 series. Here the label string of a task is made
        once and shared by its series, and values are formatted through a cache
        (tests/observability/test_metrics_units.py checks the bytes are the same).
        """
        out: list[str] = []
        append = out.append
        # kept across scrapes: the same tasks come back each time, so their label strings are made once
        label_strings = _LABEL_TEXT
        values = _VALUE_TEXT
        if len(values) > 100_000:
            values.clear()
        if len(label_strings) > 200_000:
            label_strings.clear()
        for f in self.families():
            name = f.name + "_total" if f.type == "counter" else f.name
            doc = f.documentation.replace("\\", r"\\").replace("\n", r"\n")
            append(f"# HELP {name} {doc}\n# TYPE {name} {f.type}\n")
            order = sorted(range(len(f.labels)), key=f.labels.__getitem__)
            names = tuple(f.labels[i] for i in order)
            suffixes = ("_count", "_sum") if f.type == "summary" else ("",)
            for i, (row, value) in enumerate(f.rows):
                sample = name + suffixes[i % len(suffixes)]
                text = values.get(value)
                if text is None:
                    text = values[value] = floatToGoString(value)
                if not row:
                    append(f"{sample} {text}\n")
                    continue
                key = (names, row)
                labels = label_strings.get(key)
                if labels is None:
                    labels = label_strings[key] = ",".join(
                        f'{n}="{_escape_label_value(row[i])}"' for n, i in zip(names, order, strict=True))
                append(f"{sample}{{{labels}}} {text}\n")
        return "".join(out).encode("utf-8")


_VALUE_TEXT: dict[float, str] = {}
_LABEL_TEXT: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}


def _escape_label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def _worker_families(s: WorkerMetrics) -> Iterator[_Family]:
    yield _gauge("kafka_connect_worker_connector_count", "Connectors on this worker",
                            value=len(s.connectors))
    yield _gauge("kafka_connect_worker_task_count", "Tasks on this worker", value=len(s.tasks))
    # what the group coordinator assigned this worker; a standalone worker runs everything itself
    yield _gauge("kafka_connect_coordinator_assigned_connectors", "Connectors assigned to this worker",
                            value=len(s.connectors))
    yield _gauge("kafka_connect_coordinator_assigned_tasks", "Tasks assigned to this worker",
                            value=len(s.tasks))
    for kind in ("connector", "task"):
        attempts = s.startup.get(f"{kind}_startup_attempts", 0)
        for what in ("attempts", "success", "failure"):
            yield _counter(f"kafka_connect_worker_{kind}_startup_{what}",
                                      f"{kind.capitalize()} starts on this worker ({what})",
                                      value=s.startup.get(f"{kind}_startup_{what}", 0))
        for what in ("success", "failure"):
            ratio = s.startup.get(f"{kind}_startup_{what}", 0) / attempts if attempts else 0.0
            yield _gauge(f"kafka_connect_worker_{kind}_startup_{what}_percentage",
                                    f"Fraction (0-1) of {kind} starts that ended in {what}", value=ratio)
    per_state = {state: _gauge(f"kafka_connect_worker_connector_{state}_task_count",
                               f"Tasks of the connector on this worker that are {state}", ["connector"])
                 for state in ("total", *_TASK_STATES)}
    for c in s.connectors:
        per_state["total"].add_metric([c.name], sum(c.task_states.values()))
        for state in _TASK_STATES:
            per_state[state].add_metric([c.name], c.task_states.get(state.upper(), 0))
    yield from per_state.values()
    if s.rebalance is not None:
        yield _counter("kafka_connect_worker_rebalance_completed_rebalances",
                                  "Rebalances this worker completed", value=s.rebalance["completed_rebalances"])
        yield _gauge("kafka_connect_worker_rebalance_epoch", "The group generation of this worker",
                                value=s.rebalance["epoch"])
        yield _gauge("kafka_connect_worker_rebalance_rebalancing", "1 while a rebalance is under way",
                                value=s.rebalance["rebalancing"])


def _connector_families(s: WorkerMetrics) -> Iterator[_Family]:
    cls = _gauge("kafka_connect_connector_connector_class", "The connector's class (value 1)",
                 ["connector", "connector_class"])
    kind = _gauge("kafka_connect_connector_connector_type", "source or sink (value 1)", ["connector", "connector_type"])
    version = _gauge("kafka_connect_connector_connector_version", "The connector's version (value 1)",
                     ["connector", "connector_version"])
    status = _gauge("kafka_connect_connector_status", "The connector's state (value 1)", ["connector", "status"])
    dlq = _counter("headrace_connector_dlq_records", "Records the connector's tasks sent to its dead "
                              "letter queue", labels=["connector"])
    dlq_counts: dict[str, int] = {}
    for t in s.tasks:
        dlq_counts[t.connector] = dlq_counts.get(t.connector, 0) + int(t.counters.get("dlq_produce_requests", 0))
    for c in s.connectors:
        cls.add_metric([c.name, c.connector_class], 1)
        kind.add_metric([c.name, c.type], 1)
        version.add_metric([c.name, c.version], 1)
        status.add_metric([c.name, c.state.lower()], 1)
        dlq.add_metric([c.name], dlq_counts.get(c.name, 0))
    yield from (cls, kind, version, status, dlq)


def _task_families(tasks: tuple[TaskMetrics, ...]) -> Iterator[_Family]:
    status = _gauge("kafka_connect_connector_task_status", "The task's state (value 1)", [*_TASK_LABELS, "status"])
    running = _gauge("kafka_connect_connector_task_running_ratio", "1 while the task runs, else 0", _TASK_LABELS)
    paused = _gauge("kafka_connect_connector_task_pause_ratio", "1 while the task is paused, else 0", _TASK_LABELS)
    families: dict[str, _Family] = {}
    for table in (_SOURCE, _SINK):
        for name, counter in table.values():
            families[name] = (_counter(name, name, labels=_TASK_LABELS) if counter
                              else _gauge(name, name, _TASK_LABELS))
    for name in _ERRORS.values():
        families[name] = _gauge(name, name, _TASK_LABELS)
    lag = _gauge("headrace_sink_task_partition_lag", "Log end offset minus the committed offset",
                 [*_TASK_LABELS, "topic", "partition"])
    restart_tries = _gauge("headrace_task_restart_tries", "Automatic restarts made of the FAILED task",
                           _TASK_LABELS)
    next_restart = _gauge("headrace_task_next_restart_timestamp_seconds",
                          "When the next automatic restart is due (epoch seconds)", _TASK_LABELS)
    spark = {name: _Family(kind, name, _SPARK_DOCS[name], _TASK_LABELS) for name, kind, _ in _SPARK.values()}
    batch_seconds = _Family("summary", "headrace_spark_sink_batch_duration_seconds",
                            "Time the Spark query's completed micro-batches took", _TASK_LABELS)
    # the hot loop of a scrape (13 rows a task): rows go straight onto the families' lists, labels as tuples
    status_rows, running_rows, paused_rows, lag_rows = status.rows, running.rows, paused.rows, lag.rows
    source_rows = [(key, families[name].rows) for key, (name, _) in _SOURCE.items()]
    sink_rows = [(key, families[name].rows) for key, (name, _) in _SINK.items()]
    error_rows = [(key, families[name].rows) for key, name in _ERRORS.items()]
    for t in tasks:
        labels = (t.connector, str(t.task))
        state = t.state.lower()
        counters = t.counters
        status_rows.append(((*labels, state), 1))
        running_rows.append((labels, 1 if state == "running" else 0))
        paused_rows.append((labels, 1 if state == "paused" else 0))
        for key, rows in (source_rows if t.kind == "source" else sink_rows):
            if key in counters:
                rows.append((labels, counters[key]))
        for key, rows in error_rows:
            rows.append((labels, counters.get(key, 0)))
        # a topic resolved from a config provider arrives as "[hidden]" (metrics_snapshot.without_secrets)
        for (topic, partition), value in t.partition_lag.items():
            lag_rows.append(((*labels, topic, str(partition)), value))
        if "batches_completed" in t.counters:  # a Spark sink: its query's progress is in its counters
            for key, (name, _, scale) in _SPARK.items():
                if key in t.counters:
                    spark[name].add_metric(list(labels), t.counters[key] * scale)
            batch_seconds.add_summary(list(labels), t.counters["batches_completed"],
                                      t.counters.get("batch_duration_ms_sum", 0) / 1000)
        if t.restart is not None:
            restart_tries.add_metric(list(labels), t.restart.tries)
            if t.restart.next_restart_ms is not None:
                next_restart.add_metric(list(labels), t.restart.next_restart_ms / 1000)
    yield status
    yield running
    yield paused
    yield from families.values()
    yield lag
    yield restart_tries
    yield next_restart
    yield from spark.values()
    yield batch_seconds


def _client_families(s: WorkerMetrics) -> Iterator[_Family]:
    """Kafka's client metrics (``type=producer-metrics,client-id=...``) as Strimzi's rules name them: the
    dashboard's byte-rate and connection-count panels read these. Clients that share an id (an override
    can make them) add up, so the scrape never holds the same series twice."""
    traffic: dict[tuple[str, str], list[int]] = {}
    connections: dict[tuple[str, str], int] = {}
    for c in (*s.clients, *(c for t in s.tasks for c in t.clients)):
        totals = traffic.setdefault((c.kind, c.client_id), [0, 0])
        totals[0] += c.outgoing_bytes
        totals[1] += c.incoming_bytes
        if c.connections is not None:
            connections[(c.kind, c.client_id)] = connections.get((c.kind, c.client_id), 0) + c.connections
    families: dict[str, _Family] = {}
    for (kind, client_id), (sent, received) in traffic.items():
        for direction, value in (("outgoing", sent), ("incoming", received)):
            name = f"kafka_{'admin_client' if kind == 'admin' else kind}_{direction}_byte"
            if name not in families:
                families[name] = _counter(name, f"Bytes the {kind} {'sent' if direction == 'outgoing' else 'received'}"
                                          " (the embedded log: bytes of record batches written or read)",
                                          ["clientid"])
            families[name].add_metric([client_id], value)
    for (kind, client_id), count in connections.items():
        name = f"kafka_{'admin_client' if kind == 'admin' else kind}_connection_count"
        if name not in families:
            families[name] = _gauge(name, f"Broker connections the {kind} holds open", ["clientid"])
        families[name].add_metric([client_id], count)
    yield from families.values()
