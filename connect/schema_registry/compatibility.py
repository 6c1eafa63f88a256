"""Avro schema parsing and the reader/writer compatibility rules, in time linear in the schemas' size.

BACKWARD: the new schema, as reader, can read data written with the existing one; FORWARD: the existing
schema can read the new one's data; FULL: both. The *_TRANSITIVE levels compare with every live version,
the others with the latest only (Confluent's ``CompatibilityChecker``).

The rules are Java Avro's ``SchemaCompatibility``, which Confluent's registry runs: same verdicts, same kinds of
incompatibility (named in lower case, as this registry always has) and places (``/fields/2/type``). The Apache ``avro`` package's checker, used before, rebuilt a
record's field table for every field it looked up: quadratic, minutes for 25,000 fields. Here fields are found
through a dict, each pair of named types is compared once (which also ends recursive types), and a union finds
the branches that may read a writer's type through an index, trying only those.

Hostile schemas are bounded before and during the work: a schema's JSON may nest at most
``MAX_NESTING_DEPTH`` levels (checked right after decoding, before any recursive walk, so no RecursionError),
a check may take at most ``MAX_CHECK_STEPS`` steps (pairs of types compared), and a check stops as soon as
the registry closes. Each problem list names at most ``MAX_REPORTED`` problems per version compared.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from connect.schema_registry.api import Compatibility, SchemaRegistryError
from connect.schema_registry.avro_types import (
    PRIMITIVES,
    ArrayType,
    AvroType,
    EnumType,
    FixedType,
    MapType,
    NamedType,
    Path,
    RecordType,
    SchemaParseError,
    UnionType,
    parse_document,
    render_path,
)

__all__ = ["MAX_CHECK_STEPS", "MAX_NESTING_DEPTH", "ParsedSchema", "incompatibilities", "parse_schema"]

MAX_NESTING_DEPTH = 128
MAX_CHECK_STEPS = 2_000_000
MAX_REPORTED = 10
# verdicts on pairs of named types kept for reuse: more than a 1 MB schema has named types, few enough (about
# 25 MB) that a hostile one (a union of thousands of records of one name) cannot fill memory with them
_MEMO_LIMIT = 50_000
_CANCEL_POLL_STEPS = 4096  # how often a check looks at the registry closing: about every few milliseconds

# writer type -> reader types that read it by promotion (the specification's schema resolution)
_PROMOTED_TO = {"int": ("long", "float", "double"), "long": ("float", "double"), "float": ("double",),
                "string": ("bytes",), "bytes": ("string",)}
_PRIMITIVE_KINDS = frozenset(PRIMITIVES)


class ParsedSchema:
    """A schema as registered: its compact ``text``, the ``canonical`` form two equal schemas share, and the
    parsed Avro ``type``."""

    __slots__ = ("canonical", "text", "type")

    def __init__(self, text: str, canonical: str, parsed: AvroType) -> None:
        self.text = text
        self.canonical = canonical
        self.type = parsed


def canonical_text(text: str) -> str:
    """Key order and white space do not make a schema different; field and symbol order do."""
    return _canonical(json.loads(text))


def _canonical(document: object) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _too_deep() -> SchemaRegistryError:
    return SchemaRegistryError(42201, f"Invalid schema: nested more than {MAX_NESTING_DEPTH} levels deep "
                               f"(objects and lists in its JSON); the registry's limit is {MAX_NESTING_DEPTH} levels")


def _deeper_than(document: dict[str, object] | list[object], limit: int) -> bool:
    """Whether ``document`` nests objects and lists more than ``limit`` deep, found without recursion."""
    pending: list[tuple[dict[str, object] | list[object], int]] = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        children = value.values() if isinstance(value, dict) else value
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    return True
                pending.append((child, depth + 1))
    return False


def parse_schema(text: object, schema_type: object = "AVRO") -> ParsedSchema:
    """The schema ``text`` parsed; 42201 with the reason and place when it is not a valid Avro schema."""
    kind = "AVRO" if schema_type is None else str(schema_type).upper()
    if kind != "AVRO":
        raise SchemaRegistryError(42201, f"Invalid schema: schemaType {schema_type!r} is not supported "
                                  "by this registry; it keeps AVRO schemas only")
    if not isinstance(text, str) or not text.strip():
        raise SchemaRegistryError(42201, "Invalid schema: the request needs \"schema\", the schema as a "
                                  "JSON string")
    try:
        document = json.loads(text)
    except RecursionError:  # the decoder's own guard, far past the limit: the same answer
        raise _too_deep() from None
    except ValueError as exc:
        raise SchemaRegistryError(42201, f"Invalid schema: not JSON: {exc}") from None
    if isinstance(document, (dict, list)) and _deeper_than(document, MAX_NESTING_DEPTH):
        raise _too_deep()
    try:
        parsed = parse_document(document)
    except SchemaParseError as exc:
        raise SchemaRegistryError(42201, f"Invalid schema: {exc}") from None
    compact = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return ParsedSchema(compact, _canonical(document), parsed)


# --- the reader/writer check -------------------------------------------------------------------------
Problem = tuple[str, Path, str]  # the kind of incompatibility (Java Avro's, in lower case), where, what


class _Verdict:
    """A pair's problems: the first MAX_REPORTED of them and how many there are; none when compatible."""

    __slots__ = ("count", "problems")

    def __init__(self, problems: tuple[Problem, ...], count: int) -> None:
        self.problems = problems
        self.count = count


