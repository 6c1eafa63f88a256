"""TimestampConverter: convert a timestamp between strings, Unix epoch numbers and Connect's Date/Time/Timestamp."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectException,
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
    ValidString,
)
from connect.api.java_text import copy_for_puts, copy_laid_out
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    parse_config,
)
from plugins.transforms._dateformat import JavaDateFormat
from plugins.transforms._requirements import require_map, require_struct_or_none, type_name
from plugins.transforms._schemas import SchemaCache, copy_schema_basics, field_value

__all__ = ["TimestampConverter"]

FIELD = "field"
TARGET_TYPE = "target.type"
FORMAT = "format"
UNIX_PRECISION = "unix.precision"

TYPE_STRING = "string"
TYPE_UNIX = "unix"
TYPE_DATE = "Date"
TYPE_TIME = "Time"
TYPE_TIMESTAMP = "Timestamp"

PRECISION_SECONDS = "seconds"
PRECISION_MILLIS = "milliseconds"
PRECISION_MICROS = "microseconds"
PRECISION_NANOS = "nanoseconds"

_PURPOSE = "converting timestamp formats"

CONFIG_DEF = (
    ConfigDef()
    .define(FIELD, ConfigType.STRING, "", importance=Importance.HIGH,
            documentation="The field containing the timestamp, or empty if the entire value is a timestamp")
    .define(TARGET_TYPE, ConfigType.STRING,
            validator=ValidString.in_(TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP),
            importance=Importance.HIGH,
            documentation="The desired timestamp representation: string, unix, Date, Time, or Timestamp")
    .define(FORMAT, ConfigType.STRING, "", importance=Importance.MEDIUM,
            documentation="A SimpleDateFormat-compatible format for the timestamp. Used to generate the output "
            "when type=string or used to parse the input if the input is a string.")
    .define(UNIX_PRECISION, ConfigType.STRING, PRECISION_MILLIS,
            ValidString.in_(PRECISION_NANOS, PRECISION_MICROS, PRECISION_MILLIS, PRECISION_SECONDS),
            Importance.LOW,
            "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds. "
            "Used to generate the output when type=unix or used to parse the input if the input is a Long. "
            "Note: This SMT will cause precision loss during conversions from, and to, values with "
            "sub-millisecond components.")
)
define_replace_null_with_default(CONFIG_DEF)

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)
_OPTIONAL_DATE = Date.builder().optional().build()
_OPTIONAL_TIME = Time.builder().optional().build()
_OPTIONAL_TIMESTAMP = Timestamp.builder().optional().build()
# How many units of each precision make one millisecond, as (multiplier, divisor).
_PRECISION_SCALE = {
    PRECISION_SECONDS: (1000, 1),
    PRECISION_MILLIS: (1, 1),
    PRECISION_MICROS: (1, 1000),
    PRECISION_NANOS: (1, 1_000_000),
}


def _truncating_div(numerator: int, denominator: int) -> int:
    # Java's TimeUnit conversions truncate toward zero, unlike Python's floor division.
    quotient = abs(numerator) // denominator
    return quotient if numerator >= 0 else -quotient


def _as_instant(value: Any) -> dt.datetime:
    """Any Connect date/time value as an aware UTC datetime (Kafka's java.util.Date)."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=_UTC)
    return dt.datetime.combine(_EPOCH.date(), value.replace(tzinfo=None), tzinfo=_UTC)


class _Translator(NamedTuple):
    """One timestamp representation: to and from the universal instant, and its schema."""

    to_instant: Callable[[Any], dt.datetime]
    from_instant: Callable[[dt.datetime], Any]
    optional_schema: Schema
    required_schema: Schema


class _Plan(NamedTuple):
    schema: Schema
    copies: tuple[tuple[Field, Field], ...]
    source_type: str | None


@key_value_variants
class TimestampConverter(KeyOrValueTransformation[ConnectRecord]):
    """Convert timestamps between different formats such as Unix epoch, strings, and Connect Date/Timestamp types.

    Applies to one field (``field``) or to the entire value.
    Use ``TimestampConverter.Key`` for the record key or ``TimestampConverter.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._field = ""
        self._target = TYPE_TIMESTAMP
        self._format: JavaDateFormat | None = None
        self._precision = PRECISION_MILLIS
        self._replace_null_with_default = True
        self._translators: dict[str, _Translator] = self._build_translators()
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._field = config.get_string(FIELD) or ""
        self._target = config.get_string(TARGET_TYPE) or ""
        self._precision = config.get_string(UNIX_PRECISION) or PRECISION_MILLIS
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        pattern = config.get_string(FORMAT) or ""
        if self._target == TYPE_STRING and not pattern.strip():
            raise ConfigException(
                FORMAT, pattern, "TimestampConverter requires format option to be specified when using string timestamps"
            )
        self._format = None
        if pattern.strip():
            try:
                self._format = JavaDateFormat(pattern)
            except ValueError as exc:
                raise ConfigException(
                    FORMAT,
                    pattern,
                    f"TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: {exc}",
                ) from None
        self._schemas.clear()

    # --- the representations ---

    def _build_translators(self) -> dict[str, _Translator]:
        return {
            TYPE_STRING: _Translator(
                self._string_to_instant, self._instant_to_string, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA
            ),
            TYPE_UNIX: _Translator(
                self._unix_to_instant, self._instant_to_unix, Schema.OPTIONAL_INT64_SCHEMA, Schema.INT64_SCHEMA
            ),
            TYPE_DATE: _Translator(
                self._logical_to_instant("Date"), lambda instant: instant.date(), _OPTIONAL_DATE, Date.SCHEMA
            ),
            TYPE_TIME: _Translator(
                self._logical_to_instant("Time"),
                lambda instant: instant.time().replace(tzinfo=None),
                _OPTIONAL_TIME,
                Time.SCHEMA,
            ),
            TYPE_TIMESTAMP: _Translator(
                self._logical_to_instant("Timestamp"), lambda instant: instant, _OPTIONAL_TIMESTAMP, Timestamp.SCHEMA
            ),
        }

    def _string_to_instant(self, value: Any) -> dt.datetime:
        if not isinstance(value, str):
            raise DataException(f"Expected string timestamp to be a String, but found {type_name(value)}")
        if self._format is None:
            raise DataException("TimestampConverter requires the format option to parse string timestamps")
        try:
            return self._format.parse(value)
        except ValueError:
            raise DataException(
                f"Could not parse timestamp: value ({value}) does not match pattern ({self._format.pattern})"
            ) from None

    def _instant_to_string(self, instant: dt.datetime) -> str:
        assert self._format is not None, "configure() requires a format for string targets"
        return self._format.format(instant)

    def _unix_to_instant(self, value: Any) -> dt.datetime:
        if not isinstance(value, int) or isinstance(value, bool):
            raise DataException(f"Expected Unix timestamp to be a Long, but found {type_name(value)}")
        multiplier, divisor = _PRECISION_SCALE[self._precision]
        millis = _truncating_div(value * multiplier, divisor)
        return _EPOCH + dt.timedelta(milliseconds=millis)

    def _instant_to_unix(self, instant: dt.datetime) -> int:
        millis = Timestamp.from_logical(Timestamp.SCHEMA, instant)
        multiplier, divisor = _PRECISION_SCALE[self._precision]
        return _truncating_div(millis * divisor, multiplier)

    @staticmethod
    def _logical_to_instant(kind: str) -> Callable[[Any], dt.datetime]:
        def convert(value: Any) -> dt.datetime:
            if not isinstance(value, dt.date | dt.time):
                raise DataException(f"Expected {kind} to be a java.util.Date, but found {type_name(value)}")
            return _as_instant(value)

        return convert

    def _convert(self, value: Any, source_type: str | None) -> Any:
        if value is None:
            return None
        if source_type is None:
            source_type = self._infer_type(value)
        instant = self._translators[source_type].to_instant(value)
        return self._translators[self._target].from_instant(instant)

    @staticmethod
    def _infer_type(value: Any) -> str:
        if isinstance(value, dt.date | dt.time):
            return TYPE_TIMESTAMP
        if isinstance(value, int) and not isinstance(value, bool):
            return TYPE_UNIX
        if isinstance(value, str):
            return TYPE_STRING
        raise DataException(f"TimestampConverter does not support {type_name(value)} objects as timestamps")

    @staticmethod
    def _type_of_schema(schema: Schema) -> str:
        if schema.name == Timestamp.LOGICAL_NAME:
            return TYPE_TIMESTAMP
        if schema.name == Date.LOGICAL_NAME:
            return TYPE_DATE
        if schema.name == Time.LOGICAL_NAME:
            return TYPE_TIME
        if schema.type is Type.STRING:
            return TYPE_STRING
        if schema.type is Type.INT64:
            return TYPE_UNIX
        raise ConnectException(f"Schema {schema!r} does not correspond to a known timestamp type format")

    def _target_schema(self, optional: bool) -> Schema:
        translator = self._translators[self._target]
        return translator.optional_schema if optional else translator.required_schema

    # --- records ---

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self._operating_schema(record)
        value = self._operating_value(record)
        if schema is None:
            if value is None or not self._field:
                return self._new_record(record, None, self._convert(value, None))
            original = require_map(value, _PURPOSE)
            updated = copy_for_puts(original)  # Java's new HashMap<>(value), then the put
            # As in Kafka, a missing field is written back as null.
            updated[self._field] = self._convert(updated.get(self._field), None)
            return self._new_record(record, None, copy_laid_out(original, updated))
        if not self._field:
            return self._new_record(
                record, self._target_schema(schema.optional), self._convert(value, self._type_of_schema(schema))
            )
        struct = require_struct_or_none(value, _PURPOSE)
        plan = self._schemas.get(schema)
        if plan is None:
            plan = self._plan(schema)
            self._schemas.put(schema, plan)
        return self._new_record(record, plan.schema, self._convert_struct(struct, plan))

    def _plan(self, schema: Schema) -> _Plan:
        # A struct-level default is not carried over: it would need converting into a struct of the
        # new schema, and the new schema cannot exist before its default does.
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        source_type: str | None = None
        for field in schema.fields():
            if field.name == self._field:
                source_type = self._type_of_schema(field.schema)
                builder.field(field.name, self._target_schema(field.schema.optional))
            else:
                builder.field(field.name, field.schema)
        if schema.optional:
            builder.optional()
        updated = builder.build()
        copies = tuple((field, updated.field(field.name)) for field in schema.fields())
        return _Plan(updated, copies, source_type)  # type: ignore[arg-type]

    def _convert_struct(self, struct: Struct | None, plan: _Plan) -> Struct | None:
        if struct is None:
            return None
        updated = Struct(plan.schema)
        replace = self._replace_null_with_default
        for source, target in plan.copies:
            original = field_value(struct, source, replace)
            if source.name == self._field:
                original = self._convert(original, plan.source_type)
            updated.put(target, original)
        return updated

    def close(self) -> None:
        self._schemas.clear()

