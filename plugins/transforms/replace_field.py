"""ReplaceField: drop, keep or rename fields."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    Field,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
)
from connect.api.java_text import FieldSelection, JavaLayout, JavaMap, presized_layout
from plugins.transforms._base import KeyOrValueTransformation, key_value_variants, schemaless
from plugins.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    define_replace_null_with_default,
    parse_config,
    parsed_by,
)
from plugins.transforms._requirements import require_map, require_struct
from plugins.transforms._schemas import SchemaCache, StructCopy, copy_fields, copy_schema_basics

__all__ = ["ReplaceField"]

log = logging.getLogger(__name__)

EXCLUDE = "exclude"
INCLUDE = "include"
RENAMES = "renames"
# Removed from Kafka 4.0; still accepted here so older connector configs keep working.
DEPRECATED_EXCLUDE = "blacklist"
DEPRECATED_INCLUDE = "whitelist"

_PURPOSE = "field replacement"


def _parse_renames(mappings: list[str]) -> dict[str, str]:
    renames: dict[str, str] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        # Java's String.split drops trailing empty strings, so "a:b:" is still a valid pair there.
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) != 2:
            raise ConfigException(RENAMES, mappings, f"Invalid rename mapping: {mapping}")
        renames[parts[0]] = parts[1]
    return renames



CONFIG_DEF = (
    ConfigDef()
    .define(EXCLUDE, ConfigType.LIST, [], importance=Importance.MEDIUM,
            documentation="Fields to exclude. This takes precedence over the fields to include.")
    .define(DEPRECATED_EXCLUDE, ConfigType.LIST, None, importance=Importance.LOW,
            documentation=f"Deprecated. Use {EXCLUDE} instead.")
    .define(INCLUDE, ConfigType.LIST, [], importance=Importance.MEDIUM,
            documentation="Fields to include. If specified, only these fields will be used.")
    .define(DEPRECATED_INCLUDE, ConfigType.LIST, None, importance=Importance.LOW,
            documentation=f"Deprecated. Use {INCLUDE} instead.")
    .define(RENAMES, ConfigType.LIST, [],
            parsed_by(_parse_renames, "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"),
            Importance.MEDIUM, "Field rename mappings.")
)
define_replace_null_with_default(CONFIG_DEF)


def _translate_deprecated(configs: Mapping[str, Any]) -> dict[str, Any]:
    """Map blacklist/whitelist onto exclude/include; the new name wins when both are given."""
    translated = dict(configs)
    for current, deprecated in ((EXCLUDE, DEPRECATED_EXCLUDE), (INCLUDE, DEPRECATED_INCLUDE)):
        if deprecated not in translated:
            continue
        old_value = translated.pop(deprecated)
        if current in translated:
            log.warning("'%s' is deprecated and ignored because '%s' is also set", deprecated, current)
        else:
            log.warning("'%s' is deprecated; use '%s' instead", deprecated, current)
            translated[current] = old_value
    return translated


_MAPS = (dict, JavaMap)
_PLAIN_LAYOUTS_KEPT = 1024


class _Plan(NamedTuple):
    schema: Schema
    copies: tuple[tuple[Field, Field], ...]
    copy: StructCopy  # the batch form of ``copies``


@key_value_variants
class ReplaceField(KeyOrValueTransformation[ConnectRecord]):
    """Filter or rename fields.

    Use ``ReplaceField.Key`` for the record key or ``ReplaceField.Value`` for the value.
    """

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        self._exclude: frozenset[str] = frozenset()
        self._include: frozenset[str] = frozenset()
        self._renames: dict[str, str] = {}
        self._replace_null_with_default = True
        self._plans = SchemaCache()
        # what a map's layout says of how Java's was filled (see connect/api/java_text.py)
        self._selection = FieldSelection({}, frozenset(), frozenset())
        # the layouts of the maps made from plain dicts, by their key sets (all str): one lookup per record
        self._plain_layouts: dict[tuple[str, ...], JavaLayout] = {}

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, _translate_deprecated(configs))
        self._exclude = frozenset(config.get_list(EXCLUDE))
        self._include = frozenset(config.get_list(INCLUDE))
        self._renames = _parse_renames(config.get_list(RENAMES))
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._plans.clear()
        self._selection = FieldSelection(self._renames, self._exclude, self._include)
        self._plain_layouts.clear()

    def _keep(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self._operating_value(record)
        if value is None:
            return record
        if self._operating_schema(record) is None:
            return self._new_record(record, None, self._replace_in_map(require_map(value, _PURPOSE)))
        replaced = self._replace_by_position(value) if type(value) is Struct else self._replace_in_struct(value)
        return self._new_record(record, replaced.schema, replaced)

    def _replace_by_position(self, struct: Struct) -> Struct:
        """``_replace_in_struct(struct)``, with only the values that could fail a check checked (StructCopy)."""
        plan = self._plans.get_or_make(struct.schema, self._plan)
        made = plan.copy.make(plan.copy.values(struct))
        return made if made is not None else self._replace_in_struct(struct)

    def _replace_in_struct(self, value: Any) -> Struct:
        """What ``apply`` makes of a Struct, every value put (checked) in field order."""
        struct = require_struct(value, _PURPOSE)
        plan = self._plans.get_or_make(struct.schema, self._plan)
        updated = Struct(plan.schema)
        copy_fields(struct, updated, plan.copies, self._replace_null_with_default)
        return updated

    def _transform_column(
        self, schemas: list[Schema | None], values: list[Any]
    ) -> tuple[list[Schema | None] | None, list[Any]] | None:
        updated: list[Any] = []
        append = updated.append
        if schemaless(schemas):
            replace = self._replace_in_map
            other = self._replace_in_other
            if self._include or self._exclude:
                return None, [replace(value) if type(value) in _MAPS else other(value) for value in values]
            # renames only, the common case, written out: no call per record
            rename = self._renames.get
            selection = self._selection
            plain_layouts = self._plain_layouts
            for value in values:
                value_type = type(value)
                if value_type is dict:
                    renamed = JavaMap({rename(k, k): v for k, v in value.items()})
                    layout = plain_layouts.get(tuple(value))
                    renamed.java_layout = layout if layout is not None else self._plain_layout(value)
                    append(renamed)
                elif value_type is JavaMap:
                    renamed = JavaMap({rename(k, k): v for k, v in value.items()})
                    renamed.java_layout = presized_layout(value, selection)
                    append(renamed)
                else:
                    append(other(value))
            return None, updated
        new_schemas: list[Schema | None] = []
        add_schema = new_schemas.append
        for schema, value in zip(schemas, values, strict=True):
            if value is None:
                add_schema(schema)
                append(None)
            elif schema is None:
                add_schema(None)
                append(self._replace_in_map(require_map(value, _PURPOSE)))
            elif type(value) is Struct:
                made = self._replace_by_position(value)
                add_schema(made.schema)
                append(made)
            else:  # raises as ``apply`` does, or a Struct subclass made as ``apply`` makes it
                made = self._replace_in_struct(value)
                add_schema(made.schema)
                append(made)
        return new_schemas, updated

    def _replace_in_other(self, value: Any) -> JavaMap | None:
        """As ``apply`` for a value other than a plain dict: None stays, a dict subclass is replaced, else raise."""
        return None if value is None else self._replace_in_map(require_map(value, _PURPOSE))

    def _plain_layout(self, value: dict[str, Any]) -> JavaLayout:
        """The layout of the map made of ``value``, a plain dict, remembered by its key set."""
        layout = presized_layout(value, self._selection)
        keys = tuple(value)
        # only all-str key sets: Python takes 1, 1.0 and True for one key, Java hashes them apart
        if all(type(k) is str for k in keys):
            if len(self._plain_layouts) >= _PLAIN_LAYOUTS_KEPT:
                self._plain_layouts.clear()
            self._plain_layouts[keys] = layout
        return layout

    def _replace_in_map(self, value: Mapping[str, Any]) -> JavaMap:
        exclude, include, renames = self._exclude, self._include, self._renames
        # one way per case, so that no key pays for a test its configuration does not need
        if not include:
            if not renames:
                made = JavaMap(value)
                for name in exclude:
                    made.pop(name, None)
            elif not exclude:
                made = JavaMap({renames.get(k, k): v for k, v in value.items()})
            else:
                made = JavaMap({renames.get(k, k): v for k, v in value.items() if k not in exclude})
        else:
            made = JavaMap({renames.get(k, k): v for k, v in value.items() if k in include and k not in exclude})
        # Java's new HashMap<>(value.size()), filled in value's iteration order
        made.java_layout = presized_layout(value, self._selection)
        return made

    def _plan(self, schema: Schema) -> _Plan:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        kept = [field for field in schema.fields() if self._keep(field.name)]
        for field in kept:
            builder.field(self._renames.get(field.name, field.name), field.schema)
        updated = builder.build()
        copies = tuple((field, updated.field(self._renames.get(field.name, field.name))) for field in kept)
        return _Plan(updated, copies, StructCopy(schema, updated, copies, self._replace_null_with_default))  # type: ignore[arg-type]

    def close(self) -> None:
        self._plans.clear()
