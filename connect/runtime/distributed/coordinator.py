"""A worker's membership in its Connect cluster, through Kafka's group coordinator.

librdkafka only speaks the ``consumer`` group protocol, so membership uses kafka-python's
``BaseCoordinator`` (pinned to 2.x: 3.0 changed the hooks a subclass implements) with protocol type
``connect`` and Kafka Connect's own metadata and assignment bytes (``protocol``). The herder's thread
drives it with ``poll``: joins, rejoins and the leader's assignment all happen inside ``poll`` and are
reported to the ``RebalanceListener`` on that thread; kafka-python's heartbeat thread keeps the session
alive between polls. The data path stays on confluent-kafka.

A worker that cannot reach its coordinator for longer than the session timeout has been dropped from the
group, whose other members take its work: it stops that work itself (Kafka Connect's WorkerCoordinator does
the same), so that no connector or task runs on a worker that is not a member, and joins again as a new
member once the coordinator answers.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from kafka.client_async import KafkaClient
from kafka.coordinator.base import BaseCoordinator

from connect.api.errors import ConfigException
from connect.runtime.clock import SYSTEM_CLOCK, Clock
from connect.runtime.distributed.assignor import EagerAssignor, IncrementalCooperativeAssignor
from connect.runtime.distributed.protocol import (
    CONFIG_MISMATCH,
    Assignment,
    WorkerMetadata,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    group_protocols,
    protocol_version,
)
from connect.runtime.herder import ConnectorTaskId

__all__ = ["RebalanceListener", "WorkerGroupMember", "kafka_python_client_configs"]

log = logging.getLogger(__name__)

# worker (librdkafka-style) client settings -> kafka-python's names, for the group member's own connections
_CLIENT_SETTINGS = {
    "security.protocol": "security_protocol",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "request.timeout.ms": "request_timeout_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
}
# Kafka's client defaults where kafka-python's differ: its reconnect back-off grows to 30 s, so after an outage
# of the broker a worker would rejoin up to 30 s after the others (which meanwhile took all the work).
_CLIENT_DEFAULTS = {"reconnect_backoff_ms": 50, "reconnect_backoff_max_ms": 1000}
_JAVA_STORES = ("ssl.keystore.", "ssl.truststore.")


def kafka_python_client_configs(configs: Mapping[str, Any]) -> dict[str, Any]:
    """The worker's Kafka security settings as kafka-python takes them; ConfigException for one it cannot."""
    if configs.get("group.instance.id"):
        raise ConfigException("group.instance.id", str(configs["group.instance.id"]),
                              "Connect workers do not support static group membership")
    out: dict[str, Any] = dict(_CLIENT_DEFAULTS)
    for key, name in _CLIENT_SETTINGS.items():
        value = configs.get(key)
        if value is not None and str(value).strip():
            out[name] = int(value) if name.endswith("_ms") else str(value)
    protocol = str(out.get("security_protocol", "PLAINTEXT")).upper()
    if protocol != "PLAINTEXT":
        out["security_protocol"] = protocol
        for key in configs:
            if key.startswith(_JAVA_STORES):
                raise ConfigException(key, None, "Java key stores cannot be read here; give PEM files with "
                                                 "ssl.ca.location, ssl.certificate.location and ssl.key.location")
    return out


class RebalanceListener(Protocol):
    def on_assigned(self, assignment: Assignment, generation: int) -> None:
        """The leader's answer for this worker (the incremental diff, with revocations), on the poll thread."""

    def on_revoked(self, leader: str, connectors: Collection[str], tasks: Collection[ConnectorTaskId]) -> None:
        """Eager protocol only: everything this worker ran, before it rejoins."""

    def on_membership_lost(self, connectors: frozenset[str], tasks: frozenset[ConnectorTaskId]) -> None:
        """The group has dropped this worker (its coordinator unreachable past the session timeout): stop all
        of its work, on the poll thread; it is no longer a member, so it knows no leader either."""


