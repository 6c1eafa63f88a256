"""The framed channel between a worker and its REST front process (one socketpair, both directions).

A frame is a kind byte, a 4-byte big-endian length, and that many bytes. The worker sends its settings
once (``SETTINGS``) and then each status snapshot (``SNAPSHOT``: when it was taken, then the listing's
JSON) from the moment it can take requests, which ``SERVING`` announces first; the front answers ``READY``
(its listeners' URLs) or ``FAILED`` (why it cannot serve), and asks for fresher counters with ``WANT``. The
socketpair is private to the two processes, so frames are trusted; the channel closing is how each learns
that the other is gone.
"""

from __future__ import annotations

import socket
import struct
import threading

__all__ = ["FAILED", "READY", "SERVING", "SETTINGS", "SNAPSHOT", "WANT", "ChannelClosed", "FrontChannel"]

SETTINGS = b"C"
READY = b"R"
FAILED = b"E"
SNAPSHOT = b"S"
SERVING = b"V"
WANT = b"W"

_HEADER = struct.Struct("!cI")
_TAKEN_AT = struct.Struct("!d")
# a listing of many thousands of connectors stays far below this; a larger length is a broken channel
_MAX_FRAME = 1 << 30


class ChannelClosed(ConnectionError):
    """The other process closed the channel (or died)."""


class FrontChannel:
    """Frames over one connected stream socket. Sends are serialised by a lock; one thread receives."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._send_lock = threading.Lock()

    def send(self, kind: bytes, payload: bytes = b"") -> None:
        with self._send_lock:
            try:
                self._sock.sendall(_HEADER.pack(kind, len(payload)) + payload)
            except OSError as e:
                raise ChannelClosed(str(e)) from e

    def send_snapshot(self, taken_at: float, listing: bytes) -> None:
        self.send(SNAPSHOT, _TAKEN_AT.pack(taken_at) + listing)

    @staticmethod
    def snapshot_parts(payload: bytes) -> tuple[float, bytes]:
        """(taken_at, listing) of a ``SNAPSHOT`` payload."""
        return _TAKEN_AT.unpack_from(payload)[0], payload[_TAKEN_AT.size:]

    def receive(self) -> tuple[bytes, bytes]:
        """The next frame's (kind, payload); ChannelClosed when the other side has gone."""
        kind, length = _HEADER.unpack(self._read(_HEADER.size))
        if length > _MAX_FRAME:
            raise ChannelClosed(f"a frame of {length} bytes: the channel is broken")
        return kind, self._read(length)

    def _read(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            try:
                read = self._sock.recv_into(view[got:], n - got)
            except OSError as e:
                raise ChannelClosed(str(e)) from e
            if read == 0:
                raise ChannelClosed("the other process closed the channel")
            got += read
        return bytes(buf)

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
