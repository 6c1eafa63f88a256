"""Pytest fixtures that start real services once per test session.

Loaded from tests/conftest.py with ``pytest_plugins = ["tests.fixtures_services"]``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from services.base import Service
from services.elasticsearch import ElasticsearchService
from services.hdfs import HdfsService
from services.kafka import KafkaService
from services.kafka_connect import JavaConnectService
from services.opensearch import OpenSearchService
from services.redis import RedisService
from services.spark import SparkCluster

S = TypeVar("S", bound=Service)


def _running(svc: S) -> Iterator[S]:
    """Start ``svc``, hand it to the session, and remove it with its data at the end."""
    svc.start()
    try:
        yield svc
    finally:
        svc.cleanup()


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaService]:
    """One single-node Kafka broker for the whole session.

    Tests that stop or kill it must ``start()`` it again before they end;
    topics and groups persist across such restarts.
    """
    yield from _running(KafkaService())


@pytest.fixture
def java_connect(
    kafka: KafkaService, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., JavaConnectService]]:
    """A factory of Apache Kafka Connect workers (the Java original) on the session broker.

    ``java_connect(worker_properties={...}, mode="distributed")`` starts one
    worker and returns it once its REST API answers; every worker started is
    stopped at the end of the test. Work folders (with ``connect.log``) stay
    under pytest's temporary directory for a look after a failure.
    """
    started: list[JavaConnectService] = []

    def start(worker_properties: dict[str, str] | None = None, **kwargs: Any) -> JavaConnectService:
        kwargs.setdefault("work_dir", tmp_path_factory.mktemp("java-connect"))
        svc = JavaConnectService(kafka.bootstrap_servers, worker_properties=worker_properties, **kwargs)
        started.append(svc)
        svc.start()
        return svc

    yield start
    for svc in reversed(started):
        svc.cleanup()


@pytest.fixture(scope="session")
def hdfs() -> Iterator[HdfsService]:
    """One MiniDFSCluster (NameNode + DataNode, WebHDFS on) for the whole session.

    A test that stops it must ``start()`` it again before it ends (same ports, same data).
    """
    yield from _running(HdfsService())


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkCluster]:
    """A Spark standalone cluster (a master and two one-core workers) for the whole session.

    A test that kills a worker must ``start()`` it again before it ends.
    """
    yield from _running(SparkCluster(workers=2, cores=1, memory="1500m"))


@pytest.fixture(scope="session")
def opensearch() -> Iterator[OpenSearchService]:
    """One OpenSearch node for the whole session; tests use indexes of their own."""
    yield from _running(OpenSearchService())


@pytest.fixture(scope="session")
def elasticsearch() -> Iterator[ElasticsearchService]:
    """One Elasticsearch 7.17 node for the whole session; tests use indexes of their own."""
    yield from _running(ElasticsearchService())


@pytest.fixture(scope="session")
def redis_service() -> Iterator[RedisService]:
    """One redis-server for the whole session (per xdist worker); tests use keys of their own.

    A test that stops or kills it must ``start()`` it again before it ends (same port, same data).
    """
    yield from _running(RedisService())


@pytest.fixture
def redis_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., RedisService]]:
    """A factory of redis-servers of the test's own (a password, an outage): ``redis_factory(password="x")``.

    Each is started before it is returned and removed with its data at the end of the test.
    """
    started: list[RedisService] = []

    def start(**kwargs: Any) -> RedisService:
        kwargs.setdefault("work_dir", tmp_path_factory.mktemp("redis"))
        svc = RedisService(**kwargs)
        started.append(svc)
        svc.start()
        return svc

    yield start
    for svc in reversed(started):
        svc.cleanup()


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Callable[..., str]:
    """A factory of topic (or group) names no other test uses: ``unique_topic("orders")``.

    Names carry the test's name so that a broker log or a leftover topic
    points back at the test that made it.
    """
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80].strip("-")

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:8]}"

    return make
