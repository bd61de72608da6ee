"""Converting plain folders of Parquet files (written by Spark or pyarrow) in place."""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evonb.api import convert
from evonb.errors import TableExistsError, TableNotFoundError, UnsupportedTableError

pytestmark = pytest.mark.spark


def state(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too), files with their SHA-256."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "<dir>"
    return out


def plain(value: Any) -> Any:
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def rows(df) -> list[dict[str, Any]]:
    return sorted((plain(r) for r in df.collect()), key=lambda r: r["id"])


def unchanged_outside_evo(root: Path, before: dict[str, str]) -> bool:
    after = state(root)
    return all(after.get(k) == v for k, v in before.items())


# ------------------------------------------------------------------------ Spark-written data
SPARK_DDL = (
    "id bigint, name string, version int, ts timestamp, amount decimal(10,2), day date, "
    "tags array<string>, attrs map<string,int>, info struct<a:int,b:string>, "
    "items array<struct<x:int,y:string>>"
)


def spark_rows(start: int, n: int) -> list[tuple]:
    return [
        (i, f"n{i}", 1, dt.datetime(2024, 1, 1, 10, i % 60), Decimal(f"{i}.25"),
         dt.date(2024, 2, 1 + i % 27), [f"t{i}", "x"], {"k": i}, (i * 10, f"b{i}"),
         [(i, "y")])
        for i in range(start, start + n)
    ]


def test_spark_written_folder(spark, tmp_path):
    from pyspark.sql import functions as F

    root = tmp_path / "events"
    spark.createDataFrame(spark_rows(0, 6), SPARK_DDL).coalesce(2).write.parquet(str(root))
    later = spark.createDataFrame(spark_rows(6, 3), SPARK_DDL).withColumn("score", F.lit(0.5))
    later.coalesce(1).write.mode("append").parquet(str(root))
    assert (root / "_SUCCESS").exists()
    before = state(root)
    expected = rows(spark.read.option("mergeSchema", "true").parquet(str(root)))

    t = convert(root, primary_key="id", precombine="version", spark=spark)

    assert unchanged_outside_evo(root, before)
    assert t.schema.column_names[-1] == "score"
    assert str(t.schema.find("ts").type) == "timestamp"
    got = rows(t.read())
    assert len(got) == 9
    assert [{k: r[k] for k in expected[0]} for r in got] == expected
    record = t.timeline.last_completed()
    assert record.operation == "convert" and record.action == "commit"
    assert sum(f["rows"] for f in record.metadata["added"]) == 9
    assert {f.version for f in t.snapshot().files} == {"00000000000000000"}

    # evolve: DDL, then an insert that brings a new column, then an upsert
    t.alter("ALTER TABLE t RENAME COLUMN info.a TO alpha")
    t.alter("ALTER TABLE t ADD COLUMN country string DEFAULT 'NL'")
    t.alter("ALTER TABLE t DROP COLUMN tags")
    new = (t.read().filter("id < 2").withColumn("id", F.col("id") + 100)
           .withColumn("country", F.lit("BE")).withColumn("extra", F.lit(7)))
    t.write(new, mode="insert")
    upd = (t.read().filter("id = 3").withColumn("version", F.lit(2))
           .withColumn("name", F.lit("three")))
    t.write(upd, mode="upsert")

    final = {r["id"]: r for r in rows(t.read())}
    assert len(final) == 11
    assert "tags" not in t.schema.column_names
    assert final[4]["info"] == {"alpha": 40, "b": "b4"}
    assert final[4]["country"] == "NL" and final[4]["extra"] is None
    assert final[100]["country"] == "BE" and final[100]["extra"] == 7
    assert final[3]["name"] == "three" and final[3]["version"] == 2
    assert final[7]["score"] == 0.5 and final[0]["score"] is None
    assert unchanged_outside_evo(root, before)


