"""Where the appender's batches go: an HttpSource over HTTP, or a topic through the topic layer.

``send`` returns True only once the target acknowledged the whole batch (HTTP 200: the HttpSource answers
it after the log has the events; the topic layer: ``flush`` returned with nothing left). Any failure is
False with a reason, and the shipper sends the same batch again later.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import orjson


class Transport(abc.ABC):
    last_error = ""

    @abc.abstractmethod
    def send(self, lines: Sequence[bytes]) -> bool:
        """Deliver encoded events (JSON objects, one per item); True once acknowledged."""

    @abc.abstractmethod
    def describe(self) -> str: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class HttpTransport(Transport):
    """NDJSON POSTs to an HttpSource, over one kept-alive connection."""

    def __init__(self, url: str, timeout: float, auth: tuple[str, str] | None = None,
                 verify: bool | str = True) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be http:// or https://, got {url!r}")
        self.url = url
        self._client = httpx.Client(timeout=timeout, auth=auth, verify=verify,
                                    headers={"Content-Type": "application/x-ndjson"})

    def send(self, lines: Sequence[bytes]) -> bool:
        try:
            response = self._client.post(self.url, content=b"\n".join(lines) + b"\n")
        except httpx.HTTPError as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        if response.status_code == 200:
            return True
        self.last_error = f"HTTP {response.status_code}: {response.text[:200]}"
        if response.status_code == 400:
            # a bad event would block the buffer for ever; it is reported and skipped by the shipper
            raise BadBatch(self.last_error)
        return False

    def describe(self) -> str:
        return self.url

    def close(self) -> None:
        self._client.close()


class BadBatch(Exception):
    """The target refused the batch as bad input: sending it again cannot succeed."""


class TopicTransport(Transport):
    """Straight to a topic of the worker's log (embedded or Kafka), encoded by the worker's value converter."""

    def __init__(self, worker_props: Mapping[str, Any], topic: str) -> None:
        from connect.api.log_event import LOG_EVENT_SCHEMA, from_mapping
        from connect.log import open_log_backend
        from connect.runtime.plugins import PluginRegistry

        self.topic = topic
        self._schema = LOG_EVENT_SCHEMA
        self._from_mapping = from_mapping
        converter_class = str(worker_props.get("value.converter") or "org.apache.kafka.connect.json.JsonConverter")
        registry = PluginRegistry(use_entry_points=True)
        converter: Any = registry.new_instance(converter_class, "converter", "value.converter")
        self._converter = converter
        # the worker's value converter, configured as the worker configures it
        prefix = "value.converter."
        converter.configure({k[len(prefix):]: v for k, v in worker_props.items() if k.startswith(prefix)},
                                  False)
        self._backend = open_log_backend(worker_props)
        self._producer = self._backend.producer()
        self._where = (f"topic {topic} on " + (f"Kafka {worker_props['bootstrap.servers']}"
                       if worker_props.get("bootstrap.servers")
                       else f"the embedded log {worker_props.get('embedded.log.dir') or './headrace-data'}"))

    def send(self, lines: Sequence[bytes]) -> bool:
        try:
            values = [self._converter.from_connect_data(self.topic, self._schema,
                                                        self._from_mapping(orjson.loads(line)))
                      for line in lines]
        except Exception as exc:  # noqa: BLE001 - any encoding failure is a bad batch
            raise BadBatch(f"cannot encode the batch: {exc}") from exc
        try:
            self._producer.send_batch(self.topic, None, values)
            remaining = self._producer.flush(30.0)
        except Exception as exc:  # the log layer's errors, and a client's own
            self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        if remaining:
            self.last_error = f"{remaining} events not acknowledged by the log in time"
            return False
        return True

    def describe(self) -> str:
        return self._where

    def close(self) -> None:
        try:
            self._producer.close(5.0)
        finally:
            self._backend.close()
