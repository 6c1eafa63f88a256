"""Exactly-once sources on the embedded log, end to end: the real ``connect-standalone`` killed with -9 again
and again, then the topic read back with ``headrace console-consumer --isolation-level read_committed``."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import pytest

from tests.support import (
    RestWorker,
    connect_standalone,
    run_cli,
    wait_until,
    worker_properties,
    write_properties,
)

pytestmark = pytest.mark.timeout(300)

TOTAL = 500_000
KILLS = 5


def _source(tmp: Path, **extra: object) -> Path:
    props: dict[str, object] = {"name": "eos-source", "connector.class": "FileStreamSource", "tasks.max": 1,
                                "file": tmp / "input.txt", "topic": "lines", "exactly.once.support": "required",
                                "batch.size": 2000,
                                # the topic's values are read back as the lines themselves, not JSON envelopes
                                "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    props.update(extra)
    return write_properties(tmp / "source.properties", props)


def _read_committed(tmp: Path, isolation: str = "read_committed") -> list[str]:
    done = run_cli(["headrace", "console-consumer", "--log-dir", str(tmp / "data"), "--topic", "lines",
                    "--from-beginning", "--isolation-level", isolation, "--timeout-ms", "1000"],
                   cwd=tmp, timeout=240)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout.decode().splitlines()


class _Writer:
    """Appends the lines to the source file from a thread, ``rate`` lines a second."""

    def __init__(self, path: Path, lines: list[str], rate: int) -> None:
        self.path, self.lines, self.rate = path, lines, rate
        self.thread = threading.Thread(target=self._run, name="writer", daemon=True)

    def _run(self) -> None:
        step = self.rate // 20
        with open(self.path, "a") as fh:
            for i in range(0, len(self.lines), step):
                fh.write("".join(f"{line}\n" for line in self.lines[i:i + step]))
                fh.flush()
                time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("boundary", ["poll", "interval"])
def test_every_line_once_for_read_committed_after_five_kill_9s(tmp_path, boundary):
    expected = [f"line-{i:06d}" for i in range(TOTAL)]
    (tmp_path / "input.txt").write_text("")
    # commits (transactions) every 0.5 s, so that each run, killed 0.2-1 s after its task starts, has some
    cfg = worker_properties(tmp_path, exactly_once_source_support="enabled", offset_flush_interval_ms=500)
    src = _source(tmp_path, **{"transaction.boundary": boundary, "transaction.boundary.interval.ms": 300})
    writer = _Writer(tmp_path / "input.txt", expected, rate=62_500)  # 8 s of input, killed five times meanwhile
    writer.thread.start()
    rng = random.Random(618)
    for kill in range(KILLS):
        worker = connect_standalone(tmp_path, cfg, src)
        try:
            wait_until(lambda w=worker: "Task started" in w.log() or not w.alive(), 60,
                       what=f"the task started (run {kill + 1})")
            assert worker.alive(), worker.log()[-3000:]
            time.sleep(rng.uniform(0.2, 1.0))  # a random moment: mid-transaction or between two
        finally:
            worker.kill9()
        (tmp_path / "worker.log").rename(tmp_path / f"worker-{kill + 1}.log")
    writer.thread.join(60)
    worker = connect_standalone(tmp_path, cfg, src)
    size = (tmp_path / "input.txt").stat().st_size
    try:
        # the killed runs may already have committed the file's end: without this wait the SIGTERM below
        # could land while the worker is still importing, before it handles the signal (exit -15)
        wait_until(lambda: "Task started" in worker.log() or not worker.alive(), 60,
                   what="the last run's task started")
        wait_until(lambda: _committed_position(tmp_path) == size or not worker.alive(), 120, interval=0.5,
                   what="the offset of the file's end to commit")
    finally:
        assert worker.terminate() == 0, worker.log()[-3000:]
    logs = "".join((tmp_path / f"worker-{k + 1}.log").read_text() for k in range(KILLS))
    assert logs.count("Transactional producer ready") == KILLS
    lines = _read_committed(tmp_path)
    assert len(lines) == len(set(lines)), f"{len(lines) - len(set(lines))} duplicates visible to read_committed"
    assert lines == expected, f"{len(set(expected) - set(lines))} lines missing"
    uncommitted = _read_committed(tmp_path, "read_uncommitted")
    print(f"\n{boundary}: {len(lines)} lines once for read_committed; read_uncommitted sees {len(uncommitted)}")


def _committed_position(tmp: Path) -> int:
    """The source's committed byte position, read from the offset topic as read_committed readers see it."""
    done = run_cli(["headrace", "console-consumer", "--log-dir", str(tmp / "data"), "--topic", "connect-offsets",
                    "--from-beginning", "--isolation-level", "read_committed", "--timeout-ms", "300"],
                   cwd=tmp, timeout=60)
    positions = [json.loads(line).get("position", 0) for line in done.stdout.decode().splitlines()
                 if line.startswith("{")]
    return max(positions, default=0)


