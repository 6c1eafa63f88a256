"""The registry's Avro parser and reader/writer checker (connect.schema_registry.compatibility): the rules one by
one, with the verdicts Java Avro's SchemaCompatibility (Confluent's) gives, and the verdicts of the Apache
``avro`` package's checker (the registry's before issue #35) on thousands of generated pairs of schemas."""

from __future__ import annotations

import json
import random

import avro.schema
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from connect.schema_registry.api import Compatibility, SchemaRegistryError
from connect.schema_registry.compatibility import incompatibilities, parse_schema


def problems(reader: object, writer: object) -> list[str]:
    """Why ``reader`` cannot read what ``writer`` wrote (BACKWARD: the new schema is the reader)."""
    return incompatibilities(Compatibility.BACKWARD, parse_schema(json.dumps(reader)),
                             [(1, parse_schema(json.dumps(writer)))])


def rec(name: str, *fields: dict[str, object], **extra: object) -> dict[str, object]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def field(name: str, field_type: object, **extra: object) -> dict[str, object]:
    return {"name": name, "type": field_type, **extra}


ENUM_AB = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
ENUM_ABC = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}


@pytest.mark.parametrize("reader, writer, kind", [
    # promotions, and only these
    ("long", "int", None), ("float", "int", None), ("double", "long", None), ("double", "float", None),
    ("bytes", "string", None), ("string", "bytes", None),
    ("int", "long", "type_mismatch"), ("float", "double", "type_mismatch"), ("boolean", "null", "type_mismatch"),
    ({"type": "array", "items": "long"}, {"type": "array", "items": "int"}, None),
    ({"type": "map", "values": "int"}, {"type": "map", "values": "string"}, "type_mismatch"),
    # records: fields by name, a default for one the writer lacks, aliases, names
    (rec("R", field("a", "int")), rec("R", field("b", "int"), field("a", "int")), None),
    (rec("R", field("a", "int"), field("n", "int", default=0)), rec("R", field("a", "int")), None),
    (rec("R", field("a", "int"), field("n", "int")), rec("R", field("a", "int")),
     "reader_field_missing_default_value"),
    (rec("R", field("new", "int", aliases=["old"])), rec("R", field("old", "int")), None),
    (rec("R", field("a", "int")), rec("S", field("a", "int")), "name_mismatch"),
    (rec("R", field("a", "int"), aliases=["x.S"]), rec("S", field("a", "int"), namespace="x"), None),
    (rec("R", field("a", "int"), namespace="one"), rec("R", field("a", "int"), namespace="two"), None),
    # enums: every writer symbol, unless the reader has a default
    (ENUM_ABC, ENUM_AB, None), (ENUM_AB, ENUM_ABC, "missing_enum_symbols"),
    ({**ENUM_AB, "default": "A"}, ENUM_ABC, None),
    (rec("R", field("e", {**ENUM_AB, "default": "A"})), rec("R"), "type_mismatch"),  # Java's rule, kept
    # fixed: name and size
    ({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 8}, "fixed_size_mismatch"),
    # unions: each writer branch needs a reader branch that reads it
    (["null", "string"], "string", None), ("string", ["null", "string"], "type_mismatch"),
    (["null", "long"], ["null", "int"], None), (["null", "int"], ["null", "long"], "missing_union_branch"),
    (["null", "int"], "string", "missing_union_branch"),
    ([rec("A", field("x", "int")), rec("B", field("y", "int"))], rec("B", field("y", "int")), None),
    ([rec("A", field("x", "int")), rec("B", field("y", "long"))], rec("B", field("y", "string")),
     "missing_union_branch"),
    (["null", rec("Renamed", field("a", "int"), aliases=["R"])], rec("R", field("a", "int")), None),
    (["null", {"type": "enum", "name": "E", "symbols": ["A"], "namespace": "x"}], {**ENUM_AB, "namespace": "y"},
     "missing_union_branch"),
    (["null", {**ENUM_AB, "namespace": "x"}], {**ENUM_AB, "namespace": "y"}, None),  # simple names compared
    # recursive types end
    (rec("Node", field("next", ["null", "Node"])), rec("Node", field("next", ["null", "Node"])), None),
    (rec("Node", field("v", "long"), field("next", ["null", "Node"])),
     rec("Node", field("v", "int"), field("next", ["null", "Node"])), None),
])
def test_the_reader_writer_rules(reader: object, writer: object, kind: str | None) -> None:
    found = problems(reader, writer)
    if kind is None:
        assert found == []
    else:
        assert len(found) == 1 and f": {kind} at /" in found[0], found


