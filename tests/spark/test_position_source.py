"""evonb's Parquet source (``org.evonb.spark.PositionFilteredParquet``): the base rows that
merge-on-read log blocks replace or delete are dropped inside the Parquet reader, by position,
batch by batch or row by row. The shared session loads it (compiled on first use with the
JDK's javac); every read through it gives the same rows as the built-in filter, the merge by
key and a copy-on-write table, across the reader's modes (column batches, rows, off-heap
vectors, small batches, split files, pushed-down filters that skip row groups); a row past a
file's planned rows, or a file the option does not name, fails the read; the table property
``evonb.mor.read.jvm_filter=false`` turns it off."""

from __future__ import annotations

import pytest

import evonb
from evonb.spark import jvm, position_source
from evonb.spark.mor import read_snapshot
from evonb.spark.session import temporary_settings

pytestmark = pytest.mark.spark

COLS = "id long, v string, ts long"


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _tables(spark, tmp_path, rows=300, properties=None):
    """A merge-on-read table (3 base files, log blocks in every group) and a copy-on-write
    table given the same writes."""
    props = {"evonb.write.target.file.bytes": "0", **(properties or {})}
    mor = evonb.create_table(tmp_path / "mor", "id bigint not null, v string, ts bigint",
                             primary_key="id", precombine="ts", table_type="mor",
                             properties=props)
    cow = evonb.create_table(tmp_path / "cow", "id bigint not null, v string, ts bigint",
                             primary_key="id", precombine="ts", properties=props)
    base = spark.range(0, rows, 1, 3).selectExpr("id", "concat('b', id) AS v", "5L AS ts")
    for t in (mor, cow):
        t.write(base, "insert")
    upsert = spark.createDataFrame(
        [(i, f"u{i}", 9 if i % 2 else 1) for i in range(0, rows, 7)] + [(rows + 1, "new", 1)],
        COLS)
    deletes = spark.createDataFrame([(i,) for i in (0, 63, 64, 127, 128, rows - 1)], "id long")
    for t in (mor, cow):
        t.write(upsert, "upsert")
        t.write(deletes, "delete")
    return mor, cow


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _by_key(t):
    snap = t.snapshot()
    return _rows(read_snapshot(t, snap, t.schema, positions=False))


def test_the_shared_session_has_the_source(spark):
    assert position_source.available(spark)
    jar = jvm.jar(build=False)
    assert jar is not None and str(jar) in spark.conf.get("spark.jars")


def test_a_read_drops_replaced_rows_in_the_reader(spark, tmp_path):
    mor, cow = _tables(spark, tmp_path)
    df = mor.read()
    plan = _plan(df)
    assert "EvonbParquet" in plan and position_source.DELETED in plan
    assert "_metadata" not in plan  # no row index, no file key per row
    want = _rows(cow.read())
    assert _rows(df) == want == _by_key(mor)
    assert len(want) == 300 + 1 - 6
    assert (7, "u7", 9) in want and (14, "b14", 5) in want  # an update wins, one loses
    assert not any(r[0] in (0, 63, 64, 127, 128, 299) for r in want)


@pytest.mark.parametrize("settings", [
    {},
    {"spark.sql.parquet.enableVectorizedReader": "false"},
    {"spark.sql.columnVector.offheap.enabled": "true"},
    {"spark.sql.parquet.columnarReaderBatchSize": "7"},
    {"spark.sql.files.maxPartitionBytes": "256", "spark.sql.files.openCostInBytes": "1"},
], ids=["batches", "rows", "off-heap", "small-batches", "split-size"])
def test_every_reader_mode_gives_the_same_rows(spark, tmp_path, settings):
    mor, cow = _tables(spark, tmp_path)
    with temporary_settings(spark, settings):
        got = mor.read()
        assert "EvonbParquet" in _plan(got)
        assert _rows(got) == _rows(cow.read())
        filtered = mor.read().filter("id BETWEEN 60 AND 130 AND v LIKE 'b%'")
        assert _rows(filtered) == _rows(cow.read().filter(
            "id BETWEEN 60 AND 130 AND v LIKE 'b%'"))
        assert _rows(mor.read(meta_columns=True).drop("_evo_commit_time")) == _rows(got)