_COMPATIBLE = _Verdict((), 0)


def _one(kind: str, path: Path, message: str) -> _Verdict:
    return _Verdict(((kind, path, message),), 1)


def _merge(first: _Verdict, second: _Verdict) -> _Verdict:
    if not second.count:
        return first
    if not first.count:
        return second
    return _Verdict((first.problems + second.problems)[:MAX_REPORTED], first.count + second.count)


class _OverBudget(Exception):
    pass


class _Checker:
    """Java Avro's reader/writer rules, walking both schemas together; one instance per request, so that the
    steps of all the versions it compares count against one budget."""

    def __init__(self, max_steps: int, cancelled: threading.Event | None) -> None:
        self.max_steps = max_steps
        self.cancelled = cancelled
        self.steps = 0
        self.memo: dict[int, _Verdict] = {}  # (reader, writer) objects -> verdict
        self.under_way: set[int] = set()

    def verdict(self, reader: AvroType, writer: AvroType) -> _Verdict:
        self.memo.clear()  # keyed by the objects of this pair of schemas: nothing to reuse for the next one
        self.under_way.clear()
        return self.check(reader, writer, None)

    def _tick(self) -> None:
        self.steps += 1
        if self.steps % _CANCEL_POLL_STEPS == 0:
            if self.steps > self.max_steps:
                raise _OverBudget
            if self.cancelled is not None and self.cancelled.is_set():
                raise SchemaRegistryError(50003, "The schema registry is shutting down")

    def check(self, reader: AvroType, writer: AvroType, path: Path) -> _Verdict:
        self._tick()
        reader_kind, writer_kind = reader.kind, writer.kind
        if reader_kind == writer_kind:
            if reader_kind in _PRIMITIVE_KINDS:
                return _COMPATIBLE
            if isinstance(reader, ArrayType) and isinstance(writer, ArrayType):
                return self.check(reader.items, writer.items, (path, "items"))
            if isinstance(reader, MapType) and isinstance(writer, MapType):
                return self.check(reader.values, writer.values, (path, "values"))
            if isinstance(reader, UnionType) and isinstance(writer, UnionType):
                result = _COMPATIBLE
                for index, branch in enumerate(writer.branches):
                    if not self._union_reads(reader, branch, path):
                        result = _merge(result, _one("missing_union_branch", (path, index),
                                                     f"reader union lacking writer type: {branch.kind}"))
                return result
            assert isinstance(reader, NamedType) and isinstance(writer, NamedType)
            return self._named(reader, writer, path)
        if isinstance(writer, UnionType):  # every branch the writer may have written must be readable
            result = _COMPATIBLE
            for branch in writer.branches:
                result = _merge(result, self.check(reader, branch, path))
            return result
        if reader_kind in _PROMOTED_TO.get(writer_kind, ()):
            return _COMPATIBLE
        if isinstance(reader, UnionType):
            if self._union_reads(reader, writer, path):
                return _COMPATIBLE
            return _one("missing_union_branch", path, f"reader union lacking writer type: {writer_kind}")
        return _one("type_mismatch", path, f"reader type: {reader_kind} not compatible with writer type: "
                    f"{writer_kind}")

    def _union_reads(self, reader: UnionType, writer: AvroType, path: Path) -> bool:
        """Whether some branch of ``reader`` reads ``writer`` (not a union). Only a branch of the writer's type
        and name (or alias), or one it is promoted to, can: those are found in the union's indexes and tried
        in the union's order; the others would fail on their type or name."""
        sources: list[Sequence[AvroType]] = []
        if isinstance(writer, NamedType):
            for key in {writer.name, writer.fullname}:
                named = reader.by_name.get((writer.kind, key))
                if named:
                    sources.append(named)
        else:
            same = reader.by_kind.get(writer.kind)
            if same is not None:
                sources.append((same,))
        for promoted in _PROMOTED_TO.get(writer.kind, ()):
            wider = reader.by_kind.get(promoted)
            if wider is not None:
                sources.append((wider,))
        if not sources:
            return False
        candidates = sources[0]  # each source is in the union's order already
        if len(sources) > 1:
            unique = {id(branch): branch for source in sources for branch in source}
            candidates = sorted(unique.values(), key=lambda branch: reader.position[id(branch)])
        return any(not self.check(branch, writer, path).count for branch in candidates)

    def _named(self, reader: NamedType, writer: NamedType, path: Path) -> _Verdict:
        key = id(reader) << 64 | id(writer)
        known = self.memo.get(key)
        if known is not None:
            return known
        if key in self.under_way:  # a recursive reference to this pair: taken as readable (Java Avro's rule)
            return _COMPATIBLE
        self.under_way.add(key)
        problems: list[Problem] = []
        count = 0
        if reader.name != writer.name and writer.fullname not in reader.aliases:
            problems.append(("name_mismatch", (path, "name"), f"expected: {writer.fullname}"))
            count = 1
        if isinstance(reader, RecordType) and isinstance(writer, RecordType):
            count += self._fields(reader, writer, path, problems)
        elif isinstance(reader, EnumType) and isinstance(writer, EnumType):
            missing = [symbol for symbol in writer.symbols if symbol not in reader.symbol_set]
            if missing and reader.default is None:
                missing.sort()
                shown = ", ".join(missing[:MAX_REPORTED])
                more = f", and {len(missing) - MAX_REPORTED} more" if len(missing) > MAX_REPORTED else ""
                problems.append(("missing_enum_symbols", (path, "symbols"), f"[{shown}{more}]"))
                count += 1
        elif isinstance(reader, FixedType) and isinstance(writer, FixedType) and reader.size != writer.size:
            problems.append(("fixed_size_mismatch", (path, "size"),
                             f"expected: {writer.size}, found: {reader.size}"))
            count += 1
        verdict = _Verdict(tuple(problems[:MAX_REPORTED]), count) if count else _COMPATIBLE
        self.under_way.discard(key)
        if len(self.memo) < _MEMO_LIMIT:
            self.memo[key] = verdict
        return verdict

    def _fields(self, reader: RecordType, writer: RecordType, path: Path, problems: list[Problem]) -> int:
        """Adds to ``problems`` (up to MAX_REPORTED) what stops ``reader``'s fields reading ``writer``'s;
        returns how many problems there are."""
        count = 0
        fields = (path, "fields")
        for index, field in enumerate(reader.fields):
            written = writer.by_name.get(field.name)
            if written is None:
                for alias in field.aliases:
                    written = writer.by_name.get(alias)
                    if written is not None:
                        break
            if written is not None:
                found = self.check(field.type, written.type, ((fields, index), "type"))
            elif field.has_default:
                continue
            elif isinstance(field.type, EnumType) and field.type.default is not None:
                # Java Avro's rule, kept for the same verdicts: an enum with a default against the writer record
                found = self.check(field.type, writer, ((fields, index), "type"))
            else:
                found = _one("reader_field_missing_default_value", (fields, index), field.name)
            if found.count:
                count += found.count
                problems.extend(found.problems[:MAX_REPORTED - len(problems)])
        return count


