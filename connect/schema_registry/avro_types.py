"""Avro schemas as the registry checks them: parsed from their JSON document by the specification's rules.

The Apache ``avro`` package did this before, in time quadratic in the number of fields (a list searched for
every field name) with error messages that repeated every enclosing type; 25,000 fields took 19 s to parse.
This parser is one pass: each JSON value is looked at once, names are looked up in dicts, and an error names
the place in the document (``/fields/3/type``) instead of repeating the document. What it accepts is what Java
Avro's ``Schema.Parser`` (under Confluent's registry) accepts: valid names and namespaces, no named type defined
twice, references only to types defined before, unique field names and enum symbols, an enum default among
the symbols, no union in a union and no two branches of one type (or one name). Three things it takes as this
registry did before, so that no schema it kept stops parsing: defaults are not validated (Confluent does not
by default either), a field name may be any non-empty string, and ``aliases`` may be one name. Logical types and other properties are kept out of the
model, as the compatibility rules ignore them.

The recursion here follows the document's nesting, which ``compatibility.parse_schema`` bounds beforehand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = [
    "PRIMITIVES",
    "ArrayType",
    "AvroType",
    "EnumType",
    "Field",
    "FixedType",
    "MapType",
    "NamedType",
    "PrimitiveType",
    "RecordType",
    "SchemaParseError",
    "UnionType",
    "parse_document",
]

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELD_ORDERS = ("ascending", "descending", "ignore")

# where a value is in the document: None for the root, else (where its parent is, its key or index)
Path: TypeAlias = tuple["Path", object] | None


def render_path(path: Path) -> str:
    tokens: list[str] = []
    while path is not None:
        path, token = path
        tokens.append(str(token))
    return "/" + "/".join(reversed(tokens))


class SchemaParseError(ValueError):
    """Why and where a document is not a valid schema; ``field``: the innermost field whose type it is in."""

    def __init__(self, reason: str, path: Path) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path
        self.field: str | None = None

    def __str__(self) -> str:
        within = f" in field {self.field!r}" if self.field is not None else ""
        return f"{self.reason}{within} (at {render_path(self.path)})"


def _shown(value: object) -> str:
    """``value`` for an error message, cut short: the document may be a megabyte."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class PrimitiveType:
    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind


class ArrayType:
    __slots__ = ("items",)
    kind = "array"

    def __init__(self, items: AvroType) -> None:
        self.items = items


class MapType:
    __slots__ = ("values",)
    kind = "map"

    def __init__(self, values: AvroType) -> None:
        self.values = values


class NamedType:
    """A record, enum or fixed: ``name`` is the simple name, ``aliases`` are full names, as Java Avro has them
    (its reader/writer check compares simple names, then the reader's aliases with the writer's full name)."""

    __slots__ = ("aliases", "fullname", "name")
    kind = ""

    def __init__(self, fullname: str, aliases: frozenset[str]) -> None:
        self.fullname = fullname
        self.name = fullname.rpartition(".")[2]
        self.aliases = aliases


class Field:
    __slots__ = ("aliases", "has_default", "name", "type")

    def __init__(self, name: str, field_type: AvroType, has_default: bool, aliases: tuple[str, ...]) -> None:
        self.name = name
        self.type = field_type
        self.has_default = has_default
        self.aliases = aliases


class RecordType(NamedType):
    __slots__ = ("by_name", "fields")
    kind = "record"

    def __init__(self, fullname: str, aliases: frozenset[str]) -> None:
        super().__init__(fullname, aliases)
        self.fields: list[Field] = []
        self.by_name: dict[str, Field] = {}


class EnumType(NamedType):
    __slots__ = ("default", "symbol_set", "symbols")
    kind = "enum"

    def __init__(self, fullname: str, aliases: frozenset[str], symbols: list[str], default: str | None) -> None:
        super().__init__(fullname, aliases)
        self.symbols = symbols
        self.symbol_set = frozenset(symbols)
        self.default = default


class FixedType(NamedType):
    __slots__ = ("size",)
    kind = "fixed"

    def __init__(self, fullname: str, aliases: frozenset[str], size: int) -> None:
        super().__init__(fullname, aliases)
        self.size = size


