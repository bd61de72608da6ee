"""The JVM-free merge of a file group finds each base row's log winner by a hash look-up when
the key is one column and by a join when it is several: both must give the same rows in the
same order (the base file's, a winner in the place of its key's base row)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.arrow.merge import DELETED, merge
from evonb.table.layout import META_COMMIT_TIME

PRE = [None, -1.0, 0.0, 2.5, float("nan")]

records = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 30)),  # key (null keys match nothing)
              st.integers(1, 4),                          # commit
              st.booleans(),                              # a delete
              st.sampled_from(PRE)),                      # precombine value
    max_size=60)


def _base(keys: list[int | None], pres: list[float | None]) -> pa.Table:
    n = len(keys)
    table = pa.table({"k": pa.array(keys, pa.int64()), "c": pa.array(["x"] * n, pa.string()),
                      "v": pa.array([f"base-{i}" for i in range(n)], pa.string()),
                      "pre": pa.array(pres, pa.float64()),
                      META_COMMIT_TIME: pa.array(["20260101000000000"] * n, pa.string())})
    half = n // 2  # two chunks, as a file read in batches gives them
    return pa.concat_tables([table.slice(0, half), table.slice(half)])


def _logs(rows: list[tuple[int | None, int, bool, float | None]]) -> pa.Table:
    return pa.table({"k": pa.array([r[0] for r in rows], pa.int64()),
                     "c": pa.array(["x"] * len(rows), pa.string()),
                     "v": pa.array([None if r[2] else f"log-{i}" for i, r in enumerate(rows)],
                                   pa.string()),
                     "pre": pa.array([r[3] for r in rows], pa.float64()),
                     META_COMMIT_TIME: pa.array([f"2026010{r[1]}000000000" for r in rows],
                                                pa.string()),
                     DELETED: pa.array([r[2] for r in rows], pa.bool_())})


def _rows(table: pa.Table) -> list[dict]:
    """The rows, NaN written as text (NaN is not equal to itself)."""
    return [{k: "NaN" if isinstance(v, float) and v != v else v for k, v in row.items()}
            for row in table.to_pylist()]


@settings(max_examples=150, deadline=None)
@given(base_keys=st.lists(st.one_of(st.none(), st.integers(0, 30)), unique=True, max_size=25),
       pres=st.lists(st.sampled_from(PRE), min_size=25, max_size=25),
       log_rows=records, precombine=st.booleans())
def test_one_key_column_merges_as_the_join_does(base_keys, pres, log_rows, precombine):
    base = _base(base_keys, pres[:len(base_keys)])
    logs = _logs(log_rows)
    pre = "pre" if precombine else None
    by_lookup = merge(base, logs, ["k"], pre)
    by_join = merge(base, logs, ["k", "c"], pre)  # "c" is one value: the same keys
    assert by_lookup.schema == base.schema
    assert _rows(by_lookup) == _rows(by_join)
    # base order kept: each output row is its key's base row or that key's log winner
    out_keys = by_lookup.column("k").to_pylist()
    assert out_keys == [k for k in base_keys if k in set(out_keys)]
    assert by_lookup.num_rows <= base.num_rows
    logged = {r[0] for r in log_rows if r[0] is not None}
    for row, k in zip(by_lookup.to_pylist(), out_keys, strict=True):
        if k is None or k not in logged:  # no record of this key: the base row, untouched
            assert row["v"].startswith("base-"), row


def test_a_winner_takes_its_base_row_place_and_a_delete_removes_it():
    base = _base([5, 1, 9, 3], [0.0, 0.0, 0.0, 0.0])
    logs = _logs([(9, 1, False, 1.0), (1, 2, True, None), (7, 1, False, 1.0)])
    for keys in (["k"], ["k", "c"]):
        out = merge(base, logs, keys, "pre")
        assert out.column("k").to_pylist() == [5, 9, 3]  # 1 deleted; 7 is in no base row
        assert out.column("v").to_pylist() == ["base-0", "log-0", "base-3"]
