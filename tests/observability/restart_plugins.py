"""A plugin that tests/observability/test_task_auto_restart.py loads into a real worker through ``plugin.path``.

FailingSourceConnector / FailingSourceTask: the task's ``start`` raises for its first ``fail.starts`` starts
(counted in the file ``starts.file``, one line a start, so the count survives restarts), then it runs and
produces nothing. Imports only the SDK, like any third-party plugin.
"""

from __future__ import annotations

import time

from connect.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceTask

__all__ = ["FailingSourceConnector", "FailingSourceTask"]


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
