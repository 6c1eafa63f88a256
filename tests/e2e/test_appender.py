"""connect.appender.HeadraceHandler against a real connect-standalone running HttpSource, and straight to a topic."""

from __future__ import annotations

import json
import logging
import logging.config
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from connect.appender import HeadraceHandler, bind
from tests.logship import SourceWorker, count_values, read_values
from tests.support import REPO, wait_until, write_properties

pytestmark = pytest.mark.timeout(120)


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.setLevel(logging.DEBUG)
    log.propagate = False
    return log


def test_dictconfig_handler_ships_every_field(tmp_path):
    worker = SourceWorker(tmp_path).start()
    try:
        logging.config.dictConfig({
            "version": 1, "disable_existing_loggers": False,
            "handlers": {"headrace": {"class": "connect.appender.HeadraceHandler", "url": worker.url,
                                      "service_name": "shop", "level": "INFO"}},
            "loggers": {"shop.orders": {"handlers": ["headrace"], "level": "DEBUG", "propagate": False}},
        })
        log = logging.getLogger("shop.orders")
        handler = log.handlers[0]
        assert isinstance(handler, HeadraceHandler)
        log.debug("below the handler's level")
        with bind(request_id="r-42", user="ada"):
            log.info("order %s placed", "o-1", extra={"amount": 12.5, "items": ["a", "b"]})
            try:
                {}["missing"]
            except KeyError:
                log.exception("lookup failed")
        threading.Thread(target=log.warning, args=("from a thread",), name="worker-7").start()
        assert handler.flush(10)
        wait_until(lambda: count_values(tmp_path) == 3, 10, what="3 events")
        handler.close()
        log.handlers.clear()
    finally:
        worker.stop()
    info, error, warning = read_values(tmp_path)
    assert info["message"] == "order o-1 placed" and info["log"]["level"] == "INFO"
    assert info["log"]["logger"] == "shop.orders" and info["service"] == {"name": "shop"}
    assert info["log"]["origin"]["file"]["name"] == "test_appender.py"
    assert info["log"]["origin"]["function"] == "test_dictconfig_handler_ships_every_field"
    assert info["labels"] == {"amount": "12.5", "items": '["a","b"]'}
    assert info["context"] == {"request_id": "r-42", "user": "ada"}
    assert info["process"]["pid"] > 0 and info["process"]["thread"]["name"] == "MainThread"
    assert info["host"]["hostname"] and info["@timestamp"].endswith("Z")
    assert error["error"]["type"] == "KeyError" and error["error"]["message"] == "'missing'"
    assert error["error"]["stack_trace"].startswith("Traceback (most recent call last):")
    assert "KeyError: 'missing'" in error["error"]["stack_trace"]
    assert warning["process"]["thread"]["name"] == "worker-7" and warning["context"] is None
    assert [e["event"]["sequence"] for e in (info, error, warning)] == [1, 2, 3]


APP = textwrap.dedent("""
    import logging, logging.config, sys
    logging.config.fileConfig(sys.argv[1])
    log = logging.getLogger("app")
    for i in range(int(sys.argv[2])):
        log.info("event %d", i, extra={"seq": i})
    # no close, no flush: interpreter exit delivers what is queued
""")


