"""A Spark standalone cluster on loopback: one master and two workers, from the installed PySpark's own jars.

``python -m services start spark`` (or ``SparkCluster().start()``) runs
``spark-class org.apache.spark.deploy.master.Master`` and then each
``...deploy.worker.Worker``, every one a child process with its own log.
Drivers connect with ``spark.master=spark://127.0.0.1:<port>`` (``master_url``);
the master's web UI (``ui_url``, ``/json/`` for its state) lists the workers and
the running applications.

Nothing is downloaded: PySpark ships ``spark-class`` and every jar the daemons
need. Java 17 must be on the PATH (or JAVA_HOME).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from services.base import Service, ServiceError, free_port

__all__ = ["SparkCluster", "SparkMasterService", "SparkWorkerService"]


def spark_home() -> Path:
    try:
        import pyspark
    except ImportError as exc:
        raise ServiceError("the spark service needs PySpark: pip install '.[spark]'") from exc
    return Path(pyspark.__file__).resolve().parent


def _daemon_env(work_dir: Path) -> dict[str, str]:
    return {
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(work_dir / "logs"),
        # the daemons' own heap; executors get spark.executor.memory within the worker's --memory
        "SPARK_DAEMON_MEMORY": "512m",
        "SPARK_NO_DAEMONIZE": "1",
    }


def master_state(ui_port: int, timeout: float = 2.0) -> dict[str, Any]:
    """The master's ``/json/`` state: its status, workers and applications."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=timeout) as res:  # noqa: S310 - loopback
        state: dict[str, Any] = json.load(res)
    return state


class SparkMasterService(Service):
    """The standalone master: cluster manager RPC on ``port``, web UI on ``ui_port``."""

    name = "spark-master"
    startup_timeout = 90.0

    def __init__(self, port: int | None = None, work_dir: str | None = None, ui_port: int | None = None) -> None:
        super().__init__(work_dir)
        self.port = port or free_port()
        self.ui_port = ui_port or free_port()

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def ports(self) -> Sequence[int]:
        return (self.port, self.ui_port)

    def command(self) -> list[str]:
        return [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port)]

    def environment(self) -> Mapping[str, str]:
        return _daemon_env(self.work_dir)

    def ready(self) -> bool:
        return master_state(self.ui_port).get("status") == "ALIVE"


class SparkWorkerService(Service):
    """One standalone worker registered with ``master``, offering ``cores`` and ``memory`` to executors."""

    name = "spark-worker"
    startup_timeout = 90.0

    def __init__(self, master: SparkMasterService, work_dir: str | None = None, cores: int = 1,
                 memory: str = "2g") -> None:
        super().__init__(work_dir)
        self.master = master
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()

    def ports(self) -> Sequence[int]:
        return (self.port, self.ui_port)

    def command(self) -> list[str]:
        return [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port),
                "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(self.work_dir / "apps"),
                self.master.url]

    def environment(self) -> Mapping[str, str]:
        return _daemon_env(self.work_dir)

    def ready(self) -> bool:
        return self.registered()

    def registered(self) -> bool:
        """Whether the master lists this worker as ALIVE."""
        workers = master_state(self.master.ui_port).get("workers", [])
        return any(w.get("state") == "ALIVE" and w.get("port") == self.port for w in workers)


class SparkCluster(Service):
    """A master and ``workers`` workers; its own process is the master. ``worker(i)`` for crash tests."""

    name = "spark"
    startup_timeout = 90.0

    def __init__(self, port: int | None = None, work_dir: str | None = None, workers: int = 2, cores: int = 1,
                 memory: str = "2g") -> None:
        super().__init__(work_dir)
        self._master = SparkMasterService(port, str(self.work_dir / "master"))
        self._workers = [SparkWorkerService(self._master, str(self.work_dir / f"worker-{i}"), cores, memory)
                         for i in range(workers)]
        self.log_path = self._master.log_path

    @property
    def master_url(self) -> str:
        return self._master.url

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self._master.ui_port}"

    def worker(self, index: int) -> SparkWorkerService:
        return self._workers[index]

    def state(self) -> dict[str, Any]:
        return master_state(self._master.ui_port)

    # the cluster is its parts: it delegates the life cycle rather than running a process of its own
    def ports(self) -> Sequence[int]:
        return self._master.ports()

    def command(self) -> list[str]:
        return self._master.command()

    def ready(self) -> bool:
        return self._master.ready() and all(w.registered() for w in self._workers)

    @property
    def pid(self) -> int | None:
        return self._master.pid

    def is_running(self) -> bool:
        return self._master.is_running()

    def start(self) -> Self:
        self._master.start()
        try:
            for worker in self._workers:
                worker.start()
        except ServiceError:
            self.stop()
            raise
        return self

    def stop(self, timeout: float | None = None) -> None:
        for worker in self._workers:
            worker.stop(timeout)
        self._master.stop(timeout)

    def kill(self) -> None:
        for worker in self._workers:
            worker.kill()
        self._master.kill()

    def cleanup(self) -> None:
        self.stop()
        for part in (*self._workers, self._master):
            part.cleanup()
        super().cleanup()

    def describe(self) -> dict[str, Any]:
        return {"spark.master": self.master_url, "ui": self.ui_url, "workers": len(self._workers),
                "spark_home": str(spark_home())}
