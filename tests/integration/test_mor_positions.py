"""Merge-on-read by position: log blocks that carry the base row position of every record and
list the base rows they replace are merged without a join. The merge by position and the merge
by key give the same rows, in every case the rules distinguish (precombine wins, losses, ties
and nulls; deletes and re-inserts; duplicate keys in a base file); groups whose blocks carry no
positions (written before positions existed, or with positions turned off), or whose positions
do not match their base file, are merged by key; reads after compaction, time travel and
incremental reads agree with a copy-on-write table given the same writes."""

from __future__ import annotations

import fastavro
import pytest

import evonb
from evonb.spark.avro_log import BASE_ROWS_KEY, DROP_KEY, POSITIONS_PROPERTY, block_header
from evonb.spark.mor import position_drops, read_snapshot

pytestmark = pytest.mark.spark

COLS = "id long, v string, ts long"


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _both(t, **kw):
    """The snapshot read merged by position (where possible) and by key only."""
    snap = t.snapshot(kw.pop("as_of", None))
    query = t.schema_store.load(snap.schema_version)
    by_pos = _rows(read_snapshot(t, snap, query, **kw))
    by_key = _rows(read_snapshot(t, snap, query, positions=False, **kw))
    return by_pos, by_key


def _tables(spark, tmp_path, fmt="avro", properties=None, precombine="ts"):
    props = {"evonb.mor.log_format": fmt, **(properties or {})}
    mor = evonb.create_table(tmp_path / f"mor_{fmt}", "id bigint not null, v string, ts bigint",
                             primary_key="id", precombine=precombine, table_type="mor",
                             properties=props)
    cow = evonb.create_table(tmp_path / f"cow_{fmt}", "id bigint not null, v string, ts bigint",
                             primary_key="id", precombine=precombine)
    return mor, cow


def _write(tables, spark, rows, mode="upsert", cols=COLS):
    df = spark.createDataFrame(rows, cols)
    for t in tables:
        t.write(df, mode)


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_position_merge_matches_key_merge_and_cow(spark, tmp_path, fmt):
    """Rows dropped in evonb's Parquet source and by the built-in filter alike: one table per
    block format, read with either filter (a read property: the files are the same)."""
    mor, cow = _tables(spark, tmp_path, fmt)
    both = (mor, cow)
    _write(both, spark, [(i, f"b{i}", 5 if i % 4 else None) for i in range(40)], "insert")
    # wins (ts 9), loses (ts 1), ties (ts 5), beats a null base (ts 0), null precombine (loses
    # to a non-null base, beats a null one), deletes, a delete of an unknown key
    _write(both, spark, [(1, "win", 9), (2, "lose", 1), (3, "tie", 5), (4, "over-null", 0),
                         (5, "null-pre", None), (8, "null-null", None)])
    _write(both, spark, [(6,), (7,), (99,)], "delete", "id long")
    # after a delete: a re-insert whatever its precombine; a second update of a key
    _write(both, spark, [(6, "back", 0), (1, "win-again", 9), (9, "low", 2), (50, "new", 1)])
    _write(both, spark, [(9,)], "delete", "id long")
    _write(both, spark, [(9, "back9", 1), (10, "lose10", 4), (10, "dup-in-batch", 7)])
    snap = mor.snapshot()
    drops = position_drops(mor, snap)
    assert drops and set(drops) == {f.base for f in snap.logs}  # every group by position
    writes = [c for c in mor.history() if c.action == "deltacommit"]
    first_change = mor.history()[3].instant
    expected = _rows(cow.read())
    expected_incremental = _rows(cow.read_incremental(cow.history()[3].instant))
    for in_reader in ("true", "false"):
        mor.set_properties({"evonb.mor.read.jvm_filter": in_reader})
        by_pos, by_key = _both(mor)
        assert by_pos == by_key == expected, in_reader
        assert _both(mor, meta=True)[0] == _both(mor, meta=True)[1], in_reader
        for c in writes:
            got, want = _both(mor, as_of=c.instant)
            assert got == want, (in_reader, c.instant)
        assert _rows(mor.read_incremental(first_change)) == expected_incremental, in_reader


