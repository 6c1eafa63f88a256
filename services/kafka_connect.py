"""Apache Kafka Connect (the Java original) on loopback, against a broker from ``services.kafka``.

The compatibility suite runs the same REST requests and connector configs
against this worker and against Headrace, and the distributed take-over test
lets a stopped Java cluster's internal topics be picked up by Headrace
workers. The jars come from Maven Central (``CONNECT_ARTIFACTS``), in the
broker's version, into a jar folder of their own; the file connectors, the
JSON converter and the transforms are on the class path, so no
``plugin.path`` is needed.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from services import maven
from services.base import Service, ServiceError, free_port, port_is_open
from services.kafka import KAFKA_VERSION, LOG4J_VERSION, java_executable

__all__ = ["CONNECT_ARTIFACTS", "DISTRIBUTED_MAIN", "STANDALONE_MAIN", "JavaConnectService"]

CONNECT_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.kafka:connect-runtime:{KAFKA_VERSION}",
    f"org.apache.kafka:connect-file:{KAFKA_VERSION}",
    f"org.apache.kafka:connect-json:{KAFKA_VERSION}",
    f"org.apache.kafka:connect-transforms:{KAFKA_VERSION}",
    f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
    f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
    # As for the broker: the slf4j 1.7 that Kafka declares cannot see the
    # slf4j2 binding and would drop every log line.
    "org.slf4j:slf4j-api:2.0.17",
)

DISTRIBUTED_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
STANDALONE_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"

_JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"

_LOG4J2_PROPERTIES = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %X{connector.context}%m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""

Mode = Literal["distributed", "standalone"]


class JavaConnectService(Service):
    """One Apache Kafka Connect worker (``ConnectDistributed`` or ``ConnectStandalone``).

    ``worker_properties`` override or extend the generated worker config;
    ``connector_files`` are connector .properties files handed to a
    standalone worker on its command line. In distributed mode the group id
    and internal topic names are unique to this object unless given, so two
    workers share a cluster only when told to (``cluster_properties()`` of
    one worker, passed as ``worker_properties`` of the next).
    ``bootstrap_servers`` defaults to a broker on localhost's standard port,
    which is what ``python -m services start connect`` talks to.
    """

    name = "connect"
    # About 2 s on an idle machine; a distributed worker also creates its
    # internal topics and joins its group, which takes far longer on two
    # cores shared with other JVMs.
    startup_timeout = 120.0
    stop_timeout = 30.0

    def __init__(
        self,
        bootstrap_servers: str = "127.0.0.1:9092",
        mode: Mode = "distributed",
        worker_properties: Mapping[str, str] | None = None,
        connector_files: Iterable[str | os.PathLike[str]] = (),
        port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str = "256m",
    ) -> None:
        if mode not in ("distributed", "standalone"):
            raise ServiceError(f"mode: expected 'distributed' or 'standalone', got {mode!r}")
        super().__init__(work_dir)
        self.bootstrap_servers = bootstrap_servers
        self.mode: Mode = mode
        self.port = port or free_port()
        self.heap = heap
        self.extra_properties = {str(k): str(v) for k, v in (worker_properties or {}).items()}
        self.connector_files = [Path(p) for p in connector_files]
        if self.connector_files and mode != "standalone":
            raise ServiceError("connector_files: only a standalone worker takes connector .properties files")
        self.config_path = self.work_dir / f"connect-{mode}.properties"
        self._log4j_path = self.work_dir / "connect-log4j2.properties"
        # Unique per service object: a fresh worker never joins somebody else's cluster by accident.
        self._cluster = f"java-connect-{uuid.uuid4().hex[:8]}"

    # -- Service hooks -----------------------------------------------------------

    @classmethod
    def fetch(cls) -> None:
        maven.fetch_artifacts(cls.name, CONNECT_ARTIFACTS)

    @classmethod
    def lib_dir(cls) -> Path:
        return maven.lib_dir(cls.name)

    def ports(self) -> Sequence[int]:
        return (self.port,)

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_config(self) -> dict[str, str]:
        """The worker .properties this service writes: defaults for tests, then ``worker_properties``."""
        props = {
            "bootstrap.servers": self.bootstrap_servers,
            "listeners": self.rest_url,
            "key.converter": _JSON_CONVERTER,
            "value.converter": _JSON_CONVERTER,
            # Tests wait for committed offsets; a minute (the default) is too long.
            "offset.flush.interval.ms": "1000",
            # Every plugin on our class path has a ServiceLoader manifest, so the
            # reflective class-path scan (over a second per start) finds nothing more.
            "plugin.discovery": "service_load",
        }
        if self.mode == "distributed":
            props.update(
                {
                    "group.id": self._cluster,
                    "config.storage.topic": f"{self._cluster}-configs",
                    "offset.storage.topic": f"{self._cluster}-offsets",
                    "status.storage.topic": f"{self._cluster}-status",
                    # One broker: every internal topic must make do with one replica.
                    "config.storage.replication.factor": "1",
                    "offset.storage.replication.factor": "1",
                    "status.storage.replication.factor": "1",
                    # Fewer partitions than the defaults (25 and 5) keep topic creation quick.
                    "offset.storage.partitions": "5",
                    "status.storage.partitions": "1",
                    # A lost worker's tasks move after 5 minutes by default.
                    "scheduled.rebalance.max.delay.ms": "5000",
                }
            )
        else:
            props["offset.storage.file.filename"] = str(self.work_dir / "connect.offsets")
        props.update(self.extra_properties)
        return props

    def internal_topics(self) -> tuple[str, str, str]:
        """The (config, offset, status) topic names of a distributed worker, as configured."""
        if self.mode != "distributed":
            raise ServiceError("internal_topics: a standalone worker keeps no internal topics")
        props = self.worker_config()
        return (
            props["config.storage.topic"],
            props["offset.storage.topic"],
            props["status.storage.topic"],
        )

    def cluster_properties(self) -> dict[str, str]:
        """``group.id`` and the internal topic names: what another worker needs to join this cluster."""
        if self.mode != "distributed":
            raise ServiceError("cluster_properties: a standalone worker has no cluster")
        props = self.worker_config()
        keys = ("group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic")
        return {k: props[k] for k in keys}

    @property
    def group_id(self) -> str:
        if self.mode != "distributed":
            raise ServiceError("group_id: a standalone worker has no group")
        return self.worker_config()["group.id"]

    def prepare(self) -> None:
        for path in self.connector_files:
            if not path.is_file():
                raise ServiceError(f"connector_files: {path} does not exist")
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.worker_config().items()))
        self._log4j_path.write_text(_LOG4J2_PROPERTIES)

    def command(self) -> list[str]:
        main = DISTRIBUTED_MAIN if self.mode == "distributed" else STANDALONE_MAIN
        return [
            java_executable(),
            f"-Xmx{self.heap}",
            # Two cores shared with other JVMs: the serial collector keeps no GC threads busy.
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self._log4j_path}",
            "-cp",
            f"{self.lib_dir()}/*",
            main,
            str(self.config_path),
            *(str(p) for p in self.connector_files),
        ]

    def ready(self) -> bool:
        # The port opens before the REST resources are registered (until then
        # Jetty answers 404), and a distributed worker's herder thread serves
        # /connectors only after its own start-up (internal topics read).
        if not port_is_open(self.port):
            return False
        if self.request("GET", "/")[0] != 200:
            return False
        return self.request("GET", "/connectors")[0] == 200

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"rest.url": self.rest_url, "mode": self.mode, "log": str(self.log_path)}
        if self.mode == "distributed":
            info["group.id"] = self.group_id
            info["internal.topics"] = ",".join(self.internal_topics())
        return info

    # -- REST helper for tests and users ---------------------------------------------

    def request(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> tuple[int, Any]:
        """One REST call: (status, parsed JSON body or None); HTTP errors are answers, not exceptions."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.rest_url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode("utf-8", "replace")
