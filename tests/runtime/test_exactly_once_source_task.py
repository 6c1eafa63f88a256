"""ExactlyOnceWorkerSourceTask in-process: transaction boundaries, offsets inside the transaction, fencing.

The producer here is a fake of the log API's transactional contract (records become visible at commit,
never after an abort, and a fenced producer can do nothing); the real logs' side of that contract is
tested against the embedded log and a real broker in tests/log and tests/kafka.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from connect.api.connector import SourceConnector, SourceTask
from connect.api.errors import ConnectException
from connect.api.records import SourceRecord
from connect.log.api import LogError, ProducerFencedError
from connect.runtime.connector_config import SourceConnectorConfig
from connect.runtime.error_handler import ErrorHandler
from connect.runtime.exactly_once_source_task import ExactlyOnceWorkerSourceTask
from connect.runtime.herder import ConnectorTaskId, TargetState
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.storage.offset_topics import LayeredOffsetReader
from connect.runtime.storage.offsets import offset_key
from tests.runtime.fakes import (
    PARTITION,
    FakeClock,
    MemoryLog,
    MemoryOffsetStore,
    MemoryProducer,
    RecordingStatus,
    ScriptedSourceTask,
    lines_batch,
    string_converters,
    worker_config,
)

OFFSETS = "connect-offsets"
KEY = offset_key("src", PARTITION)


class TransactionalMemoryProducer(MemoryProducer):
    """Sends wait in the open transaction; commit appends them all, abort drops them."""

    def __init__(self, log: MemoryLog) -> None:
        super().__init__(log)
        self.calls: list[str] = []
        self.open = False
        self.fenced = False
        self.fail_commit: LogError | None = None

    @property
    def transactional(self) -> bool:
        return True

    def _check(self) -> None:
        if self.fenced:
            raise ProducerFencedError("a newer producer with this transactional.id has started")

    def init_transactions(self, timeout: float | None = None) -> None:
        self.calls.append("init")

    def begin_transaction(self) -> None:
        self._check()
        assert not self.open, "begin inside an open transaction"
        self.calls.append("begin")
        self.open = True

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int | None = None,
             timestamp: int | None = None, headers: Any = None, on_delivery: Any = None) -> None:
        assert self.open, "a transactional producer sends only inside a transaction"
        super().send(topic, value, key, partition, timestamp, headers, on_delivery)

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._check()
        if self.fail_commit is not None:
            self.abort_transaction()
            raise self.fail_commit
        self.calls.append("commit")
        self.flush()
        self.open = False

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._check()
        self.calls.append("abort")
        with self.lock:
            self.buffer = []
        self.open = False


class OffsetTopicView:
    """What the task needs of its offset topic: its name, a key's partition, a read to the end."""

    def __init__(self, log: MemoryLog, calls: list[str]) -> None:
        self.topic = OFFSETS
        self.log = log
        self.calls = calls
        self.fallback = MemoryOffsetStore()

    def partition_for(self, key: str) -> int:
        return 0

    def refresh(self, timeout: float = 30.0) -> bool:
        self.calls.append("read offsets")
        return True

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        rows = [(k, v) for k, v, _t in self.log.topics.get(OFFSETS, [[]])[0]
                if k == offset_key(connector, partition).encode()]
        return json.loads(rows[-1][1]) if rows and rows[-1][1] is not None else None

    def committed_position(self) -> int | None:
        found = self.get("src", PARTITION)
        return None if found is None else found["position"]


def _task(plugin: SourceTask, clock: FakeClock | None = None, *, fence: Any = None, calls: list[str] | None = None,
          **connector: str) -> ExactlyOnceWorkerSourceTask:
    clock = clock or FakeClock()
    log = MemoryLog()
    producer = TransactionalMemoryProducer(log)
    if calls is not None:
        producer.calls = calls
    offsets = OffsetTopicView(log, producer.calls)
    parsed = SourceConnectorConfig({"name": "src", "connector.class": "test", **connector})
    stop = threading.Event()
    wt = ExactlyOnceWorkerSourceTask(
        task=plugin, producer=producer, admin=None, offset_store=offsets,
        offset_reader=LayeredOffsetReader(offsets, offsets.fallback, "src"),  # type: ignore[arg-type]
        committer=SourceTaskOffsetCommitter(clock), offset_topic=offsets, fence_zombies=fence,  # type: ignore[arg-type]
        task_id=ConnectorTaskId("src", 0), worker_id="w:0", connector_config=parsed, task_config={},
        converters=string_converters(), chain=None, errors=ErrorHandler(parsed, "src", 0, stop),
        status=RecordingStatus(), target_state=TargetState.STARTED,
        worker_config=worker_config(offset_flush_interval_ms=1000, exactly_once_source_support="enabled"),
        clock=clock)
    wt.initialize_and_start()
    return wt


