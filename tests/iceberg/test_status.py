"""``t.iceberg_status()`` and ``evonb iceberg status``: how far the published Iceberg view is
from the table, read without writing anything."""

from __future__ import annotations

import pytest

import evonb
from evonb.__main__ import main
from evonb.iceberg import sync

pytestmark = pytest.mark.spark

ON = {"evonb.iceberg.enabled": "true"}


def _metadata_files(root):
    folder = root / "metadata"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_off_then_unpublished_then_current_then_behind(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int not null, v string", primary_key="id")
    t.write(spark.sql("select cast(id as int) id, 'a' v from range(0, 3)"))
    off = t.iceberg_status()
    assert (off.state, off.enabled, off.ok, off.metadata_file) == ("off", False, True, None)
    assert "evonb.iceberg.enabled" in off.hint

    first = t.timeline.last_completed().instant
    result = sync(t)  # published by hand: the status follows the published metadata
    status = t.iceberg_status()
    assert (status.state, status.metadata_version) == ("current", result.version)
    assert status.published_commit == status.latest_commit == first

    t.write(spark.sql("select cast(id as int) id, 'b' v from range(3, 5)"))
    before = _metadata_files(t.root)
    behind = t.iceberg_status()
    assert behind.state == "behind" and not behind.ok
    assert behind.published_commit == first
    assert behind.latest_commit == t.timeline.last_completed().instant != first
    assert "iceberg sync" in behind.hint
    assert _metadata_files(t.root) == before  # the status writes nothing

    sync(t)
    assert t.iceberg_status().state == "current"
    t.alter("ALTER TABLE t RENAME COLUMN v TO value")  # a schema-only commit
    assert t.iceberg_status().state == "behind"
    sync(t)
    assert t.iceberg_status().state == "current"


def test_enabled_tables_stay_current_and_a_block_names_the_column(spark, tmp_path, capsys):
    t = evonb.create_table(tmp_path / "t", "id int not null, n int", primary_key="id",
                           properties=ON)
    assert t.iceberg_status().state == "current"
    t.write(spark.sql("select cast(id as int) id, cast(id as int) n from range(0, 3)"))
    assert t.iceberg_status().state == "current"
    t.alter("ALTER TABLE t ALTER COLUMN n TYPE string")  # no Iceberg promotion
    status = t.iceberg_status()
    assert status.state == "blocked" and not status.ok
    assert "'n'" in status.reason and "t.rewrite()" in status.hint
    assert main(["iceberg", "status", str(t.root)]) == 1
    out = capsys.readouterr().out
    assert "blocked" in out and "'n'" in out and "t.rewrite()" in out
    t.rewrite(purge_dropped=True)
    assert t.iceberg_status().state == "current"
    assert main(["iceberg", "status", str(t.root)]) == 0
    assert ": current" in capsys.readouterr().out


def test_merge_on_read_waits_for_compaction(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int not null, v string", primary_key="id",
                           table_type="mor", properties=ON)
    t.write(spark.sql("select cast(id as int) id, 'a' v from range(0, 4)"))
    t.write(spark.sql("select cast(id as int) id, 'b' v from range(2, 6)"), "upsert")
    status = t.iceberg_status()
    assert status.state == "uncompacted" and "compact" in status.hint
    assert status.failure is not None and "compact" in status.failure
    t.compact()
    status = t.iceberg_status()
    assert (status.state, status.failure) == ("current", None)
    assert status.published_commit == status.latest_commit
