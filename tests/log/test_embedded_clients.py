"""Producer and consumer of the embedded log: batching, callbacks, partitioning, positions, waiting."""

from __future__ import annotations

import threading
import time

import pytest

from connect.api.topic_partition import TopicPartition
from connect.log.api import LogError, NewTopic, RecordMetadata, UnknownTopicError
from connect.log.embedded.backend import EmbeddedBackend
from connect.log.key_partition import partition_for_key
from tests.support import drain

pytestmark = pytest.mark.timeout(60)
QUIET = {"log.retention.check.interval.ms": 3_600_000}
EARLIEST = {"auto.offset.reset": "earliest", "enable.auto.commit": "false"}


@pytest.fixture
def backend(tmp_path):
    b = EmbeddedBackend(str(tmp_path), QUIET)
    yield b
    b.close()


def test_send_round_trip_with_callbacks(backend) -> None:
    backend.admin().create_topic(NewTopic("t", 1))
    producer = backend.producer({"linger.ms": "1000"})
    acks: list[RecordMetadata] = []

    def ack(err, md) -> None:
        assert err is None
        acks.append(md)

    producer.send("t", b"v0", key=b"k0", partition=0, timestamp=1000, on_delivery=ack)
    producer.send("t", None, key=b"k1", partition=0, timestamp=1001,
                  headers=(("h", b"1"), ("n", None)), on_delivery=ack)
    producer.send("t", b"", partition=0, timestamp=1002, on_delivery=ack)
    assert acks == []  # lingering, and callbacks only run in poll/flush
    assert producer.flush() == 0
    assert [(m.offset, m.timestamp) for m in acks] == [(0, 1000), (1, 1001), (2, 1002)]

    consumer = backend.consumer(None, EARLIEST)
    consumer.assign([TopicPartition("t", 0)])
    (fb,) = drain(consumer, 3)
    assert list(fb.offsets) == [0, 1, 2]
    assert fb.values == [b"v0", None, b""]
    assert fb.keys == [b"k0", b"k1", None]
    assert fb.timestamps == [1000, 1001, 1002]
    assert fb.headers == [(), (("h", b"1"), ("n", None)), ()]
    records = list(fb.records())
    assert records[1].value is None and records[1].headers == (("h", b"1"), ("n", None))
    consumer.close()
    producer.close()


def test_keyed_records_follow_murmur2_and_null_keys_rotate_per_batch(backend) -> None:
    backend.admin().create_topic(NewTopic("t", 3))
    producer = backend.producer()
    placed: dict[bytes, int] = {}
    keys = [b"key-%d" % i for i in range(30)]
    for k in keys:
        producer.send("t", b"v", key=k, on_delivery=lambda e, md, k=k: placed.__setitem__(k, md.partition))
    producer.flush()
    assert placed == {k: partition_for_key(k, 3) for k in keys}
    assert len(set(placed.values())) == 3
    metas: list[RecordMetadata] = []

    metas.clear()
    for _ in range(3):
        producer.send("t", b"a", on_delivery=lambda e, md: metas.append(md))
        producer.send("t", b"b", on_delivery=lambda e, md: metas.append(md))
        producer.flush()
    parts = [m.partition for m in metas]
    assert parts[0::2] == parts[1::2]  # one batch, one partition
    assert sorted(parts[0::2]) == [0, 1, 2]  # the next batch goes to the next partition
    producer.close()


def test_linger_sends_without_flush_and_batch_size_triggers(backend) -> None:
    backend.admin().create_topic(NewTopic("t", 1))
    consumer = backend.consumer(None, EARLIEST)
    consumer.assign([TopicPartition("t", 0)])
    producer = backend.producer({"linger.ms": "20"})
    producer.send("t", b"lingered", partition=0)
    assert [v for fb in drain(consumer, 1) for v in fb.values] == [b"lingered"]

    big = backend.producer({"linger.ms": "600000", "batch.size": "1000"})
    for _ in range(20):
        big.send("t", b"x" * 100, partition=0)
    # batch.size was reached about every 9 records; those are in the log already
    assert consumer.end_offsets([TopicPartition("t", 0)])[TopicPartition("t", 0)] >= 1 + 18
    big.close()
    producer.close()
    consumer.close()


