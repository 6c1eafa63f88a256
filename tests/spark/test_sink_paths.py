"""Local paths and ``file:`` URLs of the Spark sinks' settings pass the worker's ``connector.allowed.paths``.

Without Spark: what validation (REST 400s, connector files) and the check before each task starts say.
HdfsSparkSink took ``hdfs.url=file:///etc/cron.d``, ``checkpoint.location=/etc/x`` and ``topics.dir``/``logs.dir``
below a ``file:`` URL outside the allowed directories, and its running task wrote there (issue #35).
"""

from __future__ import annotations

import pytest

from connect.api.errors import ConfigException
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.plugins import PluginRegistry
from connect.runtime.worker_config import StandaloneConfig

# no Spark session, broker or service of the session's: beside the services group
pytestmark = pytest.mark.beside_services


@pytest.fixture
def dirs(tmp_path):
    for name in ("allowed", "outside"):
        (tmp_path / name).mkdir()
    return tmp_path


@pytest.fixture
def validator(dirs) -> ConnectorConfigValidator:
    worker = StandaloneConfig({"key.converter": "StringConverter", "value.converter": "StringConverter",
                               "embedded.log.dir": str(dirs / "data"),
                               "offset.storage.file.filename": str(dirs / "connect.offsets"),
                               "connector.allowed.paths": str(dirs / "allowed")})
    return ConnectorConfigValidator.for_worker(PluginRegistry(), worker)


def _hdfs(**keys: str) -> dict[str, str]:
    return {"name": "h", "connector.class": "HdfsSparkSink", "topics": "t", **keys}


def _search(**keys: str) -> dict[str, str]:
    return {"name": "s", "connector.class": "ElasticsearchSparkSink", "topics": "t",
            "connection.url": "http://127.0.0.1:9200", **keys}


def _errors(validator: ConnectorConfigValidator, config: dict[str, str]) -> dict[str, list[str]]:
    return {name: cv.errors for name, cv in validator.validate(config).values.items() if cv.errors}


def test_local_targets_inside_the_allowed_directories_pass(validator, dirs):
    inside = dirs / "allowed"
    assert _errors(validator, _hdfs(**{"hdfs.url": f"file://{inside}/out", "topics.dir": "/topics",
                                       "logs.dir": "/logs", "checkpoint.location": str(inside / "ckpt"),
                                       "path.template": "/flume/{time:yy-MM-dd}/{header:host}"})) == {}
    assert _errors(validator, _hdfs(**{"hdfs.url": f"file:{inside}",
                                       "checkpoint.location": f"file://{inside}/ckpt"})) == {}
    assert _errors(validator, _search(**{"checkpoint.location": f"file:///{inside}/c"})) == {}


def test_hdfs_urls_are_not_local_paths(validator):
    config = _hdfs(**{"hdfs.url": "hdfs://127.0.0.1:8020", "topics.dir": "/etc/cron.d", "logs.dir": "/",
                      "checkpoint.location": "hdfs://127.0.0.1:8020/etc/x", "path.template": "/etc/{header:h}"})
    assert _errors(validator, config) == {}
    assert _errors(validator, _search(**{"checkpoint.location": "s3a://bucket/etc/x"})) == {}


@pytest.mark.parametrize(("key", "value", "local"), [
    ("hdfs.url", "file:///{outside}", "{outside}"),
    ("hdfs.url", "file:{outside}/x", "{outside}/x"),
    ("hdfs.url", "FILE://localhost{outside}", "{outside}"),
    ("hdfs.url", "file://{allowed}/..", "{root}"),
    # Hadoop's Path takes what follows the authority as the path, ? and # included
    ("hdfs.url", "file://{allowed}/x?/../../outside", "{outside}"),
    ("checkpoint.location", "{outside}/ckpt", "{outside}/ckpt"),
    ("checkpoint.location", "file://{outside}/ckpt", "{outside}/ckpt"),
    ("checkpoint.location", "{allowed}/../outside", "{outside}"),
    ("topics.dir", "/../outside", "{outside}"),
    ("logs.dir", "/../outside", "{outside}"),
])
def test_hdfs_sink_local_paths_outside_the_allow_list_are_refused(validator, dirs, key, value, local):
    def fill(text: str) -> str:
        return (text.replace("{outside}", str(dirs / "outside")).replace("{allowed}", str(dirs / "allowed"))
                .replace("{root}", str(dirs)))

    config = _hdfs(**{"hdfs.url": f"file://{dirs / 'allowed'}", key: fill(value)})
    errors = _errors(validator, config)
    assert list(errors) == [key], errors
    message = errors[key][0]
    assert "outside the directories this worker allows" in message and str(dirs / "allowed") in message
    assert fill(local) in message


def test_a_template_through_a_symlink_out_of_the_allow_list_is_refused(validator, dirs):
    (dirs / "allowed" / "link").symlink_to(dirs / "outside")
    errors = _errors(validator, _hdfs(**{"hdfs.url": f"file://{dirs / 'allowed'}",
                                         "path.template": "/link/{header:host}"}))
    assert list(errors) == ["path.template"] and str(dirs / "outside") in errors["path.template"][0]


def test_the_defaults_below_a_file_url_are_checked_too(validator, dirs):
    (dirs / "allowed" / "out").mkdir()
    (dirs / "allowed" / "out" / "topics").symlink_to(dirs / "outside")
    errors = _errors(validator, _hdfs(**{"hdfs.url": f"file://{dirs / 'allowed' / 'out'}"}))
    assert list(errors) == ["topics.dir"] and str(dirs / "outside") in errors["topics.dir"][0]


def test_search_sink_checkpoint_outside_the_allow_list_or_in_the_worker_state_is_refused(validator, dirs):
    errors = _errors(validator, _search(**{"checkpoint.location": f"file://{dirs / 'outside'}/c"}))
    assert list(errors) == ["checkpoint.location"]
    state = _errors(validator, _search(**{"checkpoint.location": str(dirs / "data" / "streaming-state" / "x")}))
    assert "the worker's embedded log directory" in state["checkpoint.location"][0]


def test_a_path_swapped_for_a_symlink_after_validation_fails_the_task(validator, dirs):
    out = dirs / "allowed" / "out"
    out.mkdir()
    config = _hdfs(**{"hdfs.url": f"file://{out}"})
    assert _errors(validator, config) == {}
    validator.check_task_paths(config, config)
    out.rmdir()
    out.symlink_to(dirs / "outside")
    with pytest.raises(ConfigException, match="hdfs.url.*outside the directories"):
        validator.check_task_paths(config, config)


@pytest.mark.parametrize("name", [".", ".."])
def test_a_connector_named_dot_or_dotdot_is_refused(validator, dirs, name):
    """The name is a folder of the sinks' checkpoints (<logs.dir>/<name>, <streaming.state.dir>/<name>): with
    ``..`` and logs.dir=/ the checkpoint went one folder above hdfs.url."""
    errors = _errors(validator, _hdfs(**{"name": name, "hdfs.url": f"file://{dirs / 'allowed'}", "logs.dir": "/"}))
    assert list(errors) == ["name"] and "must not be . or .." in errors["name"][0]
