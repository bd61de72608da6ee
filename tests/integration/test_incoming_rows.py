"""A write computes its incoming rows once, and checks the rows it writes.

An insert or overwrite checks (no null in a NOT NULL or key column; with
``evonb.write.insert_duplicates='error'``, no record key twice) the rows its own job computes,
and a refused write leaves the table as it was, even when it evolved the schema. An upsert or
delete computes its rows once and keeps them for its checks, key lookup and merge."""

from __future__ import annotations

from pathlib import Path

import pytest

import evonb

COLUMNS = "id bigint NOT NULL, v float NOT NULL, day string"
INCOMING = "id bigint, v double, day string, extra string"  # widens v, adds extra


def _table_files(table) -> set[str]:
    """Every file under the table's folder (data files, metadata, the timeline)."""
    root = Path(table.path)
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _state(table) -> tuple:
    fresh = evonb.open_table(table.path)
    rows = sorted(tuple(r) for r in fresh.read().collect())
    return ([c.instant for c in fresh.history()], rows, str(fresh.schema.struct),
            _table_files(fresh))


@pytest.mark.parametrize("table_type", ["cow", "mor"])
@pytest.mark.parametrize("mode", ["insert", "overwrite"])
def test_the_incoming_rows_are_computed_once(spark, warehouse, table_type, mode):
    """Each incoming row passes once through the Python function that makes its key and
    its NOT NULL value: the null check rides on the write's job (an observed metric), and the
    uniqueness check reads the key column of the files written. Before, an insert computed
    its rows three times (null check, uniqueness job, write), so a costly or
    non-deterministic input was checked on other rows than those it wrote."""
    from pyspark.sql import functions as F

    calls = spark.sparkContext.accumulator(0)

    @F.udf("bigint")
    def counted(x):
        calls.add(1)
        return x

    t = evonb.create_table(warehouse / "t", COLUMNS, primary_key="id", partition_by="day",
                           table_type=table_type)
    rows = spark.range(200).select(
        counted("id").alias("id"), (F.col("id") / 2).cast("float").alias("v"),
        F.when(F.col("id") % 3 == 0, "mon").otherwise("tue").alias("day"))
    t.write(rows, mode=mode)
    assert calls.value == 200
    assert sorted((r["id"], r["v"], r["day"]) for r in t.read().collect()) == [
        (i, i / 2, "mon" if i % 3 == 0 else "tue") for i in range(200)]


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_refused_inserts_that_evolve_the_schema_leave_nothing(spark, warehouse, table_type):
    t = evonb.create_table(warehouse / "t", COLUMNS, primary_key="id", partition_by="day",
                           table_type=table_type)
    t.write(spark.createDataFrame([(1, 1.5, "mon")], "id bigint, v float, day string"))
    before = _state(t)
    cases = [
        ([(2, 2.5, "mon", "a"), (3, 3.5, "tue", "b"), (2, 4.5, "wed", "c")], "insert",
         r"^1 record keys \(id\) occur more than once in the rows inserted \(2 rows\), "
         r"e\.g\. 2, and the table property evonb\.write\.insert_duplicates is 'error'"),
        ([(2, 2.5, "mon", "a"), (None, 3.5, "tue", "b")], "insert",
         r"^Column 'id' is NOT NULL or a record key, but 1 incoming rows hold null"),
        ([(2, None, "mon", "a"), (3, None, "tue", "b")], "overwrite",
         r"^Column 'v' is NOT NULL or a record key, but 2 incoming rows hold null"),
    ]
    for rows, mode, message in cases:
        with pytest.raises(evonb.DataValidationError, match=message):
            t.write(spark.createDataFrame(rows, INCOMING), mode=mode)
        assert _state(t) == before, (mode, message)
    t.write(spark.createDataFrame([(2, 2.5, "mon", "a")], INCOMING))
    assert str(t.schema.find("v").type) == "double"
    assert sorted(tuple(r) for r in t.read().collect()) == [
        (1, 1.5, "mon", None), (2, 2.5, "mon", "a")]


def test_duplicate_keys_are_named_by_their_current_name(spark, warehouse):
    """The uniqueness check reads the files by physical name; the error names the key as
    the table now calls it."""
    t = evonb.create_table(warehouse / "t", "id bigint NOT NULL, v string", primary_key="id")
    t.alter("ALTER TABLE t RENAME COLUMN id TO order_id")
    before = _state(t)
    with pytest.raises(evonb.DataValidationError, match=r"^2 record keys \(order_id\)") as info:
        t.write(spark.createDataFrame([(1, "a"), (1, "b"), (2, "c"), (2, "d"), (3, "e")],
                                      "order_id bigint, v string"))
    assert sorted(info.value.examples) == [1, 2]
    assert _state(t) == before


