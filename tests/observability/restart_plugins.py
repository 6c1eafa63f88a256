"""A plugin that tests/observability/test_task_auto_restart.py loads into a real worker through ``plugin.path``.

FailingSourceConnector / FailingSourceTask: the task's ``start`` raises for its first ``fail.starts`` starts
(counted in the file ``starts.file``, one line a start, so the count survives restarts), then it runs and
produces nothing. SlowStartSourceConnector: its task's ``start`` waits ``start.seconds`` or until stopped, so
the task stays UNASSIGNED meanwhile. Imports only the SDK, like any third-party plugin.
"""

from __future__ import annotations

import threading
import time

from connect.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceTask

__all__ = ["FailingSourceConnector", "FailingSourceTask", "SlowStartSourceConnector", "SlowStartSourceTask"]


class FailingSourceConnector(SourceConnector):
    def version(self):
        return "1.0"

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return FailingSourceTask

    def task_configs(self, max_tasks):
        return [dict(self.props)]

    def stop(self):
        pass

    def config(self):
        return (
            ConfigDef()
            .define("starts.file", ConfigType.STRING, importance=Importance.HIGH,
                    documentation="file with one line per task start")
            .define("fail.starts", ConfigType.INT, 0, importance=Importance.HIGH,
                    documentation="how many starts fail")
        )


class FailingSourceTask(SourceTask):
    def version(self):
        return "1.0"

    def start(self, props):
        with open(props["starts.file"], "a", encoding="utf-8") as fh:
            fh.write(f"{time.time()}\n")
        with open(props["starts.file"], encoding="utf-8") as fh:
            starts = sum(1 for _ in fh)
        if starts <= int(props.get("fail.starts") or 0):
            raise RuntimeError(f"start {starts} fails on purpose")

    def poll(self):
        time.sleep(0.05)
        return []

    def stop(self):
        pass


class SlowStartSourceConnector(SourceConnector):
    """Its task's ``start`` takes ``start.seconds`` (or until stopped): meanwhile the task is UNASSIGNED."""

    def version(self):
        return "1.0"

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return SlowStartSourceTask

    def task_configs(self, max_tasks):
        return [dict(self.props)]

    def stop(self):
        pass

    def config(self):
        return ConfigDef().define("start.seconds", ConfigType.DOUBLE, 600.0, importance=Importance.HIGH,
                                  documentation="how long the task's start takes")


class SlowStartSourceTask(SourceTask):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._stopped = threading.Event()  # stop() comes from another thread while start() waits

    def version(self):
        return "1.0"

    def start(self, props):
        self._stopped.wait(float(props.get("start.seconds", 600)))

    def poll(self):
        time.sleep(0.2)
        return []

    def stop(self):
        self._stopped.set()
