"""``evonb.convert`` of Parquet files written by pyarrow into a bucket, then renames and drops,
then the JVM-free reader: the values are exact."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

import evonb
from evonb.table.check import check_table
from tests.objectstore.conftest import keys

PARTS = [
    pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"],
              "score": pa.array([1.5, 2.5, None], pa.float64())}),
    pa.table({"id": pa.array([4, 5], pa.int64()), "name": ["d", None],
              "score": pa.array([4.0, 5.25], pa.float64())}),
]
"""The Parquet files a test uploads (each written by pyarrow, put whole)."""


def parquet_bytes(part: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(part, sink)
    return bytes(sink.getvalue().to_pybytes())


def convert_evolve_and_read(where: str, again: str) -> None:
    """Convert the uploaded ``PARTS`` at ``where``, rename, drop and re-add a column, and read
    the table (reopened as ``again``, another URI of it) with the JVM-free reader."""
    t = evonb.convert(where, primary_key="id")
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    t.alter("ALTER TABLE t DROP COLUMN score")
    t.alter("ALTER TABLE t ADD COLUMN score string")  # a new column: never the dropped values
    got = evonb.open_table(again).to_arrow().sort_by("id")
    assert got.column_names == ["id", "label", "score"]
    assert got.column("id").to_pylist() == [1, 2, 3, 4, 5]
    assert got.column("label").to_pylist() == ["a", "b", "c", "d", None]
    assert got.column("score").to_pylist() == [None] * 5
    old = t.to_arrow(as_of="@1").sort_by("id")
    assert old.column("score").to_pylist() == [1.5, 2.5, None, 4.0, 5.25]
    assert check_table(where).ok


def test_convert_rename_drop_and_read_with_arrow(bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    for i, part in enumerate(PARTS):
        # Written by pyarrow, put with one PUT: moto's server fails the multipart upload that
        # pyarrow's S3 output stream finishes with.
        s3_client.put_object(Bucket=bucket, Key=f"events/part-{i}.parquet",
                             Body=parquet_bytes(part))
    uploaded = keys(s3_client, bucket)
    assert uploaded == ["events/part-0.parquet", "events/part-1.parquet"]
    convert_evolve_and_read(f"s3://{bucket}/events", f"s3a://{bucket}/events")
    # the data files are the user's, read in place: none was rewritten
    assert [k for k in keys(s3_client, bucket) if not k.startswith("events/.evo/")] == uploaded
