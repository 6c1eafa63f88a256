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
from pathlib import Path
from typing import Any

import httpx

from services.search_node import SearchNodeService

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


class ElasticsearchService(SearchNodeService):
    """One Elasticsearch 7.17 node, HTTP and transport on 127.0.0.1, no security."""

    name = "elasticsearch"
    artifacts = ELASTICSEARCH_ARTIFACTS
    launcher_name = LAUNCHER
    launcher_source = _LAUNCHER_SOURCE

    @property
    def data_path(self) -> Path:
        return self.work_dir / "home"

    def prepare(self) -> None:
        super().prepare()
        (self.data_path / "config").mkdir(parents=True, exist_ok=True)
        (self.work_dir / "log4j2.properties").write_text(_LOG4J2_PROPERTIES)

    def jvm_options(self) -> list[str]:
        return [f"-Dlog4j.configurationFile={self.work_dir / 'log4j2.properties'}"]

    def root_ok(self, root: httpx.Response) -> bool:
        # the client the sink uses checks this header on every answer
        return root.status_code == 200 and root.headers.get("x-elastic-product") == "Elasticsearch"

    # -- helpers for tests and users -------------------------------------------------

    def client(self, **kwargs: Any):  # elasticsearch.Elasticsearch, imported lazily
        """An ``elasticsearch`` client (``pip install headrace[spark]``)."""
        from elasticsearch import Elasticsearch

        return Elasticsearch(hosts=[self.url], request_timeout=30, **kwargs)
