"""Each benchmark's headline starts from the shipped configs/ files, changing only what a run cannot share with a
user's set-up, and its tuned variant changes exactly what its label says (issue #37: headline figures came from
unlabelled tuning)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from connect.runtime.properties import parse_properties

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def _bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _shipped(name: str) -> dict[str, str]:
    return parse_properties((ROOT / "configs" / name).read_text())


def _diff(written: dict[str, str], shipped: dict[str, str]) -> dict[str, str | None]:
    keys = set(written) | set(shipped)
    return {k: written.get(k) for k in keys if written.get(k) != shipped.get(k)}


def _file_diff(path: Path, name: str) -> dict[str, str | None]:
    return _diff(parse_properties(path.read_text()), _shipped(name))


def test_with_changes_sets_in_place_appends_and_drops() -> None:
    configs = _bench("_configs")
    text = "# a comment\na=1\nb=2\n"
    assert configs.with_changes(text, {"a": "9", "b": None, "c": "3"}) == "# a comment\na=9\nc=3\n"
    assert configs.Variant("shipped").title() == "shipped configs/ (headline)"
    tuned = configs.Variant("tuned", "x=1", worker={"x": "1"})
    assert not tuned.shipped and tuned.title() == "tuned: x=1"


@pytest.mark.parametrize("role", ["source", "sink"])
def test_kafka_pipeline_headline_is_shipped_plus_bootstrap(tmp_path: Path, role: str) -> None:
    bench = _bench("bench_kafka_pipeline")
    topic_key = "topic" if role == "source" else "topics"
    name = bench.write_run_configs(tmp_path, role, "127.0.0.1:9092", bench.variants(5000)["shipped"],
                                   {"name": "n", topic_key: "t"})
    worker = _file_diff(tmp_path / bench.WORKER, bench.WORKER)
    assert set(worker) == {"bootstrap.servers", "listeners"}
    assert worker["bootstrap.servers"] == "127.0.0.1:9092"
    assert _file_diff(tmp_path / name, name) == {"name": "n", topic_key: "t"}


def test_kafka_pipeline_tuned_changes_what_its_label_says(tmp_path: Path) -> None:
    bench = _bench("bench_kafka_pipeline")
    tuned = bench.variants(5000)["tuned"]
    name = bench.write_run_configs(tmp_path, "source", "b:9092", tuned, {"name": "n", "topic": "t"})
    worker = _file_diff(tmp_path / bench.WORKER, bench.WORKER)
    assert worker == {"bootstrap.servers": "b:9092", "listeners": "",
                      "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                      "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                      "key.converter.schemas.enable": None, "value.converter.schemas.enable": None,
                      "consumer.max.poll.records": "5000", "offset.flush.interval.ms": "60000"}
    assert _file_diff(tmp_path / name, name) == {"name": "n", "topic": "t", "batch.size": "5000"}
    for label in ("StringConverter", "batch.size=5000", "max.poll.records=5000", "offset.flush.interval.ms=60000",
                  "listeners="):
        assert label in tuned.changes


@pytest.mark.parametrize("transforms", [False, True])
def test_transform_pipeline_headline_is_shipped_plus_what_the_case_needs(tmp_path: Path, transforms: bool) -> None:
    bench = _bench("bench_transform_pipeline")
    bench.write_case_configs(tmp_path, 18083, transforms, bench.VARIANTS["shipped"])
    assert _file_diff(tmp_path / bench.WORKER, bench.WORKER) == {"listeners": "http://127.0.0.1:18083"}
    assert _file_diff(tmp_path / bench.SOURCE, bench.SOURCE) == bench.INTRINSIC_SOURCE
    assert _file_diff(tmp_path / bench.SINK, bench.SINK) == {
        **bench.INTRINSIC_SINK, "name": "bench-sink", **(bench.CHAIN if transforms else {})}


def test_transform_pipeline_tuned_changes_what_its_label_says(tmp_path: Path) -> None:
    bench = _bench("bench_transform_pipeline")
    tuned = bench.VARIANTS["tuned"]
    bench.write_case_configs(tmp_path, 18083, False, tuned)
    assert _file_diff(tmp_path / bench.SOURCE, bench.SOURCE) == {**bench.INTRINSIC_SOURCE, "batch.size": "5000"}
    assert _file_diff(tmp_path / bench.SINK, bench.SINK) == {
        **bench.INTRINSIC_SINK, "name": "bench-sink", "consumer.override.max.poll.records": "5000"}
    assert "StringConverter" in tuned.changes and "batch.size=5000" in tuned.changes


def test_metrics_headline_is_shipped(tmp_path: Path) -> None:
    bench = _bench("bench_metrics")
    shipped = bench.VARIANTS["shipped"]
    bench.write_worker(tmp_path, 18083, shipped)
    assert _file_diff(tmp_path / bench.WORKER, bench.WORKER) == {"listeners": "http://127.0.0.1:18083"}
    for name in (bench.SOURCE, bench.SINK):
        body = bench._connector(name, shipped)
        assert body == {k: v for k, v in _shipped(name).items() if k != "name"}
    tuned = bench.VARIANTS["tuned"]
    assert bench._connector(bench.SOURCE, tuned)["batch.size"] == "5000"
    assert "batch.size=5000" in tuned.changes and "offset.flush.interval.ms=500" in tuned.changes


def test_exactly_once_headline_is_shipped_plus_the_mode(tmp_path: Path) -> None:
    bench = _bench("bench_exactly_once")
    bench.write_run_configs(tmp_path, {}, "t", "poll", bench.variants(5000)["shipped"])
    worker = _file_diff(tmp_path / bench.WORKER, bench.WORKER)
    assert set(worker) == {"listeners", "exactly.once.source.support", "offset.storage.topic", "config.storage.topic"}
    source = _file_diff(tmp_path / bench.SOURCE, bench.SOURCE)
    assert set(source) == {"name", "topic", "exactly.once.support", "transaction.boundary",
                           "transaction.boundary.interval.ms"}
    assert source["transaction.boundary"] == "poll"


def test_redis_headline_puts_kafka_connects_poll_size() -> None:
    bench = _bench("bench_redis")
    variants = bench.variants(1000)
    assert variants["shipped"].shipped
    assert bench._put_batch(variants["shipped"]) == 500
    assert bench._put_batch(variants["tuned"]) == 1000
    assert "batch.size=1000" in variants["tuned"].changes


def test_spark_cluster_headline_is_the_shipped_sink_files() -> None:
    bench = _bench("bench_spark_cluster")
    shipped = bench.VARIANTS["shipped"]
    hdfs = bench.hdfs_sink_props(shipped, "local[2]", "hdfs://h:1", "t", "n", "/run")
    assert set(_diff(hdfs, _shipped(bench.HDFS))) == {"hdfs.url", "name", "topics", "topics.dir", "logs.dir",
                                                      "value.schema"}
    search = bench.search_sink_props(shipped, "local[2]", "http://o:1", "t", "n", "idx")
    assert set(_diff(search, _shipped(bench.SEARCH))) == {"connection.url", "name", "topics", "index.name.format"}
    tuned = bench.hdfs_sink_props(bench.VARIANTS["tuned"], "local[2]", "hdfs://h:1", "t", "n", "/run")
    assert tuned["trigger.interval.ms"] == "500" and "flush.size" not in tuned
    assert "trigger.interval.ms=500" in bench.VARIANTS["tuned"].changes


@pytest.mark.parametrize("tasks", [1, 2])
def test_task_scaling_headline_is_shipped_plus_string_converter_and_the_tasks(tmp_path: Path, tasks: int) -> None:
    bench = _bench("bench_task_scaling")
    string = {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter",
              "key.converter.schemas.enable": None, "value.converter.schemas.enable": None}
    bench.write_run_configs(tmp_path, tasks, bench.MODES["hosts"], port=18083)
    assert _file_diff(tmp_path / bench.WORKER, bench.WORKER) == {"listeners": "http://127.0.0.1:18083", **string}
    assert _file_diff(tmp_path / bench.SINK, bench.SINK) == ({"tasks.max": "2"} if tasks == 2 else {})
    bench.write_run_configs(tmp_path, tasks, bench.MODES["in-worker"], port=18083)
    assert _file_diff(tmp_path / bench.WORKER, bench.WORKER) == {"listeners": "http://127.0.0.1:18083", **string,
                                                                 "task.processes": "0"}
    assert "task.processes=0" in bench.MODES["in-worker"].changes
    # the sink reads the shipped topic, into the shipped file, from the shipped log directory
    sink = _shipped(bench.SINK)
    assert (sink["topics"], sink["file"]) == (bench.TOPIC, bench.SINK_FILE)
    assert _shipped(bench.WORKER)["embedded.log.dir"] == bench.LOG_DIR
