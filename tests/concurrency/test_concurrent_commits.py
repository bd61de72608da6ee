"""Two writers on one table, interleaved deterministically in one process.

Each table object has its own timeline; a hook on one writer's ``inflight`` step (its files are
written, it has not locked yet) lets the other commit first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import evonb
from evonb.errors import ConflictError, EvoError
from evonb.table.check import check_table
from evonb.table.conflicts import Operation
from tests.concurrency.helpers import data_files, metadata_digest
from tests.plugins import POLICIES, install

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, v string"


def rows(spark, *pairs: tuple[int, str]):
    """One partition, so each write makes one file group."""
    return spark.createDataFrame(list(pairs), SCHEMA).coalesce(1)


@pytest.fixture
def table(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint not null, v string", primary_key="id")
    t.write(rows(spark, (1, "a"), (2, "b")))  # file group A
    t.write(rows(spark, (3, "c"), (4, "d")))  # file group B
    return t


def during_next_commit(table, action: Callable[[], Any]) -> None:
    """Run ``action`` once ``table``'s next write has written its files, before it locks."""
    original = table.timeline.inflight

    def hooked(*args: Any, **kwargs: Any) -> Any:
        table.timeline.inflight = original
        action()
        return original(*args, **kwargs)

    table.timeline.inflight = hooked


def content(table) -> dict[int, Any]:
    return {r["id"]: r["v"] for r in table.read().collect()}


def test_same_file_group_the_later_write_fails_and_leaves_nothing(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    before = data_files(table.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.write(rows(spark, (1, "B")), "upsert")))
    with pytest.raises(ConflictError) as info:
        a.write(rows(spark, (2, "A")), "upsert")
    winner = won[0].instant
    assert info.value.winner == winner and winner in str(info.value)
    added = {f["path"] for f in table.timeline.get(winner).metadata["added"]}
    assert data_files(table.path) == before | added  # nothing of the loser is left
    assert not table.timeline.pending()
    assert content(evonb.open_table(table.path)) == {1: "B", 2: "b", 3: "c", 4: "d"}
    assert check_table(table.path).ok
    a.write(rows(spark, (2, "A")), "upsert")  # a retry succeeds
    assert content(evonb.open_table(table.path)) == {1: "B", 2: "A", 3: "c", 4: "d"}


def _both_commit_first_time(table, a, b_commits: list[Any], write: Callable[[], Any]) -> Any:
    """``write`` (by ``a``, which started first) commits on its first attempt although a commit
    with a later instant (``b_commits[0]``, made while it ran) completed first: completion
    order, not instant order, is the order of the table."""
    mine = write()
    theirs = b_commits[0]
    assert mine.instant < theirs.instant  # a started first ...
    assert mine.completion_time > theirs.completion_time  # ... and completed last
    t = evonb.open_table(table.path)
    assert [c.instant for c in t.history()[-2:]] == [theirs.instant, mine.instant]
    assert t.timeline.last_completed().instant == mine.instant
    assert not t.timeline.pending()
    assert check_table(table.path).ok
    return mine


def test_different_file_groups_both_commit(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.write(rows(spark, (3, "B")), "upsert")))
    _both_commit_first_time(table, a, won, lambda: a.write(rows(spark, (1, "A")), "upsert"))
    t = evonb.open_table(table.path)
    got = [(r["id"], r["v"]) for r in t.read().collect()]
    assert sorted(got) == [(1, "A"), (2, "b"), (3, "B"), (4, "d")]  # every row exactly once


def test_inserts_both_commit(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.write(rows(spark, (6, "B")))))
    _both_commit_first_time(table, a, won, lambda: a.write(rows(spark, (5, "A"))))
    got = sorted(r["id"] for r in evonb.open_table(table.path).read().collect())
    assert got == [1, 2, 3, 4, 5, 6]


def test_write_that_started_before_a_ddl_is_aborted(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    before = data_files(table.path)
    during_next_commit(a, lambda: b.alter("ALTER TABLE t ADD COLUMNS (x int)"))
    with pytest.raises(ConflictError) as info:
        a.write(rows(spark, (5, "A")))
    ddl = table.timeline.last_completed()
    assert ddl.action == "alter" and info.value.winner == ddl.instant
    assert data_files(table.path) == before
    a.write(rows(spark, (5, "A")))  # the retry sees the new schema
    df = evonb.open_table(table.path).read()
    assert df.columns == ["id", "v", "x"] and df.count() == 5


def test_write_after_an_implicit_column_addition_commits(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    wider = spark.createDataFrame([(6, "B", 1.5)], "id bigint, v string, score double")
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.write(wider)))
    commit = _both_commit_first_time(table, a, won, lambda: a.write(rows(spark, (5, "A"))))
    assert a.history()[-1].instant == commit.instant
    t = evonb.open_table(table.path)
    assert t.schema.has("score")
    assert t.timeline.get(commit.instant).schema_version == t.schema.version_id
    got = {r["id"]: r["score"] for r in t.read().collect()}
    assert got[6] == 1.5 and got[5] is None


