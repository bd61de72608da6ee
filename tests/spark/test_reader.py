"""Reading a snapshot's files (:mod:`evonb.spark.reader`): one scan for every schema version
(or one per version, unioned), each file read with its own version by field ID; the hidden
commit time; an empty frame with the query's columns; when the Parquet reader fills defaults."""

from __future__ import annotations

import pytest

import evonb
from evonb.spark.reader import empty_frame, plan_read, read_files, reader_fills_defaults
from evonb.table.layout import META_COMMIT_TIME

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def evolved(spark, tmp_path_factory):
    """A table with files of two schema versions: a renamed column and an added one (read
    only by the tests)."""
    t = evonb.create_table(tmp_path_factory.mktemp("reader") / "t", "id bigint, name string")
    first = t.write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string"))
    t.alter("ALTER TABLE t RENAME COLUMN name TO label; "
            "ALTER TABLE t ADD COLUMNS (n int DEFAULT 7)")
    second = t.write(spark.createDataFrame([(3, "c", 1)], "id long, label string, n int"))
    return t, first.instant, second.instant


def test_both_strategies_read_every_version_by_field_id(spark, evolved):
    t, first, second = evolved
    files = t.snapshot().files
    assert len({f.version for f in files}) == 2
    assert len(plan_read(t.root, files, t.schema, t.version)) == 1
    assert len(plan_read(t.root, files, t.schema, t.version, strategy="union")) == 2
    want = [(1, "a", 7, first), (2, "b", 7, first), (3, "c", 1, second)]
    for strategy in ("merged", "union"):
        df = read_files(spark, t.root, files, t.schema, t.version, meta=True,
                        strategy=strategy)
        assert df.columns == ["id", "label", "n", META_COMMIT_TIME]
        assert sorted(tuple(r) for r in df.collect()) == want


def test_no_files_read_as_an_empty_frame_with_the_query_columns(spark, evolved):
    t, _, _ = evolved
    df = read_files(spark, t.root, [], t.schema, t.version, meta=True, with_file=True,
                    with_position=True)
    assert df.columns == ["id", "label", "n", META_COMMIT_TIME, "_evo_file", "_evo_pos"]
    assert df.count() == 0
    assert empty_frame(spark, t.schema).columns == ["id", "label", "n"]


def test_the_reader_fills_defaults_only_with_every_vectorized_setting(spark):
    key = "spark.sql.parquet.enableNestedColumnVectorizedReader"
    before = spark.conf.get(key, None)
    try:
        spark.conf.set(key, "true")
        assert reader_fills_defaults(spark)
        spark.conf.set(key, "false")
        assert not reader_fills_defaults(spark)
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
