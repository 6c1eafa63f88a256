"""ErrorHandler (retry with tolerance), the dead-letter queue reporters and the transformation chain's predicates."""

from __future__ import annotations

import json
import threading

import pytest

from connect.api import (
    ConfigDef,
    DataException,
    Predicate,
    RetriableException,
    Schema,
    SinkRecord,
    SourceRecord,
    Transformation,
)
from connect.log.api import ConsumerRecord, LogError, Producer, RecordMetadata
from connect.runtime.connector_config import SinkConnectorConfig
from connect.runtime.dead_letter_queue import DeadLetterQueueReporter, source_record_document
from connect.runtime.error_handler import (
    ErrantRecordReporterImpl,
    ErrorHandler,
    ErrorMetrics,
    Failure,
    Stage,
    TaskStoppingError,
    ToleranceExceededError,
)
from connect.runtime.transformation_chain import TransformationChain, TransformStage


class FakeProducer(Producer):
    """Keeps what was sent; acknowledges (runs callbacks) on poll/flush, or fails them when ``fail`` is set."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self._waiting: list = []
        self.fail: LogError | None = None
        self.flushes = 0

    def send(self, topic, value, key=None, partition=None, timestamp=None, headers=None, on_delivery=None):
        self.sent.append({"topic": topic, "key": key, "value": value, "headers": tuple(headers or ())})
        if on_delivery is not None:
            self._waiting.append((on_delivery, RecordMetadata(topic, 0, len(self.sent) - 1, 0)))

    def send_batch(self, topic, partition, values, keys=None, timestamps=None, headers=None):
        raise NotImplementedError

    def poll(self, timeout=0.0):
        waiting, self._waiting = self._waiting, []
        for callback, metadata in waiting:
            callback(self.fail, None if self.fail else metadata)
        return len(waiting)

    def flush(self, timeout=None):
        self.flushes += 1
        self.poll()
        return 0

    def close(self, timeout=None):
        pass


class FakeClock:
    """Stands in for time.monotonic and the stop event's wait: waiting advances the clock, no real sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []
        self.stop_after: int | None = None

    def monotonic(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds * 1000))
        self.now += seconds
        return self.stop_after is not None and len(self.waits) >= self.stop_after


@pytest.fixture
def clock():
    return FakeClock()


def handler(clock: FakeClock | None = None, dlq: DeadLetterQueueReporter | None = None, **config) -> ErrorHandler:
    stop = threading.Event()
    if clock is not None:
        stop.wait = clock.wait  # type: ignore[method-assign]
    metrics = dlq.metrics if dlq is not None else ErrorMetrics()
    parsed = SinkConnectorConfig({"name": "conn", "connector.class": "FileStreamSink", "topics": "events",
                                  **{k.replace("_", "."): v for k, v in config.items()}})
    return ErrorHandler(parsed, "conn", 2, stop, dlq, metrics, **({"clock": clock} if clock is not None else {}))


def consumed(offset: int = 41) -> ConsumerRecord:
    return ConsumerRecord("events", 3, offset, 1_700_000_000_000, b"k", b"{bad", (("h", b"v"),))


def source_record(value="x") -> SourceRecord:
    return SourceRecord({"file": "a.txt"}, {"position": 12}, "lines", None, None, "key-1", Schema.STRING_SCHEMA,
                        value, 1_700_000_000_000)


class Flaky:
    def __init__(self, failures: int, result="ok") -> None:
        self.left = failures
        self.calls = 0
        self.result = result

    def __call__(self):
        self.calls += 1
        if self.left > 0:
            self.left -= 1
            raise RetriableException("not yet")
        return self.result


# --- configuration ----------------------------------------------------------------------------------------------
def test_string_configs_are_parsed_like_the_connector_config():
    h = handler(errors_tolerance="all", errors_log_enable="false", errors_log_include_messages="TRUE",
                errors_retry_timeout="-1", errors_retry_delay_max_ms="5000")
    assert h.tolerate and not h.log_enabled and h.log_messages
    assert h.retry_timeout_ms == -1 and h.max_delay_ms == 5000
    defaults = handler()
    assert not defaults.tolerate and not defaults.log_enabled and defaults.retry_timeout_ms == 0


