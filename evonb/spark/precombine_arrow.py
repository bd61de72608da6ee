"""The precombine rule (:mod:`evonb.table.precombine`) compiled to Arrow: sort keys and kernels
over pyarrow tables, and the per-key resolution of log records built on them.

Its users are the Python workers of Spark tasks (:func:`evonb.spark.avro_log.resolve_group`,
the compaction of :mod:`evonb.spark.group_merge`) and the JVM-free reader
(:mod:`evonb.arrow.merge`), which sits above the Spark layer: so this module is in the Spark
layer, and imports pyarrow only.

Arrow sorts NaN next to nulls in either direction and compares it as IEEE does (NaN is not
``>=`` anything); the rule has NaN above every number, as Spark does. A floating-point key
therefore sorts by a NaN flag ahead of its values, and comparisons look at the flags first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from evonb.table.precombine import SortKey, ordering

_ROW = "__evo_row"
_COMMIT = "__evo_commit"
_DELETE = "__evo_delete"
_LIVE = "__evo_live"
_PRE = "__evo_pre"


def sort_keys(table: pa.Table, keys: Sequence[SortKey]) -> tuple[pa.Table, list[tuple[str, str]]]:
    """``table`` with the helper columns of the ordering ``keys``, and the pyarrow sort keys
    that order it so with Arrow's default null placement (at the end): a key with nulls first
    gets its null flag ahead of it, a floating-point key its NaN flag."""
    out: list[tuple[str, str]] = []
    for i, k in enumerate(keys):
        direction = "descending" if k.descending else "ascending"
        values = table.column(k.column)
        if k.nulls_first:
            flag = f"__evo_null{i}"
            table = table.append_column(flag, pc.is_null(values))
            out.append((flag, "descending"))
        if pa.types.is_floating(values.type):
            flag = f"__evo_nan{i}"
            table = table.append_column(flag, pc.is_nan(values))  # null where the value is
            out.append((flag, direction))
        out.append((k.column, direction))
    return table, out


def sort(table: pa.Table, keys: Sequence[SortKey], *, by: Sequence[str] = ()) -> pa.Table:
    """``table`` sorted by the columns ``by`` (ascending) and then by the ordering ``keys``,
    with the helper columns of :func:`sort_keys`."""
    table, order = sort_keys(table, keys)
    return table.sort_by([*((b, "ascending") for b in by), *order])


def _nan(values: pa.Array) -> pa.Array:
    """Whether each value is NaN (false for nulls and for values that are not floats)."""
    if not pa.types.is_floating(values.type):
        return pa.repeat(pa.scalar(False), len(values))
    return pc.fill_null(pc.is_nan(values), False)


def ahead(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray, key: SortKey
          ) -> pa.Array:
    """Whether each value of ``a`` comes strictly before the one of ``b`` on ``key`` (never
    null)."""
    a, b = one_array(a), one_array(b)
    a_null, b_null = pc.is_null(a), pc.is_null(b)
    if key.nulls_first:
        nulls = pc.and_(a_null, pc.invert(b_null))
    else:
        nulls = pc.and_(pc.invert(a_null), b_null)
    a_nan, b_nan = _nan(a), _nan(b)
    bigger, smaller = (a, b) if key.descending else (b, a)
    big_nan, small_nan = (a_nan, b_nan) if key.descending else (b_nan, a_nan)
    # NaN is above every number; two NaNs are equal
    larger = pc.or_(pc.and_(big_nan, pc.invert(small_nan)),
                    pc.and_(pc.invert(pc.or_(big_nan, small_nan)),
                            pc.fill_null(pc.greater(bigger, smaller), False)))
    both = pc.invert(pc.or_(a_null, b_null))
    return pc.or_(nulls, pc.and_(both, larger))


def beats(new: pa.Array | pa.ChunkedArray, old: pa.Array | pa.ChunkedArray,
          key: SortKey | None) -> pa.Array:
    """Whether a later record whose precombine value is ``new`` beats an earlier one whose
    value is ``old``, value by value (never null): unless ``old`` comes first on the precombine
    ``key``; always without a precombine column (``key`` None)."""
    if key is None:
        return pa.repeat(pa.scalar(True), len(new))
    return pc.invert(ahead(old, new, key))


def one_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``values`` as one array (the chunks of a chunked array combined)."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


@dataclass(frozen=True)
class Resolved:
    """Records resolved per key (:func:`resolve`): the input position of each key's winner
    (``rows``; None when every record is its key's only one, the winners in input order),
    whether the winner follows the key's last delete (``live``; false: a delete is the key's
    last word, and the winner is that delete) and the commit order of that last delete
    (``last_delete``; null when the key has none)."""

    rows: pa.Array | None
    live: pa.Array
    last_delete: pa.Array


def resolve(keys: Mapping[str, pa.Array | pa.ChunkedArray], commit: pa.Array | pa.ChunkedArray,
            deleted: pa.Array | pa.ChunkedArray, precombine: pa.Array | pa.ChunkedArray | None
            ) -> Resolved:
    """The winner of each record key among records whose key columns are ``keys``, written by
    the commits ``commit`` (a number per record, later larger) and deletes where ``deleted``
    (no nulls), whose precombine values are ``precombine``: the records after the key's last
    delete compete by the rule (larger precombine value, nulls last, later commit, later
    record); a key whose last record is a delete resolves to that delete. Only these columns
    are grouped and sorted; the caller takes the winning rows whole."""
    n = len(commit)
    no_delete = pa.scalar(None, commit.type)
    if n and any(pc.count_distinct(v).as_py() == n for v in keys.values()):
        # Every key has one record (the usual single block): each record is its key's
        # winner, and a delete is its key's last word.
        return Resolved(rows=None, live=one_array(pc.invert(deleted)),
                        last_delete=one_array(pc.if_else(deleted, commit, no_delete)))
    names = list(keys)
    index = {**keys, _COMMIT: commit, _ROW: pa.array(range(n), pa.int64()),
             _DELETE: pc.if_else(deleted, commit, no_delete)}
    if precombine is not None:
        index[_PRE] = precombine
    idx = pa.table(index)
    last = idx.group_by(names).aggregate([(_DELETE, "max")])
    idx = idx.join(last, keys=names, join_type="left outer")
    last_delete = idx.column(f"{_DELETE}_max")
    live = pc.or_kleene(pc.is_null(last_delete), pc.greater(idx.column(_COMMIT), last_delete))
    idx = idx.append_column(_LIVE, pc.fill_null(live, True))
    rule = ordering(live=_LIVE, precombine=_PRE if precombine is not None else None,
                    commit=_COMMIT, sequence=_ROW)
    idx = sort(idx, rule, by=names)
    firsts = idx.filter(_first_of_each(idx, names))
    return Resolved(rows=one_array(firsts.column(_ROW)), live=one_array(firsts.column(_LIVE)),
                    last_delete=one_array(firsts.column(f"{_DELETE}_max")))


def _first_of_each(table: pa.Table, names: Sequence[str]) -> pa.Array:
    """True on the first row of each run of equal ``names`` values (a null equals a null)."""
    n = table.num_rows
    if n <= 1:
        return pa.array([True] * n, pa.bool_())
    changed = None
    for name in names:
        col = one_array(table.column(name))
        prev, cur = col.slice(0, n - 1), col.slice(1)
        diff = pc.or_(pc.fill_null(pc.not_equal(cur, prev), False),
                      pc.not_equal(pc.is_null(cur), pc.is_null(prev)))
        changed = diff if changed is None else pc.or_(changed, diff)
    return pa.concat_arrays([pa.array([True], pa.bool_()), changed])


__all__ = ["Resolved", "ahead", "beats", "resolve", "sort", "sort_keys"]
