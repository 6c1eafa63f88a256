"""A worker's stop is bounded (issue #35 item 7): past ``task.shutdown.graceful.timeout.ms`` and a margin, a stop
that hangs (a request thread that never returns, which the REST server waits for without a bound, and which
is not a daemon) ends the process anyway, with one ERROR line naming what was still running."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.support import REPO

_STUCK = """
import sys, threading
from connect.cli.worker_process import _exit_if_still_running
threading.Thread(target=threading.Event().wait, name="stuck-request").start()  # not a daemon; never returns
threading.Thread(target=_exit_if_still_running, args=(1.0, "standalone"), daemon=True).start()
sys.exit(0)  # the interpreter now waits for stuck-request
"""

_CLEAN = """
import sys, threading
from connect.cli.worker_process import _exit_if_still_running
threading.Thread(target=_exit_if_still_running, args=(1.0, "standalone"), daemon=True).start()
sys.exit(0)
"""


def _run(script: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - start


def test_a_stop_that_hangs_ends_the_process_past_its_bound_naming_what_hung() -> None:
    done, took = _run(_STUCK)
    assert done.returncode == 2, done.stderr
    assert took < 30
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("ERROR the worker did not stop within 1 s; exited without waiting for ")
    assert "stuck-request at threading.py:" in errors[0]  # where each thread still running was


def test_a_stop_that_ends_is_not_cut_short() -> None:
    done, took = _run(_CLEAN)
    assert done.returncode == 0 and "did not stop" not in done.stderr, done.stderr
