"""A herder's refusal during a worker's start (a connector file it will not store) keeps its start-up report
now that HerderError is a ConnectException (#39 item 4): "worker failed to start: ...", exit code 2, as
before, not the one-line form of the SDK's ConnectExceptions."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO

_REFUSED_AT_START = """
import sys, threading, types
from connect.cli.worker_process import WorkerProcess
from connect.runtime.herder import PayloadTooLargeError

class Refused(WorkerProcess):
    def __init__(self):  # none of the config, plugins or front process: only run()'s handling is under test
        self._stop = threading.Event()
        self._fatal = None
        self._front_launch = None
        self.herder = self.rest = self.backend = self.schema_registry = None
        # task.processes=0: no task hosts, and so no fork server for them (connect.runtime.host_forkserver)
        self.config = types.SimpleNamespace(python_switch_interval_us=5000, task_shutdown_graceful_timeout_ms=5000,
                                            task_processes=0)

    def start(self):
        raise PayloadTooLargeError("connector config of big not stored: too large")

sys.exit(Refused().run())
"""


def test_a_herder_refusal_at_start_is_reported_as_a_failed_start() -> None:
    done = subprocess.run([sys.executable, "-c", _REFUSED_AT_START], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR ")]
    assert errors == ["ERROR worker failed to start: connector config of big not stored: too large"], done.stderr
