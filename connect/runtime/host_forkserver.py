"""The task hosts' fork server: task host processes forked from a copy of the worker made while it was one thread.

A task host started as ``python -P -m connect.runtime.task_host_process`` is a new interpreter that imports the
runtime again: about a third of a CPU-second per host, paid by every host of every start. The worker has
imported most of it already. Forking the worker itself for each host is not safe once it runs threads (a lock
held by another thread at the fork stays held for ever in the child), so the worker forks once, early, while
it is still one thread (after its plugins are loaded, before it opens the log or starts anything): that copy
is the fork server. It forks one host per request; a host starts with the runtime imported (the worker imports
what every host runs before the fork, as it needs it too), and pages the worker, the fork server and the hosts
do not write stay shared (``gc.freeze`` before each fork keeps the collector from writing to them). If the fork
server dies, the worker says so once and starts later hosts as new interpreters, as before.

What a host started by ``Popen`` had, a forked one has too:

* its settings come over its task channel, never on a command line (it has none of its own);
* it runs in a session of its own, ignoring SIGINT and SIGTERM (the worker decides when it stops);
* its only descriptors are standard input (``/dev/null``), output and error and its end of the task channel,
  so it sees the channel end when the worker dies (``kill -9`` of the worker ends its hosts) and holds no
  other process's channel open;
* the worker learns its pid and, from the fork server, its exit code: ``ForkedHost`` has the ``pid``,
  ``poll``, ``wait`` and ``kill`` of ``subprocess.Popen`` that TaskHost uses.

The fork server exits when its socket to the worker ends (the worker stopped or died). Its protocol: the worker
sends ``{"spawn": index}`` with the host's channel end attached (SCM_RIGHTS) on a SOCK_SEQPACKET socket; the
server answers ``{"spawned": index, "pid": pid}`` or ``{"failed": index, "error": text}``, and reports every
host's end as ``{"exited": pid, "code": code}`` (a negative code: killed by that signal).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["ForkServerGone", "ForkedHost", "HostForkServer", "exit_text", "fork_server", "start_fork_server",
           "stop_fork_server"]

log = logging.getLogger(__name__)

_SPAWN_TIMEOUT_S = 30.0
_MAX_MESSAGE = 4096
# what a forked host runs: (its end of the task channel, its index) -> its exit status
HostMain = Callable[[int, int], int]

_server: HostForkServer | None = None
_server_lock = threading.Lock()


class ForkServerGone(OSError):
    """The fork server has exited: hosts are started as new interpreters instead."""


class ForkedHost:
    """A host the fork server forked, as the worker sees it: what TaskHost uses of ``subprocess.Popen``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._exited = threading.Event()
        self._killed = False

    def _set_exit(self, code: int | None) -> None:
        self.returncode = code
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"task host (pid {self.pid})", timeout or 0.0)
        if self.returncode is None:
            # the fork server ended before this host (killed on its own): this process cannot reap the host, so
            # its end is read from /proc, with its status while it is a zombie nobody reaped
            while (ended := _ended(self.pid)) is None:
                if deadline is not None and time.monotonic() >= deadline:
                    raise subprocess.TimeoutExpired(f"task host (pid {self.pid})", timeout or 0.0)
                time.sleep(0.01)
            # reaped by another: its status is gone; the signal this process killed it with, if it did
            self.returncode = ended if ended != _UNKNOWN else (-signal.SIGKILL if self._killed else 0)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            # its pid is not reused while the fork server lives and has not reaped it (it reports that here first)
            self._killed = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def exit_text(code: int | None) -> str:
    """How a process ended, from its exit code as ``subprocess.Popen`` gives it (None: it has not)."""
    if code is None:
        return "still running"
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


_UNKNOWN = -(2**31)


