"""Single-message transforms and the predicates that gate them."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from connect.api.config import ConfigDef
from connect.api.records import ConnectRecord

__all__ = ["Predicate", "Transformation"]

R = TypeVar("R", bound=ConnectRecord)


class Transformation(abc.ABC, Generic[R]):
    """Changes one record at a time; returning None drops the record."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the ``transforms.<alias>.*`` settings (prefix removed).

        Called once on the worker's thread before the task starts. Raise ConfigException naming the key.
        """

    @abc.abstractmethod
    def apply(self, record: R) -> R | None:
        """Return the changed record (a new one: records are immutable), or None to drop it.

        Called on the task's thread for every record the predicate lets through. Raise DataException for a
        record it cannot handle: it then follows ``errors.tolerance`` (and, in sinks, the DLQ).
        """

    def apply_batch(self, records: Sequence[R]) -> Sequence[R]:
        """The changed records of ``records``, in order, without the dropped ones.

        Called on the task's thread with a batch of records the task has, in place of ``apply``, but only
        for a transform that overrides this method, when every transform of the chain does and none has a
        predicate; otherwise the runtime calls ``apply`` per record, each record once. ``records`` may be a
        ``SinkRecordBatch``, whose columns an override can change with ``with_columns`` without making a
        record per value. The default calls ``apply`` per record. An override must give the records
        ``apply`` would give, and must leave the input records (and their values) unchanged.

        May raise anything ``apply`` may. The runtime then drops the batch's result and runs the chain
        again with ``apply``, record by record, from the records the chain was given, so that the failing
        record alone follows ``errors.tolerance`` (and, in sinks, the DLQ): a transform that overrides
        this must not have effects that matter if some records are transformed twice.
        """
        apply = self.apply
        return [out for out in map(apply, records) if out is not None]

    @abc.abstractmethod
    def config(self) -> ConfigDef:
        """The ConfigDef of the transform's keys, for validation before anything runs; must not raise."""

    def close(self) -> None:  # optional hook
        pass

    def version(self) -> str:
        return "unknown"


class Predicate(abc.ABC, Generic[R]):
    """Decides whether a transform applies to a record."""

    @abc.abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the ``predicates.<alias>.*`` settings (prefix removed); once, before the task starts."""

    @abc.abstractmethod
    def test(self, record: R) -> bool:
        """Whether the transform gated by this predicate applies to ``record``; on the task's thread."""

    @abc.abstractmethod
    def config(self) -> ConfigDef:
        """The ConfigDef of the predicate's keys, for validation before anything runs; must not raise."""

    def close(self) -> None:  # optional hook
        pass

    def version(self) -> str:
        return "unknown"
