"""Testing tools for plugin authors: run a connector, a task or the runtime's parts without a real log.

- ``InProcessWorker``: a standalone worker in the test's process on an in-memory log. Start a connector by
  its config, produce records into a topic, read what a source wrote or what a sink committed, and
  ``wait_until`` a condition holds.
- ``run_source_task`` / ``run_sink_task``: drive one task directly on the test's thread, with no worker.
- ``FakeClock``: a clock that moves only when told to, for whatever takes the runtime's ``Clock``.
- ``MemoryBackend``: the topic layer's interface over lists in memory (``MemoryOffsetStore`` beside it
  for source offsets), to build runtime parts on in a unit test.

It sits above the runtime (it may import ``connect.runtime`` and ``connect.log``) and is never imported by
the runtime, the REST layer or the plugins themselves; only their tests import it.
"""

from connect.testing.clock import FakeClock
from connect.testing.memory_log import (
    MemoryAdmin,
    MemoryBackend,
    MemoryConsumer,
    MemoryLog,
    MemoryProducer,
    MemoryReader,
)
from connect.testing.offsets import MemoryOffsetStore
from connect.testing.tasks import RecordingReporter, SinkTaskRun, run_sink_task, run_source_task, sink_records
from connect.testing.worker import DEFAULT_TIMEOUT, InProcessWorker, wait_until

__all__ = [
    "DEFAULT_TIMEOUT",
    "FakeClock",
    "InProcessWorker",
    "MemoryAdmin",
    "MemoryBackend",
    "MemoryConsumer",
    "MemoryLog",
    "MemoryOffsetStore",
    "MemoryProducer",
    "MemoryReader",
    "RecordingReporter",
    "SinkTaskRun",
    "run_sink_task",
    "run_source_task",
    "sink_records",
    "wait_until",
]
