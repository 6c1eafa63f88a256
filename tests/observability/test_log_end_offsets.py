"""LogEndOffsets: one log lookup per topic per max age, whatever the number of callers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connect.api.topic_partition import TopicPartition
from connect.runtime.log_end_offsets import LogEndOffsets


class CountingReader:
    """A project-internal LogReader stand-in: answers partition_offsets from a dict and counts the calls."""

    def __init__(self, ends: dict[TopicPartition, int]) -> None:
        self.ends = ends
        self.asked: list[list[str]] = []
        self.closed = False

    def partition_offsets(self, topics: Sequence[str] = (), pattern: str | None = None
                          ) -> dict[TopicPartition, tuple[int, int]]:
        self.asked.append(list(topics))
        return {tp: (0, end) for tp, end in self.ends.items() if tp.topic in topics}

    def close(self) -> None:
        self.closed = True


def _cache(reader: CountingReader, now: list[float], all_topics: tuple[str, ...] = ()) -> LogEndOffsets:
    def open_reader() -> Any:
        return reader
    return LogEndOffsets(open_reader, max_age_s=1.0, clock=lambda: now[0], all_topics=lambda: all_topics)


def test_reuses_ends_within_max_age_and_rereads_after() -> None:
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    reader = CountingReader({a0: 5, a1: 7, b0: 3})
    now = [100.0]
    ends = _cache(reader, now)
    assert ends.ends(["a"]) == {a0: 5, a1: 7}
    assert ends.ends(["a", "b"]) == {a0: 5, a1: 7, b0: 3}
    assert reader.asked == [["a"], ["b"]]  # "a" came from the first lookup
    reader.ends[a0] = 9
    now[0] += 0.5
    assert ends.ends(["a"])[a0] == 5
    now[0] += 0.6
    assert ends.ends(["a"])[a0] == 9
    assert reader.asked[-1] == ["a"]


def test_unknown_topic_is_empty_and_close_closes_the_reader() -> None:
    reader = CountingReader({})
    ends = _cache(reader, [0.0])
    assert ends.ends(["nope"]) == {}
    ends.close()
    assert reader.closed


def test_a_miss_reads_every_topic_so_a_sweep_over_connectors_is_one_lookup() -> None:
    a0, b0, c0 = TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("c", 0)
    reader = CountingReader({a0: 1, b0: 2, c0: 3})
    ends = _cache(reader, [0.0], all_topics=("a", "b", "c"))
    assert ends.ends(["a"]) == {a0: 1}
    assert ends.ends(["b"]) == {b0: 2}
    assert ends.ends(["c"]) == {c0: 3}
    assert reader.asked == [["a", "b", "c"]]


class StuckReader(CountingReader):
    """A reader whose log is unreachable: each lookup waits until released, then fails."""

    def __init__(self) -> None:
        super().__init__({})
        import threading

        self.release = threading.Event()

    def partition_offsets(self, topics: Sequence[str] = (), pattern: str | None = None
                          ) -> dict[TopicPartition, tuple[int, int]]:
        self.asked.append(list(topics))
        self.release.wait(10)
        raise OSError("log unreachable")


def test_known_ends_never_wait_on_the_log_and_read_stale_ones_in_the_background() -> None:
    from tests.support import wait_until

    a0 = TopicPartition("a", 0)
    reader = CountingReader({a0: 5})
    now = [100.0]
    ends = _cache(reader, now)
    assert ends.known_ends(["a"]) == {}  # nothing known yet: read in the background for the next call
    wait_until(lambda: ends.known_ends(["a"]) == {a0: 5}, 5, what="the background read")
    stuck = StuckReader()
    blocked = _cache(stuck, now)
    assert blocked.known_ends(["a"]) == {}  # answers at once while the lookup hangs
    assert blocked.known_ends(["a"]) == {}
    wait_until(lambda: stuck.asked == [["a"]], 5, what="one lookup under way")  # one at a time, not one per call
    stuck.release.set()
