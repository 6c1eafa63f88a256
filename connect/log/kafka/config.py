"""From a Kafka Connect worker config (Java client names) to librdkafka settings.

A worker config mixes Connect's own keys (converters, REST, internal topic
names) with client settings: top-level keys that every client shares
(``bootstrap.servers``, security), and per-client overrides under
``producer.``, ``consumer.`` and ``admin.``. librdkafka understands most Java
client names as they are; a few need translating and some have no
equivalent. Precedence, lowest first: our defaults for the client, shared
top-level keys, the worker's prefixed overrides, the per-call ``config``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

__all__ = [
    "ClientKind",
    "CONSUMER_DEFAULTS",
    "PRODUCER_DEFAULTS",
    "client_config",
    "client_setting_names",
    "librdkafka_scope",
]

log = logging.getLogger("connect.log.kafka")

ClientKind = Literal["producer", "consumer", "admin"]

# librdkafka's properties by scope ("*" any client, "P" producer, "C"
# consumer), from its CONFIGURATION.md; tests check every name is accepted by
# the linked librdkafka. Callbacks and other properties that only make sense
# from C are left out on purpose.
_GLOBAL = """
client.id bootstrap.servers metadata.broker.list message.max.bytes message.copy.max.bytes
receive.message.max.bytes max.in.flight.requests.per.connection max.in.flight
topic.metadata.refresh.interval.ms metadata.max.age.ms topic.metadata.refresh.fast.interval.ms
topic.metadata.refresh.sparse topic.metadata.propagation.max.ms topic.blacklist debug
socket.timeout.ms socket.send.buffer.bytes socket.receive.buffer.bytes socket.keepalive.enable
socket.nagle.disable socket.max.fails broker.address.ttl broker.address.family
socket.connection.setup.timeout.ms connections.max.idle.ms reconnect.backoff.ms
reconnect.backoff.max.ms statistics.interval.ms log_level log.thread.name enable.random.seed
log.connection.close allow.auto.create.topics security.protocol ssl.cipher.suites ssl.curves.list
ssl.sigalgs.list ssl.key.location ssl.key.password ssl.key.pem ssl.certificate.location
ssl.certificate.pem ssl.ca.location ssl.ca.pem ssl.ca.certificate.stores ssl.crl.location
ssl.keystore.location ssl.keystore.password ssl.providers enable.ssl.certificate.verification
ssl.endpoint.identification.algorithm sasl.mechanisms sasl.mechanism sasl.kerberos.service.name
sasl.kerberos.principal sasl.kerberos.kinit.cmd sasl.kerberos.keytab
sasl.kerberos.min.time.before.relogin sasl.username sasl.password sasl.oauthbearer.config
enable.sasl.oauthbearer.unsecure.jwt sasl.oauthbearer.method sasl.oauthbearer.client.id
sasl.oauthbearer.client.secret sasl.oauthbearer.scope sasl.oauthbearer.extensions
sasl.oauthbearer.token.endpoint.url client.rack retry.backoff.ms retry.backoff.max.ms
client.dns.lookup metadata.recovery.strategy metadata.recovery.rebootstrap.trigger.ms
"""
_CONSUMER = """
group.id group.instance.id partition.assignment.strategy session.timeout.ms heartbeat.interval.ms
group.protocol.type group.protocol group.remote.assignor coordinator.query.interval.ms
max.poll.interval.ms enable.auto.commit auto.commit.interval.ms enable.auto.offset.store
queued.min.messages queued.max.messages.kbytes fetch.wait.max.ms fetch.queue.backoff.ms
fetch.message.max.bytes max.partition.fetch.bytes fetch.max.bytes fetch.min.bytes
fetch.error.backoff.ms isolation.level enable.partition.eof check.crcs auto.offset.reset
"""
_PRODUCER = """
transactional.id transaction.timeout.ms enable.idempotence enable.gapless.guarantee
queue.buffering.max.messages queue.buffering.max.kbytes queue.buffering.max.ms linger.ms
message.send.max.retries retries queue.buffering.backpressure.threshold compression.codec
compression.type compression.level batch.num.messages batch.size delivery.report.only.error
sticky.partitioning.linger.ms request.required.acks acks request.timeout.ms message.timeout.ms
delivery.timeout.ms partitioner
"""

_SCOPE: dict[str, str] = {}
for _names, _scope in ((_GLOBAL, "*"), (_CONSUMER, "C"), (_PRODUCER, "P")):
    for _n in _names.split():
        _SCOPE[_n] = _scope


def librdkafka_scope(key: str) -> str | None:
    """``"*"``, ``"P"`` or ``"C"`` for a property librdkafka knows, else None."""
    return _SCOPE.get(key)


_ALLOWED: dict[ClientKind, frozenset[str]] = {
    "producer": frozenset("*P"),
    "consumer": frozenset("*C"),
    "admin": frozenset("*"),
}

# Java client settings that mean nothing to librdkafka (its serialisation is
# bytes in, bytes out; it never blocks a caller; it has no plug-in classes).
_JAVA_ONLY = frozenset(
    """