def test_blocks_name_the_rows_they_replace(spark, tmp_path):
    mor, _ = _tables(spark, tmp_path)
    mor.write(spark.createDataFrame([(i, "a", 5) for i in range(10)], COLS).coalesce(1))
    mor.write(spark.createDataFrame([(2, "x", 9), (3, "y", 1), (7, "z", 5)], COLS), "upsert")
    (log,) = mor.snapshot().logs
    header = block_header(str(mor.root / log.path))
    assert header[BASE_ROWS_KEY] == "10" and header["evonb.base"] == log.base
    base_rows = {r["id"]: i for i, r in enumerate(
        spark.read.parquet(str(mor.root / log.base)).select("id").collect())}
    # 3 loses (ts 1 < 5): its base row stays; 2 wins, 7 ties (the later write wins)
    assert list(position_drops(mor, mor.snapshot())[log.base]) == sorted(
        [base_rows[2], base_rows[7]])
    with open(mor.root / log.path, "rb") as fh:
        records = {r["id"]: r for r in fastavro.reader(fh)}
    assert {k: (r["_evo_pos"], r["_evo_over"]) for k, r in records.items()} == {
        2: (base_rows[2], True), 3: (base_rows[3], False), 7: (base_rows[7], True)}


def test_blocks_without_positions_fall_back_to_the_key_merge(spark, tmp_path):
    """Blocks written without positions (as before they existed) and blocks with them in one
    table: groups with any block lacking positions are merged by key, the rest by position."""
    mor, cow = _tables(spark, tmp_path, properties={POSITIONS_PROPERTY: "false"})
    both = (mor, cow)
    _write(both, spark, [(i, f"b{i}", 5) for i in range(20)], "insert")
    _write(both, spark, [(i, f"b{i}", 5) for i in range(20, 40)], "insert")
    _write(both, spark, [(1, "old-block", 6), (21, "old-block", 6)])
    assert position_drops(mor, mor.snapshot()) == {}
    assert all(DROP_KEY not in block_header(str(mor.root / f.path))
               for f in mor.snapshot().logs)
    # positions on again (the property is read by each write)
    mor.set_properties({POSITIONS_PROPERTY: "true"})
    _write(both, spark, [(2, "new-block", 7), (22, "new-block", 7), (1, "again", 8)])
    _write(both, spark, [(i, f"c{i}", 5) for i in range(40, 50)], "insert")
    _write(both, spark, [(41, "only-new", 9)])
    snap = mor.snapshot()
    drops = position_drops(mor, snap)
    grouped = {f.base for f in snap.logs}
    assert drops and set(drops) < grouped  # one group by position, two by key
    by_pos, by_key = _both(mor)
    assert by_pos == by_key == _rows(cow.read())


def test_stale_positions_fall_back_to_the_key_merge(spark, tmp_path):
    """A block whose header does not match its base file (another row count: the base file is
    not the one the positions were taken from) is merged by key."""
    mor, cow = _tables(spark, tmp_path)
    both = (mor, cow)
    for t in both:
        t.write(spark.createDataFrame([(i, f"b{i}", 5) for i in range(10)], COLS).coalesce(1))
    _write(both, spark, [(1, "x", 9)])
    (log,) = mor.snapshot().logs
    path = mor.root / log.path
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        schema, meta, records = reader.writer_schema, dict(reader.metadata), list(reader)
    meta = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in meta.items()
            if not k.startswith("avro.")}
    meta[BASE_ROWS_KEY] = "11"
    # rewrite the block with wrong positions too: a position merge would drop the wrong row
    for r in records:
        r["_evo_pos"] = (r["_evo_pos"] + 1) % 10
    with open(path, "wb") as fh:
        fastavro.writer(fh, schema, records, metadata=meta)
    assert position_drops(mor, mor.snapshot()) == {}
    assert _rows(mor.read()) == _rows(cow.read())


def test_positions_after_compaction_and_duplicate_keys(spark, tmp_path):
    """Compaction writes new base files: later blocks take positions in them. A key that is
    twice in a base file (inserted twice) is replaced in both rows, as by the key merge."""
    mor, cow = _tables(spark, tmp_path)
    both = (mor, cow)
    _write(both, spark, [(i, f"b{i}", 5) for i in range(30)], "insert")
    _write(both, spark, [(5, "dup", 5)], "insert")
    _write(both, spark, [(1, "u", 6)])
    _write(both, spark, [(2,), (3,)], "delete", "id long")
    before = _rows(mor.read())
    assert before == _rows(cow.read())
    mor.compact()
    assert _rows(mor.read()) == before
    _write(both, spark, [(1, "after", 7), (4, "after", 1), (3, "back", 0)])
    _write(both, spark, [(6,)], "delete", "id long")
    assert position_drops(mor, mor.snapshot())
    by_pos, by_key = _both(mor)
    assert by_pos == by_key == _rows(cow.read())
    # the duplicate key in one base file: both rows are updated
    mor2, _ = _tables(spark, tmp_path / "dup",
                      properties={"evonb.write.insert_duplicates": "allow"})
    mor2.write(spark.createDataFrame([(1, "a", 1), (1, "b", 1), (2, "c", 1)], COLS).coalesce(1))
    mor2.write(spark.createDataFrame([(1, "new", 2)], COLS), "upsert")
    by_pos, by_key = _both(mor2)
    assert by_pos == by_key == [(1, "new", 2), (1, "new", 2), (2, "c", 1)]