def test_a_problem_names_its_place_and_every_compared_version() -> None:
    old = parse_schema(json.dumps(rec("R", field("a", "int"), field("b", "int"))))
    new = parse_schema(json.dumps(rec("R", field("a", "boolean"), field("b", "int"), field("c", "int"))))
    found = incompatibilities(Compatibility.FULL_TRANSITIVE, new, [(2, old), (1, old)])
    assert found == [
        "new schema cannot read data written with version 2: type_mismatch at /fields/0/type: reader type: "
        "boolean not compatible with writer type: int; reader_field_missing_default_value at /fields/2: c",
        "version 2 cannot read data written with the new schema: type_mismatch at /fields/0/type: reader type: "
        "int not compatible with writer type: boolean",
        "new schema cannot read data written with version 1: type_mismatch at /fields/0/type: reader type: "
        "boolean not compatible with writer type: int; reader_field_missing_default_value at /fields/2: c",
        "version 1 cannot read data written with the new schema: type_mismatch at /fields/0/type: reader type: "
        "int not compatible with writer type: boolean",
    ]


@pytest.mark.parametrize("schema, reason", [
    ('{"type": "record", "name": "R"}', 'a record needs "fields"'),
    ('{"type": "record", "name": "1R", "fields": []}', "invalid name '1R'"),
    ('{"type": "record", "name": "R", "fields": [{"name": "", "type": "int"}]}', 'a field needs "name"'),
    ('{"type": "record", "name": "R", "fields": [{"name": "a-b", "type": "int", "aliases": "c"}]}', None),
    ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}]}',
     "duplicate field a in record R (at /fields/1/name)"),
    ('{"type": "record", "name": "R", "fields": [{"name": "a"}]}', 'field a has no "type"'),
    ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "R2"}]}',
     "undefined name: 'R2' (a named type must be defined before it is referred to) in field 'a' (at /fields/0/type)"),
    ('[{"type": "record", "name": "R", "fields": []}, {"type": "record", "name": "R", "fields": []}]',
     "can't redefine: R"),
    ('["int", "int"]', "duplicate in union: int (at /1)"),
    ('["int", ["null"]]', "a union cannot hold a union directly (at /1)"),
    ('{"type": "enum", "name": "E", "symbols": ["A", "A"]}', "duplicate enum symbol: A"),
    ('{"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}', "the enum default 'B' is not one of"),
    ('{"type": "fixed", "name": "F", "size": -1}', 'a fixed needs "size"'),
    ('{"type": "array"}', 'an array needs "items"'),
    ('{"type": {"type": "int"}}', '"type" must be a string'),
    ('{"type": "int", "x": 1, "logicalType": "no-such"}', None),  # unknown properties and logical types: ignored
    ('{"type": "record", "name": "int", "fields": []}', "a primitive type's name"),
    ("42", "42 is not a schema"),
])
def test_invalid_schemas_are_42201_saying_why_and_where(schema: str, reason: str | None) -> None:
    if reason is None:
        parse_schema(schema)
        return
    with pytest.raises(SchemaRegistryError) as refused:
        parse_schema(schema)
    assert refused.value.error_code == 42201 and reason in refused.value.message, refused.value.message


# --- the same verdicts as the Apache avro package's checker, on generated pairs ------------------------------------
NAMES = ("A", "B", "C")
FIELDS = ("a", "b", "c", "d")
SYMBOLS = ("S1", "S2", "S3")
PRIMITIVE = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


