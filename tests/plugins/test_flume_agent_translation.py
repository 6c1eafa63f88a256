"""``translate`` of Flume agent configs into Headrace connectors: the netcat and exec sources, the host,
timestamp and regex_filter interceptors and the multiplexing selector, each checked by what the derived
plugins do with records, and the keys it refuses."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

from connect.api import ConnectHeaders, SourceRecord
from connect.flume.translate import translate
from connect.runtime.properties import load_config_file
from plugins.predicates import HasHeaderKey, HeaderValueMatches, ValueMatches
from plugins.transforms import Filter, InsertHeader, InsertTimestampHeader

PLUGINS = {"Filter": Filter, "InsertHeader": InsertHeader, "InsertTimestampHeader": InsertTimestampHeader,
           "ValueMatches": ValueMatches, "HeaderValueMatches": HeaderValueMatches,
           "HasHeaderKey": HasHeaderKey}


def _translate(tmp_path: Path, text: str):
    conf = tmp_path / "flume.conf"
    conf.write_text(textwrap.dedent(text))
    return translate(load_config_file(str(conf)), "a1", tmp_path / "work")


def _by_name(translation):
    return {c["name"]: c for c in translation.connectors}


def _apply(conn: dict[str, str], record: SourceRecord) -> SourceRecord | None:
    """The connector's transforms and predicates, as the runtime chains them."""
    for name in filter(None, conn.get("transforms", "").split(",")):
        prefix = f"transforms.{name}."
        transform = PLUGINS[conn[prefix + "type"]]()
        transform.configure({k[len(prefix):]: v for k, v in conn.items() if k.startswith(prefix)})
        gate = conn.get(prefix + "predicate")
        if gate:
            pprefix = f"predicates.{gate}."
            predicate = PLUGINS[conn[pprefix + "type"]]()
            predicate.configure({k[len(pprefix):]: v for k, v in conn.items() if k.startswith(pprefix)})
            if predicate.test(record) == (conn.get(prefix + "negate") == "true"):
                continue
        record = transform.apply(record)
        if record is None:
            return None
    return record


def _record(body: bytes, **headers: str) -> SourceRecord:
    h = ConnectHeaders()
    for k, v in headers.items():
        h.add_string(k, v)
    return SourceRecord(None, None, "t", None, None, None, None, body, 1, h)


def test_the_user_guides_netcat_to_logger_example(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.sinks = k1
        a1.channels = c1
        a1.sources.r1.type = netcat
        a1.sources.r1.bind = localhost
        a1.sources.r1.port = 44444
        a1.sources.r1.max-line-length = 1024
        a1.sinks.k1.type = logger
        a1.channels.c1.type = memory
        a1.channels.c1.capacity = 1000
        a1.channels.c1.transactionCapacity = 100
        a1.sources.r1.channels = c1
        a1.sinks.k1.channel = c1
    """)
    assert t.problems == []
    source, sink = _by_name(t)["a1-r1"], _by_name(t)["a1-k1"]
    assert source["connector.class"] == "NetcatSource" and source["listeners"] == "tcp://localhost:44444"
    assert source["max.line.length"] == "1024" and source["topic"] == "a1.r1"
    assert sink["connector.class"] == "LoggerSink" and sink["topics"] == "a1.r1"


def test_an_exec_source_becomes_a_command_the_agent_runs_and_a_file_source(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = exec
        a1.sources.r1.command = for i in 1 2 3; do echo $i; done
        a1.sources.r1.shell = /bin/bash -c
        a1.sources.r1.restart = true
        a1.sources.r1.restartThrottle = 500
        a1.sources.r1.logStdErr = true
        a1.sources.r1.batchSize = 20
        a1.sources.r1.channels = c1
        a1.channels.c1.type = memory
    """)
    assert t.problems == []
    [command] = t.commands
    assert command.argv == ["/bin/bash", "-c", "for i in 1 2 3; do echo $i; done"]
    assert command.restart and command.restart_throttle_s == 0.5 and command.log_stderr
    source = _by_name(t)["a1-r1"]
    assert source["connector.class"] == "FileStreamSource" and source["file"] == str(command.output)
    assert command.output.parent == tmp_path / "work" / "exec"


