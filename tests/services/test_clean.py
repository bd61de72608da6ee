"""The clean rule as a pure function, proven over random histories (hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.errors import EvoError
from evonb.services.clean import plan_clean
from evonb.table.instants import instant_from_datetime
from evonb.table.snapshot import replay
from evonb.table.timeline import CommitRecord

START = datetime(2026, 1, 1, tzinfo=UTC)
OPS = ("insert", "upsert", "delta", "alter", "compact", "overwrite", "clean")


def _history(ops: list[tuple[str, int]]) -> tuple[list[CommitRecord], list[str]]:
    """Commits (one hour apart) made by ``ops`` on an abstract table, and the stored
    schema versions. Each op takes a number that picks files."""
    version = "00000000000000000"
    versions = [version]
    live: list[str] = []
    logs: dict[str, list[str]] = {}
    commits = [CommitRecord(instant_from_datetime(START), "create",
                            {"schema_version": version, "added": [], "removed": []})]
    n = 0
    for i, (op, pick) in enumerate(ops, 1):
        instant = instant_from_datetime(START + timedelta(hours=i))

        def new(kind="base", base=None, version=version, instant=instant):
            nonlocal n
            n += 1
            entry = {"path": f"f{n}", "version": version, "instant": instant, "kind": kind}
            if base:
                entry["base"] = base
            return entry

        added, removed, action = [], [], "commit"
        meta = {}
        if op == "insert" or (not live and op in ("upsert", "delta", "compact")):
            added = [new() for _ in range(1 + pick % 2)]
        elif op == "upsert":
            gone = live[pick % len(live)]
            removed = [gone, *logs.pop(gone, [])]
            added = [new()]
        elif op == "delta":
            base = live[pick % len(live)]
            added = [new("log", base)]
            logs.setdefault(base, []).append(added[0]["path"])
            action = "deltacommit"
        elif op == "alter":
            version = instant
            versions.append(version)
            action = "alter"
        elif op == "compact":
            base = live[pick % len(live)]
            removed = [base, *logs.pop(base, [])]
            added = [new()]
            action = "compaction"
        elif op == "overwrite":
            removed = list(live)
            logs.clear()
            added = [new()]
            action = "replacecommit"
        else:
            action = "clean"
            meta = {"earliest_retained": commits[-1].instant, "cleaned_files": []}
        for path in removed:
            if path in live:
                live.remove(path)
        live += [e["path"] for e in added if e["kind"] == "base"]
        commits.append(CommitRecord(instant, action, {
            "schema_version": version, "added": added, "removed": removed, **meta}))
    return commits, versions


histories = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50)), min_size=1,
                     max_size=25)


@settings(max_examples=300, deadline=None)
@given(ops=histories, retain=st.integers(1, 8), keep=st.one_of(st.none(), st.integers(1, 4)),
       hours=st.one_of(st.none(), st.floats(0.5, 10)))
def test_clean_never_removes_what_the_window_needs_and_removes_the_rest(ops, retain, keep,
                                                                        hours):
    commits, versions = _history(ops)
    now = START + timedelta(hours=len(ops))
    plan = plan_clean(commits, versions, retain_commits=retain, keep_schema_versions=keep,
                      retain_hours=hours, now=now)
    retained = [c for c in commits if c.instant >= plan.earliest_retained]
    assert tuple(c.instant for c in retained) == plan.retained
    countable = [c for c in commits if c.action != "clean"]
    assert commits[-1] in retained
    assert set(countable[-retain:]) <= set(retained)
    if hours is not None:
        cutoff = instant_from_datetime(now - timedelta(hours=hours))
        assert {c.instant for c in countable if c.instant >= cutoff} <= set(plan.retained)
    # the window is no larger than the policies ask
    first = next(c for c in countable if c.instant >= plan.earliest_retained)
    assert first.instant == plan.earliest_retained
    needed_files, needed_versions = set(), set()
    for i, c in enumerate(commits):
        if c.instant < plan.earliest_retained:
            continue
        snap = replay(commits[: i + 1], "00000000000000000")
        live = (*snap.files, *snap.logs)
        needed_files |= {f.path for f in live}
        needed_versions |= {f.version for f in live} | {c.schema_version}
    ever = {e["path"] for c in commits for e in c.metadata["added"]}
    # safety: nothing a retained snapshot reads goes
    assert not needed_files & set(plan.files)
    assert not needed_versions & set(plan.versions)
    # completeness: every file no retained snapshot reads goes
    assert set(plan.files) == ever - needed_files
    # schema policy: the newest `keep` versions stay; without a policy nothing is pruned
    assert set(plan.versions) <= set(versions)
    if keep is None:
        assert plan.versions == ()
    else:
        assert not set(sorted(versions)[-keep:]) & set(plan.versions)
        assert set(plan.versions) == set(sorted(versions)[:-keep]) - needed_versions


def test_files_already_cleaned_are_not_planned_again():
    commits, versions = _history([("insert", 0), ("upsert", 0), ("upsert", 0)])
    plan = plan_clean(commits, versions, retain_commits=1)
    assert plan.files
    cleaned = CommitRecord("29990101000000000", "clean", {
        "schema_version": versions[-1], "added": [], "removed": [],
        "earliest_retained": plan.earliest_retained, "cleaned_files": list(plan.files)})
    assert not plan_clean([*commits, cleaned], versions, retain_commits=1)


def test_bad_policies_are_refused():
    commits, versions = _history([("insert", 0)])
    with pytest.raises(EvoError):
        plan_clean(commits, versions, retain_commits=0)
    with pytest.raises(EvoError):
        plan_clean(commits, versions, retain_commits=1, keep_schema_versions=0)


def test_retain_hours_further_back_than_any_date_keeps_every_commit():
    """Found by the magic fuzz test: ``--retain-hours 2.966e16`` raised OverflowError."""
    commits, versions = _history([("insert", 0), ("upsert", 0), ("upsert", 0)])
    assert plan_clean(commits, versions, retain_commits=1)  # something to clean
    for hours in (2.966277516147257e16, 1e300):
        assert not plan_clean(commits, versions, retain_commits=1, retain_hours=hours)
