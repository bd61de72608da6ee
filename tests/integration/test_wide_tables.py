"""A wide table (500 columns) on each write path: an insert from a DataFrame whose columns
carry Parquet field IDs in their metadata (as Spark's reader of another table's files gives
them), an upsert after a rename and a widening, both readers. The files carry no field IDs
(other readers would trust them over the name mapping). Writes of wide DataFrames used to
take one plan analysis per column twice over (1,000 columns: minutes for one row); the time
is measured by ``bench/``, not here."""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import evonb
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = pytest.mark.spark

WIDTH = 500


@pytest.mark.parametrize("path", ["cow-driver", "mor-spark"])
def test_a_wide_table_round_trips_without_field_ids_in_its_files(spark: Any, tmp_path: Any,
                                                                 path: str) -> None:
    table_type, props = MERGE_PATHS[path]
    cols = ", ".join(f"c{i} int" for i in range(WIDTH))
    t = evonb.create_table(tmp_path / "t", f"id bigint not null, {cols}", primary_key="id",
                           table_type=table_type, properties=props)
    df = spark.sql("select id, " + ", ".join(f"cast(id * {i} as int) c{i}" for i in range(WIDTH))
                   + " from range(3)")
    df = df.select(*[F.col(c).alias(c, metadata={"parquet.field.id": 900 + n})
                     for n, c in enumerate(df.columns)])
    t.write(df)
    for f in t.snapshot().files:
        schema = pq.ParquetFile(t.root / f.path).schema_arrow
        assert not any(field.metadata and b"PARQUET:field_id" in field.metadata
                       for field in schema), f.path
    t.alter("ALTER TABLE t RENAME COLUMN c7 TO seven")
    t.alter(f"ALTER TABLE t ALTER COLUMN c{WIDTH - 1} TYPE bigint")
    t.write(spark.sql(f"select 1L id, -7 seven, 10000000000L c{WIDTH - 1}, 5 c3"), mode="upsert")

    def expected(k: int) -> dict[str, Any]:
        row: dict[str, Any] = {"id": k, **{f"c{i}": k * i for i in range(WIDTH)}}
        if k == 1:
            row.update({f"c{i}": None for i in range(WIDTH)})  # an upsert's missing columns
            row.update(c7=-7, c3=5)
            row[f"c{WIDTH - 1}"] = 10_000_000_000
        row["seven"] = row.pop("c7")
        return row

    want = [expected(k) for k in range(3)]
    got_arrow = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got_arrow == want
    got_spark = sorted((r.asDict() for r in t.read().collect()), key=lambda r: r["id"])
    assert got_spark == want
    assert t.read().columns[:9] == ["id", "c0", "c1", "c2", "c3", "c4", "c5", "c6", "seven"]
