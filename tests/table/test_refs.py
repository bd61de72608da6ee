"""Commit references in the Python API: ``@N``, ``latest``, instants and date-times, read by
the one parser the magics use too (:mod:`evonb.table.refs`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

import evonb
from evonb.errors import CommitNotFoundError
from evonb.table.instants import parse_instant
from evonb.table.refs import expand_ref, history_index, is_latest

pytestmark = pytest.mark.spark


@pytest.fixture
def people(spark, warehouse):
    """create, write (2 rows), rename ``name`` to ``who``, write (1 more row): 4 commits."""
    t = evonb.create_table(warehouse / "people", "id bigint not null, name string",
                           primary_key="id")
    t.write(spark.createDataFrame([(1, "ann"), (2, "bo")], "id bigint, name string"))
    t.alter("ALTER TABLE people RENAME COLUMN name TO who")
    t.write(spark.createDataFrame([(3, "cy")], "id bigint, who string"))
    return t


def _iso(completion: str) -> str:
    return parse_instant(completion).isoformat(sep=" ", timespec="milliseconds")


def test_the_parser_reads_positions_and_latest():
    assert history_index("@0") == 0 and history_index(" @-2 ") == -2
    assert history_index("@x") is None and history_index("20260101000000000") is None
    assert is_latest("latest") and is_latest(" LATEST ") and not is_latest("@-1")


def test_expand_ref_over_real_commits(people):
    commits = people.timeline.completed()
    assert expand_ref("@0", commits) == commits[0].instant
    assert expand_ref("@-1", commits) == commits[-1].instant
    assert expand_ref("latest", commits) == commits[-1].instant
    assert expand_ref("latest", commits, keep_latest=True) == "latest"
    assert expand_ref(" 2026-11-22 10:15 ", commits) == "2026-11-22 10:15"
    with pytest.raises(CommitNotFoundError, match="No such commit position: '@4'") as info:
        expand_ref("@4", commits, table_name="people")
    assert info.value.hint == "table 'people' has 4 commits (@0 .. @3, or @-1 for the latest)"


def test_diff_takes_positions_and_latest(people):
    renamed = ["renamed  2: name -> who"]
    assert [str(c) for c in people.diff("@0", "latest")] == renamed
    assert [str(c) for c in people.diff("@1")] == renamed
    assert [str(c) for c in people.diff("@1", "@-2")] == renamed
    assert not people.diff("@2", "@-1")
    assert [str(c) for c in people.diff("latest", "@0")] == ["renamed  2: who -> name"]


def test_commit_and_schema_at_take_every_form(people):
    commits = people.timeline.completed()
    for ref in ("@2", "@-2", commits[2].instant, _iso(commits[2].completion)):
        assert people.commit(ref).instant == commits[2].instant
    assert people.commit("latest").instant == commits[-1].instant
    assert people.commit(" @0 ").instant == commits[0].instant
    assert [f.name for f in people.schema_at("@1").fields] == ["id", "name"]
    assert [f.name for f in people.schema_at("latest").fields] == ["id", "who"]
    with pytest.raises(CommitNotFoundError, match="has 4 commits"):
        people.commit("@7")


def test_read_as_of_every_form(people):
    commits = people.timeline.completed()
    later = parse_instant(commits[1].completion) + timedelta(microseconds=500)
    for ref in ("@1", "@-3", commits[1].instant, _iso(commits[1].completion), later):
        df = people.read(as_of=ref)
        assert df.columns == ["id", "name"]
        assert sorted(tuple(r) for r in df.collect()) == [(1, "ann"), (2, "bo")]
    latest = people.read(as_of="latest")
    assert latest.columns == ["id", "who"]
    assert sorted(tuple(r) for r in latest.collect()) == [(1, "ann"), (2, "bo"), (3, "cy")]
    projected = people.read(as_of="@1", schema="@-1")
    assert projected.columns == ["id", "who"]
    assert people.read(as_of="@0").count() == 0


def test_incremental_reads_and_rollback_take_positions(people):
    rows = people.read_incremental("@1", "latest").collect()
    assert [tuple(r) for r in rows] == [(3, "cy")]
    assert [c.instant for c in people.incremental_commits("@0", "@1")] == [
        people.history()[1].instant]
    undone = people.history()[-1].instant
    commit = people.rollback("@-1")
    assert commit.metadata["rolled_back"] == [undone]
    assert people.read().count() == 2
