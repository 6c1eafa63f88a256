"""Worker configuration: the keys of Kafka Connect's WorkerConfig plus Headrace's own."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from connect.api.config import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    Range,
    ValidString,
    closest_key,
)
from connect.api.setting import Setting
from connect.log.embedded.config import WORKER_SETTINGS as EMBEDDED_LOG_SETTINGS
from connect.log.kafka.config import client_setting_names
from connect.runtime.client_config_policy import POLICY_NAMES, ClientConfigOverridePolicy, override_policy
from connect.runtime.spark_config_policy import POLICY_CONFIG as SPARK_POLICY_CONFIG
from connect.runtime.spark_config_policy import POLICY_NAMES as SPARK_POLICY_NAMES
from connect.runtime.spark_config_policy import SparkConfigOverridePolicy, spark_override_policy

__all__ = ["DistributedConfig", "StandaloneConfig", "WorkerConfig", "unknown_key_warning", "worker_config_def"]

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def _known_policy(name: str, value: object) -> str | None:
    if value in POLICY_NAMES:
        return None
    return "String must be one of: All, None, Principal (or a Kafka Connect policy class name)"


STREAMING_STATE_FOLDER = "streaming-state"
LEGACY_STREAMING_STATE_DIR = "headrace-state"  # the default before state moved beside the worker's own


def worker_config_def() -> ConfigDef:
    d = ConfigDef()
    d.define("bootstrap.servers", ConfigType.LIST, [], importance=Importance.HIGH,
             documentation="Kafka brokers to connect to. Empty: use the embedded log under embedded.log.dir.")
    d.define("embedded.log.dir", ConfigType.STRING, "./headrace-data", importance=Importance.HIGH,
             documentation="Directory of the embedded log, used when bootstrap.servers is empty.")
    d.define("streaming.state.dir", ConfigType.STRING, "", importance=Importance.LOW,
             documentation="Directory under which each streaming sink connector (a Spark query, say) keeps "
                           "its state, in a folder named after the connector. Empty: with the worker's own "
                           "state, <embedded.log.dir>/streaming-state on the embedded log, else "
                           "streaming-state beside offset.storage.file.filename (standalone) or "
                           "./headrace-state (distributed on Kafka).")
    d.define("key.converter", ConfigType.CLASS, importance=Importance.HIGH,
             documentation="Converter class for record keys.")
    d.define("value.converter", ConfigType.CLASS, importance=Importance.HIGH,
             documentation="Converter class for record values.")
    d.define("header.converter", ConfigType.CLASS, "org.apache.kafka.connect.storage.SimpleHeaderConverter",
             importance=Importance.LOW, documentation="HeaderConverter class for record headers.")
    d.define("task.shutdown.graceful.timeout.ms", ConfigType.LONG, 5000, Range.at_least(0), Importance.LOW,
             "How long to wait for tasks to stop gracefully.")
    # Headrace: automatic restart of FAILED tasks (off by default, as Kafka Connect has none)
    d.define("task.restart.enabled", ConfigType.BOOLEAN, False, importance=Importance.LOW,
             documentation="Restart a FAILED task automatically after a delay that grows with each try.")
    d.define("task.restart.initial.delay.ms", ConfigType.LONG, 2000, Range.at_least(0), Importance.LOW,
             "Delay before the first automatic restart of a FAILED task.")
    d.define("task.restart.max.delay.ms", ConfigType.LONG, 1_800_000, Range.at_least(0), Importance.LOW,
             "Longest delay between two automatic restarts; a task that ran this long since its last restart "
             "starts counting its tries again.")
    d.define("task.restart.multiplier", ConfigType.DOUBLE, 2.0, Range.at_least(1), Importance.LOW,
             "Each automatic restart's delay is the previous one times this.")
    d.define("task.restart.max.tries", ConfigType.INT, 7, Range.at_least(1), Importance.LOW,
             "Automatic restarts of a task before it is left FAILED for an operator.")
    d.define("metrics.prometheus.enable", ConfigType.BOOLEAN, True, importance=Importance.LOW,
             documentation="Serve Kafka Connect's metrics in the Prometheus text format at GET /metrics on "
                           "the REST listener.")
    d.define("offset.flush.interval.ms", ConfigType.LONG, 60000, Range.at_least(0), Importance.LOW,
             "Interval at which to commit task offsets.")
    d.define("offset.flush.timeout.ms", ConfigType.LONG, 5000, Range.at_least(0), Importance.LOW,
             "How long to wait for records to be acknowledged before an offset commit is cancelled.")
    d.define("plugin.path", ConfigType.LIST, [], importance=Importance.LOW,
             documentation="Folders of Python plugin modules, comma-separated.")
    d.define("connector.allowed.paths", ConfigType.LIST, [], importance=Importance.MEDIUM,
             documentation="Directories inside which connectors may read and write the files their configs "
                           "name (a key a plugin declares with FilePath), comma-separated; empty: anywhere. "
                           "The embedded log, the offsets file, plugin.path and Python's import path are "
                           "refused whatever this says.")
    d.define("config.providers", ConfigType.LIST, [], importance=Importance.LOW,
             documentation="Names of ConfigProviders; each needs config.providers.<name>.class.")
    d.define("topic.creation.enable", ConfigType.BOOLEAN, True, importance=Importance.LOW,
             documentation="Whether source connectors may create topics per topic.creation.* settings.")
    d.define("listeners", ConfigType.LIST, ["http://127.0.0.1:8083"], importance=Importance.LOW,
             documentation="REST listeners (http:// or https://host:port). Loopback by default, unlike "
                           "Kafka Connect's http://:8083; an empty host means every interface. Empty list: no "
                           "REST server.")
    d.define("rest.advertised.host.name", ConfigType.STRING, None, importance=Importance.LOW)
    d.define("rest.advertised.port", ConfigType.INT, None, importance=Importance.LOW)
    d.define("rest.advertised.listener", ConfigType.STRING, None, importance=Importance.LOW)
    d.define("access.control.allow.origin", ConfigType.STRING, "", importance=Importance.LOW)
    d.define("access.control.allow.methods", ConfigType.STRING, "", importance=Importance.LOW)
    # REST security (rest/guards.py, rest/auth.py, rest/tls.py). The listeners.https.ssl.* / ssl.* keys
    # are read by rest/tls.py from the originals, as Kafka Connect reads them with a prefix.
    d.define("rest.extension.classes", ConfigType.LIST, [], importance=Importance.LOW,
             documentation="REST extensions; org.apache.kafka.connect.rest.basic.auth.extension."
                           "BasicAuthSecurityRestExtension (or BasicAuthSecurityRestExtension) turns on HTTP "
                           "basic authentication.")
    d.define("rest.basic.auth.credentials.file", ConfigType.STRING, None, importance=Importance.LOW,
             documentation="Users file of basic authentication: user=bcrypt-hash (or plain text) lines.")
    d.define("rest.basic.auth.jaas.config", ConfigType.STRING, None, importance=Importance.LOW,
             documentation="A JAAS file whose KafkaConnect section names the users file, as Kafka Connect "
                           "takes it through -Djava.security.auth.login.config.")
    d.define("rest.request.max.bytes", ConfigType.INT, 4 * 1024 * 1024, Range.at_least(1), Importance.LOW,
             "Largest REST request body accepted; larger ones get 413 before they are read.")
    # Slow clients (rest/server.py, connect/api/http_listener.py): requests are read off the request threads
    d.define("rest.request.header.timeout.ms", ConfigType.INT, 10_000, Range.at_least(100), Importance.LOW,
             "A REST request's line and headers must have arrived this long after its first byte; else it is "
             "answered 408 and its connection closed.")
    d.define("rest.request.body.timeout.ms", ConfigType.INT, 30_000, Range.at_least(100), Importance.LOW,
             "A REST request's body must have arrived this long after its headers, and an answer must have been "
             "taken by the client this long after its first byte; else 408 (when nothing was answered yet) and "
             "the connection is closed.")
    d.define("rest.idle.timeout.ms", ConfigType.INT, 30_000, Range.at_least(100), Importance.LOW,
             "A REST connection that sends nothing for this long is closed (answered 408 if it was sending a "
             "request).")
    d.define("rest.max.connections", ConfigType.INT, 1000, Range.at_least(1), Importance.LOW,
             "The most connections each REST listener holds open at once; a new one beyond gets 503 and is "
             "closed.")
    d.define("rest.allowed.hosts", ConfigType.LIST, [], importance=Importance.LOW,
             documentation="More names the REST API answers to in the Host header (e.g. a proxy's); "
                           "* turns the Host check off.")
    d.define("ssl.client.auth", ConfigType.STRING, "none",
             ValidString.in_("none", "requested", "required"), Importance.LOW,
             "Whether https listeners ask clients for a certificate.")
    d.define("client.id", ConfigType.STRING, "", importance=Importance.LOW)
    d.define("connector.client.config.override.policy", ConfigType.STRING, "All",
             LambdaValidator(_known_policy, "All, None or Principal"), Importance.MEDIUM,
             "Which producer.override.*, consumer.override.* and admin.override.* keys a connector config "
             "may set: All (any), None (none) or Principal (sasl.jaas.config, sasl.mechanism, "
             "security.protocol); Kafka Connect's policy class names are accepted too.")
    d.define(SPARK_POLICY_CONFIG, ConfigType.STRING, "Tuning", ValidString.in_(*SPARK_POLICY_NAMES),
             Importance.MEDIUM,
             "Which spark.* keys a connector config may hand the Spark session of the Spark sinks: None (none), "
             "Tuning (only tuning keys with plain values: memory, cores, partitions, adaptive execution, Arrow "
             "batch sizes, codecs, timeouts, and a local[...] spark.master; see Security in the docs) or All (any, "
             "including keys that load code, set JVM or environment options or name files: only for workers "
             "whose every REST caller may run code as the worker's user). The worker config's own spark.* "
             "settings are passed to the session whatever this says.")
    d.define("consumer.max.poll.records", ConfigType.INT, 500, Range.at_least(1), Importance.LOW,
             "Records a sink task asks for per poll (also settable as consumer.max.poll.records).")
    d.define("exactly.once.source.support", ConfigType.STRING, "disabled",
             CaseInsensitiveValidString.in_("disabled", "preparing", "enabled"), Importance.HIGH,
             "enabled: every source task writes its records and source offsets in one transaction (KIP-618) and "
             "zombie tasks are fenced; preparing (distributed): the leader already fences and writes the config "
             "topic transactionally, a step of a rolling upgrade from disabled to enabled. Unlike Kafka Connect, "
             "standalone workers support it too.")
    d.define("python.switch.interval.us", ConfigType.INT, 1000, Range.between(100, 100_000), Importance.LOW,
             "How long a thread may hold Python's GIL while another waits for it (sys.setswitchinterval), in "
             "microseconds. Python's default, 5000, lets tasks moving records at full speed hold back REST "
             "requests by tens of milliseconds each time they get the GIL; 1000 keeps status requests fast beside "
             "busy tasks (see Standalone mode in the docs).")
    d.define("rest.request.priority.max.ms", ConfigType.INT, 5, Range.between(0, 100), Importance.LOW,
             "While a REST request is being served, task threads step aside between two batches until it is "
             "answered, for at most this many milliseconds, so that status requests stay fast beside tasks moving "
             "records at full speed (see Standalone mode in the docs). 0 turns it off.")
    d.define("task.processes", ConfigType.INT, -1, Range.at_least(-1), Importance.MEDIUM,
             "How many task host processes run this worker's source and sink tasks, so that N busy tasks use N "
             "cores instead of sharing the worker's one Python interpreter lock: hosts start as tasks need them, "
             "each new task going to the host running fewest. -1 (the default): one per core available to the "
             "worker, none on a single core; 0: every task runs in the worker process. Exactly-once source tasks "
             "and Spark streaming tasks always run in the worker (see Task host processes in the docs).")
    d.define("rest.separate.process", ConfigType.BOOLEAN, True, importance=Importance.LOW,
             documentation="Serve the REST listeners from a process of their own, which answers status reads from "
             "the statuses the worker sends it on every change and passes every other request to the worker, so "
             "status requests stay fast while tasks move records at full speed (see Standalone mode in the docs).")
    # Families the worker hands on as they are; a key under one is never reported as unknown
    d.allow_prefix("producer.", "Settings of the producers of source tasks (and the worker's own).")
    d.allow_prefix("consumer.", "Settings of the consumers of sink tasks (and the worker's own).")
    d.allow_prefix("admin.", "Settings of the admin clients that create topics.")
    for converter in ("key.converter.", "value.converter.", "header.converter."):
        d.allow_prefix(converter, f"Settings of the worker's {converter[:-1]}.")
    d.allow_prefix("config.providers.", "<name>.class and <name>.param.* of each of config.providers.")
    d.allow_prefix("listeners.https.", "ssl.* settings that apply to the https listeners only.")
    d.allow_prefix("spark.", "Settings of the Spark session of the Spark sinks.")
    return d


# Worker settings read outside the worker's definition, each by the part it configures: the Kafka clients'
# shared (top-level) settings, the embedded log's broker-style ones, the schema registry's (connect/cli/
# schema_registry.py). None of them is an unknown key.
_READ_ELSEWHERE: frozenset[str] = (
    client_setting_names() | EMBEDDED_LOG_SETTINGS
    | {"schema.registry.topic", "schema.registry.replication.factor", "schema.compatibility.level"}
)


# Apache Kafka Connect worker settings Headrace has no use for: a config written for Java's worker may carry them,
# so they are named as what they are rather than as misspellings ("did you mean ...").
KAFKA_CONNECT_UNUSED: Mapping[str, str] = {
    "plugin.discovery": "plugins are found through Python entry points",
    "response.http.headers.config": "the REST server sets its own response headers",
    "topic.tracking.enable": "active topics are always tracked",
    "topic.tracking.allow.reset": "active topics are always tracked",
    "inter.worker.key.size": "the session key's size is fixed by its algorithm",
    "internal.key.converter": "removed in Kafka 3.0; internal topics are always JSON",
    "internal.value.converter": "removed in Kafka 3.0; internal topics are always JSON",
    "rest.host.name": "removed in Kafka 3.0; use listeners",
    "rest.port": "removed in Kafka 3.0; use listeners",
}


def unknown_key_warning(key: str, suggestion: str | None, owner: str | None = None) -> str:
    """How an unknown key is reported, in the log and by REST validation alike."""
    text = f"{key}: not a known setting" + (f" of {owner}" if owner else "")
    return text + (f"; did you mean {suggestion}?" if suggestion else "")


class WorkerConfig(AbstractConfig):
    """A worker's settings, parsed once; the runtime reads them only through these typed attributes (or
    ``originals_with_prefix`` for the client settings it hands on)."""

    DEFINITION = worker_config_def()

    bootstrap_servers = Setting[list[str]]("bootstrap.servers")
    embedded_log_dir = Setting[str]("embedded.log.dir")
    streaming_state_dir = Setting[str]("streaming.state.dir")
    task_shutdown_graceful_timeout_ms = Setting[int]("task.shutdown.graceful.timeout.ms")
    offset_flush_interval_ms = Setting[int]("offset.flush.interval.ms")
    task_restart_enabled = Setting[bool]("task.restart.enabled")
    task_restart_initial_delay_ms = Setting[int]("task.restart.initial.delay.ms")
    task_restart_max_delay_ms = Setting[int]("task.restart.max.delay.ms")
    task_restart_multiplier = Setting[float]("task.restart.multiplier")
    task_restart_max_tries = Setting[int]("task.restart.max.tries")
    offset_flush_timeout_ms = Setting[int]("offset.flush.timeout.ms")
    plugin_path = Setting[list[str]]("plugin.path")
    config_providers = Setting[list[str]]("config.providers")
    topic_creation_enable = Setting[bool]("topic.creation.enable")
    listeners = Setting[list[str]]("listeners")
    consumer_max_poll_records = Setting[int]("consumer.max.poll.records")
    exactly_once_source_support = Setting[str]("exactly.once.source.support")
    python_switch_interval_us = Setting[int]("python.switch.interval.us")
    rest_request_priority_max_ms = Setting[int]("rest.request.priority.max.ms")
    rest_separate_process = Setting[bool]("rest.separate.process")
    task_processes = Setting[int]("task.processes")

    def __init__(self, originals: Mapping[str, Any], definition: ConfigDef | None = None) -> None:
        super().__init__(definition or self.DEFINITION, originals)

    @property
    def streaming_state_root(self) -> str:
        """Where streaming sink connectors keep their state (an absolute path): ``streaming.state.dir``, or
        by default with the worker's own state, so two workers started in one folder never share it."""
        if self.streaming_state_dir:
            return os.path.abspath(self.streaming_state_dir)
        if not self.uses_kafka:
            return os.path.join(os.path.abspath(self.embedded_log_dir), STREAMING_STATE_FOLDER)
        offsets_file = self.originals.get("offset.storage.file.filename")
        if offsets_file:
            return os.path.join(os.path.dirname(os.path.abspath(str(offsets_file))), STREAMING_STATE_FOLDER)
        return os.path.abspath(LEGACY_STREAMING_STATE_DIR)

    @property
    def exactly_once_source_enabled(self) -> bool:
        return self.exactly_once_source_support.lower() == "enabled"

    @property
    def transactional_id_prefix(self) -> str:
        """What exactly-once source tasks' ``transactional.id`` starts with: ``<group.id>-``, as in Kafka."""
        return f"{self.values.get('group.id') or 'connect-standalone'}-"

    @property
    def client_id_base(self) -> str:
        """What the worker's own log clients' ``client.id`` starts with, as in Kafka Connect: ``<group.id>-``,
        then ``<client.id>-`` when the operator set one (e.g. ``connect-cluster-statuses``)."""
        client_id = str(self.values.get("client.id") or "").strip()
        return f"{self.values.get('group.id') or 'connect-standalone'}-" + (f"{client_id}-" if client_id else "")

    @property
    def offset_topic(self) -> tuple[str, int, int]:
        """The offset topic's name, partition count and replication factor (Kafka Connect's defaults where
        the mode defines none)."""
        v = self.values
        return (str(v.get("offset.storage.topic") or "connect-offsets"), int(v.get("offset.storage.partitions") or 25),
                int(v.get("offset.storage.replication.factor") or -1))

    @property
    def uses_kafka(self) -> bool:
        return bool(self.bootstrap_servers)

    def converter_class(self, key: str) -> str:
        """``key.converter``, ``value.converter`` or ``header.converter``."""
        return str(self.get(key))

    @property
    def client_config_override_policy(self) -> ClientConfigOverridePolicy:
        return override_policy(self.get("connector.client.config.override.policy"))

    @property
    def spark_config_override_policy(self) -> SparkConfigOverridePolicy:
        return spark_override_policy(self.get(SPARK_POLICY_CONFIG))

    def passthrough_settings(self, prefix: str) -> dict[str, str]:
        """The operator's settings under ``prefix`` (kept in the keys) that the worker does not define itself
        but hands on, such as the ``spark.*`` settings of the Spark sinks' session."""
        return {key: str(value) for key, value in self.originals_with_prefix(prefix, strip=False).items()
                if key not in self.definition.config_keys and value not in (None, "")}

    def unknown_key_warnings(self) -> list[str]:
        """One line for each supplied key no part of the worker knows, naming the key it was probably meant to
        be (Kafka Connect's "supplied but isn't a known config"); the worker logs them once at start."""
        known = self.definition.config_keys.keys() | _READ_ELSEWHERE
        out = []
        for key in self.definition.unknown_keys(self.originals):
            if key in _READ_ELSEWHERE:
                continue
            if key in KAFKA_CONNECT_UNUSED:
                out.append(f"{key}: a Kafka Connect setting Headrace does not use ({KAFKA_CONNECT_UNUSED[key]}); "
                           "ignored")
            elif self.other_mode_knows(key):
                out.append(f"{key}: a setting of the other worker mode (standalone/distributed); ignored here")
            else:
                out.append(unknown_key_warning(key, closest_key(key, known, self.definition.prefixes)))
        return out

    def other_mode_knows(self, key: str) -> bool:
        """Whether the worker of the other mode defines ``key`` (a distributed setting in a standalone config)."""
        return False

    def backend_config(self) -> dict[str, Any]:
        """The originals the topic layer needs (client keys and prefixes), with bootstrap normalised."""
        out = dict(self.originals)
        out["bootstrap.servers"] = ",".join(self.bootstrap_servers)
        out["embedded.log.dir"] = self.embedded_log_dir
        return out