def _visible(wt: ExactlyOnceWorkerSourceTask) -> list[str | None]:
    return wt.producer.log.values("lines")  # type: ignore[attr-defined]


def _position(wt: ExactlyOnceWorkerSourceTask) -> int | None:
    return wt.offset_topic.committed_position()  # type: ignore[attr-defined]


def test_the_producer_is_initialised_and_zombies_fenced_before_the_offsets_are_read():
    calls: list[str] = []
    _task(ScriptedSourceTask(), fence=lambda stopping: calls.append("fence"), calls=calls)
    assert calls == ["init", "fence", "read offsets"], "offsets are read only once older instances are fenced"


def test_poll_boundary_commits_each_polls_records_with_their_offset_in_one_transaction():
    wt = _task(ScriptedSourceTask([lines_batch(0, 3), lines_batch(3, 2)]))
    wt.iteration()
    assert _visible(wt) == ["line-0", "line-1", "line-2"]
    assert _position(wt) == 3
    wt.iteration()
    assert _visible(wt)[-2:] == ["line-3", "line-4"] and _position(wt) == 5
    assert wt.producer.calls.count("commit") == 2  # type: ignore[attr-defined]
    assert wt.transactions_committed == 2


def test_interval_boundary_keeps_the_transaction_open_until_the_interval_has_passed():
    clock = FakeClock()
    wt = _task(ScriptedSourceTask([lines_batch(0, 2), lines_batch(2, 2), None]), clock,
               **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "500"})
    wt.iteration()
    wt.iteration()
    assert _visible(wt) == [] and _position(wt) is None, "nothing is visible before the transaction commits"
    clock.advance(0.5)
    wt.iteration()  # an empty poll still ends a transaction that is due
    assert _visible(wt) == [f"line-{i}" for i in range(4)] and _position(wt) == 4


def test_interval_defaults_to_the_workers_offset_flush_interval():
    wt = _task(ScriptedSourceTask(), **{"transaction.boundary": "interval"})
    assert wt.boundary_interval == 1.0


class BoundaryTask(ScriptedSourceTask):
    """Asks its TransactionContext, from poll, for what ``asks`` scripts per poll: (index or None, what)."""

    def __init__(self, script: Sequence[Any], asks: Sequence[tuple[int | None, str] | None]) -> None:
        super().__init__(script)
        self.asks = list(asks)

    def poll(self) -> Sequence[SourceRecord] | None:
        records = super().poll()
        ask = self.asks.pop(0) if self.asks else None
        context = self.context.transaction_context()
        assert context is not None
        if ask is not None and records:
            index, what = ask
            record = records[index] if index is not None else None
            (context.commit_transaction if what == "commit" else context.abort_transaction)(record)
        return records


def test_connector_boundary_commits_after_the_record_the_task_named():
    wt = _task(BoundaryTask([lines_batch(0, 4), lines_batch(4, 1)], [(1, "commit"), None]),
               **{"transaction.boundary": "connector"})
    wt.iteration()
    assert _visible(wt) == ["line-0", "line-1"] and _position(wt) == 2, "the rest of the batch waits"
    wt.iteration()
    assert _visible(wt) == ["line-0", "line-1"]
    wt.commit_offsets()  # as a clean stop does
    assert _visible(wt) == [f"line-{i}" for i in range(5)] and _position(wt) == 5


def test_connector_boundary_abort_drops_the_records_and_their_offsets():
    wt = _task(BoundaryTask([lines_batch(0, 2), lines_batch(2, 2)], [(None, "abort"), (None, "commit")]),
               **{"transaction.boundary": "connector"})
    wt.iteration()
    assert _visible(wt) == [] and _position(wt) is None
    wt.iteration()
    assert _visible(wt) == ["line-2", "line-3"] and _position(wt) == 4
    assert wt.transactions_aborted == 1 and wt.transactions_committed == 1


def test_a_fenced_producer_fails_the_task_and_nothing_of_its_transaction_is_visible():
    wt = _task(ScriptedSourceTask([lines_batch(0, 2)]), **{"transaction.boundary": "interval"})
    wt.iteration()
    wt.producer.fenced = True  # type: ignore[attr-defined]
    with pytest.raises(ConnectException, match="fenced out"):
        wt.commit_offsets()
    assert _visible(wt) == [] and _position(wt) is None


