import pytest

from connect.api.errors import ConfigException
from connect.runtime.connector_validation import ConnectorConfigValidator
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


def test_validation_answer_is_named_after_the_connector_class_with_kafka_connects_groups(plugins):
    # Kafka Connect 4.1 names the ConfigInfos after connector.class as sent, and a source's exactly-once and
    # offsets-topic keys have groups of their own (checked against Java in tests/compat/test_side_by_side.py)
    body = ConnectorConfigValidator(plugins).validate({
        "name": "v1", "connector.class": "FileStreamSource", "topic": "t", "file": "/tmp/in.txt",
    }).to_config_infos()
    assert body["name"] == "FileStreamSource"
    assert body["groups"] == ["Common", "Transforms", "Predicates", "Error Handling", "Topic Creation",
                              "Exactly Once Support", "offsets.topic"]


def test_transform_configs_are_validated_with_the_transform_configdef(plugins):
    result = ConnectorConfigValidator(plugins).validate({
        "name": "x", "connector.class": "FileStreamSource", "topic": "t",
        "transforms": "route", "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    })
    errors = dict(result.errors)
    assert "transforms.route.regex" in errors


@pytest.fixture
def side_effect_module(tmp_path, monkeypatch):
    """An importable module that is no plugin: importing it leaves a marker file behind."""
    marker = tmp_path / "imported.marker"
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "headrace_side_effect.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "from connect.api import Transformation\n"
        "class Evil(Transformation):\n"
        "    def configure(self, configs): pass\n"
        "    def apply(self, record): return record\n"
        "    def config(self): return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    yield marker
    assert not marker.exists(), "an unregistered module was imported"


@pytest.mark.parametrize("name", ["headrace_side_effect.Evil", "headrace_side_effect$Evil", "this.X"])
def test_a_name_outside_the_registry_imports_nothing(plugins, side_effect_module, name):
    assert plugins.lookup(name) is None
    with pytest.raises(ConfigException) as err:
        plugins.resolve(name, "transformation", "transforms.x.type")
    assert err.value.name == "transforms.x.type"


@pytest.mark.parametrize("name", [".foo.Bar", "..Bar", ".", "..", "plugins..file"])
def test_relative_and_malformed_names_are_unknown(plugins, name):
    assert plugins.lookup(name) is None
    with pytest.raises(ConfigException) as err:
        plugins.resolve(name, ("source", "sink"), "connector.class")
    assert err.value.name == "connector.class"


def test_task_classes_of_registered_connectors_resolve(plugins):
    from plugins.file import FileStreamSinkTask, FileStreamSourceTask

    assert isinstance(plugins.new_task("plugins.file.source.FileStreamSourceTask"), FileStreamSourceTask)
    assert isinstance(plugins.new_task("plugins.file.sink.FileStreamSinkTask"), FileStreamSinkTask)


def test_task_configs_written_by_java_kafka_connect_name_the_registered_tasks(plugins):
    from plugins.file import FileStreamSinkTask, FileStreamSourceTask

    assert isinstance(plugins.new_task("org.apache.kafka.connect.file.FileStreamSourceTask"), FileStreamSourceTask)
    assert isinstance(plugins.new_task("org.apache.kafka.connect.file.FileStreamSinkTask"), FileStreamSinkTask)


@pytest.mark.parametrize("name", ["headrace_side_effect.Evil", "plugins.transforms.InsertField.Value", ".foo.Bar",
                                  "NoSuchTask", "os.system"])
def test_a_task_class_must_be_the_task_of_a_registered_connector(plugins, side_effect_module, name):
    with pytest.raises(ConfigException) as err:
        plugins.new_task(name)
    assert err.value.name == "task.class" and "installed connector" in str(err.value)


def test_converter_names_are_checked_by_validation(plugins, side_effect_module):
    result = ConnectorConfigValidator(plugins).validate({
        "name": "x", "connector.class": "FileStreamSink", "topics": "t",
        "key.converter": "headrace_side_effect.Evil", "value.converter": "FileStreamSink",
        "header.converter": "NoSuchHeaderConverter",
    })
    errors = dict(result.errors)
    assert "could not be found" in errors["key.converter"]
    assert "not a converter" in errors["value.converter"]
    assert "could not be found" in errors["header.converter"]


def test_stand_ins_for_kafkas_own_plugins_are_listed_under_kafkas_class_names(plugins):
    listed = {(p.listed_name, p.type) for p in plugins.plugins()}
    for kafka_name, kind in [
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", "source"),
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", "sink"),
        ("org.apache.kafka.connect.transforms.Cast$Value", "transformation"),
        ("org.apache.kafka.connect.transforms.RegexRouter", "transformation"),
        ("org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicate"),
        ("org.apache.kafka.connect.json.JsonConverter", "converter"),
        ("org.apache.kafka.connect.storage.StringConverter", "header_converter"),
        ("org.apache.kafka.connect.storage.SimpleHeaderConverter", "header_converter"),
        ("org.apache.kafka.connect.converters.IntegerConverter", "converter"),
    ]:
        assert (kafka_name, kind) in listed
        # every listed name resolves back to the plugin, and so does the Python name
        info = plugins.lookup(kafka_name)
        assert info is not None and plugins.lookup(info.full_name) is info
    assert not any(name.startswith("plugins.file.") for name, _ in listed)
    # Headrace's own plugins keep their Python names
    assert ("plugins.transforms.insert_timestamp_header.InsertTimestampHeader", "transformation") in listed


def test_task_configs_name_kafkas_task_class_for_a_stand_in():
    from connect.runtime.kafka_class_names import kafka_class_name

    assert kafka_class_name("plugins.file.source.FileStreamSourceTask") == (
        "org.apache.kafka.connect.file.FileStreamSourceTask"
    )
    assert kafka_class_name("plugins.redis.sink.RedisSinkTask") == "plugins.redis.sink.RedisSinkTask"
