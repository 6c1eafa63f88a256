"""A Flume ``hdfs`` sink as an HdfsSparkSink connector: its path escapes, time and file settings.

``hdfs.path`` becomes the sink's ``path.template``: Flume's time escapes (``%Y %y %m %d %H %M %S`` and the
other strftime-like ones Flume documents) become ``{time:PATTERN}`` pieces, ``%{name}`` a ``{header:name}``
piece, and ``%[localhost]``, ``%[IP]``, ``%[FQDN]`` this machine's name or address. The record time is the
``timestamp`` header (as in Flume, where a timestamp interceptor or the client sets it), or the wall clock
with ``hdfs.useLocalTimeStamp``; ``hdfs.round*`` round it down as Flume does. Files are Hadoop SequenceFiles
of the event time and body (``SequenceFile``, Flume's default), or text, each body a line (``DataStream``),
optionally compressed (``CompressedStream`` with ``hdfs.codeC``), named
``<filePrefix>.<host>.<topic>+<partition>+<first offset>+<last offset><fileSuffix>``: the offsets in the
name make them exactly once, where Flume's counter made them unique; the host keeps agents of one name on
several machines apart. The query's checkpoint is kept in the agent's work directory, beside the log.

Roll settings: HdfsSparkSink commits a file per micro-batch and folder, so ``hdfs.rollInterval`` is the
micro-batch interval and ``hdfs.rollCount`` the most records a micro-batch (hence a file) takes. A file
may hold fewer events than Flume would have put in it, never more. Sizes in bytes (``hdfs.rollSize``)
cannot be honoured and are refused.
"""

from __future__ import annotations

import os
import re
import socket
import xml.etree.ElementTree as ElementTree
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

__all__ = ["default_fs_from_hadoop_conf", "hdfs_sink", "path_template"]

# Flume's escapes that are one field of the time, as Java/Spark date patterns
_TIME_ESCAPES = {
    "Y": "yyyy", "y": "yy", "m": "MM", "d": "dd", "e": "d", "H": "HH", "k": "H", "I": "hh", "l": "h",
    "M": "mm", "S": "ss", "p": "a", "j": "DDD", "b": "MMM", "h": "MMM", "B": "MMMM", "a": "EEE", "A": "EEEE",
}
_ROUND_UNITS = {"second": (1000, 60), "minute": (60_000, 60), "hour": (3_600_000, 24)}
# Flume's codecs (short names and Hadoop class names) -> HdfsSparkSink's compression
_CODECS = {"gzip": "gzip", "gzipcodec": "gzip", "bzip2": "bzip2", "bzip2codec": "bzip2", "snappy": "snappy",
           "snappycodec": "snappy", "default": "deflate", "defaultcodec": "deflate", "deflate": "deflate",
           "lz4": "lz4", "lz4codec": "lz4"}
_CODEC_EXTENSIONS = {"gzip": ".gz", "bzip2": ".bz2", "snappy": ".snappy", "deflate": ".deflate", "lz4": ".lz4"}
# tuning of Flume's own writer threads and in-progress files: Spark and the +tmp folder take their place
_WRITER_KEYS = ("hdfs.batchSize", "hdfs.idleTimeout", "hdfs.callTimeout", "hdfs.threadsPoolSize",
                "hdfs.rollTimerPoolSize", "hdfs.maxOpenFiles", "hdfs.minBlockReplicas", "hdfs.retryInterval",
                "hdfs.closeTries", "hdfs.inUsePrefix", "hdfs.inUseSuffix", "hdfs.emptyInUseSuffix")


class SinkKeys(Protocol):
    """What the translator's component gives this module: keys read (and so marked), refusals."""

    prefix: str

    def get(self, key: str, default: str | None = None) -> str | None: ...

    def accept(self, *keys: str) -> None: ...


Refuse = Callable[[str, str, str], None]


