"""The translation of a Flume agent's properties into Headrace connectors (``headrace flume-agent``).

The agent's parts become Headrace connectors on one standalone worker:

- each source becomes a source connector writing to the topic ``<agent>.<source>``;
- a channel is the topics of the sources that feed it: ``memory`` and ``file`` channels alike become the
  worker's log, which is durable (a memory channel no longer loses events on a crash); a replicating
  selector needs nothing more, since every sink reads with its own consumer group;
- each sink becomes a sink connector reading its channel's topics;
- interceptors become transforms of the source connector: ``static`` and ``host`` an ``InsertHeader``,
  ``timestamp`` an ``InsertTimestampHeader``, ``regex_filter`` a ``Filter`` with a ``ValueMatches`` predicate;
- a multiplexing selector becomes a ``Filter`` with a ``HeaderValueMatches`` predicate on each sink that
  reads one of its channels, keeping what the selector would have put in that channel;
- an ``exec`` source's command is run by the agent itself (see ``connect.flume.exec_sources``), its output read by a
  FileStreamSource.

Every key of the agent is either translated or refused at start with one line naming it and what to use
instead: nothing is ignored silently. ``--print-connectors`` prints the derived configs (JSON, one
connector per object) and exits, for moving off the Flume format.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Mapping
from pathlib import Path

from connect.flume.exec_sources import ExecCommand
from connect.flume.hdfs import hdfs_sink
from plugins.flume.kafka_sink import producer_settings_problems

__all__ = ["BYTES", "AgentTranslation", "translate"]

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"

# keys that tune Flume's own channel implementation; the log takes their place
_CHANNEL_KEYS = {
    "memory": {"capacity", "transactionCapacity", "keep-alive", "byteCapacity", "byteCapacityBufferPercentage"},
    "file": {"checkpointDir", "dataDirs", "capacity", "transactionCapacity", "checkpointInterval", "maxFileSize",
             "minimumRequiredSpace", "useDualCheckpoints", "backupCheckpointDir", "keep-alive", "checkpointOnClose"},
}


class AgentTranslation:
    """The worker config and the connector configs derived from one agent."""

    def __init__(self, agent: str, work: Path, default_fs: str | None = None) -> None:
        self.agent = agent
        self.work = work
        self.default_fs = default_fs  # the HDFS that an hdfs sink's path without hdfs://host means
        self.connectors: list[dict[str, str]] = []
        self.commands: list[ExecCommand] = []
        self.problems: list[str] = []
        # a TAILDIR source's name -> its file groups' settings (one connector each)
        self.taildir_groups: dict[str, list[dict[str, str]]] = {}

    def refuse(self, key: str, value: str, instead: str) -> None:
        self.problems.append(f"{key} = {value}: {instead}")


def _split(value: str | None) -> list[str]:
    return [v for v in re.split(r"\s+", (value or "").strip()) if v]


class _Component:
    """The keys of one source, channel or sink: read ones are marked; the rest are refused at the end."""

    def __init__(self, props: Mapping[str, str], prefix: str, out: AgentTranslation) -> None:
        self.prefix = prefix
        self.keys = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
        self.used: set[str] = set()
        self.out = out

    def get(self, key: str, default: str | None = None) -> str | None:
        self.used.add(key)
        return self.keys.get(key, default)

    def accept(self, *keys: str) -> None:
        self.used.update(keys)

    def refuse_rest(self, what: str) -> None:
        for key in sorted(set(self.keys) - self.used):
            self.out.refuse(self.prefix + key, self.keys[key], f"not a key Headrace knows for {what}; "
                            "remove it (check its spelling against the Flume User Guide) or see "
                            "docs/guide/connectors/flume.md for what is supported")


def _listener(c: _Component, scheme: str, default_port: str | None = None) -> str:
    bind = c.get("bind", "0.0.0.0") or "0.0.0.0"
    port = c.get("port", default_port)
    if not port or not (port.isascii() and port.isdigit()):
        c.out.refuse(c.prefix + "port", port or "(missing)", "a source needs a numeric port")
        port = "0"
    return f"{scheme}://{bind}:{port}"


def _avro(c: _Component, conn: dict[str, str]) -> None:
    conn["connector.class"] = "FlumeAvroSource"
    conn["listeners"] = _listener(c, "tcp")
    conn["compression.type"] = c.get("compression-type", "none") or "none"
    level = c.get("compression-level")
    if level:
        conn["compression.level"] = level
    c.accept("threads")  # one event loop serves every connection
    ssl = c.get("ssl", "false")
    if ssl and ssl.lower() == "true":
        c.out.refuse(c.prefix + "ssl", ssl, "TLS on the Avro source is not supported yet; put a TLS proxy "
                     "(stunnel, HAProxy) in front of it")
    conn["value.converter"] = BYTES


def _http(c: _Component, conn: dict[str, str]) -> None:
    # Flume's events, headers and body, as the avro source makes them (HttpSource would make log events)
    conn["connector.class"] = "FlumeHttpSource"
    conn["listeners"] = _listener(c, "http")
    handler = c.get("handler", "org.apache.flume.source.http.JSONHandler")
    if handler != "org.apache.flume.source.http.JSONHandler":
        c.out.refuse(c.prefix + "handler", str(handler), "only Flume's JSONHandler format is read (HttpSource also "
                     "takes NDJSON and single JSON objects)")
    conn["value.converter"] = BYTES


def _syslog(scheme: str) -> Callable[[_Component, dict[str, str]], None]:
    def build(c: _Component, conn: dict[str, str]) -> None:
        conn["connector.class"] = "SyslogSource"
        conn["listeners"] = _listener(c, scheme)
        conn["value.converter"] = JSON
        conn["value.converter.schemas.enable"] = "false"
    return build


def _taildir(c: _Component, conn: dict[str, str]) -> None:
    """Each file group becomes a TailDirSource writing the source's topic, its lines as Flume's bodies; the
    group's ``headers.<group>.<key>`` an InsertHeader (run before the interceptors, as Flume adds them first)."""
    conn["connector.class"] = "TailDirSource"
    conn["record.format"] = "line"
    groups = _split(c.get("filegroups"))
    if not groups:
        c.out.refuse(c.prefix + "filegroups", "(missing)", "a TAILDIR source needs filegroups")
        return
    variants: list[dict[str, str]] = []
    for group in groups:
        path = c.get(f"filegroups.{group}") or ""
        directory, _, pattern = path.rpartition("/")
        # Flume's file part is a regex; only names with .* wildcards read the same as a glob
        if not directory or not re.fullmatch(r"(?:[\w\-]|\.\*|\.)+", pattern):
            c.out.refuse(c.prefix + f"filegroups.{group}", path or "(missing)", "only a directory and a file name "
                         "with .* wildcards can be translated; use TailDirSource's directory and file.pattern (a glob)")
            continue
        variant = {"name": conn["name"] if len(groups) == 1 else f"{conn['name']}-{group}", "directory": directory,
                   "file.pattern": pattern.replace(".*", "*")}
        prefix = f"headers.{group}."
        for key in sorted(k for k in c.keys if k.startswith(prefix)):
            header = key[len(prefix):]
            t = f"transforms.hdr-{header}."
            variant["transforms"] = ",".join(filter(None, [variant.get("transforms"), f"hdr-{header}"]))
            variant.update({t + "type": "InsertHeader", t + "header": header, t + "value.literal": c.get(key) or ""})
        variants.append(variant)
    c.out.taildir_groups[conn["name"]] = variants
    if (c.get("fileHeader", "false") or "false").lower() == "true":
        conn["file.header.key"] = c.get("fileHeaderKey", "file") or "file"
    # positions live in the worker's offsets; the worker's own batching replaces Flume's
    c.accept("positionFile", "batchSize", "writePosInterval", "maxBatchCount", "skipToEnd", "idleTimeout",
             "cachePatternMatching", "fileHeaderKey")
    conn["value.converter"] = BYTES


