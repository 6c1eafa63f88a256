"""InsertField: add fields from record metadata (topic, partition, offset, timestamp) or a static value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    DataException,
    Field,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Timestamp,
)
from connect.api.java_text import PLAIN_COPY_SIZES, copy_for_puts, copy_laid_out
from connect.api.map_columns import MapColumns, MapTable
from connect.api.struct import validate_value
from plugins.transforms._base import KeyOrValueTransformation, Rearrangements, key_value_variants, schemaless
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    parse_config,
)
from plugins.transforms._requirements import require_map, require_sink_record, require_struct
from plugins.transforms._schemas import SchemaCache, StructCopy, copy_fields, copy_schema_basics

__all__ = ["InsertField"]

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"

_OPTIONALITY_DOC = "Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it optional (the default)."
_PURPOSE = "field insertion"
_OPTIONAL_TIMESTAMP_SCHEMA = Timestamp.builder().optional().build()

CONFIG_DEF = (
    ConfigDef()
    .define(TOPIC_FIELD, ConfigType.STRING, None, importance=Importance.MEDIUM,
            documentation="Field name for Kafka topic. " + _OPTIONALITY_DOC)
    .define(PARTITION_FIELD, ConfigType.STRING, None, importance=Importance.MEDIUM,
            documentation="Field name for Kafka partition. " + _OPTIONALITY_DOC)
    .define(OFFSET_FIELD, ConfigType.STRING, None, importance=Importance.MEDIUM,
            documentation="Field name for Kafka offset - only applicable to sink connectors.<br/>" + _OPTIONALITY_DOC)
    .define(TIMESTAMP_FIELD, ConfigType.STRING, None, importance=Importance.MEDIUM,
            documentation="Field name for record timestamp. " + _OPTIONALITY_DOC)
    .define(STATIC_FIELD, ConfigType.STRING, None, importance=Importance.MEDIUM,
            documentation="Field name for static data field. " + _OPTIONALITY_DOC)
    .define(STATIC_VALUE, ConfigType.STRING, None, importance=Importance.MEDIUM,
            documentation="Static field value, if field name configured.")
)
define_replace_null_with_default(CONFIG_DEF)


class _Spec(NamedTuple):
    name: str
    optional: bool

    @classmethod
    def parse(cls, spec: str | None) -> _Spec | None:
        if spec is None:
            return None
        if spec.endswith("?"):
            return cls(spec[:-1], True)
        if spec.endswith("!"):
            return cls(spec[:-1], False)
        return cls(spec, True)


class _Plan(NamedTuple):
    """What one input schema turns into: the new schema and the field pairs to copy."""

    schema: Schema
    copies: tuple[tuple[Field, Field], ...]
    topic: Field | None
    partition: Field | None
    offset: Field | None
    timestamp: Field | None
    static: Field | None
    copy: StructCopy  # the batch form of ``copies``


@key_value_variants
class InsertField(KeyOrValueTransformation[ConnectRecord]):
    """Insert fields using attributes from the record metadata or a configured static value.

    Use ``InsertField.Key`` for the record key or ``InsertField.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._topic: _Spec | None = None
        self._partition: _Spec | None = None
        self._offset: _Spec | None = None
        self._timestamp: _Spec | None = None
        self._static: _Spec | None = None
        self._static_value: str | None = None
        self._static_only = False
        self._replace_null_with_default = True
        self._plans = SchemaCache()
        self._rearrangements = Rearrangements()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._topic = _Spec.parse(config.get_string(TOPIC_FIELD))
        self._partition = _Spec.parse(config.get_string(PARTITION_FIELD))
        self._offset = _Spec.parse(config.get_string(OFFSET_FIELD))
        self._timestamp = _Spec.parse(config.get_string(TIMESTAMP_FIELD))
        self._static = _Spec.parse(config.get_string(STATIC_FIELD))
        self._static_value = config.get_string(STATIC_VALUE)
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._static_only = self._static is not None and not any(
            (self._topic, self._partition, self._offset, self._timestamp))
        if not any((self._topic, self._partition, self._offset, self._timestamp, self._static)):
            raise ConfigException(
                message="No field insertion configured: set at least one of "
                f"{TOPIC_FIELD}, {PARTITION_FIELD}, {OFFSET_FIELD}, {TIMESTAMP_FIELD}, {STATIC_FIELD}"
            )
        if self._static is not None and self._static_value is None:
            raise ConfigException(
                STATIC_VALUE, None, f"No value specified for static field: {self._static.name}"
            )
        self._plans.clear()
        self._rearrangements.clear()

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self._operating_value(record)
        if value is None:
            return record
        if self._operating_schema(record) is None:
            return self._apply_schemaless(record, value)
        return self._apply_with_schema(record, value)

    def _transform_column(
        self, schemas: list[Schema | None], values: list[Any]
    ) -> tuple[list[Schema | None] | None, list[Any]] | None:
        if not self._static_only:  # the other fields come from the record: record by record
            return None
        name = self._static.name  # type: ignore[union-attr]
        if schemaless(schemas):
            # all schemaless, the common case: each map copied in C, the field set (last), as ``apply`` makes it
            static_field = {name: self._static_value}
            plain_sizes = PLAIN_COPY_SIZES
            other = self._static_into_other
            # Java's new HashMap<>(value), then the put: a plain dict prints the same for most sizes
            return None, [v | static_field if type(v) is dict and len(v) in plain_sizes else other(v, name)
                          for v in values]
        new_schemas: list[Schema | None] = []
        new_values: list[Any] = []
        add_schema, add_value = new_schemas.append, new_values.append
        insert = self._insert_by_position
        for schema, value in zip(schemas, values, strict=True):
            if value is None:
                add_schema(schema)
                add_value(None)
            elif schema is None:
                add_schema(None)
                add_value(self._static_into_other(value, name))
            elif type(value) is Struct:
                updated = insert(value, None)
                add_schema(updated.schema)
                add_value(updated)
            else:  # not a Struct: raises as ``apply`` does, or a Struct subclass, made as ``apply`` makes it
                updated = self._with_fields(value, None)
                add_schema(updated.schema)
                add_value(updated)
        return new_schemas, new_values

    def _transform_table(self, table: MapTable, count: int) -> MapColumns | None:
        static = self._static
        if not self._static_only or static is None:  # the other fields come from the record
            return None
        name = static.name
        # the static field is a column of one value; the others are kept as they are
        plan = self._rearrangements.of(table, lambda m: self._static_into_other(m, name))
        return plan.apply(table.columns, count, table.kinds) if plan is not None else None

    def _static_into_other(self, value: Any, name: str) -> Any:
        """As ``apply`` for a value other than a plain dict: None stays, a dict subclass is copied, else raise."""
        if value is None:
            return None
        original = require_map(value, _PURPOSE)
        updated = copy_for_puts(original)
        updated[name] = self._static_value
        return copy_laid_out(original, updated)

    def _apply_schemaless(self, record: ConnectRecord, value: Any) -> ConnectRecord:
        original = require_map(value, _PURPOSE)
        updated = copy_for_puts(original)  # Java's new HashMap<>(value), then the puts
        if self._static_only:
            updated[self._static.name] = self._static_value  # type: ignore[union-attr]
        else:
            if self._topic is not None:
                updated[self._topic.name] = record.topic
            if self._partition is not None and record.kafka_partition is not None:
                updated[self._partition.name] = record.kafka_partition
            if self._offset is not None:
                updated[self._offset.name] = require_sink_record(record, _PURPOSE).kafka_offset
            if self._timestamp is not None and record.timestamp is not None:
                updated[self._timestamp.name] = record.timestamp
            if self._static is not None:
                updated[self._static.name] = self._static_value
        return self._new_record(record, None, copy_laid_out(original, updated))

    def _apply_with_schema(self, record: ConnectRecord, value: Any) -> ConnectRecord:
        updated = self._insert_by_position(value, record) if type(value) is Struct else self._with_fields(value, record)
        return self._new_record(record, updated.schema, updated)

    def _insert_by_position(self, struct: Struct, record: ConnectRecord | None) -> Struct:
        """``_with_fields(struct, record)``, with only the values that could fail a check checked (StructCopy)."""
        plan = self._plans.get_or_make(struct.schema, self._plan)
        values = plan.copy.values(struct)
        if self._static_only:
            values.append(self._static_value)
        else:
            try:
                for field, inserted in self._inserted(plan, record):
                    if inserted is not None:
                        validate_value(field.schema, inserted, field.name)
                    values.append(inserted)
            except DataException:  # raised again by _with_fields, after the errors of the fields before it
                return self._with_fields(struct, record)
        made = plan.copy.make(values)
        return made if made is not None else self._with_fields(struct, record)

    def _inserted(self, plan: _Plan, record: ConnectRecord | None) -> list[tuple[Field, Any]]:
        """The inserted fields of ``plan`` with their values for ``record``, in field order; None for a
        field ``_with_fields`` leaves unset."""
        assert record is not None
        inserted: list[tuple[Field, Any]] = []
        if plan.topic is not None:
            inserted.append((plan.topic, record.topic))
        if plan.partition is not None:
            inserted.append((plan.partition, record.kafka_partition))
        if plan.offset is not None:
            inserted.append((plan.offset, require_sink_record(record, _PURPOSE).kafka_offset))
        if plan.timestamp is not None:
            stamp = record.timestamp
            inserted.append((plan.timestamp, None if stamp is None else Timestamp.to_logical(Timestamp.SCHEMA, stamp)))
        if plan.static is not None:
            inserted.append((plan.static, self._static_value))
        return inserted

    def _with_fields(self, value: Any, record: ConnectRecord | None) -> Struct:
        """The Struct ``apply`` makes of ``value``, every value put (checked); ``record`` may be None only
        when just a static field is inserted."""
        struct = require_struct(value, _PURPOSE)
        plan = self._plans.get_or_make(struct.schema, self._plan)
        updated = Struct(plan.schema)
        copy_fields(struct, updated, plan.copies, self._replace_null_with_default)
        if plan.static is not None and record is None:
            updated.put(plan.static, self._static_value)
            return updated
        assert record is not None
        if plan.topic is not None:
            updated.put(plan.topic, record.topic)
        if plan.partition is not None and record.kafka_partition is not None:
            updated.put(plan.partition, record.kafka_partition)
        if plan.offset is not None:
            updated.put(plan.offset, require_sink_record(record, _PURPOSE).kafka_offset)
        if plan.timestamp is not None and record.timestamp is not None:
            updated.put(plan.timestamp, Timestamp.to_logical(Timestamp.SCHEMA, record.timestamp))
        if plan.static is not None:
            updated.put(plan.static, self._static_value)
        return updated

    def _plan(self, schema: Schema) -> _Plan:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields():
            builder.field(field.name, field.schema)

        def add(spec: _Spec | None, optional: Schema, required: Schema) -> str | None:
            if spec is None:
                return None
            builder.field(spec.name, optional if spec.optional else required)
            return spec.name

        names = (
            add(self._topic, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA),
            add(self._partition, Schema.OPTIONAL_INT32_SCHEMA, Schema.INT32_SCHEMA),
            add(self._offset, Schema.OPTIONAL_INT64_SCHEMA, Schema.INT64_SCHEMA),
            add(self._timestamp, _OPTIONAL_TIMESTAMP_SCHEMA, Timestamp.SCHEMA),
            add(self._static, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA),
        )
        updated = builder.build()
        copies = tuple((field, updated.field(field.name)) for field in schema.fields())
        inserted = [updated.field(name) if name is not None else None for name in names]
        copy = StructCopy(schema, updated, copies, self._replace_null_with_default,  # type: ignore[arg-type]
                          extra=sum(name is not None for name in names))
        return _Plan(updated, copies, *inserted, copy)  # type: ignore[arg-type, call-arg]

    def close(self) -> None:
        self._plans.clear()
        self._rearrangements.clear()
