"""Merge-on-read (:mod:`evonb.spark.mor`): file groups of a snapshot, the groups an incremental
read takes, the per-key resolution of log records and their merge with the base rows by key,
and the log format property."""

from __future__ import annotations

import pytest

import evonb
from evonb.errors import EvoError
from evonb.spark.avro_log import LOG_FORMAT_PROPERTY
from evonb.spark.mor import file_groups, log_format, merge, resolve_logs, since, subset
from evonb.table.config import TableConfig
from evonb.table.data_file import DataFile
from evonb.table.snapshot import Snapshot

I1, I2, I3 = "20260101000000001", "20260101000000002", "20260101000000003"
A, B = f"a_0_{I1}.parquet", f"b_0_{I2}.parquet"


def _log(name: str, instant: str, base: str) -> DataFile:
    return DataFile(path=f".{name}.log.{instant}_0.avro", version="v1", instant=instant,
                    kind="log", base=base)


def _snapshot() -> Snapshot:
    files = (DataFile(path=A, version="v1", instant=I1), DataFile(path=B, version="v1",
                                                                  instant=I2))
    logs = (_log("a", I3, A), _log("a", I2, A))
    return Snapshot(instant=I3, schema_version="v1", files=files, logs=logs)


def test_file_groups_subset_and_since():
    snap = _snapshot()
    assert file_groups(snap) == {A: [snap.logs[1], snap.logs[0]]}  # oldest first
    part = subset(snap, [snap.files[1]])
    assert (part.files, part.logs) == ((snap.files[1],), ())
    # I2 wrote base file B and a block of A's group: both groups, whole
    assert [f.path for f in since(snap, [I2]).files] == [A, B]
    assert len(since(snap, [I2]).logs) == 2
    assert [f.path for f in since(snap, [I1]).files] == [A]
    assert since(snap, ["20990101000000000"]).files == ()


@pytest.mark.spark
def test_resolved_logs_merge_with_the_base_rows_by_key(spark):
    cols = "id long, v string, ts long, _evo_commit_time string"
    base = spark.createDataFrame([(1, "b1", 5, I1), (2, "b2", 5, I1), (3, "b3", 5, I1),
                                  (4, "b4", 9, I1), (5, "b5", 5, I1)], cols)
    logs = spark.createDataFrame([
        (1, "l1", 4, I2, False),                      # an older precombine value: base wins
        (2, "l2a", 6, I2, False), (2, "l2b", 7, I3, False),  # the larger value wins
        (3, None, None, I2, True),                     # deleted
        (4, None, None, I2, True), (4, "l4", 1, I3, False),  # re-inserted after a delete
    ], cols + ", _evo_deleted boolean")
    resolved = resolve_logs(logs, ["id"], "ts")
    assert sorted(r.id for r in resolved.collect()) == [1, 2, 3, 4]
    merged = sorted(tuple(r) for r in merge(base, resolved, ["id"], "ts").collect())
    assert merged == [(1, "b1", 5, I1), (2, "l2b", 7, I3), (4, "l4", 1, I3), (5, "b5", 5, I1)]
    # without a precombine column the latest log record wins over the base row
    plain = merge(base, resolve_logs(logs, ["id"], None), ["id"], None, broadcast=True)
    assert sorted(tuple(r) for r in plain.collect()) == [
        (1, "l1", 4, I2), (2, "l2b", 7, I3), (4, "l4", 1, I3), (5, "b5", 5, I1)]


def test_log_format_is_the_property_checked(tmp_path):
    ddl = "id bigint not null, v string"
    t = evonb.create_table(tmp_path / "t", ddl, primary_key="id", table_type="mor")
    assert log_format(t) == "avro"
    t = evonb.create_table(tmp_path / "p", ddl, primary_key="id", table_type="mor",
                           properties={LOG_FORMAT_PROPERTY: " Parquet "})
    assert log_format(t) == "parquet"
    with pytest.raises(EvoError, match="not one of avro, parquet"):
        evonb.create_table(tmp_path / "o", ddl, primary_key="id", table_type="mor",
                           properties={LOG_FORMAT_PROPERTY: "orc"})
    # a value stored before creation checked it is refused when used
    path = TableConfig.path(t.root)
    path.write_text(path.read_text().replace('" Parquet "', '"orc"'))
    with pytest.raises(EvoError, match="not a log format"):
        log_format(evonb.open_table(t.path))
