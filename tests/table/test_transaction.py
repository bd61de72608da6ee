"""``Transaction``, the one commit path, on the format layer alone (no Spark): what a commit
leaves behind, and what an aborted attempt takes away."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evonb.errors import EvoError
from evonb.schema.schema import Schema
from evonb.table.layout import derive_layout
from evonb.table.names import data_file_name
from evonb.table.snapshot import DataFile
from evonb.table.table import BaseTable, create_table, open_table
from evonb.table.transaction import Transaction


@pytest.fixture
def table(tmp_path: Path) -> BaseTable:
    return create_table(tmp_path / "t", "id int, v string")


def _write(table: BaseTable, txn: Transaction, task: int = 0) -> DataFile:
    name = data_file_name(txn.instant, task)
    (table.root / name).write_bytes(b"x" * 10)
    return DataFile(path=name, version=table.schema.version_id, instant=txn.instant,
                    rows=1, bytes=10)


def _new_version(table: BaseTable, txn: Transaction) -> Schema:
    return Schema.from_ddl("id int, v string, w int").with_version(txn.instant)


def test_a_commit_is_on_the_timeline_with_its_plan_and_files(table: BaseTable) -> None:
    before = len(table.timeline.completed())
    with Transaction(table, "commit", plan={"operation": "insert"}) as txn:
        requested = next(i for i in table.timeline.pending() if i.timestamp == txn.instant)
        plan = table.timeline.read(requested)
        assert plan["operation"] == "insert" and plan["writer"]["pid"] == os.getpid()
        f = _write(table, txn)
        txn.stage([f], [])
        inflight = table.timeline.read(
            next(i for i in table.timeline.pending() if i.timestamp == txn.instant))
        assert inflight["files"] == [f.to_dict()]  # sizes, for recovery and check
        with txn.locked():
            record = txn.complete({"operation": "insert", "schema_version": "0" * 17,
                                   "added": [f.to_dict()], "removed": []})
    assert txn.base is not None and txn.base.action == "create"
    completed = table.timeline.completed()
    assert len(completed) == before + 1 and completed[-1].instant == record.instant
    assert (table.root / f.path).exists()
    assert table.timeline.pending() == []


def test_an_error_before_the_commit_point_takes_everything_back(table: BaseTable) -> None:
    versions = table.schema_store.versions()
    with pytest.raises(RuntimeError, match="boom"), \
            Transaction(table, "commit", plan={"operation": "insert"}) as txn:
        f = _write(table, txn)
        txn.wrote([f])
        new = _new_version(table, txn)
        with txn.locked():
            txn.save_version(new, derive_layout(new))
            assert txn.instant in table.schema_store.versions()
            raise RuntimeError("boom")
    assert not (table.root / f.path).exists()
    assert table.schema_store.versions() == versions
    assert table.timeline.pending() == []
    assert [c.action for c in table.timeline.completed()] == ["create"]


def test_a_block_that_ends_without_completing_is_aborted(table: BaseTable) -> None:
    with Transaction(table, "alter", plan={"operation": "alter"}) as txn:
        f = _write(table, txn)
        txn.wrote([f])
    assert table.timeline.pending() == [] and not (table.root / f.path).exists()
    assert len(table.timeline.completed()) == 1


def test_an_error_after_the_commit_point_keeps_the_commit(table: BaseTable) -> None:
    with pytest.raises(KeyboardInterrupt), \
            Transaction(table, "commit", plan={"operation": "insert"}) as txn:
        f = _write(table, txn)
        txn.stage([f], [])
        txn.complete({"operation": "insert", "schema_version": "0" * 17,
                      "added": [f.to_dict()], "removed": []})
        raise KeyboardInterrupt
    assert (table.root / f.path).exists()
    assert table.timeline.last_completed().instant == txn.instant


def test_rolling_forward_leaves_the_attempt_to_recovery(table: BaseTable) -> None:
    with pytest.raises(RuntimeError), Transaction(table, "rollback", plan={
            "operation": "rollback", "files": [], "versions": []}) as txn:
        txn.roll_forward()
        raise RuntimeError("interrupted")
    assert [i.timestamp for i in table.timeline.pending()] == [txn.instant]
    # the next transaction's recovery finishes it (this process is alive: force it by age)
    table.set_properties({"evonb.rollback.pending.timeout": "-1"})
    Transaction(table, "commit")
    assert table.timeline.pending() == []


def test_recovery_rolls_back_an_attempt_of_a_dead_process(table: BaseTable) -> None:
    # a writer process that begins an attempt, writes a file and dies without aborting
    code = (
        "import os, sys\n"
        "from evonb.table.table import open_table\n"
        "from evonb.table.transaction import Transaction\n"
        "from evonb.table.names import data_file_name\n"
        "t = open_table(sys.argv[1])\n"
        "txn = Transaction(t, 'commit', plan={'operation': 'insert'}).__enter__()\n"
        "name = data_file_name(txn.instant, 0)\n"
        "open(os.path.join(sys.argv[1], name), 'wb').write(b'x')\n"
        "print(txn.instant, name, flush=True)\n"
        "os._exit(0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(table.root)], check=True,
                         capture_output=True, text=True, env={**os.environ}).stdout.split()
    instant, name = out[-2:]
    assert [i.timestamp for i in table.timeline.pending()] == [instant]
    assert (table.root / name).exists()
    txn = Transaction(open_table(table.root), "commit")  # recovers before it begins
    assert table.timeline.pending() == []
    assert not (table.root / name).exists()
    last = table.timeline.last_completed()
    assert last.action == "rollback" and last.metadata["failed"] == [instant]
    assert txn.base is not None and txn.base.instant == last.instant


def test_the_instant_exists_only_inside_the_block(table: BaseTable) -> None:
    txn = Transaction(table, "commit")
    with pytest.raises(EvoError, match="not begun"):
        _ = txn.instant
    with txn:
        assert len(txn.instant) == 17
        assert json.dumps(txn.plan["writer"])  # who is writing, recorded in the plan
