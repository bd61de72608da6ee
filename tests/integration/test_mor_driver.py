"""Small merge-on-read deltas looked up and written by the driver (:mod:`evonb.spark.mor_driver`)
against the same deltas through Spark tasks: two implementations of one semantics, run on the
same table state and compared block by block.

Before every write the table is copied; the copy takes the Spark path
(``evonb.mor.driver_lookup.rows = 0``), the original the driver path, both get the same rows.
Then the log records each wrote for each base file (data, position, whether it beats the stored
row, delete marker), the base rows each block lists as replaced, the new base files' rows and
the snapshot read must be equal. The writes cover the precombine rule (wins, losses, ties,
nulls on either side), repeated keys in one batch, deletes of present and unknown keys,
re-inserts after a delete, keys stored twice, new keys, and writes after the key column is
renamed and widened, on string, composite, date, partitioned and position-less tables in
both block formats."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest

import evonb
from evonb.errors import EvoError
from evonb.spark.avro_log import (
    BASE_ROWS_KEY,
    DROP_KEY,
    block_header,
    decode_positions,
    read_log_blocks,
)
from evonb.table.layout import META_COMMIT_TIME
from tests.integration.table_copies import write_both

pytestmark = pytest.mark.spark

OFF = {"evonb.mor.driver_lookup.rows": "0"}



def _records(t, instant):
    """The log records ``instant`` wrote, per base file: a multiset of whole records (data,
    position, beats-the-stored-row flag, delete marker) without the commit time (the two
    tables' instants differ), the base rows listed as replaced and the base row count."""
    logs = [f for f in t.snapshot().logs if f.instant == instant]
    out: dict[str, Counter] = {}
    drops: dict[str, set[int]] = {}
    rows_of: dict[str, str] = {}
    groups: dict[tuple[str, str], list] = {}
    for log in logs:
        groups.setdefault((log.base, log.version), []).append(log)
    for (base, version), group in groups.items():
        schema, layout = t.version(version)
        records = read_log_blocks(t.spark, t.root, group, t.physical_query(schema, layout))
        counted = out.setdefault(base, Counter())
        counted.update(repr(tuple(r)) for r in records.drop(META_COMMIT_TIME).collect())
        for log in group:
            header = block_header(str(t.root / log.path))
            if DROP_KEY in header:
                drops.setdefault(base, set()).update(
                    int(p) for p in decode_positions(header[DROP_KEY]))
                rows_of[base] = header[BASE_ROWS_KEY]
    assert sum(sum(c.values()) for c in out.values()) == sum(f.rows for f in logs)
    return out, drops, rows_of


def _new_bases(t, instant):
    files = [f for f in t.snapshot().files if f.instant == instant]
    return sorted((f.rows, f.partition) for f in files)


def _read(t):
    return sorted(repr(tuple(r)) for r in t.read().collect())


def _same_write(t, copy_at, df, mode, *, driver=True):
    """Write ``df`` into ``t`` (driver path) and into a fresh copy of it (Spark path); assert
    both wrote the same records, listed the same base rows and read the same."""
    other, mine, theirs = write_both(t, copy_at, OFF, df, mode, driver=driver)
    got, expected = _records(t, mine.instant), _records(other, theirs.instant)
    assert got[0] == expected[0]  # records per base file
    assert got[1] == expected[1]  # base rows listed as replaced
    assert got[2] == expected[2]
    assert _new_bases(t, mine.instant) == _new_bases(other, theirs.instant) or (
        sum(r for r, _ in _new_bases(t, mine.instant))
        == sum(r for r, _ in _new_bases(other, theirs.instant)))
    assert _read(t) == _read(other)
    return got


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_driver_deltas_equal_spark_deltas(spark, tmp_path, fmt):
    """A bigint key with a precombine column: every case of the rule, both block formats."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor",
                           properties={"evonb.mor.log_format": fmt})
    t.write(spark.createDataFrame([(i, f"b{i}", 5 if i % 4 else None) for i in range(60)],
                                  "id long, v string, ts long").repartition(3))
    assert len(t.snapshot().files) >= 2
    copy = tmp_path / "spark_path"
    cols = "id long, v string, ts long"
    # wins (9), loses (1), ties (5), beats a null stored value (0), a null incoming value
    # against a set (5) and a null (8) stored one, repeated keys in the batch (the larger
    # precombine value wins, on a tie the later row), new keys
    got = _same_write(t, copy, spark.createDataFrame(
        [(1, "win", 9), (2, "lose", 1), (3, "tie", 5), (4, "over-null", 0), (5, "null", None),
         (8, "null-null", None), (10, "first", 7), (10, "second", 7), (11, "low", 2),
         (11, "high", 3), (500, "new", 1), (501, "new2", None)], cols), "upsert")
    assert sum(sum(c.values()) for c in got[0].values()) == 8  # one per stored key
    _same_write(t, copy, spark.createDataFrame([(6,), (7,), (99,), (6,)], "id long"), "delete")
    _same_write(t, copy, spark.createDataFrame(
        [(6, "back", 0), (1, "again", 9), (1, "again-later", 9), (500, "upd", 0)], cols),
        "upsert")
    # incoming rows whose precombine value is null (an upsert without the column is refused)
    _same_write(t, copy, spark.createDataFrame([(12, "no-ts", None), (13, "no-ts", None)],
                                               cols), "upsert")
    # only new keys (above every file's key range: nothing to look up, so no driver path),
    # and new keys inside the files' ranges (looked up, not found: new base rows, no block)
    _same_write(t, copy, spark.createDataFrame([(900, "n", 1), (901, "n", 1)], cols), "upsert",
                driver=False)
    t.write(spark.createDataFrame([(940, "far", 1), (1000, "far", 1)], cols), "upsert")
    got = _same_write(t, copy, spark.createDataFrame([(950, "n", 1), (951, "n", 1)], cols),
                      "upsert")
    assert got[0] == {}
    _same_write(t, copy, spark.createDataFrame([(7777,)], "id long"), "delete", driver=False)
    _same_write(t, copy, spark.createDataFrame([(952,)], "id long"), "delete")


def test_after_the_key_and_precombine_columns_are_renamed(spark, tmp_path):
    """Base files of an older schema version: the key and precombine columns renamed (keys
    cannot be retyped), another column widened from int to bigint, one dropped and one added
    with a default; the stored keys and precombine values are still found by field ID."""
    t = evonb.create_table(tmp_path / "t", "k int not null, v string, ts int, n int, gone string",
                           primary_key="k", precombine="ts", table_type="mor")
    t.write(spark.createDataFrame([(i, f"b{i}", i % 3, i, "x") for i in range(30)],
                                  "k int, v string, ts int, n int, gone string").repartition(2))
    copy = tmp_path / "spark_path"
    _same_write(t, copy, spark.createDataFrame([(1, "one", 2), (2, "two", 0)],
                                               "k int, v string, ts int"), "upsert")
    t.alter("ALTER TABLE t RENAME COLUMN k TO key")
    t.alter("ALTER TABLE t RENAME COLUMN ts TO version")
    t.alter("ALTER TABLE t ALTER COLUMN n TYPE bigint")
    t.alter("ALTER TABLE t DROP COLUMN gone")
    t.alter("ALTER TABLE t ADD COLUMN extra string DEFAULT 'd'")
    _same_write(t, copy, spark.createDataFrame(
        [(1, "one-again", 5, 2**40, "e"), (3, "three", 0, None, None), (29, "loses", 1, 1, "e"),
         (12345, "new", 1, 1, "e")],
        "key int, v string, version int, n long, extra string"), "upsert")
    _same_write(t, copy, spark.createDataFrame([(4,), (12345,)], "key int"), "delete")
    values = {r["key"]: (r["v"], r["n"]) for r in t.read().collect()}
    assert values[1] == ("one-again", 2**40) and values[29] == ("b29", 29)
    assert values[3] == ("three", None) and 4 not in values and 12345 not in values


def test_string_composite_and_partitioned_keys(spark, tmp_path):
    """A composite key of a string and a date (joined in Arrow, not sorted), in a table
    partitioned by a third column, without positions in its blocks."""
    t = evonb.create_table(
        tmp_path / "t", "name string not null, day date not null, part string, n int",
        primary_key=["name", "day"], precombine="n", table_type="mor",
        partition_by=["part"], properties={"evonb.mor.log.positions": "false",
                                           "evonb.mor.log_format": "parquet"})
    day = dt.date(2026, 1, 1)
    rows = [(f"n{i % 7}", day + dt.timedelta(days=i), "ab"[i % 2], i) for i in range(40)]
    t.write(spark.createDataFrame(rows, "name string, day date, part string, n int"))
    assert len({f.partition for f in t.snapshot().files}) == 2
    copy = tmp_path / "spark_path"
    cols = "name string, day date, part string, n int"
    got = _same_write(t, copy, spark.createDataFrame(
        [("n1", day + dt.timedelta(days=1), "b", 100), ("n2", day + dt.timedelta(days=2), "a", 0),
         ("n3", day, "a", 5), ("zz", day, "b", 1)], cols), "upsert")
    assert got[1] == {}  # no positions listed
    _same_write(t, copy, spark.createDataFrame([("n1", day + dt.timedelta(days=1))],
                                               "name string, day date"), "delete")


def test_keys_stored_twice_and_no_precombine_column(spark, tmp_path):
    """Keys inserted twice (``insert_duplicates = allow``): both stored rows get a record; a
    table without a precombine column: the incoming row always wins."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id",
                           table_type="mor",
                           properties={"evonb.write.insert_duplicates": "allow"})
    t.write(spark.createDataFrame([(i, "a") for i in range(10)], "id long, v string"))
    t.write(spark.createDataFrame([(i, "b") for i in range(5)], "id long, v string"))
    copy = tmp_path / "spark_path"
    got = _same_write(t, copy, spark.createDataFrame([(1, "x"), (2, "y"), (1, "z"), (20, "n")],
                                                     "id long, v string"), "upsert")
    assert sum(sum(c.values()) for c in got[0].values()) == 4  # keys 1 and 2, twice stored


