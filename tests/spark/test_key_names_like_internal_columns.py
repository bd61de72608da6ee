"""Record keys named like the columns a write computes beside them (``d``, ``n``, ``count``).

A MERGE, UPDATE or DELETE on a table keyed by a column named ``d``, ``i``, ``u``, ``m`` or
``n`` failed with ``[AMBIGUOUS_REFERENCE] Reference `d` is ambiguous``: the statement's
per-key tally named its counts so. An insert whose keys repeat, keyed by a column named
``count``, failed the same way instead of naming the repeated keys. Found while testing
keys that are dates past year 9999 (``tests/spark/test_dates_past_year_9999.py``)."""

from __future__ import annotations

from typing import Any

import pytest

import evonb
from evonb.errors import DataValidationError
from evonb.spark.sql_writes import execute

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("keys", [["d"], ["n", "i"], ["u", "m"], ["count"]])
def test_statements_on_keys_named_like_a_tally(spark: Any, tmp_path: Any, keys: list[str]
                                               ) -> None:
    cols = ", ".join(f"`{k}` int" for k in keys) + ", v int"
    t = evonb.create_table(tmp_path / "t", cols.replace(" int,", " int not null,", len(keys)),
                           primary_key=keys)
    width = len(keys)
    row = lambda k, v: (k,) * width + (v,)  # noqa: E731
    t.write(spark.createDataFrame([row(1, 10), row(2, 20), row(3, 30)], cols))
    spark.createDataFrame([row(2, 200), row(4, 40)], cols).createOrReplaceTempView("incoming")
    on = " AND ".join(f"t.`{k}` = i.`{k}`" for k in keys)
    execute(t, f"MERGE INTO t USING incoming i ON {on} "
               "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", name="t")
    execute(t, f"UPDATE t SET v = v + 1 WHERE `{keys[0]}` = 1", name="t")
    execute(t, f"DELETE FROM t WHERE `{keys[0]}` = 3", name="t")
    assert sorted(tuple(r) for r in t.read().collect()) == [row(1, 11), row(2, 200), row(4, 40)]
    repeated = r"1 record keys .* more than once .* e\.g\. \(?5"
    with pytest.raises(DataValidationError, match=repeated):
        t.write(spark.createDataFrame([row(5, 1), row(5, 2)], cols))
    assert sorted(tuple(r) for r in t.read().collect()) == [row(1, 11), row(2, 200), row(4, 40)]
