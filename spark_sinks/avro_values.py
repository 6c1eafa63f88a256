"""Values in Confluent's Avro wire format (``0x00``, a 4-byte schema id, the Avro body) as typed Spark columns.

Used by the HDFS sink when the connector's ``value.converter`` is the AvroConverter: each micro-batch is split
by schema id, every id's schema is fetched once from ``value.converter.schema.registry.url``, and Spark's own
``from_avro`` decodes each part with its writer schema into the newest schema seen so far (the reader), so a
batch that mixes versions of a BACKWARD-compatible evolution gets one set of columns, and the new columns of
an added optional field appear in the files from the batch that first has them. Avro logical types become
Spark types (decimal, date, timestamp); a Decimal needs a precision Spark accepts (``connect.decimal.precision``
at most 38).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from connect.api import ConfigException, ConnectException

__all__ = ["AvroValues", "avro_registry_url"]

_AVRO_CONVERTERS = ("io.confluent.connect.avro.AvroConverter", "AvroConverter")


def avro_registry_url(props: Mapping[str, str]) -> str | None:
    """The registry to fetch schemas from when the value converter is the AvroConverter, else None."""
    converter = str(props.get("value.converter") or "").strip()
    if not converter or not converter.endswith(_AVRO_CONVERTERS):
        return None
    urls = [u.strip() for u in str(props.get("value.converter.schema.registry.url") or "").split(",") if u.strip()]
    if not urls:
        raise ConfigException("value.converter.schema.registry.url", None,
                              "the AvroConverter needs the schema registry's URL to read Avro values")
    return urls[0].rstrip("/")


class AvroValues:
    def __init__(self, registry_url: str, tolerate: bool) -> None:
        self.url = registry_url
        self.tolerate = tolerate
        self._schemas: dict[int, str] = {}
        self._reader_id = -1  # the newest schema seen: every batch is read into it

    def _schema(self, schema_id: int) -> str:
        found = self._schemas.get(schema_id)
        if found is None:
            import httpx

            try:
                answer = httpx.get(f"{self.url}/schemas/ids/{schema_id}", timeout=30)
            except httpx.HTTPError as exc:
                raise ConnectException(f"Schema registry at {self.url} unreachable: {exc}") from None
            if answer.status_code != 200:
                raise ConnectException(f"Schema id {schema_id} not found in the schema registry at {self.url}: "
                                       f"HTTP {answer.status_code} {answer.text[:200]}")
            found = str(answer.json()["schema"])
            json.loads(found)
            self._schemas[schema_id] = found
        return found

    @staticmethod
    def framed() -> Any:
        """True for a value in the wire format: at least 5 bytes, the first 0x00."""
        from pyspark.sql import functions as F

        return (F.length("value") >= 5) & (F.hex(F.substring("value", 1, 1)) == F.lit("00"))

    def decode(self, good: Any) -> Any:
        """``good`` (rows whose ``value`` is framed) with the decoded value as the struct column ``_v``."""
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        schema_id = F.conv(F.hex(F.substring("value", 2, 4)), 16, 10).cast("long")
        ids = sorted(int(r[0]) for r in good.select(schema_id).distinct().collect())
        if not ids:
            return None
        for i in ids:
            self._schema(i)
        self._reader_id = max(self._reader_id, *ids)
        reader = self._schema(self._reader_id)
        body = F.expr("substring(value, 6, length(value) - 5)")
        options = {"avroSchema": reader, "mode": "PERMISSIVE" if self.tolerate else "FAILFAST"}
        # one projection, a branch per id: a union of per-id parts would split a topic-partition's records
        # over several Spark partitions, and so over several files
        decoded = F.when(schema_id == ids[0], from_avro(body, self._schemas[ids[0]], options))
        for i in ids[1:]:
            decoded = decoded.when(schema_id == i, from_avro(body, self._schemas[i], options))
        return good.withColumn("_v", decoded)