def _standalone_def() -> ConfigDef:
    d = ConfigDef(worker_config_def())
    d.define("offset.storage.file.filename", ConfigType.STRING, importance=Importance.HIGH,
             documentation="File to store source connector offsets in.")
    d.define("config.storage.topic", ConfigType.STRING, None, importance=Importance.LOW,
             documentation="Compacted topic that keeps connectors created over REST across restarts. Default: "
                           "connect-configs in the embedded log; on Kafka, connect-configs-standalone-<worker id>, "
                           "a topic of this worker's own (its id is kept in <offsets file>.worker-id).")
    d.define("config.storage.encryption.key", ConfigType.PASSWORD, None, importance=Importance.MEDIUM,
             documentation="Fernet key (32 bytes, URL-safe base64) that encrypts PASSWORD values in the config "
                           "topic. Default: config.storage.encryption.key.file.")
    d.define("config.storage.encryption.key.file", ConfigType.STRING, None, importance=Importance.MEDIUM,
             documentation="File holding the Fernet key. Default: <offsets file>.config-key, generated owner-only "
                           "on first start.")
    d.define("config.storage.replication.factor", ConfigType.SHORT, -1, importance=Importance.LOW,
             documentation="Replication factor of the config topic when the worker creates it on Kafka; "
                           "-1: the broker's default.replication.factor.")
    # Headrace runs exactly-once sources in standalone mode too; their offsets need a topic, not the file
    d.define("group.id", ConfigType.STRING, "connect-standalone", importance=Importance.LOW,
             documentation="Names the transactional ids of exactly-once source tasks (<group.id>-<connector>-"
                           "<task>); give each standalone worker sharing a Kafka cluster its own.")
    d.define("offset.storage.topic", ConfigType.STRING, "connect-offsets", importance=Importance.LOW,
             documentation="Compacted topic of the source offsets of exactly-once source tasks (the others keep "
                           "theirs in offset.storage.file.filename).")
    d.define("offset.storage.partitions", ConfigType.INT, 25, Range.at_least(1), Importance.LOW,
             documentation="Partitions of the offset topic when the worker creates it.")
    d.define("offset.storage.replication.factor", ConfigType.SHORT, -1, importance=Importance.LOW,
             documentation="Replication factor of the offset topic when the worker creates it on Kafka; "
                           "-1: the broker's default.replication.factor.")
    return d