def _report(label: str, verdict: _Verdict) -> list[str]:
    if not verdict.count:
        return []
    shown = "; ".join(f"{kind} at {render_path(path)}: {message}" for kind, path, message in verdict.problems)
    more = verdict.count - len(verdict.problems)
    return [f"{label}: {shown}" + (f"; and {more} more" if more else "")]


def incompatibilities(level: Compatibility, new: ParsedSchema, existing: Sequence[tuple[int, ParsedSchema]], *,
                      cancelled: threading.Event | None = None, max_steps: int = MAX_CHECK_STEPS) -> list[str]:
    """Why ``new`` breaks ``level`` against ``existing`` ((version, schema), newest first); empty if it does not.
    422 past ``max_steps``; 503 once ``cancelled`` is set."""
    if level is Compatibility.NONE or not existing:
        return []
    against = existing if level.value.endswith("_TRANSITIVE") else existing[:1]
    backward = level.value.startswith(("BACKWARD", "FULL"))
    forward = level.value.startswith(("FORWARD", "FULL"))
    checker = _Checker(max_steps, cancelled)
    found: list[str] = []
    try:
        for version, old in against:
            if backward:
                found += _report(f"new schema cannot read data written with version {version}",
                                 checker.verdict(new.type, old.type))
            if forward:
                found += _report(f"version {version} cannot read data written with the new schema",
                                 checker.verdict(old.type, new.type))
    except _OverBudget:
        raise SchemaRegistryError(42201, f"Invalid schema: checking its compatibility ({level.value}, "
                                  f"against {len(against)} version(s)) takes more than {max_steps:,} steps, the "
                                  "registry's limit for one check; typically a union of many records of one "
                                  "name, or very many versions of a very large schema") from None
    return found
