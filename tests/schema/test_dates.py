"""Dates over Spark's whole range (:mod:`evonb.schema.dates`) against Spark's own: the day
number of a date and the text Spark prints for it, years past 9999 and before 1 included."""

from __future__ import annotations

import random
from datetime import date

import pytest

from evonb.schema.dates import LAST_TIMESTAMP_DAY, civil, date_text, epoch_days

FIRST_DAY, LAST_DAY = -(1 << 31), (1 << 31) - 1


def _days() -> list[int]:
    """Day numbers across the whole range, its edges and the edges of years 0, 1 and 9999."""
    rng = random.Random(20261206)
    edges = [FIRST_DAY, LAST_DAY, 0, -1, -719528, -719529, -719162, -719163, 2932896, 2932897,
             LAST_TIMESTAMP_DAY, LAST_TIMESTAMP_DAY + 1, -LAST_TIMESTAMP_DAY,
             -LAST_TIMESTAMP_DAY - 1, 59220784]
    return edges + [rng.randint(FIRST_DAY, LAST_DAY) for _ in range(3000)] + [
        rng.randint(-800_000, 3_000_000) for _ in range(1000)]


@pytest.mark.spark
def test_day_numbers_print_and_parse_as_spark_does(spark):
    days = _days()
    rows = spark.createDataFrame([(n,) for n in days], "n int").selectExpr(
        "n", "CAST(date_from_unix_date(n) AS string) AS text",
        "unix_date(try_cast(CAST(date_from_unix_date(n) AS string) AS date)) AS back").collect()
    for r in rows:
        assert date_text(r["n"]) == r["text"], r
        year, month, day = civil(r["n"])
        # Spark reads back every date it prints but those of years past 7 digits' reach
        assert epoch_days(year, month, day) == r["n"]
        assert r["back"] in (r["n"], None)


def test_day_numbers_agree_with_python_dates_where_those_reach():
    epoch = date(1970, 1, 1).toordinal()
    for d in (date(1, 1, 1), date(9999, 12, 31), date(2000, 2, 29), date(1900, 3, 1),
              date(1969, 12, 31), date(2400, 2, 29)):
        n = d.toordinal() - epoch
        assert epoch_days(d.year, d.month, d.day) == n
        assert civil(n) == (d.year, d.month, d.day)
        assert date_text(n) == d.isoformat()


def test_dates_that_are_not_or_fall_outside_a_spark_date():
    assert epoch_days(2023, 2, 29) is None
    assert epoch_days(-100, 2, 29) is None  # -100 is not a leap year
    assert epoch_days(0, 2, 29) == -719528 + 59  # year 0 is one
    assert epoch_days(2024, 13, 1) is None and epoch_days(2024, 0, 1) is None
    assert epoch_days(5881580, 7, 11) == LAST_DAY and epoch_days(5881580, 7, 12) is None
    assert epoch_days(-5877641, 6, 23) == FIRST_DAY and epoch_days(-5877641, 6, 22) is None
    assert date_text(59220784) == "+164111-01-01" and date_text(-729389) == "-0027-01-01"
