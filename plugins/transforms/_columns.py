"""Helpers of the built-in transforms' ``apply_batch``: one side of a SinkRecordBatch changed as a column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connect.api import SinkRecordBatch

__all__ = ["schemaless_column", "with_column"]


def schemaless_column(records: Sequence[Any], on_key: bool) -> list[Any] | None:
    """The keys (or values) of ``records`` when it is a SinkRecordBatch with no schema on that side; else None.

    None means "no column path": the caller then transforms record by record.
    """
    if not isinstance(records, SinkRecordBatch):
        return None
    schemas = records.key_schemas if on_key else records.value_schemas
    if schemas.count(None) != len(schemas):
        return None
    return records.keys if on_key else records.values


def with_column(records: SinkRecordBatch, on_key: bool, column: list[Any]) -> SinkRecordBatch:
    """``records`` with its keys (or values) replaced by ``column``; the schemas stay absent."""
    return records.with_columns(keys=column) if on_key else records.with_columns(values=column)