def test_without_a_shell_the_command_is_split_as_flume_splits_it(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = exec
        a1.sources.r1.command = tail -F /var/log/secure
        a1.sources.r1.channels = c1
        a1.channels.c1.type = memory
    """)
    assert t.commands[0].argv == ["tail", "-F", "/var/log/secure"] and not t.commands[0].restart


def test_host_timestamp_and_regex_filter_interceptors_act_as_flumes(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = netcat
        a1.sources.r1.port = 44444
        a1.sources.r1.channels = c1
        a1.sources.r1.interceptors = h t f
        a1.sources.r1.interceptors.h.type = host
        a1.sources.r1.interceptors.h.hostHeader = hostname
        a1.sources.r1.interceptors.h.useIP = false
        a1.sources.r1.interceptors.t.type = timestamp
        a1.sources.r1.interceptors.f.type = regex_filter
        a1.sources.r1.interceptors.f.regex = ^DEBUG
        a1.sources.r1.interceptors.f.excludeEvents = true
        a1.channels.c1.type = memory
    """)
    assert t.problems == []
    conn = _by_name(t)["a1-r1"]
    out = _apply(conn, _record(b"INFO kept"))
    assert out is not None and out.headers.last_with_name("hostname").value
    assert int(out.headers.last_with_name("timestamp").value) > 1_600_000_000_000
    assert _apply(conn, _record(b"DEBUG dropped")) is None


def test_regex_filter_without_exclude_keeps_only_matching_events(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = netcat
        a1.sources.r1.port = 44444
        a1.sources.r1.channels = c1
        a1.sources.r1.interceptors = f
        a1.sources.r1.interceptors.f.type = regex_filter
        a1.sources.r1.interceptors.f.regex = ERROR|WARN
        a1.channels.c1.type = memory
    """)
    conn = _by_name(t)["a1-r1"]
    assert _apply(conn, _record(b"x WARN y")) is not None and _apply(conn, _record(b"INFO")) is None


MULTIPLEXING = """
    a1.sources = r1
    a1.sinks = k1 k2 k3
    a1.channels = c1 c2 c3
    a1.sources.r1.type = avro
    a1.sources.r1.port = 41414
    a1.sources.r1.channels = c1 c2 c3
    a1.sources.r1.selector.type = multiplexing
    a1.sources.r1.selector.header = state
    a1.sources.r1.selector.mapping.CZ = c1
    a1.sources.r1.selector.mapping.US = c2 c3
    a1.sources.r1.selector.default = c3
    a1.channels.c1.type = memory
    a1.channels.c2.type = memory
    a1.channels.c3.type = file
    a1.sinks.k1.type = logger
    a1.sinks.k1.channel = c1
    a1.sinks.k2.type = logger
    a1.sinks.k2.channel = c2
    a1.sinks.k3.type = logger
    a1.sinks.k3.channel = c3
"""


def test_a_multiplexing_selector_routes_by_header_as_flumes_does(tmp_path):
    t = _translate(tmp_path, MULTIPLEXING)
    assert t.problems == []
    sinks = _by_name(t)
    events = {"CZ": _record(b"1", state="CZ"), "US": _record(b"2", state="US"), "DE": _record(b"3", state="DE"),
              "none": _record(b"4")}
    kept = {name: sorted(k for k, r in events.items() if _apply(sinks[name], r) is not None)
            for name in ("a1-k1", "a1-k2", "a1-k3")}
    # c1 gets CZ; c2 gets US; c3 gets US and the default (what no mapping names, and no header)
    assert kept == {"a1-k1": ["CZ"], "a1-k2": ["US"], "a1-k3": ["DE", "US", "none"]}


def test_keys_it_cannot_honour_are_refused_naming_them(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1 r2
        a1.channels = c1
        a1.sources.r1.type = exec
        a1.sources.r1.channels = c1
        a1.sources.r1.charset = ISO-8859-1
        a1.sources.r2.type = netcat
        a1.sources.r2.port = 44444
        a1.sources.r2.channels = c1
        a1.sources.r2.interceptors = u
        a1.sources.r2.interceptors.u.type = uuid
        a1.sources.r2.selector.type = multiplexing
        a1.sources.r2.selector.mapping.X = c9
        a1.channels.c1.type = memory
    """)
    problems = "\n".join(t.problems)
    for key in ("a1.sources.r1.command = (missing)", "a1.sources.r1.charset = ISO-8859-1",
                "a1.sources.r2.interceptors.u.type = uuid", "a1.sources.r2.selector.mapping.X = c9: channel 'c9'"):
        assert key in problems, problems


