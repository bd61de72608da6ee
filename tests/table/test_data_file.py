"""``DataFile``: a commit's file entry, to and from its JSON form."""

from __future__ import annotations

from evonb.table.data_file import DataFile

V = "20260101000000000"
W = "20260101000000001"


def test_a_log_block_with_key_stats_round_trips_through_json():
    f = DataFile(path=f"p=1/.f_{W}.log.1", version=V, instant=W, partition="p=1", rows=3,
                 bytes=40, kind="log", base="p=1/f.parquet", key_stats=((1, 5, 9),))
    data = f.to_dict()
    assert data["base"] == "p=1/f.parquet"
    assert data["key_stats"] == {"1": {"min": 5, "max": 9}}
    assert DataFile.from_dict(data) == f


def test_a_base_file_leaves_unknown_fields_out_and_reads_them_as_defaults():
    f = DataFile(path="a.parquet", version=V, instant=W)
    assert f.to_dict() == {"path": "a.parquet", "version": V, "instant": W, "partition": "",
                           "rows": 0, "bytes": 0, "kind": "base"}
    assert DataFile.from_dict({"path": "a.parquet", "version": V, "instant": W}) == f


def test_malformed_key_stats_read_as_none():
    data = {"path": "a.parquet", "version": V, "instant": W, "rows": "7",
            "key_stats": {"id": {"min": 1, "max": 2}}}
    f = DataFile.from_dict(data)
    assert f.key_stats is None and f.rows == 7
