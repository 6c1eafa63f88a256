"""What a worker imports to start (issue #37: start-up cost).

A standalone worker with the two shipped file connectors and its REST API must not pay, at every start, for
libraries only other plugins or endpoints use: the Redis client (plugins/redis), the Kafka client of the
Flume Kafka sink, prometheus_client (GET /metrics) and httpx's command line (rich, pygments). Each
cost a twentieth to a tenth of a CPU-second of every start, and the fast suite starts hundreds of workers.
The worker runs in a process of its own, as connect-standalone runs it, up to the moment it is ready.

The REST front process (rest.separate.process, the default) is a fork of the worker made before the worker
has threads: as ``python -m rest.front`` it cost a new interpreter and a second import of Flask and httpx,
about half a CPU-second of every start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import RestWorker, free_port, write_properties

_START_AND_LIST_MODULES = """
import json, sys
from connect.cli import standalone_main  # the console script's own import: what every start pays
from connect.cli.standalone import StandaloneRuntime
from connect.logging_setup import configure_logging

configure_logging()
runtime = StandaloneRuntime(sys.argv[1], sys.argv[2:])
try:
    runtime.start()
    assert runtime.herder.is_ready()
    loaded = sorted(name for name, module in sys.modules.items() if module is not None)
finally:
    runtime.shutdown()
print(json.dumps(loaded))
"""

# a started worker must not have imported these (only a connector, converter or endpoint that uses them does)
_NOT_AT_START = ("redis", "confluent_kafka", "prometheus_client", "rich", "httpx._main")


def test_a_file_pipeline_worker_starts_without_unused_heavy_libraries(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("one\n")
    worker = write_properties(tmp_path / "worker.properties", {
        "embedded.log.dir": tmp_path / "data",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "offset.storage.file.filename": tmp_path / "data" / "connect.offsets",
        "listeners": f"http://127.0.0.1:{free_port()}",
        "connector.allowed.paths": tmp_path,
    })
    source = write_properties(tmp_path / "source.properties", {
        "name": "local-file-source", "connector.class": "FileStreamSource", "tasks.max": 1,
        "file": tmp_path / "in.txt", "topic": "connect-test"})
    sink = write_properties(tmp_path / "sink.properties", {
        "name": "local-file-sink", "connector.class": "FileStreamSink", "tasks.max": 1,
        "file": tmp_path / "out.txt", "topics": "connect-test"})
    # -P: the temporary directory, which holds the connectors' files, is not on the import path
    done = subprocess.run([sys.executable, "-P", "-c", _START_AND_LIST_MODULES, str(worker), str(source), str(sink)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    # it did start its REST API; whether it imported every plugin module depends on the plugin index (a current
    # index means no plugin is imported until used), so that is not asked here
    assert "flask" in loaded
    heavy = sorted(name for name in loaded if name in _NOT_AT_START or name.split(".")[0] in _NOT_AT_START)
    assert heavy == [], f"imported at start-up though nothing running uses them: {heavy}"


# measured on the 2-core machine: about 0.5 CPU-s as ``python -m rest.front``, 0.13-0.15 as a fork; CPU time is
# the process's own, so the machine's load moves it little
FRONT_START_CPU_BOUND_S = 0.3


def test_the_rest_front_process_costs_little_cpu_to_start(tmp_path: Path) -> None:
    worker = RestWorker(tmp_path, rest_separate_process="true").start()  # returns once /health answers 200
    try:
        assert worker.proc is not None and worker.proc.proc is not None
        pid = worker.proc.proc.pid
        children = [child for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                    # the task hosts' fork server (connect.runtime.host_forkserver) is the worker's other child
                    if Path(f"/proc/{child}/comm").read_text().strip() != "task-host-fork"]
        assert len(children) == 1, children  # the front
        fields = Path(f"/proc/{children[0]}/stat").read_text().rsplit(")", 1)[1].split()
        # utime + stime, and what children it waited for used (none expected)
        cpu = sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        assert cpu < FRONT_START_CPU_BOUND_S, f"the REST front process took {cpu:.2f} CPU-s to start"
    finally:
        worker.stop()
