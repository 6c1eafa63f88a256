"""SIGINT and SIGTERM for the worker commands: noted, never raised, so a stop asked for at any moment (start-up
included) ends the process quietly, with the status Python programs and Kafka Connect end with.

Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread happens to be (inside an
import, a fork, a lock), which prints a traceback and can leave the REST front process running; the default
SIGTERM kills the process before it can stop its front. Here a signal only records that a stop was asked for;
the start-up sequence looks for it between its steps (``raise_if_requested``) and the run loop polls it
(``requested``). The handler takes no lock: a signal may arrive while the main thread holds one (an
``Event.wait`` does), and a handler that waited for it would never return.

This module imports only the standard library: ``connect.cli`` installs it before importing anything else.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

__all__ = ["StopRequested", "exit_status", "install", "raise_if_requested", "requested"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_requested: int | None = None
_installed_in: int | None = None  # the pid that installed the handlers: a fork of it ignores what it inherits


class StopRequested(Exception):
    """SIGINT or SIGTERM arrived while the process was starting: it stops instead of going on."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return exit_status(self.signum)


def _note(signum: int, frame: FrameType | None) -> None:
    global _requested
    if os.getpid() != _installed_in:
        return  # a fork (the REST front) before it set its own dispositions: its lifetime is the worker's
    if _requested is None:
        _requested = signum


def install() -> None:
    """From now on SIGINT and SIGTERM request a stop. Idempotent."""
    global _installed_in
    if _installed_in == os.getpid():
        return
    _installed_in = os.getpid()
    for sig in STOP_SIGNALS:
        signal.signal(sig, _note)


def installed() -> bool:
    return _installed_in == os.getpid()


def requested() -> int | None:
    """The first stop signal received, if any."""
    return _requested


def raise_if_requested() -> None:
    """Between two steps of a start: stop here if a signal asked for it."""
    if _requested is not None:
        raise StopRequested(_requested)


def exit_status(signum: int) -> int:
    """130 after SIGINT (128 + 2, what a shell reports for Ctrl-C), 0 after SIGTERM: the asked-for stop."""
    return 128 + signal.SIGINT if signum == signal.SIGINT else 0
