"""``%evo diff <table> <a> <b> --data [schema ...] [--to var]``: the rows added, removed and
changed between two commits, shown with counts and a sample; ``--to`` binds the whole diff as
a pandas DataFrame after an Arrow diff (``Evo.engine = 'arrow'``; test_data_diff_engines
covers the Spark one)."""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.core.error import UsageError

from evonb.arrow.data_diff import DataDiff

COLS = "trip_id bigint, passenger string, fare double, city string, ts bigint"


@pytest.fixture
def changed(evo, trips, spark):
    evo("alter table trips rename column rider to passenger")
    trips.write(spark.createDataFrame([(1, "alice", 13.0, "paris", 2),
                                       (4, "dave", 15.0, "rome", 2)], COLS), mode="upsert")
    trips.write(spark.createDataFrame([(2,)], "trip_id bigint"), mode="delete")
    return trips


def test_data_diff_counts_sample_and_to(evo, changed, ip):
    ip.run_line_magic("config", "Evo.engine = 'arrow'")  # --to: pandas (Spark under 'auto')
    diff = evo("diff trips @1 @-1 --data --to delta")
    assert isinstance(diff, DataDiff)
    assert diff.counts == {"added": 1, "removed": 1, "changed": 1}
    text = str(diff)
    assert "1 added, 1 removed, 1 changed" in text
    assert "~ trip_id=1: fare: 12.5 -> 13.0; ts: 1 -> 2" in text
    assert "- trip_id=2, passenger='bob'" in text
    assert "the whole diff is in 'delta' (a pandas DataFrame)" in text
    frame = ip.user_ns["delta"]
    assert isinstance(frame, pd.DataFrame)
    assert sorted(zip(frame["change"], frame["trip_id"], strict=True)) == [
        ("added", 4), ("changed", 1), ("removed", 2)]
    html = diff._repr_html_()
    assert "fare" in html and "13.0" in html


def test_data_diff_in_the_first_schema(evo, changed):
    diff = evo("diff trips @1 @-1 --data schema @1")
    assert diff.columns == ["trip_id", "rider", "fare", "city", "ts"]
    assert diff.removed.to_pylist()[0]["rider"] == "bob"


def test_data_diff_mistakes_are_one_line(evo, changed):
    with pytest.raises(UsageError, match="two commits") as bad:
        evo("diff trips @1 --data")
    with pytest.raises(UsageError) as bad:
        evo("diff trips @1 @9 --data")
    assert str(bad.value).splitlines()[0] == "No such commit position: '@9'"
    with pytest.raises(UsageError, match="go with --data"):
        evo("diff trips @1 @-1 --to x")
    with pytest.raises(UsageError, match="1x"):
        evo("diff trips @1 @-1 --data --to 1x")
