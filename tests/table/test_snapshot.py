"""``replay``: the live files of a table from its commits' added and removed lists."""

from __future__ import annotations

from evonb.table.data_file import DataFile
from evonb.table.snapshot import replay
from evonb.table.timeline import CommitRecord

V0 = "00000000000000000"
V1 = "20260101000000005"


def _file(name: str, instant: str, version: str = V0, **kw) -> DataFile:
    return DataFile(path=name, version=version, instant=instant, rows=kw.pop("rows", 1), **kw)


def _commit(instant: str, added=(), removed=(), version: str = V0) -> CommitRecord:
    return CommitRecord(instant, "commit", {"schema_version": version,
                                            "added": [f.to_dict() for f in added],
                                            "removed": list(removed)})


def test_replay_applies_adds_and_removes_in_order():
    a = _file("a.parquet", "20260101000000001", rows=2)
    b = _file("b.parquet", "20260101000000002", rows=3)
    a2 = _file("a2.parquet", "20260101000000006", version=V1, rows=2)
    snap = replay([_commit("20260101000000001", [a]),
                   _commit("20260101000000002", [b]),
                   _commit("20260101000000006", [a2], removed=["a.parquet"], version=V1)], V0)
    assert snap.instant == "20260101000000006" and snap.schema_version == V1
    assert [f.path for f in snap.files] == ["b.parquet", "a2.parquet"]
    assert snap.rows == 5
    assert snap.by_version() == {V0: (b,), V1: (a2,)}


def test_log_blocks_live_only_beside_their_live_base_file():
    a = _file("a.parquet", "20260101000000001")
    b = _file("b.parquet", "20260101000000001")
    log_a = _file(".a.log.1", "20260101000000002", kind="log", base="a.parquet")
    log_b = _file(".b.log.1", "20260101000000002", kind="log", base="b.parquet")
    a2 = _file("a2.parquet", "20260101000000003")
    snap = replay([_commit("20260101000000001", [a, b]),
                   _commit("20260101000000002", [log_a, log_b]),
                   _commit("20260101000000003", [a2], removed=["a.parquet"])], V0)
    assert snap.logs == (log_b,)
    assert {f.path for f in snap.files} == {"b.parquet", "a2.parquet"}


def test_an_empty_history_is_an_empty_table_in_the_initial_version():
    snap = replay([], V1)
    assert (snap.instant, snap.schema_version, snap.files, snap.rows) == (None, V1, (), 0)
