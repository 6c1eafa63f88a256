"""The Log4j 2 → Kafka recipe in docs/guide/connectors/ingestion.md says what the shipped files hold: its KafkaAppender is the one of
configs/log4j2-kafka.xml, with the settings its no-loss table relies on, and its two connector configs are the
shipped ones. (The end-to-end proof is tests/spark/test_log4j2_kafka_recipe.py, which runs those files.)"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from connect.runtime.properties import load_config_file, parse_properties
from tests.support import REPO

PAGE = REPO / "docs" / "guide" / "connectors" / "ingestion.md"
SECTION = "## Log4j 2 to Kafka: the recipe for Java applications on Kafka"


def _section() -> str:
    text = PAGE.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:] if end < 0 else text[start:end]


def _kafka_appender(root: ET.Element) -> dict[str, object]:
    [kafka] = root.iter("Kafka")
    [layout] = kafka.iter("JsonTemplateLayout")
    return {"attributes": dict(kafka.attrib), "layout": dict(layout.attrib),
            "properties": {p.get("name"): (p.text or "").strip() for p in kafka.iter("Property")}}


def test_the_docs_show_the_shipped_kafka_appender():
    [snippet] = re.findall(r"```xml\n(.*?)```", _section(), re.S)
    shipped = _kafka_appender(ET.parse(REPO / "configs" / "log4j2-kafka.xml").getroot())
    assert _kafka_appender(ET.fromstring(snippet)) == shipped


def test_the_shipped_appender_has_the_no_loss_settings():
    root = ET.parse(REPO / "configs" / "log4j2-kafka.xml").getroot()
    appender = _kafka_appender(root)
    attributes, props = appender["attributes"], appender["properties"]
    assert attributes["syncSend"] == "true" and attributes["ignoreExceptions"] == "false"  # type: ignore[index]
    assert "retryCount" not in attributes  # type: ignore[operator]
    assert props["acks"] == "all" and props["enable.idempotence"] == "true"  # type: ignore[index]
    assert int(props["timeout.ms"]) >= int(props["delivery.timeout.ms"])  # type: ignore[index]
    # the Kafka client's own logging never reaches the Kafka appender
    [client] = [logger for logger in root.iter("Logger") if logger.get("name") == "org.apache.kafka"]
    assert client.get("additivity") == "false"
    assert [ref.get("ref") for ref in client.iter("AppenderRef")] == ["console"]


def test_the_docs_show_the_shipped_worker_and_connector_configs():
    worker, connectors = re.findall(r"```properties\n(.*?)```", _section(), re.S)
    shipped_worker = load_config_file(REPO / "configs" / "connect-standalone-kafka-logs.properties")
    assert parse_properties(worker).items() <= shipped_worker.items()
    # the page's second block holds both connectors, each after a "# configs/<file>" line
    parts = re.split(r"\n(?=# configs/)", connectors.strip())
    names = [re.match(r"# configs/(\S+)", part).group(1) for part in parts]  # type: ignore[union-attr]
    assert names == ["hdfs-java-logs-sink.properties", "opensearch-java-logs-sink.properties"]
    for name, part in zip(names, parts, strict=True):
        assert parse_properties(part) == load_config_file(REPO / "configs" / name), name