def test_a_failed_commit_fails_the_task_with_the_logs_reason():
    wt = _task(ScriptedSourceTask([lines_batch(0, 2)]))
    wt.producer.fail_commit = LogError("the log is full")  # type: ignore[attr-defined]
    with pytest.raises(ConnectException, match="could not commit its transaction of 2 records: the log is full"):
        wt.iteration()
    assert _visible(wt) == []


def test_closing_mid_transaction_aborts_it():
    wt = _task(ScriptedSourceTask([lines_batch(0, 2)]), **{"transaction.boundary": "interval"})
    wt.iteration()
    wt.close()
    assert wt.producer.calls[-1] == "abort"  # type: ignore[attr-defined]
    assert _visible(wt) == [] and wt.transactions_aborted == 1


def test_offsets_fall_back_to_the_workers_store_for_a_partition_the_topic_lacks():
    wt = _task(ScriptedSourceTask())
    reader = wt.offset_reader
    wt.offset_topic.fallback.put("src", [(PARTITION, {"position": 7})])  # type: ignore[attr-defined]
    assert reader.offset(PARTITION) == {"position": 7}


# --- validation: KIP-618's preflight checks, with Kafka Connect's messages -----------------------------------


class _Source(SourceConnector):
    support: Any = None
    boundaries: Any = None

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type:
        return ScriptedSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]

    def stop(self) -> None:
        pass

    def config(self) -> Any:
        from connect.api.config import ConfigDef

        return ConfigDef()

    def exactly_once_support(self, connector_config: Mapping[str, str]) -> Any:
        if isinstance(self.support, Exception):
            raise self.support
        return self.support

    def can_define_transaction_boundaries(self, connector_config: Mapping[str, str]) -> Any:
        return self.boundaries


def _errors(cls: type[SourceConnector], worker_enabled: bool, **props: str) -> dict[str, list[str]]:
    from connect.runtime.exactly_once_validation import check_exactly_once

    parsed = SourceConnectorConfig.DEFINITION.validate({"name": "x", "connector.class": "x", **props})
    check_exactly_once(cls, props, parsed, worker_enabled)
    return {k: v.errors for k, v in parsed.items() if v.errors}


def test_required_on_a_worker_without_exactly_once_is_refused_with_kafka_connects_message():
    from connect.api.connector import ExactlyOnceSupport

    cls = type("Supported", (_Source,), {"support": ExactlyOnceSupport.SUPPORTED})
    assert _errors(cls, False, **{"exactly.once.support": "required"}) == {
        "exactly.once.support": ["This worker does not have exactly-once source support enabled."]}
    assert _errors(cls, True, **{"exactly.once.support": "required"}) == {}


def test_required_for_a_connector_that_cannot_or_does_not_say_is_refused():
    from connect.api.connector import ExactlyOnceSupport

    unsupported = type("Unsupported", (_Source,), {"support": ExactlyOnceSupport.UNSUPPORTED})
    assert _errors(unsupported, True, **{"exactly.once.support": "required"}) == {
        "exactly.once.support": ["The connector does not support exactly-once semantics with the provided "
                                 "configuration."]}
    silent = _errors(_Source, True, **{"exactly.once.support": "required"})["exactly.once.support"]
    assert silent[0].startswith("The connector does not implement the API required for preflight validation")
    broken = type("Broken", (_Source,), {"support": RuntimeError("no file given")})
    assert _errors(broken, True, **{"exactly.once.support": "required"}) == {
        "exactly.once.support": ["An unexpected error occurred during validation: no file given"]}
    assert _errors(_Source, True, **{"exactly.once.support": "requested"}) == {}


def test_connector_boundaries_need_a_connector_that_defines_them():
    from connect.api.connector import ConnectorTransactionBoundaries

    errors = _errors(_Source, True, **{"transaction.boundary": "connector"})["transaction.boundary"]
    assert errors[0].startswith("This connector has returned a null value from its canDefineTransactionBoundaries")
    no = type("No", (_Source,), {"boundaries": ConnectorTransactionBoundaries.UNSUPPORTED})
    assert _errors(no, True, **{"transaction.boundary": "connector"})["transaction.boundary"] == [
        "The connector does not support connector-defined transaction boundaries with the given configuration. "
        "Please reconfigure it to use a different transaction boundary definition."]
    yes = type("Yes", (_Source,), {"boundaries": ConnectorTransactionBoundaries.SUPPORTED})
    assert _errors(yes, True, **{"transaction.boundary": "Connector"}) == {}