def test_two_evolving_writes_the_later_fails(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    during_next_commit(a, lambda: b.write(
        spark.createDataFrame([(6, "B", 1.5)], "id bigint, v string, score double")))
    with pytest.raises(ConflictError):
        a.write(spark.createDataFrame([(5, "A", 2)], "id bigint, v string, n int"))
    t = evonb.open_table(table.path)
    assert t.schema.has("score") and not t.schema.has("n")
    assert check_table(table.path).ok


def test_overwrite_loses_to_a_concurrent_insert(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    during_next_commit(a, lambda: b.write(rows(spark, (6, "B"))))
    with pytest.raises(ConflictError):
        a.write(rows(spark, (9, "O")), "overwrite")
    assert len(content(evonb.open_table(table.path))) == 5


# ------------------------------------------------------------------ keys inserted meanwhile
@pytest.mark.parametrize("table_type", ["cow", "mor"])
@pytest.mark.parametrize("how", ["insert", "upsert"])
def test_an_upsert_loses_to_a_concurrent_write_of_a_key_in_its_range(spark, warehouse,
                                                                      table_type, how) -> None:
    """The other writer adds key 5 in a new file group while this upsert (which inserts 5 and
    did not see that file) runs: committing both would leave key 5 twice."""
    t = evonb.create_table(warehouse / f"{table_type}_{how}", "id bigint not null, v string",
                           primary_key="id", table_type=table_type)
    t.write(rows(spark, (1, "a"), (2, "b")))
    t.write(rows(spark, (8, "h"), (9, "i")))
    a, b = evonb.open_table(t.path), evonb.open_table(t.path)
    before = data_files(t.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.write(rows(spark, (5, "B")), how)))
    with pytest.raises(ConflictError) as info:
        a.write(rows(spark, (5, "A"), (1, "A")), "upsert")
    winner = won[0].instant
    added = {f["path"] for f in t.timeline.get(winner).metadata["added"]}
    assert info.value.winner == winner and winner in info.value.message
    assert "twice" in info.value.message
    assert any(path in info.value.message for path in added)  # names the file
    assert data_files(t.path) == before | added  # nothing of the loser is left
    got = sorted((r["id"], r["v"]) for r in evonb.open_table(t.path).read().collect())
    assert got == [(1, "a"), (2, "b"), (5, "B"), (8, "h"), (9, "i")]
    assert check_table(t.path).ok
    a.write(rows(spark, (5, "A"), (1, "A")), "upsert")  # the retry sees key 5 and updates it
    got = sorted((r["id"], r["v"]) for r in evonb.open_table(t.path).read().collect())
    assert got == [(1, "A"), (2, "b"), (5, "A"), (8, "h"), (9, "i")]


def test_an_upsert_and_a_concurrent_insert_outside_its_range_both_commit(spark, table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.write(rows(spark, (20, "B")))))
    _both_commit_first_time(table, a, won,
                            lambda: a.write(rows(spark, (5, "A"), (1, "A")), "upsert"))
    got = sorted((r["id"], r["v"]) for r in evonb.open_table(table.path).read().collect())
    assert got == [(1, "A"), (2, "b"), (3, "c"), (4, "d"), (5, "A"), (20, "B")]


def test_a_compaction_meanwhile_adds_no_keys(spark, warehouse) -> None:
    """Compaction rewrites a file group whose key range holds the upsert's new key, but only
    restates the keys it had."""
    t = evonb.create_table(warehouse / "m", "id bigint not null, v string", primary_key="id",
                           table_type="mor")
    t.write(rows(spark, (1, "a"), (9, "i")))
    t.write(rows(spark, (20, "t"), (21, "u")))
    t.write(rows(spark, (9, "I")), "upsert")
    a, b = evonb.open_table(t.path), evonb.open_table(t.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.compact()))
    a.write(rows(spark, (5, "A")), "upsert")
    assert won and won[0].operation == "compact"
    got = sorted((r["id"], r["v"]) for r in evonb.open_table(t.path).read().collect())
    assert got == [(1, "a"), (5, "A"), (9, "I"), (20, "t"), (21, "u")]
    assert evonb.open_table(t.path).timeline.last_completed().operation == "upsert"


# ------------------------------------------------------------------------- DDL against DDL
def during_ddl(table, action: Callable[[], Any]) -> None:
    """Run ``action`` when ``table``'s next DDL has been validated, before it locks."""
    original = table.validate_data

    def hooked(*args: Any) -> None:
        del table.validate_data
        action()
        original(*args)

    table.validate_data = hooked


