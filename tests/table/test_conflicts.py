"""Conflict policies: which commits since an operation began make it lose, and the schema
version it commits in."""

from __future__ import annotations

import pytest

from evonb.errors import ConflictError, UnknownPluginError
from evonb.table.conflicts import (
    DefaultConflictPolicy,
    Operation,
    StrictConflictPolicy,
    check_policy,
    policy_from_name,
)
from evonb.table.timeline import CommitRecord

V0 = "00000000000000000"
V1 = "20260101000000001"
BASE = "20260101000000000"


def _file(path: str, **kw) -> dict:
    return {"path": path, "version": V0, "instant": "20260101000000002", "rows": 1, **kw}


def _commit(instant: str, action: str = "commit", **meta) -> CommitRecord:
    return CommitRecord(instant, action, {"operation": meta.pop("operation", "upsert"),
                                          "schema_version": V0, **meta})


def _write(**kw) -> Operation:
    return Operation(kind="write", operation="upsert", action="commit", base_instant=BASE,
                     base_schema_version=V0, **kw)


def test_writes_to_other_file_groups_commit_side_by_side():
    other = _commit("20260101000000002", added=[_file("b.parquet")], removed=["a.parquet"])
    assert DefaultConflictPolicy().check(_write(file_groups=frozenset({"c.parquet"})),
                                         [other]) == V0


def test_a_rewritten_or_logged_file_group_is_a_conflict_naming_the_winner():
    rewrote = _commit("20260101000000002", removed=["a.parquet"])
    with pytest.raises(ConflictError, match=r"rewrote file groups .* a\.parquet") as err:
        DefaultConflictPolicy().check(_write(file_groups=frozenset({"a.parquet"})), [rewrote])
    assert err.value.winner == "20260101000000002"
    logged = _commit("20260101000000003", added=[_file(".a.log.1", kind="log",
                                                         base="a.parquet")])
    with pytest.raises(ConflictError, match="added log blocks"):
        DefaultConflictPolicy().check(_write(file_groups=frozenset({"a.parquet"})), [logged])


def test_schema_changes_follow_rfc33():
    added = _commit("20260101000000002", schema_version=V1, schema_change="add_columns")
    # a write after another write's implicit column addition commits in the new version
    assert DefaultConflictPolicy().check(_write(), [added]) == V1
    with pytest.raises(ConflictError, match="both change the schema"):
        DefaultConflictPolicy().check(_write(schema_version="20260101000000003"), [added])
    ddl = Operation(kind="ddl", operation="alter", action="alter", base_instant=BASE,
                    base_schema_version=V0, schema_version="20260101000000003")
    with pytest.raises(ConflictError, match="after this DDL was validated"):
        DefaultConflictPolicy().check(ddl, [added])
    altered = _commit("20260101000000002", action="alter", schema_version=V1)
    with pytest.raises(ConflictError, match="schema changed while this upsert"):
        DefaultConflictPolicy().check(_write(), [altered])


def test_cleans_and_failed_attempt_rollbacks_never_conflict_but_undoing_commits_does():
    clean = _commit("20260101000000002", action="clean", operation="clean")
    tidy = _commit("20260101000000003", action="rollback", operation="rollback",
                   failed=["20260101000000001"])
    for policy in (DefaultConflictPolicy(), StrictConflictPolicy()):
        assert policy.check(_write(), [clean, tidy]) == V0
    undo = _commit("20260101000000004", action="rollback", operation="rollback",
                   rolled_back=[BASE])
    with pytest.raises(ConflictError, match="rolled back commits"):
        DefaultConflictPolicy().check(_write(), [undo])
    with pytest.raises(ConflictError, match="strict policy"):
        StrictConflictPolicy().check(_write(file_groups=frozenset({"z"})),
                                     [_commit("20260101000000005")])


def test_policies_by_name():
    assert isinstance(policy_from_name(None)(None, {}), DefaultConflictPolicy)
    assert isinstance(policy_from_name(" Strict ")(None, {}), StrictConflictPolicy)
    assert check_policy("RFC33") == "rfc33"
    with pytest.raises(UnknownPluginError):
        check_policy("mypackage.policies:AcceptAll")
