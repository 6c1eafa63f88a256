"""Kafka's SingleFieldPath (KIP-821): one field, named whole (V1) or by dotted steps with backtick quoting (V2)."""

from __future__ import annotations

from typing import Any

from connect.api import ConfigException, Field, Schema, Struct
from plugins.transforms._config import FIELD_SYNTAX_VERSION_CONFIG
from plugins.transforms._requirements import require_map_or_none, require_struct_or_none
from plugins.transforms._schemas import field_value

__all__ = ["SingleFieldPath"]


class SingleFieldPath:
    """A path to one field: the whole name under V1, dotted steps with backtick quoting under V2."""

    __slots__ = ("steps", "_parents", "_last")

    def __init__(self, path: str, syntax_version: str = "V1") -> None:
        version = syntax_version.upper()
        if version == "V1":
            self.steps: tuple[str, ...] = (path,)
        elif version == "V2":
            self.steps = tuple(_split_v2_path(path))
        else:
            raise ConfigException(FIELD_SYNTAX_VERSION_CONFIG, syntax_version, "Unrecognized field syntax version")
        self._parents = self.steps[:-1]
        self._last = self.steps[-1]

    def field_from(self, schema: Schema | None) -> Field | None:
        if schema is None:
            return None
        current = schema
        for step in self._parents:
            field = current.field(step)
            if field is None:
                return None
            current = field.schema
        return current.field(self._last)

    def value_from_struct(self, struct: Struct | None, replace_null_with_default: bool = True) -> Any:
        current = struct
        for step in self._parents:
            if current is None or current.schema.field(step) is None:
                return None
            current = require_struct_or_none(current.get(step), "nested field access")
        if current is None:
            return None
        field = current.schema.field(self._last)
        if field is None:
            return None
        return field_value(current, field, replace_null_with_default)

    def value_from_map(self, mapping: dict[str, Any] | None) -> Any:
        current = mapping
        for step in self._parents:
            if current is None:
                return None
            current = require_map_or_none(current.get(step), "nested field access")
        return None if current is None else current.get(self._last)

    def __repr__(self) -> str:
        return f"SingleFieldPath({'.'.join(self.steps)})"


def _split_v2_path(path: str) -> list[str]:
    # A step is either plain text up to the next dot, or a backtick-quoted
    # name that may contain dots. Inside quotes only a backtick directly
    # followed by a dot (or the end) closes the name; "\`" before a dot keeps
    # a literal backtick.
    steps: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            if dot < 0:
                steps.append(path[i:])
                i = n
            else:
                steps.append(path[i:dot])
                i = dot + 1
            continue
        opened_at = i
        i += 1
        start = i
        parts: list[str] = []
        while True:
            close = path.find("`", i)
            if close < 0:
                _incomplete_backticks(path, opened_at)
            escaped = path[close - 1] == "\\"
            if close >= n - 1:
                if escaped:
                    _incomplete_backticks(path, opened_at)
                parts.append(path[start:close])
                i = close + 1
                break
            if path[close + 1] != ".":
                i = close + 1
                continue
            if escaped:
                parts.append(path[start : close - 1] + "`")
                i = close + 1
                start = i
                continue
            parts.append(path[start:close])
            i = close + 2
            break
        steps.append("".join(parts))
    if path.endswith("."):
        steps.append("")
    return steps


def _incomplete_backticks(path: str, position: int) -> None:
    raise ConfigException(
        message=f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick "
        f"at position {position} to escape it"
    )
