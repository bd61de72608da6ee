"""What evonb believes Spark's Parquet readers widen by themselves, against what they do.

A type change that :func:`evonb.table.layout.natively_readable` accepts keeps the column's
physical name, so Spark reads the older files straight in the new type. For every metadata type
change among the primitive types and a spread of decimals (stored as Parquet ``INT32``,
``INT64`` and fixed-length bytes) that it accepts, a file of the old type holding the type's
extremes (as a column, a list element and a map value) is read in the new type by both of
Spark's readers (vectorized and row by row): each read must succeed and give what a cast of the
stored values gives. The type-chain model found
the claim wrong once (``tinyint -> decimal(5,2)``: the vectorized reader takes a Parquet
``INT32`` as a decimal of 10 integer digits or more only)."""

from __future__ import annotations

import pytest

from evonb.schema.promotion import can_change_type
from evonb.schema.type_text import parse_type
from evonb.table.layout import natively_readable

pytestmark = pytest.mark.spark

VALUES = {
    "tinyint": ["-128", "0", "127"],
    "smallint": ["-32768", "32767"],
    "int": ["-2147483648", "2147483647"],
    "bigint": ["-9223372036854775808", "9223372036854775807"],
    "float": ["1.5", "-3.25e10"],
    "double": ["-1.0e300"],
    "date": ["date'0001-01-01'", "date'2024-02-29'"],
    "decimal(5,2)": ["999.99", "-0.01"],
    "decimal(12,2)": ["9999999999.99"],
    "decimal(20,2)": ["-999999999999999999.99"],
}
TARGETS = ["smallint", "int", "bigint", "double", "timestamp_ntz", "decimal(3,0)",
           "decimal(5,2)", "decimal(9,0)", "decimal(10,0)", "decimal(12,2)", "decimal(19,0)",
           "decimal(20,0)", "decimal(22,2)", "decimal(38,10)"]


def _claimed() -> list[tuple[str, str]]:
    return [(old, new) for old in VALUES for new in TARGETS
            if old != new and can_change_type(parse_type(old), parse_type(new))
            and natively_readable(parse_type(old), parse_type(new))]


def test_every_claimed_native_widening_reads_as_a_cast(spark, tmp_path):
    claimed = _claimed()
    files = {}
    for old, values in VALUES.items():
        rows = " union all ".join(
            f"select {i}L as k, cast({v} as {old}) as v, array(cast({v} as {old}), null) as a, "
            f"map('x', cast({v} as {old})) as m" for i, v in enumerate([*values, "null"]))
        files[old] = str(tmp_path / old.replace("(", "_").replace(",", "_").replace(")", ""))
        spark.sql(rows).coalesce(1).write.parquet(files[old])
    wrong = []
    try:
        for old, new in claimed:
            expected = sorted(spark.read.parquet(files[old]).selectExpr(
                "k", f"cast(v as {new}) as v", f"cast(a as array<{new}>) as a",
                f"cast(m as map<string,{new}>) as m").collect())
            for vectorized in ("true", "false"):
                spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
                try:
                    got = sorted(spark.read.schema(
                        f"k bigint, v {new}, a array<{new}>, m map<string,{new}>")
                        .parquet(files[old]).collect())
                except Exception as exc:  # the read itself fails: the claim is wrong
                    got = type(exc).__name__
                if got != expected:
                    wrong.append((old, new, vectorized, got, expected))
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    assert not wrong, wrong
    assert len(claimed) >= 30