class UnionType:
    """Its branches, and indexes to find the ones that may read a writer's type without trying every one."""

    __slots__ = ("branches", "by_kind", "by_name", "position")
    kind = "union"

    def __init__(self, branches: list[AvroType]) -> None:
        self.branches = branches
        self.position = {id(branch): index for index, branch in enumerate(branches)}
        self.by_kind: dict[str, AvroType] = {}  # unnamed branches: at most one of each kind
        self.by_name: dict[tuple[str, str], list[DefinedType]] = {}  # (kind, simple name or alias) -> branches
        for branch in branches:
            if isinstance(branch, (RecordType, EnumType, FixedType)):
                for key in {branch.name, *branch.aliases}:
                    self.by_name.setdefault((branch.kind, key), []).append(branch)
            else:
                self.by_kind[branch.kind] = branch


DefinedType: TypeAlias = RecordType | EnumType | FixedType
AvroType: TypeAlias = PrimitiveType | ArrayType | MapType | RecordType | EnumType | FixedType | UnionType

_PRIMITIVE = {kind: PrimitiveType(kind) for kind in PRIMITIVES}


def parse_document(document: object) -> AvroType:
    """The Avro type ``document`` (a decoded JSON value) describes; SchemaParseError naming where it is not
    valid. ``document`` must have been checked to nest no deeper than the caller's limit."""
    return _Parser().parse(document, "", None)


