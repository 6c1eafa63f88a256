"""Record headers: an ordered multimap of key -> (schema, value)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from connect.api.schema import Schema

__all__ = ["ConnectHeaders", "Header"]


class Header(NamedTuple):
    key: str
    schema: Schema | None
    value: Any

    def rename(self, key: str) -> Header:
        return Header(key, self.schema, self.value)

    def with_value(self, schema: Schema | None, value: Any) -> Header:
        return Header(self.key, schema, value)


class ConnectHeaders:
    """Mutable headers of one record; several headers may share a key, order is kept."""

    __slots__ = ("_headers",)

    def __init__(self, headers: Iterable[Header] | None = None) -> None:
        self._headers: list[Header] = list(headers) if headers is not None else []

    def add(self, key: str, value: Any, schema: Schema | None = None) -> ConnectHeaders:
        self._headers.append(Header(key, schema, value))
        return self

    def add_header(self, header: Header) -> ConnectHeaders:
        self._headers.append(header)
        return self

    def add_all(self, headers: Iterable[Header]) -> ConnectHeaders:
        self._headers.extend(headers)
        return self

    def add_string(self, key: str, value: str | None) -> ConnectHeaders:
        return self.add(key, value, Schema.OPTIONAL_STRING_SCHEMA)

    def add_int(self, key: str, value: int | None) -> ConnectHeaders:
        return self.add(key, value, Schema.OPTIONAL_INT32_SCHEMA)

    def add_long(self, key: str, value: int | None) -> ConnectHeaders:
        return self.add(key, value, Schema.OPTIONAL_INT64_SCHEMA)

    def add_bytes(self, key: str, value: bytes | None) -> ConnectHeaders:
        return self.add(key, value, Schema.OPTIONAL_BYTES_SCHEMA)

    def last_with_name(self, key: str) -> Header | None:
        for header in reversed(self._headers):
            if header.key == key:
                return header
        return None

    def all_with_name(self, key: str) -> list[Header]:
        return [h for h in self._headers if h.key == key]

    def remove(self, key: str) -> ConnectHeaders:
        self._headers = [h for h in self._headers if h.key != key]
        return self

    def retain_latest(self) -> ConnectHeaders:
        seen: set[str] = set()
        kept: list[Header] = []
        for header in reversed(self._headers):
            if header.key not in seen:
                seen.add(header.key)
                kept.append(header)
        self._headers = kept[::-1]
        return self

    def clear(self) -> ConnectHeaders:
        self._headers = []
        return self

    def duplicate(self) -> ConnectHeaders:
        return ConnectHeaders(self._headers)

    def __iter__(self) -> Iterator[Header]:
        return iter(list(self._headers))

    def __len__(self) -> int:
        return len(self._headers)

    def __bool__(self) -> bool:
        return bool(self._headers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConnectHeaders) and other._headers == self._headers

    def __hash__(self) -> int:
        return hash(tuple((h.key, repr(h.value)) for h in self._headers))

    def __repr__(self) -> str:
        return f"ConnectHeaders({self._headers!r})"