UPSERT_PATHS = {
    "driver": {},
    # the Spark path: the driver's paths turned off
    "spark": {"evonb.mor.driver_lookup.rows": "0", "evonb.write.driver_rewrite.bytes": "0"},
    # the rows collected for a driver path, whose limit on stored data then sends the write
    # to Spark's path, with the rows collected
    "collected_then_spark": {"evonb.mor.driver_lookup.rows": "1",
                             "evonb.write.driver_rewrite.bytes": "1"},
}


@pytest.mark.parametrize("path", sorted(UPSERT_PATHS))
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_an_upsert_of_rows_that_change_between_computations(spark, warehouse, tmp_path,
                                                            table_type, path):
    """A source that gives other rows each time it is computed (here: new keys the first
    time, the stored keys after) was checked on one computation and merged with another:
    the key lookup, pruned by the keys the check saw, found no file, and the stored keys were
    written a second time. Now an upsert or delete computes its rows once; this one brings
    the new keys only, each row computed once."""
    import os

    from pyspark.sql import functions as F

    marks = tmp_path / "marks"
    marks.mkdir()
    calls = spark.sparkContext.accumulator(0)

    @F.udf("bigint")
    def shifting(x):
        calls.add(1)
        mark = os.path.join(str(marks), str(x))
        if os.path.exists(mark):
            return x
        open(mark, "w").close()
        return x + 1000

    t = evonb.create_table(warehouse / "t", "id bigint NOT NULL, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type=table_type,
                           properties=UPSERT_PATHS[path])
    t.write(spark.range(100).selectExpr("id", "'old' AS v", "0L AS ts").repartition(4))
    calls.value = 0
    t.write(spark.range(10).select(shifting("id").alias("id"), F.lit("new").alias("v"),
                                   F.lit(1).cast("bigint").alias("ts")), mode="upsert")
    assert calls.value == 10
    got = sorted((r["id"], r["v"]) for r in t.read().collect())
    assert got == [(i, "old") for i in range(100)] + [(1000 + i, "new") for i in range(10)]
    for mark in marks.iterdir():  # the next computation gives the stored keys
        mark.unlink()
    calls.value = 0
    t.write(spark.range(5).select(shifting("id").alias("id")), mode="delete")
    assert calls.value == 5
    lookup = t.timeline.last_completed().metadata.get("key_lookup") or {}
    assert bool(lookup.get("driver")) == (path == "driver")  # the path named was taken
    assert sorted(r["id"] for r in t.read().collect()) == [
        *range(100), *(1000 + i for i in range(5, 10))]


@pytest.mark.parametrize("path", ["driver", "collected_then_spark"])
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_collected_delta_is_merged_as_collected(spark, warehouse, tmp_path, monkeypatch,
                                                   table_type, path):
    """A small delta from a source Spark can size (here a CSV file) is collected to the
    driver in the one job that checks it, without a checkpoint. When the stored side is then
    too large for the driver's path, Spark's merge reads the collected rows, not the source
    again: the file changes right after that job (new keys 1000 to 1004, then the stored keys
    0 to 4, of the same byte length), and the keys deleted are those collected."""
    from evonb.spark import writes

    source = tmp_path / "keys.csv"
    collected = []

    def to_arrow_then_change(df):
        rows = real(df)
        collected.append(rows.num_rows)
        source.write_text("".join(f"{i:04d}\n" for i in range(5)))  # what comes next
        return rows

    real = writes.to_arrow
    monkeypatch.setattr(writes, "to_arrow", to_arrow_then_change)
    t = evonb.create_table(warehouse / "t", "id bigint NOT NULL, v string",
                           primary_key="id", table_type=table_type,
                           properties=UPSERT_PATHS[path])
    t.write(spark.range(100).selectExpr("id", "'old' AS v").repartition(4))
    t.write(spark.range(1000, 1010).selectExpr("id", "'new' AS v"), mode="upsert")
    collected.clear()
    source.write_text("".join(f"{1000 + i}\n" for i in range(5)))
    t.write(spark.read.schema("id bigint").csv(str(source)), mode="delete")
    assert collected == [5]  # one collect: the check's, of the keys 1000 to 1004
    lookup = t.timeline.last_completed().metadata.get("key_lookup") or {}
    assert bool(lookup.get("driver")) == (path == "driver")  # the path named was taken
    assert sorted(r["id"] for r in t.read().collect()) == [
        *range(100), *range(1005, 1010)]