def test_spark_partitioned_folder_is_refused(spark, tmp_path):
    root = tmp_path / "by_day"
    df = spark.createDataFrame([(1, "a", "x"), (2, "b", "y")], "id bigint, v string, k string")
    df.write.partitionBy("k").parquet(str(root))
    before = state(root)
    with pytest.raises(UnsupportedTableError, match="Hive-style partition folder"):
        convert(root, spark=spark)
    assert state(root) == before


# ----------------------------------------------------------------------- pyarrow-written data
def test_pyarrow_written_folder(spark, tmp_path):
    from pyspark.sql import functions as F

    root = tmp_path / "arrow"
    (root / "more").mkdir(parents=True)
    nested = pa.struct([("lat", pa.float64()), ("lon", pa.float64())])
    first = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "Name": pa.array(["a", "b", None]),
        "loc": pa.array([{"lat": 1.0, "lon": 2.0}, None, {"lat": 3.0, "lon": 4.0}], nested),
        "nums": pa.array([[1, 2], [], None], pa.list_(pa.int32())),
        "seen": pa.array([dt.datetime(2024, 5, 1, 12, 0)] * 3, pa.timestamp("us")),
        "at": pa.array([dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)] * 3,
                       pa.timestamp("ms", tz="UTC")),
        "small": pa.array([1, 2, 3], pa.int16()),
    })
    pq.write_table(first, root / "part-0.parquet")
    wider = pa.struct([("lat", pa.float64()), ("lon", pa.float64()), ("alt", pa.float32())])
    second = pa.table({
        "id": pa.array([4], pa.int64()),
        "Name": pa.array(["d"]),
        "loc": pa.array([{"lat": 5.0, "lon": 6.0, "alt": 7.0}], wider),
        "nums": pa.array([[9]], pa.list_(pa.int32())),
        "seen": pa.array([dt.datetime(2024, 5, 2)], pa.timestamp("us")),
        "at": pa.array([dt.datetime(2024, 5, 2, tzinfo=dt.UTC)], pa.timestamp("ms", tz="UTC")),
        "small": pa.array([4], pa.int16()),
        "tag": pa.array(["new"]),
    })
    pq.write_table(second, root / "more" / "part-1.parquet")
    before = state(root)

    t = convert(root, name="arrow_events", primary_key="id", spark=spark)

    assert t.name == "arrow_events"
    assert unchanged_outside_evo(root, before)
    s = t.schema
    assert s.column_names == ["id", "Name", "loc", "nums", "seen", "at", "small", "tag"]
    assert [f.name for f in s.find("loc").type.fields] == ["lat", "lon", "alt"]
    assert str(s.find("seen").type) == "timestamp_ntz"
    assert str(s.find("at").type) == "timestamp"
    assert str(s.find("small").type) == "smallint"
    got = {r["id"]: r for r in rows(t.read())}
    assert len(got) == 4
    assert got[1]["Name"] == "a" and got[3]["Name"] is None
    assert got[1]["loc"] == {"lat": 1.0, "lon": 2.0, "alt": None}
    assert got[2]["loc"] is None and got[2]["nums"] == []
    assert got[4]["loc"] == {"lat": 5.0, "lon": 6.0, "alt": 7.0}
    assert got[4]["tag"] == "new" and got[1]["tag"] is None
    assert got[1]["seen"] == dt.datetime(2024, 5, 1, 12, 0)
    assert {f.partition for f in t.snapshot().files} == {"", "more"}

    t.alter("ALTER TABLE t RENAME COLUMN Name TO label")
    t.alter("ALTER TABLE t ALTER COLUMN small TYPE int")
    t.write(t.read().filter("id = 2").withColumn("label", F.lit("B"))
            .withColumn("small", F.lit(70000)), mode="upsert")
    final = {r["id"]: r for r in rows(t.read())}
    assert final[2]["label"] == "B" and final[2]["small"] == 70000
    assert final[1]["label"] == "a" and final[1]["small"] == 1
    assert final[4]["loc"]["alt"] == 7.0
    assert unchanged_outside_evo(root, before)


