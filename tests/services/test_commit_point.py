"""A service interrupted after its commit point (the completed state is written) keeps its
commit: the files it wrote stay, and the table reads and checks clean."""

from __future__ import annotations

from typing import Any

import pytest

import evonb
from evonb.table.check import check_table


def _interrupt_after_complete(table: Any) -> None:
    original = table.timeline.complete

    def complete_then_interrupt(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)
        raise KeyboardInterrupt

    table.timeline.complete = complete_then_interrupt


def _rows(table: Any) -> list[tuple]:
    return sorted(tuple(r) for r in evonb.open_table(table.path).read().collect())


def test_compaction_interrupted_after_its_commit_keeps_it(spark, warehouse):
    t = evonb.create_table(warehouse / "m", "id int not null, v string", primary_key="id",
                           table_type="mor")
    t.write(spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string"))
    t.write(spark.createDataFrame([(2, "B")], "id int, v string"), "upsert")
    _interrupt_after_complete(t)
    with pytest.raises(KeyboardInterrupt):
        t.compact()
    fresh = evonb.open_table(t.path)
    assert fresh.history()[-1].operation == "compact"
    assert not fresh.snapshot().logs
    assert _rows(t) == [(1, "a"), (2, "B")]
    assert check_table(t.path).ok


def test_rewrite_interrupted_after_its_commit_keeps_it(spark, warehouse):
    t = evonb.create_table(warehouse / "r", "id int, price double")
    t.write(spark.createDataFrame([(1, 2.0), (2, 3.0)], "id int, price double"))
    _interrupt_after_complete(t)
    with pytest.raises(KeyboardInterrupt):
        t.rewrite("ALTER TABLE r ALTER COLUMN price TYPE int")
    fresh = evonb.open_table(t.path)
    assert fresh.history()[-1].operation == "rewrite"
    assert str(fresh.schema.find("price").type) == "int"
    assert _rows(t) == [(1, 2), (2, 3)]
    assert check_table(t.path).ok
