"""MaskField: replace fields with a type-appropriate empty value, or a configured replacement."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataException,
    Importance,
    NonEmptyString,
    Schema,
    Struct,
    Type,
)
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    non_empty_list,
    parse_config,
)
from plugins.transforms._requirements import require_map, require_struct, type_name
from plugins.transforms._schemas import field_value

__all__ = ["MaskField"]

FIELDS = "fields"
REPLACEMENT = "replacement"

_PURPOSE = "mask fields"

CONFIG_DEF = (
    ConfigDef()
    .define(FIELDS, ConfigType.LIST, validator=non_empty_list(), importance=Importance.HIGH,
            documentation="Names of fields to mask.")
    .define(REPLACEMENT, ConfigType.STRING, None, NonEmptyString(), Importance.LOW,
            "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty "
            "string values only).")
)
define_replace_null_with_default(CONFIG_DEF)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Bounds of the Java boxed type a Connect integer schema maps to, for parsing the replacement.
_INT_BOUNDS = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


def _empty_value(value: Any) -> Any:
    """The "null value" of ``value``'s type: 0, false, empty string, epoch, empty list or map."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, str):
        return ""
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, dt.datetime):
        return _EPOCH
    if isinstance(value, dt.date):
        return dt.date(1970, 1, 1)
    if isinstance(value, dt.time):
        return dt.time(0)
    if isinstance(value, list | tuple):
        return []
    if isinstance(value, dict):
        return {}
    raise DataException(f"Cannot mask value of type: {type_name(value)}")


class _Replacement:
    """The configured replacement, converted to each value's type on demand."""

    __slots__ = ("text", "_by_kind")

    def __init__(self, text: str) -> None:
        self.text = text
        self._by_kind: dict[Any, Any] = {}

    def for_value(self, value: Any, schema: Schema | None) -> Any:
        if isinstance(value, bool) or isinstance(value, dt.date | dt.time):
            raise DataException(f"Cannot mask value of type {type_name(value)} with custom replacement.")
        if isinstance(value, str):
            return self.text
        if isinstance(value, int):
            kind: Any = schema.type if schema is not None and schema.type in _INT_BOUNDS else Type.INT64
        elif isinstance(value, float | decimal.Decimal):
            kind = type(value)
        else:
            raise DataException(f"Cannot mask value of type {type_name(value)} with custom replacement.")
        if kind not in self._by_kind:
            self._by_kind[kind] = self._convert(kind)
        return self._by_kind[kind]

    def _convert(self, kind: Any) -> Any:
        try:
            if kind is float:
                return float(self.text)
            if kind is decimal.Decimal:
                return decimal.Decimal(self.text)
            number = int(self.text.strip())
            lo, hi = _INT_BOUNDS[kind]
            if not lo <= number <= hi:
                raise ValueError(self.text)
            return number
        except (ValueError, decimal.InvalidOperation):
            raise DataException(f"Unable to convert {self.text} (str) to number") from None


@key_value_variants
class MaskField(KeyOrValueTransformation[ConnectRecord]):
    """Mask specified fields with a valid null value for the field type (0, false, empty string, ...).

    Use ``MaskField.Key`` for the record key or ``MaskField.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._fields: frozenset[str] = frozenset()
        self._replacement: _Replacement | None = None
        self._replace_null_with_default = True

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._fields = frozenset(config.get_list(FIELDS))
        replacement = config.get_string(REPLACEMENT)
        self._replacement = _Replacement(replacement) if replacement is not None else None
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))

    def _masked(self, value: Any, schema: Schema | None) -> Any:
        if value is None:
            return None
        if self._replacement is not None:
            return self._replacement.for_value(value, schema)
        return _empty_value(value)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self._operating_value(record)
        if value is None:
            return record
        if self._operating_schema(record) is None:
            original = require_map(value, _PURPOSE)
            updated = dict(original)
            for name in self._fields:
                updated[name] = self._masked(original.get(name), None)
            return self._new_record(record, None, updated)
        struct = require_struct(value, _PURPOSE)
        masked = Struct(struct.schema)
        replace = self._replace_null_with_default
        for field in struct.schema.fields():
            original_value = field_value(struct, field, replace)
            if field.name in self._fields:
                original_value = self._masked(original_value, field.schema)
            masked.put(field, original_value)
        return self._new_record(record, struct.schema, masked)