def _validate(worker: RestWorker, **config: str) -> dict[str, list[str]]:
    with worker.http() as http:
        response = http.put("/connector-plugins/FileStreamSource/config/validate",
                            json={"name": "eos", "connector.class": "FileStreamSource", "topic": "t", **config})
        assert response.status_code == 200, response.text
        return {c["value"]["name"]: c["value"]["errors"] for c in response.json()["configs"] if c["value"]["errors"]}


def test_validation_refuses_exactly_once_where_the_worker_or_the_connector_cannot_give_it(tmp_path):
    (tmp_path / "a").mkdir()
    disabled = RestWorker(tmp_path / "a").start()
    try:
        # the file within the worker's directory, which its connector.allowed.paths admits
        assert _validate(disabled, file=str(tmp_path / "a" / "in.txt"), **{"exactly.once.support": "required"}) == {
            "exactly.once.support": ["This worker does not have exactly-once source support enabled."]}
    finally:
        disabled.stop()
    (tmp_path / "b").mkdir()
    enabled = RestWorker(tmp_path / "b", exactly_once_source_support="enabled").start()
    try:
        assert _validate(enabled, file=str(tmp_path / "b" / "in.txt"), **{"exactly.once.support": "required"}) == {}
        # no file: the source reads stdin, which cannot be read again from an offset
        assert _validate(enabled, **{"exactly.once.support": "required"}) == {"exactly.once.support": [
            "The connector does not support exactly-once semantics with the provided configuration."]}
        errors = _validate(enabled, file=str(tmp_path / "b" / "in.txt"), **{"transaction.boundary": "connector"})
        assert errors["transaction.boundary"] == [
            "The connector does not support connector-defined transaction boundaries with the given configuration. "
            "Please reconfigure it to use a different transaction boundary definition."]
        with enabled.http() as http:
            created = http.put("/connectors/stdin-eos/config", json={
                "connector.class": "FileStreamSource", "topic": "t", "exactly.once.support": "required"})
            assert created.status_code == 400
            assert "does not support exactly-once semantics" in created.json()["message"]
    finally:
        enabled.stop()


@pytest.mark.slow  # several seconds of a real worker: kept out of the fast suite
def test_offsets_endpoints_of_an_exactly_once_source_use_its_offset_topic(tmp_path):
    """GET, PATCH and DELETE /connectors/{c}/offsets see and change what the exactly-once task resumes from:
    the offsets in its offset topic, not the worker's offsets file."""
    src_file = tmp_path / "input.txt"
    src_file.write_text("".join(f"line-{i}\n" for i in range(300)))
    worker = RestWorker(tmp_path, _source(tmp_path), exactly_once_source_support="enabled").start()
    partition = {"filename": str(src_file)}
    try:
        with worker.http() as http:
            def offsets() -> list[dict]:
                return http.get("/connectors/eos-source/offsets").json()["offsets"]

            wait_until(lambda: offsets() == [{"partition": partition,
                                              "offset": {"position": src_file.stat().st_size}}],
                       30, what="the committed position over REST")
            assert len(_read_committed(tmp_path)) == 300
            assert http.put("/connectors/eos-source/stop").status_code == 204
            wait_until(lambda: http.get("/connectors/eos-source/status").json()["connector"]["state"] == "STOPPED",
                       30)
            # back to the start of line 200: the task resumes there, in a transaction of its own
            at = len("".join(f"line-{i}\n" for i in range(200)))
            r = http.patch("/connectors/eos-source/offsets",
                           json={"offsets": [{"partition": partition, "offset": {"position": at}}]})
            assert r.status_code == 200, r.text
            assert offsets() == [{"partition": partition, "offset": {"position": at}}]
            assert http.put("/connectors/eos-source/resume").status_code == 202
            wait_until(lambda: len(_read_committed(tmp_path)) == 400, 60, what="lines 200..299 again")
            assert _read_committed(tmp_path)[300:] == [f"line-{i}" for i in range(200, 300)]

            assert http.put("/connectors/eos-source/stop").status_code == 204
            wait_until(lambda: http.get("/connectors/eos-source/status").json()["connector"]["state"] == "STOPPED",
                       30)
            assert http.delete("/connectors/eos-source/offsets").status_code == 200
            assert offsets() == []
    finally:
        worker.stop()
