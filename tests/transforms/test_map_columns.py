"""Schemaless maps kept as columns (MapColumns) through JsonConverter, InsertField, MaskField, ReplaceField and
FileStreamSink give what the per-record path gives: the same maps (keys, their order, how Java built them) and
the same bytes in the sink file, over varied batches; and the columnar path is really taken where it can be.
"""

from __future__ import annotations

import json
import math
import random
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from connect.api import SinkRecord, SinkRecordBatch, TimestampType
from connect.api.java_numbers import double_to_string
from connect.api.java_text import FieldSelection as _Selection
from connect.api.java_text import (
    JavaMap,
    java_iteration_order,
    java_map_lines,
    java_to_string,
    presized_layout,
)
from connect.api.map_columns import MapColumns, MapTable
from connect.runtime.transformation_chain import TransformationChain, TransformStage
from connect.runtime.worker_task import TaskConverters
from plugins.converters.json import JsonConverter
from plugins.converters.string import StringConverter
from plugins.file.sink import FileStreamSinkTask
from plugins.predicates import TopicNameMatches
from plugins.transforms import InsertField, MaskField, ReplaceField
from tests.runtime.fakes import FakeClock, MemoryBackend, sink_task

T0 = 1_763_856_000_000


def _configured(transform: Any, **configs: str) -> Any:
    transform.configure({k.replace("_", "."): v for k, v in configs.items()})
    return transform


CHAINS: dict[str, Callable[[], list[Any]]] = {
    "realistic": lambda: [
        _configured(InsertField.Value(), static_field="source", static_value="bench"),
        _configured(MaskField.Value(), fields="user"),
        _configured(ReplaceField.Value(), renames="amount:value,ts:event_time"),
    ],
    "insert-existing-field": lambda: [_configured(InsertField.Value(), static_field="id", static_value="x")],
    "mask-present-and-absent": lambda: [_configured(MaskField.Value(), fields="user,amount,ok,absent,nested")],
    "mask-replacement": lambda: [_configured(MaskField.Value(), fields="user,id,amount", replacement="7")],
    "replace-include-exclude": lambda: [_configured(ReplaceField.Value(), include="id,user,country,Aa,BB",
                                                    exclude="country", renames="user:who")],
    "rename-onto-a-kept-key": lambda: [_configured(ReplaceField.Value(), renames="id:user")],
    "replace-then-insert-then-mask": lambda: [
        _configured(ReplaceField.Value(), exclude="ok"),
        _configured(InsertField.Value(), static_field="src!", static_value="h%s=1"),
        _configured(MaskField.Value(), fields="src,id"),
    ],
    "nothing": lambda: [],
}


def _record(i: int) -> dict[str, Any]:
    return {"id": i, "user": f"user-{i % 7}", "amount": round(i * 0.37, 2), "country": "DE", "ts": T0 + i,
            "ok": i % 3 == 0}


def _wide(i: int) -> dict[str, Any]:
    # 13 keys: a key put after makes Java's copy resize (a JavaMap layout); "Aa" and "BB" share a Java hash
    return {**_record(i), "Aa": i, "BB": -i, "k1": None, "k2": 1.5, "k3": "x", "k4": True, "pct%": "50%"}


BATCHES: dict[str, list[Any]] = {
    "realistic": [_record(i) for i in range(40)],
    "nulls-in-a-column": [{**_record(i), "user": None if i % 4 == 0 else f"u{i}"} for i in range(12)],
    "nested-maps-and-lists": [{**_record(i), "nested": {"b": i, "a": [i, {"z": None}]}, "tags": [i, "t"]}
                              for i in range(9)],
    "floats-of-every-range": [{**_record(i), "amount": x} for i, x in enumerate(
        [0.0, -0.0, 1e-3, 9.99e-4, 1e7, 9999999.5, 1e-12, 1.5e300, -2.5e-7, 123.456, 1e16, 5e-324])],
    "not-finite-floats": [{**_record(i), "amount": x} for i, x in enumerate([1.5, math.nan, math.inf, -math.inf])],
    "ints-and-floats-in-a-column": [{**_record(i), "amount": i if i % 2 else i + 0.5} for i in range(10)],
    "bools-and-ints-in-a-column": [{**_record(i), "ok": (True, 1, False, 0)[i % 4]} for i in range(8)],
    "ints-beyond-64-bits": [{**_record(i), "id": 2**70 + i, "ts": -(2**65)} for i in range(5)],
    "wide-with-colliding-keys": [_wide(i) for i in range(10)],
    "mixed-key-sets": [_record(0), {"id": 1, "user": "a"}, _record(2), {**_record(3), "extra": 1}, _record(4)],
    "same-keys-other-order": [_record(0), dict(reversed(list(_record(1).items()))), _record(2), _record(3)],
    "one-record": [_record(0)],
    "empty-maps": [{}, {}, {}, {}],
    # Java's copy of a map of under 6 keys has fewer buckets than a new HashMap: a put makes a JavaMap layout
    "small-maps": [{"id": i, "user": f"u{i}", "ok": i % 2 == 0} for i in range(6)],
}