def test_without_precombine(spark, tmp_path):
    mor, cow = _tables(spark, tmp_path, precombine=None)
    both = (mor, cow)
    _write(both, spark, [(i, f"b{i}", 5) for i in range(10)], "insert")
    _write(both, spark, [(1, "x", 0), (2, "y", None)])
    _write(both, spark, [(1,)], "delete", "id long")
    _write(both, spark, [(1, "z", 0), (3, "w", 1)])
    assert position_drops(mor, mor.snapshot())
    by_pos, by_key = _both(mor)
    assert by_pos == by_key == _rows(cow.read())


def test_groups_beyond_the_bitmap_cap_merge_by_key(spark, tmp_path, monkeypatch):
    import evonb.spark.mor as mor_module

    mor, cow = _tables(spark, tmp_path)
    both = (mor, cow)
    for lo in (0, 10, 20):
        for t in both:
            t.write(spark.createDataFrame([(i, f"b{i}", 5) for i in range(lo, lo + 10)],
                                          COLS).coalesce(1))
    _write(both, spark, [(1, "x", 9), (11, "y", 9), (21, "z", 9)])
    _write(both, spark, [(12,)], "delete", "id long")
    assert len(position_drops(mor, mor.snapshot())) == 3
    monkeypatch.setattr(mor_module, "POSITION_MAX_ROWS", 15)  # one group by position
    by_pos, by_key = _both(mor)
    assert by_pos == by_key == _rows(cow.read())


def test_size_slots_separate_every_distinct_key():
    from evonb.spark.mor import _size_slots

    for keys in ([10, 20, 30], [5, 5, 7], [1_048_576 + 64 * i for i in range(50)], [3]):
        m = _size_slots(keys)
        distinct = set(keys)
        assert m >= len(distinct)
        assert len({s % m for s in distinct}) == len(distinct)
    assert _size_slots([0, 64 * 65]) == 3  # 0 and 4160 first differ modulo 3


def _equal_size_tables(spark, tmp_path):
    """A merge-on-read table whose base files are 3 of one size and 1 of another, with log
    blocks in every group; and a copy-on-write table with the same rows."""
    import os

    props = {"evonb.write.target.file.bytes": "0"}
    mor, cow = _tables(spark, tmp_path, properties=props)
    for t in (mor, cow):
        t.write(spark.range(0, 30, 1, 3).selectExpr("id", "'b' as v", "5L as ts"), "insert")
        t.write(spark.range(30, 55, 1, 1).selectExpr("id", "'b' as v", "5L as ts"), "insert")
    sizes = [os.path.getsize(mor.root / f.path) for f in mor.snapshot().files]
    assert len(sizes) == 4
    assert len(set(sizes)) < len(sizes) and any(sizes.count(s) == 1 for s in sizes)
    _write((mor, cow), spark, [(i, f"u{i}", 6) for i in range(0, 55, 4)])
    _write((mor, cow), spark, [(i,) for i in range(1, 55, 9)], "delete", "id long")
    assert set(position_drops(mor, mor.snapshot())) == {f.path for f in mor.snapshot().files}
    return mor, cow


def _touch_all(t, ns):
    import os

    for f in t.snapshot().files:
        os.utime(t.root / f.path, ns=(ns, ns))


@pytest.mark.parametrize("same_time", [False, True])
def test_base_files_are_told_apart_by_size_and_time_or_by_name(spark, tmp_path, same_time):
    """The built-in filter finds base files by their size and modification time; files that
    share both are found by name."""
    mor, cow = _equal_size_tables(spark, tmp_path)
    mor.alter("ALTER TABLE t SET TBLPROPERTIES ('evonb.mor.read.jvm_filter' = 'false')")
    assert "EvonbParquet" not in mor.read()._jdf.queryExecution().executedPlan().toString()
    if same_time:  # equal sizes and times: those files go by name
        _touch_all(mor, 1_700_000_000_123_000_000)
    by_pos, by_key = _both(mor)
    assert by_pos == by_key == _rows(cow.read())


