"""The AvroConverter's client of a Confluent-compatible schema registry: ids and schemas over HTTP, cached.

A schema id never changes meaning, so id -> schema is cached for good; (subject, schema) -> id likewise.
``latest`` answers are cached for ``latest.cache.ttl.sec`` (-1: for good). Registry refusals become
DataException with the registry's code and message (the record then follows ``errors.tolerance``);
an unreachable registry is a RetriableException.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from connect.api import ConfigException, DataException, RetriableException

__all__ = ["RegistryClient"]

_MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


class _Lru(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = max(1, size)

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)


class RegistryClient:
    def __init__(self, urls: Sequence[str], auth: tuple[str, str] | None = None, cache_size: int = 1000,
                 latest_ttl_s: float = -1, timeout_s: float = 30.0) -> None:
        self.urls = [u.strip().rstrip("/") for u in urls if u.strip()]
        if not self.urls:
            raise ConfigException("schema.registry.url", "", "needs at least one schema registry URL")
        for url in self.urls:
            if not url.startswith(("http://", "https://")):
                raise ConfigException("schema.registry.url", url, "must be an http:// or https:// URL")
        self._http = httpx.Client(auth=auth, timeout=timeout_s,
                                  headers={"Accept": _MEDIA_TYPE, "Content-Type": _MEDIA_TYPE})
        self._schemas: _Lru = _Lru(cache_size)  # id -> schema text
        self._ids: _Lru = _Lru(cache_size)  # (subject, schema text) -> id
        self._latest: _Lru = _Lru(cache_size)  # subject -> (time, id, schema text)
        self._latest_ttl = latest_ttl_s
        self._lock = threading.Lock()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        last: Exception | None = None
        for url in self.urls:
            try:
                response = self._http.request(method, url + path,
                                              content=None if body is None else json.dumps(body).encode())
            except httpx.HTTPError as exc:
                last = exc
                continue
            if response.status_code >= 500:
                last = RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
                continue
            try:
                answer = response.json()
            except ValueError:
                answer = {"message": response.text[:200]}
            if response.status_code >= 400:
                code = answer.get("error_code", response.status_code) if isinstance(answer, dict) else "?"
                message = answer.get("message", "") if isinstance(answer, dict) else str(answer)
                raise DataException(f"Schema registry refused {method} {path}: HTTP {response.status_code}, "
                                    f"error {code}: {message}")
            return answer
        raise RetriableException(f"Schema registry at {', '.join(self.urls)} unreachable for {method} {path}: {last}")

    def register(self, subject: str, schema: str, normalize: bool = False) -> int:
        key = (subject, schema)
        found = self._ids.get(key)
        if found is None:
            suffix = "?normalize=true" if normalize else ""
            answer = self._call("POST", f"/subjects/{quote(subject, safe='')}/versions{suffix}", {"schema": schema})
            found = int(answer["id"])
            with self._lock:
                self._ids.put(key, found)
                self._schemas.put(found, schema)
        return found

    def lookup(self, subject: str, schema: str) -> int:
        key = (subject, schema)
        found = self._ids.get(key)
        if found is None:
            answer = self._call("POST", f"/subjects/{quote(subject, safe='')}", {"schema": schema})
            found = int(answer["id"])
            with self._lock:
                self._ids.put(key, found)
        return found

    def schema(self, schema_id: int) -> str:
        found = self._schemas.get(schema_id)
        if found is None:
            found = str(self._call("GET", f"/schemas/ids/{schema_id}")["schema"])
            with self._lock:
                self._schemas.put(schema_id, found)
        return found

    def latest(self, subject: str) -> tuple[int, str]:
        cached = self._latest.get(subject)
        now = time.monotonic()
        if cached is not None and (self._latest_ttl < 0 or now - cached[0] < self._latest_ttl):
            return cached[1], cached[2]
        answer = self._call("GET", f"/subjects/{quote(subject, safe='')}/versions/latest")
        schema_id, text = int(answer["id"]), str(answer["schema"])
        with self._lock:
            self._latest.put(subject, (now, schema_id, text))
            self._schemas.put(schema_id, text)
        return schema_id, text
