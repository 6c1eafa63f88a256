"""Avro schema parsing and the reader/writer compatibility rules, both from the Apache Avro library.

BACKWARD: the new schema, as reader, can read data written with the existing one; FORWARD: the existing
schema can read the new one's data; FULL: both. The *_TRANSITIVE levels compare with every live version,
the others with the latest only (Confluent's ``CompatibilityChecker``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import avro.errors
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from connect.schema_registry.api import Compatibility, SchemaRegistryError

__all__ = ["ParsedSchema", "incompatibilities", "parse_schema"]


class ParsedSchema:
    """A schema as registered: its compact ``text``, the ``canonical`` form two equal schemas share, and the
    parsed Avro schema."""

    __slots__ = ("avro", "canonical", "text")

    def __init__(self, text: str, canonical: str, parsed: avro.schema.Schema) -> None:
        self.text = text
        self.canonical = canonical
        self.avro = parsed


def canonical_text(text: str) -> str:
    """Key order and white space do not make a schema different; field and symbol order do."""
    return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_schema(text: object, schema_type: object = "AVRO") -> ParsedSchema:
    """The schema ``text`` parsed; 42201 with the parser's reason when it is not a valid Avro schema."""
    kind = "AVRO" if schema_type is None else str(schema_type).upper()
    if kind != "AVRO":
        raise SchemaRegistryError(422, 42201, f"Invalid schema: schemaType {schema_type!r} is not supported "
                                  "by this registry; it keeps AVRO schemas only")
    if not isinstance(text, str) or not text.strip():
        raise SchemaRegistryError(422, 42201, "Invalid schema: the request needs \"schema\", the schema as a "
                                  "JSON string")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise SchemaRegistryError(422, 42201, f"Invalid schema: not JSON: {exc}") from None
    try:
        parsed = avro.schema.make_avsc_object(document, avro.schema.Names())
    except (avro.errors.AvroException, TypeError, ValueError, AttributeError, KeyError) as exc:
        raise SchemaRegistryError(422, 42201, f"Invalid schema: {exc}") from None
    except RecursionError:
        raise SchemaRegistryError(422, 42201, "Invalid schema: nested too deeply") from None
    compact = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return ParsedSchema(compact, canonical_text(text), parsed)


def _problems(reader: avro.schema.Schema, writer: avro.schema.Schema, label: str) -> list[str]:
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    kinds = ", ".join(sorted({i.name for i in result.incompatibilities}))
    # the checker reports its findings as sets, so kinds, places and messages are listed side by side
    return [f"{label}: {kinds} at {', '.join(sorted(result.locations))}: {'; '.join(sorted(result.messages))}"]


def incompatibilities(level: Compatibility, new: ParsedSchema, existing: Sequence[tuple[int, ParsedSchema]]
                      ) -> list[str]:
    """Why ``new`` breaks ``level`` against ``existing`` ((version, schema), newest first); empty if it does not."""
    if level is Compatibility.NONE or not existing:
        return []
    against = existing if level.value.endswith("_TRANSITIVE") else existing[:1]
    backward = level.value.startswith(("BACKWARD", "FULL"))
    forward = level.value.startswith(("FORWARD", "FULL"))
    found: list[str] = []
    for version, old in against:
        if backward:
            found += _problems(new.avro, old.avro, f"new schema cannot read data written with version {version}")
        if forward:
            found += _problems(old.avro, new.avro, f"version {version} cannot read data written with the new schema")
    return found
