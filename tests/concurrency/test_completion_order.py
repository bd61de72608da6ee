"""Commits that complete in another order than they started (completion order).

Writer A starts first (older instant), writer B starts later and commits first, then A commits.
Snapshots, time travel, incremental reads, rollback, clean and the conflict checks must all follow
the order in which the commits completed, not their instants.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import evonb
from evonb.errors import ConflictError, EvoError
from evonb.table.check import check_table
from evonb.table.instants import format_instant, parse_instant
from evonb.table.retention import CommitCleanedError
from tests.concurrency.test_concurrent_commits import content, during_next_commit, rows

pytestmark = pytest.mark.spark


def during_next_start(table, action: Callable[[], Any]) -> None:
    """Run ``action`` right after ``table``'s next operation reserved its instant (before a write
    plans its files)."""
    original = table.timeline.requested

    def hooked(*args: Any, **kwargs: Any) -> Any:
        table.timeline.requested = original
        inst = original(*args, **kwargs)
        action()
        return inst

    table.timeline.requested = hooked


def make(spark, path, table_type: str = "cow"):
    t = evonb.create_table(path, "id bigint not null, v string", primary_key="id",
                           table_type=table_type)
    t.write(rows(spark, (1, "a"), (2, "b")))  # file group A
    t.write(rows(spark, (3, "c"), (4, "d")))  # file group B
    return t


def out_of_order(spark, t, write_a: Callable[[Any], Any], write_b: Callable[[Any], Any]
                 ) -> tuple[Any, Any, Any]:
    """A starts, B commits while A writes its files, A commits: (base, B, A) commits."""
    base = t.timeline.last_completed()
    a, b = evonb.open_table(t.path), evonb.open_table(t.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(write_b(b)))
    mine = write_a(a)
    theirs = won[0]
    assert mine.instant < theirs.instant and mine.completion_time > theirs.completion_time
    return base, theirs, mine


def iso(instant: str) -> str:
    return parse_instant(instant).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


# --------------------------------------------------------------------- the snapshot
def test_a_write_that_removes_a_file_added_by_a_commit_that_completed_first(spark,
                                                                            warehouse) -> None:
    """The resurrection case: A reserves its instant, B inserts file X, A plans its upsert on a
    snapshot that has X and rewrites it. Replayed by instant, A would remove X before B added it
    and X would come back (key 5 twice); replayed in completion order it is gone."""
    t = make(spark, warehouse / "t")
    a, b = evonb.open_table(t.path), evonb.open_table(t.path)
    won: list[Any] = []
    during_next_start(a, lambda: won.append(b.write(rows(spark, (5, "B")))))
    mine = a.write(rows(spark, (5, "A")), "upsert")
    theirs = won[0]
    assert mine.instant < theirs.instant
    x = {e["path"] for e in t.timeline.get(theirs.instant).metadata["added"]}
    assert set(t.timeline.get(mine.instant).metadata["removed"]) == x  # A rewrote B's file
    got = [(r["id"], r["v"]) for r in evonb.open_table(t.path).read().collect()]
    assert sorted(got) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "A")]
    assert check_table(t.path).ok


def test_a_write_that_removes_other_files_than_the_commit_that_completed_first(
        spark, warehouse) -> None:
    """A starts, B commits adding files, A commits removing different files (its upsert of
    group A): both commit at once and every row is there once."""
    t = make(spark, warehouse / "t")
    _base, b, a = out_of_order(spark, t, lambda w: w.write(rows(spark, (1, "A")), "upsert"),
                               lambda w: w.write(rows(spark, (5, "B"))))
    t = evonb.open_table(t.path)
    got = [(r["id"], r["v"]) for r in t.read().collect()]
    assert sorted(got) == [(1, "A"), (2, "b"), (3, "c"), (4, "d"), (5, "B")]
    assert {c.instant for c in t.history()} >= {a.instant, b.instant}
    assert check_table(t.path).ok


# ------------------------------------------------------------------- time travel
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_time_travel_and_incremental_reads_follow_completion_order(spark, warehouse,
                                                                   table_type) -> None:
    t = make(spark, warehouse / "t", table_type)
    base, b, a = out_of_order(spark, t, lambda w: w.write(rows(spark, (1, "A")), "upsert"),
                              lambda w: w.write(rows(spark, (3, "B")), "upsert"))
    t = evonb.open_table(t.path)
    before = {1: "a", 2: "b", 3: "c", 4: "d"}
    after_b = {**before, 3: "B"}
    after_a = {**after_b, 1: "A"}

    def state(**kw: Any) -> dict[int, str]:
        got = [(r["id"], r["v"]) for r in t.read(**kw).collect()]
        assert len(got) == len(dict(got))
        return dict(got)

    # An instant: the state right after that commit completed (A's is older than B's but A
    # completed after B, so B is in it).
    assert state(as_of=b.instant) == after_b
    assert state(as_of=a.instant) == after_a
    assert state(as_of=base.instant) == before
    # A date-time: the last commit completed at or before it.
    assert state(as_of=iso(b.completion_time)) == after_b
    assert state(as_of=iso(a.instant)) == before  # A had started, nothing had completed
    assert t.commit(iso(a.completion_time)).instant == a.instant

    def incremental(start: Any, end: Any = None) -> dict[int, str]:
        df = t.read_incremental(start, end, meta_columns=True)
        got = [(r["id"], r["v"], r["_evo_commit_time"]) for r in df.collect()]
        return {k: (v, c) for k, v, c in got}

    assert incremental(base.instant) == {1: ("A", a.instant), 3: ("B", b.instant)}
    assert incremental(b.instant) == {1: ("A", a.instant)}  # A completed after B
    assert incremental(a.instant) == {}
    assert incremental(base.instant, b.instant) == {3: ("B", b.instant)}
    first = incremental("00000000000000000", base.instant)
    assert {k: v for k, (v, _) in first.items()} == before
    assert {c for _, c in first.values()} < {c.instant for c in t.history()[:3]}
    assert [c.instant for c in t.incremental_commits(base.instant)] == [b.instant, a.instant]
    assert check_table(t.path).ok


def test_a_rebased_ddl_comes_after_the_ddl_it_lost_the_race_to(spark, warehouse) -> None:
    t = make(spark, warehouse / "t")
    a, b = evonb.open_table(t.path), evonb.open_table(t.path)
    during_next_start(a, lambda: b.alter("ALTER TABLE t RENAME COLUMN v TO w"))
    a.alter("ALTER TABLE t ADD COLUMNS (x int)")
    t = evonb.open_table(t.path)
    alter_b, alter_a = t.history()[-2:]
    assert alter_a.instant < alter_b.instant  # validated again on top of B's: its version id
    assert t.schema.version_id == alter_a.instant  # is older, but it is the latest schema
    assert [s.version_id for s in t.schemas()][-2:] == [alter_b.instant, alter_a.instant]
    assert [f.name for f in t.schema.fields] == ["id", "w", "x"]
    assert [f.name for f in t.schema_at(alter_b.instant).fields] == ["id", "w"]
    assert [v.change for v in t.column_history("x").versions] == ["added"]
    assert t.read().columns == ["id", "w", "x"]


# ----------------------------------------------------------------------- conflicts
def test_same_file_group_still_conflicts_and_names_the_winner(spark, warehouse) -> None:
    t = make(spark, warehouse / "t")
    a, b = evonb.open_table(t.path), evonb.open_table(t.path)
    won: list[Any] = []
    during_next_commit(a, lambda: won.append(b.write(rows(spark, (3, "B")), "upsert")))
    with pytest.raises(ConflictError) as info:
        a.write(rows(spark, (4, "A")), "upsert")
    assert info.value.winner == won[0].instant and won[0].instant in str(info.value)
    assert content(evonb.open_table(t.path)) == {1: "a", 2: "b", 3: "B", 4: "d"}
    assert not t.timeline.pending() and check_table(t.path).ok


def test_a_ddl_that_started_first_but_completed_after_a_write_started_fails_it(
        spark, warehouse) -> None:
    """D reserves its instant, W starts (its instant is later than D's), D completes, W tries to
    commit: D completed after W started, so W fails (Hudi RFC-33), whatever the instants."""
    t = make(spark, warehouse / "t")
    d, w = evonb.open_table(t.path), evonb.open_table(t.path)
    d_started, go = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def pause() -> None:
        d_started.set()
        go.wait(60)

    during_next_start(d, pause)

    def run_ddl() -> None:
        try:
            d.alter("ALTER TABLE t ADD COLUMNS (x int)")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=run_ddl)
    thread.start()
    assert d_started.wait(60)

    def finish_ddl() -> None:
        go.set()
        thread.join(60)

    mine: list[str] = []

    def finish_ddl_later() -> None:
        mine.extend(i.timestamp for i in w.timeline.pending())
        finish_ddl()

    during_next_commit(w, finish_ddl_later)
    with pytest.raises(ConflictError) as info:
        w.write(rows(spark, (5, "W")))
    assert not errors
    ddl = evonb.open_table(t.path).timeline.last_completed()
    assert ddl.action == "alter" and info.value.winner == ddl.instant
    assert mine[0] == ddl.instant < mine[1]  # the write's instant is the later one
    assert not evonb.open_table(t.path).timeline.pending()
    assert check_table(t.path).ok


# ---------------------------------------------------------------- rollback, clean
def test_rollback_undoes_the_commit_that_completed_last(spark, warehouse) -> None:
    t = make(spark, warehouse / "t")
    base, b, a = out_of_order(spark, t, lambda w: w.write(rows(spark, (1, "A")), "upsert"),
                              lambda w: w.write(rows(spark, (3, "B")), "upsert"))
    t = evonb.open_table(t.path)
    undo = t.rollback()
    assert undo.metadata["rolled_back"] == [a.instant]  # A: older instant, completed last
    assert content(t) == {1: "a", 2: "b", 3: "B", 4: "d"}
    with pytest.raises(EvoError, match="later commits depend"):
        t.rollback(base.instant)
    assert t.rollback().metadata["rolled_back"] == [b.instant]
    assert content(t) == {1: "a", 2: "b", 3: "c", 4: "d"}
    assert check_table(t.path).ok


def test_a_rollback_completes_after_the_commits_it_removed(spark, warehouse) -> None:
    """A writer that started on top of a commit that is then rolled back must see the rollback
    among the commits since its start, even if the clock says otherwise."""
    t = make(spark, warehouse / "t")
    last = t.timeline.last_completed()
    ahead = format_instant(datetime.now(UTC) + timedelta(hours=1))  # a clock that went back
    path = t.timeline.path / f"{last.instant}.{last.action}"
    path.write_text(json.dumps({**json.loads(path.read_text()), "completion_time": ahead}))
    w = evonb.open_table(t.path)
    during_next_commit(w, lambda: evonb.open_table(t.path).rollback())
    with pytest.raises(ConflictError, match="rolled back"):
        w.write(rows(spark, (5, "W")))
    undo = evonb.open_table(t.path).timeline.last_completed()
    assert undo.action == "rollback" and undo.completion > ahead
    assert undo.metadata["rolled_back"] == [last.instant]


def test_clean_counts_commits_in_completion_order(spark, warehouse) -> None:
    t = make(spark, warehouse / "t")
    _base, b, a = out_of_order(spark, t, lambda w: w.write(rows(spark, (1, "A")), "upsert"),
                               lambda w: w.write(rows(spark, (3, "B")), "upsert"))
    t = evonb.open_table(t.path)
    done = t.clean(retain_commits=1)
    assert done.metadata["earliest_retained"] == a.instant  # the last to complete
    assert done.completion_time > a.completion_time
    with pytest.raises(CommitCleanedError):  # B's instant is later than A's, but B completed
        t.read(as_of=b.instant).collect()  # before A: outside the window
    assert content(t) == {1: "A", 2: "b", 3: "B", 4: "d"}
    assert dict((r["id"], r["v"]) for r in t.read(as_of=a.instant).collect()) == content(t)
    assert check_table(t.path).ok


def test_services_record_their_completion_time(spark, warehouse) -> None:
    t = make(spark, warehouse / "t", "mor")
    t.write(rows(spark, (1, "x")), "upsert")
    t.compact()
    t.rewrite(purge_dropped=True)
    t.write(rows(spark, (2, "y")), "upsert")
    t.rollback()
    t.clean(retain_commits=1)
    commits = t.timeline.completed()
    assert {c.action for c in commits} >= {"create", "commit", "deltacommit", "compaction",
                                           "replacecommit", "clean", "rollback"}
    assert all(c.has_completion for c in commits)
    assert [c.completion for c in commits] == sorted({c.completion for c in commits})
    assert check_table(t.path).ok


# ------------------------------------------------------------- tables of older versions
def test_a_table_without_completion_times_reads_in_instant_order(spark, warehouse) -> None:
    """Commits written before completion times existed complete at their instant; new commits
    come after them."""
    t = make(spark, warehouse / "t")
    t.write(rows(spark, (1, "A")), "upsert")
    for c in t.timeline.completed():  # as an older evonb wrote them
        path = t.timeline.path / f"{c.instant}.{c.action}"
        meta = json.loads(path.read_text())
        meta.pop("completion_time")
        path.write_text(json.dumps(meta))
    t = evonb.open_table(t.path)
    old = t.timeline.completed()
    assert [c.instant for c in old] == sorted(c.instant for c in old)
    assert all(c.completion == c.instant for c in old)
    assert content(t) == {1: "A", 2: "b", 3: "c", 4: "d"}
    assert content_as_of(t, old[-2].instant) == {1: "a", 2: "b", 3: "c", 4: "d"}
    assert t.commit(iso(old[-1].instant)).instant == old[-1].instant
    new = t.write(rows(spark, (3, "C")), "upsert")
    assert new.completion_time > old[-1].instant and t.history()[-1].instant == new.instant
    got = t.read_incremental(old[-2].instant, meta_columns=True).collect()
    assert sorted((r["id"], r["v"]) for r in got) == [(1, "A"), (3, "C")]
    assert check_table(t.path).ok


def content_as_of(t, ref: Any) -> dict[int, str]:
    return {r["id"]: r["v"] for r in t.read(as_of=ref).collect()}
