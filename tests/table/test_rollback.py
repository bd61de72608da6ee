"""Rollback on the format layer alone (no Spark): undoing completed commits, and cleaning up
failed attempts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from evonb.errors import EvoError
from evonb.table.commit import CommitMetadata
from evonb.table.data_file import DataFile
from evonb.table.names import data_file_name
from evonb.table.rollback import files_of_instant, is_abandoned, rollback, rollback_failed
from evonb.table.table import BaseTable, create_table
from evonb.table.transaction import Transaction


@pytest.fixture
def table(tmp_path: Path) -> BaseTable:
    return create_table(tmp_path / "t", "id int, v string")


def _insert(table: BaseTable) -> DataFile:
    with Transaction(table, "commit", plan={"operation": "insert"}) as txn:
        name = data_file_name(txn.instant, 0)
        (table.root / name).write_bytes(b"x" * 10)
        f = DataFile(path=name, version=table.schema.version_id, instant=txn.instant,
                     rows=1, bytes=10)
        txn.stage([f], [])
        with txn.locked():
            txn.complete(CommitMetadata.of("insert", table.schema.version_id, added=[f],
                                           rows_written=1))
    return f


def _instants(table: BaseTable) -> list[str]:
    return [c.instant for c in table.timeline.completed() if c.action == "commit"]


def test_the_latest_commit_is_undone_with_its_files(table: BaseTable) -> None:
    first, second = _insert(table), _insert(table)
    undo = rollback(table)
    assert undo.action == "rollback" and undo.metadata["rolled_back"] == [second.instant]
    assert undo.metadata["files_deleted"] == 1
    assert not (table.root / second.path).exists() and (table.root / first.path).exists()
    assert _instants(table) == [first.instant]
    assert [f.path for f in table.snapshot().files] == [first.path]


def test_an_earlier_commit_needs_cascade(table: BaseTable) -> None:
    first, second = _insert(table), _insert(table)
    with pytest.raises(EvoError, match="later commits depend on it"):
        rollback(table, first.instant)
    assert _instants(table) == [first.instant, second.instant]
    undo = rollback(table, first.instant, cascade=True)
    assert undo.metadata["rolled_back"] == [second.instant, first.instant]
    assert _instants(table) == [] and table.snapshot().files == ()


def test_creation_and_rollback_commits_cannot_be_undone(table: BaseTable) -> None:
    with pytest.raises(EvoError, match="no commit to roll back"):
        rollback(table)
    _insert(table), _insert(table)
    undo = rollback(table)
    with pytest.raises(EvoError, match=r"\(rollback\) cannot be rolled back"):
        rollback(table, undo.instant)
    create = table.timeline.completed()[0]
    with pytest.raises(EvoError, match=r"\(create\) cannot be rolled back"):
        rollback(table, create.instant)


def test_a_failed_attempt_is_rolled_back_with_its_files(table: BaseTable) -> None:
    kept = _insert(table)
    txn = Transaction(table, "commit", plan={"operation": "insert"}).__enter__()
    name = data_file_name(txn.instant, 0)
    (table.root / name).write_bytes(b"half")
    assert files_of_instant(table.root, txn.instant) == [table.root / name]
    assert rollback_failed(table) == []  # its writer (this process) is alive and it is new
    table.set_properties({"evonb.rollback.pending.timeout": "-1"})
    assert rollback_failed(table) == [txn.instant]
    assert not (table.root / name).exists() and (table.root / kept.path).exists()
    assert table.timeline.pending() == []
    last = table.timeline.last_completed()
    assert last.action == "rollback" and last.metadata["failed"] == [txn.instant]


def test_an_attempt_is_abandoned_when_old_or_forced() -> None:
    now = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
    alive = {"host": "nowhere.invalid", "pid": 1}  # another host: never known to be gone
    assert is_abandoned("20260101000000000", {"writer": alive}, timeout=3599, now=now)
    assert not is_abandoned("20260101000000000", {"writer": alive}, timeout=3600, now=now)
    assert is_abandoned("29990101000000000", {}, timeout=-1, now=now)
    assert not is_abandoned("not-an-instant", {}, timeout=10, now=now)
