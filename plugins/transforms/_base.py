"""Base classes of the built-in transforms, and the ``$Key`` / ``$Value`` variants Kafka ships.

Kafka repeats the abstract ``operatingSchema`` / ``operatingValue`` /
``newRecord`` trio in each transform for its $Key and $Value classes; here
the side of the record is chosen once, by ``key_value_variants``.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

from connect.api import ConfigDef, ConnectHeaders, ConnectRecord, Schema, Transformation
from connect.api.version import distribution_version

__all__ = ["BuiltinTransformation", "KeyOrValueTransformation", "key_value_variants"]


_R = TypeVar("_R", bound=ConnectRecord)
_T = TypeVar("_T", bound=type)


class BuiltinTransformation(Transformation[_R]):
    """A transform shipped with Headrace; subclasses set ``CONFIG_DEF``."""

    CONFIG_DEF: ClassVar[ConfigDef]

    def version(self) -> str:
        return distribution_version(__name__)

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def apply_batch(self, records: Sequence[_R]) -> Sequence[_R]:
        # ``apply`` per record, as the SDK's default; overridden so that chains of built-in transforms are
        # handed whole batches: a built-in keeps no state but caches, so a batch transformed twice (after a
        # failure, to find the failing record) gives the same records
        return super().apply_batch(records)


class KeyOrValueTransformation(BuiltinTransformation[_R]):
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

    _on_key: ClassVar[bool]  # set by the side: whether the key (else the value) is transformed

    def _new_record(
        self, record: _R, schema: Schema | None, value: Any, headers: ConnectHeaders | None = None
    ) -> _R:
        """A copy of ``record`` with this side (and the headers, when given) replaced."""
        if self._on_key:
            changed = record.new_record(key_schema=schema, key=value) if headers is None else \
                record.new_record(key_schema=schema, key=value, headers=headers)
        else:
            changed = record.new_record(value_schema=schema, value=value) if headers is None else \
                record.new_record(value_schema=schema, value=value, headers=headers)
        return changed  # type: ignore[return-value]


class _KeySide:
    _on_key = True

    def _operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.key_schema

    def _operating_value(self, record: ConnectRecord) -> Any:
        return record.key


class _ValueSide:
    _on_key = False

    def _operating_value(self, record: ConnectRecord) -> Any:
        return record.value

    def _operating_schema(self, record: ConnectRecord) -> Schema | None:
        return record.value_schema


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
