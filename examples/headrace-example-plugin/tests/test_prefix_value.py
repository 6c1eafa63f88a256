from __future__ import annotations

import pytest
from connect.api import ConfigException, DataException, SourceRecord

from headrace_example import PrefixValue


def configured(prefix: str) -> PrefixValue:
    transform = PrefixValue()
    transform.configure({"prefix": prefix})
    return transform


def test_the_prefix_goes_before_a_string_value_in_a_new_record():
    original = SourceRecord(None, None, "words", value="red")
    changed = configured("colour=").apply(original)
    assert changed is not None and changed.value == "colour=red"
    assert original.value == "red"


def test_a_value_that_is_not_a_string_raises_a_data_exception():
    with pytest.raises(DataException, match="needs a string value"):
        configured(">").apply(SourceRecord(None, None, "words", value=3))


def test_prefix_is_required():
    with pytest.raises(ConfigException, match='"prefix"'):
        PrefixValue().configure({})
