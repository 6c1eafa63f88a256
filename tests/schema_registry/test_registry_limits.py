"""The registry against hostile schemas (issue #35): wide records checked in linear time, deep nesting refused
with 422 naming the limit, errors and incompatibility reports of bounded size, a check past its budget refused,
and a check under way abandoned when the registry closes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from connect.schema_registry.api import Compatibility, SchemaRegistryError
from connect.schema_registry.compatibility import MAX_CHECK_STEPS, incompatibilities, parse_schema
from tests.schema_registry.test_registry_api import Registry

DEPTH_LIMIT = 128  # the documented limit (docs/operations/security.md, "The schema registry")


@pytest.fixture
def reg(tmp_path: Path):
    registry = Registry(tmp_path)
    yield registry
    registry.close()


def wide(fields: int, field_type: object = "string", extra: bool = False) -> str:
    columns = [{"name": f"f{i:05d}", "type": field_type} for i in range(fields)]
    if extra:
        columns.append({"name": "added", "type": ["null", "string"], "default": None})
    return json.dumps({"type": "record", "name": "Wide", "fields": columns}, separators=(",", ":"))


def nested_arrays(levels: int, leaf: str = "int") -> str:
    """``levels`` arrays one inside the other: the schema's JSON nests ``levels`` objects deep."""
    return '{"type":"array","items":' * levels + json.dumps(leaf) + "}" * levels


def nested_records(levels: int, leaf: str = "int") -> str:
    """``levels`` records one inside the other: three JSON levels (record, fields, field) per record."""
    text = json.dumps(leaf)
    for i in range(levels):
        text = f'{{"type":"record","name":"R{i}","fields":[{{"name":"f","type":{text}}}]}}'
    return text


def test_a_wide_record_registers_in_linear_time(reg: Registry) -> None:
    # 25,000 fields, 775 KB (975 KB as a record of the topic): under the size limit. Parsing and checking were
    # quadratic: minutes at 100% CPU.
    reg.call("PUT", "/config", {"compatibility": "BACKWARD_TRANSITIVE"})
    first, second = wide(25_000, "int"), wide(25_000, "int", extra=True)
    assert len(second) < reg.store.max_schema_bytes
    reg.register("wide-value", first)
    start = time.monotonic()
    assert reg.register("wide-value", second) == {"id": 2}
    took = time.monotonic() - start
    assert took < 15, f"registering version 2 of a 25,000-field record took {took:.1f} s"


def test_a_schema_too_large_once_stored_is_42209_and_not_acknowledged(reg: Registry) -> None:
    # 850 KB of text, under the limit; escaped as a JSON string in its record it takes 1,050 KB, over it. The
    # log refused the record, yet the registry answered {"id": 1} for a schema it never stored.
    schema = wide(25_000, "string")
    assert len(schema) < reg.store.max_schema_bytes
    answer = reg.register("big-value", schema, 422)
    assert answer["error_code"] == 42209 and str(reg.store.max_schema_bytes) in answer["message"]
    assert reg.call("GET", "/subjects") == []
    assert reg.register("other-value", wide(3, "string")) == {"id": 1}


@pytest.mark.parametrize("schema", [
    nested_arrays(DEPTH_LIMIT + 1),
    nested_arrays(400),
    nested_records(340),  # deep enough to make json.loads itself raise RecursionError: was a 500
    '[' * 100_000 + ']' * 100_000,
    nested_arrays(30_000),
], ids=["arrays-129", "arrays-400", "records-340", "lists-100000", "arrays-30000"])
def test_a_deeply_nested_schema_is_422_naming_the_limit(reg: Registry, schema: str) -> None:
    answer = reg.register("deep-value", schema, 422)
    assert answer["error_code"] == 42201
    assert f"{DEPTH_LIMIT} levels" in answer["message"] and "nest" in answer["message"]
    assert len(answer["message"]) < 500
    assert reg.call("GET", "/subjects") == []


