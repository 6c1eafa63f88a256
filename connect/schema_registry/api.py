"""The schema registry as the REST layer sees it: the interface, its value types, levels, modes and errors.

Error codes are Confluent Schema Registry's (``Errors.java``), so its clients recognise them.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence

import attrs

__all__ = [
    "Compatibility",
    "Mode",
    "SchemaRegistry",
    "SchemaRegistryError",
    "SchemaVersion",
    "subject_not_found",
]


class Compatibility(enum.Enum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @classmethod
    def parse(cls, text: object) -> Compatibility:
        try:
            return cls(str(text).strip().upper())
        except ValueError:
            raise SchemaRegistryError(42203, f"Invalid compatibility level {text!r}; valid levels are "
                                      + ", ".join(c.value for c in cls)) from None


class Mode(enum.Enum):
    READWRITE = "READWRITE"
    READONLY = "READONLY"
    READONLY_OVERRIDE = "READONLY_OVERRIDE"
    IMPORT = "IMPORT"
    FORWARD = "FORWARD"

    @classmethod
    def parse(cls, text: object) -> Mode:
        try:
            return cls(str(text).strip().upper())
        except ValueError:
            raise SchemaRegistryError(42204, f"Invalid mode {text!r}; valid modes are "
                                      + ", ".join(m.value for m in cls)) from None


class SchemaRegistryError(Exception):
    """The registry's one error: a refused request, Confluent's ``error_code`` naming what happened (40401
    subject not found, 42201 invalid schema, 50001 store error, ...) and ``message``, one line saying why.
    Confluent's codes begin with the HTTP status its registry answers; ``rest.errors`` makes that status."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def not_found(self) -> bool:
        """A subject, version or schema that is not there (Confluent's 404xx codes)."""
        return 40400 <= self.error_code < 40500


def subject_not_found(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(40401, f"Subject '{subject}' not found.")


@attrs.frozen
class SchemaVersion:
    """One version of a subject: its global schema ``id`` and the schema text."""

    subject: str
    version: int
    id: int
    schema: str
    deleted: bool = False
    schema_type: str = "AVRO"

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"subject": self.subject, "version": self.version, "id": self.id,
                                   "schema": self.schema}
        if self.schema_type != "AVRO":  # Confluent leaves the type out for Avro
            body["schemaType"] = self.schema_type
        return body


class SchemaRegistry(abc.ABC):
    """What the registry's REST resources call. ``version`` arguments are as the URL gives them: a number,
    ``latest`` or ``-1``. Every failure is a SchemaRegistryError."""

    @abc.abstractmethod
    def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]: ...

    @abc.abstractmethod
    def versions(self, subject: str, deleted: bool = False) -> list[int]: ...

    @abc.abstractmethod
    def version(self, subject: str, version: str, deleted: bool = False) -> SchemaVersion: ...

    @abc.abstractmethod
    def register(self, subject: str, schema: str, schema_type: str = "AVRO", references: Sequence[object] = (),
                 schema_id: int | None = None, version: int | None = None) -> SchemaVersion: ...

    @abc.abstractmethod
    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO", deleted: bool = False
               ) -> SchemaVersion: ...

    @abc.abstractmethod
    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]: ...

    @abc.abstractmethod
    def delete_version(self, subject: str, version: str, permanent: bool = False) -> int: ...

    @abc.abstractmethod
    def schema_by_id(self, schema_id: int, subject: str | None = None) -> SchemaVersion:
        """The schema of ``schema_id`` (as a SchemaVersion of one subject that has it; 40403 if none)."""

    @abc.abstractmethod
    def ids_usage(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """Every (subject, version) registered with ``schema_id``."""

    @abc.abstractmethod
    def check_compatibility(self, subject: str, version: str | None, schema: str, schema_type: str = "AVRO"
                            ) -> list[str]:
        """Why ``schema`` is incompatible with ``version`` of ``subject`` (None: the versions the subject's level
        compares against); empty when compatible."""

    @abc.abstractmethod
    def compatibility(self, subject: str | None, default_to_global: bool = False) -> Compatibility: ...

    @abc.abstractmethod
    def set_compatibility(self, subject: str | None, level: Compatibility) -> None: ...

    @abc.abstractmethod
    def delete_compatibility(self, subject: str | None) -> Compatibility: ...

    @abc.abstractmethod
    def mode(self, subject: str | None, default_to_global: bool = False) -> Mode: ...

    @abc.abstractmethod
    def set_mode(self, subject: str | None, mode: Mode, force: bool = False) -> None: ...

    @abc.abstractmethod
    def delete_mode(self, subject: str | None) -> Mode: ...

    def interrupt(self) -> None:  # noqa: B027 - optional hook
        """Make the requests under way end soon (503) and refuse new ones: a process stopping calls this before
        it stops its REST server, which waits for requests under way. ``close()`` follows."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
