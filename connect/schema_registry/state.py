"""The registry's state, rebuilt from the ``_schemas`` topic's records in Confluent's own record format.

Keys are JSON objects with a ``keytype``: ``SCHEMA`` (``subject``, ``version``) -> ``{subject, version, id,
schema, deleted}``; ``CONFIG`` (``subject``, null for the global one) -> ``{compatibilityLevel}``; ``MODE``
-> ``{mode}``. A tombstone removes the key: a hard-deleted version, a config or mode reset. Applying a
record twice changes nothing, so a reader may see its own writes again.
"""

from __future__ import annotations

import json
import logging

from connect.schema_registry.api import SchemaVersion
from connect.schema_registry.compatibility import canonical_text

__all__ = ["RegistryState", "config_key", "mode_key", "schema_key"]

log = logging.getLogger(__name__)


def _key(**fields: object) -> bytes:
    # the field order is fixed so that one key always has the same bytes: compaction keys on bytes
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def schema_key(subject: str, version: int) -> bytes:
    return _key(keytype="SCHEMA", subject=subject, version=version, magic=1)


def config_key(subject: str | None) -> bytes:
    return _key(keytype="CONFIG", subject=subject, magic=0)


def mode_key(subject: str | None) -> bytes:
    return _key(keytype="MODE", subject=subject, magic=0)


class RegistryState:
    def __init__(self) -> None:
        self.subjects: dict[str, dict[int, SchemaVersion]] = {}
        self.id_of: dict[str, int] = {}  # canonical schema text -> its id, kept after a hard delete
        self.text_of: dict[int, str] = {}  # id -> schema text, while some version uses it
        self.users: dict[int, set[tuple[str, int]]] = {}  # id -> (subject, version) registered with it
        self.max_id = 0
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            k = json.loads(key)
            kind = k.get("keytype")
            v = None if value is None else json.loads(value)
        except (ValueError, AttributeError, RecursionError):
            log.warning("Skipping a record of the schemas topic that is not a registry record: key %r", key[:100])
            return
        if kind == "SCHEMA":
            self._apply_schema(str(k.get("subject")), int(k.get("version", 0)), v)
        elif kind == "CONFIG":
            self._apply_setting(self.configs, k.get("subject"), None if v is None else v.get("compatibilityLevel"))
        elif kind == "MODE":
            self._apply_setting(self.modes, k.get("subject"), None if v is None else v.get("mode"))

    @staticmethod
    def _apply_setting(table: dict[str | None, str], subject: object, value: object) -> None:
        name = None if subject is None else str(subject)
        if value is None:
            table.pop(name, None)
        else:
            table[name] = str(value)

    def _apply_schema(self, subject: str, version: int, value: dict | None) -> None:
        versions = self.subjects.setdefault(subject, {})
        old = versions.pop(version, None)
        if old is not None:
            self._unuse(old)
        if value is None:
            if not versions:
                del self.subjects[subject]
            return
        entry = SchemaVersion(subject, version, int(value["id"]), str(value["schema"]), bool(value.get("deleted")),
                              str(value.get("schemaType") or "AVRO"))
        versions[version] = entry
        self.users.setdefault(entry.id, set()).add((subject, version))
        self.text_of[entry.id] = entry.schema
        try:
            self.id_of.setdefault(canonical_text(entry.schema), entry.id)
        except (ValueError, RecursionError):  # the follower applying this must go on with the next record
            log.warning("Schema id %d in the schemas topic is not JSON, or nested too deeply to decode", entry.id)
        self.max_id = max(self.max_id, entry.id)

    def _unuse(self, entry: SchemaVersion) -> None:
        users = self.users.get(entry.id)
        if users is not None:
            users.discard((entry.subject, entry.version))
            if not users:
                del self.users[entry.id]
                self.text_of.pop(entry.id, None)

    # --- queries ---------------------------------------------------------------------------------
    def live(self, subject: str, deleted: bool = False) -> list[SchemaVersion]:
        """The subject's versions, oldest first; soft-deleted ones only with ``deleted``."""
        versions = self.subjects.get(subject, {})
        return [versions[v] for v in sorted(versions) if deleted or not versions[v].deleted]
