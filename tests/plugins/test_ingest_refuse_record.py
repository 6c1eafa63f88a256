"""QueueingSourceTask.refuse_record, with this test playing the runtime: a refusal lands on the ticket of the
request that holds the refused event, at that event's index in the request, and the request is still done once
the rest is acknowledged."""

from __future__ import annotations

from collections.abc import Mapping

from connect.api import Schema, SourceRecord, SourceRecordBatch
from plugins.ingest._common import AcknowledgesRecords, QueueingSourceTask, Ticket


class _Queue(QueueingSourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def stop(self) -> None:
        self.stop_queue()


class _RecordQueue(AcknowledgesRecords, _Queue):
    pass


def test_a_refused_event_of_a_batch_is_named_on_its_own_request_ticket():
    task = _Queue()
    first, second, third = Ticket(2), Ticket(3), Ticket(1)
    assert task.offer_values(["a0", "a1"], Schema.STRING_SCHEMA, first)
    assert task.offer_values(["b0", "b1", "b2"], Schema.STRING_SCHEMA, second)
    assert task.offer_values(["c0"], Schema.STRING_SCHEMA, third)
    batch = task.poll()
    assert isinstance(batch, SourceRecordBatch) and list(batch.values) == ["a0", "a1", "b0", "b1", "b2", "c0"]
    task.refuse_record(batch, 3, "too large")
    task.refuse_record(batch, 5, "larger still")
    assert not second.done.is_set(), "the request is done only once the log has its other events"
    task.commit_batch(batch)
    assert first.done.is_set() and first.refused == []
    assert second.done.is_set() and second.refused == [(1, "too large")] and second.failed is None
    assert third.refused == [(0, "larger still")]
    assert "refused_too_large_for_log=2" in task.counters.text()


def test_a_refused_record_is_named_on_its_ticket_and_acknowledged():
    task = _RecordQueue()
    ticket = Ticket(2)
    records = [SourceRecord(None, None, "t", value_schema=Schema.BYTES_SCHEMA, value=v) for v in (b"x", b"y")]
    assert task.offer(records, ticket)
    polled = task.poll()
    assert isinstance(polled, list)
    task.refuse_record(polled, 1, "too large")
    assert not ticket.done.is_set()
    task.commit_record(polled[0], None)
    assert ticket.done.is_set() and ticket.refused == [(1, "too large")]


def test_events_without_a_ticket_are_only_counted():
    task = _Queue()
    assert task.offer_values(["a"], Schema.STRING_SCHEMA, None)
    batch = task.poll()
    assert isinstance(batch, SourceRecordBatch)
    task.refuse_record(batch, 0, "too large")
    assert "refused_too_large_for_log=1" in task.counters.text()