def _java_maps(count: int) -> list[Any]:
    """Maps built as ReplaceField builds them (a JavaMap, pre-sized from a wider map), all of one layout."""
    source = _wide(0)
    layout = presized_layout(source, _Selection({}, frozenset(("k1", "k2", "k3")), frozenset()))
    made = []
    for i in range(count):
        value = JavaMap({k: v for k, v in _wide(i).items() if k not in ("k1", "k2", "k3")})
        value.java_layout = layout
        made.append(value)
    return made


def _columnar_batch(values: list[Any]) -> SinkRecordBatch:
    maps = MapColumns.of(list(values))
    assert maps is not None
    return _batch(maps)


def _batch(values: Sequence[Any], topic: str = "orders") -> SinkRecordBatch:
    n = len(values)
    batch = SinkRecordBatch()
    batch.add(topic, 0, list(range(n)), [T0] * n, TimestampType.CREATE_TIME, [None] * n, [None] * n, [None] * n,
              values)
    return batch


def _per_record(values: list[Any], transforms: list[Any]) -> list[Any]:
    out = []
    for i, value in enumerate(json.loads(json.dumps(values)) if _json_safe(values) else values):
        record = SinkRecord("orders", 0, None, None, None, value, i, T0)
        for transform in transforms:
            record = transform.apply(record)
        out.append(record.value)
    return out


def _json_safe(values: list[Any]) -> bool:
    return all(type(v) is dict for v in values) and "nan" not in repr(values) and "inf" not in repr(values) \
        and not any(type(k) is not str for v in values for k in v)


def _shape(value: Any) -> tuple[Any, ...]:
    """What the sink and a downstream converter see of a map: its type, items in order, Java's order."""
    return type(value), list(value.items()), java_iteration_order(value), java_to_string(value)


def _sink_text(batch: SinkRecordBatch, tmp_path: Path) -> str:
    task = FileStreamSinkTask()
    out = tmp_path / "sink.txt"
    out.unlink(missing_ok=True)
    task.start({"file": str(out)})
    try:
        task.put(batch)
    finally:
        task.stop()
    return out.read_text()


def _through_columns(values: list[Any], transforms: list[Any]) -> SinkRecordBatch:
    batch = _columnar_batch(values)
    for transform in transforms:
        batch = transform.apply_batch(batch)
    return batch


@pytest.mark.parametrize("chain_name", sorted(CHAINS))
@pytest.mark.parametrize("batch_name", sorted(BATCHES) + ["java-maps"])
def test_the_columnar_path_gives_the_maps_and_the_bytes_of_the_per_record_path(batch_name, chain_name, tmp_path):
    values = BATCHES[batch_name] if batch_name != "java-maps" else _java_maps(8)
    expected = _per_record(values, CHAINS[chain_name]())
    batch = _through_columns(values, CHAINS[chain_name]())
    assert type(batch) is SinkRecordBatch
    assert _sink_text(batch, tmp_path) == "".join(java_to_string(v) + "\n" for v in expected)
    assert [_shape(v) for v in batch.values] == [_shape(v) for v in expected]
    assert [r.value for r in batch] == expected


COLUMNAR = ("realistic", "nulls-in-a-column", "nested-maps-and-lists", "floats-of-every-range",
            "ints-beyond-64-bits", "wide-with-colliding-keys", "one-record", "bools-and-ints-in-a-column")


@pytest.mark.parametrize("batch_name", COLUMNAR)
def test_maps_of_one_key_set_stay_columns_through_the_realistic_chain_and_the_sink(batch_name, tmp_path):
    batch = _through_columns(BATCHES[batch_name], CHAINS["realistic"]())
    maps = batch.value_maps()
    assert maps is not None and maps.table() is not None
    _sink_text(batch, tmp_path)
    assert maps.table() is not None, "the sink printed from the columns, without making the maps"


