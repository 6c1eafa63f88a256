"""The commands of a Flume agent's ``exec`` sources, run by ``headrace flume-agent`` itself.

A command named in a config file the operator runs is the operator's; a connector that ran commands could be
created over REST by anyone who reaches it, so there is no exec connector. Instead the agent runs each
command with its standard output appended to a file of the work folder, which a FileStreamSource reads line
by line. What Flume's exec source loses when its channel is full or the agent dies, the file keeps: the
source resumes from its stored offset.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import attrs

__all__ = ["ExecCommand", "ExecCommands"]

log = logging.getLogger(__name__)


@attrs.frozen
class ExecCommand:
    """One exec source's command: what runs, where its output goes, and whether it is run again."""

    source: str
    command: str
    shell: str  # e.g. "/bin/sh -c": the command is then given to it whole; empty: split on spaces and run
    output: Path
    restart: bool = False
    restart_throttle_s: float = 10.0
    log_stderr: bool = False

    @property
    def argv(self) -> list[str]:
        return [*shlex.split(self.shell), self.command] if self.shell else shlex.split(self.command)


class ExecCommands:
    """Runs the commands, one named supervising thread each; ``stop`` ends them and their processes."""

    def __init__(self, commands: Sequence[ExecCommand]) -> None:
        self._commands = list(commands)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        for command in self._commands:
            command.output.parent.mkdir(parents=True, exist_ok=True)
            command.output.touch()
            thread = threading.Thread(target=self._supervise, args=(command,), name=f"exec-{command.source}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def _supervise(self, command: ExecCommand) -> None:
        while not self._stop.is_set():
            code = self._run_once(command)
            if self._stop.is_set():
                return
            if not command.restart:
                log.info("exec source %s: the command ended (exit %s); restart is false, so it is not run again",
                         command.source, code)
                return
            log.info("exec source %s: the command ended (exit %s); running it again in %g s (restartThrottle)",
                     command.source, code, command.restart_throttle_s)
            self._stop.wait(command.restart_throttle_s)

    def _run_once(self, command: ExecCommand) -> int | str:
        with command.output.open("ab") as out:
            try:
                with self._lock:
                    if self._stop.is_set():
                        return "not started"
                    proc = subprocess.Popen(command.argv, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.PIPE if command.log_stderr else subprocess.DEVNULL)
                    self._running[command.source] = proc
            except OSError as exc:
                log.error("exec source %s: cannot run %r: %s", command.source, command.command, exc)
                return f"not started: {exc.strerror or exc}"
            log.info("exec source %s: running %r (pid %d), output appended to %s", command.source, command.command,
                     proc.pid, command.output)
            if proc.stderr is not None:
                for line in proc.stderr:
                    log.warning("exec source %s: stderr: %s", command.source,
                                line.decode("utf-8", "replace").rstrip())
            code = proc.wait()
            with self._lock:
                self._running.pop(command.source, None)
            return code

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            running = list(self._running.values())
        for proc in running:
            proc.terminate()
        for proc in running:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        for thread in self._threads:
            thread.join(10)