# --- the hdfs sink ------------------------------------------------------------------------------------------

HDFS_GUIDE = """
    a1.sources = r1
    a1.channels = c1
    a1.sinks = k1
    a1.sources.r1.type = avro
    a1.sources.r1.bind = 0.0.0.0
    a1.sources.r1.port = 4141
    a1.sources.r1.channels = c1
    a1.channels.c1.type = memory
    # the User Guide's HDFS sink example
    a1.sinks.k1.type = hdfs
    a1.sinks.k1.channel = c1
    a1.sinks.k1.hdfs.path = /flume/events/%y-%m-%d/%H%M/%S
    a1.sinks.k1.hdfs.filePrefix = events-
    a1.sinks.k1.hdfs.round = true
    a1.sinks.k1.hdfs.roundValue = 10
    a1.sinks.k1.hdfs.roundUnit = minute
    a1.sinks.k1.hdfs.fileType = DataStream
"""


def _hdfs_translate(tmp_path: Path, text: str, default_fs: str | None = "hdfs://nn:8020"):
    conf = tmp_path / "flume.conf"
    conf.write_text(textwrap.dedent(text))
    return translate(load_config_file(str(conf)), "a1", tmp_path / "work", default_fs)


def _valid_hdfs_config(conn: dict[str, str]) -> None:
    """The derived config passes HdfsSparkSink's own checks (its ConfigDef, partitioner and template)."""
    from connect.api import AbstractConfig
    from spark_sinks.hdfs_config import hdfs_def
    from spark_sinks.path_template import PathTemplate

    config = AbstractConfig(hdfs_def(), conn)
    PathTemplate(str(config.get("path.template")))


def test_the_user_guides_hdfs_sink_becomes_an_hdfs_spark_sink_with_a_path_template(tmp_path):
    t = _hdfs_translate(tmp_path, HDFS_GUIDE)
    assert t.problems == []
    sink = _by_name(t)["a1-k1"]
    _valid_hdfs_config(sink)
    assert sink["connector.class"] == "HdfsSparkSink" and sink["topics"] == "a1.r1"
    assert sink["hdfs.url"] == "hdfs://nn:8020" and sink["format"] == "text"
    assert sink["path.template"] == "/flume/events/{time:yy}-{time:MM}-{time:dd}/{time:HH}{time:mm}/{time:ss}"
    # the time is the event's timestamp header, rounded down to 10 minutes
    assert sink["timestamp.extractor"] == "Header" and sink["timestamp.header"] == "timestamp"
    assert sink["timestamp.round.ms"] == "600000"
    host = socket.gethostname().split(".")[0]
    assert sink["file.prefix"] == f"events-.{host}." and sink["file.suffix"] == ""
    # the checkpoint stays with the agent's log; files in progress in a folder of this host and agent
    assert sink["checkpoint.location"] == str(tmp_path / "work" / "spark-checkpoints" / "a1-k1")
    assert sink["logs.dir"] == f"/tmp/headrace-flume/{host}/a1"


