"""The Kafka backend's outage watch (connect.log.kafka.health): suspicion, confirmation, recovery."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError

from connect.log import open_log_backend
from connect.log.kafka.health import ClusterHealth
from services.base import free_port
from tests.support import wait_until

pytestmark = pytest.mark.timeout(60)

ALL_DOWN = KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down")


def test_nothing_to_report_and_nothing_running_while_the_cluster_answers(kafka) -> None:
    backend = open_log_backend({"bootstrap.servers": kafka.bootstrap_servers})
    try:
        assert backend.health_problem() is None
        # a client that saw every broker go (say, a connection closed for idleness) only raises a
        # suspicion; the probe finds the cluster answering and nothing is reported
        backend.health.on_error(ALL_DOWN)
        wait_until(lambda: backend.health._probe_thread is None)
        assert backend.health_problem() is None
        # other errors never start the probe
        backend.health.on_error(KafkaError(KafkaError._TRANSPORT, "disconnected"))
        assert backend.health._probe_thread is None
    finally:
        backend.close()


@pytest.mark.beside_services  # no broker: nothing of the session's services
def test_an_unreachable_cluster_is_reported_with_since_when_and_why() -> None:
    servers = f"127.0.0.1:{free_port()}"
    health = ClusterHealth(servers, {"bootstrap.servers": servers}, interval=0.2, probe_timeout=0.5)
    try:
        assert health.problem() is None
        before = time.time()
        health.on_error(ALL_DOWN)
        wait_until(lambda: health.problem() is not None)
        problem = health.problem()
        assert f"bootstrap.servers={servers} unreachable since" in problem
        assert "retries until Kafka is back" in problem
        assert health._down_since is not None and health._down_since >= before - 1
        # more events during the outage keep the start of it
        since = health._down_since
        health.on_error(ALL_DOWN)  # handled on this thread: nothing later can move the start
        assert health._down_since == since
    finally:
        health.close()
    wait_until(lambda: health._probe_thread is None)


def test_the_end_of_an_outage_clears_the_report(kafka) -> None:
    # the probe of a backend pointed at a port where nothing listens yet, then at the real broker:
    # modelled by swapping the probe's answer
    health = ClusterHealth(kafka.bootstrap_servers, {"bootstrap.servers": kafka.bootstrap_servers},
                           interval=0.1, probe_timeout=1.0)
    answers = iter(["Failed to get metadata [_TRANSPORT]"] * 3)
    real_probe = health._probe
    health._probe = lambda: next(answers, None) or real_probe()  # type: ignore[method-assign]
    try:
        health.on_error(ALL_DOWN)
        wait_until(lambda: health.problem() is not None)
        assert "_TRANSPORT" in health.problem()
        wait_until(lambda: health.problem() is None)
        assert health._probe_thread is None
    finally:
        health.close()
