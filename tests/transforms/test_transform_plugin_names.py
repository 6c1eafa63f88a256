"""Every built-in transform and predicate is reachable under Kafka's class names."""

from __future__ import annotations

import inspect

import pytest

import plugins.predicates
import plugins.transforms
from connect.api import Predicate, Transformation
from connect.runtime.plugins import PluginRegistry

KAFKA = "org.apache.kafka.connect.transforms."
WITH_VARIANTS = ["Cast", "ExtractField", "Flatten", "HeaderFrom", "HoistField", "InsertField", "MaskField",
                 "ReplaceField", "SetSchemaMetadata", "TimestampConverter"]
PLAIN = ["DropHeaders", "Filter", "InsertHeader", "RegexRouter", "TimestampRouter", "ValueToKey"]
PREDICATES = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]


def kafka_names():
    names = [f"{KAFKA}{n}${side}" for n in WITH_VARIANTS for side in ("Key", "Value")]
    names += [f"{KAFKA}{n}" for n in PLAIN]
    names += [f"{KAFKA}predicates.{n}" for n in PREDICATES]
    return names


def resolve(kafka_name: str) -> type:
    simple = kafka_name.rsplit(".", 1)[1]
    package = plugins.predicates if ".predicates." in kafka_name else plugins.transforms
    obj = package
    for part in simple.split("$"):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("kafka_name", kafka_names())
def test_kafka_names_resolve_to_concrete_plugins(kafka_name):
    cls = resolve(kafka_name)
    assert cls.__qualname__ == kafka_name.rsplit(".", 1)[1].replace("$", ".")
    assert not inspect.isabstract(cls)
    assert issubclass(cls, Predicate if ".predicates." in kafka_name else Transformation)
    instance = cls()
    assert instance.version() == "0.1.0"
    assert instance.config() is instance.config()


def test_variant_bases_are_abstract():
    for name in WITH_VARIANTS:
        assert inspect.isabstract(getattr(plugins.transforms, name))


def test_runtime_registry_finds_them():
    registry = PluginRegistry(use_entry_points=False)
    registry.scan_module(plugins.transforms)
    registry.scan_module(plugins.predicates)
    for kafka_name in kafka_names():
        info = registry.lookup(kafka_name)
        assert info is not None and info.cls is resolve(kafka_name), kafka_name
