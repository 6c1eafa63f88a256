"""The registry inside a worker: opened on its first request, so a worker nobody asks for schemas creates no
``_schemas`` topic and runs no thread for it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from connect.log.api import LogError
from connect.schema_registry.api import (
    Compatibility,
    Mode,
    SchemaRegistry,
    SchemaRegistryError,
    SchemaVersion,
)
from connect.schema_registry.store import SchemaStore

__all__ = ["LazySchemaRegistry"]

log = logging.getLogger(__name__)


class LazySchemaRegistry(SchemaRegistry):
    def __init__(self, open_store: Callable[[], SchemaStore]) -> None:
        self._open = open_store
        self._store: SchemaStore | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _get(self) -> SchemaStore:
        with self._lock:
            if self._closed:
                raise SchemaRegistryError(50003, "The schema registry is shutting down")
            if self._store is None:
                store = self._open()
                try:
                    store.start()
                except (LogError, OSError) as exc:
                    store.close()
                    log.error("Schema registry could not read its topic: %s", exc)
                    raise SchemaRegistryError(50001, f"The schema registry could not read its topic: {exc}"
                                              ) from None
                self._store = store
            return self._store

    def interrupt(self) -> None:
        with self._lock:
            self._closed = True
            store = self._store
        if store is not None:
            store.interrupt()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            store, self._store = self._store, None
        if store is not None:
            store.close()

    def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        return self._get().subjects(deleted, prefix)

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return self._get().versions(subject, deleted)

    def version(self, subject: str, version: str, deleted: bool = False) -> SchemaVersion:
        return self._get().version(subject, version, deleted)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO", references: Sequence[Any] = (),
                 schema_id: int | None = None, version: int | None = None) -> SchemaVersion:
        return self._get().register(subject, schema, schema_type, references, schema_id, version)

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO", deleted: bool = False) -> SchemaVersion:
        return self._get().lookup(subject, schema, schema_type, deleted)

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        return self._get().delete_subject(subject, permanent)

    def delete_version(self, subject: str, version: str, permanent: bool = False) -> int:
        return self._get().delete_version(subject, version, permanent)

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> SchemaVersion:
        return self._get().schema_by_id(schema_id, subject)

    def ids_usage(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        return self._get().ids_usage(schema_id, deleted)

    def check_compatibility(self, subject: str, version: str | None, schema: str, schema_type: str = "AVRO"
                            ) -> list[str]:
        return self._get().check_compatibility(subject, version, schema, schema_type)

    def compatibility(self, subject: str | None, default_to_global: bool = False) -> Compatibility:
        return self._get().compatibility(subject, default_to_global)

    def set_compatibility(self, subject: str | None, level: Compatibility) -> None:
        self._get().set_compatibility(subject, level)

    def delete_compatibility(self, subject: str | None) -> Compatibility:
        return self._get().delete_compatibility(subject)

    def mode(self, subject: str | None, default_to_global: bool = False) -> Mode:
        return self._get().mode(subject, default_to_global)

    def set_mode(self, subject: str | None, mode: Mode, force: bool = False) -> None:
        self._get().set_mode(subject, mode, force)

    def delete_mode(self, subject: str | None) -> Mode:
        return self._get().delete_mode(subject)