def test_int96_timestamps(spark, tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    when = dt.datetime(2024, 3, 1, 8, 30, tzinfo=dt.UTC)
    pq.write_table(pa.table({"id": [1], "t": pa.array([when], pa.timestamp("us", tz="UTC"))}),
                   root / "a.parquet", use_deprecated_int96_timestamps=True)
    t = convert(root, spark=spark)
    assert str(t.schema.find("t").type) == "timestamp"
    got = t.read().selectExpr("CAST(unix_micros(t) AS BIGINT) AS us").collect()[0]["us"]
    assert got == int(when.timestamp() * 1_000_000)


def test_hive_folders_that_keep_the_column(spark, tmp_path):
    from pyspark.sql import functions as F

    root = tmp_path / "regions"
    for region, ids in (("eu", [1, 2]), ("us", [3])):
        (root / f"region={region}").mkdir(parents=True)
        pq.write_table(pa.table({"id": ids, "region": [region] * len(ids)}),
                       root / f"region={region}" / "data.parquet")
    t = convert(root, primary_key="id", spark=spark)
    assert t.partition_by == ("region",)
    assert {f.partition for f in t.snapshot().files} == {"region=eu", "region=us"}
    t.write(t.read().filter("id = 3").withColumn("id", F.lit(4)).withColumn("region",
                                                                            F.lit("ap")))
    assert sorted((r["id"], r["region"]) for r in rows(t.read())) == [
        (1, "eu"), (2, "eu"), (3, "us"), (4, "ap")]
    assert (root / "region=ap").is_dir()


def test_hive_folders_without_the_column_are_refused(spark, tmp_path):
    root = tmp_path / "ds"
    table = pa.table({"id": [1, 2, 3], "k": ["a", "b", "a"]})
    pq.write_to_dataset(table, root, partition_cols=["k"])
    before = state(root)
    with pytest.raises(UnsupportedTableError) as info:
        convert(root, spark=spark)
    assert "'k'" in str(info.value) and "rewrite" in str(info.value)
    assert state(root) == before


def test_widening_between_files(spark, tmp_path):
    root = tmp_path / "wide"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "v": pa.array([1.5], pa.float32())}),
                   root / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "v": pa.array([2.5], pa.float64())}),
                   root / "b.parquet")
    t = convert(root, spark=spark)
    assert str(t.schema.find("id").type) == "bigint"
    assert str(t.schema.find("v").type) == "double"
    assert [(r["id"], r["v"]) for r in rows(t.read())] == [(1, 1.5), (2, 2.5)]


# ----------------------------------------------------------------------------- refusals
def test_conflicting_types_are_refused(spark, tmp_path):
    root = tmp_path / "clash"
    root.mkdir()
    pq.write_table(pa.table({"id": [1], "x": [1]}), root / "a.parquet")
    pq.write_table(pa.table({"id": [2], "x": ["one"]}), root / "b.parquet")
    before = state(root)
    with pytest.raises(UnsupportedTableError, match="conflicting types"):
        convert(root, spark=spark)
    assert state(root) == before


def test_nanosecond_timestamps_are_refused(spark, tmp_path):
    root = tmp_path / "nanos"
    root.mkdir()
    pq.write_table(pa.table({"t": pa.array([1], pa.timestamp("ns"))}), root / "a.parquet")
    before = state(root)
    with pytest.raises(UnsupportedTableError, match="nanosecond"):
        convert(root, spark=spark)
    assert state(root) == before


def test_a_column_named_like_the_hidden_column_is_refused(spark, tmp_path):
    """It was dropped from the schema, its values lost without a word."""
    root = tmp_path / "hidden"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "_EVO_commit_time": ["x", "y"]}), root / "a.parquet")
    before = state(root)
    with pytest.raises(UnsupportedTableError, match=r"'_EVO_commit_time'.*a\.parquet|"
                       r"a\.parquet.*'_EVO_commit_time'") as info:
        convert(root, spark=spark)
    assert "withColumnRenamed" in info.value.hint
    assert state(root) == before