class _Parser:
    def __init__(self) -> None:
        self.named: dict[str, DefinedType] = {}

    def parse(self, node: object, namespace: str, path: Path) -> AvroType:
        if isinstance(node, str):
            return self._reference(node, namespace, path)
        if isinstance(node, list):
            return self._union(node, namespace, path)
        if isinstance(node, dict):
            return self._object(node, namespace, path)
        raise SchemaParseError(f"{_shown(node)} is not a schema: a schema is a type name, an object or a list "
                               "(a union)", path)

    def _reference(self, name: str, namespace: str, path: Path) -> AvroType:
        if name in _PRIMITIVE:
            return _PRIMITIVE[name]
        found = self.named.get(f"{namespace}.{name}") if namespace and "." not in name else None
        if found is None:
            found = self.named.get(name)
        if found is None:
            raise SchemaParseError(f"undefined name: {_shown(name)} (a named type must be defined before it is "
                                   "referred to)", path)
        return found

    def _union(self, branches: list[object], namespace: str, path: Path) -> UnionType:
        parsed: list[AvroType] = []
        seen: set[str] = set()
        for index, node in enumerate(branches):
            where = (path, index)
            if isinstance(node, list):
                raise SchemaParseError("a union cannot hold a union directly", where)
            branch = self.parse(node, namespace, where)
            if isinstance(branch, UnionType):  # a name can only refer to a named type, so never here
                raise SchemaParseError("a union cannot hold a union directly", where)
            key = branch.fullname if isinstance(branch, NamedType) else branch.kind
            if key in seen:
                raise SchemaParseError(f"duplicate in union: {key}", where)
            seen.add(key)
            parsed.append(branch)
        return UnionType(parsed)

    def _object(self, node: Mapping[str, object], namespace: str, path: Path) -> AvroType:
        kind = node.get("type")
        if not isinstance(kind, str):
            raise SchemaParseError('a schema object needs "type", a string' if kind is None else
                                   f'"type" must be a string, not {_shown(kind)}', path)
        if kind in _PRIMITIVE:
            return _PRIMITIVE[kind]
        if kind == "array":
            return ArrayType(self.parse(_required(node, "items", "an array", path), namespace, (path, "items")))
        if kind == "map":
            return MapType(self.parse(_required(node, "values", "a map", path), namespace, (path, "values")))
        if kind in ("record", "error"):
            return self._record(node, namespace, path)
        if kind == "enum":
            return self._enum(node, namespace, path)
        if kind == "fixed":
            return self._fixed(node, namespace, path)
        # a named type may be referred to as {"type": "Name"} too (Java Avro allows it)
        try:
            return self._reference(kind, namespace, (path, "type"))
        except SchemaParseError:
            raise SchemaParseError(f"unknown type {_shown(kind)}", (path, "type")) from None

    def _name(self, node: Mapping[str, object], enclosing: str, path: Path) -> tuple[str, frozenset[str]]:
        """The full name ``node`` defines and its aliases' full names."""
        name = node.get("name")
        if not isinstance(name, str):
            raise SchemaParseError('a record, enum or fixed needs "name", a string', path)
        namespace = node.get("namespace")
        if namespace is None:
            namespace = enclosing
        elif not isinstance(namespace, str):
            raise SchemaParseError(f'"namespace" must be a string, not {_shown(namespace)}', (path, "namespace"))
        fullname = _full(name, namespace, (path, "name"))
        if fullname in _PRIMITIVE:
            raise SchemaParseError(f"a named type cannot be called {fullname!r}, a primitive type's name",
                                   (path, "name"))
        if fullname in self.named:
            raise SchemaParseError(f"can't redefine: {fullname}", (path, "name"))
        own_namespace = fullname.rpartition(".")[0]
        aliases = frozenset(_full(alias, own_namespace, (path, "aliases"))
                            for alias in _names_list(node, "aliases", path))
        return fullname, aliases

    def _record(self, node: Mapping[str, object], namespace: str, path: Path) -> RecordType:
        fullname, aliases = self._name(node, namespace, path)
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise SchemaParseError('a record needs "fields", a list', path)
        record = RecordType(fullname, aliases)
        self.named[fullname] = record  # before its fields: a field may refer to the record itself
        inner = fullname.rpartition(".")[0]
        for index, field in enumerate(fields):
            where = ((path, "fields"), index)
            if not isinstance(field, dict):
                raise SchemaParseError(f"a field must be an object, not {_shown(field)}", where)
            name = field.get("name")
            # any name, as this registry has always taken (Java Avro would want [A-Za-z_][A-Za-z0-9_]*)
            if not isinstance(name, str) or not name:
                raise SchemaParseError(f'a field needs "name", a non-empty string, not {_shown(name)}',
                                       (where, "name"))
            if name in record.by_name:
                raise SchemaParseError(f"duplicate field {name} in record {fullname}", (where, "name"))
            if "type" not in field:
                raise SchemaParseError(f'field {name} has no "type"', where)
            order = field.get("order")
            if order is not None and order not in _FIELD_ORDERS:
                raise SchemaParseError(f"invalid order {_shown(order)}: one of {', '.join(_FIELD_ORDERS)}",
                                       (where, "order"))
            try:
                field_type = self.parse(field["type"], inner, (where, "type"))
            except SchemaParseError as exc:
                if exc.field is None:
                    exc.field = name
                raise
            parsed = Field(name, field_type, "default" in field, tuple(_names_list(field, "aliases", where)))
            record.fields.append(parsed)
            record.by_name[name] = parsed
        return record

    def _enum(self, node: Mapping[str, object], namespace: str, path: Path) -> EnumType:
        fullname, aliases = self._name(node, namespace, path)
        symbols = node.get("symbols")
        if not isinstance(symbols, list):
            raise SchemaParseError('an enum needs "symbols", a list of names', path)
        seen: set[str] = set()
        for index, symbol in enumerate(symbols):
            if not isinstance(symbol, str) or not _NAME.fullmatch(symbol):
                raise SchemaParseError(f"invalid enum symbol {_shown(symbol)}", ((path, "symbols"), index))
            if symbol in seen:
                raise SchemaParseError(f"duplicate enum symbol: {symbol}", ((path, "symbols"), index))
            seen.add(symbol)
        default = node.get("default")
        if default is not None and default not in seen:
            raise SchemaParseError(f"the enum default {_shown(default)} is not one of its symbols", (path, "default"))
        enum = EnumType(fullname, aliases, list(symbols), default if isinstance(default, str) else None)
        self.named[fullname] = enum
        return enum

    def _fixed(self, node: Mapping[str, object], namespace: str, path: Path) -> FixedType:
        fullname, aliases = self._name(node, namespace, path)
        size = node.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise SchemaParseError(f'a fixed needs "size", a number of bytes, not {_shown(size)}', path)
        fixed = FixedType(fullname, aliases, size)
        self.named[fullname] = fixed
        return fixed


def _required(node: Mapping[str, object], key: str, what: str, path: Path) -> object:
    if key not in node:
        raise SchemaParseError(f'{what} needs "{key}"', path)
    return node[key]


def _full(name: str, namespace: str, path: Path) -> str:
    """The full name of ``name`` defined in ``namespace``, each of its parts checked."""
    full = name if "." in name else (f"{namespace}.{name}" if namespace else name)
    parts = full.split(".")
    if not all(_NAME.fullmatch(part) for part in parts):
        raise SchemaParseError(f"invalid name {_shown(full)}: each dotted part starts with a letter or _ and "
                               "holds only letters, digits and _", path)
    return full


def _names_list(node: Mapping[str, object], key: str, path: Path) -> Sequence[str]:
    value = node.get(key)
    if value is None:
        return ()
    if isinstance(value, str):  # one name not in a list: taken as meant, as this registry always has
        return (value,)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SchemaParseError(f'"{key}" must be a list of names', (path, key))
    return value
