"""The records of an Avro container file, with dates and timestamps as their numbers.

fastavro turns a ``date`` into a Python ``date`` and a ``timestamp-micros`` or
``local-timestamp-micros`` into a ``datetime``, and Python's stop at year 9999 where Spark's
go on (a Spark date reaches year +5881580). A block holding such a value is healthy, but
fastavro's reader fails on it (``year 164111 is out of range``). The reader here reads the
same bytes with those logical types taken off the file's schema, so the values come as the
numbers they are stored as: days, or microseconds, since 1970-01-01 (pyarrow takes them as
such for a date or timestamp column)."""

from __future__ import annotations

import io
import json
from typing import Any, BinaryIO

NUMBER_TIMES = frozenset({"date", "timestamp-micros", "local-timestamp-micros"})
"""The logical types read as their numbers (millisecond timestamps keep fastavro's reading:
their numbers are not the microseconds evonb's Arrow types hold)."""


def without_time_types(schema: Any) -> Any:
    """An Avro schema (parsed JSON) with the logical types of :data:`NUMBER_TIMES` taken off,
    at any depth."""
    if isinstance(schema, list):
        return [without_time_types(s) for s in schema]
    if isinstance(schema, dict):
        return {k: without_time_types(v) for k, v in schema.items()
                if not (k == "logicalType" and v in NUMBER_TIMES)}
    return schema


def reader_with_times_as_numbers(fh: BinaryIO) -> Any:
    """fastavro's reader of the container file ``fh`` (at its start), its dates and
    microsecond timestamps as numbers; its ``metadata`` holds the file's own schema. Reads
    ``fh`` into memory. Raises what fastavro raises on a header that does not read."""
    import fastavro
    from fastavro.read import HEADER_SCHEMA

    header = fastavro.schemaless_reader(fh, HEADER_SCHEMA)
    meta = dict(header["meta"])
    written = meta.get("avro.schema")
    if written is not None:
        meta["avro.schema"] = json.dumps(without_time_types(json.loads(written))).encode()
    plain = io.BytesIO()
    fastavro.schemaless_writer(plain, HEADER_SCHEMA, {**header, "meta": meta})
    plain.write(fh.read())
    plain.seek(0)
    reader = fastavro.reader(plain)
    if written is not None:
        reader.metadata["avro.schema"] = written.decode()
    return reader


__all__ = ["NUMBER_TIMES", "reader_with_times_as_numbers", "without_time_types"]