def test_maps_that_java_lays_out_otherwise_stay_columns_with_their_layout_through_the_chain(tmp_path):
    values = BATCHES["small-maps"]
    transforms = [_configured(InsertField.Value(), static_field="source", static_value="bench"),
                  _configured(ReplaceField.Value(), renames="id:ident")]
    inserted = _through_columns(values, transforms[:1])
    table = inserted.value_maps().table()  # type: ignore[union-attr]
    assert table is not None and table.java_layout is not None
    batch = transforms[1].apply_batch(inserted)
    assert batch.value_maps().table() is not None  # type: ignore[union-attr]
    expected = _per_record(values, transforms)
    assert type(expected[0]) is JavaMap
    assert _sink_text(batch, tmp_path) == "".join(java_to_string(v) + "\n" for v in expected)
    assert [_shape(v) for v in batch.values] == [_shape(v) for v in expected]


@pytest.mark.parametrize("batch_name", ["mixed-key-sets", "same-keys-other-order"])
def test_maps_of_several_key_sets_are_not_offered_as_columns(batch_name):
    maps = MapColumns.of(list(BATCHES[batch_name]))
    assert maps is not None and maps.table() is None
    assert list(maps) == BATCHES[batch_name]


def test_non_str_keys_tombstones_and_non_maps_are_not_columns():
    assert MapColumns.of([{1: "a"}, {1: "b"}]).table() is None  # type: ignore[union-attr]
    assert MapColumns.of([{True: "a"}, {1: "b"}]).table() is None  # type: ignore[union-attr]
    assert MapColumns.of([_record(0), None]) is None
    assert MapColumns.of(["a", "b"]) is None
    assert MapColumns.of([_record(0), JavaMap(_record(1))]) is None


def test_a_mask_the_columns_cannot_make_leaves_the_batch_to_the_per_record_path_which_names_the_record():
    values = [_record(0), {**_record(1), "user": True}, _record(2)]
    mask = _configured(MaskField.Value(), fields="user", replacement="***")
    with pytest.raises(Exception, match="Cannot mask value of type bool with custom replacement"):
        mask.apply_batch(_columnar_batch(values))


def test_the_json_converter_reads_a_batch_of_one_key_set_as_columns_equal_to_the_per_record_values():
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, False)
    raws = [json.dumps(_record(i), separators=(",", ":")).encode() for i in range(20)]
    schemas, values = conv.to_connect_batch("orders", raws)
    assert type(values) is MapColumns and values.table() is not None
    assert schemas == [None] * 20
    assert values == [conv.to_connect_data("orders", raw).value for raw in raws]
    assert values.table() is None, "once read map by map, the table is not offered: the maps may change"


def test_the_json_converter_gives_a_list_for_a_batch_with_a_tombstone_or_a_scalar():
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, False)
    _, values = conv.to_connect_batch("orders", [b'{"a":1}', None, b'{"a":2}'])
    assert values == [{"a": 1}, None, {"a": 2}] and type(values) is list
    _, values = conv.to_connect_batch("orders", [b'{"a":1}', b"3"])
    assert values == [{"a": 1}, 3] and type(values) is list


def test_map_columns_slice_join_and_compare_as_the_maps_do():
    values = [_record(i) for i in range(10)]
    maps = MapColumns.of(list(values))
    assert maps is not None
    part = maps[2:5]
    assert type(part) is MapColumns and part.table() is not None and list(part) == values[2:5]
    assert maps[::3] == values[::3]
    batch = _batch(MapColumns.of(values[:4]))  # type: ignore[arg-type]
    batch.extend(_batch(MapColumns.of(values[4:])))  # type: ignore[arg-type]
    joined = batch.value_maps()
    assert joined is not None and joined.table() is not None and len(joined) == 10 and joined == values
    other = _batch(MapColumns.of(values[:4]))  # type: ignore[arg-type]
    other.extend(_batch(MapColumns.of([{"x": 1}])))  # type: ignore[arg-type]
    assert other.value_maps() is None
    assert other.values == values[:4] + [{"x": 1}]


