"""The conflict policies, on hand-made commit records (no Spark, no disk)."""

from __future__ import annotations

import pytest

from evonb.errors import ConflictError, EvoError, UnknownPluginError
from evonb.table.conflicts import (
    ConflictPolicy,
    DefaultConflictPolicy,
    Operation,
    StrictConflictPolicy,
    check_policy,
    policy_from_name,
)
from tests.concurrency.helpers import record
from tests.plugins import POLICIES, install

V0 = "00000000000000000"
V1 = "20260101000000001"


def write(op: str = "insert", groups: tuple[str, ...] = (), evolves: bool = False,
          kind: str = "write", reads_data: bool = False) -> Operation:
    return Operation(kind=kind, operation=op, action="commit", base_instant="20250101000000000",
                     base_schema_version=V0,
                     schema_version="20260101000000009" if evolves else None,
                     file_groups=frozenset(groups), reads_data=reads_data)


def base_file(path: str) -> dict[str, object]:
    return {"path": path, "version": V0, "instant": V0, "kind": "base"}


def log_file(path: str, base: str) -> dict[str, object]:
    return {"path": path, "version": V0, "instant": V0, "kind": "log", "base": base}


POLICY = DefaultConflictPolicy()


def test_nothing_since_returns_the_base_version() -> None:
    assert POLICY.check(write(), []) == V0
    assert POLICY.check(write(evolves=True), []) == "20260101000000009"


def test_inserts_never_conflict_with_inserts() -> None:
    since = [record("20260101000000001", added=[base_file("a.parquet")]),
             record("20260101000000002", added=[base_file("b.parquet")])]
    assert POLICY.check(write(), since) == V0


def test_same_file_group_conflicts_and_names_the_winner() -> None:
    since = [record("20260101000000001", added=[base_file("n.parquet")]),
             record("20260101000000002", operation="upsert", removed=["a.parquet"],
                    added=[base_file("a2.parquet")])]
    with pytest.raises(ConflictError) as info:
        POLICY.check(write("upsert", ("a.parquet",)), since)
    assert info.value.winner == "20260101000000002"
    assert "20260101000000002" in str(info.value)


def test_different_file_groups_do_not_conflict() -> None:
    since = [record("20260101000000002", operation="upsert", removed=["b.parquet"])]
    assert POLICY.check(write("upsert", ("a.parquet",)), since) == V0


def test_log_blocks_on_the_same_file_group_conflict() -> None:
    since = [record("20260101000000002", "deltacommit",
                    added=[log_file(".a.log.x_0.avro", "a.parquet")])]
    with pytest.raises(ConflictError):
        POLICY.check(write("upsert", ("a.parquet",)), since)
    assert POLICY.check(write("upsert", ("b.parquet",)), since) == V0


def test_overwrite_conflicts_with_any_data_commit() -> None:
    since = [record("20260101000000002", added=[base_file("n.parquet")])]
    with pytest.raises(ConflictError):
        POLICY.check(write("overwrite"), since)


@pytest.mark.parametrize("other", [
    record(V1, "alter", schema_version=V1),
    record(V1, schema_version=V1, schema_change="evolve"),
    record(V1, "replacecommit", operation="rewrite", schema_version=V1, schema_change="evolve"),
])
def test_schema_changes_abort_writes_that_started_before(other) -> None:
    with pytest.raises(ConflictError) as info:
        POLICY.check(write(), [other])
    assert info.value.winner == V1


def test_implicit_column_addition_lets_a_write_commit_in_the_new_version() -> None:
    other = record(V1, schema_version=V1, schema_change="add_columns",
                   added=[base_file("n.parquet")])
    assert POLICY.check(write(), [other]) == V1
    with pytest.raises(ConflictError):  # but not a write that evolves the schema too
        POLICY.check(write(evolves=True), [other])
    with pytest.raises(ConflictError):  # nor a DDL
        POLICY.check(write("alter", kind="ddl"), [other])


def test_alter_marked_add_columns_still_conflicts() -> None:
    other = record(V1, "alter", schema_version=V1, schema_change="add_columns")
    with pytest.raises(ConflictError):
        POLICY.check(write(), [other])


def test_ddl_after_data_commits() -> None:
    since = [record("20260101000000002", added=[base_file("n.parquet")])]
    assert POLICY.check(write("alter", kind="ddl", evolves=True), since) == "20260101000000009"
    with pytest.raises(ConflictError):  # SET NOT NULL was checked against older data
        POLICY.check(write("alter", kind="ddl", evolves=True, reads_data=True), since)


def test_clean_and_failed_attempt_rollbacks_never_conflict() -> None:
    since = [record("20260101000000002", "clean", cleaned_files=["a.parquet"]),
             record("20260101000000003", "rollback", failed=["20260101000000001"])]
    assert POLICY.check(write("upsert", ("a.parquet",)), since) == V0
    undo = record("20260101000000004", "rollback", rolled_back=["20260101000000001"])
    with pytest.raises(ConflictError):
        POLICY.check(write(), [undo])


def test_strict_policy_serializes_everything() -> None:
    strict = StrictConflictPolicy()
    assert strict.check(write(), [record("20260101000000002", "clean")]) == V0
    with pytest.raises(ConflictError):
        strict.check(write(), [record("20260101000000002", added=[base_file("n.parquet")])])


class AcceptAll:
    """A user policy: everything commits."""

    def check(self, op: Operation, since) -> str:
        return op.schema_version or op.base_schema_version


def test_policies_by_name(monkeypatch, tmp_path) -> None:
    assert isinstance(policy_from_name(None)(None, {}), DefaultConflictPolicy)  # type: ignore[arg-type]
    assert isinstance(policy_from_name("strict")(None, {}), StrictConflictPolicy)  # type: ignore[arg-type]
    install(monkeypatch, tmp_path / "site", "policies-for-tests", {POLICIES: {
        "accept-all": f"{__name__}:AcceptAll", "broken": "no_such_module_xyz:Policy"}})
    custom = policy_from_name("Accept-All")(None, {})  # type: ignore[arg-type]
    assert isinstance(custom, AcceptAll) and isinstance(custom, ConflictPolicy)
    assert check_policy("accept-all") == "accept-all"
    with pytest.raises(EvoError, match="Cannot load conflict policy 'broken'"):
        policy_from_name("broken")
    for name in ("nonsense", f"{__name__}:AcceptAll", f"{__name__}.AcceptAll"):
        with pytest.raises(UnknownPluginError) as info:
            policy_from_name(name)
        assert info.value.property == "evonb.conflict.policy" and info.value.value == name
        assert info.value.known == ["accept-all", "broken", "default", "rfc33", "strict"]
        assert f"evonb.conflict.policy={name!r}" in str(info.value)