class _Generator:
    """Random schemas from a few names, fields and symbols, so that two of them often share names and fields: a
    name already defined in the schema is referred to (recursion included) instead of defined again."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.defined: set[str] = set()

    def schema(self, depth: int = 0) -> object:
        rng = self.rng
        roll = rng.random()
        if depth >= 4 or roll < 0.3:
            return rng.choice(PRIMITIVE)
        if roll < 0.4:
            return {"type": "array", "items": self.schema(depth + 1)}
        if roll < 0.45:
            return {"type": "map", "values": self.schema(depth + 1)}
        if roll < 0.65:
            return self.union(depth)
        name = rng.choice(NAMES)
        if name in self.defined:
            return name
        self.defined.add(name)
        kind = rng.random()
        if kind < 0.6:
            fields = rng.sample(FIELDS, rng.randint(0, 3))
            return {"type": "record", "name": name, "fields": [self.field(f, depth) for f in fields]}
        if kind < 0.85:
            enum: dict[str, object] = {"type": "enum", "name": name,
                                       "symbols": rng.sample(SYMBOLS, rng.randint(1, 3))}
            if rng.random() < 0.3:
                enum["default"] = rng.choice(enum["symbols"])  # type: ignore[arg-type]
            return enum
        return {"type": "fixed", "name": name, "size": rng.randint(1, 2)}

    def field(self, name: str, depth: int) -> dict[str, object]:
        out: dict[str, object] = {"name": name, "type": self.schema(depth + 1)}
        if self.rng.random() < 0.3:
            out["default"] = None  # not validated, by either: only its presence counts
        if self.rng.random() < 0.15:
            out["aliases"] = [self.rng.choice(FIELDS)]
        return out

    def union(self, depth: int) -> list[object]:
        branches: list[object] = []
        kinds: set[str] = set()
        for _ in range(self.rng.randint(1, 3)):
            branch = self.schema(depth + 1)
            key = branch if isinstance(branch, str) else (branch.get("name") or branch["type"]) \
                if isinstance(branch, dict) else "union"
            if key in kinds or isinstance(branch, list):
                continue
            if isinstance(branch, dict) and "name" in branch:
                kinds.add(str(branch["name"]))
            kinds.add(str(key))
            branches.append(branch)
        return branches


_WIDER = {"int": "long", "long": "double", "float": "double", "string": "bytes", "bytes": "string", "null": "int"}


def _mutated(schema: object, rng: random.Random) -> object:
    """``schema`` with a few random changes of the kinds schema evolution makes: a type promoted or changed, a
    field added (with or without a default) or dropped, an enum symbol or union branch added or dropped, a
    name or size changed, a type made nullable."""
    if isinstance(schema, str):
        roll = rng.random()
        if roll < 0.15 and schema in _WIDER:
            return _WIDER[schema]
        if roll < 0.2:
            return ["null", schema] if schema != "null" else schema
        return schema
    if isinstance(schema, list):
        branches = [_mutated(b, rng) if isinstance(b, dict) else b for b in schema]
        if len(branches) > 1 and rng.random() < 0.2:
            branches.pop(rng.randrange(len(branches)))
        return branches
    assert isinstance(schema, dict)
    out = dict(schema)
    kind = out["type"]
    if kind == "array":
        out["items"] = _mutated(out["items"], rng)
    elif kind == "map":
        out["values"] = _mutated(out["values"], rng)
    elif kind == "record":
        fields = [dict(f, type=_mutated(f["type"], rng)) for f in out["fields"]]
        if fields and rng.random() < 0.2:
            fields.pop(rng.randrange(len(fields)))
        unused = [f for f in FIELDS if f not in {x["name"] for x in fields}]
        if unused and rng.random() < 0.3:
            added: dict[str, object] = {"name": rng.choice(unused), "type": rng.choice(PRIMITIVE)}
            if rng.random() < 0.5:
                added["default"] = None
            fields.append(added)
        out["fields"] = fields
    elif kind == "enum":
        symbols = list(out["symbols"])
        if rng.random() < 0.3 and len(symbols) < len(SYMBOLS):
            symbols.append(next(s for s in SYMBOLS if s not in symbols))
        elif rng.random() < 0.3 and len(symbols) > 1 and out.get("default") != symbols[-1]:
            symbols.pop()
        out["symbols"] = symbols
    elif kind == "fixed" and rng.random() < 0.2:
        out["size"] = 3
    if "name" in out and rng.random() < 0.05:
        out["aliases"] = [out["name"]]
        out["name"] = out["name"] + "2"
    return out


def _apache_verdict(reader: str, writer: str) -> bool:
    checker = ReaderWriterCompatibilityChecker()
    result = checker.get_compatibility(avro.schema.parse(reader), avro.schema.parse(writer))
    return result.compatibility is SchemaCompatibilityType.compatible


def test_verdicts_match_the_apache_avro_checker_on_generated_pairs() -> None:
    rng = random.Random(35)
    compared = disagreements = compatible = 0
    samples: list[str] = []
    while compared < 3000:
        first = _Generator(rng).schema()
        second = _mutated(first, rng) if rng.random() < 0.7 else _Generator(rng).schema()
        texts = [json.dumps(first), json.dumps(second)]
        try:
            parsed = [avro.schema.parse(text) for text in texts]
        except Exception:
            continue  # the generator's rare invalid schema (e.g. a name referred to inside its own union)
        del parsed
        ours = [parse_schema(text) for text in texts]
        for reader, writer in ((0, 1), (1, 0)):
            expected = _apache_verdict(texts[reader], texts[writer])
            found = not incompatibilities(Compatibility.BACKWARD, ours[reader], [(1, ours[writer])])
            compared += 1
            compatible += expected
            if found != expected:
                disagreements += 1
                samples.append(f"reader {texts[reader]} writer {texts[writer]}: avro {expected}, ours {found}")
    assert disagreements == 0, "\n".join(samples[:5])
    assert 0.3 < compatible / compared < 0.8, compatible / compared  # both verdicts well represented