def test_a_full_url_header_escapes_local_time_codec_and_rolls(tmp_path):
    t = _hdfs_translate(tmp_path, HDFS_GUIDE.replace("/flume/events/%y-%m-%d/%H%M/%S",
                                                     "hdfs://other:9000/logs/%{app}/%Y%m%d/%[localhost]")
                        .replace("a1.sinks.k1.hdfs.fileType = DataStream", """
    a1.sinks.k1.hdfs.fileType = CompressedStream
    a1.sinks.k1.hdfs.codeC = gzip
    a1.sinks.k1.hdfs.useLocalTimeStamp = true
    a1.sinks.k1.hdfs.timeZone = Europe/Berlin
    a1.sinks.k1.hdfs.rollInterval = 5
    a1.sinks.k1.hdfs.rollCount = 5000
    a1.sinks.k1.hdfs.rollSize = 0
    a1.sinks.k1.hdfs.batchSize = 100
    a1.sinks.k1.hdfs.fileSuffix = .log.gz
    """), default_fs=None)
    assert t.problems == []
    sink = _by_name(t)["a1-k1"]
    _valid_hdfs_config(sink)
    assert sink["hdfs.url"] == "hdfs://other:9000"
    assert sink["path.template"] == "/logs/{header:app}/{time:yyyy}{time:MM}{time:dd}/" + socket.gethostname()
    assert sink["timestamp.extractor"] == "Wallclock" and sink["timezone"] == "Europe/Berlin"
    assert sink["compression"] == "gzip" and sink["file.suffix"] == ".log.gz"
    assert sink["rotate.interval.ms"] == "5000" and sink["flush.size"] == "5000"


def test_without_a_suffix_a_compressed_file_gets_the_codecs_extension_and_no_time_needs_no_header(tmp_path):
    t = _hdfs_translate(tmp_path, HDFS_GUIDE.replace("/flume/events/%y-%m-%d/%H%M/%S", "/flat/%{host}")
                        .replace("DataStream", "CompressedStream\na1.sinks.k1.hdfs.codeC = "
                                 "org.apache.hadoop.io.compress.BZip2Codec"))
    assert t.problems == []
    sink = _by_name(t)["a1-k1"]
    assert sink["file.suffix"] == ".bz2" and sink["compression"] == "bzip2"
    assert "timestamp.extractor" not in sink and sink["path.template"] == "/flat/{header:host}"


def test_hdfs_keys_it_cannot_honour_are_refused_one_line_each(tmp_path):
    t = _hdfs_translate(tmp_path, HDFS_GUIDE.replace("a1.sinks.k1.hdfs.fileType = DataStream", """
    a1.sinks.k1.hdfs.rollSize = 1024
    a1.sinks.k1.hdfs.codeC = lzo
    a1.sinks.k1.hdfs.roundValue = 7
    a1.sinks.k1.hdfs.filePrefix = ev-%H
    a1.sinks.k1.hdfs.kerberosPrincipal = flume/_HOST@EXAMPLE
    a1.sinks.k1.serializer = avro_event
    a1.sinks.k1.hdfs.pth = /typo
    """).replace("a1.sinks.k1.hdfs.filePrefix = events-\n", ""))
    problems = t.problems
    expected = ["a1.sinks.k1.hdfs.codeC = lzo: compressed SequenceFiles are not written",
                "a1.sinks.k1.hdfs.rollSize = 1024: files are sized by events",
                "a1.sinks.k1.hdfs.roundValue = 7: a divisor of 60",
                "a1.sinks.k1.hdfs.filePrefix = ev-%H: escapes",
                "a1.sinks.k1.hdfs.kerberosPrincipal = flume/_HOST@EXAMPLE: give Spark the Hadoop security",
                "a1.sinks.k1.serializer = avro_event: only TEXT",
                "a1.sinks.k1.hdfs.pth = /typo: not a key Headrace knows for a hdfs sink"]
    for line in expected:
        assert sum(p.startswith(line) for p in problems) == 1, (line, problems)
    assert len(problems) == len(expected), problems


