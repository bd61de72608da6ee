"""Merge-on-read tables: upserts and deletes append log blocks beside the base files, snapshot
reads merge them by key and precombine across schema versions, read-optimized reads see the
base files only; time travel, incremental reads and compaction give the same rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import evonb
from evonb.spark.avro_log import parse_log_name

pytestmark = pytest.mark.spark

COLS = "id long, name string, price double, qty int, ts long"


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _disk(t):
    """Data files and log blocks on disk (relative path -> (size, mtime))."""
    out = {}
    for p in Path(t.root).rglob("*"):
        if p.is_file() and ".evo" not in p.relative_to(t.root).parts:
            st = p.stat()
            out[p.relative_to(t.root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def evolved(spark, tmp_path_factory):
    """A MOR table through upserts, a delete, DDL (drop, int->bigint, rename, add with a
    default) and more upserts/deletes after it; with the expected state after each commit."""
    t = evonb.create_table(tmp_path_factory.mktemp("mor") / "t",
                           "id bigint not null, name string, price double, qty int, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    states = {}
    t.write(spark.createDataFrame([(i, f"n{i}", i * 1.5, i, 1) for i in range(6)], COLS),
            "upsert")
    c1 = t.history()[-1].instant
    states[c1] = {i: (i, f"n{i}", i * 1.5, i, 1) for i in range(6)}
    before = _disk(t)
    # 1 wins (ts 2 > 1); 2 loses (ts 0 < 1); 3 ties (ts 1): the later write wins; 9 is new.
    t.write(spark.createDataFrame([(1, "u1", 10.0, 100, 2), (2, "old", 0.0, 0, 0),
                                   (3, "tie", 3.3, 33, 1), (9, "new9", 9.0, 9, 2)], COLS),
            "upsert")
    c2 = t.history()[-1].instant
    after = _disk(t)
    s = dict(states[c1])
    s.update({1: (1, "u1", 10.0, 100, 2), 3: (3, "tie", 3.3, 33, 1), 9: (9, "new9", 9.0, 9, 2)})
    states[c2] = s
    t.write(spark.createDataFrame([(4,), (99,)], "id long"), "delete")
    c3 = t.history()[-1].instant
    states[c3] = {k: v for k, v in s.items() if k != 4}
    t.alter("ALTER TABLE t DROP COLUMN name; ALTER TABLE t ALTER COLUMN qty TYPE bigint; "
            "ALTER TABLE t RENAME COLUMN price TO cost; "
            "ALTER TABLE t ADD COLUMNS (color string DEFAULT 'red')")
    c4 = t.history()[-1].instant
    latest = {k: (v[0], v[2], v[3], v[4], "red") for k, v in states[c3].items()}
    states[c4] = dict(latest)
    # After the DDL: a bigint beyond int range, a new key, a delete and a re-insert of 4.
    t.write(spark.createDataFrame([(2, 20.0, 2**40, 3, "blue"), (4, 4.4, 4, 0, None),
                                   (5, 55.0, 5, 0, "lost")],
                                  "id long, cost double, qty long, ts long, color string"),
            "upsert")
    c5 = t.history()[-1].instant
    latest.update({2: (2, 20.0, 2**40, 3, "blue"), 4: (4, 4.4, 4, 0, None)})
    states[c5] = dict(latest)
    t.write(spark.createDataFrame([(0,)], "id long"), "delete")
    c6 = t.history()[-1].instant
    del latest[0]
    states[c6] = dict(latest)
    return t, states, [c1, c2, c3, c4, c5, c6], before, after


def test_upserts_and_deletes_append_logs_and_leave_base_files(evolved):
    t, _, commits, before, after = evolved
    assert [c.action for c in t.history()][1:7] == ["deltacommit"] * 3 + ["alter"] + \
        ["deltacommit"] * 2
    for path, stat in before.items():
        assert after[path] == stat  # the base files were not rewritten
    new = sorted(set(after) - set(before))
    logs = [p for p in new if parse_log_name(p)]
    assert logs and all(parse_log_name(p)[1] == commits[1] for p in logs)
    assert all(Path(p).name.startswith(".") and p.endswith(".avro") for p in logs)
    stems = {Path(p).stem for p in before}
    assert {parse_log_name(p)[0] for p in logs} <= stems
    # the new key went to a new base file
    assert [p for p in new if not parse_log_name(p)]
    snap = t.snapshot()
    assert snap.logs and all(f.kind == "log" and f.base in {b.path for b in snap.files}
                             for f in snap.logs)


def test_snapshot_read_merges_by_key_and_precombine_across_ddl(evolved):
    t, states, commits, *_ = evolved
    df = t.read()
    assert df.columns == ["id", "cost", "qty", "ts", "color"]
    assert _rows(df) == sorted(states[commits[-1]].values(), key=repr)


def test_read_optimized_shows_base_files_only(evolved):
    t, states, commits, *_ = evolved
    base_only = {k: (v[0], v[2], v[3], v[4], "red") for k, v in states[commits[0]].items()}
    base_only[9] = (9, 9.0, 9, 2, "red")
    assert _rows(t.read(query="read_optimized")) == sorted(base_only.values(), key=repr)


def test_time_travel_on_mor(evolved):
    t, states, commits, *_ = evolved
    for c in commits[:3]:
        assert _rows(t.read(as_of=c)) == sorted(states[c].values(), key=repr)
    assert _rows(t.read(as_of=commits[4])) == sorted(states[commits[4]].values(), key=repr)
    as_latest = _rows(t.read(as_of=commits[1], schema="latest"))
    assert (1, 10.0, 100, 2, "red") in as_latest


def test_incremental_read_on_mor(evolved):
    t, states, commits, *_ = evolved
    got = _rows(t.read_incremental(commits[3]))
    assert got == sorted([states[commits[-1]][2], states[commits[-1]][4]], key=repr)


def test_compaction_keeps_every_read_and_materializes_defaults(evolved, tmp_path):
    t, states, commits, *_ = evolved
    snapshot_before = _rows(t.read(meta_columns=True))
    travel_before = {c: _rows(t.read(as_of=c)) for c in commits[:2]}
    incremental_before = _rows(t.read_incremental(commits[2]))
    commit = t.compact()
    assert commit.action == "compaction"
    snap = t.snapshot()
    assert snap.logs == ()
    assert {f.version for f in snap.files} == {t.schema.version_id}
    assert _rows(t.read(meta_columns=True)) == snapshot_before
    assert _rows(t.read(query="read_optimized")) == _rows(t.read())
    assert {c: _rows(t.read(as_of=c)) for c in commits[:2]} == travel_before
    assert _rows(t.read_incremental(commits[2])) == incremental_before
    # the read default of `color` is now data in the files
    _, layout = t.version(t.schema.version_id)
    colors = []
    for f in snap.files:
        colors += pq.read_table(t.root / f.path).column(layout.name(6)).to_pylist()
    assert colors.count("red") == sum(1 for v in states[commits[-1]].values() if v[4] == "red")
    # writes after the compaction still merge
    t.write(t.spark.createDataFrame([(1, 11.0, 1, 9, "x")],
                                    "id long, cost double, qty long, ts long, color string"),
            "upsert")
    assert (1, 11.0, 1, 9, "x") in _rows(t.read())


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_nested_and_logical_types_in_log_blocks(spark, tmp_path, fmt):
    """Blocks of two schema versions (a nested rename and a nested add between them)."""
    ddl = ("id bigint not null, ts bigint, d date, at timestamp, amount decimal(10,2), "
           "s struct<a:int,b:string>, tags array<string>, m map<string,int>, raw binary")
    t = evonb.create_table(tmp_path / fmt, ddl, primary_key="id", precombine="ts",
                           table_type="mor", properties={"evonb.mor.log_format": fmt})
    day, at = dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 12, 30)

    def row(i, ts, *s):
        return (i, ts, day, at, Decimal(f"{i}.25"), (i, f"b{i}", *s), [f"t{i}", None],
                {"k": i}, bytes([i]))

    t.write(spark.createDataFrame([row(i, 1) for i in range(3)], t.schema.to_spark()))
    t.write(spark.createDataFrame([row(1, 2)], t.schema.to_spark()), "upsert")
    t.alter("ALTER TABLE t RENAME COLUMN s.a TO a2; ALTER TABLE t ADD COLUMN s.c int")
    t.write(spark.createDataFrame([row(2, 3, 7)], t.schema.to_spark()), "upsert")
    logs = t.snapshot().logs
    assert len({f.version for f in logs}) == 2
    assert all(f.path.endswith("." + fmt) for f in logs)
    got = {r["id"]: r for r in t.read().collect()}
    assert sorted(got) == [0, 1, 2]
    assert got[1]["s"].asDict() == {"a2": 1, "b": "b1", "c": None}
    assert got[2]["s"].asDict() == {"a2": 2, "b": "b2", "c": 7}
    assert [got[i]["ts"] for i in range(3)] == [1, 2, 3]
    assert got[1]["m"] == {"k": 1} and got[1]["tags"] == ["t1", None]
    assert got[1]["amount"] == Decimal("1.25") and got[1]["d"] == day and got[1]["at"] == at
    assert bytes(got[2]["raw"]) == b"\x02"


def test_deletes_and_reinserts_in_one_file_group(spark, tmp_path):
    """Logs of one schema version are resolved per file group in one task: a delete removes
    what came before it, a later upsert brings the key back, whatever its precombine."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    t.write(spark.createDataFrame([(1, "a", 5), (2, "b", 5), (3, "c", 5)],
                                  "id long, v string, ts long"))
    t.write(spark.createDataFrame([(1,), (2,)], "id long"), "delete")
    t.write(spark.createDataFrame([(1, "back", 0), (3, "low", 1)], "id long, v string, ts long"),
            "upsert")
    assert {f.version for f in t.snapshot().logs} == {t.schema.version_id}
    assert _rows(t.read()) == [(1, "back", 0), (3, "c", 5)]
    assert _rows(t.read(query="read_optimized")) == [(1, "a", 5), (2, "b", 5), (3, "c", 5)]
