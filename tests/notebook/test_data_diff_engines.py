"""``t.diff_data(..., engine="spark")`` and ``%evo diff ... --data`` under ``Evo.engine``: Spark
computes the same added, removed and changed rows as the Arrow reader, on evolved copy-on-write
and merge-on-read tables (renames, drops and re-adds, retypes, nested fields and maps between
the compared commits) and on a keyless table with duplicate rows, nulls and NaN."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import DataFrame

import evonb
from evonb.arrow.data_diff import DataDiff
from tests.arrow.test_arrow_reader import VARIANTS, _build

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module", params=["cow", "mor-avro"])
def evolved(request: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _build(spark, tmp_path_factory.mktemp(request.param) / "t", *VARIANTS[request.param])


def _plain(value: Any) -> Any:
    """A value of ``to_pylist`` in a form where NaN equals NaN."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def _rows(diff: DataDiff, part: str, ordered: bool) -> list[Any]:
    rows = [_plain(r) for r in getattr(diff, part).to_pylist()]
    return rows if ordered else sorted(rows, key=repr)


def _same(arrow: DataDiff, spark: DataDiff) -> None:
    assert (arrow.key, arrow.before, arrow.after, arrow.title) == \
        (spark.key, spark.before, spark.after, spark.title)
    ordered = bool(arrow.key)
    for part in ("added", "removed", "changed"):
        assert getattr(arrow, part).schema == getattr(spark, part).schema, part
        assert _rows(arrow, part, ordered) == _rows(spark, part, ordered), part
    if ordered:
        assert str(arrow) == str(spark)
        assert arrow._repr_html_() == spark._repr_html_()


def test_both_engines_give_the_same_diff_of_an_evolved_table(evolved: Any) -> None:
    h = [c.instant for c in evolved.history() if c.action != "schema"]
    # Across the renames (h0 -> h1), the drops, re-adds and retypes (h1 -> h2), everything.
    pairs = [(h[0], h[1]), (h[1], h[2]), (h[2], h[-1]), (h[0], h[-1]), (h[-1], h[0])]
    seen = {"added": 0, "removed": 0, "changed": 0}
    for a, b in pairs:
        for schema in ("latest", a):
            arrow = evolved.diff_data(a, b, schema=schema)
            spark = evolved.diff_data(a, b, schema=schema, engine="spark")
            _same(arrow, spark)
            for kind, n in arrow.counts.items():
                seen[kind] += n
    assert all(n > 0 for n in seen.values()), seen


def test_a_changed_column_renamed_and_dropped_between_the_commits(spark: Any,
                                                                  warehouse: Path) -> None:
    t = evonb.create_table(warehouse / "k", "id bigint not null, a string, b double, "
                           "m map<string,int>", primary_key="id", table_type="mor")
    t.write(spark.createDataFrame([(1, "x", 1.0, {"p": 1}), (2, "y", float("nan"), None),
                                   (3, "z", None, {"q": 2})],
                                  "id bigint, a string, b double, m map<string,int>"), "upsert")
    a = t.history()[-1].instant
    t.alter("ALTER TABLE k RENAME COLUMN a TO label; ALTER TABLE k DROP COLUMN b")
    t.write(spark.createDataFrame([(1, "x", {"p": 1}), (2, "y2", None), (3, "z", {"q": 3}),
                                   (4, "w", None)],
                                  "id bigint, label string, m map<string,int>"), "upsert")
    b = t.history()[-1].instant
    for schema in ("latest", a):
        arrow, spark_diff = t.diff_data(a, b, schema=schema), \
            t.diff_data(a, b, schema=schema, engine="spark")
        _same(arrow, spark_diff)
    latest = t.diff_data(a, b, engine="spark")
    assert latest.columns == ["id", "label", "m"]
    assert [r["id"] for r in latest.added.to_pylist()] == [4]
    assert [(r["id"], r["changed"]) for r in latest.changed.to_pylist()] == [
        (2, ["label"]), (3, ["m"])]
    older = t.diff_data(a, b, schema=a, engine="spark")
    assert [(r["id"], r["changed"]) for r in older.changed.to_pylist()] == [
        (1, ["b"]), (2, ["a", "b"]), (3, ["m"])]  # b dropped: null after; 3 had none before
    frame = latest.to_spark()
    assert isinstance(frame, DataFrame)
    assert sorted((r["change"], r["id"]) for r in frame.collect()) == [
        ("added", 4), ("changed", 2), ("changed", 3)]
    with pytest.raises(evonb.EvoError, match="without Spark"):
        t.diff_data(a, b).to_spark()
    with pytest.raises(evonb.EvoError, match="'arrow' or 'spark'"):
        t.diff_data(a, b, engine="jvm")  # type: ignore[arg-type]


