"""Struct.of: many Structs of one schema, each value checked as Struct.put checks it."""

import pytest

from connect.api import DataException, Schema, SchemaBuilder, Struct

TEXT = SchemaBuilder.struct().field("a", Schema.OPTIONAL_STRING_SCHEMA).field("b", Schema.STRING_SCHEMA).build()
MIXED = SchemaBuilder.struct().field("n", Schema.INT32_SCHEMA).field("s", Schema.OPTIONAL_STRING_SCHEMA).build()


def test_of_equals_a_struct_built_by_put():
    assert Struct.of(TEXT, ["x", "y"]) == Struct(TEXT).put("a", "x").put("b", "y")
    assert Struct.of(MIXED, [7, None]) == Struct(MIXED).put("n", 7)


@pytest.mark.parametrize(("schema", "values", "message"), [
    (TEXT, ["x", None], 'null used for required field for field: "b"'),
    (TEXT, ["x", 1], 'int for field: "b"'),
    (TEXT, ["x"], "1 values for the 2 fields"),
    (MIXED, [2**40, "s"], "n"),
    (MIXED, ["7", "s"], 'str for field: "n"'),
])
def test_of_refuses_what_put_refuses_naming_the_field(schema, values, message):
    with pytest.raises(DataException, match=message.replace("(", r"\(")):
        Struct.of(schema, values)


def test_of_needs_a_struct_schema():
    with pytest.raises(DataException, match="Not a struct schema"):
        Struct.of(Schema.STRING_SCHEMA, ["x"])


def test_the_struct_keeps_its_own_copy_of_the_values():
    values = ["x", "y"]
    made = Struct.of(TEXT, values)
    values[0] = "changed"
    assert made.get("a") == "x"


def test_an_equal_schema_built_again_is_not_compared_field_by_field_per_struct(monkeypatch) -> None:
    """A task restarted (or a second task) builds its own equal schema: the text-only cache must not compare
    it with the first one's on every Struct."""
    first = SchemaBuilder.struct().field("a", Schema.OPTIONAL_STRING_SCHEMA).build()
    Struct.of(first, ["x"])
    again = SchemaBuilder.struct().field("a", Schema.OPTIONAL_STRING_SCHEMA).build()
    assert again == first and again is not first
    compared = []
    original = Schema._identity
    monkeypatch.setattr(Schema, "_identity", lambda self: compared.append(self) or original(self))
    for _ in range(3):
        assert Struct.of(again, ["y"]).get("a") == "y"
    assert compared == []
    with pytest.raises(DataException):  # the cached answer is still the schema's own
        Struct.of(again, [b"raw"])


def test_many_from_valid_values_makes_one_struct_per_row_of_the_schema() -> None:
    rows = [["x", "y"], ["z", None]]
    made = Struct.many_from_valid_values(TEXT, rows)
    assert made == [Struct(TEXT).put("a", "x").put("b", "y"), Struct(TEXT).put("a", "z")]
    assert made[0].schema is TEXT
    with pytest.raises(DataException, match="does not fit the 2 fields"):
        Struct.many_from_valid_values(TEXT, [["x", "y"], ["too short"]])
    with pytest.raises(DataException, match="does not fit"):
        Struct.many_from_valid_values(Schema.STRING_SCHEMA, [["x"]])