def test_auto_create_and_its_switch(tmp_path) -> None:
    backend = EmbeddedBackend(str(tmp_path), {**QUIET, "num.partitions": "2"})
    producer = backend.producer()
    producer.send("fresh", b"v")
    producer.flush()
    assert backend.admin().describe_topic("fresh").partitions == 2
    assert producer.partitions_for("fresh") == 2
    strict = backend.producer({"auto.create.topics.enable": "false"})
    with pytest.raises(UnknownTopicError):
        strict.send("missing", b"v")
    with pytest.raises(UnknownTopicError):
        strict.send_batch("missing", 0, [b"v"])
    with pytest.raises(UnknownTopicError):
        producer.send_batch("fresh", 5, [b"v"])
    assert "missing" not in backend.admin().list_topics()
    backend.close()
    backend = EmbeddedBackend(str(tmp_path), {**QUIET, "auto.create.topics.enable": "false"})
    with pytest.raises(UnknownTopicError):
        backend.producer().send("other", b"v")
    backend.close()


def test_send_batch_splits_oversized_batches(backend) -> None:
    backend.admin().create_topic(NewTopic("t", 1))
    producer = backend.producer({"max.request.size": "10000"})
    producer.send_batch("t", 0, [b"%05d" % i + b"z" * 995 for i in range(50)])
    producer.flush()
    consumer = backend.consumer(None, EARLIEST)
    consumer.assign([TopicPartition("t", 0)])
    got = drain(consumer, 50)
    assert [o for fb in got for o in fb.offsets] == list(range(50))
    assert [v[:5] for fb in got for v in fb.values] == [b"%05d" % i for i in range(50)]
    with pytest.raises(LogError):
        producer.send_batch("t", 0, [b"x" * 20000])
    producer.close()
    consumer.close()


def test_max_records_positions_seek_and_pause(backend) -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    backend.admin().create_topic(NewTopic("t", 2))
    producer = backend.producer()
    producer.send_batch("t", 0, [b"a%d" % i for i in range(100)])
    producer.send_batch("t", 1, [b"b%d" % i for i in range(100)])
    producer.flush()
    consumer = backend.consumer(None, EARLIEST)
    consumer.assign([tp0, tp1])
    first = consumer.poll(1.0, 30)
    assert sum(len(fb) for fb in first) == 30
    for fb in first:
        assert consumer.position(TopicPartition(fb.topic, fb.partition)) == fb.next_offset
    consumer.seek(tp0, 95)
    consumer.pause([tp1])
    got = drain(consumer, 5)
    assert [(fb.partition, list(fb.offsets)) for fb in got] == [(0, [95, 96, 97, 98, 99])]
    assert consumer.poll(0.05) == []
    consumer.resume([tp1])
    rest = drain(consumer, 100 - consumer.position(tp1))
    assert rest[-1].partition == 1 and rest[-1].offsets[-1] == 99
    consumer.seek_to_beginning([tp0])
    assert consumer.position(tp0) == 0
    assert consumer.end_offsets([tp0, tp1]) == {tp0: 100, tp1: 100}
    with pytest.raises(LogError):
        consumer.position(TopicPartition("t", 7))
    consumer.close()
    producer.close()


def test_a_large_batch_is_handed_out_in_polls_of_max_records_each_record_once(backend) -> None:
    """A batch of 10,000 records (one append) polled 500 at a time, with a seek into its middle: each poll cuts
    where the last one ended, and a seek drops what was cut."""
    tp = TopicPartition("big", 0)
    backend.admin().create_topic(NewTopic("big", 1))
    producer = backend.producer()
    values = [b"v%05d" % i for i in range(10_000)]
    producer.send_batch("big", 0, values, keys=[b"k%d" % (i % 7) for i in range(10_000)])
    producer.flush()
    consumer = backend.consumer(None, EARLIEST)
    consumer.assign([tp])
    seen: list[int] = []
    got_values: list[bytes] = []
    while len(seen) < 5_000:
        for fb in consumer.poll(1.0, 500):
            assert len(fb) <= 500
            seen.extend(fb.offsets)
            got_values.extend(fb.values)
            assert fb.keys == [b"k%d" % (o % 7) for o in fb.offsets]
            assert consumer.position(tp) == fb.next_offset
    assert seen == list(range(5_000)) and got_values == values[:5_000]
    consumer.seek(tp, 7_250)
    rest = drain(consumer, 2_750)
    offsets = [o for fb in rest for o in fb.offsets]
    assert offsets == list(range(7_250, 10_000))
    assert [v for fb in rest for v in fb.values] == values[7_250:]
    assert consumer.poll(0.05) == []
    consumer.close()
    producer.close()


