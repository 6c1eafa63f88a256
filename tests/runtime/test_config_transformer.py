import pytest

from connect.api.errors import ConfigException
from connect.runtime.config_transformer import ConfigTransformer
from connect.runtime.plugins import PluginRegistry


@pytest.fixture(scope="module")
def plugins():
    return PluginRegistry()


def test_file_and_env_references(tmp_path, monkeypatch, plugins):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("db.password=s3cr3t\n")
    monkeypatch.setenv("HEADRACE_TEST_USER", "alice")
    transformer = ConfigTransformer(plugins, {})
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
    transformer = ConfigTransformer(plugins, {})
    with pytest.raises(ConfigException) as err:
        transformer.transform({"conn.password": f"${{file:{secrets}:b}}"})
    assert "conn.password" in str(err.value) and "'b'" in str(err.value)
