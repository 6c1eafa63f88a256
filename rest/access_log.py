"""One INFO line per request on logger ``rest.access``, like Kafka Connect's Jetty request log."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["AccessLogMiddleware", "access_log", "printable"]

access_log = logging.getLogger("rest.access")

# ISO control characters (C0, DEL, C1) and the Unicode line separators: any of them in a logged value
# could start a forged log line.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\x1b``, ...), safe to put in one log line."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _LoggedBody:
    """Yields the app's body and writes the log line when the server closes it, so the duration
    covers producing the whole response."""

    def __init__(self, body: Iterable[bytes], finish: Callable[[int], None]) -> None:
        self._body = body
        self._finish = finish
        self._sent = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._body:
            self._sent += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._finish(self._sent)


class AccessLogMiddleware:
    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.monotonic()
        status: list[str] = []

        def recording_start_response(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status[:] = [code.split(" ", 1)[0]]
            return start_response(code, headers, exc_info)

        def finish(sent: int) -> None:
            if not access_log.isEnabledFor(logging.INFO):
                return
            path = environ.get("PATH_INFO", "")
            if environ.get("QUERY_STRING"):
                path = f"{path}?{environ['QUERY_STRING']}"
            # PATH_INFO is percent-decoded: /connectors/a%0Ab would otherwise write two lines.
            access_log.info(
                '%s "%s %s %s" %s %d "%s" %dms',
                environ.get("REMOTE_ADDR", "-"),
                printable(environ.get("REQUEST_METHOD", "-")),
                printable(path),
                printable(environ.get("SERVER_PROTOCOL", "-")),
                status[0] if status else "-",
                sent,
                printable(environ.get("HTTP_USER_AGENT", "-")),
                round((time.monotonic() - started) * 1000),
            )

        return _LoggedBody(self.app(environ, recording_start_response), finish)
