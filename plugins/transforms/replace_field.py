"""ReplaceField: drop, keep or rename fields."""

from __future__ import annotations

import itertools
import logging
import operator
from collections.abc import Callable, Iterable, Mapping
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
from connect.api.java_text import FieldSelection, JavaLayout, JavaMap, plain_order, presized_layout
from connect.api.map_columns import MapColumns, MapTable
from plugins.transforms._base import (
    KeyOrValueTransformation,
    Rearrangements,
    key_value_variants,
    one_key_set,
    schemaless,
)
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


_PLANS_KEPT = 1024


class _MapPlan(NamedTuple):
    """How ReplaceField makes the maps of one key set: their new keys, a getter of the values kept (None:
    all, in order) and the layout of the map made (None: it prints, and stands for Java's map, as a plain
    dict, which costs less to make and to print)."""

    new_keys: tuple[str, ...]
    kept_values: Callable[[Mapping[str, Any]], Iterable[Any]] | None
    layout: JavaLayout | None

    def make(self, value: Mapping[str, Any]) -> dict[str, Any]:
        """The map made of ``value``, which has this plan's key set."""
        kept = value.values() if self.kept_values is None else self.kept_values(value)
        if self.layout is None:
            return dict(zip(self.new_keys, kept, strict=False))  # as many values as keys: the plan's key set
        made = JavaMap(zip(self.new_keys, kept, strict=False))
        made.java_layout = self.layout
        return made

    def make_all(self, maps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``[self.make(m) for m in maps]``, in C."""
        kept = map(dict.values, maps) if self.kept_values is None else map(self.kept_values, maps)
        pairs = map(zip, itertools.repeat(self.new_keys), kept)
        if self.layout is None:
            return list(map(dict, pairs))
        made: list[dict[str, Any]] = list(map(JavaMap, pairs))
        # setattr returns None, so any() runs the map to its end
        any(map(setattr, made, itertools.repeat("java_layout"), itertools.repeat(self.layout)))
        return made


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
        # how maps are made, by their key sets (all str): a plain dict's by its keys, a JavaMap's by its keys
        # and layout; one lookup per record
        self._plain_plans: dict[tuple[str, ...], _MapPlan] = {}
        self._laid_out_plans: dict[tuple[tuple[str, ...], JavaLayout | None], _MapPlan] = {}
        self._rearrangements = Rearrangements()

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = parse_config(CONFIG_DEF, _translate_deprecated(configs))
        self._exclude = frozenset(config.get_list(EXCLUDE))
        self._include = frozenset(config.get_list(INCLUDE))
        self._renames = _parse_renames(config.get_list(RENAMES))
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._plans.clear()
        self._selection = FieldSelection(self._renames, self._exclude, self._include)
        self._plain_plans.clear()
        self._laid_out_plans.clear()
        self._rearrangements.clear()

    def _keep(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self._operating_value(record)
        if value is None:
            return record
        if self._operating_schema(record) is None:
            return self._new_record(record, None, self._replace_schemaless(value))
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

    def _transform_table(self, table: MapTable, count: int) -> MapColumns | None:
        # the kept columns, under their new names, in the order the map's plan makes them
        plan = self._rearrangements.of(table, self._replace_schemaless)
        return plan.apply(table.columns, count, table.kinds) if plan is not None else None

    def _transform_column(
        self, schemas: list[Schema | None], values: list[Any]
    ) -> tuple[list[Schema | None] | None, list[Any]] | None:
        updated: list[Any] = []
        append = updated.append
        if schemaless(schemas):
            # one plan per key set (and layout): the renamed keys and the layout worked out once, so that
            # a map is made in C from the plan's keys and the kept values
            keys = one_key_set(values)
            if keys is not None:  # the usual batch: one plan, every map made by it in C
                plan = self._plain_plans.get(keys) or self._map_plan(values[0])
                if plan is not None:
                    return None, plan.make_all(values)
            plain_plans = self._plain_plans
            laid_out_plans = self._laid_out_plans
            other = self._replace_in_other
            for value in values:
                value_type = type(value)
                if value_type is dict:
                    plan = plain_plans.get(tuple(value))
                elif value_type is JavaMap:
                    plan = laid_out_plans.get((tuple(value), getattr(value, "java_layout", None)))
                else:
                    append(other(value))
                    continue
                if plan is None:
                    plan = self._map_plan(value)
                    if plan is None:  # keys not all str: made as ``apply`` makes it
                        append(self._replace_in_map(value))
                        continue
                append(plan.make(value))
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

    def _replace_schemaless(self, value: Any) -> dict[str, Any]:
        """What ``apply`` makes of a schemaless value: a map by its key set's plan, else checked and made."""
        value_type = type(value)
        if value_type is dict:
            plan = self._plain_plans.get(tuple(value))
        elif value_type is JavaMap:
            plan = self._laid_out_plans.get((tuple(value), getattr(value, "java_layout", None)))
        else:
            return self._replace_in_map(require_map(value, _PURPOSE))
        if plan is None:
            plan = self._map_plan(value)
            if plan is None:  # keys not all str
                return self._replace_in_map(value)
        return plan.make(value)

    def _replace_in_other(self, value: Any) -> JavaMap | None:
        """As ``apply`` for a value other than a plain dict: None stays, a dict subclass is replaced, else raise."""
        return None if value is None else self._replace_in_map(require_map(value, _PURPOSE))

    def _map_plan(self, value: Mapping[str, Any]) -> _MapPlan | None:
        """The plan of the maps with ``value``'s keys and layout, remembered; None unless every key is a str
        (Python takes 1, 1.0 and True for one key, Java hashes them apart)."""
        keys = tuple(value)
        if not all(type(k) is str for k in keys):
            return None
        # each new key with the key whose value it takes: the last one renamed to it, as a dict built in
        # value's order keeps; a dict holds them in the order their first one comes
        source_of = {self._renames.get(k, k): k for k in keys if self._keep(k)}
        # Java's new HashMap<>(value.size()), filled in value's iteration order
        presized = presized_layout(value, self._selection)
        # when it has a new HashMap<>()'s buckets, a plain dict holding the keys in its iteration order is the
        # same map: made so (a JsonConverter downstream then writes the keys in Java's order, too)
        java_order = plain_order(tuple(source_of), presized)
        layout: JavaLayout | None = None if java_order is not None else presized
        new_keys = java_order if java_order is not None else tuple(source_of)
        taken = tuple(source_of[k] for k in new_keys)
        kept_values: Callable[[Mapping[str, Any]], Iterable[Any]] | None
        if taken == keys:
            kept_values = None
        elif len(taken) > 1:
            kept_values = operator.itemgetter(*taken)
        elif taken:
            only = taken[0]
            kept_values = lambda m: (m[only],)  # noqa: E731
        else:
            kept_values = lambda m: ()  # noqa: E731
        plan = _MapPlan(new_keys, kept_values, layout)
        if type(value) is JavaMap:
            plans: dict[Any, _MapPlan] = self._laid_out_plans
            plan_key: Any = (keys, getattr(value, "java_layout", None))
        else:
            plans, plan_key = self._plain_plans, keys
        if len(plans) >= _PLANS_KEPT:
            plans.clear()
        plans[plan_key] = plan
        return plan

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
        self._rearrangements.clear()