def _netcat(c: _Component, conn: dict[str, str]) -> None:
    conn["connector.class"] = "NetcatSource"
    conn["listeners"] = _listener(c, "tcp")
    length = c.get("max-line-length")
    if length:
        conn["max.line.length"] = length
    ack = c.get("ack-every-event")
    if ack:
        conn["ack.every.event"] = ack
    conn["value.converter"] = BYTES


def _exec(c: _Component, conn: dict[str, str]) -> None:
    command = c.get("command")
    if not command:
        c.out.refuse(c.prefix + "command", "(missing)", "an exec source needs a command")
        return
    charset = c.get("charset", "UTF-8") or "UTF-8"
    if charset.replace("-", "").upper() != "UTF8":
        c.out.refuse(c.prefix + "charset", charset, "the command's output is read as UTF-8")
    throttle = c.get("restartThrottle", "10000") or "10000"
    if not (throttle.isascii() and throttle.isdigit()):
        c.out.refuse(c.prefix + "restartThrottle", throttle, "milliseconds, a whole number")
        throttle = "10000"
    c.accept("batchSize", "batchTimeout")  # the output file is read in the worker's own batches
    name = conn["name"]
    output = c.out.work / "exec" / f"{name}.out"
    c.out.commands.append(ExecCommand(
        source=name, command=command, shell=c.get("shell", "") or "", output=output,
        restart=(c.get("restart", "false") or "").lower() == "true", restart_throttle_s=int(throttle) / 1000,
        log_stderr=(c.get("logStdErr", "false") or "").lower() == "true"))
    conn["connector.class"] = "FileStreamSource"
    conn["file"] = str(output)
    conn["value.converter"] = STRING