def _ended(pid: int) -> int | None:
    """None while ``pid`` runs; once it has ended, its exit code as Popen gives it, or _UNKNOWN once reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return _UNKNOWN
    if fields[0] not in ("Z", "X"):
        return None
    # field 52, exit_code: the status waitpid would give (fields here start at field 3)
    return os.waitstatus_to_exitcode(int(fields[49])) if len(fields) > 49 else _UNKNOWN


class HostForkServer:
    """The worker's end of the fork server."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self._sock = sock
        self._lock = threading.Lock()  # one spawn at a time: replies come in the order asked
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._hosts: dict[int, ForkedHost] = {}
        self._hosts_lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._closed = False

    @property
    def alive(self) -> bool:
        return not self._closed

    def spawn(self, channel: socket.socket, index: int) -> ForkedHost:
        """Fork host ``index`` with ``channel`` as its end of the task channel; ForkServerGone if the server has
        exited or does not answer."""
        with self._lock:
            if self._closed:
                raise ForkServerGone("the task hosts' fork server has exited")
            if self._reader is None:  # only now: at the fork, this process had to be one thread
                self._reader = threading.Thread(target=self._read, name="task-host-forkserver", daemon=True)
                self._reader.start()
            try:
                socket.send_fds(self._sock, [orjson.dumps({"spawn": index})], [channel.fileno()])
            except OSError as exc:
                raise ForkServerGone(f"the task hosts' fork server is gone: {exc}") from exc
            try:
                reply = self._replies.get(timeout=_SPAWN_TIMEOUT_S)
            except queue.Empty:
                raise ForkServerGone(f"the task hosts' fork server did not answer within {_SPAWN_TIMEOUT_S:.0f} s")\
                    from None
            if reply is None:
                raise ForkServerGone("the task hosts' fork server has exited")
            if "failed" in reply:
                raise OSError(f"the task hosts' fork server could not start host {index}: {reply['error']}")
            with self._hosts_lock:
                return self._hosts[int(reply["pid"])]

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(_MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            message = orjson.loads(data)
            if "exited" in message:
                with self._hosts_lock:
                    host = self._hosts.pop(int(message["exited"]), None)
                if host is not None:
                    host._set_exit(int(message["code"]))
                continue
            if "spawned" in message:  # registered before the caller sees it: its exit may be the next message
                with self._hosts_lock:
                    self._hosts[int(message["pid"])] = ForkedHost(int(message["pid"]))
            self._replies.put(message)
        if not self._closed:  # not asked to stop: it died
            try:
                _, status = os.waitpid(self.pid, 0)
                how = f"exited ({exit_text(os.waitstatus_to_exitcode(status))})"
            except ChildProcessError:
                how = "exited"
            log.warning("The task hosts' fork server (pid %d) %s; task hosts start as new processes from now on",
                        self.pid, how)
        self._closed = True
        self._replies.put(None)
        with self._hosts_lock:
            orphans = list(self._hosts.values())
            self._hosts.clear()
        for host in orphans:  # no exit code will come; a waiter is not kept waiting for one
            host._exited.set()

    def close(self, timeout: float = 5.0) -> None:
        """End the fork server (the hosts it forked are stopped by their own channels) and reap it."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        while True:
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            if time.monotonic() >= deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.pid, 0)
                break
            time.sleep(0.01)
        self._sock.close()


def fork_server() -> HostForkServer | None:
    """The running fork server of this process, if any."""
    with _server_lock:
        return _server if _server is not None and _server.alive else None


def start_fork_server(host_main: HostMain) -> HostForkServer | None:
    """Fork the fork server now, if this process is one thread (else None: hosts start as new interpreters);
    each host it forks runs ``host_main``.

    Call it once the modules a host shares with the worker are imported and before anything opens files,
    sockets or threads that a host must not inherit."""
    global _server
    if threading.active_count() != 1:
        return None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # as for the REST front's fork: a collection in either process would otherwise copy every page
    # held back over the fork: the fork server ignores both once it runs, and a Ctrl-C between is not its to take
    held = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))
    try:
        pid = os.fork()
        if pid == 0:  # the fork server: never returns to the worker's code
            code = 1
            try:
                ours.close()
                code = _serve(theirs, host_main)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    theirs.close()
    with _server_lock:
        _server = HostForkServer(pid, ours)
    return _server


def stop_fork_server() -> None:
    global _server
    with _server_lock:
        server, _server = _server, None
    if server is not None:
        server.close()


# --- the fork server's side ---------------------------------------------------------------------------------

def _detach(keep: int) -> None:
    """A session of its own, SIGINT and SIGTERM ignored, and of the worker's descriptors only standard output
    and error and ``keep``. A descriptor is not closed but pointed at /dev/null: objects the worker had made
    may still close theirs when collected, and must not close one the number has been given to since."""
    os.setsid()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
        if fd > 2 and fd not in (keep, null):
            with contextlib.suppress(OSError):
                os.dup2(null, fd, inheritable=False)
    os.close(null)


def _name(comm: str) -> None:
    """The process's name as ``ps -o comm`` and ``top`` show it (its command line is the worker's)."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as f:
        f.write(comm[:15])


def _serve(sock: socket.socket, host_main: HostMain) -> int:
    _detach(sock.fileno())
    _name("task-host-fork")
    from connect.logging_setup import configure_logging

    configure_logging(tag="task-host-forkserver")
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_w)
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 512):
                    pass
        _reap(sock, children)
        if sock.fileno() not in ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 1)
        except OSError:
            return 0
        if not data:
            return 0  # the worker is gone or stopping: so is this server (its hosts follow their own channels)
        index = int(orjson.loads(data)["spawn"])
        try:
            if not fds:
                raise OSError("no task channel came with the request")
            gc.freeze()
            pid = os.fork()
            if pid == 0:
                _host(host_main, fds[0], index, sock, (wake_r, wake_w))
            children.add(pid)
            reply: dict[str, Any] = {"spawned": index, "pid": pid}
        except Exception as exc:
            reply = {"failed": index, "error": str(exc)}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            sock.send(orjson.dumps(reply))
        except OSError:
            return 0


def _reap(sock: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        children.discard(pid)
        with contextlib.suppress(OSError):
            sock.send(orjson.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}))


def _host(host_main: HostMain, channel_fd: int, index: int, server_sock: socket.socket,
          wake: tuple[int, int]) -> None:
    """A forked task host: ``host_main``, then its exit."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wake:
            os.close(fd)
        server_sock.close()  # or the worker would not see the server end while a host lives
        os.setsid()
        _name(f"task-host-{index}")
        code = host_main(channel_fd, index)
        logging.shutdown()
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)