# --- retries ----------------------------------------------------------------------------------------------------
def test_a_retriable_failure_that_clears_in_time_returns_the_result_and_counts_retries(clock):
    h = handler(clock, errors_retry_timeout=60_000)
    op = Flaky(2)  # the first failure already happened on the hot path
    assert h.retry(Stage.TRANSFORMATION, "T", op, RetriableException("first"), consumed=consumed()) == "ok"
    assert clock.waits == [300, 600, 1200]
    assert h.metrics.retries == 3 and h.metrics.records_failed == 0


def test_backoff_is_capped_by_the_max_delay_and_the_deadline(clock):
    h = handler(clock, errors_retry_timeout=5_000, errors_retry_delay_max_ms=1_000, errors_tolerance="all")
    op = Flaky(1000)
    assert h.retry(Stage.VALUE_CONVERTER, "C", op, RetriableException("first"), consumed=consumed()) is None
    assert clock.waits == [300, 600, 1000, 1000, 1000, 1000, 100]  # 5000 ms in all, the last wait shortened
    assert h.metrics.retries == 7 and h.metrics.records_failed == 1 and h.metrics.records_skipped == 1


def test_no_retries_without_a_retry_timeout_or_for_other_errors(clock):
    h = handler(clock, errors_tolerance="all")
    op = Flaky(1)
    assert h.retry(Stage.TRANSFORMATION, "T", op, RetriableException("x"), consumed=consumed()) is None
    h2 = handler(clock, errors_tolerance="all", errors_retry_timeout=10_000)
    assert h2.retry(Stage.TRANSFORMATION, "T", op, DataException("bad"), consumed=consumed()) is None
    assert op.calls == 0 and clock.waits == []
    assert h.metrics.retries == h2.metrics.retries == 0 and h2.metrics.records_skipped == 1


def test_stopping_while_retrying_neither_skips_nor_fails_the_record(clock):
    clock.stop_after = 2
    h = handler(clock, errors_retry_timeout=-1, errors_tolerance="all")
    with pytest.raises(TaskStoppingError):
        h.retry(Stage.TRANSFORMATION, "T", Flaky(100), RetriableException("x"), consumed=consumed())
    assert h.metrics.records_skipped == 0 and h.metrics.records_failed == 0


# --- tolerance --------------------------------------------------------------------------------------------------
def test_tolerance_none_raises_with_the_records_coordinates():
    h = handler()
    with pytest.raises(ToleranceExceededError) as info:
        h.retry(Stage.VALUE_CONVERTER, "JsonConverter", Flaky(0), DataException("bad json"), consumed=consumed(41))
    message = str(info.value)
    assert "topic=events partition=3 offset=41" in message and "VALUE_CONVERTER" in message
    assert "JsonConverter" in message and "bad json" in message
    assert isinstance(info.value.__cause__, DataException)
    assert h.metrics.records_failed == 1 and h.metrics.records_skipped == 0
    with pytest.raises(ToleranceExceededError, match=r"source_partition=\{'file': 'a.txt'\}"):
        h.retry(Stage.TRANSFORMATION, "Cast.Value", Flaky(0), DataException("no"), source_record=source_record())


def test_error_log_follows_errors_log_enable(caplog):
    quiet = handler(errors_tolerance="all")
    quiet.retry(Stage.VALUE_CONVERTER, "C", Flaky(0), DataException("bad"), consumed=consumed())
    assert quiet.metrics.errors_logged == 0 and "Error in task" not in caplog.text
    loud = handler(errors_tolerance="all", errors_log_enable="true", errors_log_include_messages="true")
    loud.retry(Stage.VALUE_CONVERTER, "C", Flaky(0), DataException("bad"), consumed=consumed())
    assert loud.metrics.errors_logged == 1
    assert "Error in task conn-2 at stage VALUE_CONVERTER" in caplog.text and "value=b'{bad'" in caplog.text