def _spooldir(c: _Component, conn: dict[str, str]) -> None:
    conn["connector.class"] = "SpoolDirSource"
    directory = c.get("spoolDir")
    if not directory:
        c.out.refuse(c.prefix + "spoolDir", "(missing)", "a spooldir source needs spoolDir")
    conn["spool.dir"] = directory or ""
    for flume_key, key in (("fileSuffix", "file.suffix"), ("includePattern", "include.pattern"),
                           ("ignorePattern", "ignore.pattern"), ("consumeOrder", "consume.order"),
                           ("inputCharset", "input.charset"), ("decodeErrorPolicy", "decode.error.policy"),
                           ("deserializer.maxLineLength", "max.line.length"), ("batchSize", "batch.size"),
                           ("pollDelay", "poll.delay.ms")):
        value = c.get(flume_key)
        if value:
            conn[key] = value
    policy = c.get("deletePolicy", "never") or "never"
    if policy not in ("never", "immediate"):
        c.out.refuse(c.prefix + "deletePolicy", policy, "never or immediate")
    conn["delete.policy"] = policy
    for flag, key_key, default, key in (("fileHeader", "fileHeaderKey", "file", "file.header.key"),
                                        ("basenameHeader", "basenameHeaderKey", "basename", "basename.header.key")):
        name = c.get(key_key, default) or default
        if (c.get(flag, "false") or "false").lower() == "true":
            conn[key] = name
    deserializer = c.get("deserializer", "LINE") or "LINE"
    if deserializer.upper() != "LINE" and deserializer != "org.apache.flume.serialization.LineDeserializer$Builder":
        c.out.refuse(c.prefix + "deserializer", deserializer, "only LINE (one event per line) is read")
    output = c.get("deserializer.outputCharset", "UTF-8") or "UTF-8"
    if output.replace("-", "").upper() != "UTF8":
        c.out.refuse(c.prefix + "deserializer.outputCharset", output, "events are written as UTF-8")
    tracking = c.get("trackingPolicy", "rename") or "rename"
    if tracking != "rename":
        c.out.refuse(c.prefix + "trackingPolicy", tracking, "finished files are renamed (or deleted); set "
                     "trackingPolicy = rename")
    recursive = c.get("recursiveDirectorySearch", "false") or "false"
    if recursive.lower() != "false":
        c.out.refuse(c.prefix + "recursiveDirectorySearch", recursive, "only files directly in spoolDir are read; "
                     "give each subdirectory a source of its own")
    # where Flume keeps its place and how it backs off: the worker's offsets and poll loop take their place
    c.accept("trackerDir", "maxBackoff", "bufferMaxLines", "bufferMaxLineLength")
    conn["value.converter"] = BYTES


