"""Merge-on-read in Arrow: log blocks resolved per key and merged with their base file's rows.

The rules are those of the Spark reader (:func:`evonb.spark.mor.resolve_logs` and
:func:`evonb.spark.mor.merge`), the precombine rule of :mod:`evonb.table.precombine` compiled to
Arrow by :mod:`evonb.spark.precombine_arrow`: among the log records of a key, those after the
key's last delete compete; the larger precombine value wins (nulls lose, NaN is above every
number), a tie goes to the later commit. A base row is removed when its key's last log word is
a delete; else the log winner replaces it unless the base row's precombine value comes first (a
null base value loses, a null log value loses to a non-null base value). Records of keys that
are in no base row are not read (a log block only holds keys of its base file).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evonb.spark.precombine_arrow import beats
from evonb.spark.precombine_arrow import resolve as resolve_keys
from evonb.table.layout import META_COMMIT_TIME
from evonb.table.precombine import precombine_key

DELETED = "_evo_deleted"
_ROW = "__evo_row"


def _take(arr: pa.ChunkedArray | pa.Array, indices: pa.Array) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return pc.take(arr, indices)


def resolve(logs: pa.Table, keys: Sequence[str], precombine: str | None
            ) -> tuple[pa.Table, pa.Array, pa.Array]:
    """One record per key of ``logs`` (projected log records with ``_evo_commit_time`` and
    :data:`DELETED`): the winner among the records after the key's last delete, whether a
    delete came before it (``deleted``) and whether it is valid (false: the key's last word is
    a delete). Returns ``(winners without DELETED, deleted, valid)``."""
    times = logs.column(META_COMMIT_TIME)
    instants = pc.unique(times).sort()
    found = resolve_keys({k: logs.column(k) for k in keys},
                         pc.index_in(times, value_set=instants),
                         pc.fill_null(logs.column(DELETED), False),
                         logs.column(precombine) if precombine is not None else None)
    winners = logs.drop_columns([DELETED])
    if found.rows is not None:
        winners = winners.take(found.rows)
    return winners, pc.is_valid(found.last_delete), found.live


def merge(base: pa.Table, logs: pa.Table, keys: Sequence[str], precombine: str | None
          ) -> pa.Table:
    """The rows of one file group: ``base`` (its base file's rows) merged with ``logs`` (its
    log records), both in the same columns (plus :data:`DELETED` in ``logs``). The rows keep
    the base file's order; a log winner takes the place of the base row of its key."""
    if logs.num_rows == 0:
        return base
    winners, was_deleted, valid = resolve(logs, keys, precombine)
    winners = winners.cast(base.schema)
    b_row, l_row = _matches(base, winners, keys)
    matched = pc.is_valid(l_row)
    deleted = pc.fill_null(pc.take(was_deleted, l_row), False)
    still = pc.fill_null(pc.take(valid, l_row), True)
    if precombine is not None:
        old = base.column(precombine)
        log_wins = beats(_take(winners.column(precombine), l_row),
                         old if b_row is None else _take(old, b_row),
                         precombine_key(precombine))
    else:
        log_wins = pa.repeat(pa.scalar(True), len(l_row))
    take_log = pc.and_(matched, pc.or_(deleted, log_wins))
    keep = pc.invert(pc.and_(matched, pc.and_(deleted, pc.invert(still))))
    rows = _positions(base.num_rows) if b_row is None else b_row
    index = pc.if_else(take_log, pc.add(pc.fill_null(l_row, 0), base.num_rows), rows)
    both = pa.concat_tables([base, winners])
    return both.take(pc.filter(index, keep))


def _matches(base: pa.Table, winners: pa.Table, keys: Sequence[str]
             ) -> tuple[pa.Array | None, pa.Array]:
    """For each base row in order, the row of ``winners`` with its key (null: none), and the
    base rows they belong to (None: every base row, in order). One key column: a hash
    look-up of the base keys in the winners' (each key wins once); several: a join."""
    if len(keys) == 1:
        found = pc.index_in(base.column(keys[0]), value_set=winners.column(keys[0]),
                            skip_nulls=True)
        return None, found.combine_chunks() if isinstance(found, pa.ChunkedArray) else found
    left = pa.table({**{k: base.column(k) for k in keys}, _ROW: _positions(base.num_rows)})
    right = pa.table({**{k: winners.column(k) for k in keys},
                      "__evo_l": _positions(winners.num_rows)})
    joined = left.join(right, keys=list(keys), join_type="left outer").sort_by(_ROW)
    return joined.column(_ROW).combine_chunks(), joined.column("__evo_l").combine_chunks()


def _positions(n: int) -> pa.Array:
    """0 to ``n - 1`` as an int64 array."""
    return pa.array(np.arange(n, dtype=np.int64))


__all__ = ["DELETED", "merge", "resolve"]
