"""The Python logging appender: ``HeadraceHandler`` ships log records as log events (``connect.api.log_event``)
to a Headrace HttpSource or straight to a topic. ``bind`` adds contextvars-based context to every event."""

from connect.appender.handler import HeadraceHandler, bind, log_context

__all__ = ["HeadraceHandler", "bind", "log_context"]
