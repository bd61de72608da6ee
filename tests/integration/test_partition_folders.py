"""Partition folders: one spelling per value, whichever writer stores the file (Spark's
partitioned writer or evonb's Arrow writer) and whatever the session's time zone; and
``cluster(where=...)`` reads a timestamp folder as the instant it names."""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest

import evonb
from evonb.table.partition_folders import folder_value
from tests.spark.merge_paths import MERGE_PATHS
from tests.spark.partition_limits import holds_exactly, refused_in_each_mode, write_fitting

pytestmark = pytest.mark.spark

ZONE = "spark.sql.session.timeZone"
_rng = random.Random(20261206)
VALUES: dict[str, list[Any]] = {
    "timestamp": [datetime.datetime(2020, 1, 1, 5, 0, tzinfo=datetime.UTC),
                  datetime.datetime(2020, 1, 1, 0, 0, tzinfo=datetime.UTC),
                  datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=datetime.UTC),
                  datetime.datetime(2021, 11, 7, 5, 30, 0, 120_000, tzinfo=datetime.UTC),
                  datetime.datetime(2021, 11, 7, 6, 30, tzinfo=datetime.UTC), None],
    "timestamp_ntz": [datetime.datetime(2020, 1, 1, 5, 0, 0, 500_000),
                      datetime.datetime(1900, 2, 28, 23, 0, 1, 7), None],
    "double": [1e20, 0.1, -0.0, 100.0, 1e-4, 123.456, float("nan"), float("inf"), None,
               *(round(_rng.uniform(-1e6, 1e6), _rng.randint(0, 4)) for _ in range(12)),
               *(_rng.randint(-999, 999) * 10.0 ** _rng.randint(-9, 12) for _ in range(12))],
    "float": [0.1, 1e10, 2.5, -7.0, 3e-5, None],
    "decimal(10,3)": [Decimal("1.500"), Decimal("-0.001"), Decimal("0.000"), None],
    "string": ["a/b:c d%", "é€", "", "x=y?#", "{[]}^'\"*\\", None],
    "date": [datetime.date(2024, 1, 31), datetime.date(999, 1, 1), None],
    "boolean": [True, False, None],
    "int": [-3, 0, 2**31 - 1, None],
}


@contextmanager
def time_zone(spark: Any, zone: str) -> Iterator[None]:
    before = spark.conf.get(ZONE)
    spark.conf.set(ZONE, zone)
    try:
        yield
    finally:
        spark.conf.set(ZONE, before)


def folders(table: Any) -> set[str]:
    return {f.partition for f in table.snapshot().files}


def by_both_writers(spark: Any, tmp_path: Any, kind: str, zone: str,
                    write: Any) -> Iterator[tuple[str, Any]]:
    """A table partitioned by ``p`` of type ``kind`` per writer of rewrites (``cow-direct``:
    Spark's merge; ``cow-driver``: the Arrow writer on the driver), in session time zone
    ``zone``, written by ``write(table, tag)`` twice: tag ``first``, then ``again`` (every file
    rewritten by that path's merge). The zone stays set while the caller looks at a table."""
    with time_zone(spark, zone):
        for path in ("cow-direct", "cow-driver"):
            table_type, props = MERGE_PATHS[path]
            t = evonb.create_table(tmp_path / path, f"id bigint not null, p {kind}, v string",
                                   primary_key="id", partition_by="p", table_type=table_type,
                                   properties=props)
            for tag in ("first", "again"):
                write(t, tag)
            yield path, t


def write_all(spark: Any, table: Any, kind: str, tag: str) -> None:
    rows = [(i, v, tag) for i, v in enumerate(VALUES[kind])]
    table.write(spark.createDataFrame(rows, f"id bigint, p {kind}, v string"), mode="upsert")


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
@pytest.mark.parametrize("kind", sorted(VALUES))
def test_both_writers_spell_a_partition_value_alike(spark: Any, tmp_path: Any, kind: str,
                                                    zone: str) -> None:
    """The folders of the Spark writer (copy-on-write, Spark's merge) and of the Arrow
    writer on the driver (its rewrites) are the same set: each value's
    :func:`folder_value`, in any session time zone."""
    expected = {f"p={folder_value(v, single=kind == 'float')}" for v in VALUES[kind]}
    seen = {}
    for path, t in by_both_writers(spark, tmp_path, kind, zone,
                                   lambda t, tag: write_all(spark, t, kind, tag)):
        seen[path] = folders(t)
        got = sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist())
        assert got == [(i, "again") for i in range(len(VALUES[kind]))]
    assert seen["cow-direct"] == expected, seen["cow-direct"] ^ expected
    assert seen["cow-driver"] == expected, seen["cow-driver"] ^ expected


