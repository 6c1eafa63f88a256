"""What the embedded OpenSearch and Elasticsearch nodes share: one JVM node from Maven jars, on loopback.

Each is a few lines of Java (a single-file source program written into the
work folder, so no build step) that starts a node with HTTP and transport
bound to 127.0.0.1 on ports chosen here, given ``<data dir> <http port>
<transport port> <cluster name>`` as arguments.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import httpx

from services import maven
from services.base import Service, free_port, port_is_open
from services.kafka import java_executable

__all__ = ["SearchNodeService"]


class SearchNodeService(Service):
    """A search-engine node run by a single-file Java launcher; subclasses give the jars and the launcher."""

    startup_timeout = 120.0
    artifacts: ClassVar[tuple[str, ...]] = ()
    launcher_name: ClassVar[str] = ""
    launcher_source: ClassVar[str] = ""
    default_heap: ClassVar[str] = "512m"

    def __init__(
        self,
        port: int | None = None,
        transport_port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str | None = None,
        cluster_name: str = "headrace",
    ) -> None:
        super().__init__(work_dir)
        self.port = port or free_port()
        self.transport_port = transport_port or free_port()
        while self.transport_port == self.port:
            self.transport_port = free_port()
        self.heap = heap or self.default_heap
        self.cluster_name = cluster_name

    # -- what subclasses provide ------------------------------------------------------

    @property
    def data_path(self) -> Path:
        """The folder the node keeps its data in (the launcher's first argument)."""
        raise NotImplementedError

    def jvm_options(self) -> list[str]:
        """JVM options beyond the common ones."""
        return []

    def root_ok(self, root: httpx.Response) -> bool:
        """Whether the node's ``GET /`` answer says it is the expected engine."""
        return root.status_code == 200

    # -- Service hooks --------------------------------------------------------------------

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, cls.artifacts)

    @classmethod
    def lib_dir(cls) -> Path:
        return maven.lib_dir(cls.name)

    def ports(self) -> Sequence[int]:
        return (self.port, self.transport_port)

    def prepare(self) -> None:
        (self.work_dir / self.launcher_name).write_text(self.launcher_source)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            java_executable(),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            "-Dlog4j2.disable.jmx=true",
            *self.jvm_options(),
            "-cp",
            f"{self.lib_dir()}/*",
            str(self.work_dir / self.launcher_name),
            str(self.data_path),
            str(self.port),
            str(self.transport_port),
            self.cluster_name,
        ]

    def ready(self) -> bool:
        if not port_is_open(self.port) or not self.root_ok(httpx.get(f"{self.url}/", timeout=2.0)):
            return False
        # The root answers before the cluster state is recovered; writes need that too.
        r = httpx.get(f"{self.url}/_cluster/health", timeout=2.0)
        return r.status_code == 200 and r.json().get("status") in ("green", "yellow")

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "log": str(self.log_path), "data": str(self.data_path)}