@pytest.mark.slow  # the fast suite's time budget
def test_fileconfig_app_on_the_root_logger_at_debug_delivers_at_exit_without_looping(tmp_path):
    """The handler sits on the root logger at DEBUG, where httpx and httpcore log every request it makes."""
    worker = SourceWorker(tmp_path).start()
    ini = tmp_path / "logging.ini"
    ini.write_text(textwrap.dedent(f"""
        [loggers]
        keys=root
        [handlers]
        keys=headrace
        [formatters]
        keys=
        [logger_root]
        level=DEBUG
        handlers=headrace
        [handler_headrace]
        class=connect.appender.HeadraceHandler
        level=DEBUG
        args=('{worker.url}',)
        kwargs={{'batch_size': 100, 'close_timeout': 20}}
    """))
    (tmp_path / "app.py").write_text(APP)
    try:
        done = subprocess.run([sys.executable, str(tmp_path / "app.py"), str(ini), "2000"], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "dropped" not in done.stderr, done.stderr
    finally:
        worker.stop()
    events = read_values(tmp_path)
    assert sorted(int(e["labels"]["seq"]) for e in events) == list(range(2000))
    assert {e["log"]["logger"] for e in events} == {"app"}  # no httpx/httpcore record came back in


KILL_APP = textwrap.dedent("""
    import json, logging, sys, time
    from connect.appender import HeadraceHandler
    url, total, buffer_dir, block_ms = sys.argv[1], int(sys.argv[2]), sys.argv[3] or None, float(sys.argv[4])
    handler = HeadraceHandler(url, buffer_dir=buffer_dir, queue_size=total if buffer_dir else 1000,
                              block_ms=block_ms, retry_max=0.2, close_timeout=60)
    log = logging.getLogger("app")
    log.propagate = False
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    calls = []
    for start in range(0, total, 100):  # about 10,000 events a second
        began = time.monotonic()
        for i in range(start, min(start + 100, total)):
            t = time.perf_counter()
            log.info("event %d", i, extra={"seq": i})
            calls.append(time.perf_counter() - t)
        time.sleep(max(0.0, 0.01 - (time.monotonic() - began)))  # the app's pace, not a wait for anything
    flushed = handler.flush(60)
    handler.close()
    calls.sort()
    print(json.dumps({"flushed": flushed, "dropped": handler.dropped, "slowest": calls[-10:]}))
""")


def _app_through_a_kill_9(tmp_path: Path, total: int, buffer: bool, block_ms: float) -> dict:
    """An app process logs ``total`` events; the worker is killed -9 and restarted while it does."""
    worker = SourceWorker(tmp_path).start()
    app = subprocess.Popen([sys.executable, "-c", KILL_APP, worker.url, str(total),
                            str(tmp_path / "buffer") if buffer else "", str(block_ms)],
                           cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: count_values(tmp_path) >= total // 5, 60, what="a fifth of the events")
        worker.kill9()
        assert count_values(tmp_path) < total, "the worker was killed too late to matter"
        worker.start()
        out, err = app.communicate(timeout=120)
        assert app.returncode == 0, err
    finally:
        if app.poll() is None:
            app.kill()
        worker.stop()
    result = json.loads(out)
    result["stderr"] = err
    return result


def _seqs(tmp_path: Path) -> set[int]:
    return {int(e["labels"]["seq"]) for e in read_values(tmp_path)}


@pytest.mark.slow
def test_kill_9_of_the_worker_with_the_file_buffer_loses_nothing(tmp_path, total=100_000):
    result = _app_through_a_kill_9(tmp_path, total, buffer=True, block_ms=0)
    assert result["flushed"] and result["dropped"] == 0, result
    seqs = _seqs(tmp_path)
    assert seqs == set(range(total)), f"missing {len(set(range(total)) - seqs)}"
    print(f"buffer on: {total} events, {count_values(tmp_path) - total} duplicates after the kill -9")


@pytest.mark.slow
def test_kill_9_of_the_worker_without_the_buffer_never_blocks_the_app_and_counts_every_drop(tmp_path, total=100_000):
    block_ms = 20
    result = _app_through_a_kill_9(tmp_path, total, buffer=False, block_ms=block_ms)
    missing = total - len(_seqs(tmp_path))
    slowest = result["slowest"]
    print(f"buffer off: {result['dropped']} dropped, {missing} missing; slowest log calls (ms) "
          f"{[round(c * 1000, 1) for c in slowest]}")
    assert result["dropped"] > 0, "the outage dropped nothing: the test did not test anything"
    assert "HeadraceHandler: dropped" in result["stderr"]
    assert missing == result["dropped"]
    # the bound plus the scheduler's slack: two cores shared with the other tests and the worker's restart
    assert slowest[-1] < block_ms / 1000 + 0.2, f"a logging call took {slowest[-1] * 1000:.1f} ms"
    assert slowest[-5] < block_ms / 1000 + 0.05, f"logging calls took {slowest} s"


def test_straight_to_a_topic_of_the_embedded_log(tmp_path):
    worker_config = write_properties(tmp_path / "worker.properties", {
        "embedded.log.dir": tmp_path / "data", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"})
    handler = HeadraceHandler(worker_config=str(worker_config), topic="logs", batch_size=50)
    log = _logger("direct", handler)
    for i in range(500):
        log.warning("direct %d", i, extra={"seq": i})
    handler.close()
    events = read_values(tmp_path)
    assert [int(e["labels"]["seq"]) for e in events] == list(range(500))
    assert events[0]["log"]["level"] == "WARNING" and events[0]["message"] == "direct 0"
    assert handler.dropped == 0 and handler.sent == 500


@pytest.mark.slow  # the fast suite's time budget
def test_target_down_then_up_catches_up_and_close_reports_what_is_left(tmp_path, capfd):
    worker = SourceWorker(tmp_path)  # not started yet: the target is down
    handler = HeadraceHandler(worker.url, queue_size=300, retry_max=0.2, close_timeout=0.3)
    log = _logger("down", handler)
    started = time.monotonic()
    for i in range(500):
        log.info("e %d", i, extra={"seq": i})
    assert time.monotonic() - started < 1.0  # nothing waits for the dead target
    assert handler.dropped == 200
    wait_until(lambda: "cannot ship to" in capfd.readouterr().err, 10, what="the outage on stderr")
    worker.start()
    try:
        assert handler.flush(20)
        assert len(_seqs(tmp_path)) == 300
        worker.kill9()
        log.info("after the second outage")
        handler.close()  # gives up after close_timeout: the event is counted as dropped
        err = capfd.readouterr().err
        assert handler.dropped == 201
        assert "HeadraceHandler: dropped 201 log events in all" in err
    finally:
        if worker.proc is not None and worker.proc.alive():
            worker.stop()


@pytest.mark.slow  # the fast suite's time budget; the kill -9 tests above cover the buffer too
def test_the_file_buffer_outlives_the_app_and_the_next_handler_on_it_sends_what_is_left(tmp_path):
    worker = SourceWorker(tmp_path)  # down while the first handler runs
    first = HeadraceHandler(worker.url, buffer_dir=str(tmp_path / "buffer"), retry_max=0.2, close_timeout=0.2)
    log = _logger("restart", first)
    for i in range(300):
        log.info("before the restart %d", i, extra={"seq": i})
    assert not first.flush(0.3)  # nothing can be delivered
    first.close()
    assert first.dropped == 0 and first.sent == 0
    worker.start()
    try:
        second = HeadraceHandler(worker.url, buffer_dir=str(tmp_path / "buffer"), retry_max=0.2)
        _logger("restart", second).info("after the restart", extra={"seq": 300})
        assert second.flush(20)
        second.close()
    finally:
        worker.stop()
    assert sorted(_seqs(tmp_path)) == list(range(301)) and count_values(tmp_path) == 301