FAR_DAYS = [59_220_784, -59_220_784, 2_932_896, -719_529]
"""Days of dates Python cannot hold: +164111-01-01, -160171-01-01, +10000-01-01, 0000-12-31."""
FAR_MICROS = [253_402_300_800_000_000 + 123_000, -62_135_596_800_000_001, 2**62]
"""Microseconds of timestamps past Python's range: just after 9999 ends (UTC), just before
year 1 begins, and year 146138."""


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
@pytest.mark.parametrize("kind", ["date", "timestamp", "timestamp_ntz"])
def test_partition_values_past_year_9999(spark: Any, tmp_path: Any, kind: str,
                                         zone: str) -> None:
    """Dates and timestamps past year 9999 (or before year 1) as partition values: the Arrow
    writer of a copy-on-write rewrite on the driver failed with ``OverflowError: date value
    out of range`` (it spelled folders from Python dates). Now both writers spell them as
    Spark does (``p=+164111-01-01``), and both readers read the values back (compared as
    Spark's text: a date's, an instant's in UTC, a wall-clock time's)."""
    from pyspark.sql import functions as F

    from evonb.schema.dates import date_text, micros_text
    from evonb.spark.arrow_collect import key_list
    from evonb.spark.writer import utc_text
    from evonb.table.partition_folders import NULL_FOLDER, escape

    numbers = [*(FAR_DAYS if kind == "date" else FAR_MICROS), None]
    spell = date_text if kind == "date" else micros_text
    texts = [None if n is None else spell(n) for n in numbers]
    value = {"date": "date_from_unix_date(n)", "timestamp": "timestamp_micros(n)",
             "timestamp_ntz": "CAST(text AS timestamp_ntz)"}[kind]  # no time zone comes in
    as_text = utc_text("p") if kind == "timestamp" else F.col("p").cast("string")
    rows = spark.createDataFrame(list(zip(range(len(numbers)), numbers, texts, strict=True)),
                                 "id bigint, n bigint, text string")

    def write(t: Any, tag: str) -> None:
        t.write(rows.selectExpr("id", f"{value} AS p", f"'{tag}' AS v"), mode="upsert")

    seen = {}
    for path, t in by_both_writers(spark, tmp_path, kind, zone, write):
        seen[path] = folders(t)
        got = sorted(tuple(r) for r in t.read().select("id", as_text, "v").collect())
        assert got == [(i, text, "again") for i, text in enumerate(texts)], path
        table = t.to_arrow()
        arrow = sorted(zip(table.column("id").to_pylist(),
                           [None if n is None else spell(n) for n in key_list(table.column("p"))],
                           table.column("v").to_pylist(), strict=True))
        assert arrow == got, path
    expected = {f"p={NULL_FOLDER if text is None else escape(text)}" for text in texts}
    assert seen["cow-direct"] == expected, seen["cow-direct"] ^ expected
    assert seen["cow-driver"] == expected, seen["cow-driver"] ^ expected


