"""Pieces every built-in transform shares.

Kafka spreads these over `transforms.util` (Requirements, SchemaUtil,
SimpleConfig), `transforms.field` (SingleFieldPath) and the abstract
`operatingSchema`/`operatingValue`/`newRecord` trio each transform repeats
for its $Key and $Value classes. Here they live in one place so that every
transform raises the same messages and selects its side of the record the
same way.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectHeaders,
    ConnectRecord,
    DataException,
    Field,
    Importance,
    LambdaValidator,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Transformation,
    Type,
)

__all__ = [
    "FIELD_SYNTAX_VERSION_CONFIG",
    "REPLACE_NULL_WITH_DEFAULT_CONFIG",
    "VERSION",
    "JavaReplacement",
    "KeyOrValueTransformation",
    "SchemaCache",
    "SingleFieldPath",
    "compile_java_regex",
    "copy_fields",
    "copy_schema_basics",
    "define_field_syntax_version",
    "define_replace_null_with_default",
    "field_value",
    "key_value_variants",
    "non_empty_list",
    "parse_config",
    "regex_validator",
    "require_map",
    "require_map_or_none",
    "require_schema",
    "require_sink_record",
    "require_struct",
    "require_struct_or_none",
    "type_name",
]

VERSION = "0.1.0"

REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"

_R = TypeVar("_R", bound=ConnectRecord)
_T = TypeVar("_T", bound=type)


# --- configuration ---------------------------------------------------------


def parse_config(definition: ConfigDef, props: Mapping[str, Any]) -> AbstractConfig:
    """Kafka's SimpleConfig: parse ``props`` against ``definition``, raising ConfigException."""
    return AbstractConfig(definition, props)


def _check_non_empty_list(name: str, value: Any) -> str | None:
    return "Empty list" if not value else None


def non_empty_list() -> LambdaValidator:
    return LambdaValidator(_check_non_empty_list, "non-empty list")


def regex_validator() -> LambdaValidator:
    def check(name: str, value: Any) -> str | None:
        if value is None:
            return None
        try:
            compile_java_regex(value)
        except re.error as exc:
            return f"Invalid regex: {exc}"
        return None

    return LambdaValidator(check, "valid regex")


def define_replace_null_with_default(definition: ConfigDef) -> ConfigDef:
    return definition.define(
        REPLACE_NULL_WITH_DEFAULT_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )


def define_field_syntax_version(definition: ConfigDef) -> ConfigDef:
    return definition.define(
        FIELD_SYNTAX_VERSION_CONFIG,
        ConfigType.STRING,
        "V1",
        CaseInsensitiveValidString.in_("V1", "V2"),
        Importance.HIGH,
        "Defines the version of the syntax to access fields. If set to `V1`, then the field paths are "
        "limited to access the elements at the root level of the struct or map. If set to `V2`, the syntax "
        "will support accessing nested elements. To access nested elements, dotted notation is used. If "
        "dots are already included in the field name, then backtick pairs can be used to wrap field names "
        'containing dots. E.g. to access the subfield `baz` from a field named "foo.bar" in a struct/map '
        'the following format can be used to access its elements: "`foo.bar`.baz".',
    )


# --- requirements (Kafka's transforms.util.Requirements) ------------------


def type_name(value: Any) -> str:
    """The class name Kafka's messages show, or ``null``."""
    return "null" if value is None else type(value).__name__


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataException(f"Schema required for [{purpose}]")
    return schema


