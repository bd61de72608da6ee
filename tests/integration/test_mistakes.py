"""Mistakes through the Python API: each is one evonb error and leaves the table as it was.
Also tables at paths Spark would read as glob patterns."""

from __future__ import annotations

import pytest

import evonb

pytestmark = pytest.mark.spark

COLUMNS = "id bigint, v double, ts bigint"


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize("name", ["t[1]", "t]{a,b}*?["])
def test_a_table_at_a_path_with_glob_characters_reads_and_writes(spark, warehouse, name):
    """Spark takes read paths as glob patterns: ``[1]`` or ``{a,b}`` in the table's folder
    would match no file. Create, write, upsert into a merge-on-read table (a log block), read,
    time travel and compaction all work at such a path."""
    path = warehouse / name
    t = evonb.create_table(path, "id bigint NOT NULL, v double, ts bigint", primary_key="id",
                           precombine="ts", table_type="mor")
    first = t.write(spark.createDataFrame([(1, 1.0, 1), (2, 2.0, 1)], COLUMNS), mode="upsert")
    second = t.write(spark.createDataFrame([(1, 5.0, 2), (3, 3.0, 2)], COLUMNS), mode="upsert")
    assert second.action == "deltacommit"
    t = evonb.open_table(path)
    assert _rows(t.read()) == [(1, 5.0, 2), (2, 2.0, 1), (3, 3.0, 2)]
    assert _rows(t.read(as_of=first.instant)) == [(1, 1.0, 1), (2, 2.0, 1)]
    compaction = t.compact()
    assert compaction is not None and compaction.action == "compaction"
    assert _rows(t.read()) == [(1, 5.0, 2), (2, 2.0, 1), (3, 3.0, 2)]
    assert _rows(t.read(as_of=second.instant)) == [(1, 5.0, 2), (2, 2.0, 1), (3, 3.0, 2)]


def test_a_partitioned_copy_on_write_table_at_a_glob_path(spark, warehouse):
    t = evonb.create_table(warehouse / "p[0-9]", "id bigint NOT NULL, city string, ts bigint",
                           primary_key="id", precombine="ts", partition_by="city")
    t.write(spark.createDataFrame([(1, "paris", 1), (2, "oslo", 1)], "id bigint, city string, "
                                  "ts bigint"), mode="upsert")
    t.write(spark.createDataFrame([(2, "oslo", 2)], "id bigint, city string, ts bigint"),
            mode="upsert")
    assert _rows(t.read()) == [(1, "paris", 1), (2, "oslo", 2)]
