"""Consumers' wake-ups on the embedded log: only the topic's waiters, and appends from other processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from connect.log.api import NewTopic
from connect.log.embedded.backend import EmbeddedBackend
from connect.log.embedded.signals import DirSignals
from tests.support import wait_until


def test_an_append_wakes_only_the_waiters_of_its_topic(tmp_path):
    signals = DirSignals(str(tmp_path))
    orders, audit, pattern = signals.waiter(), signals.waiter(), signals.waiter()
    try:
        signals.watch(orders, ["orders"])
        signals.watch(audit, ["audit"])
        signals.watch(pattern, [], any_topic=True)
        signals.data_appended("orders")
        assert orders.event.is_set() and not audit.event.is_set() and not pattern.event.is_set()
        orders.event.clear()
        signals.topics_changed("payments")  # a new topic: only pattern subscribers care
        assert pattern.event.is_set() and not orders.event.is_set() and not audit.event.is_set()
        signals.watch(orders, ["payments"])  # its assignment moved
        signals.data_appended("orders")
        assert not orders.event.is_set()
    finally:
        for w in (orders, audit, pattern):
            signals.release(w)


def test_an_idle_consumer_of_the_owner_sleeps_through_other_topics_and_wakes_for_its_own(tmp_path):
    backend = EmbeddedBackend(str(tmp_path / "log"), owner=True)
    try:
        admin = backend.admin()
        for topic in ("quiet", "busy"):
            admin.create_topic(NewTopic(topic, 1))
        consumer = backend.consumer("g", {"auto.offset.reset": "earliest"})
        consumer.subscribe(["quiet"])
        consumer.poll(0.1)  # joined and assigned
        producer = backend.producer({"linger.ms": 0})
        got: list[int] = []
        polling = threading.Thread(target=lambda: got.append(sum(len(b) for b in consumer.poll(30.0))))
        started = time.monotonic()
        polling.start()
        for _ in range(50):
            producer.send("busy", b"x")
        producer.flush()
        time.sleep(0.3)
        assert polling.is_alive(), "an append to another topic ended the poll"
        producer.send("quiet", b"y")
        producer.flush()
        polling.join(10)
        assert got == [1] and time.monotonic() - started < 10
        consumer.close()
        producer.close()
    finally:
        backend.close()


_APPEND_FROM_ANOTHER_PROCESS = """
import sys
from connect.log import open_log_backend
backend = open_log_backend({"embedded.log.dir": sys.argv[1]})
producer = backend.producer()
producer.send("quiet", b"from elsewhere")
producer.flush()
producer.close()
backend.close()
"""


def test_an_append_by_another_process_wakes_the_owners_consumer(tmp_path):
    backend = EmbeddedBackend(str(tmp_path / "log"), owner=True)
    try:
        backend.admin().create_topic(NewTopic("quiet", 1))
        consumer = backend.consumer("g", {"auto.offset.reset": "earliest"})
        consumer.subscribe(["quiet"])
        consumer.poll(0.1)
        got: list[bytes] = []

        def poll() -> None:
            for batch in consumer.poll(30.0):
                got.extend(v for v in batch.values if v is not None)

        polling = threading.Thread(target=poll)
        polling.start()
        subprocess.run([sys.executable, "-c", _APPEND_FROM_ANOTHER_PROCESS, str(tmp_path / "log")], check=True,
                       timeout=60)
        wait_until(lambda: not polling.is_alive(), 10, what="the waiting poll to return")
        assert got == [b"from elsewhere"]
        consumer.close()
    finally:
        backend.close()


def test_wakeup_ends_a_long_poll_at_once(tmp_path):
    backend = EmbeddedBackend(str(tmp_path / "log"), owner=True)
    try:
        backend.admin().create_topic(NewTopic("quiet", 1))
        consumer = backend.consumer("g")
        consumer.subscribe(["quiet"])
        consumer.poll(0.1)
        polling = threading.Thread(target=consumer.poll, args=(60.0,))
        polling.start()
        time.sleep(0.2)
        assert consumer.wakeup() is True
        polling.join(5)
        assert not polling.is_alive()
        consumer.close()
    finally:
        backend.close()


def test_announcements_within_one_tick_of_the_file_clock_are_each_seen(tmp_path):
    # two announcements can leave the marker with the same modification time (the kernel's file-time clock
    # is coarse); pinning the time makes that certain here, so only the marker's growth can tell them apart
    owner, other = DirSignals(str(tmp_path)), DirSignals(str(tmp_path))
    owner.owner_opened()
    waiter = owner.waiter()
    marker = tmp_path / ".appended"
    try:
        time.sleep(0.3)  # the watcher has taken its first look
        for _ in range(3):
            waiter.event.clear()
            other.announce_append()
            os.utime(marker, ns=(1_000_000_000, 1_000_000_000))
            assert waiter.event.wait(5), "an announcement went unnoticed"
    finally:
        owner.release(waiter)


def test_the_owner_empties_a_grown_marker_and_still_sees_what_comes_next(tmp_path, monkeypatch):
    from connect.log.embedded import signals as signals_module

    monkeypatch.setattr(signals_module, "MARKER_MAX_BYTES", 4)
    owner, other = DirSignals(str(tmp_path)), DirSignals(str(tmp_path))
    waiter = owner.waiter()
    marker = tmp_path / ".appended"
    try:
        time.sleep(0.3)
        for _ in range(8):
            waiter.event.clear()
            other.announce_append()
            assert waiter.event.wait(5), "an announcement went unnoticed"
        assert marker.stat().st_size <= 5
    finally:
        owner.release(waiter)
