"""``headrace flume-agent --conf-file flume.conf --name a1``: run a Flume agent's properties file on Headrace.

The command reads the agent file, has ``connect.flume.translate`` derive the connectors, and runs them on one
standalone worker (``connect.cli.standalone``) beside the agent's exec commands. ``--print-connectors``
prints the derived configs (JSON, one connector per object) and exits, for moving off the Flume format.

It reaches ``headrace`` through the ``headrace.commands`` entry point group (pyproject.toml), as a command
of another distribution would: ``connect.cli`` does not import this package.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect.cli.exit import CliError, fail
from connect.cli.standalone import StandaloneRuntime
from connect.flume.exec_sources import ExecCommands
from connect.flume.hdfs import default_fs_from_hadoop_conf
from connect.logging_setup import configure_logging
from connect.runtime.properties import load_config_file

__all__ = ["add_parser"]


def add_parser(sub: Any, name: str = "flume-agent") -> None:
    """Add the command to ``headrace``'s sub-commands (the ``headrace.commands`` entry point)."""
    p = sub.add_parser(name, help="run a Flume agent's properties file as Headrace connectors")
    p.add_argument("--conf-file", "-f", required=True, help="the Flume agent properties file")
    p.add_argument("--name", "-n", required=True, help="the agent's name in the file (a1 in a1.sources = ...)")
    p.add_argument("--print-connectors", action="store_true",
                   help="print the Headrace connector configs derived from the agent, then exit")
    p.add_argument("--work-dir", help="where the worker keeps its log and offsets (default ./headrace-flume-<name>)")
    p.add_argument("--default-fs", help="the HDFS of hdfs sink paths without hdfs://host:port (Hadoop's "
                   "fs.defaultFS; default: from $HADOOP_CONF_DIR/core-site.xml)")
    p.add_argument("-c", "--worker-config", help="a worker .properties file to start from (e.g. to run on Kafka)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(handler=_run)


def _load(path: str) -> dict[str, str]:
    try:
        return load_config_file(path)
    except Exception as exc:  # one line for the user, whatever the reader raised
        raise CliError(f"cannot read {path}: {exc}") from None


def _worker_props(args: argparse.Namespace, work: Path, spark: bool = False) -> dict[str, str]:
    from connect.flume.translate import BYTES  # start-up time: see _run

    props = {
        "embedded.log.dir": str(work / "data"),
        "offset.storage.file.filename": str(work / "connect.offsets"),
        "offset.flush.interval.ms": "1000",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": BYTES,
        "listeners": "",
    }
    if spark:
        props["task.shutdown.graceful.timeout.ms"] = "30000"  # a Spark query takes seconds to stop
    if args.worker_config:
        props.update(_load(args.worker_config))
    return props


def _write(path: Path, props: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{k}={_escape(v)}\n" for k, v in props.items()))
    return path


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _run(args: argparse.Namespace) -> int:
    # start-up time: `headrace` loads this module to build its parser whenever the command is not a built-in
    # one; the translation loads the Flume plugins (a fifth of a second or more), so only this command pays
    from connect.flume.translate import translate

    work = Path(args.work_dir or f"headrace-flume-{args.name}").resolve()
    default_fs = args.default_fs or default_fs_from_hadoop_conf()
    translation = translate(_load(args.conf_file), args.name, work, default_fs)
    if translation.problems:
        return fail("\nERROR ".join(f"{args.conf_file}: {p}" for p in translation.problems))
    if args.print_connectors:
        for conn in translation.connectors:
            print(json.dumps({"name": conn["name"], "config": conn}, indent=2))
        for command in translation.commands:
            print(json.dumps({"exec": command.source, "command": command.argv, "output": str(command.output)},
                             indent=2))
        return 0
    work.mkdir(parents=True, exist_ok=True)
    spark = any(c.get("connector.class") == "HdfsSparkSink" for c in translation.connectors)
    worker = _write(work / "worker.properties", _worker_props(args, work, spark))
    files = [str(_write(work / f"{c['name']}.properties", c)) for c in translation.connectors]
    configure_logging()
    runtime = StandaloneRuntime(str(worker), files)
    commands = ExecCommands(translation.commands)
    commands.start()
    try:
        return runtime.run()
    finally:
        commands.stop()
