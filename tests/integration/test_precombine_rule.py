"""The precombine rule (:mod:`evonb.table.precombine`) and its two compilations: records with
equal keys, null, NaN and equal precombine values, deletes and re-inserts across several
commits pick the same winners in Spark (:mod:`evonb.spark.precombine`, the merge-on-read
resolution and merge of :mod:`evonb.spark.mor`), in Arrow (:mod:`evonb.spark.precombine_arrow`,
:mod:`evonb.arrow.merge`) and in a plain-Python statement of the rule written here; and tables
given such writes read alike whichever path merges them."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import evonb
from evonb.arrow import merge as arrow_merge
from evonb.spark import precombine as spark_rule
from evonb.spark import precombine_arrow as arrow_rule
from evonb.spark.avro_log import DEL, DELETED, VALID
from evonb.spark.mor import merge as spark_merge
from evonb.spark.mor import read_snapshot, resolve_logs
from evonb.table.layout import META_COMMIT_TIME
from evonb.table.precombine import RULE, Role, SortKey, ordering, precombine_key

pytestmark = pytest.mark.spark

NAN = float("nan")
VALUES: tuple[float | None, ...] = (None, NAN, -math.inf, -1.0, -0.0, 0.0, 1.0, 1.0, 2.5,
                                    math.inf)
"""Precombine values: nulls, NaN, signed zeros and infinities, and many ties."""


def _instant(commit: int) -> str:
    return f"2026010100000{commit:04d}"


# --------------------------------------------------------------- the rule in plain Python
def _rank(value: float | None, key: SortKey) -> tuple:
    """A number tuple that sorts like ``value`` on ``key``, smaller first (stated here, apart
    from the compilers: nulls at their end, NaN above every number, -0.0 equal to 0.0)."""
    if value is None:
        return (-1,) if key.nulls_first else (1,)
    number = (1, 0.0) if isinstance(value, float) and math.isnan(value) else (0, value)
    if key.descending:
        number = (-number[0], -number[1])
    return (0, *number)


def _winner(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The record of one key that survives, or None when the key's last word is a delete: the
    records after the last delete compete; the largest precombine value wins (a null loses,
    NaN is the largest), then the later commit, then the later record of the commit."""
    deletes = [r["commit"] for r in records if r["deleted"]]
    last = max(deletes, default=-1)
    live = [r for r in records if not r["deleted"] and r["commit"] > last]

    def better(r: dict[str, Any]) -> tuple:
        value = r["pre"]
        return (value is not None,
                value is not None and math.isnan(value),
                0.0 if value is None or math.isnan(value) else value,
                r["commit"], r.get("seq", 0))

    return max(live, key=better) if live else None


def _histories(seed: int, keys: int = 40, commits: int = 5) -> tuple[list[dict], list[dict]]:
    """Base rows (one per key, commit 0) and log records (at most one per key and commit:
    upserts with random precombine values, and deletes)."""
    rnd = random.Random(seed)
    base = [{"k": k, "v": f"base-{k}", "pre": rnd.choice(VALUES), "commit": 0,
             "deleted": False} for k in range(keys)]
    logs = []
    for c in range(1, commits + 1):
        for k in range(keys):
            roll = rnd.random()
            if roll < 0.2:
                logs.append({"k": k, "v": None, "pre": None, "commit": c, "deleted": True})
            elif roll < 0.8:
                logs.append({"k": k, "v": f"c{c}-{k}", "pre": rnd.choice(VALUES),
                             "commit": c, "deleted": False})
    return base, logs