class _ConnectCoordinator(BaseCoordinator):  # type: ignore[misc]
    """kafka-python's group state machine with the ``connect`` protocol's hooks."""

    def __init__(self, client: KafkaClient, member: WorkerGroupMember, **configs: Any) -> None:
        super().__init__(client, **configs)
        self._member = member

    def protocol_type(self) -> str:
        return "connect"

    def request_rejoin(self) -> None:
        # the heartbeat thread calls this when the group starts a rebalance: wake the herder's poll at once
        # rather than at its next tick, so the rebalance waits for this worker no longer than it must
        super().request_rejoin()
        member = getattr(self, "_member", None)
        if member is not None:
            member._wake.set()

    def group_protocols(self) -> list[tuple[str, bytes]]:
        return self._member._group_protocols()

    def _on_join_prepare(self, generation: int, member_id: str, timeout_ms: int | None = None) -> None:
        self._member._on_join_prepare(generation, member_id)

    def _perform_assignment(self, leader_id: str, protocol: str, members: list[Any]) -> dict[str, bytes]:
        return self._member._perform_assignment(leader_id, protocol, members)

    def _on_join_complete(self, generation: int, member_id: str, protocol: str, member_assignment_bytes: bytes
                          ) -> None:
        self._member._on_join_complete(generation, member_id, protocol, member_assignment_bytes)