def _short_host() -> str:
    """This machine's name as a file name part (in the names of files, so agents of one name on several
    machines never write the same file name, which the sink would take for already committed)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname().split(".")[0]) or "host"


def _host_escape(name: str) -> str:
    host = socket.gethostname()
    if name == "localhost":
        return host
    if name == "FQDN":
        return socket.getfqdn(host)
    try:
        return socket.gethostbyname(host)
    except OSError:
        return "127.0.0.1"


def path_template(path: str) -> tuple[str, bool]:
    """(HdfsSparkSink's template, whether it uses the time) for the path part of ``hdfs.path``; raises
    ValueError naming the escape it cannot translate."""
    out: list[str] = []
    uses_time = False
    i = 0
    while i < len(path):
        ch = path[i]
        if ch in "{}":
            raise ValueError(f"a literal {ch!r} in a path is not translated")
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        nxt = path[i + 1:i + 2]
        if nxt == "{":
            end = path.find("}", i)
            if end < 0 or end == i + 2:
                raise ValueError(f"%{{ at {i} has no header name and closing }}")
            out.append("{header:" + path[i + 2:end] + "}")
            i = end + 1
        elif nxt == "[":
            end = path.find("]", i)
            name = path[i + 2:end] if end > 0 else ""
            if name not in ("localhost", "IP", "FQDN"):
                raise ValueError(f"%[{name}] is not one of %[localhost], %[IP], %[FQDN]")
            out.append(_host_escape(name))
            i = end + 1
        elif nxt == "%":
            out.append("%")
            i += 2
        elif nxt in _TIME_ESCAPES:
            out.append("{time:" + _TIME_ESCAPES[nxt] + "}")
            uses_time = True
            i += 2
        else:
            raise ValueError(f"the escape %{nxt} is not translated (HdfsSparkSink formats "
                             f"%{' %'.join(sorted(_TIME_ESCAPES))}, %{{header}} and %[localhost|IP|FQDN])")
    return "".join(out), uses_time


def default_fs_from_hadoop_conf(env: os._Environ[str] | dict[str, str] | None = None) -> str | None:
    """``fs.defaultFS`` from ``$HADOOP_CONF_DIR/core-site.xml``, where Flume's HDFS sink finds it."""
    env = os.environ if env is None else env
    conf = env.get("HADOOP_CONF_DIR")
    if not conf:
        return None
    site = Path(conf) / "core-site.xml"
    try:
        root = ElementTree.parse(site).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    for prop in root.iter("property"):
        if (prop.findtext("name") or "").strip() == "fs.defaultFS":
            return (prop.findtext("value") or "").strip() or None
    return None


def _local_zone() -> str:
    """The machine's IANA time zone, which Flume's escapes use by default (the JVM's zone)."""
    tz = os.environ.get("TZ", "").lstrip(":")
    candidates = [tz] if tz else []
    try:
        link = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in link:
            candidates.append(link.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        try:
            zoneinfo.ZoneInfo(name)
            return name
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            continue
    return "UTC"


def _whole(c: SinkKeys, refuse: Refuse, key: str, default: str) -> int:
    value = c.get(key, default) or default
    if not (value.strip().isascii() and value.strip().isdigit()):
        refuse(c.prefix + key, value, "a whole number")
        return int(default)
    return int(value)


def hdfs_sink(c: SinkKeys, conn: dict[str, str], refuse: Refuse, default_fs: str | None, work: Path,
              agent: str) -> None:
    """Fill ``conn`` (a sink connector config) from the keys of a Flume ``hdfs`` sink of ``agent``, whose
    worker keeps its state in ``work``."""
    conn["connector.class"] = "HdfsSparkSink"
    conn["format"] = "text"
    # Agents of one name on many machines (a1, k1 ...) share an HDFS: the query's checkpoint stays with the
    # log it reads, and the files in progress live in a folder of this host and agent
    conn["checkpoint.location"] = str(work / "spark-checkpoints" / conn["name"])
    conn["logs.dir"] = f"/tmp/headrace-flume/{_short_host()}/{agent}"
    _path(c, conn, refuse, default_fs)
    _file_type(c, conn, refuse)
    _file_names(c, conn, refuse)
    _rolls(c, conn, refuse)
    zone = c.get("hdfs.timeZone")
    if zone:
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            refuse(c.prefix + "hdfs.timeZone", zone, "not a time zone name (e.g. Europe/Berlin)")
    conn["timezone"] = zone or _local_zone()
    for key in ("hdfs.kerberosPrincipal", "hdfs.kerberosKeytab", "hdfs.proxyUser"):
        value = c.get(key)
        if value:
            refuse(c.prefix + key, value, "give Spark the Hadoop security settings instead (spark.hadoop.* keys "
                   "on the connector from --print-connectors, or the worker's Hadoop config)")
    c.accept(*_WRITER_KEYS)


def _path(c: SinkKeys, conn: dict[str, str], refuse: Refuse, default_fs: str | None) -> None:
    path = (c.get("hdfs.path") or "").strip()
    if not path:
        refuse(c.prefix + "hdfs.path", "(missing)", "an hdfs sink needs hdfs.path")
        return
    parsed = urlparse(path)
    if parsed.scheme:
        if parsed.scheme not in ("hdfs", "webhdfs", "viewfs") or not parsed.netloc:
            refuse(c.prefix + "hdfs.path", path, "an hdfs://host[:port]/path URL or an absolute path")
            return
        conn["hdfs.url"] = f"{parsed.scheme}://{parsed.netloc}"
        folder = parsed.path or "/"
    else:
        if not default_fs:
            refuse(c.prefix + "hdfs.path", path, "a path without hdfs://host:port needs the default file system: "
                   "pass --default-fs hdfs://namenode:8020 or set HADOOP_CONF_DIR to a folder whose core-site.xml "
                   "has fs.defaultFS")
            return
        conn["hdfs.url"] = default_fs.rstrip("/")
        folder = path
    if not folder.startswith("/"):
        refuse(c.prefix + "hdfs.path", path, "an absolute path (starting with /)")
        return
    try:
        template, uses_time = path_template(folder)
    except ValueError as exc:
        refuse(c.prefix + "hdfs.path", path, str(exc))
        return
    conn["path.template"] = template
    local = (c.get("hdfs.useLocalTimeStamp", "false") or "false").lower() == "true"
    if uses_time:
        if local:
            conn["timestamp.extractor"] = "Wallclock"
        else:
            conn["timestamp.extractor"] = "Header"
            conn["timestamp.header"] = "timestamp"
    if (c.get("hdfs.round", "false") or "false").lower() == "true":
        unit = c.get("hdfs.roundUnit", "second") or "second"
        if unit not in _ROUND_UNITS:
            refuse(c.prefix + "hdfs.roundUnit", unit, "second, minute or hour")
            return
        value = _whole(c, refuse, "hdfs.roundValue", "1")
        ms, whole = _ROUND_UNITS[unit]
        if value < 1 or whole % value:
            refuse(c.prefix + "hdfs.roundValue", str(value), f"a divisor of {whole} for roundUnit = {unit} "
                   "(rounding is translated to multiples of it since midnight)")
            return
        conn["timestamp.round.ms"] = str(value * ms)
    else:
        c.accept("hdfs.roundUnit", "hdfs.roundValue")


def _file_type(c: SinkKeys, conn: dict[str, str], refuse: Refuse) -> None:
    kind = c.get("hdfs.fileType", "SequenceFile") or "SequenceFile"
    codec = c.get("hdfs.codeC")
    serializer = c.get("serializer", "TEXT") or "TEXT"
    if serializer.upper() != "TEXT":
        refuse(c.prefix + "serializer", serializer, "only TEXT (each body as a line) is written")
    newline = c.get("serializer.appendNewline", "true") or "true"
    if newline.lower() != "true":
        refuse(c.prefix + "serializer.appendNewline", newline, "each body is written as a line, with its newline")
    write_format = c.get("hdfs.writeFormat", "Writable") or "Writable"  # only SequenceFiles use it
    if kind == "SequenceFile":
        if write_format not in ("Writable", "Text"):
            refuse(c.prefix + "hdfs.writeFormat", write_format, "Writable (BytesWritable bodies) or Text")
        if codec:
            refuse(c.prefix + "hdfs.codeC", codec, "compressed SequenceFiles are not written; use hdfs.fileType = "
                   "CompressedStream for compressed files, or leave the SequenceFile uncompressed")
        conn["format"] = "sequence"
        conn["sequence.value"] = "text" if write_format == "Text" else "bytes"
    elif kind == "DataStream":
        if codec:
            refuse(c.prefix + "hdfs.codeC", codec, "a DataStream is not compressed; use hdfs.fileType = "
                   "CompressedStream with it")
    elif kind == "CompressedStream":
        name = _CODECS.get((codec or "").rsplit(".", 1)[-1].lower())
        if name is None:
            refuse(c.prefix + "hdfs.codeC", codec or "(missing)", "CompressedStream needs a codec Spark writes "
                   "without native libraries: gzip, bzip2, snappy, lz4 or DefaultCodec (lzo and lzop are not "
                   "part of Hadoop)")
            return
        conn["compression"] = name
    else:
        refuse(c.prefix + "hdfs.fileType", kind, "SequenceFile, DataStream or CompressedStream")


def _file_names(c: SinkKeys, conn: dict[str, str], refuse: Refuse) -> None:
    prefix = c.get("hdfs.filePrefix", "FlumeData") or "FlumeData"
    if "%" in prefix or "/" in prefix or "+" in prefix:
        refuse(c.prefix + "hdfs.filePrefix", prefix, "escapes, / and + are not translated in the file prefix; put "
               "escapes in hdfs.path")
    else:
        conn["file.prefix"] = f"{prefix}.{_short_host()}."
    suffix = c.get("hdfs.fileSuffix", "") or ""
    if "%" in suffix or "/" in suffix or "+" in suffix:
        refuse(c.prefix + "hdfs.fileSuffix", suffix, "escapes, / and + are not translated in the file suffix")
        return
    # as Flume: the suffix if given, else the codec's extension
    conn["file.suffix"] = suffix or _CODEC_EXTENSIONS.get(conn.get("compression", ""), "")


def _rolls(c: SinkKeys, conn: dict[str, str], refuse: Refuse) -> None:
    if c.get("hdfs.rollInterval") is not None:
        seconds = _whole(c, refuse, "hdfs.rollInterval", "30")
        if seconds > 0:
            conn["rotate.interval.ms"] = str(seconds * 1000)
    if c.get("hdfs.rollCount") is not None:
        count = _whole(c, refuse, "hdfs.rollCount", "10")
        if count > 0:
            conn["flush.size"] = str(count)
    size = c.get("hdfs.rollSize")
    if size is not None and size.strip() != "0":
        refuse(c.prefix + "hdfs.rollSize", size, "files are sized by events (hdfs.rollCount) and time "
               "(hdfs.rollInterval), not bytes; set hdfs.rollSize = 0")
