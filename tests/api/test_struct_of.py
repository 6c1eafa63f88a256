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
