"""The Spark sinks' micro-batch figures in /metrics, from a real local Spark query, read with prometheus_client's
own text parser."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.spark.support import Worker, connector_file, produce_json, spark_props, wait_until

# Spark runs inside the test's own worker (local master, embedded log, file:// output): beside the services group
pytestmark = [pytest.mark.beside_services, pytest.mark.timeout(300)]


def _spark_samples(worker: Worker) -> dict[str, Any]:
    """headrace_spark_sink_* samples of task 0 of connector "files", by sample name."""
    with worker.http() as c:
        r = c.get("/metrics")
    assert r.status_code == 200, r.text
    out: dict[str, Any] = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            if s.name.startswith("headrace_spark_sink_") and s.labels == {"connector": "files", "task": "0"}:
                out[s.name] = s.value
    return out


def test_micro_batch_figures_per_connector_and_task(tmp_path) -> None:
    topic = "spark-metrics"
    produce_json(tmp_path / "data", topic, 3000, partitions=2)
    out = tmp_path / "landed"
    conn = connector_file(tmp_path, "files", connector__class="HdfsSparkSink", topics=topic,
                          hdfs__url=f"file://{out}", topics__dir="/topics", logs__dir="/logs", format="json",
                          **spark_props(max__offsets__per__trigger=1000))
    worker = Worker(tmp_path, conn).start()
    try:
        first = wait_until(lambda: (m := _spark_samples(worker)).get("headrace_spark_sink_records_total", 0) >= 3000
                           and m, 240, interval=1.0, what="3000 records counted in /metrics")
        # at most 1000 records a trigger: three batches at least, each timed
        assert first["headrace_spark_sink_batches_completed_total"] >= 3
        assert first["headrace_spark_sink_batch_duration_seconds_count"] == \
            first["headrace_spark_sink_batches_completed_total"]
        assert first["headrace_spark_sink_batch_duration_seconds_sum"] > 0
        assert 0 < first["headrace_spark_sink_last_batch_records"] <= 1000
        assert first["headrace_spark_sink_last_batch_duration_seconds"] > 0
        assert first["headrace_spark_sink_input_rows_per_second"] >= 0
        assert first["headrace_spark_sink_processed_rows_per_second"] > 0

        # more records: the counters move on
        produce_json(tmp_path / "data", topic, 500, partitions=2, start=3000)
        later = wait_until(lambda: (m := _spark_samples(worker)).get("headrace_spark_sink_records_total", 0) >= 3500
                           and m, 120, interval=1.0, what="3500 records counted in /metrics")
        assert later["headrace_spark_sink_batches_completed_total"] > first["headrace_spark_sink_batches_completed_total"]
        assert later["headrace_spark_sink_batch_duration_seconds_sum"] > \
            first["headrace_spark_sink_batch_duration_seconds_sum"]

        with worker.http() as c:
            assert c.delete("/connectors/files").status_code == 204
        wait_until(lambda: _spark_samples(worker) == {}, 60, interval=1.0, what="the series gone after delete")
    except (AssertionError, httpx.HTTPError):
        print(worker.log()[-5000:])
        raise
    finally:
        worker.stop()
