"""SparkSinkConnector: what the Spark sink connectors share."""

from __future__ import annotations

from collections.abc import Mapping

from connect.api import SinkConnector
from connect.api.version import distribution_version

__all__ = ["SparkSinkConnector"]


class SparkSinkConnector(SinkConnector):
    """A sink connector whose work is one Spark query, so one task whatever ``tasks.max`` says.

    Subclasses give ``config``, ``task_class`` and ``check``.
    """

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return distribution_version(__name__)

    def start(self, props: Mapping[str, str]) -> None:
        self.check(props)
        self._props = dict(props)

    def check(self, props: Mapping[str, str]) -> None:
        """Refuse, with ConnectException, a config or a target the query could not run with."""

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Spark spreads the work over its executors itself
        return [dict(self._props)]

    def stop(self) -> None:
        pass  # the query runs in the task
