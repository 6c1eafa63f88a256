"""MaskField: replace fields with a type-appropriate empty value, or a configured replacement."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataException,
    Field,
    Importance,
    NonEmptyString,
    Schema,
    Struct,
    Type,
)
from connect.api.java_text import (
    PLAIN_COPY_SIZES,
    copy_for_puts,
    copy_laid_out,
    hash_map_capacity,
    hash_map_order,
)
from connect.api.map_columns import MapColumns, MapTable
from connect.api.struct import validate_value
from plugins.transforms._base import KeyOrValueTransformation, Rearrangements, key_value_variants, schemaless
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    non_empty_list,
    parse_config,
)
from plugins.transforms._requirements import require_map, require_struct, type_name
from plugins.transforms._schemas import SchemaCache, StructCopy, field_value

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


# The empty value of each exact type whose empty value is immutable, so one object serves every record; the
# mutable ones (list, map) and subclasses go through _empty_value.
_EMPTY_BY_TYPE: dict[type, Any] = {
    bool: False,
    int: 0,
    float: 0.0,
    str: "",
    decimal.Decimal: decimal.Decimal(0),
    dt.datetime: _EPOCH,
    dt.date: dt.date(1970, 1, 1),
    dt.time: dt.time(0),
}
_NO_SHARED_EMPTY: Any = object()
# the masked value of each exact type a column of maps' values may hold to be masked as a column
_MASKED_BY_TYPE: dict[type, Any] = {**_EMPTY_BY_TYPE, type(None): None}
# the exact types a replacement is converted to once for a whole column (the others raise, record by record)
_REPLACEABLE = frozenset((str, int, float, decimal.Decimal))


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
        if type(value) is str:
            return self.text
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


class _Plan(NamedTuple):
    """How the Structs of one schema are masked: their values copied by position, then these replaced."""

    copy: StructCopy
    masked: tuple[Field, ...]


@key_value_variants
class MaskField(KeyOrValueTransformation[ConnectRecord]):
    """Mask specified fields with a valid null value for the field type (0, false, empty string, ...).

    Use ``MaskField.Key`` for the record key or ``MaskField.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._fields: frozenset[str] = frozenset()
        # each field once, in the order Kafka's HashSet of them iterates: absent fields are added to a map
        # in this order
        self._names: tuple[str, ...] = ()
        self._replacement: _Replacement | None = None
        self._replace_null_with_default = True
        self._plans = SchemaCache()
        self._rearrangements = Rearrangements()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        names = list(dict.fromkeys(config.get_list(FIELDS)))
        # new HashSet<>(list): a table of max((int) (size / .75f) + 1, 16) buckets, filled in list order
        set_capacity = hash_map_capacity(len(names), initial_capacity=max(len(names) * 4 // 3 + 1, 16))
        self._names = tuple(hash_map_order(names, set_capacity))
        self._fields = frozenset(self._names)
        self._plans.clear()
        self._rearrangements.clear()
        replacement = config.get_string(REPLACEMENT)
        self._replacement = _Replacement(replacement) if replacement is not None else None
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))

    def _masked(self, value: Any, schema: Schema | None) -> Any:
        if value is None:
            return None
        if self._replacement is not None:
            return self._replacement.for_value(value, schema)
        empty = _EMPTY_BY_TYPE.get(type(value), _NO_SHARED_EMPTY)
        return empty if empty is not _NO_SHARED_EMPTY else _empty_value(value)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self._operating_value(record)
        if value is None:
            return record
        if self._operating_schema(record) is None:
            return self._new_record(record, None, self._mask_map(value))
        masked = self._mask_struct_by_position(value) if type(value) is Struct else self._mask_struct(value)
        return self._new_record(record, masked.schema, masked)

    def _mask_map(self, value: Any) -> dict[str, Any]:
        original = require_map(value, _PURPOSE)
        updated = copy_for_puts(original)  # Java's new HashMap<>(value), then the puts
        masked = self._masked
        for name in self._names:
            updated[name] = masked(original.get(name), None)
        return copy_laid_out(original, updated)

    def _transform_table(self, table: MapTable, count: int) -> MapColumns | None:
        # the keys the map gets (masked fields it lacks are put as null) worked out once; each masked
        # column made by the type of its values
        plan = self._rearrangements.of(table, self._masked_keys)
        if plan is None:
            return None
        columns = list(table.columns)
        kinds: list[frozenset[type] | None] = list(table.kinds or (None,) * len(columns))
        keys = table.keys
        for name in self._names:
            if name in keys:
                place = keys.index(name)
                masked = self._masked_column(columns[place], table.kinds_of(place), count)
                if masked is None:
                    return None
                columns[place], kinds[place] = masked
        return plan.apply(columns, count, kinds)

    def _masked_keys(self, value: dict[str, Any]) -> dict[str, Any]:
        """The map ``_mask_map`` makes of ``value``, with each masked value still the original."""
        updated = copy_for_puts(value)
        for name in self._names:
            updated[name] = value.get(name)
        return copy_laid_out(value, updated)

    def _masked_column(
        self, column: tuple[Any, ...], kinds: frozenset[type], count: int
    ) -> tuple[tuple[Any, ...], frozenset[type]] | None:
        """The masked values of a column whose values have the types ``kinds`` (or fewer), as ``_masked``
        makes each, and their types; None when a value needs its own (a mutable empty value, or one
        ``_masked`` rejects: the record-by-record path raises for it)."""
        masked_of: dict[type, Any]
        if self._replacement is None:
            masked_of = _MASKED_BY_TYPE
            if not kinds <= masked_of.keys():
                return None
        else:
            masked_of = {}
            for kind in kinds:
                if kind is type(None):
                    masked_of[kind] = None
                elif kind in _REPLACEABLE:
                    try:
                        masked_of[kind] = self._replacement.for_value(kind(), None)
                    except DataException:
                        return None
                else:
                    return None
        made_kinds = frozenset(type(masked_of[kind]) for kind in kinds)
        if len(kinds) == 1:
            return (masked_of[next(iter(kinds))],) * count, made_kinds
        return tuple(map(masked_of.__getitem__, map(type, column))), made_kinds

    def _transform_column(
        self, schemas: list[Schema | None], values: list[Any]
    ) -> tuple[list[Schema | None] | None, list[Any]] | None:
        # a masked Struct keeps its schema, so the schemas column stays as it is
        masked: list[Any] = []
        add = masked.append
        mask_map = self._mask_map
        if schemaless(schemas):
            if self._replacement is not None:
                return None, [None if v is None else mask_map(v) for v in values]
            # schemaless without a replacement, the common case, with the masking written out: a call per
            # field would cost as much as the rest of the record
            names = self._names
            shared = _EMPTY_BY_TYPE.get
            plain_sizes = PLAIN_COPY_SIZES
            for value in values:
                if type(value) is dict:
                    updated = value.copy()
                    for name in names:
                        field = value.get(name)
                        if field is not None:
                            empty = shared(type(field), _NO_SHARED_EMPTY)
                            updated[name] = empty if empty is not _NO_SHARED_EMPTY else _empty_value(field)
                        else:
                            updated[name] = None
                    size = len(value)
                    plain = size in plain_sizes and len(updated) == size  # else worked out by copy_laid_out
                    add(updated if plain else copy_laid_out(value, updated))
                else:
                    add(None if value is None else mask_map(value))
            return None, masked
        for schema, value in zip(schemas, values, strict=True):
            if value is None:
                add(None)
            elif schema is None:
                add(mask_map(value))
            elif type(value) is Struct:
                add(self._mask_struct_by_position(value))
            else:
                add(self._mask_struct(value))
        return None, masked

    def _mask_struct_by_position(self, struct: Struct) -> Struct:
        """``_mask_struct(struct)``, with only the values that could fail a check checked."""
        plan = self._plans.get_or_make(struct.schema, self._plan)
        values = plan.copy.values(struct)
        try:
            for field in plan.masked:
                changed = self._masked(values[field.index], field.schema)
                if changed is not None:
                    validate_value(field.schema, changed, field.name)
                values[field.index] = changed
        except DataException:  # raised again by _mask_struct, after the errors of the fields before it
            return self._mask_struct(struct)
        made = plan.copy.make(values)
        return made if made is not None else self._mask_struct(struct)

    def _plan(self, schema: Schema) -> _Plan:
        fields = schema.fields()
        return _Plan(StructCopy(schema, schema, [(f, f) for f in fields], self._replace_null_with_default),
                     tuple(f for f in fields if f.name in self._fields))

    def _mask_struct(self, value: Any) -> Struct:
        """The masked copy of ``value``, each value put (checked) in field order, so the first bad one raises."""
        struct = require_struct(value, _PURPOSE)
        masked = Struct(struct.schema)
        replace = self._replace_null_with_default
        for field in struct.schema.fields():
            original_value = field_value(struct, field, replace)
            if field.name in self._fields:
                original_value = self._masked(original_value, field.schema)
            masked.put(field, original_value)
        return masked

    def close(self) -> None:
        self._plans.clear()
        self._rearrangements.clear()