def test_keyless_tables_compare_as_multisets_on_both_engines(spark: Any,
                                                             warehouse: Path) -> None:
    cols = "kind string, n double, tags map<string,int>, s struct<x:int,y:string>"
    t = evonb.create_table(warehouse / "e", cols)
    rows = [("a", 1.0, {"k": 1}, (1, "p")), ("a", 1.0, {"k": 1}, (1, "p")),
            ("b", float("nan"), None, None), (None, None, {"j": 2}, (2, None)),
            ("c", 3.0, {"k": 1, "j": 2}, (3, "r"))]
    t.write(spark.createDataFrame(rows, cols))
    a = t.history()[-1].instant
    t.alter("ALTER TABLE e RENAME COLUMN kind TO label; ALTER TABLE e DROP COLUMN s")
    t.write(spark.createDataFrame([("a", 1.0, {"k": 1}), ("b", float("nan"), None),
                                   ("c", 3.0, {"j": 2, "k": 1})],
                                  "label string, n double, tags map<string,int>"))
    b = t.history()[-1].instant
    for schema in ("latest", a):
        _same(t.diff_data(a, b, schema=schema), t.diff_data(a, b, schema=schema,
                                                              engine="spark"))
    diff = t.diff_data(a, b, engine="spark")
    # b holds a's five rows and three more (a map compares entry by entry, in order).
    assert diff.counts == {"added": 3, "removed": 0, "changed": 0}
    assert sorted(_rows(diff, "added", False), key=repr) == sorted(
        [{"label": "a", "n": 1.0, "tags": [["k", 1]]},
         {"label": "b", "n": "NaN", "tags": None},
         {"label": "c", "n": 3.0, "tags": [["j", 2], ["k", 1]]}], key=repr)


def _records(frame: pd.DataFrame) -> list[list[Any]]:
    """The rows of a diff's DataFrame as plain values (lists for arrays, None for NaN)."""
    def plain(v: Any) -> Any:
        if hasattr(v, "tolist"):
            v = v.tolist()
        if isinstance(v, float) and math.isnan(v):
            return None
        return list(v) if isinstance(v, list | tuple) else v

    return sorted(([plain(v) for v in row] for row in frame.itertuples(index=False)), key=repr)


def test_the_magic_follows_the_engine(ip: Any, evo: Any, trips: Any, spark: Any) -> None:
    trips.write(spark.createDataFrame([(1, "alice", 13.0, "paris", 2),
                                       (4, "dave", 15.0, "rome", 2)],
                                      "trip_id bigint, rider string, fare double, city string, "
                                      "ts bigint"), mode="upsert")
    results = {}
    for engine in ("arrow", "auto", "spark"):
        ip.run_line_magic("config", f"Evo.engine = {engine!r}")
        results[engine] = evo(f"diff trips @1 @-1 --data --to d_{engine}")
    assert isinstance(ip.user_ns["d_arrow"], pd.DataFrame)
    assert results["arrow"].spark is None
    for engine in ("auto", "spark"):
        frame = ip.user_ns[f"d_{engine}"]
        assert isinstance(frame, DataFrame) and results[engine].spark is not None
        assert "(a Spark DataFrame)" in str(results[engine])
        assert list(frame.columns) == list(ip.user_ns["d_arrow"].columns)
        assert _records(frame.toPandas()) == _records(ip.user_ns["d_arrow"])
    ip.run_line_magic("config", "Evo.engine = 'auto'")
    widget = evo("diff trips @1 @-1 --data")
    assert widget.spark is None  # 'auto' without --to: the Arrow reader
    ip.run_line_magic("config", "Evo.engine = 'spark'")
    assert evo("diff trips @1 @-1 --data").spark is not None
    assert str(widget) == str(results["spark"]).replace(
        "\nthe whole diff is in 'd_spark' (a Spark DataFrame)", "")
