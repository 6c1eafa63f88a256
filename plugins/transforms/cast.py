"""Cast: change the primitive type of fields, or of the whole key or value."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import logging
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    DataException,
    Date,
    Field,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect.api.java_text import copy_for_puts, copy_laid_out, hash_map_order
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    parse_config,
    parsed_by,
)
from plugins.transforms._requirements import require_map, require_struct, type_name
from plugins.transforms._schemas import SchemaCache, copy_schema_basics, field_value

__all__ = ["Cast"]

log = logging.getLogger(__name__)

SPEC = "spec"

_PURPOSE = "cast types"

_INPUT_TYPES = (
    Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64, Type.BOOLEAN, Type.STRING, Type.BYTES,
)  # fmt: skip
_OUTPUT_TYPES = _INPUT_TYPES[:-1]
_INPUT_TYPE_LIST = "[" + ", ".join(t.name for t in _INPUT_TYPES) + "]"
_OUTPUT_TYPE_LIST = "[" + ", ".join(t.name for t in _OUTPUT_TYPES) + "]"

_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_MS_PER_DAY = 86_400_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _parse_spec(mappings: list[str]) -> tuple[dict[str, Type], Type | None]:
    """Per-field casts, or the single whole-value cast; raises ConfigException on a bad spec."""
    if not mappings:
        raise ConfigException(SPEC, mappings, "Must specify at least one field to cast.")
    casts: dict[str, Type] = {}
    whole_value: Type | None = None
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) > 2:
            raise ConfigException(SPEC, mappings, f"Invalid cast mapping: {mapping}")
        target = _output_type(parts[-1].strip(), mappings)
        if len(parts) == 1:
            whole_value = target
        else:
            casts[parts[0].strip()] = target
    if whole_value is not None and len(mappings) > 1:
        raise ConfigException(
            SPEC,
            mappings,
            "Cast transformations that specify a type to cast the entire value to may only specify a single "
            "cast in their spec",
        )
    return casts, whole_value


def _output_type(name: str, mappings: list[str]) -> Type:
    try:
        target = Type[name.upper()]
    except KeyError:
        raise ConfigException(SPEC, mappings, f"Invalid type found in casting spec: {name}") from None
    if target not in _OUTPUT_TYPES:
        raise ConfigException(
            SPEC,
            mappings,
            f"Cast transformation does not support casting to {target.name}; supported types are {_OUTPUT_TYPE_LIST}",
        )
    return target



CONFIG_DEF = ConfigDef().define(
    SPEC,
    ConfigType.LIST,
    validator=parsed_by(_parse_spec, "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"),
    importance=Importance.HIGH,
    documentation="List of fields and the type to cast them to of the form field1:type,field2:type to cast "
    "fields of Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, "
    "int64, float32, float64, boolean, and string. Note that binary fields can only be cast to string.",
)
define_replace_null_with_default(CONFIG_DEF)


# --- value conversions -----------------------------------------------------


def _schemaless_type(value: Any) -> Type:
    """The Connect type a schemaless value has, as Kafka's ConnectSchema.schemaType infers it."""
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float | decimal.Decimal):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return Type.BYTES
    if isinstance(value, list | tuple):
        return Type.ARRAY
    if isinstance(value, dict):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    raise DataException(
        f"Cast transformation was passed a value of type {type_name(value)} which is not supported by "
        "Connect's data API"
    )


def _wrap(number: int, bits: int) -> int:
    # Java's narrowing keeps the low-order bits, so 300 cast to int8 is 44.
    mask = (1 << bits) - 1
    number &= mask
    return number - (1 << bits) if number >> (bits - 1) else number


def _to_integer(value: Any, target: Type, original: Any) -> int:
    bits = _INT_BITS[target]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return _wrap(value, bits)
    if isinstance(value, float):
        # A double goes to int (or long) saturating, then narrows by wrapping, like Java's casts.
        wide = 64 if bits == 64 else 32
        lo, hi = -(1 << (wide - 1)), (1 << (wide - 1)) - 1
        if math.isnan(value):
            return 0
        number = hi if value >= hi else lo if value <= lo else int(value)
        return _wrap(number, bits)
    if isinstance(value, decimal.Decimal):
        return _wrap(int(value), bits)
    if isinstance(value, str):
        if not _JAVA_INTEGER.fullmatch(value):
            raise DataException(f"Value ({original}) was out of range for requested data type")
        number = int(value)
        if number != _wrap(number, bits):
            raise DataException(f"Value ({original}) was out of range for requested data type")
        return number
    raise DataException(f"Unexpected type in Cast transformation: {type_name(value)}")


