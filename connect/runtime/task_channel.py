"""TaskChannel: requests, replies and one-way messages between a worker and one of its task host processes.

The two ends are a Unix socket pair made by the worker. Each message is a 4-byte big-endian length and a JSON
document (orjson): plain data only, so neither end ever builds an object the other named. ``call`` sends a
request and waits for its reply; ``notify`` sends and does not wait. One named thread per end reads the
socket and hands every request and message to the end's handler *on that thread*, in the order sent: a
handler that may block (a graceful stop) passes the work on, because replies to this end's own calls are
read by the same thread.
"""

from __future__ import annotations

import itertools
import logging
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["ChannelClosed", "RemoteError", "TaskChannel"]

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">I")
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a config or a metrics snapshot; a longer length means a broken stream

Handler = Callable[[str, dict[str, Any]], Any]


class ChannelClosed(ConnectionError):
    """The other end is gone (its process ended, or the channel was closed here)."""


class RemoteError(RuntimeError):
    """The other end's handler raised; the message is its error's text."""


class _Pending:
    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class TaskChannel:
    """One end of the channel. ``handler(method, args)`` answers requests and takes messages; its return
    value is a request's reply, and what it raises is sent back as a RemoteError."""

    def __init__(self, sock: socket.socket, handler: Handler, name: str,
                 on_close: Callable[[], None] | None = None) -> None:
        self._sock = sock
        self._handler = handler
        self._on_close = on_close
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._pending_lock = threading.Lock()
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name=name, daemon=True)

    def start(self) -> None:
        self._reader.start()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- sending ----------------------------------------------------------------------------------

    def notify(self, method: str, **args: Any) -> None:
        self._send({"m": method, "a": args})

    def call(self, method: str, timeout: float | None = 30.0, **args: Any) -> Any:
        """The reply to ``method``; RemoteError when the handler failed, TimeoutError after ``timeout``,
        ChannelClosed when the other end went away first."""
        request_id = next(self._ids)
        pending = _Pending()
        with self._pending_lock:
            if self._closed:
                raise ChannelClosed("the task host channel is closed")
            self._pending[request_id] = pending
        try:
            self._send({"i": request_id, "m": method, "a": args})
            if not pending.done.wait(timeout):
                raise TimeoutError(f"no reply to {method} within {timeout} s")
        finally:
            with self._pending_lock:
                self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.value

    def _send(self, message: dict[str, Any]) -> None:
        body = orjson.dumps(message, option=orjson.OPT_NON_STR_KEYS)
        with self._send_lock:
            if self._closed:
                raise ChannelClosed("the task host channel is closed")
            try:
                self._sock.sendall(_LENGTH.pack(len(body)) + body)
            except OSError as exc:
                raise ChannelClosed(f"the task host channel broke: {exc}") from exc

    # -- receiving --------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        stream = self._sock.makefile("rb")
        try:
            while True:
                head = stream.read(_LENGTH.size)
                if len(head) < _LENGTH.size:
                    return
                (length,) = _LENGTH.unpack(head)
                if length > MAX_MESSAGE_BYTES:
                    log.error("Task host channel %s: message of %d bytes; closing it", self._reader.name, length)
                    return
                body = stream.read(length)
                if len(body) < length:
                    return
                self._dispatch(orjson.loads(body))
        except (OSError, ValueError) as exc:
            if not self._closed:
                log.warning("Task host channel %s ended: %s", self._reader.name, exc)
        finally:
            self._mark_closed()
            if self._on_close is not None:
                self._on_close()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "r" in message:  # a reply to one of this end's calls
            with self._pending_lock:
                pending = self._pending.get(message["r"])
            if pending is not None:
                if "e" in message:
                    pending.error = RemoteError(message["e"])
                else:
                    pending.value = message.get("v")
                pending.done.set()
            return
        request_id = message.get("i")
        try:
            value = self._handler(message["m"], message.get("a") or {})
        except Exception as exc:  # the other end hears why; this end goes on
            if request_id is None:
                log.exception("Task host channel %s: message %s failed", self._reader.name, message.get("m"))
                return
            self._reply({"r": request_id, "e": f"{type(exc).__name__}: {exc}"})
            return
        if request_id is not None:
            self._reply({"r": request_id, "v": value})

    def _reply(self, message: dict[str, Any]) -> None:
        try:
            self._send(message)
        except ChannelClosed:
            pass  # the caller is gone: nobody waits for this reply
        except TypeError as exc:  # a reply that is not plain data: a defect here, reported to the caller
            log.error("Task host channel %s: cannot send the reply: %s", self._reader.name, exc)
            self._send({"r": message["r"], "e": f"TypeError: {exc}"})

    def _mark_closed(self) -> None:
        with self._pending_lock:
            self._closed = True
            pending = list(self._pending.values())
        for p in pending:
            p.error = ChannelClosed("the task host went away before replying")
            p.done.set()

    def close(self) -> None:
        """Close this end; the other end's reader sees the stream end."""
        self._mark_closed()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