key.serializer value.serializer key.deserializer value.deserializer interceptor.classes
metric.reporters metrics.num.samples metrics.recording.level metrics.sample.window.ms
partitioner.class partitioner.ignore.keys partitioner.adaptive.partitioning.enable
partitioner.availability.timeout.ms max.poll.records default.api.timeout.ms
ssl.truststore.location ssl.truststore.password ssl.truststore.type ssl.truststore.certificates
ssl.keystore.type ssl.keystore.key ssl.keystore.certificate.chain ssl.protocol ssl.enabled.protocols
ssl.keymanager.algorithm ssl.trustmanager.algorithm ssl.secure.random.implementation
ssl.engine.factory.class sasl.jaas.config sasl.client.callback.handler.class
sasl.login.callback.handler.class sasl.login.class auto.include.jmx.reporter
enable.metrics.push exclude.internal.topics internal.leave.group.on.close
security.providers
""".split()
)

# Settings our own code reads instead of librdkafka (timeouts of blocking calls).
OWN_KEYS = frozenset({"max.block.ms", "default.api.timeout.ms", "request.timeout.ms", "max.poll.records"})

_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    # librdkafka has no eager sticky assignor; cooperative-sticky keeps the
    # stickiness, which is what users of StickyAssignor want.
    "org.apache.kafka.clients.consumer.StickyAssignor": "cooperative-sticky",
}


def client_setting_names() -> frozenset[str]:
    """Every Java client setting name a worker config may carry for its clients, whether librdkafka takes it,
    it is translated, our code reads it or it means nothing here (the worker's unknown-key check)."""
    return frozenset(_SCOPE) | frozenset(_RENAMES) | _JAVA_ONLY | OWN_KEYS | {"sasl.jaas.config"}


def _assignors(value: str) -> str:
    out = []
    for part in value.split(","):
        part = part.strip()
        if part:
            out.append(_ASSIGNORS.get(part, part))
    return ",".join(dict.fromkeys(out))


def _java_buffer_bytes(value: str) -> str:
    # Java uses -1 for "the OS default"; librdkafka uses 0.
    return "0" if value.strip() == "-1" else value


def _kbytes(value: str) -> str:
    return str(max(1, int(value) // 1024))


def _offset_reset(value: str) -> str:
    # Java's "none" (fail when there is no committed offset) is librdkafka's "error".
    return "error" if value.strip().lower() == "none" else value


_JAAS_FIELD = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _jaas(value: str) -> dict[str, str]:
    # PLAIN and SCRAM logins carry the credentials in the JAAS line; that is
    # the only part librdkafka can use (Kerberos and OAuth have their own keys).
    fields = dict(_JAAS_FIELD.findall(value))
    out = {}
    if "username" in fields:
        out["sasl.username"] = fields["username"]
    if "password" in fields:
        out["sasl.password"] = fields["password"]
    return out


# Java name -> (librdkafka name, value translation)
_RENAMES: dict[str, tuple[str, Callable[[str], str]]] = {
    "send.buffer.bytes": ("socket.send.buffer.bytes", _java_buffer_bytes),
    "receive.buffer.bytes": ("socket.receive.buffer.bytes", _java_buffer_bytes),
    "buffer.memory": ("queue.buffering.max.kbytes", _kbytes),
    "fetch.max.wait.ms": ("fetch.wait.max.ms", str),
    "partition.assignment.strategy": ("partition.assignment.strategy", _assignors),
    "max.request.size": ("message.max.bytes", str),
    "auto.offset.reset": ("auto.offset.reset", _offset_reset),
}
_RENAME_SCOPE = {
    "send.buffer.bytes": "*",
    "receive.buffer.bytes": "*",
    "buffer.memory": "P",
    "fetch.max.wait.ms": "C",
    "partition.assignment.strategy": "C",
    "max.request.size": "P",
    "auto.offset.reset": "C",
}

# Java clients back off at most 1 s between reconnects (reconnect.backoff.max.ms); librdkafka's 10 s would
# leave tasks idle for up to 10 s after a broker comes back.
_RECONNECT = {"reconnect.backoff.max.ms": "1000"}

# Deliberate defaults, applied before any user setting.
PRODUCER_DEFAULTS: dict[str, str] = {
    **_RECONNECT,
    "acks": "all",
    "enable.idempotence": "true",
    # Throughput: a few ms of lingering lets librdkafka fill large batches.
    "linger.ms": "5",
    "batch.num.messages": "10000",
    "batch.size": "1000000",
    "queue.buffering.max.messages": "200000",
    "compression.type": "none",
    # Java clients hash keys with murmur2; librdkafka's default is CRC32.
    # Matching Java keeps a key on the same partition whichever client wrote it.
    "partitioner": "murmur2_random",
    # Java's delivery.timeout.ms default (librdkafka's is 300 s).
    "message.timeout.ms": "120000",
}

CONSUMER_DEFAULTS: dict[str, str] = {
    **_RECONNECT,
    # What Java's consumer runs by default: its list is [RangeAssignor, CooperativeStickyAssignor] and the group
    # uses the first, eager range. A sink task that joins after its sibling's consumer settled the group alone
    # then waits one heartbeat of the sibling, not the two rounds of the cooperative protocol.
    "partition.assignment.strategy": "range",
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "false",
    "auto.offset.reset": "latest",
    # Java's default; librdkafka's is read_committed, which would hide records of open transactions from
    # every consumer (and make end offsets the last stable offset) unless a config asks for it
    "isolation.level": "read_uncommitted",
    # librdkafka stops prefetching for this long once its local queue is full (default 1000 ms); a
    # sink that drains the queue quickly then sits idle for most of each second. Java's consumer has
    # no such pause, so a short one keeps fetches flowing as they do there.
    "fetch.queue.backoff.ms": "10",
    # Java's (and librdkafka's) 3 s: a member that joins a settled group waits for the others' next heartbeat,
    # so a sink task whose consumer joined a moment after its sibling's sat idle for 3 s (6 s under the
    # cooperative protocol); a heartbeat a second costs the broker one small request per task
    "heartbeat.interval.ms": "1000",
}

ADMIN_DEFAULTS: dict[str, str] = dict(_RECONNECT)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _translate(key: str, value: Any, allowed: frozenset[str], origin: str) -> dict[str, str]:
    """One Java-named setting as zero or more librdkafka settings for a client of ``allowed`` scopes."""
    text = _as_text(value)
    if key == "sasl.jaas.config":
        return _jaas(text)
    if key in _RENAMES:
        if _RENAME_SCOPE[key] not in allowed:
            return {}
        name, conv = _RENAMES[key]
        return {name: conv(text)}
    scope = _SCOPE.get(key)
    if scope is not None:
        return {key: text} if scope in allowed else {}
    if key in _JAVA_ONLY:
        log.debug("%s: ignoring %s, a Java client setting librdkafka has no use for", origin, key)
    elif key not in OWN_KEYS:
        log.debug("%s: ignoring %s, not a librdkafka setting", origin, key)
    return {}


def client_config(
    worker_config: Mapping[str, Any],
    kind: ClientKind,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """The librdkafka config for one client, and the Java-named settings our code reads itself.

    Returns ``(librdkafka_config, own)`` where ``own`` holds the settings
    from ``OWN_KEYS`` (e.g. ``max.block.ms``) with the same precedence.
    """
    allowed = _ALLOWED[kind]
    defaults = {"producer": PRODUCER_DEFAULTS, "consumer": CONSUMER_DEFAULTS, "admin": ADMIN_DEFAULTS}[kind]
    out: dict[str, str] = dict(defaults)
    own: dict[str, str] = {}
    explicit: set[str] = set()

    def apply(key: str, value: Any, scopes: frozenset[str], origin: str) -> None:
        if value is None:
            return
        if key in OWN_KEYS:
            own[key] = _as_text(value)
        translated = _translate(key, value, scopes, origin)
        out.update(translated)
        explicit.update(translated)

    # Top level: only settings every client shares. A worker's own group.id,
    # session.timeout.ms, ... belong to its membership in the Connect
    # cluster, not to the consumers its tasks use.
    shared = frozenset("*")
    prefix = f"{kind}."
    for key, value in worker_config.items():
        if not key.startswith(("producer.", "consumer.", "admin.")):
            if key in ("request.timeout.ms", "default.api.timeout.ms"):
                own[key] = _as_text(value)
            if key in _SCOPE or key in _RENAMES or key == "sasl.jaas.config":
                out.update(_translate(key, value, shared, "worker config"))
    for key, value in worker_config.items():
        if key.startswith(prefix):
            apply(key[len(prefix) :], value, allowed, f"worker config {prefix}*")
    for key, value in (overrides or {}).items():
        apply(key, value, allowed, f"{kind} config")

    if kind == "producer":
        _reconcile_idempotence(out, explicit)
    return out, own


def _reconcile_idempotence(cfg: dict[str, str], explicit: set[str]) -> None:
    # Like the Java producer: idempotence is our default, not a demand. If the
    # user asks for weaker acks or more in-flight requests than idempotence
    # allows and did not ask for idempotence itself, turn it off instead of
    # failing to start.
    if "enable.idempotence" in explicit:
        return
    acks = cfg.get("acks", cfg.get("request.required.acks", "all")).strip().lower()
    inflight = cfg.get("max.in.flight.requests.per.connection", cfg.get("max.in.flight", "5"))
    if acks not in ("all", "-1") or int(inflight) > 5:
        cfg["enable.idempotence"] = "false"