def require_map(value: Any, purpose: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataException(
            f"Only Map objects supported in absence of schema for [{purpose}], found: {type_name(value)}"
        )
    return value


def require_map_or_none(value: Any, purpose: str) -> dict[str, Any] | None:
    return None if value is None else require_map(value, purpose)


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataException(f"Only Struct objects supported for [{purpose}], found: {type_name(value)}")
    return value


def require_struct_or_none(value: Any, purpose: str) -> Struct | None:
    return None if value is None else require_struct(value, purpose)


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataException(f"Only SinkRecord supported for [{purpose}], found: {type_name(record)}")
    return record


def field_value(struct: Struct, field: Field, replace_null_with_default: bool) -> Any:
    """A struct field's value, with or without its schema default standing in for null (KIP-1040)."""
    if replace_null_with_default:
        return struct.get(field)
    return struct.get_without_default(field.name)


def copy_fields(
    source: Struct, target: Struct, pairs: tuple[tuple[Field, Field], ...], replace_null_with_default: bool
) -> None:
    """Copy each (source field, target field) pair; the per-record hot loop of most struct transforms."""
    put = target.put
    if replace_null_with_default:
        get = source.get
        for source_field, target_field in pairs:
            put(target_field, get(source_field))
    else:
        get_raw = source.get_without_default
        for source_field, target_field in pairs:
            put(target_field, get_raw(source_field.name))


# --- schemas ---------------------------------------------------------------


def copy_schema_basics(source: Schema, builder: SchemaBuilder | None = None) -> SchemaBuilder:
    """Name, version, doc and parameters of ``source`` onto ``builder`` (a same-type builder if omitted).

    Optionality and default are left out on purpose: callers decide those,
    because a changed schema usually cannot keep the old default.
    """
    if builder is None:
        if source.type is Type.ARRAY:
            builder = SchemaBuilder.array(source.value_schema)  # type: ignore[arg-type]
        elif source.type is Type.MAP:
            builder = SchemaBuilder.map(source.key_schema, source.value_schema)  # type: ignore[arg-type]
        else:
            builder = SchemaBuilder(source.type)
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters:
        builder.parameters(source.parameters)
    return builder


class SchemaCache:
    """Derived data per input schema, bounded like Kafka's 16-entry LRU cache.

    Records of one connector nearly always share a handful of schemas, so a
    hit is the common case; on overflow the oldest entry goes, which keeps a
    hit a single dict lookup (no reordering on reads).
    """

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = 16) -> None:
        self._entries: dict[Schema, Any] = {}
        self._size = size

    def get(self, schema: Schema) -> Any:
        return self._entries.get(schema)

    def put(self, schema: Schema, derived: Any) -> None:
        if len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]
        self._entries[schema] = derived

    def clear(self) -> None:
        self._entries.clear()


# --- operating on the key or the value -------------------------------------


