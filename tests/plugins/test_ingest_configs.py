"""The ingestion sources' configs: the examples in configs/ validate, bad ones are refused with the key named."""

from __future__ import annotations

import pytest

from connect.runtime.properties import load_config_file
from plugins.ingest import (
    HttpSourceConnector,
    SyslogSourceConnector,
    TailDirSourceConnector,
    TcpJsonSourceConnector,
)
from tests.support import REPO

CONNECTORS = {"HttpSource": HttpSourceConnector, "SyslogSource": SyslogSourceConnector,
              "TcpJsonSource": TcpJsonSourceConnector, "TailDirSource": TailDirSourceConnector}


@pytest.mark.parametrize("name", ["connect-http-source.properties", "connect-syslog-source.properties",
                                  "connect-tcp-json-source.properties", "connect-taildir-source.properties"])
def test_example_configs_validate(name):
    props = load_config_file(REPO / "configs" / name)
    connector = CONNECTORS[props["connector.class"]]()
    errors = {k: v.errors for k, v in connector.validate(props).items() if v.errors}
    assert errors == {}


@pytest.mark.parametrize("connector, props, key, error", [
    (HttpSourceConnector, {"listeners": "http://127.0.0.1"}, "listeners", "needs a port"),
    (HttpSourceConnector, {"listeners": "http://127.0.0.1:80/path"}, "listeners", "just scheme://host:port"),
    (SyslogSourceConnector, {"listeners": "http://127.0.0.1:514"}, "listeners", "udp://, tcp://"),
    (TcpJsonSourceConnector, {"listeners": "udp://127.0.0.1:4560"}, "listeners", "tcp://"),
    (TcpJsonSourceConnector, {"max.connections": "0"}, "max.connections", "at least 1"),
    (TailDirSourceConnector, {"directory": "/tmp", "file.pattern": "../*.log"}, "file.pattern", "may not leave it"),
    (TailDirSourceConnector, {"directory": "/tmp", "file.pattern": "/etc/*"}, "file.pattern", "may not leave it"),
    (TailDirSourceConnector, {"directory": "/tmp", "multiline.pattern": "(["}, "multiline.pattern",
     "not a regular expression"),
])
def test_bad_configs_name_the_key(connector, props, key, error):
    results = connector().validate({"topic": "t", **props})
    assert any(error in message for message in results[key].errors), results[key].errors
    assert "topic" not in {k for k, v in results.items() if v.errors}
    assert connector().validate({})["topic"].errors  # topic has no default