def nested_struct(depth: int) -> tuple[pa.DataType, dict[str, Any]]:
    """A struct ``depth`` levels deep (``s0`` innermost) and a value of it."""
    kind: pa.DataType = pa.int32()
    value: Any = 7
    for i in range(depth):
        kind, value = pa.struct([pa.field(f"s{i}", kind)]), {f"s{i}": value}
    return kind, value


@pytest.mark.parametrize("depth", [60, 61])
def test_nesting_deeper_than_a_table_takes_is_refused(spark, tmp_path, depth):
    """Deeper than ``MAX_NESTING`` a later read or upsert fails in some reader; as for
    ``create_table``, conversion refuses, names the column and writes nothing."""
    root = tmp_path / "deep"
    root.mkdir()
    kind, value = nested_struct(depth)
    pq.write_table(pa.table({"id": [1], "s": pa.array([value], kind)}), root / "a.parquet")
    before = state(root)
    if depth == 61:
        with pytest.raises(UnsupportedTableError, match=r"Column 's' would nest 61 levels") as info:
            convert(root, spark=spark)
        assert "s.s60.s59" in str(info.value) and "to_json" in info.value.hint
        assert state(root) == before
        return
    t = convert(root, spark=spark)
    leaf = t.read().collect()[0]["s"]
    for i in reversed(range(depth)):
        leaf = leaf[f"s{i}"]
    assert leaf == 7


@pytest.mark.parametrize("length", [228, 229])
def test_a_partition_column_whose_folders_cannot_hold_a_null_is_refused(spark, tmp_path,
                                                                        length):
    """A name that leaves no room for ``__HIVE_DEFAULT_PARTITION__`` was adopted, and the
    first write of a null then failed with ``OSError: File name too long``."""
    name = "p" * length
    root = tmp_path / "parts"
    (root / f"{name}=a").mkdir(parents=True)
    pq.write_table(pa.table({"id": [1], name: ["a"]}), root / f"{name}=a" / "data.parquet")
    before = state(root)
    if length == 229:
        with pytest.raises(UnsupportedTableError, match=f"'{name}' has a name of 229 bytes"):
            convert(root, spark=spark)
        assert state(root) == before
        return
    t = convert(root, spark=spark)
    assert t.partition_by == (name,)
    t.write(spark.createDataFrame([(2, None)], f"id long, `{name}` string"))
    assert sorted((r["id"], r[name]) for r in rows(t.read())) == [(1, "a"), (2, None)]


def test_empty_missing_and_foreign_folders(spark, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UnsupportedTableError, match="No Parquet files"):
        convert(empty, spark=spark)
    assert list(empty.iterdir()) == []
    with pytest.raises(TableNotFoundError):
        convert(tmp_path / "nowhere", spark=spark)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pq.write_table(pa.table({"id": [1]}), mixed / "a.parquet")
    (mixed / "notes.csv").write_text("id\n1\n")
    with pytest.raises(UnsupportedTableError, match=r"notes\.csv"):
        convert(mixed, spark=spark)
    assert sorted(p.name for p in mixed.iterdir()) == ["a.parquet", "notes.csv"]
    with pytest.raises(UnsupportedTableError, match="not a folder"):
        convert(mixed / "a.parquet", spark=spark)


def test_bad_key_and_existing_table(spark, tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"]}), root / "a.parquet")
    before = state(root)
    with pytest.raises(UnsupportedTableError, match="missing_col"):
        convert(root, primary_key="missing_col", spark=spark)
    assert state(root) == before
    t = convert(root, spark=spark)
    assert t.primary_key == ()
    with pytest.raises(TableExistsError):
        convert(root, spark=spark)


def test_failure_while_writing_leaves_nothing(spark, tmp_path, monkeypatch):
    from evonb.table.timeline import Timeline

    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": [1]}), root / "a.parquet")
    before = state(root)
    calls = {"n": 0}
    original = Timeline.complete

    def failing(self, instant, metadata, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return original(self, instant, metadata, **kwargs)

    monkeypatch.setattr(Timeline, "complete", failing)
    with pytest.raises(OSError, match="disk full"):
        convert(root, spark=spark)
    assert state(root) == before