def _to_float(value: Any, original: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            if "_" in text:
                raise ValueError(text)
            return float(text)
        except ValueError:
            raise DataException(f"Value ({original}) was out of range for requested data type") from None
    raise DataException(f"Unexpected type in Cast transformation: {type_name(value)}")


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        # Java compares the long value, so 0.5 is false.
        return _to_integer(value, Type.INT64, value) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise DataException(f"Unexpected type in Cast transformation: {type_name(value)}")


def java_double_text(number: float) -> str:
    """Double.toString: plain between 1e-3 and 1e7, computerized scientific notation otherwise."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0 or 1e-3 <= abs(number) < 1e7:
        return repr(float(number))
    sign, digits, exponent = decimal.Decimal(repr(float(number))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exponent) - 1
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{power}"


def _to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_text(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        return _datetime_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}Z"
    return str(value)


def _datetime_text(value: dt.datetime) -> str:
    # Like Connect's Values.dateFormatFor: an instant on midnight prints as a date, else as a timestamp.
    millis = Timestamp.from_logical(Timestamp.SCHEMA, value)
    if 0 <= millis < _MS_PER_DAY:
        moment = _EPOCH + dt.timedelta(milliseconds=millis)
        return _to_string(moment.time())
    if millis % _MS_PER_DAY == 0:
        return (_EPOCH + dt.timedelta(milliseconds=millis)).date().isoformat()
    moment = _EPOCH + dt.timedelta(milliseconds=millis)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_LOGICAL_ENCODERS = {
    Date.LOGICAL_NAME: Date.from_logical,
    Time.LOGICAL_NAME: Time.from_logical,
    Timestamp.LOGICAL_NAME: Timestamp.from_logical,
}


def cast_value(schema: Schema | None, value: Any, target: Type) -> Any:
    """``value`` (described by ``schema``, or inferred when schemaless) as the ``target`` type."""
    if value is None:
        return None
    source = schema.type if schema is not None else _schemaless_type(value)
    if source not in _INPUT_TYPES:
        raise DataException(
            f"Cast transformation does not support casting from {source.name}; supported types are {_INPUT_TYPE_LIST}"
        )
    original = value
    if target is Type.STRING:
        return _to_string(value)
    if schema is not None and schema.name in _LOGICAL_ENCODERS:
        # Dates and times cast to numbers through their Connect encoding (days, millis).
        value = _LOGICAL_ENCODERS[schema.name](schema, value)
    if target in _INT_BITS:
        return _to_integer(value, target, original)
    if target in (Type.FLOAT32, Type.FLOAT64):
        return _to_float(value, original)
    return _to_boolean(value)


class _Plan(NamedTuple):
    schema: Schema
    # (source field, target field, cast type or None to copy as is)
    copies: tuple[tuple[Field, Field, Type | None], ...]


@key_value_variants
class Cast(KeyOrValueTransformation[ConnectRecord]):
    """Cast fields or the entire key or value to a specific type, e.g. to force an integer field to a smaller width.

    Casts from integers, floats, boolean and string to any of them, and from
    binary to string (base64). Only top-level fields are cast; nested
    structs, arrays and maps are copied unchanged.
    Use ``Cast.Key`` for the record key or ``Cast.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._casts: dict[str, Type] = {}
        self._cast_order: tuple[str, ...] = ()
        self._whole_value: Type | None = None
        self._replace_null_with_default = True
        self._plans = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._casts, self._whole_value = _parse_spec(config.get_list(SPEC))
        self._cast_order = tuple(hash_map_order(list(self._casts)))
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._plans.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self._operating_value(record)
        if value is None:
            return record
        schema = self._operating_schema(record)
        if schema is None:
            return self._apply_schemaless(record, value)
        plan = self._plans.get_or_make(schema, self._plan)
        if self._whole_value is not None:
            return self._new_record(record, plan.schema, cast_value(schema, value, self._whole_value))
        struct = require_struct(value, _PURPOSE)
        updated = Struct(plan.schema)
        replace = self._replace_null_with_default
        for source, target, cast_to in plan.copies:
            original = field_value(struct, source, replace)
            updated.put(target, cast_value(source.schema, original, cast_to) if cast_to else original)
        return self._new_record(record, plan.schema, updated)

    def _apply_schemaless(self, record: ConnectRecord, value: Any) -> ConnectRecord:
        if self._whole_value is not None:
            return self._new_record(record, None, cast_value(None, value, self._whole_value))
        original = require_map(value, _PURPOSE)
        updated = copy_for_puts(original)  # Java's new HashMap<>(value), then the puts
        # As in Kafka, a field named in the spec but absent from the map is written as null; the fields are
        # put in the order Kafka's HashMap of the spec iterates
        for name in self._cast_order:
            updated[name] = cast_value(None, original.get(name), self._casts[name])
        return self._new_record(record, None, copy_laid_out(original, updated))

    def _plan(self, schema: Schema) -> _Plan:
        if self._whole_value is not None:
            builder = SchemaBuilder.type_of(self._whole_value)
            # A logical type's name would mislabel the cast value, so only plain schemas keep theirs.
            if schema.name not in _LOGICAL_ENCODERS and schema.type in _INPUT_TYPES:
                copy_schema_basics(schema, builder)
            self._finish(builder, schema, self._whole_value)
            return _Plan(builder.build(), ())
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields():
            target = self._casts.get(field.name)
            if target is None:
                builder.field(field.name, field.schema)
                continue
            field_builder = SchemaBuilder.type_of(target)
            self._finish(field_builder, field.schema, target)
            builder.field(field.name, field_builder.build())
        if schema.optional:
            builder.optional()
        updated = builder.build()
        copies = tuple(
            (field, updated.field(field.name), self._casts.get(field.name)) for field in schema.fields()
        )
        return _Plan(updated, copies)  # type: ignore[arg-type]

    @staticmethod
    def _finish(builder: SchemaBuilder, original: Schema, target: Type) -> None:
        if original.optional:
            builder.optional()
        if original.default_value is not None:
            builder.default_value(cast_value(original, original.default_value, target))

    def close(self) -> None:
        self._plans.clear()
