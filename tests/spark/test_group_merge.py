"""Merging a file group with Arrow (:mod:`evonb.spark.group_merge`): the base rows the blocks
do not replace plus the winning log records, the same rows a snapshot read gives; a group
that cannot be merged exactly makes its bin unmergeable and leaves no file."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import evonb
from evonb.spark.group_merge import (
    UNMERGEABLE,
    GroupSpec,
    Merged,
    MergeLayout,
    merge_bin,
    merge_bins_in_tasks,
    merge_group,
    pack,
)
from evonb.spark.mor import file_groups, position_drops

pytestmark = pytest.mark.spark

COLS = "id long, v string, ts long"


@pytest.fixture(scope="module")
def group(spark, tmp_path_factory):
    """A merge-on-read table of one file group with an upsert and a delete logged, its
    group's spec and merge layout (read only by the tests)."""
    t = evonb.create_table(tmp_path_factory.mktemp("group") / "t",
                           "id bigint not null, v string, ts bigint", primary_key="id",
                           precombine="ts", table_type="mor")
    t.write(spark.createDataFrame([(i, f"b{i}", 5) for i in range(6)], COLS).coalesce(1))
    t.write(spark.createDataFrame([(1, "new", 9), (2, "old", 1)], COLS), "upsert")
    t.write(spark.createDataFrame([(4,)], "id long"), "delete")
    snap = t.snapshot()
    (base,) = snap.files
    drops = position_drops(t, snap)
    assert base.path in drops
    spec = GroupSpec(base=str(t.root / base.path),
                     logs=tuple(str(t.root / f.path) for f in file_groups(snap)[base.path]),
                     drops=drops[base.path])
    _, layout = t.version(t.schema.version_id)
    physical = t.physical_query(t.schema, layout)
    config = t.raw_config
    merge_layout = MergeLayout.of(physical, [layout.name(i) for i in config.primary_key_ids],
                                  layout.name(config.precombine_id), "UTC")
    names = [f.name for f in physical.fields]
    return t, spec, merge_layout, names


def _rows(table, names):
    return sorted(zip(*(table.column(n).to_pylist() for n in names), strict=True))


def test_a_merged_group_has_the_rows_of_a_snapshot_read(group, tmp_path):
    t, spec, layout, names = group
    merged, int96 = merge_group(spec, layout)
    assert not int96
    want = sorted(tuple(r) for r in t.read().collect())
    assert _rows(merged, names) == want
    assert want == [(0, "b0", 5), (1, "new", 9), (2, "b2", 5), (3, "b3", 5), (5, "b5", 5)]
    # written to one file with the base file's schema (field IDs included)
    done = merge_bin([spec], layout, str(tmp_path / "out.parquet"))
    out = done.out
    assert (done.rows, done.bytes, done.key_stats) == (5, Path(out).stat().st_size, None)
    assert pq.read_schema(out).equals(pq.read_schema(spec.base))
    assert _rows(pq.read_table(out), names) == want


def test_a_position_outside_the_file_makes_the_bin_unmergeable(group, spark, tmp_path):
    _, spec, layout, _ = group
    bad = GroupSpec(base=spec.base, logs=spec.logs, drops=[0, 6])
    out = tmp_path / "bad.parquet"
    assert merge_bin([spec, bad], layout, str(out)) == Merged(UNMERGEABLE, 0)
    assert not out.exists()
    # one task per bin, results in bin order
    outs = [str(tmp_path / "x.parquet"), str(tmp_path / "y.parquet")]
    unmergeable, merged = merge_bins_in_tasks(spark.sparkContext, [[bad], [spec]], layout, outs)
    assert unmergeable == Merged(UNMERGEABLE, 0)
    assert (merged.out, merged.rows) == (outs[1], 5)
    assert merge_bins_in_tasks(spark.sparkContext, [], layout, []) == []


def test_pack_puts_the_largest_first_into_the_lightest_bin():
    assert pack([4, 3, 3, 2], 2) == [[0, 3], [1, 2]]
    assert pack([1, 1, 1], 1) == [[0, 1, 2]]
    assert pack([7], 0) == [[0]]