class KeyOrValueTransformation(Transformation[_R]):
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

    @abc.abstractmethod
    def _new_record(
        self, record: _R, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> _R: ...

    def version(self) -> str:
        return VERSION


class _KeySide:
    def _operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema

    def _operating_value(self, record: ConnectRecord) -> Any:
        return record.key

    def _new_record(
        self,
        record: ConnectRecord,
        schema: Schema | None,
        value: Any,
        headers: ConnectHeaders | None = None,
    ) -> ConnectRecord:
        if headers is None:
            return record.new_record(key_schema=schema, key=value)
        return record.new_record(key_schema=schema, key=value, headers=headers)


class _ValueSide:
    def _operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.value_schema

    def _operating_value(self, record: ConnectRecord) -> Any:
        return record.value

    def _new_record(
        self,
        record: ConnectRecord,
        schema: Schema | None,
        value: Any,
        headers: ConnectHeaders | None = None,
    ) -> ConnectRecord:
        if headers is None:
            return record.new_record(value_schema=schema, value=value)
        return record.new_record(value_schema=schema, value=value, headers=headers)


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


# --- field paths (Kafka's SingleFieldPath, KIP-821) -------------------------


class SingleFieldPath:
    """A path to one field: the whole name under V1, dotted steps with backtick quoting under V2."""

    __slots__ = ("steps", "_parents", "_last")

    def __init__(self, path: str, syntax_version: str = "V1") -> None:
        version = syntax_version.upper()
        if version == "V1":
            self.steps: tuple[str, ...] = (path,)
        elif version == "V2":
            self.steps = tuple(_split_v2_path(path))
        else:
            raise ConfigException(FIELD_SYNTAX_VERSION_CONFIG, syntax_version, "Unrecognized field syntax version")
        self._parents = self.steps[:-1]
        self._last = self.steps[-1]

    def field_from(self, schema: Schema | None) -> Field | None:
        if schema is None:
            return None
        current = schema
        for step in self._parents:
            field = current.field(step)
            if field is None:
                return None
            current = field.schema
        return current.field(self._last)

    def value_from_struct(self, struct: Struct | None, replace_null_with_default: bool = True) -> Any:
        current = struct
        for step in self._parents:
            if current is None or current.schema.field(step) is None:
                return None
            current = require_struct_or_none(current.get(step), "nested field access")
        if current is None:
            return None
        field = current.schema.field(self._last)
        if field is None:
            return None
        return field_value(current, field, replace_null_with_default)

    def value_from_map(self, mapping: dict[str, Any] | None) -> Any:
        current = mapping
        for step in self._parents:
            if current is None:
                return None
            current = require_map_or_none(current.get(step), "nested field access")
        return None if current is None else current.get(self._last)

    def __repr__(self) -> str:
        return f"SingleFieldPath({'.'.join(self.steps)})"


def _split_v2_path(path: str) -> list[str]:
    # A step is either plain text up to the next dot, or a backtick-quoted
    # name that may contain dots. Inside quotes only a backtick directly
    # followed by a dot (or the end) closes the name; "\`" before a dot keeps
    # a literal backtick.
    steps: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            if dot < 0:
                steps.append(path[i:])
                i = n
            else:
                steps.append(path[i:dot])
                i = dot + 1
            continue
        opened_at = i
        i += 1
        start = i
        parts: list[str] = []
        while True:
            close = path.find("`", i)
            if close < 0:
                _incomplete_backticks(path, opened_at)
            escaped = path[close - 1] == "\\"
            if close >= n - 1:
                if escaped:
                    _incomplete_backticks(path, opened_at)
                parts.append(path[start:close])
                i = close + 1
                break
            if path[close + 1] != ".":
                i = close + 1
                continue
            if escaped:
                parts.append(path[start : close - 1] + "`")
                i = close + 1
                start = i
                continue
            parts.append(path[start:close])
            i = close + 2
            break
        steps.append("".join(parts))
    if path.endswith("."):
        steps.append("")
    return steps


def _incomplete_backticks(path: str, position: int) -> None:
    raise ConfigException(
        message=f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick "
        f"at position {position} to escape it"
    )


# --- Java regular expressions ----------------------------------------------

_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
_JAVA_NAMED_BACKREF = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a java.util.regex pattern; only the named-group spellings differ from Python's."""
    translated = _JAVA_NAMED_GROUP.sub(r"(?P<\1>", pattern)
    translated = _JAVA_NAMED_BACKREF.sub(r"(?P=\1)", translated)
    return re.compile(translated)


class JavaReplacement:
    """A java.util.regex.Matcher replacement string: ``$n`` / ``${name}`` groups, ``\\`` escapes.

    Parsed once against the compiled pattern, so a bad group reference is a
    configuration error rather than a failure on every record.
    """

    __slots__ = ("_parts",)

    def __init__(self, replacement: str, pattern: re.Pattern[str]) -> None:
        parts: list[str | int] = []
        literal: list[str] = []
        i, n = 0, len(replacement)
        while i < n:
            ch = replacement[i]
            if ch == "\\":
                if i + 1 >= n:
                    raise ValueError("character to be escaped is missing")
                literal.append(replacement[i + 1])
                i += 2
                continue
            if ch != "$":
                literal.append(ch)
                i += 1
                continue
            i += 1
            if i >= n:
                raise ValueError("Illegal group reference: group index is missing")
            if replacement[i] == "{":
                end = replacement.find("}", i)
                if end < 0:
                    raise ValueError("named capturing group is missing trailing '}'")
                name = replacement[i + 1 : end]
                if name not in pattern.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")
                group: int = pattern.groupindex[name]
                i = end + 1
            elif replacement[i].isdigit():
                group = int(replacement[i])
                if group > pattern.groups:
                    raise ValueError(f"No group {group}")
                i += 1
                # Like Java, take further digits only while the number still names a group.
                while i < n and replacement[i].isdigit() and group * 10 + int(replacement[i]) <= pattern.groups:
                    group = group * 10 + int(replacement[i])
                    i += 1
            else:
                raise ValueError("Illegal group reference")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(group)
        if literal:
            parts.append("".join(literal))
        self._parts = tuple(parts)

    def expand(self, match: re.Match[str]) -> str:
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
            else:
                text = match.group(part)
                if text is not None:
                    out.append(text)
        return "".join(out)
