"""AvroConverter's schema.registry.url with user info (``http://user:password@host:port``)."""

from __future__ import annotations

import pytest

from connect.api import ConfigException, RetriableException, Schema
from plugins.converters.avro import AvroConverter


def test_registry_url_with_user_info_and_no_host_is_a_config_error() -> None:
    with pytest.raises(ConfigException, match="schema.registry.url") as caught:
        AvroConverter().configure({"schema.registry.url": "http://user:secret@:8081"}, False)
    assert "secret" not in str(caught.value)


def test_registry_url_with_user_info_keeps_an_ipv6_host() -> None:
    conv = AvroConverter()
    conv.configure({"schema.registry.url": "http://user:secret@[::1]:9"}, False)
    with pytest.raises(RetriableException, match=r"unreachable"):  # not a URL made invalid by losing the brackets
        conv.from_connect_data("t", Schema.STRING_SCHEMA, "x")
