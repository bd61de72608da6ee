"""Failures the DDL fuzzing (tests/stress/test_fuzz_ddl.py) found, kept as regression tests."""

from __future__ import annotations

import pytest

import evonb
from evonb.errors import DataValidationError

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("ddl", "nulls"), [
    ("ALTER TABLE t ALTER COLUMN tags.element SET NOT NULL", 1),  # was an AnalysisException
    ("ALTER TABLE t ALTER COLUMN loc.lat SET NOT NULL", 0),  # a null struct is no violation
    ("ALTER TABLE t ALTER COLUMN loc.lon SET NOT NULL", 1),
    ("ALTER TABLE t ALTER COLUMN m.value.n SET NOT NULL", 1),
    ("ALTER TABLE t ALTER COLUMN m.value SET NOT NULL", 0),
])
def test_set_not_null_on_nested_fields_counts_nulls(spark, warehouse, ddl: str, nulls: int) -> None:
    t = evonb.create_table(warehouse / "t", "id bigint not null, tags array<string>, "
                           "loc struct<lat:double, lon:double>, m map<string, struct<n:int>>",
                           primary_key="id")
    t.write(spark.createDataFrame([(1, ["a", None], None, {"k": {"n": None}}),
                                   (2, None, (1.0, None), None)], t.read().schema))
    if nulls:
        with pytest.raises(DataValidationError) as info:
            t.alter(ddl)
        assert info.value.count == nulls
    else:
        t.alter(ddl)