def test_an_instant_has_one_folder_from_any_time_zone(spark: Any, tmp_path: Any) -> None:
    """Two instants five hours apart, written from UTC and from New York, have two folders
    named by their UTC times (Spark's writer alone would name both ``2020-01-01 00:00:00``),
    and ``cluster(where=...)`` picks the folder of the instant its predicate names, in the
    session's time zone."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, ts timestamp, v string",
                           primary_key="id", partition_by="ts",
                           properties=MERGE_PATHS["cow-direct"][1])

    def write(zone: str, key: int, wall_clock: str) -> None:
        with time_zone(spark, zone):
            t.write(spark.sql(f"select {key}L as id, timestamp'{wall_clock}' as ts, "
                              f"'{zone}' as v"), mode="insert")

    write("UTC", 1, "2020-01-01 05:00:00")  # 05:00 UTC
    write("America/New_York", 2, "2020-01-01 00:00:00")  # 05:00 UTC too
    write("UTC", 3, "2020-01-01 00:00:00")  # 00:00 UTC
    write("America/New_York", 4, "2019-12-31 19:00:00")  # 00:00 UTC too
    five, midnight = "ts=2020-01-01 05%3A00%3A00", "ts=2020-01-01 00%3A00%3A00"
    files = t.snapshot().files
    assert sorted(f.partition for f in files) == [midnight, midnight, five, five]
    with time_zone(spark, "America/New_York"):  # 00:00 in New York is 05:00 UTC
        commit = t.cluster(where="ts = timestamp'2020-01-01 00:00:00'")
    assert commit is not None
    assert sorted(commit.metadata["removed"]) == sorted(
        f.path for f in files if f.partition == five)
    after = t.snapshot().files
    assert sorted(f.partition for f in after) == [midnight, midnight, five]
    with time_zone(spark, "UTC"):
        t.cluster(where="ts = timestamp'2020-01-01 00:00:00'")
        assert sorted(f.partition for f in t.snapshot().files) == [midnight, five]
        rows = sorted(tuple(r) for r in t.read().selectExpr("id", "cast(ts as string)", "v")
                      .collect())
    five_utc, midnight_utc = "2020-01-01 05:00:00", "2020-01-01 00:00:00"
    assert rows == [(1, five_utc, "UTC"), (2, five_utc, "America/New_York"),
                    (3, midnight_utc, "UTC"), (4, midnight_utc, "America/New_York")]


@pytest.mark.parametrize("path", sorted(MERGE_PATHS))
def test_a_partition_value_too_long_for_a_folder_name_is_refused(spark: Any, tmp_path: Any,
                                                                 path: str) -> None:
    """A folder name takes at most 255 bytes: the column's name (or the staging folder's
    ``__evo_p0``, the longer), ``=`` and the value's escaped UTF-8. A value that fits is
    written and read back; one byte more is a ``DataValidationError`` naming the column, on
    every write path, and the table is unchanged (it was Spark's ``TASK_WRITE_FAILED`` trace,
    or an ``OSError``, before)."""
    table_type, props = MERGE_PATHS[path]
    t = evonb.create_table(tmp_path / "t", "id bigint not null, p string, v string",
                           primary_key="id", partition_by="p", table_type=table_type,
                           properties=props)
    room = 255 - len("__evo_p0=")  # 246 bytes
    fits = ["a" * room, "/" * 82, "é" * 123]
    too_long = ["a" * (room + 1), "/" * 82 + "a", "é" * 123 + "a"]
    write_fitting(spark, t, fits)
    commits = len(t.history())
    refused_in_each_mode(spark, t, too_long, r"Partition column 'p' has a value of 247 bytes .* "
                                             r"more than the 246 a partition folder leaves it")
    holds_exactly(t, fits)
    # after a rename the error names the column as users know it (its files keep "p")
    t.alter("ALTER TABLE t RENAME COLUMN p TO part")
    with pytest.raises(evonb.errors.DataValidationError,
                       match=r"Partition column 'part' has a value of 247 bytes") as err:
        t.write(spark.createDataFrame([(20, too_long[0], "x")], "id bigint, part string, v string"),
                mode="upsert")
    assert "derived from 'part'" in (err.value.hint or "")
    assert len(t.history()) == commits + 1


def test_a_partition_column_name_too_long_for_a_folder_is_refused_at_create(
        spark: Any, tmp_path: Any) -> None:
    """A partition column's folders must hold at least the null folder: a name of 228 bytes
    leaves ``=__HIVE_DEFAULT_PARTITION__`` exactly 255; one byte more is refused by
    ``create_table``, which leaves nothing behind (every write was refused before)."""
    name = "é" * 114  # 228 bytes
    t = evonb.create_table(tmp_path / "t", f"id bigint, `{name}` string", partition_by=name)
    t.write(spark.createDataFrame([(1, None), (2, "v")], f"id bigint, `{name}` string"))
    assert sorted((r["id"], r[name]) for r in t.to_arrow().to_pylist()) == [(1, None), (2, "v")]
    assert {f.partition for f in t.snapshot().files} == {f"{name}=__HIVE_DEFAULT_PARTITION__",
                                                         f"{name}=v"}
    with pytest.raises(evonb.errors.InvalidArgumentError,
                       match=r"has a name of 229 bytes: its folders.* even for a null value"):
        evonb.create_table(tmp_path / "u", f"id bigint, `{name}a` string", partition_by=name + "a")
    assert not (tmp_path / "u").exists()