_SOURCES: dict[str, Callable[[_Component, dict[str, str]], None]] = {
    "avro": _avro, "org.apache.flume.source.AvroSource": _avro,
    "http": _http, "org.apache.flume.source.http.HTTPSource": _http,
    "syslogtcp": _syslog("tcp"), "syslogudp": _syslog("udp"),
    "TAILDIR": _taildir, "taildir": _taildir,
    "netcat": _netcat, "org.apache.flume.source.NetcatSource": _netcat,
    "exec": _exec, "org.apache.flume.source.ExecSource": _exec,
    "spooldir": _spooldir, "org.apache.flume.source.SpoolDirectorySource": _spooldir,
}
_MISSING_SOURCES = {
    "thrift": "Headrace speaks Flume's Avro RPC, not Thrift; point the client at an avro source",
}


def _file_roll(c: _Component, conn: dict[str, str]) -> None:
    conn["connector.class"] = "FileRollSink"
    directory = c.get("sink.directory")
    if not directory:
        c.out.refuse(c.prefix + "sink.directory", "(missing)", "file_roll needs sink.directory")
    conn["directory"] = directory or ""
    conn["roll.interval.ms"] = str(int(c.get("sink.rollInterval", "30") or "30") * 1000)
    serializer = c.get("sink.serializer", "TEXT")
    if serializer != "TEXT":
        c.out.refuse(c.prefix + "sink.serializer", str(serializer), "only TEXT (each body as a line) is written")
    c.accept("batchSize")


def _logger(c: _Component, conn: dict[str, str]) -> None:
    conn["connector.class"] = "LoggerSink"
    size = c.get("maxBytesToLog")
    if size:
        conn["max.body.bytes"] = size


def _hdfs(c: _Component, conn: dict[str, str]) -> None:
    hdfs_sink(c, conn, c.out.refuse, c.out.default_fs, c.out.work, c.out.agent)


# Java producer settings librdkafka names differently
_JAVA_PRODUCER_NAMES = {"max.request.size": "message.max.bytes", "buffer.memory": "queue.buffering.max.kbytes",
                        "retries": "message.send.max.retries", "max.block.ms": "(none: put waits while the queue "
                        "is full)", "key.serializer": "(none: keys and values are bytes)",
                        "value.serializer": "(none: keys and values are bytes)"}


def _kafka(c: _Component, conn: dict[str, str]) -> None:
    conn["connector.class"] = "FlumeKafkaSink"
    conn["header.converter"] = STRING  # Flume headers are strings: keep them so, whatever they look like
    servers = c.get("kafka.bootstrap.servers") or c.get("brokerList")  # brokerList: Flume's older name
    if not servers:
        c.out.refuse(c.prefix + "kafka.bootstrap.servers", "(missing)", "a kafka sink needs the cluster's address")
    conn["kafka.bootstrap.servers"] = servers or ""
    conn["kafka.topic"] = c.get("kafka.topic") or c.get("topic") or "default-flume-topic"
    settings = {k[len("kafka.producer."):]: v for k, v in c.keys.items() if k.startswith("kafka.producer.")}
    acks = c.get("requiredAcks")  # Flume's older name of kafka.producer.acks
    if acks and "acks" not in settings:
        settings["acks"] = acks
    for key, value in settings.items():
        conn["kafka.producer." + key] = value
        c.accept("kafka.producer." + key)
    for key, reason in producer_settings_problems(settings):
        hint = _JAVA_PRODUCER_NAMES.get(key)
        c.out.refuse(c.prefix + "kafka.producer." + key, settings[key], f"the Kafka client here (librdkafka) "
                     f"refuses it: {reason}" + (f"; its name for this is {hint}" if hint else ""))
    for flume_key, key in (("useFlumeEventFormat", "flume.event.format"), ("defaultPartitionId", "default.partition.id"),
                           ("partitionIdHeader", "partition.id.header"), ("allowTopicOverride", "allow.topic.override"),
                           ("topicHeader", "topic.header")):
        given = c.get(flume_key)
        if given:
            conn[key] = given
    # the producer batches on its own (linger.ms, batch.size); the User Guide's example spells the first
    # kafka.flumeBatchSize
    c.accept("flumeBatchSize", "kafka.flumeBatchSize", "batchSize")