# --- dead-letter queues -------------------------------------------------------------------------------------------
def _dlq(context_headers: bool = True) -> tuple[FakeProducer, DeadLetterQueueReporter]:
    producer = FakeProducer()
    return producer, DeadLetterQueueReporter(producer, "dlq", "conn", 2, context_headers, ErrorMetrics())


def test_sink_dlq_gets_the_original_bytes_then_the_context_headers():
    producer, dlq = _dlq()
    h = handler(dlq=dlq, errors_tolerance="all")
    h.retry(Stage.VALUE_CONVERTER, "JsonConverter", Flaky(0), DataException("bad json"), consumed=consumed(41))
    [sent] = producer.sent
    assert sent["topic"] == "dlq" and sent["key"] == b"k" and sent["value"] == b"{bad"
    assert sent["headers"][0] == ("h", b"v")
    ctx = {k: v.decode() for k, v in sent["headers"][1:]}
    assert ctx == {
        "__connect.errors.topic": "events",
        "__connect.errors.partition": "3",
        "__connect.errors.offset": "41",
        "__connect.errors.connector.name": "conn",
        "__connect.errors.task.id": "2",
        "__connect.errors.stage": "VALUE_CONVERTER",
        "__connect.errors.class.name": "JsonConverter",
        "__connect.errors.exception.class.name": "connect.api.errors.DataException",
        "__connect.errors.exception.message": "bad json",
        "__connect.errors.exception.stacktrace": ctx["__connect.errors.exception.stacktrace"],
    }
    assert "DataException: bad json" in ctx["__connect.errors.exception.stacktrace"]
    assert h.metrics.dlq_produce_requests == 1
    _, plain = _dlq(context_headers=False)
    plain.report(Failure(Stage.TASK_PUT, "T", DataException("x"), consumed()), b"k", b"v", (("h", b"v"),))
    assert plain.producer.sent[0]["headers"] == (("h", b"v"),)


def test_a_failed_dlq_write_is_counted_and_fails_the_next_flush_once():
    producer, dlq = _dlq()
    producer.fail = LogError("disk full")
    dlq.report(Failure(Stage.TASK_PUT, "T", DataException("x"), consumed()), b"k", b"v", ())
    with pytest.raises(Exception, match="disk full"):
        dlq.flush(1.0)
    assert dlq.metrics.dlq_produce_failures == 1
    dlq.flush(1.0)  # reported once; a rewind and resend may then succeed


def test_source_dlq_gets_a_json_document_of_the_polled_record():
    producer, dlq = _dlq()
    h = handler(dlq=dlq, errors_tolerance="all")
    record = source_record("not-a-number")
    record.headers.add_string("trace", "abc").add_bytes("raw", b"\xff\x01")
    h.retry(Stage.TRANSFORMATION, "Cast.Value", Flaky(0), DataException("nope"), source_record=record)
    [sent] = producer.sent
    assert sent["key"] is None
    assert json.loads(sent["value"]) == {
        "topic": "lines", "kafka_partition": None, "source_partition": {"file": "a.txt"},
        "source_offset": {"position": 12}, "timestamp": 1_700_000_000_000, "key": "key-1",
        "value": "not-a-number", "headers": [{"key": "trace", "value": "abc"}, {"key": "raw", "value": "\\xff\x01"}],
    }
    ctx = {k[len("__connect.errors."):]: v.decode() for k, v in sent["headers"]}
    assert ctx["topic"] == "lines" and "partition" not in ctx and "offset" not in ctx
    assert json.loads(ctx["source.partition"]) == {"file": "a.txt"}
    assert json.loads(ctx["source.offset"]) == {"position": 12}
    assert ctx["stage"] == "TRANSFORMATION" and ctx["class.name"] == "Cast.Value"
    assert h.metrics.records_skipped == 1 and h.metrics.dlq_produce_requests == 1


