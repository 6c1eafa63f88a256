"""Maps made by the built-in transforms print in the order Kafka Connect's (on JDK 17) print them.

A java.util.HashMap's order depends on its bucket count, which depends on how the transform built the map
(pre-sized, copied from another map, a LinkedHashMap). The expected texts in java_map_orders.json were
printed by jshell (JDK 17) running each transform's way of building its map over 22 key sets of 1 to 20
keys; ``test_recorded_orders_are_javas`` prints them again when HEADRACE_JSHELL=1 (it takes a minute).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from connect.api import SinkRecord
from connect.api.java_text import java_to_string
from plugins.transforms import Flatten, InsertField, MaskField, ReplaceField

_RECORDED = json.loads((Path(__file__).with_name("java_map_orders.json")).read_text())["cases"]
_NESTED_KEYS = ["x", "y", "z", "id", "q"]


def _configured(cls: type, props: dict[str, str]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def _through(transform: Any, value: dict[str, Any], batch: bool) -> Any:
    record = SinkRecord("topic", 0, None, None, None, value, 0)
    if batch:
        return transform.apply_batch([record])[0].value
    return transform.apply(record).value


def _headrace_texts(keys: list[str], batch: bool) -> dict[str, str]:
    """Each pipeline of the Java program below, through Headrace's transforms, printed."""
    value = {k: i for i, k in enumerate(keys)}
    made: dict[str, Any] = {"json": value}
    made["rename"] = _through(_configured(ReplaceField.Value, {"renames": f"{keys[0]}:renamed"}), value, batch)
    made["exclude"] = _through(_configured(ReplaceField.Value, {"exclude": keys[-1]}), value, batch)
    made["insert"] = _through(
        _configured(InsertField.Value, {"static.field": "inserted", "static.value": "x"}), value, batch)
    made["mask"] = _through(
        _configured(MaskField.Value, {"fields": ",".join([keys[0], "absent1", "absent2", "zz"])}), value, batch)
    chained = _through(_configured(InsertField.Value, {"static.field": "region", "static.value": "x"}), value, batch)
    chained = _through(_configured(MaskField.Value, {"fields": keys[0]}), chained, batch)
    made["chain"] = _through(_configured(ReplaceField.Value, {"renames": f"{keys[-1]}:last_renamed"}), chained, batch)
    nested = dict(value)
    nested["nested"] = {k: i for i, k in enumerate(_NESTED_KEYS)}
    made["flatten"] = _through(_configured(Flatten.Value, {}), nested, batch)
    return {name: java_to_string(v) for name, v in made.items()}


@pytest.mark.parametrize("batch", [False, True], ids=["apply", "apply_batch"])
@pytest.mark.parametrize("case", _RECORDED, ids=lambda case: f"{len(case['keys'])}-keys-{case['keys'][0]}")
def test_maps_print_as_kafka_connect_prints_them(case: dict[str, Any], batch: bool) -> None:
    assert _headrace_texts(case["keys"], batch) == case["java"]


def test_replace_field_map_is_presized_as_javas() -> None:
    # new HashMap<>(6) has 8 buckets and is filled in the source's order: "q" (bucket 1 of 8) before "i"
    value = {k: i for i, k in enumerate("abcijq")}
    renamed = _through(_configured(ReplaceField.Value, {"renames": "c:c"}), value, batch=True)
    assert java_to_string(renamed) == "{a=0, q=5, i=3, b=1, j=4, c=2}"
    assert java_to_string(value) == "{a=0, q=5, b=1, c=2, i=3, j=4}"  # the source itself: 16 buckets


