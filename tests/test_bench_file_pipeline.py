"""bench/bench_file_pipeline.py's headline runs the shipped configs/ files; its tuned variants change only
the settings they are labelled with (issue #37: the README's headline figure came from unlabelled tuning)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from connect.runtime.properties import parse_properties

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_file_pipeline", ROOT / "bench" / "bench_file_pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _written(work: Path, name: str) -> dict[str, str]:
    return parse_properties((work / name).read_text())


def _shipped(name: str) -> dict[str, str]:
    return parse_properties((ROOT / "configs" / name).read_text())


def _diff(written: dict[str, str], shipped: dict[str, str]) -> dict[str, str | None]:
    keys = set(written) | set(shipped)
    return {k: written.get(k) for k in keys if written.get(k) != shipped.get(k)}


def test_headline_is_the_shipped_configs_with_only_the_rest_port_changed(tmp_path: Path) -> None:
    bench = _bench()
    bench.write_configs(tmp_path, bench.VARIANTS["shipped"], [])
    worker_diff = _diff(_written(tmp_path, bench.WORKER), _shipped(bench.WORKER))
    assert set(worker_diff) == {"listeners"}
    assert str(worker_diff["listeners"]).startswith("http://127.0.0.1:")
    assert _written(tmp_path, bench.SOURCE) == _shipped(bench.SOURCE)
    assert _written(tmp_path, bench.SINK) == _shipped(bench.SINK)


def test_tuned_variant_changes_exactly_what_its_label_says(tmp_path: Path) -> None:
    bench = _bench()
    tuned = bench.VARIANTS["tuned"]
    bench.write_configs(tmp_path, tuned, [])
    worker_diff = _diff(_written(tmp_path, bench.WORKER), _shipped(bench.WORKER))
    assert worker_diff == {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "key.converter.schemas.enable": None,
        "value.converter.schemas.enable": None,
        "listeners": "",
        "offset.flush.interval.ms": "500",
    }
    assert _diff(_written(tmp_path, bench.SOURCE), _shipped(bench.SOURCE)) == {"batch.size": "5000"}
    assert _diff(_written(tmp_path, bench.SINK), _shipped(bench.SINK)) == {
        "consumer.override.max.poll.records": "5000"}
    # the printed labels name what changed
    assert "listeners=" in tuned.changes and "offset.flush.interval.ms=500" in tuned.changes
    assert "batch.size=5000" in bench.VARIANTS["batches"].changes
    assert "max.poll.records=5000" in bench.VARIANTS["batches"].changes
    assert "StringConverter" in bench.VARIANTS["string"].changes


def test_headline_pipeline_moves_every_line_with_the_shipped_configs(tmp_path: Path) -> None:
    bench = _bench()
    lines = 20_000
    src = tmp_path / "test.txt"
    src.write_text("".join(f"{i:010d}{'x' * 88}\n" for i in range(lines)))
    result = bench.pipeline(tmp_path, src, lines, bench.VARIANTS["shipped"], [])
    assert result.steady > 0 and result.total >= result.steady
    assert result.cpu > 0
    assert (tmp_path / "test.sink.txt").read_text() == src.read_text()