@pytest.mark.parametrize("in_reader", ["true", "false"], ids=["in-reader", "built-in"])
def test_a_selective_filter_skips_row_groups(spark, tmp_path, in_reader):
    from bench.util import scan_metrics

    props = {"evonb.write.parquet.block.size": "4096", "evonb.mor.read.jvm_filter": in_reader}
    mor, cow = _tables(spark, tmp_path, rows=6000, properties=props)
    df = mor.read().filter("id = 4500")
    assert _rows(df) == [(4500, "b4500", 5)]
    assert ("EvonbParquet" in _plan(df)) == (in_reader == "true")
    scanned = scan_metrics(df)["scan_output_rows"]
    assert 0 < scanned < 6000 // 3  # fewer rows than the one file that holds the key
    assert _rows(mor.read().filter("id = 4501")) == _rows(cow.read().filter("id = 4501"))


def test_the_property_turns_it_off(spark, tmp_path):
    mor, cow = _tables(spark, tmp_path)
    mor.alter("ALTER TABLE t SET TBLPROPERTIES ('evonb.mor.read.jvm_filter' = 'false')")
    df = mor.read()
    plan = _plan(df)
    assert "EvonbParquet" not in plan and "_metadata" in plan
    assert _rows(df) == _rows(cow.read())
    with pytest.raises(evonb.EvoError, match="jvm_filter"):
        mor.alter("ALTER TABLE t SET TBLPROPERTIES ('evonb.mor.read.jvm_filter' = 'maybe')")
    mor.alter("ALTER TABLE t UNSET TBLPROPERTIES ('evonb.mor.read.jvm_filter')")
    assert "EvonbParquet" in _plan(mor.read())


def _parquet(spark, tmp_path, rows=200):
    """One Parquet file of ``rows`` ids (0, 1, ...) in order; its path and name."""
    out = tmp_path / "plain"
    spark.range(0, rows, 1, 1).selectExpr("id", "id * 2 AS twice").write.parquet(str(out))
    (path,) = out.glob("*.parquet")
    return path, path.name


def _source(spark, path, option):
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("id", T.LongType()),
                           T.StructField("twice", T.LongType()),
                           T.StructField(position_source.DELETED, T.BooleanType())])
    return (spark.read.format(position_source.SOURCE).schema(schema)
            .option(position_source.OPTION, option).load(str(path)))


@pytest.mark.parametrize("vectorized", ["true", "false"])
def test_the_source_marks_exactly_the_positions_given(spark, tmp_path, vectorized):
    path, name = _parquet(spark, tmp_path)
    dropped = [0, 1, 62, 63, 64, 65, 127, 128, 199]
    option = position_source.encode([(name, 200, dropped)])
    with temporary_settings(spark, {"spark.sql.parquet.enableVectorizedReader": vectorized,
                                "spark.sql.parquet.columnarReaderBatchSize": "10"}):
        df = _source(spark, path, option)
        marked = {r[0]: r[2] for r in df.collect()}
        assert sorted(i for i, d in marked.items() if d) == dropped
        assert len(marked) == 200
        kept = df.filter(f"NOT {position_source.DELETED}").select("twice").collect()
        assert sorted(r[0] for r in kept) == [2 * i for i in range(200) if i not in dropped]
        # A query that does not read the column reads the file as it is.
        assert df.select("id").count() == 200


def test_a_row_past_the_planned_rows_fails_the_read(spark, tmp_path):
    path, name = _parquet(spark, tmp_path)
    with pytest.raises(Exception, match=r"row at position 150, past the 150 rows planned"):
        _source(spark, path, position_source.encode([(name, 150, [3])])).collect()
    with pytest.raises(Exception, match=rf"no positions for base file {name}"):
        _source(spark, path, position_source.encode([("other.parquet", 200, [])])).collect()
