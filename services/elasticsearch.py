"""A real Elasticsearch 7.17 node on loopback, embedded from the jars on Maven Central.

Elastic publishes no runnable Elasticsearch 8+ to Maven Central, but the 7.17
server jar and its Netty4 transport plugin are there. A few lines of Java
(written into the work folder and run as a single-file source program, so no
build step) subclass ``org.elasticsearch.node.Node`` - whose constructor that
takes class-path plugins is protected - to load ``Netty4Plugin``, which
provides both the HTTP and the transport layer. Without the rest of the
distribution there are no modules and no X-Pack, so security is simply
absent; index, bulk, update, delete, count and search are all in the core.

The node answers with ``X-Elastic-Product: Elasticsearch``, as 7.14+ does, so
the product check of the ``elasticsearch`` Python client (8.x/9.x) passes, and
7.17 accepts that client's ``compatible-with=8``/``9`` media types; so
``service.client()`` is the stock client. ``stop()``/``kill()`` then
``start()`` keeps the data.
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

__all__ = ["ELASTICSEARCH_ARTIFACTS", "ELASTICSEARCH_VERSION", "ElasticsearchService"]

log = logging.getLogger(__name__)

ELASTICSEARCH_VERSION = "7.17.29"
ELASTICSEARCH_ARTIFACTS: tuple[str, ...] = (
    f"org.elasticsearch:elasticsearch:{ELASTICSEARCH_VERSION}",
    f"org.elasticsearch.plugin:transport-netty4-client:{ELASTICSEARCH_VERSION}",
)

LAUNCHER = "EsNode.java"
_LAUNCHER_SOURCE = """\
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.transport.Netty4Plugin;

/** Starts one Elasticsearch node on 127.0.0.1: args = homePath httpPort transportPort clusterName. */
public class EsNode {
    public static void main(String[] args) throws Exception {
        Path home = Path.of(args[0]);
        Settings settings = Settings.builder()
                .put("path.home", home.toString())
                .put("path.data", home.resolve("data").toString())
                .put("path.logs", home.resolve("logs").toString())
                .put("cluster.name", args[3])
                .put("node.name", "headrace-es")
                .put("network.host", "127.0.0.1")
                .put("http.port", args[1])
                .put("transport.port", args[2])
                .put("discovery.type", "single-node")
                // A nearly full disk must not turn test indexes read-only.
                .put("cluster.routing.allocation.disk.threshold_enabled", false)
                .build();
        Node node = new PluginNode(settings, List.of(Netty4Plugin.class));
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(20, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            }
            done.countDown();
        }));
        try {
            node.start();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        System.out.println("HTTP Port: " + args[1]);
        System.out.flush();
        done.await();
    }

    /** Node's plugin-taking constructor is protected: the one reason for this subclass. */
    static class PluginNode extends Node {
        PluginNode(Settings settings, Collection<Class<? extends Plugin>> plugins) {
            super(InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), null, () -> "headrace-es"),
                    plugins, true);
        }
    }
}
"""

# Without a configuration log4j2 prints only errors, and a status warning;
# node start-up at INFO is what one wants to read when start-up goes wrong.
_LOG4J2_PROPERTIES = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] %m%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
logger.node.name = org.elasticsearch.node
logger.node.level = info
"""


class ElasticsearchService(Service):
    """One Elasticsearch 7.17 node, HTTP and transport on 127.0.0.1, no security."""

    name = "elasticsearch"
    startup_timeout = 120.0

    def __init__(
        self,
        port: int | None = None,
        transport_port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str = "512m",
        cluster_name: str = "headrace",
    ) -> None:
        super().__init__(work_dir)
        self.port = port or free_port()
        self.transport_port = transport_port or free_port()
        while self.transport_port == self.port:
            self.transport_port = free_port()
        self.heap = heap
        self.cluster_name = cluster_name
        self.home = self.work_dir / "home"

    # -- Service hooks -----------------------------------------------------------

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, ELASTICSEARCH_ARTIFACTS)

    @classmethod
    def lib_dir(cls) -> Path:
        return maven.lib_dir(cls.name)

    def ports(self) -> Sequence[int]:
        return (self.port, self.transport_port)

    def prepare(self) -> None:
        (self.home / "config").mkdir(parents=True, exist_ok=True)
        (self.work_dir / LAUNCHER).write_text(_LAUNCHER_SOURCE)
        (self.work_dir / "log4j2.properties").write_text(_LOG4J2_PROPERTIES)

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
            f"-Dlog4j.configurationFile={self.work_dir / 'log4j2.properties'}",
            "-cp",
            f"{self.lib_dir()}/*",
            str(self.work_dir / LAUNCHER),
            str(self.home),
            str(self.port),
            str(self.transport_port),
            self.cluster_name,
        ]

    def ready(self) -> bool:
        if not port_is_open(self.port):
            return False
        root = httpx.get(f"{self.url}/", timeout=2.0)
        if root.status_code != 200 or root.headers.get("x-elastic-product") != "Elasticsearch":
            return False
        # The root answers before the cluster state is recovered; writes need that too.
        r = httpx.get(f"{self.url}/_cluster/health", timeout=2.0)
        return r.status_code == 200 and r.json().get("status") in ("green", "yellow")

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "log": str(self.log_path), "data": str(self.home / "data")}

    # -- helpers for tests and users -------------------------------------------------

    def client(self, **kwargs: Any):  # noqa: ANN201 - elasticsearch.Elasticsearch, imported lazily
        """An ``elasticsearch`` client (``pip install headrace[spark]``)."""
        from elasticsearch import Elasticsearch

        return Elasticsearch(hosts=[self.url], request_timeout=30, **kwargs)
