import pytest

from connect.api.errors import ConfigException
from connect.runtime.connector_config import ConnectorConfigValidator
from connect.runtime.plugins import PluginRegistry


@pytest.fixture(scope="module")
def plugins():
    return PluginRegistry()


@pytest.mark.parametrize(
    ("name", "kind", "qualname"),
    [
        ("FileStreamSource", "source", "FileStreamSourceConnector"),
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", "source", "FileStreamSourceConnector"),
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", "sink", "FileStreamSinkConnector"),
        ("org.apache.kafka.connect.json.JsonConverter", "converter", "JsonConverter"),
        ("org.apache.kafka.connect.storage.StringConverter", "converter", "StringConverter"),
        ("org.apache.kafka.connect.storage.StringConverter", "header_converter", "StringConverter"),
        ("org.apache.kafka.connect.transforms.InsertField$Value", "transformation", "InsertField.Value"),
        ("InsertField$Key", "transformation", "InsertField.Key"),
        ("org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicate", "TopicNameMatches"),
        ("org.apache.kafka.common.config.provider.FileConfigProvider", "config_provider", "FileConfigProvider"),
        ("plugins.file.FileStreamSinkConnector", "sink", "FileStreamSinkConnector"),
    ],
)
def test_kafka_names_and_aliases_resolve(plugins, name, kind, qualname):
    assert plugins.resolve(name, kind, "k").__qualname__ == qualname


def test_unknown_and_wrong_kind_name_the_key(plugins):
    with pytest.raises(ConfigException) as err:
        plugins.resolve("NoSuchPlugin", "source", "connector.class")
    assert err.value.name == "connector.class" and "NoSuchPlugin" in str(err.value)
    with pytest.raises(ConfigException) as err:
        plugins.resolve("JsonConverter", ("source", "sink"), "connector.class")
    assert "is a converter" in str(err.value)


def test_plugin_path_folder_is_scanned(tmp_path):
    (tmp_path / "my_plugin.py").write_text(
        "from connect.api import Transformation, ConfigDef\n"
        "class Upper(Transformation):\n"
        "    def configure(self, configs): pass\n"
        "    def apply(self, record): return record.new_record(value=record.value.upper())\n"
        "    def config(self): return ConfigDef()\n"
    )
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n")
    registry = PluginRegistry([str(tmp_path)], use_entry_points=False)
    assert registry.resolve("Upper", "transformation", "t").__qualname__ == "Upper"
    assert [p.full_name for p in registry.plugins()] == ["headrace_plugin_path.my_plugin.Upper"]


def test_listing_shows_a_class_under_each_kind(plugins):
    kinds = {p.type for p in plugins.plugins() if p.full_name.endswith(".StringConverter")}
    assert kinds == {"converter", "header_converter"}


def test_validation_collects_every_error(plugins):
    result = ConnectorConfigValidator(plugins).validate({
        "name": "x", "connector.class": "FileStreamSink", "tasks.max": "abc",
        "transforms": "a", "transforms.a.type": "NoSuchTransform",
    })
    errors = dict(result.errors)
    assert "tasks.max" in errors and "Not a number" in errors["tasks.max"]
    assert "topics" in errors
    assert "transforms.a.type" in errors
    body = result.to_config_infos()
    assert body["error_count"] == result.error_count >= 3
    assert {c["definition"]["name"] for c in body["configs"] if c["definition"]} >= {"name", "file", "topics"}


def test_transform_configs_are_validated_with_the_transform_configdef(plugins):
    result = ConnectorConfigValidator(plugins).validate({
        "name": "x", "connector.class": "FileStreamSource", "topic": "t",
        "transforms": "route", "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    })
    errors = dict(result.errors)
    assert "transforms.route.regex" in errors