def _by_key(records: Sequence[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in records:
        out.setdefault(r["k"], []).append(r)
    return out


def _same(a: float | None, b: float | None) -> bool:
    return a is b or (a is not None and b is not None
                      and (a == b or (math.isnan(a) and math.isnan(b))))


# ------------------------------------------------------------------------------ engines
COLS = "k long, v string, pre double, _evo_commit_time string"


def _spark_rows(spark, records: Sequence[dict], deleted: bool):
    rows = [(r["k"], r["v"], r["pre"], _instant(r["commit"]),
             *([r["deleted"]] if deleted else [])) for r in records]
    return spark.createDataFrame(rows, COLS + (", _evo_deleted boolean" if deleted else ""))


def _arrow_rows(records: Sequence[dict], deleted: bool) -> pa.Table:
    columns = {"k": pa.array([r["k"] for r in records], pa.int64()),
               "v": pa.array([r["v"] for r in records], pa.string()),
               "pre": pa.array([r["pre"] for r in records], pa.float64()),
               META_COMMIT_TIME: pa.array([_instant(r["commit"]) for r in records])}
    if deleted:
        columns[DELETED] = pa.array([r["deleted"] for r in records])
    return pa.table(columns)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spark_and_arrow_resolve_log_records_as_the_rule_says(spark, seed):
    """The log records of each key, resolved: the winner after the key's last delete, or
    that the key's last word is a delete (Spark's window, Arrow's sort), against the
    plain-Python rule."""
    _, logs = _histories(seed)
    want = {}
    for k, records in _by_key(logs).items():
        w = _winner(records)
        last_delete = max((r["commit"] for r in records if r["deleted"]), default=None)
        want[k] = (w["v"] if w else None, w is not None,
                   _instant(last_delete) if last_delete is not None else None)
    got_spark = {r["k"]: (r["v"] if r[VALID] else None, r[VALID], r[DEL])
                 for r in resolve_logs(_spark_rows(spark, logs, True), ["k"], "pre").collect()}
    winners, was_deleted, valid = arrow_merge.resolve(_arrow_rows(logs, True), ["k"], "pre")
    got_arrow = {}
    for row, d, ok in zip(winners.to_pylist(), was_deleted.to_pylist(), valid.to_pylist(),
                          strict=True):
        got_arrow[row["k"]] = (row["v"] if ok else None, ok, d)
    assert {k: v[:2] for k, v in got_spark.items()} == {k: v[:2] for k, v in want.items()}
    assert {k: v[2] for k, v in got_spark.items()} == {k: v[2] for k, v in want.items()}
    assert got_arrow == {k: (v[0], v[1], v[2] is not None) for k, v in want.items()}
    assert any(v[0] is None for v in want.values()) and any(v[2] for v in want.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spark_and_arrow_merge_base_rows_as_the_rule_says(spark, seed):
    """Base rows merged with their keys' log records: a key's rows in Spark's merge by key
    and in the JVM-free reader's merge are the plain-Python rule's winner over the base row
    and the records."""
    base, logs = _histories(seed)
    want = {}
    for k, records in _by_key(base + logs).items():
        w = _winner(records)
        if w is not None:
            want[k] = (w["v"], w["pre"])
    resolved = resolve_logs(_spark_rows(spark, logs, True), ["k"], "pre")
    merged = spark_merge(_spark_rows(spark, base, False), resolved, ["k"], "pre").collect()
    got_spark = {r["k"]: (r["v"], r["pre"]) for r in merged}
    arrow = arrow_merge.merge(_arrow_rows(base, False), _arrow_rows(logs, True), ["k"], "pre")
    got_arrow = {r["k"]: (r["v"], r["pre"]) for r in arrow.to_pylist()}
    assert len(merged) == len(got_spark) and arrow.num_rows == len(got_arrow)
    for got in (got_spark, got_arrow):
        assert sorted(got) == sorted(want)
        bad = {k: (got[k], want[k]) for k in want
               if got[k][0] != want[k][0] or not _same(got[k][1], want[k][1])}
        assert bad == {}
    assert len(want) < len(base)  # some keys end deleted


def test_orderings_compile_alike_with_every_role(spark):
    """Every role of the rule, bound to columns with ties on all but the last: Spark's window
    and Arrow's sort keep the same first row per key as the plain-Python order."""
    rnd = random.Random(7)
    rows = []
    for k in range(30):
        seqs = rnd.sample(range(100), 12)
        for i in range(12):
            rows.append({"k": k, "live": rnd.random() < 0.7, "pre": rnd.choice(VALUES),
                         "commit": rnd.randrange(3), "seq": seqs[i], "id": f"{k}-{i}"})
    rule = ordering(live="live", precombine="pre", commit="commit", sequence="seq")
    assert [t.role for t in RULE] == [Role.LIVE, Role.PRECOMBINE, Role.COMMIT, Role.SEQUENCE]
    assert [k.column for k in rule] == ["live", "pre", "commit", "seq"]

    def python_key(r: dict) -> tuple:
        return tuple(_rank(r[key.column] if key.column == "pre" else float(r[key.column]), key)
                     for key in rule)

    want = {}
    for r in sorted(rows, key=python_key):
        want.setdefault(r["k"], r["id"])
    table = pa.Table.from_pylist(rows, pa.schema([
        ("k", pa.int64()), ("live", pa.bool_()), ("pre", pa.float64()),
        ("commit", pa.int64()), ("seq", pa.int64()), ("id", pa.string())]))
    got_arrow: dict[int, str] = {}
    for r in arrow_rule.sort(table, rule, by=["k"]).to_pylist():
        got_arrow.setdefault(r["k"], r["id"])
    df = spark.createDataFrame([tuple(r.values()) for r in rows],
                               "k long, live boolean, pre double, commit long, seq long, "
                               "id string")
    got_spark = {r["k"]: r["id"] for r in spark_rule.first_per_key(df, ["k"], rule).collect()}
    assert got_arrow == want
    assert got_spark == want


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("nulls_first", [False, True])
def test_comparisons_compile_alike(spark, descending, nulls_first):
    """``ahead`` (and ``beats``, for the rule's precombine key) over every pair of values, in
    both directions and null placements: Spark, Arrow and the plain-Python order agree."""
    key = SortKey("pre", descending=descending, nulls_first=nulls_first)
    pairs = [(a, b) for a in VALUES for b in VALUES]
    want = [_rank(a, key) < _rank(b, key) for a, b in pairs]
    a_col = pa.array([a for a, _ in pairs], pa.float64())
    b_col = pa.array([b for _, b in pairs], pa.float64())
    assert arrow_rule.ahead(a_col, b_col, key).to_pylist() == want
    df = spark.createDataFrame([(i, a, b) for i, (a, b) in enumerate(pairs)],
                               "i long, a double, b double")
    got = df.select("i", spark_rule.ahead(F.col("a"), F.col("b"), key).alias("x")).collect()
    assert [r["x"] for r in sorted(got, key=lambda r: r["i"])] == want
    rule_key = precombine_key("pre")
    if key == rule_key:
        beats = [not _rank(b, key) < _rank(a, key) for a, b in pairs]  # a later, b earlier
        assert arrow_rule.beats(a_col, b_col, key).to_pylist() == beats
        got = df.select("i", spark_rule.beats(F.col("a"), F.col("b"), key).alias("x")).collect()
        assert [r["x"] for r in sorted(got, key=lambda r: r["i"])] == beats


# ------------------------------------------------------------------------- whole tables
def _table_rows(table: Any) -> list[tuple]:
    return sorted(((r["id"], r["v"], "nan" if r["ts"] is not None and math.isnan(r["ts"])
                    else r["ts"]) for r in table), key=repr)


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_nan_precombine_reads_alike_on_every_path(spark, tmp_path, fmt):
    """Regression: the Arrow resolution (merges by position, by key of one schema version, the
    JVM-free reader, compaction) sorted NaN below every number and compared it as IEEE does,
    where Spark (copy-on-write upserts, the write-time ``_evo_over`` flag) puts it above: a
    NaN update lost to a later smaller one, and a key whose NaN base row was replaced by a NaN
    update and then outbid by a number vanished from merges by position."""
    schema = "id bigint not null, v string, ts double"
    mor = evonb.create_table(tmp_path / "mor", schema, primary_key="id", precombine="ts",
                             table_type="mor", properties={"evonb.mor.log_format": fmt})
    cow = evonb.create_table(tmp_path / "cow", schema, primary_key="id", precombine="ts")
    writes = [
        ("insert", [(1, "b1", 1.0), (2, "b2", NAN), (3, "b3", 1.0), (4, "b4", None),
                    (5, "b5", 2.0), (6, "b6", NAN)]),
        ("upsert", [(1, "nan", NAN), (2, "nan-tie", NAN), (3, "two", 2.0), (4, "nan4", NAN),
                    (5, "null5", None), (6, "inf6", math.inf)]),
        ("upsert", [(1, "one", 2.0), (2, "five", 5.0), (3, "nan3", NAN), (4, "inf4", math.inf),
                    (5, "nan5", NAN), (6, "first", NAN), (6, "second", NAN)]),
        ("delete", [(5,)]),
        ("upsert", [(5, "back5", -1.0), (1, "minus", -0.0)]),
    ]
    history: list[dict] = []
    for commit, (mode, rows) in enumerate(writes):
        cols = "id long" if mode == "delete" else "id long, v string, ts double"
        df = spark.createDataFrame(rows, cols)
        for t in (mor, cow):
            t.write(df, mode)
        for seq, row in enumerate(rows):
            history.append({"k": row[0], "v": row[1] if len(row) > 1 else None,
                            "pre": row[2] if len(row) > 2 else None, "commit": commit,
                            "seq": seq, "deleted": mode == "delete"})
    want = []
    for k, records in _by_key(history).items():
        w = _winner(records)
        if w is not None:
            want.append({"id": k, "v": w["v"], "ts": w["pre"]})
    want_rows = _table_rows(want)
    assert want_rows == _table_rows([
        {"id": 1, "v": "nan", "ts": NAN}, {"id": 2, "v": "nan-tie", "ts": NAN},
        {"id": 3, "v": "nan3", "ts": NAN}, {"id": 4, "v": "nan4", "ts": NAN},
        {"id": 5, "v": "back5", "ts": -1.0}, {"id": 6, "v": "second", "ts": NAN}])
    snap = mor.snapshot()
    query = mor.schema_store.load(snap.schema_version)
    assert _table_rows(r.asDict() for r in cow.read().collect()) == want_rows
    for positions in (True, False):
        got = read_snapshot(mor, snap, query, positions=positions).collect()
        assert _table_rows(r.asDict() for r in got) == want_rows, positions
    assert _table_rows(mor.to_arrow().to_pylist()) == want_rows
    mor.compact()
    assert _table_rows(r.asDict() for r in mor.read().collect()) == want_rows
    assert _table_rows(mor.to_arrow().to_pylist()) == want_rows
