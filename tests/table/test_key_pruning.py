"""Upserts and deletes look for existing keys only in files whose recorded key range overlaps
the incoming keys: on real Spark and real Parquet, checked against references computed in
Python, through renames, adopted files, files without statistics, composite, partitioned,
string and date keys, deletes and merge-on-read tables."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evonb
from evonb.errors import DataValidationError
from evonb.spark.session import temporary_settings
from evonb.spark.writer import TIMESTAMP_TYPE_OPTION
from evonb.table.fsutil import atomic_write_json

pytestmark = pytest.mark.spark

COLS = "id bigint, name string, ts bigint"


@pytest.fixture(autouse=True)
def exact_lookup(monkeypatch):
    """These tests are about the exact key lookup through Spark: small copy-on-write merges
    skip it by default (``evonb.write.direct_merge.bytes``, tested in
    ``test_direct_merge.py``), and small rewrites run in the driver
    (``evonb.write.driver_rewrite.bytes``, ``tests/integration/test_cow_driver.py``)."""
    import evonb.spark.cow_driver as cow_driver
    import evonb.spark.writes as writes

    monkeypatch.setattr(writes, "DEFAULT_DIRECT_MERGE_BYTES", 0)
    monkeypatch.setattr(cow_driver, "DEFAULT_REWRITE_BYTES", 0)


def _last(t):
    return t.timeline.last_completed().metadata


def _live(t):
    return sorted(f.path for f in t.snapshot().files)


def _insert(t, spark, rows, schema=COLS):
    """One insert commit writing exactly one file; returns its path."""
    t.write(spark.createDataFrame(rows, schema).coalesce(1))
    added = _last(t)["added"]
    assert len(added) == 1
    return added[0]["path"]


def _state(t, key=("id",)):
    return {tuple(r[k] for k in key): r.asDict() for r in t.read().collect()}


def _upsert_ref(state, rows, names, key=("id",), pre="ts"):
    """The reference upsert: the larger precombine value wins, the incoming row on a tie."""
    out = dict(state)
    for row in rows:
        new = dict(zip(names, row, strict=True))
        k = tuple(new[c] for c in key)
        old = out.get(k)
        if old is None or old[pre] is None or (new[pre] is not None and new[pre] >= old[pre]):
            out[k] = new
    return out


@pytest.fixture
def ranged(spark, warehouse):
    """Four files of contiguous id ranges [0,100), [100,200), [200,300), [300,400)."""
    t = evonb.create_table(warehouse / "ranged", "id bigint not null, name string, ts bigint",
                           primary_key="id", precombine="ts")
    files = [_insert(t, spark, [(i, f"n{i}", 1) for i in range(lo, lo + 100)])
             for lo in (0, 100, 200, 300)]
    return t, files


def test_files_record_their_key_range(ranged):
    t, files = ranged
    stats = {f.path: f.key_stats for f in t.snapshot().files}
    id_field = t.schema.find_id("id")
    assert [stats[p] for p in files] == [((id_field, lo, lo + 99),) for lo in (0, 100, 200, 300)]
    entry = json.loads((t.timeline.path / f"{t.history()[1].instant}.commit").read_text())
    assert entry["added"][0]["key_stats"] == {str(id_field): {"min": 0, "max": 99}}


def test_upsert_in_one_file_rewrites_only_that_file(spark, ranged):
    t, files = ranged
    before = _state(t)
    # the range's first and last keys, keys inside, and a loser (ts 0 < 1)
    rows = [(100, "first", 2), (199, "last", 2), (150, "mid", 5), (160, "old", 0)]
    t.write(spark.createDataFrame(rows, COLS), mode="upsert")
    meta = _last(t)
    assert meta["removed"] == [files[1]]
    assert meta["key_lookup"] == {"live": 4, "scanned": 1}
    assert set(_live(t)) == {files[0], files[2], files[3], *(a["path"] for a in meta["added"])}
    expected = _upsert_ref(before, rows, ["id", "name", "ts"])
    assert _state(t) == expected
    assert _state(t)[(160,)]["name"] == "n160" and _state(t)[(199,)]["name"] == "last"
    # the rewritten file records its range too: the next upsert there scans it alone
    assert all(a["key_stats"] for a in meta["added"])
    holding = [f for f in t.snapshot().files if f.key_stats[0][1] <= 120 <= f.key_stats[0][2]]
    t.write(spark.createDataFrame([(120, "again", 9)], COLS), mode="upsert")
    assert _last(t)["key_lookup"]["scanned"] == len(holding) >= 1
    assert _state(t)[(120,)]["name"] == "again"


def test_new_keys_scan_nothing(spark, ranged):
    t, _ = ranged
    before = _state(t)
    rows = [(1000, "a", 1), (1005, "b", 1)]
    t.write(spark.createDataFrame(rows, COLS), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 4, "scanned": 0}
    assert meta["removed"] == []
    (new,) = [a["path"] for a in meta["added"]]
    rows2 = [(1001, "c", 1), (1002, "d", 1)]
    t.write(spark.createDataFrame(rows2, COLS), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 5, "scanned": 1}  # only the file of [1000, 1005]
    assert meta["removed"] == []  # the lookup is exact: it holds neither key
    # [-5, 1000] overlaps every file but [1001, 1002]; only the one holding 1000 is rewritten
    rows3 = [(-5, "e", 1), (1000, "f", 2)]
    t.write(spark.createDataFrame(rows3, COLS), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 6, "scanned": 5}
    assert meta["removed"] == [new]
    assert _state(t) == _upsert_ref(before, rows + rows2 + rows3, ["id", "name", "ts"])
    t.write(spark.createDataFrame([], COLS), mode="upsert")
    assert _last(t)["key_lookup"]["scanned"] == 0 and _last(t)["added"] == []


def _strip_stats(t):
    """Rewrite every completed commit without key statistics, as written before they existed."""
    for p in sorted(Path(t.timeline.path).iterdir()):
        if not p.name.endswith(".commit"):
            continue
        data = json.loads(p.read_text())
        for entry in data.get("added", []):
            entry.pop("key_stats", None)
        atomic_write_json(p, data)


def test_files_without_statistics_are_always_scanned(spark, ranged):
    t, files = ranged
    _strip_stats(t)
    t = evonb.open_table(t.root)
    assert all(f.key_stats is None for f in t.snapshot().files)
    before = _state(t)
    rows = [(250, "x", 3), (299, "y", 3)]
    t.write(spark.createDataFrame(rows, COLS), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 4, "scanned": 4}
    assert meta["removed"] == [files[2]]
    state = _upsert_ref(before, rows, ["id", "name", "ts"])
    assert _state(t) == state
    assert t.read().count() == 400  # no key went in twice
    rewritten = len(meta["added"])
    # the new files have statistics, the old ones still none: those are read, the new not
    rows = [(10, "z", 3)]
    t.write(spark.createDataFrame(rows, COLS), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 3 + rewritten, "scanned": 3}
    assert meta["removed"] == [files[0]]
    assert _state(t) == _upsert_ref(state, rows, ["id", "name", "ts"])
    # a delete in the stripped files
    t.write(spark.createDataFrame([(350,), (351,)], "id bigint"), mode="delete")
    assert _last(t)["removed"] == [files[3]]
    assert sorted(k[0] for k in _state(t)) == [i for i in range(400) if i not in (350, 351)]


def test_delete_prunes(spark, ranged):
    t, files = ranged
    t.write(spark.createDataFrame([(300,), (399,), (5000,)], "id bigint"), mode="delete")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 4, "scanned": 1}  # [300, 5000] overlaps the 4th
    assert meta["removed"] == [files[3]]
    t2 = t
    t2.write(spark.createDataFrame([(7000,)], "id bigint"), mode="delete")
    assert _last(t2)["key_lookup"]["scanned"] == 0 and _last(t2)["removed"] == []
    t2.write(spark.createDataFrame([(42,)], "id bigint"), mode="delete")
    assert _last(t2)["key_lookup"]["scanned"] == 1 and _last(t2)["removed"] == [files[0]]
    assert sorted(k[0] for k in _state(t2)) == [i for i in range(400) if i not in (42, 300, 399)]


def test_renamed_key_column_prunes_by_field_id(spark, ranged):
    t, files = ranged
    t.alter("ALTER TABLE t RENAME COLUMN id TO key")
    # a new column takes the key's old name; its values would mislead pruning by name
    t.alter("ALTER TABLE t ADD COLUMN id bigint")
    before = _state(t, ("key",))
    assert before[(205,)] == {"key": 205, "name": "n205", "ts": 1, "id": None}
    rows = [(205, "r", 2, 0), (206, "s", 2, 399)]
    t.write(spark.createDataFrame(rows, "key bigint, name string, ts bigint, id bigint"),
            mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 4, "scanned": 1}
    assert meta["removed"] == [files[2]]
    expected = _upsert_ref(before, rows, ["key", "name", "ts", "id"], key=("key",))
    assert _state(t, ("key",)) == expected
    assert t.read().count() == 400


def test_incoming_narrower_key_type(spark, ranged):
    t, files = ranged
    before = _state(t)
    rows = [(301, "int", 4), (2**31 - 1, "big", 4)]
    t.write(spark.createDataFrame(rows, "id int, name string, ts bigint"), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 4, "scanned": 1}
    assert meta["removed"] == [files[3]]
    assert _state(t) == _upsert_ref(before, rows, ["id", "name", "ts"])


def test_adopted_files_widened_between_files(spark, tmp_path):
    """Adopted files have no statistics and are scanned (one holds the key as int, one as
    bigint); files written since have statistics."""
    root = tmp_path / "adopted"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int32()),
                             "name": [f"a{i}" for i in range(100)]}), root / "a.parquet")
    pq.write_table(pa.table({"id": pa.array(range(100, 200), pa.int64()),
                             "name": [f"b{i}" for i in range(100, 200)]}), root / "b.parquet")
    t = evonb.convert(root, primary_key="id", spark=spark)
    assert str(t.schema.find("id").type) == "bigint"
    assert all(f.key_stats is None for f in t.snapshot().files)
    state = {(r["id"],): r.asDict() for r in t.read().collect()}
    rows = [(50, "x"), (150, "y"), (3_000_000_000, "z")]
    t.write(spark.createDataFrame(rows, "id bigint, name string"), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 2, "scanned": 2}
    assert sorted(meta["removed"]) == ["a.parquet", "b.parquet"]
    for r in rows:
        state[(r[0],)] = {"id": r[0], "name": r[1]}
    assert _state(t) == state
    assert all(f.key_stats for f in t.snapshot().files)
    rows = [(4_000_000_000, "w")]
    t.write(spark.createDataFrame(rows, "id bigint, name string"), mode="upsert")
    assert _last(t)["key_lookup"]["scanned"] == 0
    state[(4_000_000_000,)] = {"id": 4_000_000_000, "name": "w"}
    assert _state(t) == state


def test_adopted_null_keys_are_kept(spark, tmp_path):
    root = tmp_path / "nulls"
    root.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, None, 3], pa.int64()), "v": ["a", "n", "c"]}),
                   root / "a.parquet")
    t = evonb.convert(root, primary_key="id", spark=spark)
    t.write(spark.createDataFrame([(3, "C")], "id bigint, v string"), mode="upsert")
    (new,) = t.snapshot().files
    assert new.key_stats == ((t.schema.find_id("id"), 1, 3),)  # nulls are not in the range
    t.write(spark.createDataFrame([(1, "A")], "id bigint, v string"), mode="upsert")
    assert _last(t)["key_lookup"] == {"live": 1, "scanned": 1}
    assert sorted((r["id"] or 0, r["v"]) for r in t.read().collect()) == [
        (0, "n"), (1, "A"), (3, "C")]
    with pytest.raises(DataValidationError):
        t.write(spark.createDataFrame([(None, "x")], "id bigint, v string"), mode="upsert")
    assert t.read().count() == 3


def test_composite_keys(spark, warehouse):
    t = evonb.create_table(warehouse / "comp", "region string not null, n int not null, v string",
                           primary_key=["region", "n"])
    schema = "region string, n int, v string"
    files = [_insert(t, spark, [(r, n, "0") for n in range(lo, lo + 50)], schema)
             for r, lo in (("eu", 0), ("us", 0), ("eu", 50))]
    key = ("region", "n")
    state = _state(t, key)
    rows = [("eu", 10, "a"), ("eu", 20, "b")]
    t.write(spark.createDataFrame(rows, schema), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 3, "scanned": 1}
    assert meta["removed"] == [files[0]]
    for r in rows:
        state[r[:2]] = dict(zip(["region", "n", "v"], r, strict=True))
    assert _state(t, key) == state
    # each column's range overlaps every file: all are scanned, only two hold a key
    rows = [("eu", 55, "c"), ("us", 5, "d"), ("us", 60, "e")]
    t.write(spark.createDataFrame(rows, schema), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"]["scanned"] == 3
    assert sorted(meta["removed"]) == sorted([files[1], files[2]])
    for r in rows:
        state[r[:2]] = dict(zip(["region", "n", "v"], r, strict=True))
    assert _state(t, key) == state
    # a pair whose region is in no file's range
    t.write(spark.createDataFrame([("ap", 5, "f")], schema), mode="upsert")
    assert _last(t)["key_lookup"]["scanned"] == 0
    assert len(_state(t, key)) == len(state) + 1


def test_partitioned_table(spark, warehouse):
    t = evonb.create_table(warehouse / "part", "id bigint not null, region string, ts bigint",
                           primary_key="id", precombine="ts", partition_by="region")
    schema = "id bigint, region string, ts bigint"
    t.write(spark.createDataFrame([(i, "a" if i < 50 else "b", 1) for i in range(100)],
                                  schema).coalesce(1))
    t.write(spark.createDataFrame([(i, "a" if i % 2 == 0 else "b", 1) for i in range(100, 200)],
                                  schema).coalesce(1))
    by_range = {(f.partition, f.key_stats[0][1], f.key_stats[0][2]): f.path
                for f in t.snapshot().files}
    assert set(by_range) == {("region=a", 0, 49), ("region=b", 50, 99),
                             ("region=a", 100, 198), ("region=b", 101, 199)}
    state = _state(t)
    rows = [(110, "a", 2), (150, "a", 2)]
    t.write(spark.createDataFrame(rows, schema), mode="upsert")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 4, "scanned": 2}
    assert meta["removed"] == [by_range[("region=a", 100, 198)]]
    state = _upsert_ref(state, rows, ["id", "region", "ts"])
    assert _state(t) == state
    assert all(a["path"].startswith("region=a/") for a in meta["added"])
    rows = [(10, "a", 3)]
    t.write(spark.createDataFrame(rows, schema), mode="upsert")
    assert _last(t)["key_lookup"] == {"live": 4, "scanned": 1}
    assert _last(t)["removed"] == [by_range[("region=a", 0, 49)]]
    state = _upsert_ref(state, rows, ["id", "region", "ts"])
    # a key moving to another partition: its old file is rewritten without it
    rows = [(60, "a", 4)]
    t.write(spark.createDataFrame(rows, schema), mode="upsert")
    assert _last(t)["removed"] == [by_range[("region=b", 50, 99)]]
    state = _upsert_ref(state, rows, ["id", "region", "ts"])
    assert _state(t) == state
    assert t.read().count() == 200
    assert t.read().filter("id = 60").collect()[0]["region"] == "a"


def test_string_keys_order_by_code_point(spark, warehouse):
    t = evonb.create_table(warehouse / "str", "k string not null, v int", primary_key="k")
    schema = "k string, v int"
    files = [_insert(t, spark, [(k, 0) for k in keys], schema)
             for keys in (["apple", "banana", "cherry"], ["zebra", "Ω", "中文"],
                          ["Zulu", "Éclair"], ["", "A"])]
    stats = {f.path: f.key_stats[0][1:] for f in t.snapshot().files}
    assert [stats[p] for p in files] == [("apple", "cherry"), ("zebra", "中文"),
                                         ("Zulu", "Éclair"), ("", "A")]
    t.write(spark.createDataFrame([("Ω", 1)], schema), mode="upsert")
    assert _last(t)["key_lookup"] == {"live": 4, "scanned": 1}
    assert _last(t)["removed"] == [files[1]]
    t.write(spark.createDataFrame([("", 2)], schema), mode="upsert")
    assert _last(t)["key_lookup"]["scanned"] == 1
    assert _last(t)["removed"] == [files[3]]
    # quotes, backslashes and line breaks in the range filter of the key scan
    odd = ["it's", "back\\slash", "new\nline", "x`y"]
    _strip_stats(t)  # the range filter alone must find them
    t = evonb.open_table(t.root)
    t.write(spark.createDataFrame([(k, 0) for k in odd], schema).coalesce(1))
    t.write(spark.createDataFrame([("it's", 3), ("back\\slash", 4), ("new\nline", 5)], schema),
            mode="upsert")
    assert _last(t)["key_lookup"]["scanned"] == 5
    assert len(_last(t)["removed"]) == 1
    assert t.read().count() == 14  # every key once
    assert dict((r["k"], r["v"]) for r in t.read().collect()) == {
        "apple": 0, "banana": 0, "cherry": 0, "zebra": 0, "Ω": 1, "中文": 0, "Zulu": 0,
        "Éclair": 0, "": 2, "A": 0, "it's": 3, "back\\slash": 4, "new\nline": 5, "x`y": 0}


def test_date_keys(spark, warehouse):
    t = evonb.create_table(warehouse / "dates", "d date not null, v int", primary_key="d")
    schema = "d date, v int"
    day = dt.date(2026, 1, 1)
    files = [_insert(t, spark, [(day + dt.timedelta(days=lo + i), 0) for i in range(30)], schema)
             for lo in (0, 30, 60)]
    assert t.snapshot().files[1].key_stats[0][1:] == ("2026-01-31", "2026-03-01")
    t.write(spark.createDataFrame([(day + dt.timedelta(days=59), 7)], schema), mode="upsert")
    assert _last(t)["key_lookup"] == {"live": 3, "scanned": 1}
    assert _last(t)["removed"] == [files[1]]
    got = {r["d"]: r["v"] for r in t.read().collect()}
    assert len(got) == 90 and got[day + dt.timedelta(days=59)] == 7
    assert sum(got.values()) == 7


def test_merge_on_read_prunes_base_files(spark, warehouse):
    t = evonb.create_table(warehouse / "mor", "id bigint not null, name string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    files = [_insert(t, spark, [(i, f"n{i}", 1) for i in range(lo, lo + 100)])
             for lo in (0, 100, 200)]
    before = _state(t)
    rows = [(110, "u", 2), (111, "old", 0), (500, "new", 1)]
    t.write(spark.createDataFrame(rows, COLS), mode="upsert")
    meta = _last(t)
    # [110, 500]: 2nd and 3rd, looked up by the driver (a small delta)
    assert meta["key_lookup"] == {"live": 3, "scanned": 2, "driver": True}
    logs = [a for a in meta["added"] if a["kind"] == "log"]
    assert [a["base"] for a in logs] == [files[1]]
    state = _upsert_ref(before, rows, ["id", "name", "ts"])
    assert _state(t) == state
    t.write(spark.createDataFrame([(250,)], "id bigint"), mode="delete")
    meta = _last(t)
    assert meta["key_lookup"] == {"live": 4, "scanned": 1, "driver": True}
    assert [a["base"] for a in meta["added"]] == [files[2]]
    del state[(250,)]
    assert _state(t) == state
    t.compact()
    compacted = _last(t)["added"]
    assert compacted and all(a["key_stats"] for a in compacted)
    assert _state(t) == state


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_timestamp_keys(spark, warehouse, kind):
    """Instants compare as microseconds, local date-times as such. evonb writes timestamps as
    INT64 microseconds, which have statistics; files Spark wrote as INT96 (its default, which
    a session can still choose) have none and are always scanned."""
    t = evonb.create_table(warehouse / kind, f"k {kind} not null, v int", primary_key="k")
    schema = f"k {kind}, v int"
    start = dt.datetime(2026, 1, 1, 10, 0, 0)
    files = [_insert(t, spark, [(start + dt.timedelta(minutes=lo + i), 0) for i in range(10)],
                     schema) for lo in (0, 10, 20)]
    assert [f.key_stats is not None for f in t.snapshot().files] == [True] * 3
    last_of_second = start + dt.timedelta(minutes=19)
    t.write(spark.createDataFrame([(last_of_second, 1)], schema), mode="upsert")
    assert _last(t)["key_lookup"] == {"live": 3, "scanned": 1}
    assert _last(t)["removed"] == [files[1]]
    with temporary_settings(spark, {TIMESTAMP_TYPE_OPTION: "INT96"}):
        _insert(t, spark, [(start + dt.timedelta(hours=5), 0)], schema)
    t.write(spark.createDataFrame([(start + dt.timedelta(minutes=5), 2)], schema),
            mode="upsert")
    # INT96 instants carry no statistics: that file is scanned too
    assert _last(t)["key_lookup"]["scanned"] == (2 if kind == "timestamp" else 1)
    assert _last(t)["removed"] == [files[0]]
    got = {r["k"]: r["v"] for r in t.read().collect()}
    assert len(got) == 31 and got[last_of_second] == 1
    assert got[start + dt.timedelta(minutes=5)] == 2 and sum(got.values()) == 3
