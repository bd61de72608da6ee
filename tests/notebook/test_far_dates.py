"""Dates and times past what pandas holds (a date past year 9999, a timestamp past 2262:
Spark's reach further) shown by ``%evo read``: both engines failed with ``ValueError: year
164111 is out of range`` when the preview made pandas rows. Such a column now shows the text
Spark prints for each value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evonb

pytestmark = pytest.mark.spark

FAR = 59220784
"""+164111-01-01 as days since 1970-01-01."""


def _previews(ip: Any, evo: Any, table: str) -> dict[str, Any]:
    """``%evo read <table>`` with each engine: its rows as pandas, by ``id``; both engines
    must render the same preview."""
    shown = {}
    for engine in ("arrow", "spark"):
        ip.run_line_magic("config", f"Evo.engine = {engine!r}")
        shown[engine] = evo(f"read {table}")
    assert shown["arrow"]._repr_html_() == shown["spark"]._repr_html_()
    return {engine: preview.pandas.set_index("id") for engine, preview in shown.items()}


def test_far_dates_and_times_show_as_spark_prints_them(ip: Any, evo: Any, spark: Any,
                                                        warehouse: Path) -> None:
    t = evonb.create_table(warehouse / "t", "id int not null, d date, at timestamp, "
                           "ntz timestamp_ntz, near date", primary_key="id")
    rows = spark.sql(
        f"SELECT 1 AS id, date_from_unix_date({FAR}) AS d, "
        "timestamp_micros(9000000000000000000 + 1500) AS at, "
        "CAST(timestamp_micros(-9000000000000000000) AS timestamp_ntz) AS ntz, "
        "DATE '2024-02-29' AS near "
        "UNION ALL SELECT 2, DATE '-0027-01-01', NULL, TIMESTAMP_NTZ '2024-01-01 10:00:00', NULL")
    t.write(rows)
    want = {r["id"]: r for r in t.read().selectExpr(
        "id", "CAST(d AS string) AS d", "CAST(at AS string) AS at",
        "CAST(ntz AS string) AS ntz").collect()}
    assert want[1]["d"] == "+164111-01-01" and want[2]["d"] == "-0027-01-01"
    assert want[1]["at"] == "+287168-08-24 16:00:00.0015"  # Spark prints to its last digit
    for engine, frame in _previews(ip, evo, "t").items():
        for i in (1, 2):
            assert frame.loc[i, "d"] == want[i]["d"], engine
            assert frame.loc[i, "ntz"] == want[i]["ntz"], engine
        assert frame.loc[1, "at"] == want[1]["at"], engine
        assert str(frame.loc[1, "near"]) == "2024-02-29", engine  # within reach: a date


def test_far_dates_inside_structs_lists_and_maps(ip: Any, evo: Any, spark: Any,
                                                 warehouse: Path) -> None:
    """The same inside a struct, a list and a map (the preview failed before): the field
    that holds such a value shows Spark's text for each of its values, in both engines."""
    t = evonb.create_table(warehouse / "nested", "id int not null, s struct<d: date, n: int>, "
                           "l array<date>, m map<string, timestamp_ntz>", primary_key="id")
    t.write(spark.sql(
        f"SELECT 1 AS id, named_struct('d', date_from_unix_date({FAR}), 'n', 7) AS s, "
        f"array(date_from_unix_date({FAR}), DATE '2024-02-29') AS l, "
        "map('far', CAST(timestamp_micros(-9000000000000000000) AS timestamp_ntz)) AS m "
        "UNION ALL SELECT 2, named_struct('d', DATE '2024-02-29', 'n', 8), array(), "
        "map('near', TIMESTAMP_NTZ '2024-01-01 10:00:00')"))
    want = {r["id"]: r for r in t.read().selectExpr(
        "id", "CAST(s.d AS string) AS d", "transform(l, x -> CAST(x AS string)) AS l",
        "transform_values(m, (k, v) -> CAST(v AS string)) AS m").collect()}
    assert want[1]["d"] == "+164111-01-01" and want[1]["m"]["far"] == "-283229-05-10 08:00:00"
    for engine, frame in _previews(ip, evo, "nested").items():
        for i in (1, 2):
            assert frame.loc[i, "s"] == {"d": want[i]["d"], "n": 6 + i}, engine
            assert list(frame.loc[i, "l"]) == list(want[i]["l"]), engine
            assert dict(frame.loc[i, "m"]) == dict(want[i]["m"]), engine
