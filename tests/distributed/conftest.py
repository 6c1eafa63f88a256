"""The multi-host harness's fixtures (tests/distributed/multihost.py): one bridge with the broker's and three
workers' namespaces, and the broker in its namespace, made once per test process and shared by the fault
modules; each test runs a cluster of its own on it (its own ``group.id`` and internal topics).

A test that cuts a host heals it before it ends (``faults.stop_cluster``), so the next one finds every link up.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.distributed.faults import WORKERS
from tests.distributed.multihost import NamespacedKafka, NamespaceError, Network


@pytest.fixture(scope="session")
def multihost_network() -> Iterator[Network]:
    net = Network(("kafka", *WORKERS))
    try:
        net.start()
    except NamespaceError as exc:
        # CI runs as root: a machine where this fails cannot run the suite; say why rather than skip
        pytest.fail(f"network namespaces for the multi-host tests could not be made: {exc}", pytrace=False)
    try:
        yield net
    finally:
        net.close()


@pytest.fixture(scope="session")
def multihost_broker(multihost_network: Network, tmp_path_factory: pytest.TempPathFactory
                     ) -> Iterator[NamespacedKafka]:
    kafka = NamespacedKafka(multihost_network["kafka"], tmp_path_factory.mktemp("ns-kafka"))
    try:
        kafka.start()
        yield kafka
    finally:
        multihost_network["kafka"].heal()
        kafka.cleanup()
