"""The Arrow reader's casts against Spark's for the type changes evonb allows in metadata
(and the narrowing casts of a read in an older schema): dates, timestamps, decimals, floats
read as text, text read as dates and decimals."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

import evonb
from tests.arrow.test_arrow_reader import _same

pytestmark = pytest.mark.spark

COLS = ("id bigint not null, d date, s string, f float, x double, dec decimal(5,2), "
        "ts timestamp, n int, t string")


@pytest.fixture(scope="module")
def casts(spark, tmp_path_factory):
    t = evonb.create_table(tmp_path_factory.mktemp("casts") / "t", COLS, primary_key="id")
    rows = [
        (1, dt.date(2024, 2, 29), "2024-03-01", 1.1, 1e7, Decimal("1.25"),
         dt.datetime(2024, 1, 1, 12, 30), 7, "12.5"),
        (2, dt.date(1969, 12, 31), " 2024-3-1T10:00 ", 123.456, 1.0e-4, Decimal("-999.99"),
         dt.datetime(1970, 1, 1), -2147483648, "abc"),
        (3, None, "not a date", float("nan"), 123456789.123456, None, None, None, "1e2"),
        (4, dt.date(2000, 1, 1), "2024", -0.0, 2.5e-7, Decimal("0.01"),
         dt.datetime(2030, 6, 1, 0, 0, 1), 2147483647, " 42 "),
    ]
    t.write(spark.createDataFrame(rows, COLS.replace(" not null", "")))
    t.alter("ALTER TABLE t ALTER COLUMN d TYPE timestamp_ntz; "
            "ALTER TABLE t ALTER COLUMN s TYPE date; ALTER TABLE t ALTER COLUMN f TYPE string; "
            "ALTER TABLE t ALTER COLUMN x TYPE decimal(20,4); "
            "ALTER TABLE t ALTER COLUMN dec TYPE decimal(7,3); "
            "ALTER TABLE t ALTER COLUMN n TYPE decimal(12,1); "
            "ALTER TABLE t ALTER COLUMN t TYPE decimal(6,2)")
    t.alter("ALTER TABLE t ALTER COLUMN x TYPE string; ALTER TABLE t ALTER COLUMN dec TYPE string")
    return t


def test_latest_schema(casts):
    _same(casts.to_arrow(), casts.read().toArrow())


def test_every_schema(casts):
    for c in casts.history():
        _same(casts.to_arrow(schema=c.instant), casts.read(schema=c.instant).toArrow())


def test_empty_table(spark, tmp_path):
    t = evonb.create_table(tmp_path / "e", "id bigint, tags array<string>")
    got = t.to_arrow()
    assert got.num_rows == 0 and got.column_names == ["id", "tags"]
    assert got.schema.field("tags").type == pa.list_(pa.field("element", pa.string()))
