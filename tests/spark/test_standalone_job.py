"""``python -m spark_sinks``: a sink job run by the runtime's own Worker, no Spark needed to check its wiring.

The connector here is a plugin that records what its task was given (loaded
from the worker's ``plugin.path``), so the checks are on what the runtime
hands a streaming task under the standalone runner.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support import free_port, run_cli, write_properties

# the job runs in a worker of the test's own, without Spark: beside the services group
pytestmark = pytest.mark.beside_services

RECORDING_PLUGIN = '''
import json

from connect.api import ConfigDef, SinkConnector, StreamingSinkTask


class RecordingSink(SinkConnector):
    def version(self):
        return "1"

    def config(self):
        return ConfigDef()

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return RecordingTask

    def task_configs(self, max_tasks):
        return [dict(self.props)]

    def stop(self):
        pass


class RecordingTask(StreamingSinkTask):
    def version(self):
        return "1"

    def start(self, props):
        self.path = props["record.to"]

    def run(self):
        seen = {"log_settings": dict(self.context.log_settings()), "state_dir": self.context.state_dir(),
                "dlq": self.context.dead_letter_queue() is not None}
        with open(self.path, "w") as fh:
            json.dump(seen, fh)

    def stop(self):
        pass
'''


def _job(tmp_path: Path, worker: dict[str, object], **connector: object) -> tuple[int, str, dict]:
    plugins = tmp_path / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "recording_sink.py").write_text(RECORDING_PLUGIN)
    record = tmp_path / "seen.json"
    worker_file = write_properties(tmp_path / "worker.properties", {"plugin.path": plugins, **worker})
    connector_file = write_properties(tmp_path / "job.properties", {
        "name": "job", "connector.class": "recording_sink.RecordingSink", "topics": "t", "record.to": record,
        **connector})
    done = run_cli([Path(sys.executable).name, "-m", "spark_sinks", str(connector_file), "--worker",
                    str(worker_file)], cwd=tmp_path)
    seen = json.loads(record.read_text()) if record.exists() else {}
    return done.returncode, done.stderr.decode(), seen


def test_consumer_prefixed_security_keys_reach_the_task_log_settings(tmp_path: Path) -> None:
    # an unreachable Kafka: the job's wiring is checked, nothing is read
    servers = f"127.0.0.1:{free_port()}"
    code, err, seen = _job(tmp_path, {
        "bootstrap.servers": servers, "security.protocol": "SASL_PLAINTEXT",
        "consumer.sasl.mechanism": "PLAIN", "consumer.sasl.username": "reader",
        "consumer.sasl.password": "secret", "consumer.ssl.endpoint.identification.algorithm": "none",
        "consumer.max.poll.records": "10", "streaming.state.dir": tmp_path / "state"})
    assert code == 0, err
    assert seen["log_settings"] == {
        "bootstrap.servers": servers, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": "reader", "sasl.password": "secret", "ssl.endpoint.identification.algorithm": "none"}
    assert seen["state_dir"] == str(tmp_path / "state" / "job") and not seen["dlq"]


def test_embedded_log_dead_letter_queue_and_invalid_config(tmp_path: Path) -> None:
    code, err, seen = _job(tmp_path, {"embedded.log.dir": tmp_path / "data"},
                           **{"errors.deadletterqueue.topic.name": "dlq",
                              "errors.deadletterqueue.topic.replication.factor": 1})
    assert code == 0, err
    assert seen["log_settings"] == {"embedded.log.dir": str(tmp_path / "data")} and seen["dlq"]
    assert (tmp_path / "data" / "dlq.json").exists()  # the worker made the DLQ topic, as for any sink

    # validated as connect-standalone does: each problem one line naming the file and the key, no trace
    code, err, _ = _job(tmp_path, {}, topics="", **{"errors.tolerance": "most"})
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("ERROR")]
    assert any(line.endswith("job.properties: Must configure one of topics or topics.regex") for line in lines)
    assert any("job.properties: Invalid value 'most' for configuration errors.tolerance" in line for line in lines)
    assert len(lines) == 2 and "Traceback" not in err
