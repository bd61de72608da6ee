"""An operation uses the table's properties as they were when it started (``config_held``), and
a schema version, written once, is read once per table object: a write in a bucket makes no
request for them after its first look (``tests/objectstore/test_write_requests.py`` counts
them); here, that what a write sees is still right when another table object changes the
table meanwhile."""

from __future__ import annotations

from typing import Any

import pytest

import evonb
from tests.concurrency.test_completion_order import during_next_start

INLINE = "evonb.compaction.inline.every"


def _table(spark: Any, where: Any, **kw: Any) -> Any:
    t = evonb.create_table(where, "id bigint not null, ts bigint, v string", primary_key="id",
                           precombine="ts", **kw)
    t.write(spark.sql("select id, 0L ts, concat('v', id) v from range(4)"))
    return t


def test_inside_a_hold_the_config_is_the_one_looked_at_first(tmp_path) -> None:
    t = evonb.create_table(tmp_path / "t", "id bigint not null", primary_key="id")
    other = evonb.open_table(t.path)
    with t.config_held():
        assert t.properties.get("k") is None
        other.set_properties({"k": "other"})
        assert t.properties.get("k") is None  # held: what the operation started with
        t.set_properties({"mine": "1"})  # a change this object makes is seen at once
        assert t.properties.get("mine") == "1"
        assert t.properties.get("k") == "other"  # set_properties read the file afresh
        other.set_properties({"k": "later"})
        with t.config_held():  # nested: the outer hold goes on
            assert t.properties.get("k") == "other"
        assert t.properties.get("k") == "other"
    assert t.properties.get("k") == "later"  # after the hold: the file as it is now
    assert t.timeline.archive_keep() == 100  # the timeline's settings come from the table
    other.set_properties({"evonb.timeline.archive.keep": "7"})
    assert t.timeline.archive_keep() == 7


@pytest.mark.spark
def test_a_property_set_during_a_write_is_used_by_the_next_write(spark, warehouse) -> None:
    """Another table object turns inline compaction on while a merge-on-read upsert runs:
    that upsert does not compact (it started before), the next one does."""
    t = _table(spark, warehouse / "t", table_type="mor")
    other = evonb.open_table(t.path)
    during_next_start(t, lambda: other.set_properties({INLINE: "1"}))
    t.write(spark.sql("select 1L id, 1L ts, 'a' v"), mode="upsert")
    assert [c.action for c in t.history()][-1] == "deltacommit"
    assert t.properties[INLINE] == "1"
    t.write(spark.sql("select 2L id, 1L ts, 'b' v"), mode="upsert")
    assert [c.action for c in t.history()][-2:] == ["deltacommit", "compaction"]
    got = sorted((r["id"], r["v"]) for r in t.read().collect())
    assert got == [(0, "v0"), (1, "a"), (2, "b"), (3, "v3")]


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_schema_version_rolled_back_elsewhere_is_not_the_schema(spark, warehouse,
                                                                   table_type) -> None:
    """A table object read a schema version; another object rolls its commit back (the
    version file is removed): the first object's schema, reads and next write are those of
    the version before, and the write's new column gets a version of its own."""
    t = _table(spark, warehouse / "t", table_type=table_type)
    t.alter("ALTER TABLE t ADD COLUMN gone int DEFAULT 5")
    gone = t.schema.version_id
    assert "gone" in t.schema.paths()  # read (and kept) by this object
    evonb.open_table(t.path).rollback()
    assert gone not in t.schema_store.versions()
    assert "gone" not in t.schema.paths() and t.schema.version_id != gone
    assert [f.name for f in t.read().schema.fields] == ["id", "ts", "v"]
    t.write(spark.sql("select 9L id, 1L ts, 'n' v, 'x' extra"), mode="upsert")
    assert [f.name for f in t.read().schema.fields] == ["id", "ts", "v", "extra"]
    assert t.schema.version_id != gone
    got = sorted((r["id"], r["extra"]) for r in evonb.open_table(t.path).read().collect())
    assert got == [(0, None), (1, None), (2, None), (3, None), (9, "x")]