def test_hdfs_paths_it_cannot_translate_are_refused_naming_the_escape(tmp_path):
    for path, reason in [("/x/%s", "the escape %s is not translated"), ("/x/%[host]", "%[host] is not one of"),
                         ("/x/{y}", "a literal '{'"), ("s3a://bucket/x", "an hdfs://host[:port]/path URL")]:
        t = _hdfs_translate(tmp_path, HDFS_GUIDE.replace("/flume/events/%y-%m-%d/%H%M/%S", path))
        assert [p for p in t.problems if reason in p and p.startswith("a1.sinks.k1.hdfs.path")], (path, t.problems)
    t = _hdfs_translate(tmp_path, HDFS_GUIDE, default_fs=None)
    assert any(p.startswith("a1.sinks.k1.hdfs.path = /flume/events/") and "--default-fs" in p for p in t.problems)


def test_the_default_fs_comes_from_hadoop_conf_dirs_core_site(tmp_path):
    from connect.flume.hdfs import default_fs_from_hadoop_conf

    (tmp_path / "core-site.xml").write_text("<configuration><property><name>fs.defaultFS</name>"
                                            "<value>hdfs://nn.example:8020</value></property></configuration>")
    assert default_fs_from_hadoop_conf({"HADOOP_CONF_DIR": str(tmp_path)}) == "hdfs://nn.example:8020"
    assert default_fs_from_hadoop_conf({}) is None


def test_the_user_guides_interceptor_examples_with_builder_classes_and_preserve_existing(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = http
        a1.sources.r1.port = 5140
        a1.sources.r1.channels = c1
        a1.sources.r1.interceptors = i1 i2 i3
        a1.sources.r1.interceptors.i1.type = org.apache.flume.interceptor.HostInterceptor$Builder
        a1.sources.r1.interceptors.i1.preserveExisting = false
        a1.sources.r1.interceptors.i1.hostHeader = hostname
        a1.sources.r1.interceptors.i2.type = org.apache.flume.interceptor.TimestampInterceptor$Builder
        a1.sources.r1.interceptors.i3.type = static
        a1.sources.r1.interceptors.i3.key = datacenter
        a1.sources.r1.interceptors.i3.value = NEW_YORK
        a1.channels.c1.type = memory
    """)
    assert t.problems == []
    source = _by_name(t)["a1-r1"]
    assert source["connector.class"] == "FlumeHttpSource"
    plain = _apply(source, _record(b"x"))
    assert plain.headers.last_with_name("datacenter").value == "NEW_YORK"
    assert plain.headers.last_with_name("hostname").value and plain.headers.last_with_name("timestamp").value
    # static's preserveExisting defaults to true in Flume: an event's own value stays, and is not doubled
    own = _apply(source, _record(b"y", datacenter="LONDON"))
    assert [h.value for h in own.headers if h.key == "datacenter"] == ["LONDON"]


def test_a_spooldir_source_becomes_a_spool_dir_source_with_flumes_keys(tmp_path):
    t = _translate(tmp_path, f"""
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = spooldir
        a1.sources.r1.channels = c1
        a1.sources.r1.spoolDir = {tmp_path}/spool
        a1.sources.r1.fileHeader = true
        a1.sources.r1.basenameHeader = true
        a1.sources.r1.basenameHeaderKey = name
        a1.sources.r1.deletePolicy = immediate
        a1.sources.r1.includePattern = ^.*\\\\.log$
        a1.sources.r1.ignorePattern = ^tmp
        a1.sources.r1.trackerDir = .flumespool
        a1.sources.r1.consumeOrder = youngest
        a1.sources.r1.inputCharset = ISO-8859-1
        a1.sources.r1.deserializer = LINE
        a1.sources.r1.deserializer.maxLineLength = 4096
        a1.channels.c1.type = file
    """)
    assert t.problems == []
    source = _by_name(t)["a1-r1"]
    from connect.api import AbstractConfig
    from plugins.flume.spooldir_source import CONFIG_DEF

    AbstractConfig(CONFIG_DEF, source)  # the derived config is one SpoolDirSource takes
    assert source["connector.class"] == "SpoolDirSource" and source["spool.dir"] == f"{tmp_path}/spool"
    assert source["file.header.key"] == "file" and source["basename.header.key"] == "name"
    assert source["delete.policy"] == "immediate" and source["include.pattern"] == r"^.*\.log$"
    assert source["ignore.pattern"] == "^tmp" and source["consume.order"] == "youngest"
    assert source["input.charset"] == "ISO-8859-1" and source["max.line.length"] == "4096"
    assert "file.suffix" not in source  # SpoolDirSource's default is Flume's .COMPLETED


def test_spooldir_keys_it_cannot_honour_are_refused(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sources.r1.type = spooldir
        a1.sources.r1.channels = c1
        a1.sources.r1.spoolDir = /var/spool
        a1.sources.r1.deserializer = AVRO
        a1.sources.r1.trackingPolicy = tracker_dir
        a1.sources.r1.recursiveDirectorySearch = true
        a1.sources.r1.deletePolicy = later
        a1.channels.c1.type = memory
    """)
    for line in ["a1.sources.r1.deserializer = AVRO: only LINE", "a1.sources.r1.trackingPolicy = tracker_dir",
                 "a1.sources.r1.recursiveDirectorySearch = true", "a1.sources.r1.deletePolicy = later"]:
        assert sum(p.startswith(line) for p in t.problems) == 1, (line, t.problems)
    assert len(t.problems) == 4