def test_a_table_made_of_columns_gives_its_maps_once_and_the_same_objects_after():
    table = MapTable(("b", "a"), None, ((1, 2), ("x", "y")))
    maps = MapColumns.from_table(table, 2)
    first = maps.maps()
    assert first == [{"b": 1, "a": "x"}, {"b": 2, "a": "y"}] and list(first[0]) == ["b", "a"]
    assert maps.maps() is first and maps[1] is first[1]
    assert maps.table() is None


def test_numbers_print_from_columns_as_java_prints_them():
    rng = random.Random(37)
    doubles = [rng.uniform(-1e8, 1e8) for _ in range(300)] + [rng.uniform(-1e-2, 1e-2) for _ in range(300)]
    doubles += [10 ** rng.uniform(-12, 20) for _ in range(300)] + [round(rng.uniform(0, 1000), 2) for _ in range(300)]
    doubles += [0.0, -0.0, 1e-3, -1e-3, 1e7, -1e7, 9999999.999999998, 0.0009999999999999998]
    for column in (doubles, [d for d in doubles if 1e-3 <= abs(d) < 1e7], [round(d) for d in doubles],
                   [2**64, -(2**63) - 1, 2**63, 1, True, None, 0]):
        text = java_map_lines(("n",), None, [tuple(column)], len(column))
        assert text == "".join("{n=" + java_to_string(v) + "}\n" for v in column)
    assert java_map_lines(("n",), None, [(1.5, 2.5e-5)], 2) == "{n=1.5}\n{n=" + double_to_string(2.5e-5) + "}\n"
    # doubles of every bit pattern in the range orjson writes (its releases have changed how they write floats)
    bits = ((rng.getrandbits(1) << 63) | (rng.randrange(1013, 1047) << 52) | rng.getrandbits(52)
            for _ in range(25_000))  # sign, an exponent of 2**-10..2**23, any mantissa
    in_range = [x for x in (struct.unpack("<d", b.to_bytes(8, "little"))[0] for b in bits) if 1e-3 <= abs(x) < 1e7]
    assert len(in_range) > 20_000
    assert java_map_lines(("n",), None, [tuple(in_range)], len(in_range)) == \
        "".join("{n=" + double_to_string(v) + "}\n" for v in in_range)
    # each value that orjson writes otherwise than Java, alone among ordinary ones: the column is printed as Java
    for odd in (1e7, -1e7, 12345678.5, 9.99e-4, -5e-4, 1e-12, 1e16, 1.5e300, 5e-324, math.nan, math.inf, -math.inf,
                2**64, -(2**63) - 1):
        for column in ([1.5, odd, 2.25], [odd], [3, odd]):
            text = java_map_lines(("n",), None, [tuple(column)], len(column))
            assert text == "".join("{n=" + java_to_string(v) + "}\n" for v in column), column


# --- the runtime: a predicate on the chain, a bad record mid-batch with errors.tolerance=all -----------------

