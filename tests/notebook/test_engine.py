"""``Evo.engine``: ``%evo read`` and the timeline's preview read with the Arrow reader ('auto',
'arrow') or Spark ('spark'), and show the same preview either way: same columns, rows in key
order, limit, HTML and text, on evolved copy-on-write and merge-on-read tables, as of every
commit, in each commit's schema and in the latest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from pyspark.sql import DataFrame
from traitlets import TraitError

import evonb
from evonb.notebook.config import Evo
from evonb.notebook.preview import Preview
from evonb.notebook.widgets.timeline import TimelineWidget
from tests.arrow.test_arrow_reader import VARIANTS, _build

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module", params=list(VARIANTS))
def evolved(request: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An evolved table ``t`` (renames, drops, re-adds, nested fields, retypes, upserts,
    deletes, a compaction) alone in a warehouse folder."""
    return _build(spark, tmp_path_factory.mktemp(request.param) / "t", *VARIANTS[request.param])


def _engine(ip: Any, engine: str) -> None:
    ip.run_line_magic("config", f"Evo.engine = {engine!r}")


def _same(a: Preview, b: Preview) -> None:
    assert list(a.pandas.columns) == list(b.pandas.columns)
    assert a.more == b.more
    assert a.caption == b.caption
    assert repr(a) == repr(b)
    assert a._repr_html_() == b._repr_html_()


def test_engine_setting_is_checked() -> None:
    config = Evo()
    assert config.engine == "auto"
    with pytest.raises(TraitError, match="'auto', 'arrow', 'spark', not 'jvm'"):
        config.engine = "jvm"
    assert config.engine == "auto"
    config.engine = "spark"
    assert not config.reads_with_arrow()
    config.engine = "arrow"
    assert config.reads_with_arrow() and config.reads_with_arrow(spark_dataframe=True)
    config.engine = "auto"
    assert config.reads_with_arrow() and not config.reads_with_arrow(spark_dataframe=True)


def test_timeline_previews_are_the_same_with_either_engine(evolved: Any) -> None:
    arrow = TimelineWidget(evolved, preview_rows=5, engine="arrow")
    spark = TimelineWidget(evolved, preview_rows=5, engine="spark")
    compared = 0
    for commit in evolved.history():
        for mode in ("commit", "latest"):
            a, s = arrow.preview(commit, mode), spark.preview(commit, mode)
            assert isinstance(a, Preview) and isinstance(s, Preview), (a, s)
            _same(a, s)
            assert a.df is None and isinstance(s.df, DataFrame)
            compared += 1
    assert compared == 2 * len(evolved.history()) >= 20


def test_read_previews_are_the_same_with_either_engine(ip: Any, evo: Any, evolved: Any
                                                       ) -> None:
    ip.run_line_magic("config", f"Evo.warehouse = {str(evolved.root.parent)!r}")
    history = evolved.history()
    first, middle = history[1].instant, history[len(history) // 2].instant
    lines = ["read t", "read t --limit 3", "read t --limit 0", "read t --limit 100",
             f"read t as of {middle}", f"read t as of {middle} schema latest",
             f"read t as of {first} --limit 2", "read t --columns qty,id --limit 4",
             f"read t --since {first}",
             f"read t --since {first} --until {middle} --columns id,price",
             f"read t schema {first}"]
    for line in lines:
        _engine(ip, "spark")
        s = evo(line)
        _engine(ip, "auto")
        a = evo(line)
        _engine(ip, "arrow")
        _same(a, evo(line))
        _same(a, s)
    _engine(ip, "spark")
    s = evo("read t --columns label,price")  # no key: the same rows, in no set order
    _engine(ip, "arrow")
    a = evo("read t --columns label,price")
    assert sorted(map(str, a.shown().values.tolist())) == \
        sorted(map(str, s.shown().values.tolist()))
    shown = evo("read t --limit 3")
    assert len(shown.pandas) == 3 and shown.more
    assert list(shown.pandas["id"]) == sorted(shown.pandas["id"])


def test_arrow_reads_give_pandas_and_auto_gives_spark_for_to(ip: Any, evo: Any, trips: Any
                                                            ) -> None:
    _engine(ip, "arrow")
    preview = evo("read trips --to rows")
    assert isinstance(ip.user_ns["rows"], pd.DataFrame)
    assert sorted(ip.user_ns["rows"]["trip_id"]) == [1, 2, 3]
    assert "the pandas DataFrame is in 'rows'" in preview.caption
    _engine(ip, "auto")
    preview = evo("read trips --to frame --limit 1")
    assert isinstance(ip.user_ns["frame"], DataFrame)
    assert ip.user_ns["frame"].count() == 3
    assert preview.rows[0]["rider"] == "alice" and preview.more


def test_keyless_previews_hold_the_same_rows(ip: Any, evo: Any, spark: Any,
                                             warehouse: Path) -> None:
    t = evonb.create_table(warehouse / "events", "kind string, n int")
    t.write(spark.createDataFrame([("a", 1), ("b", None), ("c", 3)], "kind string, n int"))
    t.alter("ALTER TABLE events RENAME COLUMN n TO amount")
    _engine(ip, "spark")
    s = evo("read events")
    _engine(ip, "arrow")
    a = evo("read events")
    assert sorted(map(str, a.shown().values.tolist())) == \
        sorted(map(str, s.shown().values.tolist()))
    assert list(a.pandas.columns) == ["kind", "amount"]
    assert not a.more and len(evo("read events --limit 2").pandas) == 2


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_arrow_and_spark_reads_fail_with_the_same_errors(ip: Any, evo: Any, trips: Any,
                                                         engine: str) -> None:
    _engine(ip, engine)
    with pytest.raises(UsageError) as column:
        evo("read trips --columns ridr")
    assert "ridr" in str(column.value) and "rider" in str(column.value)
    with pytest.raises(UsageError) as commit:
        evo("read trips as of 20000101000000000")
    assert "20000101000000000" in str(commit.value)
    _engine(ip, "spark" if engine == "arrow" else "arrow")
    with pytest.raises(UsageError) as again:
        evo("read trips --columns ridr")
    assert str(again.value) == str(column.value)


def test_a_missing_file_is_shown_inside_the_timeline(trips: Any) -> None:
    (data,) = [f for f in trips.snapshot().files][:1]
    (trips.root / data.path).unlink()
    for engine in ("arrow", "spark"):
        widget = TimelineWidget(trips, engine=engine)
        assert data.path.rsplit("/", 1)[-1] in widget._preview.value
        assert "<table" not in widget._preview.value
    with pytest.raises(evonb.EvoError, match="engine must be 'arrow' or 'spark'"):
        TimelineWidget(trips, engine="jvm")  # type: ignore[arg-type]
