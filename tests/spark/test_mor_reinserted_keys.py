"""A key deleted in a merge-on-read table keeps its row in its base file (a log block deletes
it); inserted again, the key gets a row in another base file. An upsert of that key must
write to the one file group where it is live: it used to write to both, and the deleted row
came back beside the live one (two rows of one key). Found by the model test. Each case runs
with the keys looked up by the driver and by Spark tasks, with Avro and Parquet blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

import evonb
from evonb.spark import mor
from evonb.spark.mor_driver import DRIVER_ROWS_PROPERTY

pytestmark = pytest.mark.spark

WAYS = [("driver", "avro"), ("spark", "avro"), ("driver", "parquet"), ("spark", "parquet")]


@pytest.fixture(params=WAYS, ids=[f"{a}-{b}" for a, b in WAYS])
def table(request, spark, tmp_path: Path):  # type: ignore[no-untyped-def]
    lookup, fmt = request.param
    return evonb.create_table(
        tmp_path / "t", "id bigint not null, v int", primary_key="id", table_type="mor",
        properties={DRIVER_ROWS_PROPERTY: "20000000" if lookup == "driver" else "0",
                    "evonb.mor.log_format": fmt})


def _rows(spark, rows):  # type: ignore[no-untyped-def]
    return spark.createDataFrame(rows, "id bigint, v int")


def _read(t) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:  # type: ignore[no-untyped-def]
    spark_rows = sorted((r.id, r.v) for r in t.read().collect())
    arrow_rows = sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist())
    return spark_rows, arrow_rows


def test_an_upsert_of_a_key_deleted_and_inserted_again_writes_it_once(spark, table) -> None:
    table.write(_rows(spark, [(1, 1), (2, 2)]))
    table.write(_rows(spark, [(2, 0)]), mode="delete")
    table.write(_rows(spark, [(2, 3)]))
    assert _read(table) == ([(1, 1), (2, 3)],) * 2
    table.write(_rows(spark, [(2, 4), (1, 5)]), mode="upsert")
    assert _read(table) == ([(1, 5), (2, 4)],) * 2
    table.write(_rows(spark, [(2, 6)]), mode="upsert")  # again, the live row in its group
    assert _read(table) == ([(1, 5), (2, 6)],) * 2
    table.compact()
    assert _read(table) == ([(1, 5), (2, 6)],) * 2


def test_a_key_deleted_in_every_group_comes_back_once(spark, table) -> None:
    table.write(_rows(spark, [(1, 1), (2, 2)]))
    for v in (3, 4):
        table.write(_rows(spark, [(2, 0)]), mode="delete")
        table.write(_rows(spark, [(2, v)]))  # a third base file holds key 2 at the end
    table.write(_rows(spark, [(2, 0)]), mode="delete")
    assert _read(table) == ([(1, 1)],) * 2
    holding = [f for f in table.snapshot().files if f.key_stats and f.key_stats[0][1] <= 2
               <= f.key_stats[0][2]]
    assert len(holding) == 3  # three base files hold a deleted row of key 2
    table.write(_rows(spark, [(2, 7)]), mode="upsert")
    assert _read(table) == ([(1, 1), (2, 7)],) * 2
    table.write(_rows(spark, [(2, 8)]), mode="upsert")
    assert _read(table) == ([(1, 1), (2, 8)],) * 2


def test_a_key_live_in_the_older_group_is_written_there(spark, table) -> None:
    """Deleted, inserted again in a second file, deleted there, and upserted: it comes back
    in one group; the next upsert finds it live in that group only."""
    table.write(_rows(spark, [(2, 2), (3, 3)]))
    table.write(_rows(spark, [(2, 0)]), mode="delete")
    table.write(_rows(spark, [(2, 4)]))
    table.write(_rows(spark, [(2, 0)]), mode="delete")
    table.write(_rows(spark, [(2, 5)]), mode="upsert")
    table.write(_rows(spark, [(2, 6), (3, 7)]), mode="upsert")
    assert _read(table) == ([(2, 6), (3, 7)],) * 2


def test_spark_tasks_look_for_keys_in_two_groups_only_when_ranges_overlap(
        spark, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The look for keys in two groups (a Spark job) runs only when the candidate base files'
    key ranges overlap: disjoint ranges cannot share a key."""
    looks: list[int] = []
    original = mor._live_matches_only

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        looks.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(mor, "_live_matches_only", counted)
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v int", primary_key="id",
                           table_type="mor", properties={DRIVER_ROWS_PROPERTY: "0"})
    t.write(_rows(spark, [(1, 1), (2, 2)]))
    t.write(_rows(spark, [(10, 10), (11, 11)]))  # a second base file, keys 10 to 11
    t.write(_rows(spark, [(2, 3), (10, 4)]), mode="upsert")  # both files are candidates
    assert _read(t) == ([(1, 1), (2, 3), (10, 4), (11, 11)],) * 2
    assert looks == []
    t.write(_rows(spark, [(2, 0)]), mode="delete")
    t.write(_rows(spark, [(2, 5)]))  # a third base file holds key 2: ranges overlap
    t.write(_rows(spark, [(2, 6), (11, 7)]), mode="upsert")
    assert _read(t) == ([(1, 1), (2, 6), (10, 4), (11, 7)],) * 2
    assert looks == [1]