class _FileSink(FileStreamSinkTask):
    """FileStreamSink writing to a given file (the harness starts tasks with a config of its own)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path
        self.columnar: list[bool] = []  # per put: whether it was handed maps as columns

    def start(self, props: Any) -> None:
        super().start({**props, "file": self._path})

    def put(self, records: Any) -> None:
        maps = records.value_maps() if isinstance(records, SinkRecordBatch) else None
        self.columnar.append(maps is not None and maps.table() is not None)
        super().put(records)


def _run_sink(tmp_path: Path, values: list[Any], chain: TransformationChain, partitions: int = 1,
              **config: Any) -> tuple[Any, _FileSink, str]:
    clock = FakeClock()
    backend = MemoryBackend(clock)
    backend.log.create("lines", partitions)
    for partition in range(partitions):
        backend.log.append("lines", partition, [(None, json.dumps(v).encode(), T0 + i) for i, v in enumerate(values)
                                                if i % partitions == partition])
    out = tmp_path / "sink.txt"
    task = _FileSink(str(out))
    wt = sink_task(task, clock, backend, connector_config=config)
    key, value, header = StringConverter(), JsonConverter(), StringConverter()
    key.configure({}, True)
    value.configure({"schemas.enable": "false"}, False)
    header.configure({})
    wt.converters = TaskConverters(key, value, header)
    wt.chain = chain
    wt.initialize_and_start()
    wt.iteration()
    task.stop()
    return wt, task, out.read_text()


def _stages(transforms: list[Any], predicate: Any = None) -> TransformationChain:
    return TransformationChain([TransformStage(f"t{i}", t, predicate if i == 1 else None)
                                for i, t in enumerate(transforms)])


def test_a_chain_with_a_predicate_writes_what_the_per_record_path_writes(tmp_path):
    values = [_record(i) for i in range(10)]
    predicate = TopicNameMatches()
    predicate.configure({"pattern": "lines"})
    _, task, text = _run_sink(tmp_path, values, _stages(CHAINS["realistic"](), predicate))
    assert task.columnar == [False]  # a chain with a predicate runs record by record
    assert text == "".join(java_to_string(v) + "\n" for v in _per_record(values, CHAINS["realistic"]()))


def test_a_record_the_mask_rejects_mid_batch_is_skipped_and_the_rest_is_written_as_per_record(tmp_path):
    values = [_record(0), _record(1), {**_record(2), "user": True}, _record(3), _record(4)]
    chain = [_configured(InsertField.Value(), static_field="source", static_value="bench"),
             _configured(MaskField.Value(), fields="user", replacement="***"),
             _configured(ReplaceField.Value(), renames="amount:value")]
    wt, task, text = _run_sink(tmp_path, values, _stages(chain), **{"errors.tolerance": "all"})
    assert task.columnar == [False]  # the batch raised as columns, and went again record by record
    kept = [v for i, v in enumerate(values) if i != 2]
    assert text == "".join(java_to_string(v) + "\n" for v in _per_record(kept, chain))
    assert wt.errors.metrics.records_failed == wt.errors.metrics.records_skipped == 1


BIG = 2**70


@pytest.mark.parametrize("columns_first", [True, False], ids=["columns-first", "maps-first"])
@pytest.mark.parametrize("texts", [
    [b'{"id":1,"n":2.5}', b'{"id":%d,"n":1}' % BIG],  # orjson reads the big integer as a float
    [b'{"id":1,"n":{"x":1}}', b'{"id":2,"n":{"x":%d}}' % -BIG],  # nested, out of the columns' sight
    [b'{"id":1,"n":1e300}', b'{"id":2,"n":-3}'],  # a float beyond 2**63: checked by the text
    [b'{"id":1,"n":"%d"}' % BIG, b'{"id":2,"n":null}'],  # digits in a string only
], ids=["big-int", "nested-big-int", "big-float", "digits-in-a-string"])
def test_objects_orjson_reads_otherwise_than_the_strict_parse_come_as_the_strict_parse_reads_them(texts, columns_first,
                                                                                                    tmp_path):
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, False)
    expected = [conv.to_connect_data("orders", raw).value for raw in texts]
    _, values = conv.to_connect_batch("orders", texts)
    assert isinstance(values, MapColumns)
    if columns_first:
        table = values.table()
        assert table is not None
        assert _sink_text(_batch(values), tmp_path) == "".join(java_to_string(v) + "\n" for v in expected)
    assert [_shape(v) for v in values] == [_shape(v) for v in expected]


def test_the_columnar_path_checks_no_abc_per_record_or_per_batch(tmp_path):
    from tests.transforms.test_batch_equivalence import _CountingAbcChecks

    def checks(n: int) -> int:
        conv = JsonConverter()
        conv.configure({"schemas.enable": "false"}, False)
        transforms = CHAINS["realistic"]()
        task = FileStreamSinkTask()
        task.start({"file": str(tmp_path / f"abc-{n}.txt")})
        raws = [json.dumps(_record(i)).encode() for i in range(n)]
        with _CountingAbcChecks() as counter:
            _, values = conv.to_connect_batch("orders", raws)
            batch = _batch(values)
            for transform in transforms:
                batch = transform.apply_batch(batch)
            task.put(batch)
        task.stop()
        assert (tmp_path / f"abc-{n}.txt").read_text().count("\n") == n
        return counter.count

    assert (checks(10), checks(1000)) == (0, 0)


def test_two_partitions_of_one_key_set_reach_the_sink_as_one_table_and_print_as_per_record(tmp_path):
    values = [_record(i) for i in range(20)]
    _, task, text = _run_sink(tmp_path, values, _stages(CHAINS["realistic"]()), partitions=2)
    assert task.columnar == [True]
    expected = [java_to_string(v) + "\n" for v in _per_record(values, CHAINS["realistic"]())]
    assert sorted(text.splitlines(keepends=True)) == sorted(expected)
    assert text == "".join(expected[0::2] + expected[1::2])  # partition 0's records, then partition 1's
