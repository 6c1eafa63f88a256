"""WordSourceConnector: numbered words, ``batch.size`` records per poll, resuming from its offsets.

Record ``n`` (counting from 0) has the key ``n`` and the value ``words[n % len(words)]``. The source
partition is one constant map and the offset after record ``n`` is ``{"position": n + 1}``: the number of
the next record to produce. A restarted task reads that offset back and carries on from it, so what the
topic holds is the same sequence whether or not the task was stopped in between (at least once: records
produced after the last offset commit are produced again after a crash).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectException,
    ExactlyOnceSupport,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    Task,
)
from connect.api.version import distribution_version

__all__ = ["WordSourceConnector", "WordSourceTask"]

log = logging.getLogger(__name__)

TOPIC_CONFIG = "topic"
WORDS_CONFIG = "words"
BATCH_SIZE_CONFIG = "batch.size"
POLL_INTERVAL_CONFIG = "poll.interval.ms"
MAX_RECORDS_CONFIG = "max.records"

# One sequence per connector: the worker keeps each connector's offsets apart, so the partition needs
# to tell nothing more than "this sequence".
SOURCE_PARTITION: Mapping[str, Any] = {"sequence": "words"}
POSITION_FIELD = "position"

_LONGEST_WAIT = 1.0  # seconds one poll may block, so that pause and stop are noticed promptly


def _check_words(name: str, words: Any) -> str | None:
    """The LambdaValidator's check: an error message, or None when the list is usable."""
    if not words:
        return "The list must name at least one word"
    if any(not word for word in words):
        return "A word cannot be empty (look for two commas in a row or one at the end)"
    return None


# --8<-- [start:config-def]
CONFIG_DEF = (
    ConfigDef()
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),  # no default: the key is required
        importance=Importance.HIGH,
        documentation="The topic the records are written to.",
    )
    .define(
        WORDS_CONFIG,
        ConfigType.LIST,
        "hello,world",
        LambdaValidator(_check_words, "a non-empty list of non-empty words"),
        importance=Importance.HIGH,
        documentation="The words, comma-separated, that the record values cycle through.",
    )
    .define(
        BATCH_SIZE_CONFIG,
        ConfigType.INT,
        100,
        Range.between(1, 10_000),
        importance=Importance.MEDIUM,
        documentation="The records one poll returns.",
    )
    .define(
        POLL_INTERVAL_CONFIG,
        ConfigType.INT,
        1000,
        Range.between(0, 3_600_000),
        importance=Importance.MEDIUM,
        documentation="Milliseconds between two batches; 0 produces as fast as the worker takes them.",
    )
    .define(
        MAX_RECORDS_CONFIG,
        ConfigType.LONG,
        0,
        Range.at_least(0),
        importance=Importance.LOW,
        documentation="Stop producing once the sequence reaches this many records, counting those "
        "produced before a restart; 0 never stops.",
    )
)
# --8<-- [end:config-def]


# --8<-- [start:connector]
class WordSourceConnector(SourceConnector):
    """Produces numbered words into one topic with a single task."""

    # Re-reading from a committed offset gives the very same records, so exactly-once delivery works
    # with ``exactly.once.source.support=enabled`` on the worker.
    exactly_once = ExactlyOnceSupport.SUPPORTED

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return distribution_version(__name__)

    def config(self) -> ConfigDef:
        return ConfigDef(CONFIG_DEF)  # a copy: the worker adds its own keys to what it is given

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)  # a bad config fails the connector here, before any task starts
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return WordSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # one numbered sequence cannot be shared out without gaps or overlaps: one task, whatever tasks.max
        return [dict(self._props)]
# --8<-- [end:connector]

    def stop(self) -> None:
        pass  # the connector holds nothing: its task does the work

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]
    ) -> bool:
        """Accept ``PATCH /connectors/<name>/offsets`` only with offsets this task can resume from."""
        for partition, offset in offsets.items():
            if dict(partition) != dict(SOURCE_PARTITION):
                raise ConnectException(f"Unknown source partition {dict(partition)!r}; "
                                       f"this connector has only {dict(SOURCE_PARTITION)!r}")
            if offset is None:
                continue  # a reset: the task starts again from record 0
            position = offset.get(POSITION_FIELD)
            if isinstance(position, bool) or not isinstance(position, int) or position < 0:
                raise ConnectException(f"The offset needs '{POSITION_FIELD}' as a whole number >= 0, "
                                       f"got {position!r}")
        return True


class WordSourceTask(SourceTask):
    """Returns ``batch.size`` numbered words per poll, one batch per ``poll.interval.ms``."""

    def __init__(self) -> None:
        self._topic = ""
        self._words: list[str] = []
        self._batch_size = 1
        self._interval = 0.0
        self._max_records = 0
        self._position = 0  # the number of the next record
        self._next_batch_at = 0.0  # time.monotonic() when the next batch is due
        self._stopping = threading.Event()

    def version(self) -> str:
        return distribution_version(__name__)

    # --8<-- [start:task-start]
    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._topic = str(config.get_string(TOPIC_CONFIG))
        self._words = config.get_list(WORDS_CONFIG)
        self._batch_size = int(config.get_int(BATCH_SIZE_CONFIG) or 1)
        self._interval = (config.get_int(POLL_INTERVAL_CONFIG) or 0) / 1000
        self._max_records = int(config.get_long(MAX_RECORDS_CONFIG) or 0)
        self._position = self._committed_position()
        self._next_batch_at = time.monotonic()
        self._stopping.clear()
        log.info("WordSourceTask of connector %s producing into %s from record %d",
                 props.get("name", "?"), self._topic, self._position)

    def _committed_position(self) -> int:
        offset = self.context.offset_storage_reader().offset(SOURCE_PARTITION)
        if offset is None:
            return 0  # never committed: start the sequence
        position = offset.get(POSITION_FIELD)
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            # failing is better than guessing: a wrong guess would repeat or skip records silently
            raise ConnectException(f"The committed offset {offset!r} has no usable '{POSITION_FIELD}'")
        return position
    # --8<-- [end:task-start]

    # --8<-- [start:task-poll]
    def poll(self) -> Sequence[SourceRecord] | None:
        wait = self._next_batch_at - time.monotonic()
        if wait > 0:
            # Event.wait, not time.sleep: stop() sets the event, so a stop never waits out the interval
            self._stopping.wait(min(wait, _LONGEST_WAIT))
            if self._stopping.is_set() or time.monotonic() < self._next_batch_at:
                return None
        count = self._batch_size
        if self._max_records:
            count = min(count, self._max_records - self._position)
            if count <= 0:
                self._stopping.wait(_LONGEST_WAIT)  # done: idle without spinning
                return None
        first = self._position
        numbers = range(first, first + count)
        self._position = first + count
        self._next_batch_at = time.monotonic() + self._interval
        # A SourceRecordBatch holds the batch as columns; the worker converts and sends it in bulk.
        return SourceRecordBatch(
            self._topic,
            [self._words[n % len(self._words)] for n in numbers],
            value_schema=Schema.STRING_SCHEMA,
            keys=list(numbers),
            key_schema=Schema.INT64_SCHEMA,
            source_partition=SOURCE_PARTITION,
            source_offsets=[{POSITION_FIELD: n + 1} for n in numbers],
            timestamp=int(time.time() * 1000),
        )

    def stop(self) -> None:
        self._stopping.set()  # called from another thread: a poll waiting on the event returns at once
    # --8<-- [end:task-poll]
