"""A single-node Apache Kafka (KRaft: broker and controller in one JVM) on loopback.

The jars come from Maven Central (see ``KAFKA_ARTIFACTS``), so no Kafka
download or Docker image is needed, only Java 17 and Maven.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from services import maven
from services.base import Service, ServiceError, free_port

__all__ = ["KAFKA_ARTIFACTS", "KAFKA_VERSION", "KafkaService"]

log = logging.getLogger(__name__)

KAFKA_VERSION = "4.1.2"
LOG4J_VERSION = "2.24.3"
KAFKA_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
    # The admin command-line tools (kafka-consumer-groups, ...) live outside
    # the broker artifact; tests use them to cross-check our clients.
    f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
    f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
    f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
    # Kafka declares slf4j-api 1.7, which cannot see the slf4j2 binding above
    # and would silently drop every broker log line; 2.x serves both.
    "org.slf4j:slf4j-api:2.0.17",
)

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"

_LOG4J2_PROPERTIES = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""

# Tools print their answers on stdout; keep their logging out of it.
_TOOLS_LOG4J2_PROPERTIES = """\
status = warn
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""


def _kafka_uuid() -> str:
    # Kafka's cluster ids are 16 random bytes in unpadded URL-safe base64;
    # Kafka itself never hands out one starting with '-' (it would read as
    # a command-line flag), so neither do we. Generating it here saves a JVM
    # start (``StorageTool random-uuid``).
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise ServiceError("Java is not installed (need Java 17+ on PATH or JAVA_HOME)")
    return found


class KafkaService(Service):
    """Apache Kafka in KRaft mode, one node, PLAINTEXT on ``host`` (127.0.0.1 unless told).

    ``stop()``/``kill()`` followed by ``start()`` brings the same broker back
    on the same ports with its data, which outage tests rely on.
    """

    name = "kafka"
    startup_timeout = 60.0

    def __init__(
        self,
        port: int | None = None,
        controller_port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str = "512m",
        extra_config: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        """``host``: the address it listens and advertises on (a network namespace's own address for a
        broker on a simulated host of its own, tests/distributed/multihost.py)."""
        super().__init__(work_dir)
        self.host = host
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.heap = heap
        self.extra_config = dict(extra_config or {})
        self.data_dir = self.work_dir / "data"
        self.config_path = self.work_dir / "server.properties"
        self.cluster_id = ""

    # -- Service hooks -----------------------------------------------------------

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, KAFKA_ARTIFACTS)

    @classmethod
    def lib_dir(cls) -> Path:
        return maven.lib_dir(cls.name)

    def ports(self) -> Sequence[int]:
        return (self.port, self.controller_port)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def server_properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"{self.host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            # One broker: every internal topic must make do with one replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Fewer partitions for the internal topics than the production
            # default of 50 make the first consumer group on a fresh broker
            # ready in a fraction of the time.
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.num.partitions": "5",
            # The log cleaner reserves its dedupe buffer at start; the 128 MiB
            # default is a quarter of our heap.
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            # After a kill the restarted broker cannot register until the
            # controller expires the old session (9 s by default); outage
            # tests restart often enough for that to matter.
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "3000",
            "num.network.threads": "2",
            "num.io.threads": "4",
        }
        props.update(self.extra_config)
        return props

    def prepare(self) -> None:
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.server_properties().items()))
        (self.work_dir / "log4j2.properties").write_text(_LOG4J2_PROPERTIES)
        meta = self.data_dir / "meta.properties"
        if meta.exists():
            # Already formatted (a work folder handed in again): keep its id.
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    self.cluster_id = line.split("=", 1)[1].strip()
            return
        self.cluster_id = _kafka_uuid()
        result = self.run_tool(
            "kafka.tools.StorageTool",
            "format",
            "--standalone",
            "-t",
            self.cluster_id,
            "-c",
            str(self.config_path),
            timeout=120,
        )
        if result.returncode != 0:
            raise ServiceError(
                f"formatting Kafka storage failed (exit {result.returncode}):\n{result.stdout}{result.stderr}"
            )

    def _jvm_options(self) -> list[str]:
        return [
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}",
        ]

    def command(self) -> list[str]:
        return [
            java_executable(),
            *self._jvm_options(),
            "-cp",
            f"{self.lib_dir()}/*",
            "kafka.Kafka",
            str(self.config_path),
        ]

    def ready(self) -> bool:
        # A plain connect first: while the JVM boots this fails at once,
        # where a metadata request would sit out its whole timeout.
        if not _accepts(self.host, self.port):
            return False
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(
            {
                "bootstrap.servers": self.bootstrap_servers,
                # librdkafka would print every refused connection to stderr
                # while the JVM is still starting.
                "logger": _quiet_logger,
                "error_cb": lambda err: None,
                "socket.connection.setup.timeout.ms": 2000,
            }
        )
        md = admin.list_topics(timeout=2)
        return bool(md.brokers)

    def describe(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "cluster.id": self.cluster_id,
            "log": str(self.log_path),
            "data": str(self.data_dir),
        }

    # -- helpers for tests and users ------------------------------------------------

    def run_tool(self, main_class: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's own Java tools with the fetched jars, output captured."""
        self.fetch()
        tools_log = self.work_dir / "tools-log4j2.properties"
        if not tools_log.exists():
            tools_log.write_text(_TOOLS_LOG4J2_PROPERTIES)
        cmd = [
            java_executable(),
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",  # short-lived: start-up time beats peak speed
            f"-Dlog4j2.configurationFile={tools_log}",
            "-cp",
            f"{self.lib_dir()}/*",
            main_class,
            *args,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)

    def consumer_groups(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``kafka-consumer-groups.sh --bootstrap-server <this broker> <args>``."""
        return self.run_tool(
            CONSUMER_GROUP_COMMAND, "--bootstrap-server", self.bootstrap_servers, *args, timeout=timeout
        )


def _accepts(host: str, port: int) -> bool:
    """True if something accepts TCP connections on ``host:port`` (services.base.port_is_open, any host)."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


class _QuietLogger(logging.LoggerAdapter[logging.Logger]):
    """Sends librdkafka's start-up chatter to DEBUG, where it bothers nobody."""

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:  # type: ignore[override]
        self.logger.log(logging.DEBUG, msg, *args, **kwargs)


_quiet_logger = _QuietLogger(logging.getLogger("services.kafka.probe"), {})
