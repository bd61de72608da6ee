"""With ``evonb.iceberg.enabled``, every commit publishes Iceberg metadata; a failure never
fails the commit, is recorded and reported by ``evonb check``, and clears once published."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

import evonb
from evonb.errors import EvoError
from evonb.table.check import check_table

pytestmark = pytest.mark.spark

ON = {"evonb.iceberg.enabled": "true"}


def _latest(root: Path) -> tuple[int, StaticTable]:
    n = int((root / "metadata" / "version-hint.text").read_text().strip())
    return n, StaticTable.from_metadata(str(root / "metadata" / f"v{n}.metadata.json"))


def _rows(arrow_table) -> list[dict]:
    return sorted(arrow_table.to_pylist(), key=lambda r: r["id"])


def test_every_commit_publishes_when_enabled_at_create(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int not null, v string", primary_key="id",
                           properties=ON)
    n0, _ = _latest(t.root)  # the create commit published already
    t.write(spark.sql("select cast(id as int) id, concat('v', id) v from range(0, 4)"))
    n1, ice = _latest(t.root)
    assert n1 == n0 + 1
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow()) == [
        {"id": i, "v": f"v{i}"} for i in range(4)]
    t.alter("ALTER TABLE t RENAME COLUMN v TO value")
    n2, ice = _latest(t.root)
    assert n2 == n1 + 1
    assert ice.scan().to_arrow().column_names == ["id", "value"]
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
    assert [s.snapshot_id for s in ice.metadata.snapshots] and ice.metadata.current_snapshot_id
    assert check_table(t.root).ok


def test_off_by_default_and_turning_it_on_publishes_the_history(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int not null, v string", primary_key="id")
    for lo in (0, 3):
        t.write(spark.sql(f"select cast(id as int) id, 'a' v from range({lo}, {lo + 3})"))
    assert not (t.root / "metadata").exists()
    t.alter("ALTER TABLE t SET TBLPROPERTIES ('evonb.iceberg.enabled' = 'true')")
    _, ice = _latest(t.root)
    assert len(ice.metadata.snapshots) == 2  # one per data commit
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
    with pytest.raises(EvoError, match=r"evonb\.iceberg\.enabled"):
        t.set_properties({"evonb.iceberg.enabled": "sometimes"})


def test_a_failure_is_recorded_reported_and_cleared(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int not null, v string", primary_key="id",
                           table_type="mor", properties=ON)
    t.write(spark.sql("select cast(id as int) id, 'a' v from range(0, 4)"))
    t.write(spark.sql("select cast(id as int) id, 'b' v from range(2, 6)"), "upsert")
    # The upsert committed (log blocks) though Iceberg cannot express it yet.
    assert sorted(r["v"] for r in t.to_arrow().to_pylist()) == ["a", "a", "b", "b", "b", "b"]
    status = json.loads((t.root / ".evo" / "iceberg.json").read_text())
    assert status["state"] == "failed" and "compact" in status["reason"]
    assert status["commit"] == t.timeline.last_completed().instant
    report = check_table(t.root)
    assert [p.kind for p in report.problems] == ["iceberg"]
    assert "iceberg sync" in report.problems[0].message
    t.compact()  # a commit: publishes again, and the record goes
    assert not (t.root / ".evo" / "iceberg.json").exists()
    assert check_table(t.root).ok
    _, ice = _latest(t.root)
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
