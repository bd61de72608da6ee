"""Copy-on-write upserts and deletes into a table in a bucket, rewritten by the driver
(:mod:`evonb.spark.cow_driver`), against the same writes through Spark and evonb's Python
workers (``evonb.write.driver_rewrite.bytes = 0``) into a twin table: after every write both
read the same rows, by Spark and by the JVM-free reader, and the driver's files pass the deep
check."""

from __future__ import annotations

from typing import Any

import pytest

import evonb
from evonb.table.check import check_table

pytestmark = pytest.mark.spark

COLS = "id long, v string, ts long, s struct<a:int,b:string>"


def _rows(t: Any) -> list[str]:
    spark_rows = sorted(repr(tuple(r.asDict(recursive=True).values()))
                        for r in t.read().collect())
    arrow_rows = sorted(repr(tuple(r.values())) for r in t.to_arrow().to_pylist())
    assert spark_rows == arrow_rows
    return spark_rows


def test_driver_rewrites_in_a_bucket_equal_the_workers(spark: Any, bucket: str) -> None:
    tables = {}
    for driver in (True, False):
        t = evonb.create_table(
            f"s3://{bucket}/t{int(driver)}",
            "id bigint not null, v string, ts bigint, s struct<a:int, b:string>",
            primary_key="id", precombine="ts",
            properties={"evonb.write.target.file.bytes": "0"}
            | ({} if driver else {"evonb.write.driver_rewrite.bytes": "0"}))
        t.write(spark.createDataFrame(
            [(i, f"b{i}", 5 if i % 4 else None, (i, f"n{i}")) for i in range(60)],
            COLS).repartition(3))
        tables[driver] = t

    def both(df: Any, mode: str) -> None:
        for driver, t in tables.items():
            t.write(spark.createDataFrame(df.toArrow()), mode)  # a frame Spark can size
            lookup = t.timeline.last_completed().metadata.get("key_lookup") or {}
            assert bool(lookup.get("driver")) == driver, lookup
        assert _rows(tables[True]) == _rows(tables[False])

    # the precombine rule: a win, a loss, a tie, nulls either side; a repeated key; new keys
    both(spark.createDataFrame([(1, "win", 9, (1, "x")), (2, "lose", 1, (2, "y")),
                                (3, "tie", 5, None), (4, "null-in", None, (4, "z")),
                                (5, "dup-a", 7, (5, "a")), (5, "dup-b", 8, (5, "b")),
                                (100, "new", 1, (100, "n"))]
                               + [(i, f"even{i}", 10, (-i, None)) for i in range(10, 60, 2)],
                               COLS), "upsert")
    # after a rename of the value column and of a struct member (read by field ID)
    renamed = "id long, label string, ts long, s struct<a:int,c:string>"
    for t in tables.values():
        t.alter("ALTER TABLE t RENAME COLUMN v TO label")
        t.alter("ALTER TABLE t RENAME COLUMN s.b TO c")
    both(spark.createDataFrame([(6, "after-rename", 20, (6, "r")), (101, "new2", 1, None)],
                               renamed), "upsert")
    both(spark.createDataFrame([(7, "c-member", 21, (7, "c"))], renamed), "upsert")
    # deletes: present, unknown and repeated keys
    both(spark.createDataFrame([(8,), (9,), (9,), (555,)], "id long"), "delete")
    got = {r["id"]: r for r in tables[True].read().collect()}
    assert got[1]["label"] == "win" and got[2]["label"] == "b2" and got[5]["label"] == "dup-b"
    assert all(got[i]["label"] == f"even{i}" and got[i]["s"]["a"] == -i for i in range(10, 60, 2))
    assert got[7]["s"]["c"] == "c" and 8 not in got and 9 not in got and got[101]["ts"] == 1
    for t in tables.values():
        report = check_table(t.root, deep=True)
        assert report.ok, report
