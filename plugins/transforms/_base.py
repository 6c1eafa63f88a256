"""Base classes of the built-in transforms, and the ``$Key`` / ``$Value`` variants Kafka ships.

Kafka repeats the abstract ``operatingSchema`` / ``operatingValue`` /
``newRecord`` trio in each transform for its $Key and $Value classes; here
the side of the record is chosen once, by ``key_value_variants``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from connect.api import ConfigDef, ConnectHeaders, ConnectRecord, Schema, SinkRecordBatch, Transformation
from connect.api.map_columns import KeyRearrangement, MapColumns, MapTable, rearrangement
from connect.api.version import distribution_version

__all__ = [
    "BuiltinTransformation",
    "KeyOrValueTransformation",
    "Rearrangements",
    "key_value_variants",
    "one_key_set",
    "schemaless",
]


_R = TypeVar("_R", bound=ConnectRecord)
_T = TypeVar("_T", bound=type)


def schemaless(schemas: list[Schema | None]) -> bool:
    """Whether no entry of a schemas column has a schema. The first entry is looked at alone first: counting
    compares each Schema with None through Schema.__eq__, a Python call per record."""
    return not schemas or (schemas[0] is None and schemas.count(None) == len(schemas))


def one_key_set(values: list[Any]) -> tuple[Any, ...] | None:
    """The keys of every value of a column of plain dicts that all hold the same keys in the same order (the
    usual batch of one topic), else None. Found by passes in C: a transform can then work out what to do
    once for the batch and make its maps column by column, without a Python step per record.

    Python takes 1, 1.0 and True for one key where Java does not: a caller trusts an equal key set only
    when its keys are all str."""
    if not values or set(map(type, values)) != _PLAIN_DICT:
        return None
    key_sets = list(map(tuple, values))
    first = key_sets[0]
    return first if key_sets.count(first) == len(key_sets) else None


_PLAIN_DICT = {dict}

_REARRANGEMENTS_KEPT = 1024
_NOT_REARRANGEABLE: Any = object()


class Rearrangements:
    """What a transform's function of one map does to each key set (and layout) it met, worked out once
    per key set by ``connect.api.map_columns.rearrangement``; forgotten wholesale when full."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], Any] = {}

    def of(self, table: MapTable, per_map: Callable[[dict[str, Any]], Mapping[Any, Any]]) -> KeyRearrangement | None:
        key = (table.keys, table.java_layout)
        found = self._known.get(key)
        if found is None:
            try:
                found = rearrangement(table.keys, table.java_layout, per_map)
            except Exception:  # what ``apply`` raises for such a map it raises again, record by record
                found = None
            if len(self._known) >= _REARRANGEMENTS_KEPT:
                self._known.clear()
            self._known[key] = found if found is not None else _NOT_REARRANGEABLE
        return None if found is _NOT_REARRANGEABLE else found

    def clear(self) -> None:
        self._known.clear()


class BuiltinTransformation(Transformation[_R]):
    """A transform shipped with Headrace; subclasses set ``CONFIG_DEF``."""

    CONFIG_DEF: ClassVar[ConfigDef]

    def version(self) -> str:
        return distribution_version(__name__)

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def apply_batch(self, records: Sequence[_R]) -> Sequence[_R]:
        # ``apply`` per record, as the SDK's default; overridden so that chains of built-in transforms are
        # handed whole batches: a built-in keeps no state but caches, so a batch transformed twice (after a
        # failure, to find the failing record) gives the same records
        return super().apply_batch(records)