_SINKS: dict[str, Callable[[_Component, dict[str, str]], None]] = {
    "file_roll": _file_roll, "logger": _logger, "hdfs": _hdfs, "org.apache.flume.sink.hdfs.HDFSEventSink": _hdfs,
    "org.apache.flume.sink.kafka.KafkaSink": _kafka,
}
_SINKS["kafka"] = _kafka
_MISSING_SINKS = {
    "avro": "send to the next hop's Headrace worker directly: give the upstream client that worker's address",
    "null": "drop the sink: a topic nobody reads costs nothing but its retention",
}


def _host_value(use_ip: bool) -> str:
    """What Flume's host interceptor puts in its header for this machine: its address, or its name."""
    name = socket.gethostname()
    if not use_ip:
        return socket.getfqdn(name)
    try:
        return socket.gethostbyname(name)
    except OSError:
        return "127.0.0.1"


# the Builder class names the User Guide's examples also use, as their short names
_INTERCEPTOR_CLASSES = {
    "org.apache.flume.interceptor.HostInterceptor$Builder": "host",
    "org.apache.flume.interceptor.TimestampInterceptor$Builder": "timestamp",
    "org.apache.flume.interceptor.StaticInterceptor$Builder": "static",
    "org.apache.flume.interceptor.RegexFilteringInterceptor$Builder": "regex_filter",
}


def _interceptors(c: _Component, conn: dict[str, str]) -> None:
    names = _split(c.get("interceptors"))
    transforms: list[str] = []
    predicates: list[str] = []
    for name in names:
        prefix = f"interceptors.{name}."
        given = c.get(prefix + "type")
        kind = _INTERCEPTOR_CLASSES.get(str(given), given)
        t = f"transforms.{name}."
        if kind in ("static", "host"):
            if kind == "static":
                key = c.get(prefix + "key", "key") or "key"
                value = c.get(prefix + "value", "value") or "value"
                preserve_default = "true"
            else:
                key = c.get(prefix + "hostHeader", "host") or "host"
                value = _host_value((c.get(prefix + "useIP", "true") or "").lower() != "false")
                preserve_default = "false"
            preserve = c.get(prefix + "preserveExisting", preserve_default)
            conn[t + "type"] = "InsertHeader"
            conn[t + "header"] = key
            conn[t + "value.literal"] = value
            if preserve and preserve.lower() == "true":
                # only events without the header get it: InsertHeader behind a negated HasHeaderKey
                gate = f"{name}-has-{key}"
                conn[t + "predicate"] = gate
                conn[t + "negate"] = "true"
                conn[f"predicates.{gate}.type"] = "HasHeaderKey"
                conn[f"predicates.{gate}.name"] = key
                predicates.append(gate)
        elif kind == "timestamp":
            conn[t + "type"] = "InsertTimestampHeader"
            conn[t + "header"] = c.get(prefix + "headerName", "timestamp") or "timestamp"
            conn[t + "preserve.existing"] = (c.get(prefix + "preserveExisting", "false") or "false").lower()
        elif kind == "regex_filter":
            regex = c.get(prefix + "regex", ".*") or ".*"
            exclude = (c.get(prefix + "excludeEvents", "false") or "false").lower() == "true"
            conn[t + "type"] = "Filter"
            conn[t + "predicate"] = name
            if not exclude:
                conn[t + "negate"] = "true"  # Filter drops what its predicate matches: keep the matching ones
            conn[f"predicates.{name}.type"] = "ValueMatches"
            conn[f"predicates.{name}.pattern"] = regex
            predicates.append(name)
        else:
            c.out.refuse(c.prefix + prefix + "type", str(given), "Headrace translates the static, host, timestamp "
                         "and regex_filter interceptors; use a Headrace transform on the connector from "
                         "--print-connectors instead")
            continue
        transforms.append(name)
    if transforms:
        conn["transforms"] = ",".join(transforms)
    if predicates:
        conn["predicates"] = ",".join(predicates)


