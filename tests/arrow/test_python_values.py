""":mod:`evonb.arrow.python_values`: dates and timestamps Python cannot hold (Spark's reach
further) as the text Spark prints, at any depth; every other value as ``to_pylist`` gives it.
Before, ``%evo diff --data``, the command line's row listing and nested previews failed with
pyarrow's ``ValueError: year 164111 is out of range``."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from evonb.arrow.data_diff import diff_tables
from evonb.arrow.python_values import (
    beyond_python_as_text,
    python_rows,
    text_beyond_python,
)
from evonb.schema.dates import MICROS_PER_DAY
from evonb.schema.dates import micros_text as timestamp_text

FAR = 59220784
"""+164111-01-01 as days since 1970-01-01."""
FAR_TEXT = "+164111-01-01"
NEAR = (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days


def _dates(*days: int | None) -> pa.Array:
    return pa.array(days, pa.int32()).cast(pa.date32())


def test_a_table_python_holds_is_left_as_it_is() -> None:
    t = pa.table({"d": _dates(NEAR, None),
                  "s": pa.array([{"x": dt.date(2024, 1, 1)}, None]),
                  "l": pa.array([[dt.date(2024, 1, 1)], None]),
                  "m": pa.array([[("k", dt.date(2024, 1, 1))], None],
                                pa.map_(pa.string(), pa.date32()))})
    assert python_rows(t) == t.to_pylist()
    for column in t.columns:  # not rebuilt
        assert beyond_python_as_text(column) is column
    assert text_beyond_python(t) is t


def test_far_dates_at_every_depth_read_as_spark_prints_them() -> None:
    struct = pa.StructArray.from_arrays([_dates(FAR, NEAR, None), pa.array([1, 2, 3])],
                                        names=["d", "n"], mask=pa.array([False, False, True]))
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()),
                                     _dates(FAR, None, NEAR),
                                     mask=pa.array([False, True, False]))
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 2, 2], pa.int32()), _dates(NEAR, FAR),
                                   _dates(-719162 - 10000, NEAR))
    t = pa.table({"top": _dates(-FAR, NEAR, None), "s": struct, "l": lists, "m": maps,
                  "plain": pa.array(["a", "b", "c"])})
    rows = python_rows(t)
    assert [r["top"] for r in rows] == ["-160171-01-01", "2024-02-29", None]
    assert rows[0]["s"] == {"d": FAR_TEXT, "n": 1}
    assert rows[1]["s"] == {"d": "2024-02-29", "n": 2}  # the whole field is text
    assert rows[2]["s"] is None
    assert [r["l"] for r in rows] == [[FAR_TEXT, None], None, ["2024-02-29"]]
    # a map's keys and values: each field decided on its own (the keys hold a far date,
    # the values a date before year 1)
    assert rows[0]["m"] == [("2024-02-29", "-0027-08-16")]
    assert rows[1]["m"] == [(FAR_TEXT, "2024-02-29")]
    assert rows[2]["m"] == []
    assert [r["plain"] for r in rows] == ["a", "b", "c"]


def test_a_slice_reads_its_own_rows() -> None:
    lists = pa.array([[1], [2, 3], [4]]).cast(pa.list_(pa.int32()))
    lists = pa.ListArray.from_arrays(lists.offsets, _dates(NEAR, FAR, FAR + 1, NEAR))
    part = lists.slice(1, 2)
    assert beyond_python_as_text(part).to_pylist() == [
        [FAR_TEXT, "+164111-01-02"], ["2024-02-29"]]


@pytest.mark.parametrize(("micros", "text"), [
    (9_000_000_000_000_000_000 + 1500, "+287168-08-24 16:00:00.0015"),
    (-9_000_000_000_000_000_000, "-283229-05-10 08:00:00"),
    (253_402_300_800 * 1_000_000, "+10000-01-01 00:00:00"),
])
def test_far_timestamps_as_spark_prints_them(micros: int, text: str) -> None:
    assert timestamp_text(micros) == text
    naive = pa.array([micros, None], pa.timestamp("us"))
    assert beyond_python_as_text(naive).to_pylist() == [text, None]


def test_a_zoned_timestamp_as_its_wall_clock_time() -> None:
    micros = 300_000 * 365 * MICROS_PER_DAY // 1  # past year 9999 (about year 302,000)
    micros = min(micros, 9_000_000_000_000_000_000)
    zoned = pa.array([micros], pa.timestamp("us", tz="Asia/Tokyo"))
    utc = pa.array([micros], pa.timestamp("us"))
    # Tokyo's wall clock is 9 hours ahead of UTC (no daylight saving time)
    assert beyond_python_as_text(zoned).to_pylist() == [
        timestamp_text(micros + 9 * 3600 * 1_000_000)]
    assert beyond_python_as_text(utc).to_pylist() == [timestamp_text(micros)]


def test_a_data_diff_keyed_by_far_dates_compares_them_as_dates() -> None:
    before = pa.table({"k": _dates(FAR, NEAR, FAR + 1), "v": _dates(NEAR, FAR, NEAR)})
    after = pa.table({"k": _dates(FAR, NEAR, FAR + 2), "v": _dates(FAR, FAR, NEAR)})
    diff = diff_tables(before, after, ["k"])
    assert diff.counts == {"added": 1, "removed": 1, "changed": 1}
    # each column of the result decides on its own: a column without a far date holds dates
    leap_day = dt.date(2024, 2, 29)
    assert python_rows(diff.added) == [{"k": "+164111-01-03", "v": leap_day}]
    assert python_rows(diff.removed) == [{"k": "+164111-01-02", "v": leap_day}]
    assert f"~ k='+164111-01-01': v: {leap_day!r} -> '+164111-01-01'" in str(diff)
    frame = diff.to_pandas()
    assert list(frame["change"]) == ["added", "removed", "changed"]
    assert "+164111-01-03" in diff._repr_html_()
    # keyless: whole rows as multisets, a far date equal to itself
    keyless = diff_tables(before, after)
    assert keyless.counts == {"added": 2, "removed": 2, "changed": 0}