class WorkerGroupMember:
    def __init__(self, *, bootstrap_servers: str, group_id: str, rest_url: str, connect_protocol: str,
                 session_timeout_ms: int, heartbeat_interval_ms: int, rebalance_timeout_ms: int,
                 scheduled_rebalance_max_delay_ms: int, config_state: Callable[[], tuple[int, Mapping[str, int]]],
                 refresh_config: Callable[[int, float], int], listener: RebalanceListener,
                 client_configs: Mapping[str, Any] | None = None, clock: Clock = SYSTEM_CLOCK,
                 client_id: str | None = None, sync_timeout_ms: int = 3000) -> None:
        """``config_state()``: this worker's config-topic offset and each connector's committed task count;
        ``refresh_config(min_offset, timeout_s)``: read the config topic to at least ``min_offset``."""
        self.group_id = group_id
        self.rest_url = rest_url
        self.connect_protocol = connect_protocol
        self._config_state = config_state
        self._refresh_config = refresh_config
        self._listener = listener
        self._sync_timeout_s = sync_timeout_ms / 1000
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._session_timeout_ms = session_timeout_ms
        self._heartbeat_interval_ms = heartbeat_interval_ms
        self._client, self._coordinator = self._connect(
            bootstrap_servers, client_id or f"connect-{rest_url}", kafka_python_client_configs(client_configs or {}),
            {"group_id": group_id, "session_timeout_ms": session_timeout_ms,
             "heartbeat_interval_ms": heartbeat_interval_ms, "max_poll_interval_ms": rebalance_timeout_ms,
             "retry_backoff_ms": 100})
        self._cooperative = IncrementalCooperativeAssignor(clock, scheduled_rebalance_max_delay_ms)
        self._eager = EagerAssignor()
        self._wake = threading.Event()
        self._closed = False
        self.member_id = ""
        self.generation = -1
        self.protocol_version = protocol_version("sessioned" if connect_protocol == "sessioned" else
                                                 "compatible" if connect_protocol == "compatible" else "default")
        self.leader_id: str | None = None
        self.leader_url: str | None = None
        self.connectors: frozenset[str] = frozenset()
        self.tasks: frozenset[ConnectorTaskId] = frozenset()

    def _connect(self, bootstrap_servers: str, client_id: str, client_configs: Mapping[str, Any],
                 coordinator_configs: Mapping[str, Any]) -> tuple[Any, Any]:
        """The group member's Kafka client and its coordinator state machine (unit tests give stand-ins)."""
        client = KafkaClient(bootstrap_servers=bootstrap_servers.split(","), client_id=client_id, **client_configs)
        return client, _ConnectCoordinator(client, self, **coordinator_configs)

    # --- driving ------------------------------------------------------------------------------------------
    def poll(self, timeout_ms: int) -> None:
        """Join if needed (callbacks run here), keep the session alive, and wait at most ``timeout_ms``
        unless a join is under way (which takes up to the rebalance timeout) or ``wakeup`` is called.

        While the coordinator cannot be found, each poll looks for it for up to ``heartbeat.interval.ms`` (as
        Kafka Connect's), and a join is waited for in steps of that length: between them, a worker whose
        coordinator has been silent past the session timeout and cannot be reached gives up its work."""
        if self._closed:
            return
        coordinator = self._coordinator
        if coordinator.coordinator_unknown() and not coordinator.ensure_coordinator_ready(
                timeout_ms=self._heartbeat_interval_ms):
            self._maybe_give_up_membership()
            self._wake.clear()
            return
        if coordinator.need_rejoin():
            # kafka-python keeps a join that is still under way and resumes it on the next call
            deadline = time.monotonic() + max(timeout_ms, self._rebalance_timeout_ms) / 1000
            while not coordinator.ensure_active_group(timeout_ms=self._heartbeat_interval_ms):
                if self._maybe_give_up_membership() or time.monotonic() >= deadline:
                    break
        coordinator.poll_heartbeat()
        if timeout_ms > 0 and not coordinator.need_rejoin():
            self._wake.wait(timeout_ms / 1000)
        self._wake.clear()

    def _maybe_give_up_membership(self) -> bool:
        """Once the coordinator has not answered for longer than the session timeout and cannot be reached,
        the group has dropped this worker (or will before any request of it gets through) and hands its work
        to the others: the work stops here. True if it did."""
        if not (self.connectors or self.tasks):
            return False
        heartbeat = self._coordinator.heartbeat
        # kafka-python's own measure (wall clock): the last heartbeat answered, or the last join completed
        silent_s = time.time() - max(heartbeat.last_receive, heartbeat.last_reset)
        if silent_s <= self._session_timeout_ms / 1000:
            return False
        if not self._coordinator.coordinator_unknown() and self._coordinator_reachable():
            return False  # a join that waits for the other members (up to the rebalance timeout) is no loss
        connectors, tasks = self.connectors, self.tasks
        log.warning("Group coordinator of group %s unreachable for %.1f s (session.timeout.ms=%d): this worker is "
                    "not a member of the group any more and stops its %d connector(s) and %d task(s) (%s), so that "
                    "they do not run beside the workers that take them over; it joins again when the coordinator "
                    "answers", self.group_id, silent_s, self._session_timeout_ms, len(connectors), len(tasks),
                    ", ".join([*sorted(connectors), *map(str, sorted(tasks))]))
        self.connectors, self.tasks = frozenset(), frozenset()
        self.leader_id = self.leader_url = None
        # rejoin as a new member: the old member id is gone from the group, and asking with it only costs
        # a round trip to learn that
        self._coordinator.reset_generation()
        self._drop_connections()
        self._listener.on_membership_lost(connectors, tasks)
        return True

    def _drop_connections(self) -> None:
        """Close the member's broker connections. Requests in flight over a link that went down would wait for
        request.timeout.ms, also once the link is back; kafka-python keeps the connection of a coordinator it
        marks dead (Kafka's client drops it), so without this the member would find its coordinator again only
        that long after the broker answers. New connections are made as the member needs them."""
        for node_id in list(getattr(self._client, "_conns", {})):  # kafka-python 2.x (pinned)
            try:
                self._client.close(node_id)
            except Exception as exc:  # a connection that cannot be closed is left to time out
                log.debug("Could not close the connection to node %s: %s", node_id, exc)

    def _coordinator_reachable(self) -> bool:
        """A new TCP connection to the coordinator opens within ``heartbeat.interval.ms``. The connection the
        join waits on cannot tell: a request in flight over a cut link just sits there until it times out."""
        node = self._coordinator.coordinator_id
        broker = self._client.cluster.broker_metadata(node) if node is not None else None
        if broker is None:
            return False
        try:
            with socket.create_connection((broker.host, broker.port), timeout=self._heartbeat_interval_ms / 1000):
                return True
        except OSError:
            return False

    def wakeup(self) -> None:
        """Make a waiting ``poll`` return soon (from any thread)."""
        self._wake.set()
        self._client.wakeup()

    def request_rejoin(self, reason: str) -> None:
        log.info("Rejoining group %s: %s", self.group_id, reason)
        self._coordinator.request_rejoin()
        self.wakeup()

    def maybe_leave_group(self, reason: str) -> None:
        log.info("Leaving group %s: %s", self.group_id, reason)
        self._coordinator.maybe_leave_group()

    def close(self, timeout_ms: int = 5000) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._coordinator.close(timeout_ms=timeout_ms)  # leaves the group, so the others rebalance now
        finally:
            self._client.close()

    # --- the coordinator's hooks ---------------------------------------------------------------------------
    def _metadata(self, version: int) -> bytes:
        offset, _ = self._config_state()
        allocation = None
        if version >= 1 and (self.connectors or self.tasks):
            allocation = Assignment(0, self.leader_id or "", self.leader_url or "", offset,
                                    tuple(sorted(self.connectors)), tuple(sorted(self.tasks)), version=version)
        return encode_metadata(WorkerMetadata(self.rest_url, offset, allocation, version))

    def _group_protocols(self) -> list[tuple[str, bytes]]:
        return group_protocols(self.connect_protocol, self._metadata)

    def _on_join_prepare(self, generation: int, member_id: str) -> None:
        if self.protocol_version == 0 and (self.connectors or self.tasks):
            # eager: everything stops before the group re-forms
            connectors, tasks = self.connectors, self.tasks
            self.connectors, self.tasks = frozenset(), frozenset()
            self._listener.on_revoked(self.leader_id or "", connectors, tasks)

    def _perform_assignment(self, leader_id: str, protocol: str, members: list[Any]) -> dict[str, bytes]:
        version = protocol_version(protocol)
        decoded = {m.member_id: decode_metadata(m.metadata_bytes) for m in members}
        leader_url = decoded[leader_id].url if leader_id in decoded else self.rest_url
        max_offset = max(md.config_offset for md in decoded.values())
        offset, _ = self._config_state()
        if offset < max_offset:
            offset = self._refresh_config(max_offset, self._sync_timeout_s)
        if offset < max_offset:
            log.warning("Leader is behind the config topic (offset %d, a member has read %d): every member "
                        "rereads it and rejoins", offset, max_offset)
            mismatch = Assignment(CONFIG_MISMATCH, leader_id, leader_url, max_offset, version=version)
            return {m: encode_assignment(mismatch) for m in decoded}
        offset, task_counts = self._config_state()
        assignor = self._eager if version == 0 else self._cooperative
        assignments = assignor.perform_assignment(leader_id, leader_url, version, decoded, task_counts, offset)
        log.info("Leader of group %s generation %d (protocol %s): assigned %d worker(s)", self.group_id,
                 self._coordinator._generation.generation_id if self._coordinator._generation else -1,
                 protocol, len(assignments))
        return {m: encode_assignment(a) for m, a in assignments.items()}

    def _on_join_complete(self, generation: int, member_id: str, protocol: str, data: bytes) -> None:
        assignment = decode_assignment(data)
        self.member_id = member_id
        self.generation = generation
        self.protocol_version = protocol_version(protocol)
        self.leader_id, self.leader_url = assignment.leader, assignment.leader_url
        if assignment.error == 0:
            if self.protocol_version == 0:
                self.connectors, self.tasks = frozenset(assignment.connectors), frozenset(assignment.tasks)
            else:
                self.connectors = (self.connectors - set(assignment.revoked_connectors)) | set(assignment.connectors)
                self.tasks = (self.tasks - set(assignment.revoked_tasks)) | set(assignment.tasks)
        log.info("Joined group %s generation %d as %s with protocol %s", self.group_id, generation, member_id,
                 protocol)
        self._listener.on_assigned(assignment, generation)
        self._wake.set()  # the herder acts on the new assignment now, not after this poll's wait
