"""evonb's Spark writes store ``timestamp`` values as INT64 microseconds, with statistics
that let readers skip row groups and give a ``timestamp`` record key its key range; a session
that sets ``spark.sql.parquet.outputTimestampType`` to ``INT96`` (for a reader that needs it)
gets INT96, one that sets ``TIMESTAMP_MILLIS`` still gets microseconds, and tables holding
both kinds of file read as one."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import evonb
from evonb.spark.session import temporary_settings
from evonb.spark.writer import TIMESTAMP_TYPE_OPTION
from tests.parquet_files import physical_types

pytestmark = pytest.mark.spark

DDL = "id int not null, at timestamp, s struct<when: timestamp, n: int>"
COLS = "id int, at timestamp, s struct<when: timestamp, n: int>"
START = dt.datetime(2026, 3, 1)
ROWS_PER_GROUP = 100


def _rows(first: int, count: int) -> list[tuple]:
    """Rows whose ``at`` rises a minute a row from START + ``first`` minutes."""
    return [(i, START + dt.timedelta(minutes=i), (START - dt.timedelta(days=i), i))
            for i in range(first, first + count)]


def _table(tmp_path, spark, table_type: str):
    t = evonb.create_table(tmp_path / table_type, DDL, primary_key="id", table_type=table_type,
                           properties={"evonb.write.parquet.block.row.count.limit":
                                       str(ROWS_PER_GROUP)})
    t.write(spark.createDataFrame(_rows(0, 1000), COLS).coalesce(1), "insert")
    return t


def test_a_spark_write_stores_timestamps_as_microseconds_with_statistics(spark, tmp_path):
    t = _table(tmp_path, spark, "cow")
    (only,) = t.snapshot().files
    path = t.root / only.path
    assert physical_types(path) == {"id": "INT32", "at": "INT64", "s.when": "INT64", "s.n": "INT32",
                             "_evo_commit_time": "BYTE_ARRAY"}
    meta = pq.read_metadata(path)
    assert meta.num_row_groups == 10
    at = next(c for c in range(meta.num_columns)
              if meta.row_group(0).column(c).path_in_schema == "at")
    stats = meta.row_group(3).column(at).statistics
    assert stats.has_min_max
    assert (stats.min.replace(tzinfo=None), stats.max.replace(tzinfo=None)) == (
        START + dt.timedelta(minutes=300), START + dt.timedelta(minutes=399))
    # a time range keeps the row groups it can hold, by their statistics alone
    since = pa.scalar(START + dt.timedelta(minutes=950), pa.timestamp("us", "UTC"))
    (fragment,) = ds.dataset(path).get_fragments()
    assert len(fragment.split_by_row_group(pc.field("at") >= since)) == 1
    # the record key of a timestamp is given its range
    assert only.key_stats == ((1, 0, 999),)


def test_a_session_that_sets_int96_gets_int96(spark, tmp_path):
    with temporary_settings(spark, {TIMESTAMP_TYPE_OPTION: "INT96"}):
        t = _table(tmp_path, spark, "cow")
    (only,) = t.snapshot().files
    leaves = physical_types(t.root / only.path)
    assert (leaves["at"], leaves["s.when"]) == ("INT96", "INT96")


def test_a_session_that_sets_milliseconds_keeps_the_microseconds(spark, tmp_path):
    """``TIMESTAMP_MILLIS`` would drop every value's microseconds: evonb writes microseconds."""
    exact = dt.datetime(2026, 3, 1, 12, 30, 45, 123456)
    with temporary_settings(spark, {TIMESTAMP_TYPE_OPTION: "TIMESTAMP_MILLIS"}):
        t = evonb.create_table(tmp_path / "t", DDL, primary_key="id")
        t.write(spark.createDataFrame([(1, exact, (exact, 1))], COLS), "insert")
    (only,) = t.snapshot().files
    assert pq.ParquetFile(t.root / only.path).schema_arrow.field("at").type == pa.timestamp(
        "us", "UTC")
    (row,) = t.read().collect()
    assert (row["at"], row["s"]["when"]) == (exact, exact)
    assert t.to_arrow().column("at")[0].as_py().replace(tzinfo=None) == exact


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_files_of_both_kinds_read_as_one_table(spark, tmp_path, table_type):
    """Files written as INT96 (by Spark's default, before evonb chose microseconds) and as
    INT64 read alike in both readers, filtered or not, as of each commit."""
    with temporary_settings(spark, {TIMESTAMP_TYPE_OPTION: "INT96"}):
        t = _table(tmp_path, spark, table_type)
        t.write(spark.createDataFrame(_rows(1000, 50), COLS), "insert")
    first = t.timeline.last_completed().instant
    changed = [(i, START + dt.timedelta(days=400, minutes=i), (START, -i)) for i in (5, 500)]
    t.write(spark.createDataFrame(changed + _rows(1050, 50), COLS), "upsert")
    kinds = {physical_types(t.root / f.path)["at"] for f in t.snapshot().files if f.kind == "base"}
    assert "INT96" in kinds and ("INT64" in kinds or table_type == "mor")
    expected = _rows_as_dict(_rows(0, 1100)) | _rows_as_dict(changed)

    def spark_rows(df):
        return {r["id"]: (r["at"], r["s"]["when"]) for r in df.collect()}

    def arrow_rows(table):
        return {r["id"]: (r["at"].replace(tzinfo=None), r["s"]["when"].replace(tzinfo=None))
                for r in table.to_pylist()}

    assert spark_rows(t.read()) == expected == arrow_rows(t.to_arrow())
    since = START + dt.timedelta(minutes=990)
    later = {k: v for k, v in expected.items() if v[0] >= since}
    assert sorted(later) == [5, 500, *range(990, 1100)]
    assert spark_rows(t.read().filter(f"at >= timestamp'{since}'")) == later
    filtered = t.to_arrow(filter=pc.field("at") >= pa.scalar(since, pa.timestamp("us", "UTC")))
    assert arrow_rows(filtered) == later
    old = _rows_as_dict(_rows(0, 1050))
    assert spark_rows(t.read(as_of=first)) == old == arrow_rows(t.to_arrow(as_of=first))


def _rows_as_dict(rows: list[tuple]) -> dict[int, tuple]:
    return {r[0]: (r[1], r[2][0]) for r in rows}