def test_second_ddl_is_validated_against_the_first(table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    during_ddl(a, lambda: b.alter("ALTER TABLE t RENAME COLUMN v TO w"))
    a.alter("ALTER TABLE t ADD COLUMNS (x int AFTER id)")
    schema = evonb.open_table(table.path).schema
    assert [f.name for f in schema.fields] == ["id", "x", "w"]


def test_second_ddl_that_no_longer_applies_fails_cleanly(table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    before: dict[str, str] = {}

    def first() -> None:
        b.alter("ALTER TABLE t RENAME COLUMN v TO w")
        before.update(metadata_digest(table.path))

    during_ddl(a, first)
    with pytest.raises(ConflictError) as info:
        a.alter("ALTER TABLE t ALTER COLUMN v COMMENT 'gone'")
    assert info.value.winner == evonb.open_table(table.path).timeline.last_completed().instant
    assert isinstance(info.value.__cause__, EvoError)
    assert metadata_digest(table.path) == before


def test_schema_update_block_conflicts_with_a_ddl(table) -> None:
    a, b = evonb.open_table(table.path), evonb.open_table(table.path)
    with pytest.raises(ConflictError), a.update_schema() as u:
        u.add_column("y", "int")
        b.alter("ALTER TABLE t ADD COLUMNS (z int)")
    schema = evonb.open_table(table.path).schema
    assert schema.has("z") and not schema.has("y")


# ------------------------------------------------------------------------------- pinning
def test_a_planned_read_is_pinned_to_its_commit_and_schema(spark, table) -> None:
    df = table.read()
    table.alter("ALTER TABLE t RENAME COLUMN v TO w")
    table.write(spark.createDataFrame([(9, "new")], "id bigint, w string"), "overwrite")
    assert df.columns == ["id", "v"]
    assert sorted((r["id"], r["v"]) for r in df.collect()) == [
        (1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert [tuple(r) for r in table.read().collect()] == [(9, "new")]


# ------------------------------------------------------------------------ custom policies
CALLS: list[tuple[Operation, list[str]]] = []


class Recorder:
    """Records every check and lets everything commit."""

    def check(self, op: Operation, since) -> str:
        CALLS.append((op, [c.instant for c in since]))
        return op.schema_version or (since[-1].schema_version if since else
                                     op.base_schema_version)


class Refuse:
    """Refuses every commit."""

    def check(self, op: Operation, since) -> str:
        raise ConflictError(f"refused {op.operation}", winner=None)


def test_the_conflict_policy_is_pluggable(spark, warehouse, monkeypatch, tmp_path) -> None:
    install(monkeypatch, tmp_path / "site", "test-policies", {POLICIES: {
        "recorder": f"{__name__}:Recorder", "refuse": f"{__name__}:Refuse"}})
    CALLS.clear()
    t = evonb.create_table(warehouse / "p", "id bigint not null, v string", primary_key="id",
                           properties={"evonb.conflict.policy": "recorder"})
    t.write(rows(spark, (1, "a")))
    t.alter("ALTER TABLE p ADD COLUMNS (x int)")
    assert [(op.kind, op.operation) for op, _ in CALLS] == [("write", "insert"), ("ddl", "alter")]
    r = evonb.create_table(warehouse / "r", "id bigint not null, v string", primary_key="id",
                           properties={"evonb.conflict.policy": "refuse"})
    before = metadata_digest(r.path)
    with pytest.raises(ConflictError, match="refused insert"):
        r.write(rows(spark, (1, "a")))
    assert data_files(r.path) == set() and metadata_digest(r.path) == before


# ------------------------------------------------------------------ the commit point holds
def test_an_interrupt_after_the_commit_point_keeps_the_commit(spark, table) -> None:
    original = table.timeline.complete

    def complete_then_interrupt(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)
        raise KeyboardInterrupt

    table.timeline.complete = complete_then_interrupt
    with pytest.raises(KeyboardInterrupt):
        table.write(rows(spark, (7, "g")))
    del table.timeline.complete
    assert content(evonb.open_table(table.path))[7] == "g"
    assert check_table(table.path).ok


def test_mor_upserts_to_one_file_group_conflict(spark, warehouse) -> None:
    t = evonb.create_table(warehouse / "m", "id bigint not null, v string", primary_key="id",
                           table_type="mor")
    t.write(rows(spark, (1, "a"), (2, "b")))
    a, b = evonb.open_table(t.path), evonb.open_table(t.path)
    during_next_commit(a, lambda: b.write(rows(spark, (1, "B")), "upsert"))
    with pytest.raises(ConflictError):
        a.write(rows(spark, (2, "A")), "upsert")
    assert content(evonb.open_table(t.path)) == {1: "B", 2: "b"}
    assert check_table(t.path).ok
