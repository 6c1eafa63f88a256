"""A real HDFS on loopback: Hadoop's MiniDFSCluster (one NameNode and one DataNode in one JVM).

The jars come from Maven Central (``hadoop-minicluster``), so no Hadoop
download is needed, only Java 17 and Maven. WebHDFS is on, so the ``hdfs``
package (``InsecureClient(service.webhdfs_url)``) lists and reads files, and
any Hadoop client (PySpark's bundled one included) writes to
``service.url`` (``hdfs://127.0.0.1:<port>``).

The first start formats the NameNode; ``stop()``/``kill()`` followed by
``start()`` brings the same file system back on the same ports with its data
(outage tests rely on that).
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

__all__ = ["HADOOP_VERSION", "HDFS_ARTIFACTS", "HdfsService"]

log = logging.getLogger(__name__)

HADOOP_VERSION = "3.4.1"
HDFS_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.hadoop:hadoop-minicluster:{HADOOP_VERSION}",
    # The minicluster's test jars use these without declaring them.
    "junit:junit:4.13.2",
    "org.mockito:mockito-core:2.28.2",
    # Maven's nearest-wins picks an older jackson-core than the jackson-databind
    # Hadoop uses, and the NameNode's web server then fails to start.
    "com.fasterxml.jackson.core:jackson-core:2.12.7",
)
# Hadoop brings logback through ZooKeeper; two SLF4J bindings would fight over the log.
HDFS_EXCLUSIONS: tuple[str, ...] = ("ch.qos.logback:*",)

MAIN_CLASS = "org.apache.hadoop.mapreduce.MiniHadoopClusterManager"

_LOG4J_PROPERTIES = """\
log4j.rootLogger=WARN, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d %p %c{1}: %m%n
log4j.logger.org.apache.hadoop.mapreduce.MiniHadoopClusterManager=INFO
log4j.logger.org.apache.hadoop.hdfs.MiniDFSCluster=INFO
"""


class HdfsService(Service):
    """MiniDFSCluster with WebHDFS, permissions off, on 127.0.0.1."""

    name = "hdfs"
    startup_timeout = 90.0

    def __init__(
        self,
        port: int | None = None,
        http_port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str = "512m",
        datanodes: int = 1,
    ) -> None:
        super().__init__(work_dir)
        self.port = port or free_port()
        self.http_port = http_port or free_port()
        while self.http_port == self.port:
            self.http_port = free_port()
        self.heap = heap
        self.datanodes = datanodes
        self.data_dir = self.work_dir / "dfs"

    # -- Service hooks -----------------------------------------------------------

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, HDFS_ARTIFACTS, HDFS_EXCLUSIONS)

    @classmethod
    def lib_dir(cls) -> Path:
        return maven.lib_dir(cls.name)

    def ports(self) -> Sequence[int]:
        return (self.port, self.http_port)

    def prepare(self) -> None:
        (self.work_dir / "log4j.properties").write_text(_LOG4J_PROPERTIES)

    @property
    def url(self) -> str:
        """The file system URL for Hadoop clients (``hdfs.url`` of the HDFS sink)."""
        return f"hdfs://127.0.0.1:{self.port}"

    @property
    def webhdfs_url(self) -> str:
        """The NameNode's HTTP address, for the ``hdfs`` package and WebHDFS."""
        return f"http://127.0.0.1:{self.http_port}"

    def _formatted(self) -> bool:
        return (self.data_dir / "name-0-1" / "current" / "VERSION").exists()

    def command(self) -> list[str]:
        cmd = [
            java_executable(),
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j.configuration=file:{self.work_dir / 'log4j.properties'}",
            f"-Dtest.build.data={self.work_dir / 'test-data'}",
            "-cp",
            f"{self.lib_dir()}/*",
            MAIN_CLASS,
            "-nomr",
            "-nnport",
            str(self.port),
            "-nnhttpport",
            str(self.http_port),
            "-datanodes",
            str(self.datanodes),
        ]
        if not self._formatted():
            cmd.append("-format")
        for key, value in self.hadoop_config().items():
            cmd += ["-D", f"{key}={value}"]
        return cmd

    def hadoop_config(self) -> dict[str, str]:
        return {
            "dfs.permissions.enabled": "false",
            "dfs.webhdfs.enabled": "true",
            "hadoop.tmp.dir": str(self.work_dir / "tmp"),
            # MiniDFSCluster keeps its name and data directories under this folder.
            "hdfs.minidfs.basedir": str(self.data_dir),
            # Small files and one replica: no minimum block size checks in the way.
            "dfs.replication": "1",
            "dfs.namenode.fs-limits.min-block-size": "0",
            # A restarted cluster leaves safe mode as soon as its one DataNode reports.
            "dfs.namenode.safemode.extension": "0",
            "dfs.namenode.safemode.threshold-pct": "0",
        }

    def ready(self) -> bool:
        if not port_is_open(self.port):
            return False
        # Ready = WebHDFS answers and the NameNode is out of safe mode with a live DataNode.
        r = httpx.get(f"{self.webhdfs_url}/webhdfs/v1/?op=GETFILESTATUS&user.name=root", timeout=2.0)
        if r.status_code != 200:
            return False
        jmx = httpx.get(
            f"{self.webhdfs_url}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState", timeout=2.0
        ).json()
        beans = jmx.get("beans") or [{}]
        return int(beans[0].get("NumLiveDataNodes", 0)) >= self.datanodes and not _in_safe_mode(
            self.webhdfs_url
        )

    def describe(self) -> dict[str, Any]:
        return {
            "hdfs.url": self.url,
            "webhdfs.url": self.webhdfs_url,
            "log": str(self.log_path),
            "data": str(self.data_dir),
        }

    # -- helpers for tests and users -------------------------------------------------

    def client(self, user: str = "root"):  # hdfs.InsecureClient, imported lazily
        """A WebHDFS client from the ``hdfs`` package (``pip install headrace[spark]``)."""
        from hdfs import InsecureClient

        return InsecureClient(self.webhdfs_url, user=user)


def _in_safe_mode(webhdfs_url: str) -> bool:
    jmx = httpx.get(f"{webhdfs_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo", timeout=2.0).json()
    beans = jmx.get("beans") or [{}]
    return bool(beans[0].get("Safemode"))
