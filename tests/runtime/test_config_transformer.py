import pytest

from connect.api.errors import ConfigException
from connect.runtime.config_transformer import ConfigTransformer
from connect.runtime.plugins import PluginRegistry
from connect.runtime.worker_config import WorkerConfig


def worker(settings: dict[str, str]) -> WorkerConfig:
    return WorkerConfig({"key.converter": "StringConverter", "value.converter": "StringConverter",
                         **settings})


@pytest.fixture(scope="module")
def plugins():
    return PluginRegistry()


def test_file_and_env_references(tmp_path, monkeypatch, plugins):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("db.password=s3cr3t\n")
    monkeypatch.setenv("HEADRACE_TEST_USER", "alice")
    transformer = ConfigTransformer(plugins, worker({"config.providers": "file,env"}))
    out = transformer.transform({
        "password": f"${{file:{secrets}:db.password}}",
        "user": "${env:HEADRACE_TEST_USER}",
        "plain": "x",
        "unknown": "${vault:a:b}",
    })
    assert out == {"password": "s3cr3t", "user": "alice", "plain": "x", "unknown": "${vault:a:b}"}


def test_missing_key_names_config_key(tmp_path, plugins):
    secrets = tmp_path / "s.properties"
    secrets.write_text("a=1\n")
    transformer = ConfigTransformer(plugins, worker({"config.providers": "file"}))
    with pytest.raises(ConfigException) as err:
        transformer.transform({"conn.password": f"${{file:{secrets}:b}}"})
    assert "conn.password" in str(err.value) and "'b'" in str(err.value)


def test_no_provider_unless_the_worker_names_it(tmp_path, monkeypatch, plugins):
    secrets = tmp_path / "s.properties"
    secrets.write_text("pw=s3cr3t\n")
    monkeypatch.setenv("HEADRACE_TEST_SECRET", "from-env")
    config = {"a": f"${{file:{secrets}:pw}}", "b": "${env:HEADRACE_TEST_SECRET}", "c": f"${{directory:{tmp_path}:x}}"}
    assert ConfigTransformer(plugins, worker({})).transform(config) == config
    only_env = ConfigTransformer(plugins, worker({"config.providers": "env"})).transform(config)
    assert only_env == {**config, "b": "from-env"}


def test_allowed_paths_confine_the_file_and_directory_providers(tmp_path, plugins):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "ok.properties").write_text("pw=fine\n")
    (allowed / "token").write_text("tok-123")
    outside = tmp_path / "outside.properties"
    outside.write_text("pw=stolen\n")
    (allowed / "link.properties").symlink_to(outside)
    transformer = ConfigTransformer(plugins, worker({
        "config.providers": "file,directory",
        "config.providers.file.param.allowed.paths": str(allowed),
        "config.providers.directory.param.allowed.paths": str(allowed),
    }))
    assert transformer.transform({"a": f"${{file:{allowed}/ok.properties:pw}}"}) == {"a": "fine"}
    assert transformer.transform({"a": f"${{directory:{allowed}:token}}"}) == {"a": "tok-123"}
    for reference in (f"${{file:{outside}:pw}}", f"${{file:{allowed}/../outside.properties:pw}}",
                      f"${{file:{allowed}/link.properties:pw}}", f"${{directory:{tmp_path}:outside.properties}}"):
        with pytest.raises(ConfigException) as err:
            transformer.transform({"a": reference})
        assert "allowed.paths" in str(err.value) and "stolen" not in str(err.value), reference
    # a key of the directory provider is a file name in the folder, never a path out of it
    with pytest.raises(ConfigException):
        transformer.transform({"a": f"${{directory:{allowed}:../outside.properties}}"})


def test_relative_allowed_paths_are_refused(plugins):
    with pytest.raises(ConfigException) as err:
        ConfigTransformer(plugins, worker({"config.providers": "file",
                                           "config.providers.file.param.allowed.paths": "rel"}))
    assert "absolute" in str(err.value)


def test_task_configs_get_their_references_back_and_values_are_redacted(tmp_path, plugins):
    secrets = tmp_path / "s.properties"
    secrets.write_text("pw=s3cr3t-value\n")
    transformer = ConfigTransformer(plugins, worker({"config.providers": "file"}))
    raw = {"connection.password": f"${{file:{secrets}:pw}}", "topic": "t"}
    resolved = transformer.transform(raw)
    tasks = [{"connection.password": resolved["connection.password"], "copied": resolved["connection.password"],
              "url": f"db://bob:{resolved['connection.password']}@host", "topic": "t", "task.class": "X"}]
    stored = transformer.reverse(raw, tasks)
    assert stored == [{"connection.password": raw["connection.password"], "copied": raw["connection.password"],
                       "url": f"db://bob:{raw['connection.password']}@host", "topic": "t", "task.class": "X"}]
    assert transformer.transform(stored[0]) == tasks[0], "the task resolves what was stored to what it was given"
    assert transformer.redact("login failed for s3cr3t-value!") == "login failed for [hidden]!"


def test_log_records_lose_resolved_values(tmp_path, plugins):
    import logging

    from connect.runtime.config_transformer import SecretRedactingFilter

    secrets = tmp_path / "s.properties"
    secrets.write_text("pw=s3cr3t-value\n")
    transformer = ConfigTransformer(plugins, worker({"config.providers": "file"}))
    transformer.transform({"p": f"${{file:{secrets}:pw}}"})
    try:
        raise ValueError("bad password s3cr3t-value")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "connect with %s", ("s3cr3t-value",),
                                   sys.exc_info())
    assert SecretRedactingFilter(transformer).filter(record)
    text = logging.Formatter().format(record)
    assert "s3cr3t-value" not in text and "[hidden]" in text and "ValueError" in text


def test_status_traces_and_topic_names_lose_resolved_values(tmp_path, plugins):
    from connect.runtime.herder import ConnectorTaskId, State, Status
    from connect.runtime.storage.status import StatusStore

    secrets = tmp_path / "s.properties"
    secrets.write_text("topic=secret-topic-name\n")
    transformer = ConfigTransformer(plugins, worker({"config.providers": "file"}))
    transformer.transform({"topic": f"${{file:{secrets}:topic}}"})
    status = StatusStore()
    status.redact = transformer.redact
    status.put_task(ConnectorTaskId("c", 0), Status(State.FAILED, "w", "no topic secret-topic-name"))
    status.put_connector("c", Status(State.FAILED, "w", "secret-topic-name refused"))
    status.add_topic("c", "secret-topic-name")
    assert status.task(ConnectorTaskId("c", 0)).trace == "no topic [hidden]"
    assert status.connector("c").trace == "[hidden] refused"
    assert status.topics("c") == ["[hidden]"]