def test_a_kafka_sink_becomes_a_flume_kafka_sink_with_its_producer_settings(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sinks = k1
        a1.sources.r1.type = netcat
        a1.sources.r1.port = 44444
        a1.sources.r1.channels = c1
        a1.channels.c1.type = memory
        # the User Guide's Kafka sink example
        a1.sinks.k1.channel = c1
        a1.sinks.k1.type = org.apache.flume.sink.kafka.KafkaSink
        a1.sinks.k1.kafka.topic = mytopic
        a1.sinks.k1.kafka.bootstrap.servers = localhost:9092
        a1.sinks.k1.kafka.flumeBatchSize = 20
        a1.sinks.k1.kafka.producer.acks = 1
        a1.sinks.k1.kafka.producer.linger.ms = 1
        a1.sinks.k1.kafka.producer.compression.type = snappy
    """)
    assert t.problems == []
    t = _translate(tmp_path, (tmp_path / "flume.conf").read_text()
                   + "a1.sinks.k1.useFlumeEventFormat = true\na1.sinks.k1.partitionIdHeader = p\n")
    assert t.problems == []
    sink = _by_name(t)["a1-k1"]
    from connect.api import AbstractConfig
    from plugins.flume.kafka_sink import CONFIG_DEF

    AbstractConfig(CONFIG_DEF, sink)
    assert sink["connector.class"] == "FlumeKafkaSink" and sink["kafka.topic"] == "mytopic"
    assert sink["kafka.bootstrap.servers"] == "localhost:9092" and sink["kafka.producer.acks"] == "1"
    assert sink["kafka.producer.compression.type"] == "snappy" and sink["flume.event.format"] == "true"
    assert sink["partition.id.header"] == "p"
    assert sink["header.converter"] == "org.apache.kafka.connect.storage.StringConverter"


def test_java_only_producer_settings_are_refused_with_librdkafkas_name(tmp_path):
    t = _translate(tmp_path, """
        a1.sources = r1
        a1.channels = c1
        a1.sinks = k1
        a1.sources.r1.type = netcat
        a1.sources.r1.port = 44444
        a1.sources.r1.channels = c1
        a1.channels.c1.type = memory
        a1.sinks.k1.channel = c1
        a1.sinks.k1.type = kafka
        a1.sinks.k1.kafka.producer.max.request.size = 2000000
    """)
    assert t.problems == ["a1.sinks.k1.kafka.bootstrap.servers = (missing): a kafka sink needs the cluster's address",
                          "a1.sinks.k1.kafka.producer.max.request.size = 2000000: the Kafka client here (librdkafka) "
                          'refuses it: No such configuration property: "max.request.size"; its name for this is '
                          "message.max.bytes"], t.problems


TAILDIR_GUIDE = """
    # the User Guide's TAILDIR example (its last line names source ri, a typo, fixed here to r1)
    a1.sources = r1
    a1.channels = c1
    a1.sources.r1.type = TAILDIR
    a1.sources.r1.channels = c1
    a1.sources.r1.positionFile = {tmp}/taildir_position.json
    a1.sources.r1.filegroups = f1 f2
    a1.sources.r1.filegroups.f1 = {tmp}/test1/example.log
    a1.sources.r1.headers.f1.headerKey1 = value1
    a1.sources.r1.filegroups.f2 = {tmp}/test2/.*log.*
    a1.sources.r1.headers.f2.headerKey1 = value2
    a1.sources.r1.headers.f2.headerKey2 = value2-2
    a1.sources.r1.fileHeader = true
    a1.sources.r1.maxBatchCount = 1000
    a1.channels.c1.type = memory
"""


def test_the_user_guides_taildir_example_becomes_one_tail_dir_source_per_file_group(tmp_path):
    t = _translate(tmp_path, TAILDIR_GUIDE.format(tmp=tmp_path))
    assert t.problems == []
    f1, f2 = _by_name(t)["a1-r1-f1"], _by_name(t)["a1-r1-f2"]
    from connect.api import AbstractConfig
    from plugins.ingest.taildir import CONFIG_DEF

    for conn in (f1, f2):
        AbstractConfig(CONFIG_DEF, conn)
        assert conn["topic"] == "a1.r1" and conn["record.format"] == "line" and conn["file.header.key"] == "file"
    assert (f1["directory"], f1["file.pattern"]) == (f"{tmp_path}/test1", "example.log")
    assert (f2["directory"], f2["file.pattern"]) == (f"{tmp_path}/test2", "*log*")
    one = _apply(f1, _record(b"x"))
    assert {h.key: h.value for h in one.headers} == {"headerKey1": "value1"}
    two = _apply(f2, _record(b"x"))
    assert {h.key: h.value for h in two.headers} == {"headerKey1": "value2", "headerKey2": "value2-2"}


def test_keys_of_parts_not_listed_are_refused_as_typos(tmp_path):
    text = TAILDIR_GUIDE.format(tmp=tmp_path).replace("a1.sources.r1.maxBatchCount", "a1.sources.ri.maxBatchCount")
    t = _translate(tmp_path, text)
    assert t.problems == ["a1.sources.ri.maxBatchCount = 1000: 'ri' is not in a1.sources (r1): a typo, or a part to "
                          "list there"]


def test_flumes_default_file_type_is_a_sequence_file_of_writables_or_text(tmp_path):
    t = _hdfs_translate(tmp_path, HDFS_GUIDE.replace("a1.sinks.k1.hdfs.fileType = DataStream\n", ""))
    assert t.problems == []
    sink = _by_name(t)["a1-k1"]
    _valid_hdfs_config(sink)
    assert sink["format"] == "sequence" and sink["sequence.value"] == "bytes" and sink["file.suffix"] == ""
    t = _hdfs_translate(tmp_path, HDFS_GUIDE.replace("DataStream", "SequenceFile\na1.sinks.k1.hdfs.writeFormat = Text"))
    assert _by_name(t)["a1-k1"]["sequence.value"] == "text"