class StandaloneConfig(WorkerConfig):
    DEFINITION = _standalone_def()

    def other_mode_knows(self, key: str) -> bool:
        return key in DistributedConfig.DEFINITION.config_keys


def _distributed_def() -> ConfigDef:
    d = ConfigDef(worker_config_def())
    d.define("group.id", ConfigType.STRING, importance=Importance.HIGH,
             documentation="The Connect cluster this worker joins (its Kafka group).")
    d.define("config.storage.topic", ConfigType.STRING, importance=Importance.HIGH,
             documentation="Compacted single-partition topic of connector and task configs.")
    d.define("offset.storage.topic", ConfigType.STRING, importance=Importance.HIGH,
             documentation="Compacted topic of source connector offsets.")
    d.define("status.storage.topic", ConfigType.STRING, importance=Importance.HIGH,
             documentation="Compacted topic of connector and task statuses.")
    d.define("config.storage.replication.factor", ConfigType.SHORT, 3, importance=Importance.LOW,
             documentation="Replication factor of the config topic when the worker creates it; -1: broker default.")
    d.define("offset.storage.replication.factor", ConfigType.SHORT, 3, importance=Importance.LOW,
             documentation="Replication factor of the offset topic when the worker creates it; -1: broker default.")
    d.define("status.storage.replication.factor", ConfigType.SHORT, 3, importance=Importance.LOW,
             documentation="Replication factor of the status topic when the worker creates it; -1: broker default.")
    d.define("offset.storage.partitions", ConfigType.INT, 25, Range.at_least(1), Importance.LOW,
             documentation="Partitions of the offset topic when the worker creates it.")
    d.define("status.storage.partitions", ConfigType.INT, 5, Range.at_least(1), Importance.LOW,
             documentation="Partitions of the status topic when the worker creates it.")
    d.define("session.timeout.ms", ConfigType.INT, 10000, importance=Importance.HIGH,
             documentation="How long the group coordinator waits for a silent worker before removing it.")
    d.define("heartbeat.interval.ms", ConfigType.INT, 3000, importance=Importance.HIGH,
             documentation="How often the worker heartbeats to the group coordinator.")
    d.define("rebalance.timeout.ms", ConfigType.INT, 60000, importance=Importance.HIGH,
             documentation="How long each worker may take to rejoin once a rebalance starts.")
    d.define("scheduled.rebalance.max.delay.ms", ConfigType.INT, 300000, Range.at_least(0), Importance.LOW,
             documentation="How long the work of a departed worker waits for it to come back before it is "
                           "reassigned (KIP-415).")
    d.define("connect.protocol", ConfigType.STRING, "sessioned",
             ValidString.in_("eager", "compatible", "sessioned"), Importance.LOW,
             documentation="eager (stop everything at each rebalance), compatible (incremental cooperative) or "
                           "sessioned (incremental cooperative with signed requests between workers).")
    d.define("worker.sync.timeout.ms", ConfigType.INT, 3000, Range.at_least(0), Importance.MEDIUM,
             documentation="How long a worker waits to read the config topic up to the leader's view.")
    d.define("worker.unsync.backoff.ms", ConfigType.INT, 300000, Range.at_least(0), Importance.MEDIUM,
             documentation="How long a worker that could not catch up waits before rejoining.")
    d.define("inter.worker.key.ttl.ms", ConfigType.INT, 3600000, Range.at_least(0), Importance.LOW,
             documentation="How long a session key signs requests between workers before the leader rotates it.")
    d.define("inter.worker.key.generation.algorithm", ConfigType.STRING, "HmacSHA256",
             ValidString.in_("HmacSHA256"), Importance.LOW)
    d.define("inter.worker.signature.algorithm", ConfigType.STRING, "HmacSHA256",
             ValidString.in_("HmacSHA256"), Importance.LOW)
    d.define("inter.worker.verification.algorithms", ConfigType.LIST, ["HmacSHA256"], importance=Importance.LOW)
    d.define("config.storage.encryption.key", ConfigType.PASSWORD, None, importance=Importance.MEDIUM,
             documentation="Fernet key (shared by every worker of the cluster) that encrypts PASSWORD values in "
                           "the config topic. Default: config.storage.encryption.key.file; neither: stored as "
                           "given, as Kafka Connect does.")
    d.define("config.storage.encryption.key.file", ConfigType.STRING, None, importance=Importance.MEDIUM,
             documentation="File holding the cluster's Fernet key.")
    return d


class DistributedConfig(WorkerConfig):
    DEFINITION = _distributed_def()

    def other_mode_knows(self, key: str) -> bool:
        return key in StandaloneConfig.DEFINITION.config_keys

    group_id = Setting[str]("group.id")
    config_storage_topic = Setting[str]("config.storage.topic")
    offset_storage_topic = Setting[str]("offset.storage.topic")
    status_storage_topic = Setting[str]("status.storage.topic")
    session_timeout_ms = Setting[int]("session.timeout.ms")
    heartbeat_interval_ms = Setting[int]("heartbeat.interval.ms")
    rebalance_timeout_ms = Setting[int]("rebalance.timeout.ms")
    scheduled_rebalance_max_delay_ms = Setting[int]("scheduled.rebalance.max.delay.ms")
    connect_protocol = Setting[str]("connect.protocol")
    worker_sync_timeout_ms = Setting[int]("worker.sync.timeout.ms")
    inter_worker_key_ttl_ms = Setting[int]("inter.worker.key.ttl.ms")
