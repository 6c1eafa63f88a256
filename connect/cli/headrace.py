"""``headrace``: topic admin, console producer/consumer, group offsets, log check/repair and the schema registry,
for either log backend; and the commands other packages add through the ``headrace.commands`` entry points
(``flume-agent``, from ``connect.flume``).

Each takes the worker config file (``-c``), so the same commands work on the
embedded log and on Kafka. Commands that only look open the embedded log
read-only, so they run beside a worker and never change a file; ``log
check`` and ``log repair`` are for the embedded log only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.errors import ConfigException, ConnectException
from connect.api.topic_partition import TopicPartition
from connect.cli import schema_registry
from connect.cli.bootstrap import worker_config_for_tools
from connect.cli.exit import EXIT_CONFIG, EXIT_RUNTIME, CliError, fail
from connect.log.api import LogError, NewTopic
from connect.logging_setup import configure_logging

__all__ = ["COMMAND_ENTRY_POINTS", "build_parser", "headrace_main"]

# the entry point group of the commands other packages add (flume-agent is one: pyproject.toml), as Flask's
# CLI loads ``flask.commands``; each names a callable ``(subparsers, name)`` that adds its sub-command, with
# a ``handler(args) -> int`` in the parser's defaults
COMMAND_ENTRY_POINTS = "headrace.commands"


def _props(args: argparse.Namespace) -> dict[str, str]:
    props = worker_config_for_tools(args.config, getattr(args, "bootstrap_server", None))
    if not props.get("bootstrap.servers") and args.log_dir:
        props["embedded.log.dir"] = args.log_dir
    return props


def _backend(args: argparse.Namespace, read_only: bool = False):  # a LogBackend
    """The log the worker config names; ``read_only`` for commands that only look (they run beside a worker)."""
    # start-up time, as for the embedded log's checker below: a backend loads only in the command that opens it
    from connect.log import open_log_backend

    return open_log_backend(_props(args), read_only=read_only)


def _common(p: argparse.ArgumentParser, kafka: bool = True) -> None:
    p.add_argument("-c", "--config", help="worker .properties file (bootstrap.servers or embedded.log.dir)")
    if kafka:
        p.add_argument("--bootstrap-server", help="Kafka brokers; overrides the worker config")
    p.add_argument("--log-dir", "--dir", dest="log_dir", help="embedded log directory when no Kafka is configured")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO")


def _parse_kv(items: list[str] | None, what: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise CliError(f"{what} '{item}' must be key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out


# --- topics -----------------------------------------------------------------------------------------------------------
def _topics_list(args: argparse.Namespace) -> int:
    backend = _backend(args, read_only=True)
    admin = backend.admin()
    try:
        for name in sorted(admin.list_topics(include_internal=args.include_internal)):
            print(name)
    finally:
        admin.close()
        backend.close()
    return 0


def _topics_describe(args: argparse.Namespace) -> int:
    backend = _backend(args, read_only=True)
    admin = backend.admin()
    try:
        names = [args.topic] if args.topic else sorted(admin.list_topics(include_internal=args.include_internal))
        for name in names:
            d = admin.describe_topic(name)
            configs = ",".join(f"{k}={v}" for k, v in sorted(d.configs.items()))
            print(f"Topic: {d.name}\tPartitionCount: {d.partitions}\tConfigs: {configs}")
            for p in range(d.partitions):
                start, end = d.offsets.get(p, (0, 0))
                print(f"\tTopic: {d.name}\tPartition: {p}\tStartOffset: {start}\tEndOffset: {end}")
                for gap in d.gaps.get(p, ()):
                    print(f"\tTopic: {d.name}\tPartition: {p}\tGap: offsets {gap.offsets_text()} lost to damage "
                          f"in segment {gap.segment} (moved to {gap.moved_to})")
    finally:
        admin.close()
        backend.close()
    return 0


def _topics_create(args: argparse.Namespace) -> int:
    backend = _backend(args)
    admin = backend.admin()
    try:
        admin.create_topic(NewTopic(args.topic, args.partitions, args.replication_factor,
                                    _parse_kv(args.topic_config, "--config-entry")), exist_ok=args.if_not_exists)
        print(f"Created topic {args.topic}.")
    finally:
        admin.close()
        backend.close()
    return 0


def _topics_delete(args: argparse.Namespace) -> int:
    backend = _backend(args)
    admin = backend.admin()
    try:
        admin.delete_topic(args.topic)
        print(f"Deleted topic {args.topic}.")
    finally:
        admin.close()
        backend.close()
    return 0


# --- console producer / consumer ------------------------------------------------------------------------------------------
def _console_producer(args: argparse.Namespace) -> int:
    props = _parse_kv(args.property, "--property")
    parse_key = props.get("parse.key", "false").lower() == "true"
    separator = props.get("key.separator", "\t")
    backend = _backend(args)
    producer = backend.producer({"acks": "all"})
    sent = 0
    try:
        for line in sys.stdin.buffer:
            line = line.rstrip(b"\n").rstrip(b"\r")
            key = None
            if parse_key:
                sep = separator.encode()
                if sep not in line:
                    print(f"ERROR No key separator found on line {sent + 1}: {line[:80]!r}", file=sys.stderr)
                    return 1
                key, line = line.split(sep, 1)
            producer.send(args.topic, line, key=key)
            sent += 1
            if sent % 10000 == 0:
                producer.poll(0)
        remaining = producer.flush(30.0)
        if remaining:
            print(f"ERROR {remaining} records were not acknowledged", file=sys.stderr)
            return 2
    finally:
        producer.close()
        backend.close()
    return 0


def _console_consumer(args: argparse.Namespace) -> int:
    props = _parse_kv(args.property, "--property")
    print_key = props.get("print.key", "false").lower() == "true"
    print_offset = props.get("print.offset", "false").lower() == "true"
    separator = props.get("key.separator", "\t")
    backend = _backend(args, read_only=True)
    config: Mapping[str, Any] = {"auto.offset.reset": "earliest" if args.from_beginning else "latest",
                                 "enable.auto.commit": "false", "isolation.level": args.isolation_level}
    consumer = backend.consumer(args.group, config)
    out = sys.stdout.buffer
    seen = 0
    try:
        if args.group:
            consumer.subscribe(topics=[args.topic])
        else:
            admin = backend.admin()
            try:
                partitions = admin.describe_topic(args.topic).partitions
            finally:
                admin.close()
            tps = [TopicPartition(args.topic, p) for p in range(partitions)]
            consumer.assign(tps)
            if args.from_beginning:
                consumer.seek_to_beginning(tps)
        idle_deadline = time.monotonic() + args.timeout_ms / 1000 if args.timeout_ms else None
        while args.max_messages is None or seen < args.max_messages:
            batches = consumer.poll(0.5, 5000)
            if not batches:
                if idle_deadline is not None and time.monotonic() > idle_deadline:
                    break
                continue
            if idle_deadline is not None:
                idle_deadline = time.monotonic() + args.timeout_ms / 1000
            offsets = {}
            for batch in batches:
                for rec in batch.records():
                    if args.max_messages is not None and seen >= args.max_messages:
                        break
                    prefix = b""
                    if print_offset:
                        prefix += f"{rec.partition}:{rec.offset}{separator}".encode()
                    if print_key:
                        prefix += (rec.key if rec.key is not None else b"null") + separator.encode()
                    out.write(prefix + (rec.value if rec.value is not None else b"null") + b"\n")
                    seen += 1
                    offsets[TopicPartition(rec.topic, rec.partition)] = rec.offset + 1
            out.flush()
            if args.group and offsets:
                consumer.commit(offsets)
        print(f"Processed a total of {seen} messages", file=sys.stderr)
    finally:
        consumer.close()
        backend.close()
    return 0


def _offsets(args: argparse.Namespace) -> int:
    backend = _backend(args, read_only=True)
    admin = backend.admin()
    try:
        offsets = admin.list_group_offsets(args.group)
        print(json.dumps({f"{tp.topic}-{tp.partition}": off for tp, off in sorted(offsets.items())}))
    finally:
        admin.close()
        backend.close()
    return 0


# --- log check / repair ------------------------------------------------------------------------------------------------
def _embedded_dir(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    props = _props(args)
    if props.get("bootstrap.servers"):
        raise CliError("log check and log repair work on the embedded log; this worker config uses Kafka")
    return os.path.abspath(props.get("embedded.log.dir") or "./headrace-data"), props


def _log_check(args: argparse.Namespace) -> int:
    from connect.log.embedded.check import check_log

    root, props = _embedded_dir(args)
    report = check_log(root, props)
    for found in report.damaged:
        d = found.damage
        print(f"{found.tp}: DAMAGED {found.segment} bytes {d.start}..{d.end - 1} ({d.length} bytes), "
              f"offsets {d.offsets_text()}")
    for gap in report.gaps:
        print(f"{gap.topic}-{gap.partition}: recorded gap: offsets {gap.offsets_text()} lost to damage in "
              f"segment {gap.segment} (moved to {gap.moved_to})")
    print(f"Checked {report.partitions} partition(s), {report.segments} segment(s), {report.batches} batch(es) "
          f"in {root}: {len(report.damaged)} damaged range(s)")
    if report.damaged:
        tps = sorted({str(f.tp) for f in report.damaged})
        print(f"Move the damage aside with 'headrace log repair' for {', '.join(tps)} while no worker runs",
              file=sys.stderr)
        return 1
    return 0


def _log_repair(args: argparse.Namespace) -> int:
    from connect.log.embedded.check import repair_partition

    root, props = _embedded_dir(args)
    gaps = repair_partition(root, props, args.topic, args.partition)
    tp = f"{args.topic}-{args.partition}"
    if not gaps:
        print(f"No damage found in {tp}")
    for gap in gaps:
        print(f"Repaired {tp}: offsets {gap.offsets_text()} lost; {gap.length} damaged bytes of segment "
              f"{gap.segment} moved to {os.path.join(root, tp, gap.moved_to)}")
    return 0


def build_parser(with_plugin_commands: bool = True) -> argparse.ArgumentParser:
    """The parser of ``headrace``: the built-in commands, and those of the ``headrace.commands`` entry
    points unless ``with_plugin_commands`` is false."""
    parser, sub = _built_in_commands()
    if with_plugin_commands:
        _add_plugin_commands(sub)
    return parser


def _built_in_commands() -> tuple[argparse.ArgumentParser, Any]:
    """The parser with the built-in commands, and its sub-parsers action (to add the others to)."""
    parser = argparse.ArgumentParser(prog="headrace", description="Headrace log tools.")
    sub = parser.add_subparsers(dest="command")

    topics = sub.add_parser("topics", help="list, describe, create or delete topics")
    tsub = topics.add_subparsers(dest="action")
    p = tsub.add_parser("list")
    _common(p)
    p.add_argument("--include-internal", action="store_true")
    p.set_defaults(handler=_topics_list)
    p = tsub.add_parser("describe")
    _common(p)
    p.add_argument("--topic")
    p.add_argument("--include-internal", action="store_true")
    p.set_defaults(handler=_topics_describe)
    p = tsub.add_parser("create")
    _common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--replication-factor", type=int, default=-1)
    p.add_argument("--topic-config", "--config-entry", action="append", help="topic config key=value")
    p.add_argument("--if-not-exists", action="store_true")
    p.set_defaults(handler=_topics_create)
    p = tsub.add_parser("delete")
    _common(p)
    p.add_argument("--topic", required=True)
    p.set_defaults(handler=_topics_delete)

    p = sub.add_parser("console-producer", help="send stdin lines to a topic")
    _common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--property", action="append", help="parse.key=true, key.separator=:")
    p.set_defaults(handler=_console_producer)

    p = sub.add_parser("console-consumer", help="print a topic's records")
    _common(p)
    p.add_argument("--topic", required=True)
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--group")
    p.add_argument("--max-messages", type=int)
    p.add_argument("--timeout-ms", type=int, help="exit after this long without records")
    p.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"), default="read_uncommitted",
                   help="read_committed: only records of committed transactions (and those written outside any); "
                        "read_uncommitted (default): every record")
    p.add_argument("--property", action="append", help="print.key=true, print.offset=true, key.separator=:")
    p.set_defaults(handler=_console_consumer)

    p = sub.add_parser("group-offsets", help="show a consumer group's committed offsets as JSON")
    _common(p)
    p.add_argument("--group", required=True)
    p.set_defaults(handler=_offsets)

    logp = sub.add_parser("log", help="check the embedded log's files or repair a damaged partition")
    lsub = logp.add_subparsers(dest="action")
    p = lsub.add_parser("check", help="verify every batch of every segment; exit 1 when any is damaged")
    _common(p, kafka=False)
    p.set_defaults(handler=_log_check)
    p = lsub.add_parser("repair", help="move a partition's damaged bytes aside (stop the worker first)")
    _common(p, kafka=False)
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, required=True)
    p.set_defaults(handler=_log_repair)

    schema_registry.add_parser(sub)
    return parser, sub


def _add_plugin_commands(sub: Any) -> None:
    """The commands of the ``headrace.commands`` entry points; one that cannot be loaded, or that would
    replace a built-in command, is left out with one WARNING line and the others still run."""
    from importlib.metadata import entry_points  # start-up time: a scan of every installed distribution

    seen: set[str] = set()
    for ep in entry_points(group=COMMAND_ENTRY_POINTS):
        if ep.name in seen:  # one distribution found twice on the path (an editable install and a copy)
            continue
        seen.add(ep.name)
        if ep.name in sub.choices:
            print(f"WARNING headrace command '{ep.name}' ({ep.value}) is not added: it is a built-in command",
                  file=sys.stderr)
            continue
        try:
            ep.load()(sub, ep.name)
        except Exception as exc:  # another distribution's code: its failure must not take headrace down
            print(f"WARNING headrace command '{ep.name}' ({ep.value}) cannot be loaded: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)


def _first_word(argv: Sequence[str]) -> str | None:
    return next((arg for arg in argv if not arg.startswith("-")), None)


def headrace_main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser, sub = _built_in_commands()
    # a built-in command runs without the entry point scan and the other commands' imports
    if _first_word(words) not in sub.choices:
        _add_plugin_commands(sub)
    args = parser.parse_args(words)
    configure_logging("WARNING" if not getattr(args, "verbose", False) else "INFO")
    if not hasattr(args, "handler"):
        parser.print_help()
        return EXIT_CONFIG
    try:
        return int(args.handler(args) or 0)
    except CliError as exc:
        return fail(str(exc))
    except (ConfigException, LogError, ConnectException, OSError) as exc:
        return fail(str(exc), EXIT_RUNTIME)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0