class KeyOrValueTransformation(BuiltinTransformation[_R]):
    """Base of the transforms Kafka ships as ``X$Key`` / ``X$Value`` pairs.

    The base stays abstract; ``key_value_variants`` adds the concrete nested
    ``Key`` and ``Value`` classes, which only choose the side of the record.
    """

    Key: ClassVar[type]
    Value: ClassVar[type]

    @abc.abstractmethod
    def _operating_schema(self, record: _R) -> Schema | None: ...

    @abc.abstractmethod
    def _operating_value(self, record: _R) -> Any: ...

    _on_key: ClassVar[bool]  # set by the side: whether the key (else the value) is transformed

    def _transform_column(
        self, schemas: list[Schema | None], values: list[Any]
    ) -> tuple[list[Schema | None] | None, list[Any]] | None:
        """This side of many records at once: the new schemas (None when none changes) and the new values, one
        per input and as ``apply`` makes them, raising what ``apply`` raises for the first record it rejects.

        None when this configuration needs more of a record than this side (its topic or offset, say): the
        records then go one by one through ``apply``. Must not change ``values`` or what they hold.
        """
        return None

    def _transform_table(self, table: MapTable, count: int) -> MapColumns | None:
        """This side of ``count`` records, schemaless maps sharing a key set given by column: the maps
        ``apply`` makes of them, as columns too; None when they are to go through ``_transform_column``
        (this transform or configuration cannot work on columns, or a value needs a look of its own).
        Must not raise: a map ``apply`` rejects makes it return None."""
        return None

    def apply_batch(self, records: Sequence[_R]) -> Sequence[_R]:
        # The side is changed as a column: a SinkRecordBatch stays one (no record is made), and records
        # already made are copied once each with their new side. Exact type checks: a check against an ABC
        # (Sequence, Mapping) costs a Python-level call, which adds up over small batches.
        on_key = self._on_key
        if type(records) is SinkRecordBatch:
            schemas = records.key_schemas if on_key else records.value_schemas
            maps = (records.key_maps() if on_key else records.value_maps()) if schemaless(schemas) else None
            table = maps.table() if maps is not None else None
            if table is not None:
                # schemaless maps sharing a key set, held as columns: changed as columns, no map made
                made = self._transform_table(table, len(records))
                if made is not None:
                    changed_batch = records.with_columns(keys=made) if on_key else records.with_columns(values=made)
                    return changed_batch  # type: ignore[return-value]  # a SinkRecordBatch is a batch of _R
            changed = self._transform_column(schemas, records.keys if on_key else records.values)
            if changed is None:
                return super().apply_batch(records)  # type: ignore[arg-type]
            new_schemas, new_values = changed
            if on_key:
                return records.with_columns(key_schemas=new_schemas, keys=new_values)  # type: ignore[return-value]
            return records.with_columns(value_schemas=new_schemas, values=new_values)  # type: ignore[return-value]
        if on_key:
            schemas = [r.key_schema for r in records]
            values = [r.key for r in records]
        else:
            schemas = [r.value_schema for r in records]
            values = [r.value for r in records]
        changed = self._transform_column(schemas, values)
        if changed is None:
            return super().apply_batch(records)
        new_schemas, new_values = changed
        if new_schemas is None:
            new_schemas = schemas
        # a side left as it was (a tombstone) keeps its record, as ``apply`` returns it
        if on_key:
            return [r if v is nv and s is ns else r.new_record(key_schema=ns, key=nv)  # type: ignore[misc]
                    for r, s, v, ns, nv in zip(records, schemas, values, new_schemas, new_values, strict=True)]
        return [r if v is nv and s is ns else r.new_record(value_schema=ns, value=nv)  # type: ignore[misc]
                for r, s, v, ns, nv in zip(records, schemas, values, new_schemas, new_values, strict=True)]

    def _new_record(
        self, record: _R, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> _R:
        """A copy of ``record`` with this side (and the headers, when given) replaced."""
        if self._on_key:
            changed = record.new_record(key_schema=schema, key=value) if headers is None else \
                record.new_record(key_schema=schema, key=value, headers=headers)
        else:
            changed = record.new_record(value_schema=schema, value=value) if headers is None else \
                record.new_record(value_schema=schema, value=value, headers=headers)
        return changed  # type: ignore[return-value]


class _KeySide:
    _on_key = True

    def _operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema

    def _operating_value(self, record: ConnectRecord) -> Any:
        return record.key


class _ValueSide:
    _on_key = False

    def _operating_value(self, record: ConnectRecord) -> Any:
        return record.value

    def _operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.value_schema


def key_value_variants(base: _T) -> _T:
    """Class decorator: attach ``base.Key`` and ``base.Value`` (Kafka's ``$Key`` / ``$Value``).

    The qualified names come out as ``Base.Key`` / ``Base.Value`` so the
    plugin registry can map ``org.apache.kafka.connect.transforms.Base$Key``
    to them by simple name.
    """
    for side_name, side in (("Key", _KeySide), ("Value", _ValueSide)):
        variant = type(
            side_name,
            (side, base),
            {
                "__module__": base.__module__,
                "__qualname__": f"{base.__qualname__}.{side_name}",
                "__doc__": f"{base.__name__} applied to the record {side_name.lower()}.",
            },
        )
        setattr(base, side_name, variant)
    return base
