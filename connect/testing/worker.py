"""A standalone worker in the test's process, on an in-memory log, driven as a user drives a worker.

Kafka Connect's integration tests start an ``EmbeddedConnectCluster``; this is
its small Python counterpart: the real Worker and StandaloneHerder (config
validation, converters, transforms, error handling, offset commits, task
threads), with the log, offsets and statuses in memory and no REST server::

    with InProcessWorker() as worker:
        worker.start_connector("sink", {"connector.class": "FileStreamSink", "topics": "lines",
                                        "file": str(out)})
        worker.produce("lines", "a", "b")
        worker.wait_until(lambda: out.read_text() == "a\\nb\\n")
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from connect.api.converter import Converter
from connect.api.topic_partition import TopicPartition
from connect.log.api import ConsumerRecord
from connect.runtime.clock import SYSTEM_CLOCK
from connect.runtime.herder import ConnectorStateInfo, State
from connect.runtime.plugins import PluginRegistry
from connect.runtime.standalone import StandaloneHerder
from connect.runtime.storage.config_store import ConfigTopicStore
from connect.runtime.storage.status import StatusStore
from connect.runtime.worker import Worker
from connect.runtime.worker_config import StandaloneConfig
from connect.testing.memory_log import MemoryBackend
from connect.testing.offsets import MemoryOffsetStore

__all__ = ["DEFAULT_TIMEOUT", "InProcessWorker", "wait_until"]

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
"""How long a wait lasts by default, in seconds: generous, since test machines are often loaded; a wait
that is met returns as soon as it is."""

_WORKER_DEFAULTS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    # the offsets are kept in memory (MemoryOffsetStore); the setting is required and names no real file
    "offset.storage.file.filename": os.devnull,
    # commits a test can wait for: source offsets and sink group offsets within a fraction of a second
    "offset.flush.interval.ms": "100",
}


def wait_until(condition: Callable[[], T | None], *, timeout: float = DEFAULT_TIMEOUT, interval: float = 0.01,
               message: str | Callable[[], str] = "the condition") -> T:
    """Call ``condition`` every ``interval`` seconds until it returns something true, and return that.

    Raises AssertionError after ``timeout`` seconds, naming ``message`` (a text, or a function called then,
    to describe what was seen instead).
    """
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"Waited {timeout:g} s for {text}")
        time.sleep(interval)


class InProcessWorker:
    """A standalone Connect worker running in this process on a MemoryBackend.

    ``plugins``: plugin classes to register besides the installed ones (connectors, transforms, converters,
    predicates), so a plugin can be tested before it is installed. ``installed_plugins=False`` leaves out
    the installed plugins (the default converters are among them: name your own in ``worker_config``).
    ``worker_config``: worker settings over the defaults (String converters, a 100 ms offset flush
    interval). Every task runs in a thread of this process.

    Use it as a context manager, or call ``start`` and ``stop``. ``herder`` (the StandaloneHerder, the
    REST API's operations), ``worker`` (the runtime's Worker), ``backend`` (the log) and ``offsets`` (the
    source offsets) are there for what the methods here do not cover.
    """

    def __init__(self, plugins: Iterable[type] = (), *, worker_config: Mapping[str, str] | None = None,
                 installed_plugins: bool = True, worker_id: str = "in-process-worker:0") -> None:
        registry = PluginRegistry(use_entry_points=installed_plugins)
        for cls in plugins:
            if registry.register(cls) is None:
                raise TypeError(f"{cls.__module__}.{cls.__qualname__} is not a concrete plugin class "
                                "(a connector, converter, transformation, predicate or config provider)")
        self.backend = MemoryBackend(SYSTEM_CLOCK)
        self.offsets = MemoryOffsetStore()
        config = StandaloneConfig({**_WORKER_DEFAULTS, **(worker_config or {})})
        self.worker = Worker(worker_id, config, registry, self.backend, self.offsets, StatusStore())
        self.herder = StandaloneHerder(self.worker, ConfigTopicStore(self.backend, "connect-configs"))
        self._value_converter: Converter | None = None
        self._started = False

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> InProcessWorker:
        """Start the worker (it runs no connector yet); returns it."""
        if not self._started:
            self.herder.start()
            self._started = True
        return self

    def stop(self) -> None:
        """Stop every task and connector, as a worker that shuts down does (tasks commit their offsets)."""
        if self._started:
            self._started = False
            self.herder.stop()

    def __enter__(self) -> InProcessWorker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # --- connectors ------------------------------------------------------------------------------------------
    def start_connector(self, name: str, config: Mapping[str, str], *,
                        timeout: float = DEFAULT_TIMEOUT) -> ConnectorStateInfo:
        """Create connector ``name`` as ``POST /connectors`` does, and wait until it and its tasks run.

        The config is validated first: a bad one raises the herder's BadRequestError (its message lists
        each key and what is wrong with it) and nothing starts. Raises AssertionError, with the trace, if
        the connector or a task fails while starting.
        """
        self.herder.put_connector_config(name, config, allow_replace=False)
        return self.wait_for_running(name, timeout=timeout)

    def connector_status(self, name: str) -> ConnectorStateInfo:
        """The connector's and its tasks' states, as ``GET /connectors/{name}/status`` reports them."""
        return self.herder.connector_status(name)

    def wait_for_running(self, name: str, *, timeout: float = DEFAULT_TIMEOUT) -> ConnectorStateInfo:
        """Wait until the connector and every one of its tasks are RUNNING; their status.

        Raises AssertionError at once, with the trace, when the connector or a task is FAILED.
        """
        def running() -> ConnectorStateInfo | None:
            status = self.connector_status(name)
            for what, state, trace in [("connector", status.connector.state, status.connector.trace),
                                       *((f"task {t.id}", t.state, t.trace) for t in status.tasks)]:
                if state is State.FAILED:
                    raise AssertionError(f"The {what} of {name} failed:\n{trace}")
            states = [status.connector.state, *(t.state for t in status.tasks)]
            return status if all(s is State.RUNNING for s in states) else None

        return wait_until(running, timeout=timeout,
                          message=lambda: f"connector {name} to run; its status: {self.connector_status(name)}")

    def delete_connector(self, name: str) -> None:
        """Stop and delete the connector, as ``DELETE /connectors/{name}`` does (its tasks commit first)."""
        self.herder.delete_connector(name)

    # --- the log ---------------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic (a topic is also created with one partition by its first record)."""
        self.backend.log.create(name, partitions)

    def produce(self, topic: str, *values: str | bytes | None, key: str | bytes | None = None,
                partition: int = 0) -> None:
        """Append ``values``, each with ``key``, to a partition of ``topic`` as a producer outside Connect
        would: text is written as UTF-8, bytes as they are, None as a null (a tombstone). A sink reads them
        through its value converter (by default StringConverter: back as text)."""
        timestamp = int(time.time() * 1000)
        self.backend.log.append(topic, partition, [(_bytes(key), _bytes(v), timestamp) for v in values])

    def records(self, topic: str) -> list[ConsumerRecord]:
        """Every record in ``topic``, partition by partition, as a consumer reads them (bytes)."""
        with self.backend.log.lock:
            partitions = [list(rows) for rows in self.backend.log.topics.get(topic, [])]
        return [ConsumerRecord(topic, p, offset, ts, key, value)
                for p, rows in enumerate(partitions) for offset, (key, value, ts) in enumerate(rows)]

    def values(self, topic: str) -> list[Any]:
        """The values of every record in ``topic``, read back with the worker's value converter (with the
        default StringConverter: text)."""
        converter = self._converter()
        return [converter.to_connect_data(topic, r.value).value for r in self.records(topic)]

    def wait_for_values(self, topic: str, count: int, *, timeout: float = DEFAULT_TIMEOUT) -> list[Any]:
        """Wait until ``topic`` holds at least ``count`` records; the values of all of them (as ``values``)."""
        wait_until(lambda: len(self.records(topic)) >= count, timeout=timeout,
                   message=lambda: f"{count} records in {topic}; it has {len(self.records(topic))}")
        return self.values(topic)

    def committed_offsets(self, connector: str) -> dict[TopicPartition, int]:
        """The offsets sink connector ``connector`` has committed (its group ``connect-<connector>``): per
        partition, the offset of the next record it will read."""
        with self.backend.log.lock:
            return dict(self.backend.log.groups.get(f"connect-{connector}", {}))

    def wait_until(self, condition: Callable[[], T | None], *, timeout: float = DEFAULT_TIMEOUT,
                   message: str | Callable[[], str] = "the condition") -> T:
        """``wait_until`` of this module (here too, for a test that holds only the worker)."""
        return wait_until(condition, timeout=timeout, message=message)

    def _converter(self) -> Converter:
        if self._value_converter is None:
            config = self.worker.config
            converter = self.worker.plugins.new_instance(config.converter_class("value.converter"), "converter",
                                                         "value.converter")
            assert isinstance(converter, Converter)
            converter.configure(config.originals_with_prefix("value.converter."), False)
            self._value_converter = converter
        return self._value_converter


def _bytes(value: str | bytes | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value