def test_source_record_document_renders_values_as_best_effort_text():
    record = SourceRecord(None, None, "t", 4, None, b"\x00ok", None, {"a": [1, True]})
    doc = json.loads(source_record_document(record))
    assert doc["key"] == "\x00ok" and doc["value"] == '{"a": [1, true]}' and doc["kafka_partition"] == 4


# --- the errant record reporter ----------------------------------------------------------------------------------
def test_errant_record_reporter_future_completes_on_acknowledgement():
    producer, dlq = _dlq()
    h = handler(dlq=dlq, errors_tolerance="all")
    original = consumed(7)
    record = SinkRecord("renamed", 3, None, "k", None, "v", 7, original_topic="events")
    reporter = ErrantRecordReporterImpl(h, "MySinkTask", lambda r: original if r.original_kafka_offset == 7 else None,
                                        lambda r: pytest.fail("not expected"))
    future = reporter.report(record, DataException("rejected"))
    assert not future.done()
    producer.poll()
    assert future.done() and future.result() is None
    second = reporter.report(record, DataException("again"))
    assert second.result(1.0) is None and producer.flushes == 1  # waiting flushes the DLQ producer
    assert producer.sent[0]["value"] == b"{bad"
    ctx = dict(producer.sent[0]["headers"])
    assert ctx["__connect.errors.stage"] == b"TASK_PUT" and ctx["__connect.errors.class.name"] == b"MySinkTask"
    assert h.metrics.records_failed == 2 and h.metrics.dlq_produce_requests == 2


def test_errant_record_reporter_falls_back_to_converting_and_raises_without_tolerance():
    h = handler(errors_log_enable="true")
    serialized = []
    reporter = ErrantRecordReporterImpl(h, "T", lambda r: None,
                                        lambda r: serialized.append(r) or consumed(r.original_kafka_offset))
    record = SinkRecord("events", 3, None, "k", None, "v", 99)
    with pytest.raises(ToleranceExceededError, match="offset=99"):
        reporter.report(record, DataException("rejected"))
    assert serialized == [record]
    tolerant = ErrantRecordReporterImpl(handler(errors_tolerance="all"), "T", lambda r: consumed(), lambda r: None)
    assert tolerant.report(record, DataException("x")).result(0) is None  # no DLQ: done at once


# --- predicates in the chain ----------------------------------------------------------------------------------------
class _Mark(Transformation):
    def __init__(self, mark: str, fail: bool = False) -> None:
        self.mark = mark
        self.fail = fail

    def configure(self, configs):
        pass

    def apply(self, record):
        if self.fail:
            raise DataException("boom")
        return record.new_record(value=record.value + self.mark)

    def config(self):
        return ConfigDef()


class _Drop(_Mark):
    def apply(self, record):
        return None


class _Is(Predicate):
    def __init__(self, topic: str) -> None:
        self.topic = topic

    def configure(self, configs):
        pass

    def test(self, record):
        return record.topic == self.topic

    def config(self):
        return ConfigDef()


@pytest.mark.parametrize(("topic", "negate", "applied"), [("a", False, True), ("b", False, False),
                                                          ("a", True, False), ("b", True, True)])
def test_a_gated_transform_applies_when_predicate_xor_negate(topic, negate, applied):
    chain = TransformationChain([TransformStage("m", _Mark("!"), _Is("a"), negate), TransformStage("n", _Mark("."))])
    out = chain.apply(SourceRecord(None, None, topic, value="v"))
    assert out.value == ("v!." if applied else "v.")


def test_the_chain_drops_records_and_names_the_stage_that_failed():
    dropping = TransformationChain([TransformStage("d", _Drop("")), TransformStage("m", _Mark("!"))])
    assert dropping.apply(SourceRecord(None, None, "a", value="v")) is None
    failing = TransformationChain([TransformStage("m", _Mark("!")), TransformStage("f", _Mark("", fail=True))])
    with pytest.raises(DataException):
        failing.apply(SourceRecord(None, None, "a", value="v"))
    assert failing.failed_stage is not None and failing.failed_stage.alias == "f"
