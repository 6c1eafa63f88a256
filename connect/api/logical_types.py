"""Connect's logical types: Decimal, Date, Time and Timestamp, each a primitive schema with a name.

Decimal -> decimal.Decimal (BYTES), Date -> datetime.date (INT32, days since the epoch),
Time -> datetime.time (INT32, milliseconds since midnight), Timestamp -> datetime.datetime
(INT64, milliseconds since the epoch, UTC).
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal

from connect.api.errors import DataException
from connect.api.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
)
from connect.api.schema_builder import SchemaBuilder

__all__ = ["LOGICAL_TYPES", "Date", "Decimal", "Time", "Timestamp"]


_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS_PER_DAY = 86_400_000


class Decimal:
    LOGICAL_NAME = DECIMAL_LOGICAL_NAME
    SCALE_FIELD = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        return (
            SchemaBuilder.bytes()
            .name(Decimal.LOGICAL_NAME)
            .parameter(Decimal.SCALE_FIELD, str(scale))
            .version(1)
        )

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        try:
            return int((schema.parameters or {})[Decimal.SCALE_FIELD])
        except (KeyError, ValueError):
            raise DataException("Invalid Decimal schema: scale parameter not found.") from None

    @staticmethod
    def from_logical(schema: Schema, value: _decimal.Decimal) -> bytes:
        """The minimal big-endian two's-complement bytes of the unscaled value, as Java's BigInteger writes."""
        scale = Decimal.scale(schema)
        exponent = value.as_tuple().exponent
        if not isinstance(exponent, int) or exponent != -scale:
            raise DataException("Decimal value has mismatching scale for given Decimal schema")
        unscaled = int(value.scaleb(scale))
        length = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() + 8) // 8
        return unscaled.to_bytes(length, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> _decimal.Decimal:
        unscaled = int.from_bytes(value, "big", signed=True)
        return _decimal.Decimal(unscaled).scaleb(-Decimal.scale(schema))


class Date:
    LOGICAL_NAME = DATE_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Date.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: _dt.date) -> int:
        if isinstance(value, _dt.datetime):
            if value.time() != _dt.time(0) and value.tzinfo is not None:
                raise DataException(
                    "Kafka Connect Date type should not have any time fields set to non-zero values."
                )
            value = value.date()
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.date:
        return _EPOCH_DATE + _dt.timedelta(days=value)


class Time:
    LOGICAL_NAME = TIME_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Time.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: _dt.time | _dt.datetime) -> int:
        if isinstance(value, _dt.datetime):  # a datetime counts by its time of day
            value = value.time()
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        if not 0 <= millis < _MS_PER_DAY:
            raise DataException(
                "Kafka Connect Time type should not have any date fields set to non-zero values."
            )
        return millis

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.time:
        if not 0 <= value < _MS_PER_DAY:
            raise DataException(
                "Time values must use number of milliseconds greater than 0 and less than 86400000"
            )
        seconds, ms = divmod(value, 1000)
        minutes, sec = divmod(seconds, 60)
        hours, minute = divmod(minutes, 60)
        return _dt.time(hours, minute, sec, ms * 1000)


class Timestamp:
    LOGICAL_NAME = TIMESTAMP_LOGICAL_NAME

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(Timestamp.LOGICAL_NAME).version(1)

    SCHEMA: Schema

    @staticmethod
    def from_logical(schema: Schema, value: _dt.datetime) -> int:
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.datetime:
        return _EPOCH + _dt.timedelta(milliseconds=value)


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

LOGICAL_TYPES: dict[str, type] = {
    Decimal.LOGICAL_NAME: Decimal,
    Date.LOGICAL_NAME: Date,
    Time.LOGICAL_NAME: Time,
    Timestamp.LOGICAL_NAME: Timestamp,
}
