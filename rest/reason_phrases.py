"""Standard HTTP reason phrases on the status line ("201 Created"), as Jetty under Kafka Connect sends.

Werkzeug upper-cases the phrase of a status given by code ("201 CREATED"); clients that show or match the
status line see a difference from Kafka Connect, so the line is rewritten on its way to the server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from rest.access_log import WsgiApp

__all__ = ["StandardReasonPhrases", "status_line"]

_PHRASES = {s.value: s.phrase for s in HTTPStatus}


def status_line(status: str) -> str:
    """``status`` ("201 CREATED") with the standard phrase of its code ("201 Created"); unknown codes kept."""
    code, _, phrase = status.partition(" ")
    try:
        standard = _PHRASES.get(int(code))
    except ValueError:
        return status
    return f"{code} {standard}" if standard else status


class StandardReasonPhrases:
    """WSGI middleware: every response's status line gets the standard reason phrase of its code."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        def standard_start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status_line(status), headers, exc_info)

        return self.app(environ, standard_start_response)
