"""Compaction and rewrite commit through the table's conflict policy, like writes and DDL."""

from __future__ import annotations

from typing import Any

import pytest

import evonb
from evonb.errors import ConflictError
from evonb.table.check import check_table
from evonb.table.conflicts import Operation
from tests.concurrency.helpers import data_files
from tests.concurrency.test_concurrent_commits import during_next_commit
from tests.plugins import POLICIES, install

SCHEMA = "id bigint not null, v string"

CALLS: list[Operation] = []


class ServiceRecorder:
    """Records the operations checked and lets everything commit."""

    def check(self, op: Operation, since: Any) -> str:
        CALLS.append(op)
        return op.schema_version or (since[-1].schema_version if since
                                     else op.base_schema_version)


def _mor(spark: Any, path: Any, **properties: str) -> Any:
    t = evonb.create_table(path, SCHEMA, primary_key="id", table_type="mor",
                           properties=properties or None)
    t.write(spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA))
    t.write(spark.createDataFrame([(2, "B")], SCHEMA), "upsert")
    return t


def test_a_custom_policy_sees_compaction_and_rewrite(spark, warehouse, monkeypatch,
                                                    tmp_path) -> None:
    install(monkeypatch, tmp_path / "site", "service-policies", {POLICIES: {
        "service-recorder": f"{__name__}:ServiceRecorder"}})
    CALLS.clear()
    t = _mor(spark, warehouse / "t", **{"evonb.conflict.policy": "service-recorder"})
    base = str(t.snapshot().logs[0].base)  # the one file group with log blocks
    t.compact()
    t.rewrite("ALTER TABLE t RENAME COLUMN v TO w")
    services = [op for op in CALLS if op.kind == "service"]
    assert [(op.operation, op.action) for op in services] == [
        ("compact", "compaction"), ("rewrite", "replacecommit")]
    assert services[0].file_groups == frozenset({base})
    assert services[0].schema_version is None
    assert services[1].schema_version == t.schema.version_id


def test_compaction_survives_a_schema_change_but_not_an_upsert_to_its_groups(
        spark, warehouse) -> None:
    t = _mor(spark, warehouse / "t")
    other = evonb.open_table(t.path)
    during_next_commit(t, lambda: other.alter("ALTER TABLE t ADD COLUMN n int DEFAULT 3"))
    assert t.compact() is not None  # a DDL changes no file group: both commit
    assert sorted(tuple(r) for r in evonb.open_table(t.path).read().collect()) == [
        (1, "a", 3), (2, "B", 3)]

    t.write(spark.createDataFrame([(1, "x", 4)], f"{SCHEMA}, n int"), "upsert")
    before = data_files(t.path)
    during_next_commit(t, lambda: other.write(
        spark.createDataFrame([(2, "y", 5)], f"{SCHEMA}, n int"), "upsert"))
    with pytest.raises(ConflictError, match="conflicts with this compact"):
        t.compact()
    winner = evonb.open_table(t.path).timeline.last_completed()
    assert winner.operation == "upsert"
    # the compaction's files are gone: only the winner's are new
    assert data_files(t.path) - before == {e["path"] for e in winner.metadata["added"]}
    assert sorted(tuple(r) for r in evonb.open_table(t.path).read().collect()) == [
        (1, "x", 4), (2, "y", 5)]
    assert check_table(t.path).ok


def test_the_strict_policy_makes_compaction_lose_to_a_ddl(spark, warehouse) -> None:
    t = _mor(spark, warehouse / "t", **{"evonb.conflict.policy": "strict"})
    other = evonb.open_table(t.path)
    during_next_commit(t, lambda: other.alter("ALTER TABLE t ADD COLUMN n int"))
    with pytest.raises(ConflictError) as info:
        t.compact()
    assert info.value.winner == other.history()[-1].instant
    assert evonb.open_table(t.path).snapshot().logs  # nothing was compacted
    assert check_table(t.path).ok