def _java_program(cases: list[list[str]]) -> str:
    """A jshell script printing each pipeline's map, built as Kafka 4.1's transforms build theirs."""
    helpers = """
Map<String,Object> json(List<String> ks) { Map<String,Object> m = new HashMap<>(); for (int i = 0; i < ks.size(); i++) m.put(ks.get(i), i); return m; }
Map<String,Object> replace(Map<String,Object> v, Map<String,String> renames, Set<String> exclude) { Map<String,Object> r = new HashMap<>(v.size()); for (Map.Entry<String,Object> e : v.entrySet()) { if (exclude.contains(e.getKey())) continue; r.put(renames.getOrDefault(e.getKey(), e.getKey()), e.getValue()); } return r; }
Map<String,Object> insert(Map<String,Object> v, String field) { Map<String,Object> r = new HashMap<>(v); r.put(field, "x"); return r; }
Map<String,Object> mask(Map<String,Object> v, List<String> fields) { Set<String> s = new HashSet<>(fields); HashMap<String,Object> r = new HashMap<>(v); for (String f : s) r.put(f, v.get(f) == null ? null : 0); return r; }
void flat(Map<String,Object> v, String p, Map<String,Object> r) { for (Map.Entry<String,Object> e : v.entrySet()) { String n = p.isEmpty() ? e.getKey() : p + "." + e.getKey(); if (e.getValue() instanceof Map) flat((Map<String,Object>) e.getValue(), n, r); else r.put(n, e.getValue()); } }
Map<String,Object> flatten(Map<String,Object> v) { Map<String,Object> r = new LinkedHashMap<>(); flat(v, "", r); return r; }
"""
    lines = [helpers]
    for i, keys in enumerate(cases):
        listed = "List.of(" + ", ".join(json.dumps(k) for k in keys) + ")"
        nested = "List.of(" + ", ".join(json.dumps(k) for k in _NESTED_KEYS) + ")"
        lines.append(
            f"{{ List<String> ks = {listed}; Map<String,Object> m = json(ks);\n"
            f'System.out.println("{i} json " + m);\n'
            f'System.out.println("{i} rename " + replace(m, Map.of(ks.get(0), "renamed"), Set.of()));\n'
            f'System.out.println("{i} exclude " + replace(m, Map.of(), Set.of(ks.get(ks.size() - 1))));\n'
            f'System.out.println("{i} insert " + insert(m, "inserted"));\n'
            f'System.out.println("{i} mask " + mask(m, List.of(ks.get(0), "absent1", "absent2", "zz")));\n'
            f'System.out.println("{i} chain " + replace(mask(insert(m, "region"), List.of(ks.get(0))), '
            f'Map.of(ks.get(ks.size() - 1), "last_renamed"), Set.of()));\n'
            f'Map<String,Object> n = json(ks); n.put("nested", json({nested}));\n'
            f'System.out.println("{i} flatten " + flatten(n)); }}'
        )
    lines.append("/exit")
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(os.environ.get("HEADRACE_JSHELL") != "1" or shutil.which("jshell") is None,
                    reason="runs jshell (about a minute): set HEADRACE_JSHELL=1")
def test_recorded_orders_are_javas(tmp_path: Path) -> None:
    script = tmp_path / "orders.jsh"
    script.write_text(_java_program([case["keys"] for case in _RECORDED]))
    printed = subprocess.run(["jshell", "-q", str(script)], capture_output=True, text=True, timeout=600, check=True)
    by_case: dict[int, dict[str, str]] = {}
    for line in printed.stdout.splitlines():
        index, name, text = line.split(" ", 2)
        by_case.setdefault(int(index), {})[name] = text
    assert [by_case[i] for i in range(len(_RECORDED))] == [case["java"] for case in _RECORDED]


@pytest.mark.parametrize("batch", [False, True], ids=["apply", "apply_batch"])
def test_the_issues_realistic_chain_prints_as_kafka_connect(batch: bool) -> None:
    # InsertField$Value -> MaskField$Value -> ReplaceField$Value over a JsonConverter map, printed by jshell
    # (JDK 17) for the same maps built as Kafka's transforms build them
    value = {"id": 0, "user": "user-0", "amount": 0.0, "country": "DE", "ts": 1700000000000, "ok": False}
    value = _through(_configured(InsertField.Value, {"static.field": "source", "static.value": "bench"}), value, batch)
    value = _through(_configured(MaskField.Value, {"fields": "user"}), value, batch)
    value = _through(_configured(ReplaceField.Value, {"renames": "amount:value,ts:event_time"}), value, batch)
    assert java_to_string(value) == \
        "{country=DE, id=0, source=bench, ok=false, value=0.0, user=, event_time=1700000000000}"


def test_value_to_key_cast_and_timestamp_converter_maps_print_as_kafka_connects() -> None:
    from plugins.transforms import Cast, TimestampConverter, ValueToKey

    # jshell (JDK 17): new HashMap<>(2) with "f" then "b" put prints {f=1, b=2} (4 buckets, "f" and "b"
    # share bucket 2); new HashMap<>(Map.of("f", 1)) with "b" put prints {f=1, b=null}; a new HashMap<>()
    # holding both prints "b" first (16 buckets)
    record = SinkRecord("topic", 0, None, None, None, {"f": 1, "b": 2}, 0)
    key = _configured(ValueToKey, {"fields": "f,b"}).apply(record).key
    assert java_to_string(key) == "{f=1, b=2}"
    single = SinkRecord("topic", 0, None, None, None, {"f": 1}, 0)
    cast = _configured(Cast.Value, {"spec": "b:int32"}).apply(single).value
    assert java_to_string(cast) == "{f=1, b=null}"
    converted = _configured(TimestampConverter.Value, {"field": "b", "target.type": "unix"}).apply(single).value
    assert java_to_string(converted) == "{f=1, b=null}"
    assert java_to_string({"f": 1, "b": None}) == "{b=null, f=1}"