def test_limits_and_float_keys_take_the_spark_path(spark, tmp_path):
    """Above either limit, or with a floating-point key (Spark and Arrow compare -0.0 and NaN
    differently), the delta goes through Spark tasks; the result is the same."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id",
                           table_type="mor")
    t.write(spark.createDataFrame([(i, "a") for i in range(20)], "id long, v string"))
    df = spark.createDataFrame([(1, "x"), (2, "y"), (3, "z")], "id long, v string")
    t.set_properties({"evonb.mor.driver_lookup.incoming_rows": "2"})
    _same_write(t, tmp_path / "c1", df, "upsert", driver=False)
    t.set_properties({"evonb.mor.driver_lookup.incoming_rows": "3",
                      "evonb.mor.driver_lookup.rows": "1"})  # the candidates hold more
    _same_write(t, tmp_path / "c2", df, "upsert", driver=False)
    t.set_properties({"evonb.mor.driver_lookup.rows": "20"})
    _same_write(t, tmp_path / "c3", df, "upsert", driver=True)
    f = evonb.create_table(tmp_path / "f", "x double not null, v string", primary_key="x",
                           table_type="mor")
    f.write(spark.createDataFrame([(0.0, "zero"), (1.5, "a")], "x double, v string"))
    _same_write(f, tmp_path / "c4", spark.createDataFrame([(-0.0, "minus"), (1.5, "b")],
                                                          "x double, v string"), "upsert",
                driver=False)
    with pytest.raises(EvoError, match=r"driver_lookup\.rows"):
        t.set_properties({"evonb.mor.driver_lookup.rows": "-1"})


def test_a_truncated_base_file_fails_the_write_and_leaves_nothing(spark, tmp_path):
    """The driver reads the candidate base files itself: a truncated one is an evonb error
    naming it, and the table is as it was (no block left behind)."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id",
                           table_type="mor")
    t.write(spark.createDataFrame([(i, "a") for i in range(20)], "id long, v string"))
    before = sorted(p.name for p in t.root.rglob("*") if p.is_file() and ".evo" not in p.parts)
    base = t.root / t.snapshot().files[0].path
    base.write_bytes(base.read_bytes()[:-40])
    with pytest.raises(EvoError, match=base.name):
        t.write(spark.createDataFrame([(1, "x")], "id long, v string"), "upsert")
    after = sorted(p.name for p in t.root.rglob("*") if p.is_file() and ".evo" not in p.parts)
    assert after == before
    assert len(t.timeline.completed()) == 2  # create and the first write