def test_a_base_file_changed_while_planning_fails_the_read(spark, tmp_path, monkeypatch):
    """Spark keeps the file status it listed for the life of a DataFrame, so a read already
    planned is not affected by a later change; a file changed while the read is planned (here
    while Spark lists the files) fails the read with an evonb error, rather than reading
    another file's bits."""
    import evonb.spark.mor as mor_module

    mor, cow = _equal_size_tables(spark, tmp_path)
    _touch_all(mor, 1_700_000_000_000_000_000)
    planned = mor.read()
    _touch_all(mor, 1_700_000_000_500_000_000)
    assert _rows(planned) == _rows(cow.read())  # listed before the change: still right
    real = mor_module.read_files

    def listing_while_touched(*args, **kwargs):
        _touch_all(mor, 1_700_000_000_999_000_000)
        return real(*args, **kwargs)

    monkeypatch.setattr(mor_module, "read_files", listing_while_touched)
    with pytest.raises(evonb.EvoError, match="changed while a merge-on-read read"):
        mor.read()
    monkeypatch.setattr(mor_module, "read_files", real)
    assert _rows(mor.read()) == _rows(cow.read())  # a read planned again is right


def test_position_winners_after_a_rename_and_an_added_column(spark, tmp_path):
    """Blocks written before a rename and an added column are still merged by position; the
    Python workers send only the winning records, with only the columns the query reads."""
    from evonb.spark.mor import position_winners

    mor, cow = _tables(spark, tmp_path)
    both = (mor, cow)
    _write(both, spark, [(i, f"b{i}", 1) for i in range(20)], "insert")
    _write(both, spark, [(1, "u1", 2), (2, "lose", 0)])
    _write(both, spark, [(3,)], "delete", "id long")
    for t in both:
        t.alter("ALTER TABLE t RENAME COLUMN v TO w")
        t.alter("ALTER TABLE t ADD COLUMN z int DEFAULT 5")
    snap = mor.snapshot()
    assert set(position_drops(mor, snap)) == {f.base for f in snap.logs}
    by_pos, by_key = _both(mor)
    assert by_pos == by_key == _rows(cow.read())
    assert (1, "u1", 2, 5) in by_pos and (2, "b2", 1, 5) in by_pos
    assert not any(r[0] == 3 for r in by_pos)
    winners = position_winners(mor, snap.logs, mor.schema, meta=False)
    assert _rows(winners) == [(1, "u1", 2, 5)]
    assert winners.columns == ["id", "w", "ts", "z"]
    sent = winners._jdf.queryExecution().analyzed().toString()
    assert "_evo_pos" not in sent and "__evo_valid" not in sent and "_evo_commit_time" not in sent
    with_meta = position_winners(mor, snap.logs, mor.schema, meta=True)
    assert [r[-1] for r in with_meta.collect()] == [snap.logs[0].instant]


def test_an_unchanged_snapshot_reuses_its_plan(spark, tmp_path):
    """Reading an unchanged merge-on-read table again reuses the plan of its merge by position
    (the same DataFrames); a new block, a touched base file or another query schema plans
    afresh, and every read is right."""
    from evonb.spark.mor import _POSITION_PLANS

    mor, cow = _equal_size_tables(spark, tmp_path)
    _POSITION_PLANS.clear()
    first = mor.read()
    assert len(_POSITION_PLANS) == 1
    again = mor.read()
    assert len(_POSITION_PLANS) == 1
    assert again.schema == first.schema and _rows(again) == _rows(first) == _rows(cow.read())
    with_meta = mor.read(meta_columns=True)
    assert len(_POSITION_PLANS) == 2 and "_evo_commit_time" in with_meta.columns
    _write((mor, cow), spark, [(2, "again", 9), (7, "again", 9)])
    assert _rows(mor.read()) == _rows(cow.read())
    assert (2, "again", 9) in _rows(mor.read())
    assert len(_POSITION_PLANS) == 3
    _touch_all(mor, 1_700_000_000_000_000_000)
    assert _rows(mor.read()) == _rows(cow.read())
    assert len(_POSITION_PLANS) == 4
    for t in (mor, cow):
        t.alter("ALTER TABLE t RENAME COLUMN v TO w")
    renamed = mor.read()
    assert renamed.columns == ["id", "w", "ts"] and _rows(renamed) == _rows(cow.read())
    assert len(_POSITION_PLANS) == 5