class _Multiplexing:
    """A source's multiplexing selector: which header values go to which of its channels."""

    def __init__(self, c: _Component, channels: list[str]) -> None:
        self.header = c.get("selector.header", "flume.selector.header") or "flume.selector.header"
        self.routes: dict[str, set[str]] = {}  # channel -> the header values that go to it
        mapped: set[str] = set()
        for key in sorted(c.keys):
            for part in ("selector.mapping.", "selector.optional."):
                if key.startswith(part):
                    value = key[len(part):]
                    mapped.add(value)
                    for channel in _split(c.get(key)):
                        if channel not in channels:
                            c.out.refuse(c.prefix + key, str(c.keys[key]),
                                         f"channel '{channel}' is not among the source's channels")
                        self.routes.setdefault(channel, set()).add(value)
        self.mapped = mapped
        self.default = set(_split(c.get("selector.default")))
        for channel in self.default - set(channels):
            c.out.refuse(c.prefix + "selector.default", " ".join(sorted(self.default)),
                         f"channel '{channel}' is not among the source's channels")

    def filter_for(self, channel: str, name: str) -> dict[str, str]:
        """The transforms of a sink on ``channel`` that keep what the selector puts there."""
        mine = self.routes.get(channel, set())
        if channel in self.default:  # events without a mapped value come here too: drop only others' values
            drop, negate = self.mapped - mine, False
            if not drop:
                return {}
        else:
            drop, negate = mine, True
        pattern = "|".join(re.escape(v) for v in sorted(drop)) if drop else "(?!)"
        out = {"transforms": name, f"transforms.{name}.type": "Filter", f"transforms.{name}.predicate": name,
               "predicates": name, f"predicates.{name}.type": "HeaderValueMatches",
               f"predicates.{name}.name": self.header, f"predicates.{name}.pattern": pattern}
        if negate:
            out[f"transforms.{name}.negate"] = "true"
        return out


def _with_group(conn: dict[str, str], group: dict[str, str]) -> dict[str, str]:
    """A TAILDIR source's connector for one file group: its headers' transforms before the interceptors'."""
    out = {**conn, **group}
    out["transforms"] = ",".join(filter(None, [group.get("transforms"), conn.get("transforms")]))
    if not out["transforms"]:
        del out["transforms"]
    return out


