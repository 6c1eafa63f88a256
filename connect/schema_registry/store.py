"""SchemaStore: the registry on a compacted single-partition topic of the worker's log (embedded or Kafka).

Start reads the topic to its end; a thread then follows it, so schemas another registry process writes to the
same topic are seen here too. A write is one or more records appended and acknowledged (``acks=all`` on
Kafka; on the embedded log the topic has ``flush.messages=1``, so each append is fsynced), then read back by
the follower before the call returns: what a client was told is registered survives a ``kill -9``, and the
state is only ever changed by reading the log.

Several registries may share the topic (every worker's, ``headrace schema-registry`` processes): each writes
through one transactional id, so the registry that wrote last fences the others. A write reads the topic to
its end, decides (ids, versions, compatibility) from what it read, and commits in a transaction; a registry
that was fenced meanwhile has its transaction aborted, takes the id back (fencing the other) and decides
again from the log's new end. Readers read committed records only, so two registries never hand out one id
for two schemas. Ids are global: one schema in two subjects shares an id, and a schema registered again after
a hard delete gets its old id back.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TypeVar

from connect.log.api import LogBackend, LogError, NewTopic, ProducerFencedError, TransactionAbortedError
from connect.runtime.storage.kafka_based_log import KafkaBasedLog
from connect.schema_registry.api import (
    Compatibility,
    Mode,
    SchemaRegistry,
    SchemaRegistryError,
    SchemaVersion,
    subject_not_found,
)
from connect.schema_registry.compatibility import ParsedSchema, incompatibilities, parse_schema
from connect.schema_registry.state import RegistryState, config_key, mode_key, schema_key

__all__ = ["DEFAULT_TOPIC", "SchemaStore"]

log = logging.getLogger(__name__)

DEFAULT_TOPIC = "_schemas"
_DEFAULT_MAX_MESSAGE_BYTES = 1048588
_RECORD_OVERHEAD = 512
_MAX_SUBJECT_CHARS = 1000
_WRITABLE = (Mode.READWRITE, Mode.IMPORT)
_ATTEMPTS = 20
_BACKOFF_S = 0.02
# parsed schemas kept for compatibility checks, by the size of their text: a parsed schema takes about seven
# times its text, so this keeps about 100 MB at most; one evicted is parsed again (about 0.5 s per MB)
_PARSED_CACHE_BYTES = 16 * 1024 * 1024
T = TypeVar("T")
Records = list[tuple[bytes, bytes | None]]
_Basis = tuple[Mode, Compatibility, tuple[tuple[int, int], ...]]  # what a compatibility verdict depends on


def _check_subject(subject: str) -> None:
    if not subject or not subject.strip():
        raise SchemaRegistryError(42208, "Invalid subject: a subject name cannot be empty")
    if len(subject) > _MAX_SUBJECT_CHARS:
        raise SchemaRegistryError(42208, f"Invalid subject: longer than {_MAX_SUBJECT_CHARS} characters")
    if "/" in subject or any(ord(c) < 0x20 or ord(c) == 0x7F for c in subject):
        raise SchemaRegistryError(42208, f"Invalid subject {subject!r}: it may contain neither '/' nor "
                                  "control characters")


def _schema_value(entry: SchemaVersion) -> bytes:
    value: dict[str, object] = {"subject": entry.subject, "version": entry.version, "id": entry.id,
                                "schema": entry.schema, "deleted": entry.deleted}
    if entry.schema_type != "AVRO":
        value["schemaType"] = entry.schema_type
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class SchemaStore(SchemaRegistry):
    def __init__(self, backend: LogBackend, topic: str = DEFAULT_TOPIC, *, replication_factor: int = -1,
                 default_compatibility: Compatibility = Compatibility.BACKWARD, timeout: float = 30.0) -> None:
        self.backend = backend
        self.topic = topic
        self.replication_factor = replication_factor
        self.default_compatibility = default_compatibility
        self.timeout = timeout
        self.max_schema_bytes = _DEFAULT_MAX_MESSAGE_BYTES - _RECORD_OVERHEAD
        self._state = RegistryState()
        self._lock = threading.RLock()  # guards _state: the follower thread applies, requests read
        self._writes = threading.Lock()
        self._log: KafkaBasedLog | None = None
        self._parsed: OrderedDict[int, ParsedSchema] = OrderedDict()  # id -> parsed schema, least recent first
        self._parsed_bytes = 0
        # one compatibility check at a time: each is CPU-bound Python, and several at once would take the GIL
        # from the worker's tasks and REST requests in turn, slowing them more than one after the other
        self._checking = threading.Lock()
        self._closing = threading.Event()  # set by close(): a check under way stops, a waiting one gives up
        self._transactional_id = f"schema-registry-{topic}"

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self._ensure_topic()
        self._log = KafkaBasedLog(self.backend, self.topic, self._on_record,
                                  consumer_config={"isolation.level": "read_committed"})
        self._log.start(1, self.timeout)
        self._log.use_transactional_producer(self._transactional_id, self.timeout)
        with self._lock:
            count = sum(len(v) for v in self._state.subjects.values())
            log.info("Schema registry read %d schema version(s) in %d subject(s) from topic '%s'", count,
                     len(self._state.subjects), self.topic)

    def _ensure_topic(self) -> None:
        configs = {"cleanup.policy": "compact"}
        if self.backend.name == "embedded":
            configs["flush.messages"] = "1"  # a registered schema is on disk before the client hears of it
        admin = self.backend.admin()
        try:
            admin.create_topic(NewTopic(self.topic, 1, self.replication_factor, configs), exist_ok=True)
            described = admin.describe_topic(self.topic)
        finally:
            admin.close()
        policy = described.configs.get("cleanup.policy", "compact")
        if "compact" not in policy or described.partitions != 1:
            raise LogError(f"Topic '{self.topic}' holds the schema registry, so it must have one partition and "
                           f"cleanup.policy=compact; it has {described.partitions} partition(s) and '{policy}'")
        limit = int(described.configs.get("max.message.bytes", _DEFAULT_MAX_MESSAGE_BYTES))
        self.max_schema_bytes = limit - _RECORD_OVERHEAD

    def interrupt(self) -> None:
        self._closing.set()

    def close(self) -> None:
        self._closing.set()
        if self._log is not None:
            self._log.stop()
            self._log = None

    def _on_record(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        with self._lock:
            self._state.apply(key, value)

    def _read(self, fn: Callable[[RegistryState], T]) -> T:
        try:
            with self._lock:
                return fn(self._state)
        except SchemaRegistryError as exc:
            if not exc.not_found:
                raise
        # not found here: another registry on the topic may have just written it, so read to the end and look again
        self._catch_up()
        with self._lock:
            return fn(self._state)

    def _transact(self, plan: Callable[[RegistryState], tuple[Records, T, str]]) -> T:
        """Decide with ``plan`` on the state read to the log's end, write its records in one transaction, wait
        for the follower to have applied them; ``plan`` again after being fenced by another registry."""
        log_ = self._log
        assert log_ is not None, "SchemaStore.start() was not called"
        with self._writes:
            for attempt in range(_ATTEMPTS):
                self._catch_up()
                with self._lock:
                    records, result, what = plan(self._state)
                if not records:
                    return result
                try:
                    log_.send_in_transaction([(key, value, 0) for key, value in records], self.timeout)
                except (ProducerFencedError, TransactionAbortedError) as exc:
                    # another registry wrote meanwhile: nothing of ours is visible; take the id back, decide again
                    log.info("Schema registry: write not committed (%s); reading the topic again", exc)
                    # a random pause, growing: two registries writing at once would otherwise fence each other in turn
                    time.sleep(random.uniform(0.5, 1.5) * _BACKOFF_S * min(attempt + 1, 10))
                    try:
                        log_.use_transactional_producer(self._transactional_id, self.timeout)
                    except LogError as again:
                        raise _store_error(what, again) from None
                    continue
                except LogError as exc:
                    raise _store_error(what, exc) from None
                if not log_.read_to_end(self.timeout):
                    raise SchemaRegistryError(50002, f"Timed out after {what}: the write was committed but "
                                              "not read back yet")
                log.info("Schema registry: %s", what)
                return result
        raise SchemaRegistryError(50001, f"Gave up {what}: other registries on topic '{self.topic}' kept "
                                  "writing first")

    def _catch_up(self) -> None:
        """Before a write: see everything other registries wrote to the topic."""
        assert self._log is not None, "SchemaStore.start() was not called"
        if not self._log.read_to_end(self.timeout):
            raise SchemaRegistryError(50002, f"Timed out reading the schemas topic '{self.topic}' to its end")

    # --- subjects and versions ---------------------------------------------------------------------
    def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        def pick(state: RegistryState) -> list[str]:
            return sorted(s for s in state.subjects if s.startswith(prefix) and state.live(s, deleted))
        return self._read(pick)

    def _live(self, state: RegistryState, subject: str, deleted: bool) -> list[SchemaVersion]:
        live = state.live(subject, deleted)
        if not live:
            raise subject_not_found(subject)
        return live

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return self._read(lambda state: [v.version for v in self._live(state, subject, deleted)])

    def _find_version(self, state: RegistryState, subject: str, spec: str, deleted: bool) -> SchemaVersion:
        live = self._live(state, subject, deleted)
        if spec.strip().lower() in ("latest", "-1"):
            return live[-1]
        try:
            number = int(spec)
        except ValueError:
            number = 0
        if not 0 < number < 2**31:
            raise SchemaRegistryError(42202, f"The specified version '{spec}' is not a valid version id. "
                                      "Allowed values are between [1, 2^31-1] and the string \"latest\"")
        for entry in live:
            if entry.version == number:
                return entry
        raise SchemaRegistryError(40402, f"Version {number} not found.")

    def version(self, subject: str, version: str, deleted: bool = False) -> SchemaVersion:
        return self._read(lambda state: self._find_version(state, subject, version, deleted))

    def _parse(self, text: object, schema_type: object) -> ParsedSchema:
        if isinstance(text, str) and len(text.encode("utf-8")) > self.max_schema_bytes:
            raise SchemaRegistryError(42209, f"Schema too large: {len(text.encode('utf-8'))} bytes, more "
                                      f"than the {self.max_schema_bytes} bytes a record of topic '{self.topic}' "
                                      "can hold")
        return parse_schema(text, schema_type)

    def _parsed_of(self, entry: SchemaVersion) -> ParsedSchema:
        with self._lock:
            found = self._parsed.get(entry.id)
            if found is not None:
                self._parsed.move_to_end(entry.id)
                return found
        try:
            parsed = parse_schema(entry.schema, entry.schema_type)
        except SchemaRegistryError as exc:  # written by another registry, or one with other rules
            raise SchemaRegistryError(50001, f"Schema id {entry.id} (version {entry.version} of subject "
                                      f"'{entry.subject}') in topic '{self.topic}' cannot be parsed, so nothing "
                                      f"can be checked against it: {exc.message}") from None
        return self._remember(entry.id, parsed)

    def _remember(self, schema_id: int, parsed: ParsedSchema) -> ParsedSchema:
        with self._lock:
            if schema_id in self._parsed:
                return self._parsed[schema_id]
            self._parsed[schema_id] = parsed
            self._parsed_bytes += len(parsed.text)
            while self._parsed_bytes > _PARSED_CACHE_BYTES and len(self._parsed) > 1:
                _, evicted = self._parsed.popitem(last=False)
                self._parsed_bytes -= len(evicted.text)
            return parsed

    def _incompatibilities(self, level: Compatibility, parsed: ParsedSchema,
                           against: Sequence[tuple[int, ParsedSchema]]) -> list[str]:
        """``incompatibilities``, one check at a time, ended by close(); called without ``_lock`` held, so that
        reads and the topic's follower go on meanwhile."""
        if level is Compatibility.NONE or not against:
            return []
        deadline = time.monotonic() + self.timeout
        while not self._checking.acquire(timeout=0.1):
            if self._closing.is_set():
                raise SchemaRegistryError(50003, "The schema registry is shutting down")
            if time.monotonic() >= deadline:
                raise SchemaRegistryError(50002, f"Timed out after {self.timeout:.0f} s waiting for other "
                                          "compatibility checks to finish")
        try:
            return incompatibilities(level, parsed, against, cancelled=self._closing)
        finally:
            self._checking.release()

    def _mode_of(self, state: RegistryState, subject: str | None) -> Mode:
        text = state.modes.get(subject) if subject is not None else None
        return Mode(text or state.modes.get(None) or Mode.READWRITE.value)

    def _level_of(self, state: RegistryState, subject: str | None) -> Compatibility:
        text = state.configs.get(subject) if subject is not None else None
        return Compatibility(text or state.configs.get(None) or self.default_compatibility.value)

    def _check_writable(self, state: RegistryState, subject: str) -> Mode:
        mode = self._mode_of(state, subject)
        if mode not in _WRITABLE:
            raise SchemaRegistryError(42205, f"Subject '{subject}' is in {mode.value} mode; writes are "
                                      "not permitted")
        return mode

    def register(self, subject: str, schema: str, schema_type: str = "AVRO", references: Sequence[object] = (),
                 schema_id: int | None = None, version: int | None = None) -> SchemaVersion:
        _check_subject(subject)
        if references:
            raise SchemaRegistryError(42201, "Invalid schema: schema references are not supported by this "
                                      "registry; register the referenced types inline")
        parsed = self._parse(schema, schema_type)
        for _ in range(_ATTEMPTS):
            checked = self._check_before_writing(subject, parsed, schema_id)

            def plan(state: RegistryState, checked: tuple[_Basis, list[str]] = checked
                     ) -> tuple[Records, SchemaVersion, str]:
                entry, new = self._new_version(state, subject, parsed, schema_id, version, checked)
                if not new:  # already registered: nothing to write
                    return [], entry, ""
                key, value = schema_key(subject, entry.version), _schema_value(entry)
                if len(key) + len(value) > self.max_schema_bytes:
                    # the schema is a JSON string in the record, so its quotes take twice the room they do here
                    raise SchemaRegistryError(42209, f"Schema too large: its record in topic '{self.topic}' "
                                              f"would take {len(key) + len(value)} bytes (the schema escaped as "
                                              f"a JSON string), more than the {self.max_schema_bytes} bytes a "
                                              "record can hold")
                return ([(key, value)], entry,
                        f"registered schema id {entry.id} as version {entry.version} of subject '{subject}'")
            try:
                entry = self._transact(plan)
            except _StaleCheck:
                log.info("Schema registry: subject '%s' changed while a schema was checked against it; checking "
                         "again", subject)
                continue
            with self._lock:
                stored = self._state.subjects.get(subject, {}).get(entry.version)
            if stored is None or stored.id != entry.id:
                # the log took the write without an error yet does not hold it: never acknowledge that
                log.error("Schema registry: version %d of subject '%s' (schema id %d) was written to topic '%s' "
                          "but is not in it", entry.version, subject, entry.id, self.topic)
                raise SchemaRegistryError(50001, f"Error in the schema registry's store: version "
                                          f"{entry.version} of subject '{subject}' was not stored; nothing was "
                                          "registered")
            self._remember(entry.id, parsed)
            return entry
        raise SchemaRegistryError(50001, f"Gave up registering a schema under subject '{subject}': it kept "
                                  "changing while the schema was checked")

    def _basis(self, state: RegistryState, subject: str) -> _Basis:
        """What a compatibility verdict for ``subject`` depends on."""
        return (self._mode_of(state, subject), self._level_of(state, subject),
                tuple((e.version, e.id) for e in state.live(subject)))

    def _check_before_writing(self, subject: str, parsed: ParsedSchema, schema_id: int | None
                              ) -> tuple[_Basis, list[str]]:
        """The compatibility verdict on ``parsed``, reached outside the locks (a big check takes a while) with
        what it was reached on; the write goes ahead on it only if that is still the state."""
        self._catch_up()
        with self._lock:
            state = self._state
            basis = self._basis(state, subject)
            live = state.live(subject)
        mode, level = basis[0], basis[1]
        if mode is not Mode.READWRITE or self._registered(live, parsed, schema_id) is not None:
            return basis, []  # nothing to check: refused, imported or registered already (decided in the plan)
        against = [(e.version, self._parsed_of(e)) for e in reversed(live)]
        return basis, self._incompatibilities(level, parsed, against)

    def _registered(self, live: Sequence[SchemaVersion], parsed: ParsedSchema, schema_id: int | None
                    ) -> SchemaVersion | None:
        for entry in live:
            if self._parsed_of(entry).canonical == parsed.canonical and (schema_id in (None, entry.id)):
                return entry
        return None

    def _new_version(self, state: RegistryState, subject: str, parsed: ParsedSchema, schema_id: int | None,
                     version: int | None, checked: tuple[_Basis, list[str]]
                     ) -> tuple[SchemaVersion, bool]:
        """The version to write and True; or the subject's version that has this schema already and False.
        ``checked``: the compatibility verdict and the state it was reached on (_StaleCheck if that changed)."""
        mode = self._check_writable(state, subject)
        if (schema_id is not None or version is not None) and mode is not Mode.IMPORT:
            raise SchemaRegistryError(42205, f"Subject '{subject}' is not in IMPORT mode: a schema id or "
                                      "version can only be given when importing")
        live = state.live(subject)
        registered = self._registered(live, parsed, schema_id)
        if registered is not None:
            return registered, False
        if mode is not Mode.IMPORT:
            basis, problems = checked
            if basis != self._basis(state, subject):
                raise _StaleCheck
            if problems:
                raise SchemaRegistryError(409, "Schema being registered is incompatible with an earlier "
                                          "schema for subject \"" + subject + "\", details: " + "; ".join(problems))
        known = state.id_of.get(parsed.canonical)
        if schema_id is not None:
            holder = state.text_of.get(schema_id)
            if holder is not None and parse_schema(holder).canonical != parsed.canonical:
                raise SchemaRegistryError(42207, f"Overwrite new schema with id {schema_id} is not "
                                          "permitted: that id already holds a different schema")
            new_id = schema_id
        else:
            new_id = known if known is not None else state.max_id + 1
        every = state.subjects.get(subject, {})
        if version is None:
            version = max(every, default=0) + 1
        elif version in every:
            raise SchemaRegistryError(42205, f"Version {version} of subject '{subject}' already exists")
        return SchemaVersion(subject, version, new_id, parsed.text), True

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO", deleted: bool = False) -> SchemaVersion:
        parsed = self._parse(schema, schema_type)

        def find(state: RegistryState) -> SchemaVersion:
            for entry in reversed(self._live(state, subject, deleted)):
                if self._parsed_of(entry).canonical == parsed.canonical:
                    return entry
            raise SchemaRegistryError(40403, "Schema not found")
        return self._read(find)

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        def plan(state: RegistryState) -> tuple[Records, list[int], str]:
            every = state.live(subject, deleted=True)
            if not every:
                raise subject_not_found(subject)
            self._check_writable(state, subject)
            live = [e for e in every if not e.deleted]
            if permanent and live:
                raise SchemaRegistryError(40405, f"Subject '{subject}' was not deleted first before being "
                                          "permanently deleted")
            if not permanent and not live:
                raise SchemaRegistryError(40404, f"Subject '{subject}' was soft deleted. Set "
                                          "permanent=true to delete permanently")
            if permanent:
                records: Records = [(schema_key(subject, e.version), None) for e in every]
                records += [(config_key(subject), None), (mode_key(subject), None)]
                return records, [e.version for e in every], f"permanently deleted subject '{subject}'"
            return ([(schema_key(subject, e.version), _schema_value(_deleted(e))) for e in live],
                    [e.version for e in live], f"soft-deleted subject '{subject}'")
        return self._transact(plan)

    def delete_version(self, subject: str, version: str, permanent: bool = False) -> int:
        def plan(state: RegistryState) -> tuple[Records, int, str]:
            entry = self._find_version(state, subject, version, deleted=True)
            self._check_writable(state, subject)
            if permanent and not entry.deleted:
                raise SchemaRegistryError(40407, f"Subject '{subject}' Version {entry.version} was not "
                                          "deleted first before being permanently deleted")
            if not permanent and entry.deleted:
                raise SchemaRegistryError(40406, f"Subject '{subject}' Version {entry.version} was soft "
                                          "deleted. Set permanent=true to delete permanently")
            if permanent:
                return ([(schema_key(subject, entry.version), None)], entry.version,
                        f"permanently deleted version {entry.version} of subject '{subject}'")
            return ([(schema_key(subject, entry.version), _schema_value(_deleted(entry)))], entry.version,
                    f"soft-deleted version {entry.version} of subject '{subject}'")
        return self._transact(plan)

    # --- ids -------------------------------------------------------------------------------------
    def schema_by_id(self, schema_id: int, subject: str | None = None) -> SchemaVersion:
        def find(state: RegistryState) -> SchemaVersion:
            text = state.text_of.get(schema_id)
            if text is None:
                raise SchemaRegistryError(40403, f"Schema {schema_id} not found")
            users = sorted(state.users.get(schema_id, ()))
            if subject is not None:
                users = [u for u in users if u[0] == subject]
                if not users:
                    raise SchemaRegistryError(40403, f"Schema {schema_id} not found in subject '{subject}'")
            name, number = users[0] if users else ("", 0)
            return SchemaVersion(name, number, schema_id, text)
        return self._read(find)

    def ids_usage(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        def find(state: RegistryState) -> list[tuple[str, int]]:
            if schema_id not in state.text_of:
                raise SchemaRegistryError(40403, f"Schema {schema_id} not found")
            return [(s, v) for s, v in sorted(state.users.get(schema_id, ()))
                    if deleted or not state.subjects[s][v].deleted]
        return self._read(find)

    # --- compatibility -------------------------------------------------------------------------------
    def check_compatibility(self, subject: str, version: str | None, schema: str, schema_type: str = "AVRO"
                            ) -> list[str]:
        parsed = self._parse(schema, schema_type)
        with self._lock:
            state = self._state
            level = self._level_of(state, subject)
            if version is None:
                entries = list(reversed(state.live(subject)))
            else:
                entries = [self._find_version(state, subject, version, deleted=False)]
                level = Compatibility(level.value.replace("_TRANSITIVE", ""))
        return self._incompatibilities(level, parsed, [(e.version, self._parsed_of(e)) for e in entries])

    # --- config and mode ---------------------------------------------------------------------------
    def compatibility(self, subject: str | None, default_to_global: bool = False) -> Compatibility:
        def find(state: RegistryState) -> Compatibility:
            if subject is not None and subject not in state.configs and not default_to_global:
                raise SchemaRegistryError(40408, f"Subject '{subject}' does not have subject-level "
                                          "compatibility configured")
            return self._level_of(state, subject)
        return self._read(find)

    def set_compatibility(self, subject: str | None, level: Compatibility) -> None:
        if subject is not None:
            _check_subject(subject)
        record = (config_key(subject), json.dumps({"compatibilityLevel": level.value}).encode())
        self._transact(lambda state: ([record], None, f"compatibility of {_scope(subject)} set to {level.value}"))

    def delete_compatibility(self, subject: str | None) -> Compatibility:
        def plan(state: RegistryState) -> tuple[Records, Compatibility, str]:
            if subject is not None and subject not in state.subjects:
                raise subject_not_found(subject)
            return ([(config_key(subject), None)], self._level_of(state, subject),
                    f"compatibility of {_scope(subject)} reset")
        return self._transact(plan)

    def mode(self, subject: str | None, default_to_global: bool = False) -> Mode:
        def find(state: RegistryState) -> Mode:
            if subject is not None and subject not in state.modes and not default_to_global:
                raise SchemaRegistryError(40409, f"Subject '{subject}' does not have subject-level mode "
                                          "configured")
            return self._mode_of(state, subject)
        return self._read(find)

    def set_mode(self, subject: str | None, mode: Mode, force: bool = False) -> None:
        if subject is not None:
            _check_subject(subject)

        def plan(state: RegistryState) -> tuple[Records, None, str]:
            has = bool(state.live(subject, True)) if subject is not None else bool(state.subjects)
            if mode is Mode.IMPORT and not force and has:
                raise SchemaRegistryError(42205, f"Cannot import since {_scope(subject)} already has "
                                          "schemas; add force=true to switch to IMPORT anyway")
            return ([(mode_key(subject), json.dumps({"mode": mode.value}).encode())], None,
                    f"mode of {_scope(subject)} set to {mode.value}")
        self._transact(plan)

    def delete_mode(self, subject: str | None) -> Mode:
        return self._transact(lambda state: ([(mode_key(subject), None)], self._mode_of(state, subject),
                                             f"mode of {_scope(subject)} reset"))


class _StaleCheck(Exception):
    """The subject changed between a compatibility check and the write it was for."""


def _store_error(what: str, exc: Exception) -> SchemaRegistryError:
    return SchemaRegistryError(50001, f"Error in the schema registry's store, so not done ({what}): {exc}")


def _deleted(entry: SchemaVersion) -> SchemaVersion:
    return SchemaVersion(entry.subject, entry.version, entry.id, entry.schema, True, entry.schema_type)


def _scope(subject: str | None) -> str:
    return "the registry" if subject is None else f"subject '{subject}'"