def test_schemas_at_the_depth_limit_are_parsed_and_checked(reg: Registry) -> None:
    reg.register("deep-value", nested_arrays(DEPTH_LIMIT))
    assert reg.register("deep-value", nested_arrays(DEPTH_LIMIT, "long")) == {"id": 2}  # int -> long: readable
    answer = reg.register("deep-value", nested_arrays(DEPTH_LIMIT, "boolean"), 409)
    assert "/items" * DEPTH_LIMIT in answer["message"]  # where: the innermost items
    records = nested_records(DEPTH_LIMIT // 3)
    reg.register("deep-records", records)
    assert reg.register("deep-records", records.replace('"int"', '"double"'))["id"] > 0


def test_an_error_deep_inside_a_large_schema_is_one_short_line(reg: Registry) -> None:
    # the avro parser repeated every enclosing type in its message: quadratic in size and depth
    inner = json.loads(wide(2_000))
    inner["fields"].append({"name": "broken", "type": "no_such_type"})
    text = json.dumps(inner)
    for i in range(40):
        text = f'{{"type":"record","name":"Outer{i}","fields":[{{"name":"f","type":{text}}}]}}'
    answer = reg.register("broken-value", text, 422)
    assert answer["error_code"] == 42201
    assert "no_such_type" in answer["message"] and "broken" in answer["message"]
    assert len(answer["message"]) < 1000, len(answer["message"])


def test_many_incompatibilities_are_reported_briefly(reg: Registry) -> None:
    reg.register("many-value", wide(20_000, "long"))
    answer = reg.register("many-value", wide(20_000, "boolean"), 409)
    message = answer["message"]
    assert "reader type: boolean not compatible with writer type: long" in message
    assert "/fields/0/type" in message and "19990 more" in message
    assert len(message) < 10_000, len(message)


def _same_name_unions(branches: int, field_type: str) -> str:
    # a union of records that all share one name, in different namespaces: every writer branch must be tried
    # against every reader branch (any of them may read it), so the check grows as branches squared
    return json.dumps([{"type": "record", "name": "X", "namespace": f"n{i}",
                        "fields": [{"name": "f", "type": field_type}]} for i in range(branches)])


def test_a_check_past_its_budget_is_refused_with_422() -> None:
    old, new = parse_schema(_same_name_unions(1_000, "int")), parse_schema(_same_name_unions(1_000, "boolean"))
    with pytest.raises(SchemaRegistryError) as refused:
        incompatibilities(Compatibility.BACKWARD, new, [(1, old)], max_steps=100_000)
    assert refused.value.error_code == 42201
    assert "100,000 steps" in refused.value.message
    assert MAX_CHECK_STEPS == 2_000_000  # the documented limit (docs/operations/security.md)


def test_closing_the_registry_ends_a_check_under_way(reg: Registry) -> None:
    reg.register("slow-value", _same_name_unions(4_000, "int"))
    answers: list[object] = []

    def register() -> None:
        response = reg.client.post("/subjects/slow-value/versions",
                                   json={"schema": _same_name_unions(4_000, "boolean")})
        answers.append((response.status_code, response.get_json()))

    caller = threading.Thread(target=register, daemon=True)
    caller.start()
    time.sleep(1.5)  # parsed and checking by now
    assert caller.is_alive()
    start = time.monotonic()
    reg.store.close()
    caller.join(10)
    assert not caller.is_alive(), "the check went on after the registry closed"
    assert time.monotonic() - start < 5
    status, body = answers[0]  # type: ignore[misc]
    assert status == 503 and body["error_code"] == 50003, body


def test_a_schema_in_the_topic_too_deep_to_decode_is_skipped_not_fatal(reg: Registry) -> None:
    from connect.schema_registry.state import RegistryState, schema_key

    state = RegistryState()
    value = {"subject": "s", "version": 1, "id": 7, "schema": "[" * 5000 + "]" * 5000, "deleted": False}
    state.apply(schema_key("s", 1), json.dumps(value).encode())  # must not raise: the follower would stop
    assert state.subjects["s"][1].id == 7


def test_a_version_registered_during_the_check_is_checked_against_too(reg: Registry) -> None:
    # the check runs outside the store's lock (reads and the topic's follower go on meanwhile): a version another
    # registry writes in that time must not be missed
    from connect.schema_registry.store import SchemaStore
    from tests.schema_registry.test_registry_api import record

    reg.register("s", record(("a", "int")))
    other = SchemaStore(reg.backend)
    other.start()
    original = reg.store._check_before_writing
    calls = []

    def check_then_another_registry_writes(*args, **kwargs):  # type: ignore[no-untyped-def]
        verdict = original(*args, **kwargs)
        if not calls:
            other.register("s", record(("a", "int"), ("b", "int", 0)))  # version 2, from the other registry
        calls.append(verdict)
        return verdict

    reg.store._check_before_writing = check_then_another_registry_writes  # type: ignore[method-assign]
    try:
        # readable from version 1 (b has a default), not from version 2 (b is a string now), under BACKWARD
        answer = reg.register("s", record(("a", "int"), ("b", "string", "x")), 409)
        assert "version 2" in answer["message"] and "type_mismatch at /fields/1/type" in answer["message"]
        assert len(calls) == 2  # checked again, against version 2
        assert reg.call("GET", "/subjects/s/versions") == [1, 2]
    finally:
        other.close()


def test_a_long_check_keeps_a_bounded_number_of_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    # every pair of records of one name tried in a union was kept: 660 MB by the step limit
    from connect.schema_registry import compatibility

    monkeypatch.setattr(compatibility, "_MEMO_LIMIT", 1_000)
    old, new = parse_schema(_same_name_unions(200, "int")), parse_schema(_same_name_unions(200, "boolean"))
    checker = compatibility._Checker(compatibility.MAX_CHECK_STEPS, None)
    verdict = checker.verdict(new.type, old.type)
    assert verdict.count == 200  # every writer branch unread: 40,000 pairs tried
    assert len(checker.memo) == 1_000 and not checker.under_way