def translate(props: Mapping[str, str], agent: str, work: Path | None = None,
              default_fs: str | None = None) -> AgentTranslation:
    """The Headrace connectors of agent ``agent`` (and the commands of its exec sources, whose output goes
    below ``work``); ``problems`` lists every key that cannot be honoured. ``default_fs`` is the HDFS an hdfs
    sink's path without a host is on (Hadoop's fs.defaultFS)."""
    out = AgentTranslation(agent, work or Path(f"headrace-flume-{agent}").resolve(), default_fs)
    top = f"{agent}."
    if not any(k.startswith(top) for k in props):
        out.problems.append(f"no key starts with '{top}': is --name the agent's name in the file?")
        return out
    sources, channels, sinks = (_split(props.get(f"{agent}.{part}")) for part in ("sources", "channels", "sinks"))
    known_prefixes = [f"{agent}.sources.", f"{agent}.channels.", f"{agent}.sinks."]
    for key in props:
        if key.startswith(top) and key not in (f"{agent}.sources", f"{agent}.channels", f"{agent}.sinks") \
                and not any(key.startswith(p) for p in known_prefixes):
            hint = ("sink groups (failover, load_balance) are not translated: one sink per channel"
                    if key.startswith(f"{agent}.sinkgroups") else "not a part of a Flume agent config")
            out.refuse(key, props[key], hint)
    listed = {"sources": sources, "channels": channels, "sinks": sinks}
    for key in props:
        part, _, rest = key[len(top):].partition(".") if key.startswith(top) else ("", "", "")
        name = rest.split(".", 1)[0]
        if part in listed and rest and name not in listed[part]:
            out.refuse(key, props[key], f"'{name}' is not in {agent}.{part} ({' '.join(listed[part]) or 'empty'}): "
                       "a typo, or a part to list there")
    channel_topics: dict[str, list[str]] = {c: [] for c in channels}
    selectors: dict[str, _Multiplexing] = {}  # topic of a source with a multiplexing selector -> it
    for name in channels:
        c = _Component(props, f"{agent}.channels.{name}.", out)
        kind = c.get("type")
        if kind not in _CHANNEL_KEYS:
            out.refuse(c.prefix + "type", str(kind), "memory and file channels become topics of the worker's log; "
                       "for a Kafka channel run Headrace on Kafka")
            continue
        c.accept(*_CHANNEL_KEYS[kind])
        c.refuse_rest(f"a {kind} channel")
    for name in sources:
        c = _Component(props, f"{agent}.sources.{name}.", out)
        kind = c.get("type") or ""
        topic = f"{agent}.{name}"
        conn = {"name": f"{agent}-{name}", "topic": topic, "producer.override.linger.ms": "0"}
        if kind in _MISSING_SOURCES:
            out.refuse(c.prefix + "type", kind, _MISSING_SOURCES[kind])
            continue
        build = _SOURCES.get(kind)
        if build is None:
            out.refuse(c.prefix + "type", kind or "(missing)", f"unknown source type; Headrace translates "
                       f"{', '.join(sorted(k for k in _SOURCES if '.' not in k))}")
            continue
        build(c, conn)
        targets = _split(c.get("channels"))
        if not targets:
            out.refuse(c.prefix + "channels", "(missing)", "a source needs channels (plural, space-separated)")
        for channel in targets:
            if channel not in channel_topics:
                out.refuse(c.prefix + "channels", " ".join(targets), f"channel '{channel}' is not in {agent}.channels")
            else:
                channel_topics[channel].append(topic)
        selector = c.get("selector.type", "replicating")
        if selector == "multiplexing":
            selectors[topic] = _Multiplexing(c, targets)
        elif selector != "replicating":
            out.refuse(c.prefix + "selector.type", str(selector), "the replicating and multiplexing selectors are "
                       "translated; route with a Filter transform and a predicate on each sink instead")
        _interceptors(c, conn)
        c.refuse_rest(f"a {kind} source")
        groups = out.taildir_groups.pop(conn["name"], None)
        if groups is None:
            out.connectors.append(conn)
        for group in groups or ():
            out.connectors.append(_with_group(conn, group))
    readers: dict[str, str] = {}
    for name in sinks:
        c = _Component(props, f"{agent}.sinks.{name}.", out)
        kind = c.get("type") or ""
        channel = c.get("channel") or ""
        if kind in _MISSING_SINKS:
            out.refuse(c.prefix + "type", kind, _MISSING_SINKS[kind])
            continue
        build = _SINKS.get(kind)
        if build is None:
            out.refuse(c.prefix + "type", kind or "(missing)", "unknown sink type; Headrace translates "
                       + ", ".join(sorted(k for k in _SINKS if "." not in k)))
            continue
        if channel not in channel_topics:
            out.refuse(c.prefix + "channel", channel or "(missing)", f"a sink reads one channel (singular) of "
                       f"{agent}.channels")
            continue
        if channel in readers:
            out.refuse(c.prefix + "channel", channel, f"{readers[channel]} reads {channel} already: in Flume two "
                       "sinks share a channel's events, here each would get all of them; give each sink its own "
                       "channel (the source's replicating selector feeds both)")
            continue
        readers[channel] = name
        if not channel_topics[channel]:
            out.refuse(c.prefix + "channel", channel, "no source writes to this channel")
            continue
        conn = {"name": f"{agent}-{name}", "topics": ",".join(channel_topics[channel]), "value.converter": BYTES}
        routed = [selectors[t] for t in channel_topics[channel] if t in selectors]
        if routed and len(channel_topics[channel]) > 1:
            out.refuse(c.prefix + "channel", channel, "a channel fed by a multiplexing selector is translated only "
                       "when that source is the channel's only one")
            continue
        if routed:
            conn.update(routed[0].filter_for(channel, "selector"))
        build(c, conn)
        c.refuse_rest(f"a {kind} sink")
        out.connectors.append(conn)
    return out
