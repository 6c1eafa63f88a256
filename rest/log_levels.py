"""Reading and changing this process's Python ``logging`` levels for ``/admin/loggers``.

Levels are per process, not cluster state, so the REST layer manages them itself. Names follow
Log4j as Kafka Connect reports them (TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF); the Python
spellings WARNING and CRITICAL are accepted too, in any letter case. The root logger is ``root``.
"""

from __future__ import annotations

import logging
import threading
import time

import attrs

__all__ = ["LEVELS", "LoggerLevel", "LoggerLevels", "ROOT_NAME", "parse_level"]

ROOT_NAME = "root"

# TRACE and OFF have no Python constant: TRACE sits below DEBUG, and OFF above every level in use.
LEVELS: dict[str, int] = {
    "ALL": 1,
    "TRACE": 5,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
    "OFF": 1000,
}
_REPORTED_NAMES = {1: "ALL", 5: "TRACE", 10: "DEBUG", 20: "INFO", 30: "WARN", 40: "ERROR", 50: "FATAL", 1000: "OFF"}


def parse_level(text: str) -> int | None:
    return LEVELS.get(text.strip().upper())


def _level_name(level: int) -> str:
    return _REPORTED_NAMES.get(level, logging.getLevelName(level))


@attrs.frozen
class LoggerLevel:
    level: str
    last_modified: int | None

    def to_json(self) -> dict[str, object]:
        return {"level": self.level, "last_modified": self.last_modified}


class LoggerLevels:
    """Remembers when each logger's level was last changed through the API (ms since the epoch)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_modified: dict[str, int] = {}

    @staticmethod
    def _existing() -> dict[str, logging.Logger]:
        # loggerDict also holds PlaceHolders for dotted prefixes nobody asked for; they are not loggers.
        found = {name: lg for name, lg in list(logging.root.manager.loggerDict.items()) if isinstance(lg, logging.Logger)}
        found[ROOT_NAME] = logging.getLogger()
        return found

    def _describe(self, name: str, logger: logging.Logger) -> LoggerLevel:
        return LoggerLevel(_level_name(logger.getEffectiveLevel()), self._last_modified.get(name))

    def all_levels(self) -> dict[str, LoggerLevel]:
        with self._lock:
            return {name: self._describe(name, lg) for name, lg in sorted(self._existing().items())}

    def level(self, name: str) -> LoggerLevel | None:
        """The effective level of an existing logger; None if no logger has that name."""
        with self._lock:
            logger = self._existing().get(ROOT_NAME if name.lower() == ROOT_NAME else name)
            return None if logger is None else self._describe(name, logger)

    def set_level(self, namespace: str, level: int) -> list[str]:
        """Set ``level`` on the namespace's logger and every logger below it; returns, sorted, the
        names of those whose effective level changed."""
        with self._lock:
            before = self._existing()
            if namespace.lower() == ROOT_NAME:
                targets = dict(before)
            else:
                prefix = namespace + "."
                targets = {n: lg for n, lg in before.items() if n == namespace or n.startswith(prefix)}
                if namespace not in targets:
                    targets[namespace] = logging.getLogger(namespace)
            old = {n: lg.getEffectiveLevel() if n in before else None for n, lg in targets.items()}
            for logger in targets.values():
                logger.setLevel(level)
            now = int(time.time() * 1000)
            changed = sorted(n for n, lg in targets.items() if old[n] != lg.getEffectiveLevel())
            for name in changed:
                self._last_modified[name] = now
            return changed
