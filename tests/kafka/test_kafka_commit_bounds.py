"""A group commit against a broker that stopped answering is bounded: by its timeout, by ``wakeup``, and so
is a sink task's stop (follow-up of issue #36: sink tasks of a worker cut off from the network stayed in
their offset commit until the link came back, holding up the worker's stop and the rebalance).

The broker is made unreachable with SIGSTOP (its sockets stay open and nothing answers, as behind a cut
link). These tests start a broker of their own: stopping the session's would stall every other test.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from connect.api.topic_partition import TopicPartition
from connect.log import open_log_backend
from connect.log.api import Consumer, RetriableLogError
from services.kafka import KafkaService
from tests.support import STRING_CONVERTERS, RestWorker, line_count, wait_until, write_properties

# the broker these tests freeze is their own (the module's ``broker``), not the session's: they run beside the
# services group, not in it
pytestmark = [pytest.mark.kafka, pytest.mark.beside_services, pytest.mark.slow, pytest.mark.timeout(300)]

GRACEFUL_S = 5.0  # task.shutdown.graceful.timeout.ms's default, which the worker below keeps
# room for a loaded machine (and, for a worker, its own shutdown past its tasks')
MARGIN_S = 15.0
SESSION_TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaService]:
    svc = KafkaService().start()
    try:
        yield svc
    finally:
        svc.cleanup()


class _Frozen:
    """SIGSTOP the broker until ``thaw``; the finaliser thaws it whatever happened."""

    def __init__(self, svc: KafkaService) -> None:
        self.pid = svc.pid
        assert self.pid is not None
        self.frozen = False

    def freeze(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            os.kill(self.pid, signal.SIGCONT)
            self.frozen = False


@pytest.fixture
def frozen(broker: KafkaService) -> Iterator[_Frozen]:
    f = _Frozen(broker)
    try:
        yield f
    finally:
        f.thaw()
        _leading_again(broker)


def _leading_again(broker: KafkaService) -> None:
    """The next test gets a broker that takes writes. A broker stopped for longer than its session is fenced by
    its own controller, and after the SIGCONT it usually registers and leads again within seconds; once in a
    while (seen in three CI runs) it did not within two minutes, and the next test's set-up failed. Then it is
    restarted: what these tests measure is the commit's bound, not a KRaft node's recovery from SIGSTOP."""
    probe = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 30000})
    probe.produce("commit-bounds-probe", b"probe")
    if probe.flush(35) == 0:
        return
    broker.stop()
    broker.start()


def _produce(servers: str, topic: str, count: int) -> None:
    p = confluent_kafka.Producer({"bootstrap.servers": servers})
    for i in range(count):
        p.produce(topic, f"line-{i}".encode())
    # long: after a SIGCONT the broker, fenced by its own controller while stopped, takes a while to lead again
    assert p.flush(120) == 0


def _subscribed(servers: str, topic: str, group: str) -> Consumer:
    """A consumer of the log layer that has been assigned ``topic``'s partition and read from it."""
    backend = open_log_backend({"bootstrap.servers": servers})
    consumer = backend.consumer(group, {"auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    consumer.subscribe(topics=[topic])
    read = 0
    deadline = time.monotonic() + 60
    while read == 0 and time.monotonic() < deadline:
        read += sum(len(b) for b in consumer.poll(1.0))
    assert read > 0
    return consumer


def _in_thread(fn: object) -> tuple[threading.Thread, dict[str, object]]:
    out: dict[str, object] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            out["result"] = fn()  # type: ignore[operator]
        except BaseException as exc:
            out["error"] = exc
        out["took"] = time.monotonic() - started

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_a_commit_to_an_unanswering_broker_fails_within_its_timeout(broker, frozen, unique_topic) -> None:
    topic = unique_topic()
    _produce(broker.bootstrap_servers, topic, 5)
    consumer = _subscribed(broker.bootstrap_servers, topic, f"g-{topic}")
    tp = TopicPartition(topic, 0)
    consumer.commit({tp: 2}, timeout=10.0)  # answered while the broker runs
    frozen.freeze()
    t, out = _in_thread(lambda: consumer.commit({tp: 4}, timeout=2.0))
    t.join(2.0 + MARGIN_S)
    assert not t.is_alive(), "the commit is still waiting for the stopped broker"
    assert isinstance(out.get("error"), RetriableLogError), out
    assert "not confirmed" in str(out["error"]) and f"g-{topic}" in str(out["error"])
    assert 1.5 <= out["took"] <= 2.0 + MARGIN_S  # type: ignore[operator]
    # a second commit while the first still waits for the broker fails at once, rather than piling up
    # threads stuck on the coordinator
    t, out = _in_thread(lambda: consumer.commit({tp: 5}, timeout=1.0))
    t.join(1.0 + MARGIN_S)
    assert isinstance(out.get("error"), RetriableLogError), out
    # close is bounded too, though a commit still waits for the coordinator
    t, out = _in_thread(consumer.close)
    t.join(10.0 + MARGIN_S)
    assert not t.is_alive(), "close waits for the commit to the stopped broker"
    frozen.thaw()


def test_wakeup_ends_a_commit_under_way(broker, frozen, unique_topic) -> None:
    topic = unique_topic()
    _produce(broker.bootstrap_servers, topic, 5)
    consumer = _subscribed(broker.bootstrap_servers, topic, f"g-{topic}")
    tp = TopicPartition(topic, 0)
    try:
        frozen.freeze()
        t, out = _in_thread(lambda: consumer.commit({tp: 3}, timeout=60.0))
        time.sleep(1.0)
        assert t.is_alive()
        consumer.wakeup()
        t.join(MARGIN_S)
        assert not t.is_alive(), "wakeup did not end the commit"
        assert isinstance(out.get("error"), RetriableLogError), out
        assert "woken" in str(out["error"])
        assert out["took"] < 30  # type: ignore[operator]
    finally:
        frozen.thaw()
        consumer.close()


def test_a_commit_after_the_broker_is_back_succeeds(broker, frozen, unique_topic) -> None:
    topic = unique_topic()
    _produce(broker.bootstrap_servers, topic, 5)
    group = f"g-{topic}"
    consumer = _subscribed(broker.bootstrap_servers, topic, group)
    tp = TopicPartition(topic, 0)
    try:
        frozen.freeze()
        with pytest.raises(RetriableLogError):
            consumer.commit({tp: 3}, timeout=1.0)
        frozen.thaw()
        # the commit that timed out may still land; the next one waits for it and then goes through
        wait_until(lambda: _commits(consumer, {tp: 4}), 60, what="a commit once the broker answers")
        assert consumer.committed([tp]) == {tp: 4}
    finally:
        frozen.thaw()
        consumer.close()


def _commits(consumer: Consumer, offsets: dict[TopicPartition, int]) -> bool:
    try:
        consumer.commit(offsets, timeout=5.0)
    except RetriableLogError:
        return False
    return True


def test_a_sink_task_stops_within_the_graceful_timeout_while_the_broker_is_stopped(
        broker, frozen, unique_topic, tmp_path: Path) -> None:
    topic = unique_topic()
    _produce(broker.bootstrap_servers, topic, 20)
    sink_file = tmp_path / "sink.txt"
    # The first worker's member cannot leave the group (its LeaveGroup finds the broker stopped), so the second
    # run's task gets the partition only once that member's session has expired: a 10 s session (the broker's
    # minimum is 6 s) in place of the 45 s default, which the test would otherwise spend waiting for it.
    connector = write_properties(tmp_path / "sink.properties", {
        "name": "commit-bound-sink", "connector.class": "FileStreamSink", "tasks.max": 1,
        "file": sink_file, "topics": topic, "consumer.override.session.timeout.ms": SESSION_TIMEOUT_MS})
    # no periodic commit: what the task put is committed only at its stop, which finds the broker stopped
    # the records are raw lines this test produces, not JSON (STRING_CONVERTERS)
    worker = RestWorker(tmp_path, connector, bootstrap_servers=broker.bootstrap_servers,
                        offset_flush_interval_ms=3_600_000, **STRING_CONVERTERS).start()
    assert worker.proc is not None
    proc = worker.proc.proc
    assert proc is not None
    wait_until(lambda: line_count(sink_file) >= 20, 90, what="the records in the sink file")
    frozen.freeze()
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(GRACEFUL_S + MARGIN_S)
    except Exception:
        pytest.fail(f"the worker did not stop within {GRACEFUL_S + MARGIN_S} s with the broker stopped:\n"
                    + worker.proc.log()[-4000:])
    took = time.monotonic() - started
    frozen.thaw()
    log = worker.proc.log()
    assert proc.returncode == 0, log[-4000:]
    assert took <= GRACEFUL_S + MARGIN_S
    # the task's thread ended within the worker's wait, rather than being left behind in the commit
    assert "Graceful stop of task commit-bound-sink-0 failed" not in log, log[-4000:]
    assert "WorkerSinkTask{id=commit-bound-sink-0} Task stopped" in log, log[-4000:]
    # one WARN line, naming the connector and task, says the offsets were not committed
    failed = [line for line in log.splitlines() if "Commit of offsets failed" in line]
    assert failed and all("WARNING" in line and "commit-bound-sink-0" in line for line in failed), log[-4000:]
    # at least once: the next run of the task starts from the last commit that landed. The one that timed out
    # may land all the same once the broker runs again (its request was on the broker's socket already),
    # and then nothing comes again; either way no record is lost and the group gets to the end.
    worker2 = RestWorker(tmp_path, connector, bootstrap_servers=broker.bootstrap_servers,
                         offset_flush_interval_ms=1000, **STRING_CONVERTERS).start()
    tp = TopicPartition(topic, 0)
    backend = open_log_backend({"bootstrap.servers": broker.bootstrap_servers})
    group = backend.consumer("connect-commit-bound-sink")
    try:
        # the first worker never left the group: its member stays until its session times out
        assigned_at = time.monotonic()
        wait_until(lambda: worker2.proc is not None and worker2.proc.log().count("Partitions assigned") >= 2, 120,
                   what="the partition assigned to the task's next run")
        print(f"partition assigned to the next run {time.monotonic() - assigned_at:.1f} s after its start")
        wait_until(lambda: group.committed([tp]) == {tp: 20}, 60, what="the group's offset at the end")
    finally:
        group.close()
        worker2.stop()
    lines = sink_file.read_text().splitlines()
    assert sorted(set(lines)) == sorted(f"line-{i}" for i in range(20))