def test_offset_reset_latest_and_none(backend) -> None:
    tp = TopicPartition("t", 0)
    backend.admin().create_topic(NewTopic("t", 1))
    producer = backend.producer()
    producer.send_batch("t", 0, [b"old"] * 5)
    producer.flush()
    latest = backend.consumer("g", {"enable.auto.commit": "false"})  # Kafka's default: latest
    latest.assign([tp])
    assert latest.position(tp) == 5
    producer.send_batch("t", 0, [b"new"])
    producer.flush()
    assert [v for fb in drain(latest, 1) for v in fb.values] == [b"new"]
    strict = backend.consumer("h", {"auto.offset.reset": "none"})
    strict.assign([tp])
    with pytest.raises(LogError):
        strict.poll(0)
    strict.seek(tp, 50)  # past the end
    with pytest.raises(LogError):
        strict.poll(0)
    latest.close()
    strict.close()
    producer.close()


def test_waiting_poll_wakes_on_an_append_from_this_process(backend) -> None:
    backend.admin().create_topic(NewTopic("t", 1))
    consumer = backend.consumer(None, EARLIEST)
    consumer.assign([TopicPartition("t", 0)])
    producer = backend.producer()

    def later() -> None:
        time.sleep(0.2)
        producer.send_batch("t", 0, [b"wake"])

    threading.Thread(target=later).start()
    t0 = time.monotonic()
    got = consumer.poll(10.0)
    waited = time.monotonic() - t0
    assert [v for fb in got for v in fb.values] == [b"wake"]
    assert 0.15 < waited < 2.0
    t0 = time.monotonic()
    assert consumer.poll(0.1) == []
    assert time.monotonic() - t0 >= 0.09
    consumer.close()
    producer.close()


def test_send_batch_calls_its_batch_callback_once_from_poll_keyed_or_not(backend) -> None:
    backend.admin().create_topic(NewTopic("t", 3))
    producer = backend.producer({"linger.ms": "1000"})
    reports: list[tuple[str, LogError | None]] = []
    producer.send_batch("t", None, [b"a", b"b"], on_delivery=lambda err: reports.append(("plain", err)))
    producer.send_batch("t", None, [b"c", b"d", b"e"], [b"k1", b"k2", b"k3"],
                        on_delivery=lambda err: reports.append(("keyed", err)))
    assert reports == []  # callbacks run only in poll/flush, on the caller's thread
    producer.poll(0)
    assert reports == [("plain", None)], "the keyed records still linger"
    assert producer.flush() == 0
    assert reports == [("plain", None), ("keyed", None)]
    producer.flush()
    assert len(reports) == 2
    producer.close()


def test_a_batch_countdown_reports_once_at_the_last_record_or_the_first_failure() -> None:
    from connect.log.api import BatchCountdown

    reports: list[LogError | None] = []
    ok = BatchCountdown(2, reports.append)
    ok.record_delivered(None)
    assert reports == []
    ok.record_delivered(None)
    assert reports == [None]
    failed = BatchCountdown(3, reports.append)
    failed.record_delivered(LogError("gone"))
    failed.record_delivered(None)
    failed.record_delivered(LogError("again"))
    assert [str(r) for r in reports[1:]] == ["gone"]


def test_a_keyed_batch_to_a_one_partition_topic_is_appended_as_one_batch(backend) -> None:
    """Every key's partition is 0: the records keep their keys, headers and timestamps, in one append."""
    backend.admin().create_topic(NewTopic("one", 1))
    producer = backend.producer({"linger.ms": "1000"})
    reports: list[LogError | None] = []
    appends: list[int] = []
    original = producer._append
    producer._append = lambda tp, batch: appends.append(1) or original(tp, batch)
    producer.send_batch("one", None, [b"a", b"b", b"c"], [b"k1", None, b"k3"], [5, 6, 7],
                        [(("h", b"1"),), (), (("h", b"3"),)], on_delivery=reports.append)
    producer.poll(0)
    assert reports == [None] and appends == [1]  # written at once, not lingering record by record
    consumer = backend.consumer(None, EARLIEST)
    consumer.assign([TopicPartition("one", 0)])
    (fb,) = drain(consumer, 3)
    assert fb.values == [b"a", b"b", b"c"] and fb.keys == [b"k1", None, b"k3"]
    assert fb.timestamps == [5, 6, 7] and fb.headers == [(("h", b"1"),), (), (("h", b"3"),)]
    consumer.close()
    producer.close()
