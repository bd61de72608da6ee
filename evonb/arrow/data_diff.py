"""The rows that differ between two reads of a table in one schema: :func:`diff_tables`
returns a :class:`DataDiff` (``Table.diff_data``, ``%evo diff <table> <a> <b> --data``).

Keyed tables compare by record key (composite keys too): a key only in ``after`` is *added*,
only in ``before`` *removed*, in both with a different value in some column *changed*.
Keyless tables compare whole rows as multisets: a row present twice before and once after
is one removed row; keyless tables have no changed rows.

Layout of the result (Arrow tables):

* ``added`` / ``removed``: whole rows, in the compared schema (``after`` / ``before`` order);
* ``changed``: the key columns, ``changed`` (``list<string>``: the names of the columns whose
  value differs, in schema order), then for every other column ``<col>__old`` and
  ``<col>__new`` (unchanged columns carry the same value twice).

Values compare by equality, nulls equal nulls and NaN equals NaN. Both sides are read in the
same schema, so a column renamed between the commits compares with itself under its name in
that schema; a column dropped between them is absent from the latest schema, and in an older
schema it is present before and null after, so rows that had a value show it as changed.

Rows come sorted: by the key (ascending, nulls first), or for keyless tables by their
columns of plain types in schema order. :func:`diff_frames` computes the same diff with Spark
(two Spark DataFrames in, Spark DataFrames out; :meth:`SparkDiff.collect` gives the same
:class:`DataDiff` as :func:`diff_tables` of the same rows, :meth:`SparkDiff.frame` the
layout of :meth:`DataDiff.to_pandas` as one Spark DataFrame). Spark is imported only there.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from evonb.arrow.python_values import python_rows
from evonb.errors import EvoError
from evonb.spark.arrow_collect import key_list, rows_with_times_as_numbers, to_arrow

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

SAMPLE_ROWS = 10


@dataclass(frozen=True, eq=False)
class DataDiff:
    """Rows added, removed and changed from ``before`` to ``after`` (see the module doc for
    the layout of :attr:`changed`)."""

    added: pa.Table
    removed: pa.Table
    changed: pa.Table
    key: tuple[str, ...] = ()
    before: str = "a"
    after: str = "b"
    title: str = ""
    note: str = field(default="")
    spark: SparkDiff | None = field(default=None, repr=False)

    @property
    def counts(self) -> dict[str, int]:
        """``{"added": n, "removed": n, "changed": n}``."""
        return {"added": self.added.num_rows, "removed": self.removed.num_rows,
                "changed": self.changed.num_rows}

    @property
    def columns(self) -> list[str]:
        """The compared columns, in schema order."""
        return list(self.added.column_names)

    def __bool__(self) -> bool:
        return any(self.counts.values())

    def changed_columns(self) -> list[list[str]]:
        """The changed column names of every changed row."""
        return [list(c) for c in self.changed.column("changed").to_pylist()]

    def to_spark(self) -> DataFrame:
        """The whole diff as one Spark DataFrame, laid out as :meth:`to_pandas` (for a diff
        computed with Spark: ``t.diff_data(a, b, engine="spark")``)."""
        if self.spark is None:
            raise EvoError("This data diff was computed without Spark, so it has no Spark "
                           "DataFrame", hint="t.diff_data(a, b, engine='spark'), or "
                           "to_pandas() for this one")
        return self.spark.frame()

    def to_pandas(self) -> pd.DataFrame:
        """The whole diff as one pandas DataFrame: ``change`` (``added``, ``removed`` or
        ``changed``), the key columns, ``changed`` (the changed column names; every non-key
        column for added and removed rows) and ``<col>__old``/``<col>__new`` for the other
        columns (``__old`` null for added rows, ``__new`` null for removed ones)."""
        import pandas as pd

        values = [c for c in self.columns if c not in self.key]
        order = ["change", *self.key, "changed",
                 *[f"{c}__{s}" for c in values for s in ("old", "new")]]
        records: list[dict[str, Any]] = []
        for kind, rows in (("added", self.added), ("removed", self.removed)):
            side = "new" if kind == "added" else "old"
            for row in python_rows(rows):
                record = {"change": kind, **{k: row[k] for k in self.key},
                          "changed": list(values)}
                record.update({f"{c}__{side}": row[c] for c in values})
                records.append(record)
        records += [{"change": "changed", **row} for row in python_rows(self.changed)]
        return pd.DataFrame.from_records(records, columns=order)

    # ------------------------------------------------------------------ display
    def _headline(self) -> str:
        n = self.counts
        by = f"by {', '.join(self.key)}" if self.key else "whole rows (no record key)"
        title = f"{self.title}: " if self.title else ""
        return (f"DataDiff {title}{self.before} -> {self.after}, {by}: {n['added']} added, "
                f"{n['removed']} removed, {n['changed']} changed")

    def _key_text(self, row: dict[str, Any]) -> str:
        return ", ".join(f"{k}={row[k]!r}" for k in self.key)

    def _changes(self, row: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        return [(c, row[f"{c}__old"], row[f"{c}__new"]) for c in row["changed"]]

    def __str__(self) -> str:
        lines = [self._headline()]
        if self.note:
            lines.append(self.note)
        for sign, rows in (("+", self.added), ("-", self.removed)):
            for row in python_rows(rows.slice(0, SAMPLE_ROWS)):
                lines.append(f"{sign} " + ", ".join(f"{k}={v!r}" for k, v in row.items()))
            if rows.num_rows > SAMPLE_ROWS:
                lines.append(f"{sign} ... {rows.num_rows - SAMPLE_ROWS} more")
        for row in python_rows(self.changed.slice(0, SAMPLE_ROWS)):
            what = "; ".join(f"{c}: {o!r} -> {n!r}" for c, o, n in self._changes(row))
            lines.append(f"~ {self._key_text(row)}: {what}")
        if self.changed.num_rows > SAMPLE_ROWS:
            lines.append(f"~ ... {self.changed.num_rows - SAMPLE_ROWS} more")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from html import escape

        def e(value: object) -> str:
            return escape(str(value), quote=True)

        cell = "padding: 2px 8px; text-align: left; vertical-align: top; border: none;"
        head = cell + " font-weight: 600; border-bottom: 1px solid rgba(128,128,128,0.5);"
        mono = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;"

        def grid(columns: Sequence[str], rows: list[list[Any]]) -> str:
            top = "".join(f'<th style="{head}">{e(c)}</th>' for c in columns)
            body = "".join("<tr>" + "".join(f'<td style="{cell} {mono}">{e(v)}</td>'
                                            for v in r) + "</tr>" for r in rows)
            return f'<table class="evonb-data-diff-rows"><tr>{top}</tr>{body}</table>'

        parts = [f'<div class="evonb-data-diff" style="font-family: system-ui, sans-serif; '
                 f'font-size: 13px;"><div style="font-weight: 600;">{e(self._headline())}</div>']
        if self.note:
            parts.append(f"<div>{e(self.note)}</div>")
        for kind, rows in (("added", self.added), ("removed", self.removed)):
            if rows.num_rows:
                sample = python_rows(rows.slice(0, SAMPLE_ROWS))
                parts.append(f"<div>{e(kind)} ({rows.num_rows}, first "
                             f"{len(sample)})</div>")
                parts.append(grid(rows.column_names, [list(r.values()) for r in sample]))
        if self.changed.num_rows:
            sample = python_rows(self.changed.slice(0, SAMPLE_ROWS))
            parts.append(f"<div>changed ({self.changed.num_rows}, first {len(sample)})</div>")
            rows = [[self._key_text(r), c, o, n] for r in sample for c, o, n in self._changes(r)]
            parts.append(grid(["key", "column", "old", "new"], rows))
        parts.append("</div>")
        return "".join(parts)


def diff_tables(before: pa.Table, after: pa.Table, key: Sequence[str] = (), *,
                labels: tuple[str, str] = ("a", "b"), title: str = "") -> DataDiff:
    """The rows added, removed and changed from ``before`` to ``after`` (two reads in one
    schema), by the record ``key`` columns, or as multisets of whole rows if ``key`` is
    empty."""
    if before.schema.names != after.schema.names:
        raise EvoError("Both sides of a data diff must be read in the same schema: "
                       f"{before.schema.names} vs {after.schema.names}")
    key = tuple(key)
    missing = [k for k in key if k not in before.column_names]
    if missing:
        raise EvoError(f"Key column {missing[0]!r} is not in the compared schema",
                       hint=f"columns: {', '.join(before.column_names)}")
    after = after.cast(before.schema) if after.schema != before.schema else after
    common: dict[str, Any] = {"key": key, "before": labels[0], "after": labels[1],
                              "title": title}
    if not key:
        return _multiset(before, after, common)
    a_keys = _key_index(before, key)
    b_keys = _key_index(after, key)
    removed = [i for k, i in a_keys.items() if k not in b_keys]
    added = [i for k, i in b_keys.items() if k not in a_keys]
    both = [(i, b_keys[k]) for k, i in a_keys.items() if k in b_keys]
    a_idx = pa.array([i for i, _ in both], pa.int64())
    b_idx = pa.array([j for _, j in both], pa.int64())
    values = [c for c in before.column_names if c not in key]
    diffs: list[list[bool]] = []
    for c in values:
        diffs.append(_differs(before.column(c).take(a_idx), after.column(c).take(b_idx)))
    rows = [n for n in range(len(both)) if any(d[n] for d in diffs)]
    names = [[c for c, d in zip(values, diffs, strict=True) if d[n]] for n in rows]
    take_a = a_idx.take(pa.array(rows, pa.int64()))
    take_b = b_idx.take(pa.array(rows, pa.int64()))
    arrays: list[Any] = [before.column(k).take(take_a) for k in key]
    fields: list[pa.Field] = [before.schema.field(k) for k in key]
    arrays.append(pa.array(names, pa.list_(pa.string())))
    fields.append(pa.field("changed", pa.list_(pa.string())))
    for c in values:
        f = before.schema.field(c)
        arrays += [before.column(c).take(take_a), after.column(c).take(take_b)]
        fields += [pa.field(f"{c}__old", f.type), pa.field(f"{c}__new", f.type)]
    changed = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    return DataDiff(added=_sorted(after.take(pa.array(added, pa.int64())), key),
                    removed=_sorted(before.take(pa.array(removed, pa.int64())), key),
                    changed=_sorted(changed, key), **common)


def _key_index(table: pa.Table, key: Sequence[str]) -> dict[tuple[Any, ...], int]:
    columns = [key_list(table.column(k)) for k in key]
    return {_freeze(k): i for i, k in enumerate(zip(*columns, strict=True))}


def _differs(a: pa.ChunkedArray, b: pa.ChunkedArray) -> list[bool]:
    """Per row: whether the values differ (nulls equal nulls, NaN equals NaN)."""
    t = a.type
    if pa.types.is_primitive(t) or pa.types.is_string(t) or pa.types.is_large_string(t) \
            or pa.types.is_binary(t) or pa.types.is_decimal(t):
        same = pc.fill_null(pc.equal(a, b), False)
        same = pc.or_(same, pc.and_(pc.is_null(a), pc.is_null(b)))
        if pa.types.is_floating(t):
            same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
        return [not s for s in same.to_pylist()]
    a_values, b_values = key_list(a), key_list(b)  # dates and timestamps as numbers
    return [_freeze(x) != _freeze(y) for x, y in zip(a_values, b_values, strict=True)]


def _freeze(value: Any) -> Any:
    """A hashable form of a value from ``to_pylist`` (NaN made equal to itself)."""
    if isinstance(value, dict):
        return ("\0struct", tuple((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("\0list", tuple(_freeze(v) for v in value))
    if isinstance(value, float) and math.isnan(value):
        return ("\0nan",)
    return value


def _multiset(before: pa.Table, after: pa.Table, common: dict[str, Any]) -> DataDiff:
    a_rows = [_freeze(tuple(r.values())) for r in _comparable_rows(before)]
    b_rows = [_freeze(tuple(r.values())) for r in _comparable_rows(after)]
    surplus_a = Counter(a_rows)
    surplus_a.subtract(Counter(b_rows))
    surplus_b = Counter({k: -v for k, v in surplus_a.items() if v < 0})

    def pick(rows: list[Any], surplus: Counter[Any]) -> list[int]:
        out = []
        for i, r in enumerate(rows):
            if surplus[r] > 0:
                surplus[r] -= 1
                out.append(i)
        return out

    removed = pick(a_rows, Counter({k: v for k, v in surplus_a.items() if v > 0}))
    added = pick(b_rows, surplus_b)
    fields = [pa.field("changed", pa.list_(pa.string()))]
    for f in before.schema:
        fields += [pa.field(f"{f.name}__old", f.type), pa.field(f"{f.name}__new", f.type)]
    order = sort_columns(before.schema)
    return DataDiff(added=_sorted(after.take(pa.array(added, pa.int64())), order),
                    removed=_sorted(before.take(pa.array(removed, pa.int64())), order),
                    changed=pa.schema(fields).empty_table(), **common)


def _comparable_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of ``table`` as Python values, dates and timestamps as numbers
    (:func:`~evonb.spark.arrow_collect.with_times_as_numbers`)."""
    return rows_with_times_as_numbers(table).to_pylist()


def sort_columns(schema: pa.Schema) -> tuple[str, ...]:
    """The columns a keyless diff's rows are sorted by: those of plain (orderable) types."""
    return tuple(f.name for f in schema if not pa.types.is_nested(f.type)
                 and not pa.types.is_null(f.type))


def _sorted(table: pa.Table, by: Sequence[str]) -> pa.Table:
    """``table`` sorted by ``by`` ascending, nulls first (as Spark's ``orderBy``), stable."""
    if not by or table.num_rows < 2:
        return table
    try:  # pyarrow 25 and later: null placement per key
        order = pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in by])
    except (TypeError, ValueError, pa.ArrowException):
        order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in by],
                                null_placement="at_start")
    return table.take(order)


# ---------------------------------------------------------------------- Spark
def _changed_schema(schema: pa.Schema, key: Sequence[str]) -> pa.Schema:
    fields = [schema.field(k) for k in key]
    fields.append(pa.field("changed", pa.list_(pa.string())))
    for f in schema:
        if f.name not in key:
            fields += [pa.field(f"{f.name}__old", f.type), pa.field(f"{f.name}__new", f.type)]
    return pa.schema(fields)


def _has_map(t: DataType) -> bool:
    from pyspark.sql import types as T

    if isinstance(t, T.MapType):
        return True
    if isinstance(t, T.ArrayType):
        return _has_map(t.elementType)
    if isinstance(t, T.StructType):
        return any(_has_map(f.dataType) for f in t.fields)
    return False


def _comparable(col: Column, t: DataType) -> Column:
    """``col`` in a form Spark compares with ``<=>`` and groups by: maps (which Spark does
    not compare) as their entries in order, which is how :func:`diff_tables` compares them."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not _has_map(t):
        return col
    if isinstance(t, T.MapType):
        kt, vt = t.keyType, t.valueType
        return F.transform(F.map_entries(col), lambda e: F.struct(
            _comparable(e["key"], kt).alias("key"), _comparable(e["value"], vt).alias("value")))
    if isinstance(t, T.ArrayType):
        et = t.elementType
        return F.transform(col, lambda x: _comparable(x, et))
    assert isinstance(t, T.StructType)
    return F.when(col.isNotNull(), F.struct(*[_comparable(col[f.name], f.dataType).alias(f.name)
                                              for f in t.fields]))


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True, eq=False)
class SparkDiff:
    """A data diff computed by Spark: three Spark DataFrames in the layout of
    :class:`DataDiff` (sorted as it is), not yet collected."""

    added: DataFrame
    removed: DataFrame
    changed: DataFrame
    key: tuple[str, ...]
    columns: tuple[str, ...]

    def collect(self, schema: pa.Schema, *, labels: tuple[str, str] = ("a", "b"),
                title: str = "") -> DataDiff:
        """The :class:`DataDiff` (rows collected to Arrow, in ``schema``: the Arrow reader's
        schema of the compared columns, so both engines' diffs have the same types)."""
        def arrow(df: DataFrame, target: pa.Schema) -> pa.Table:
            rows = to_arrow(df)
            return pa.Table.from_arrays(
                [rows.column(i).cast(f.type) for i, f in enumerate(target)], schema=target)

        return DataDiff(added=arrow(self.added, schema), removed=arrow(self.removed, schema),
                        changed=arrow(self.changed, _changed_schema(schema, self.key)),
                        key=self.key, before=labels[0], after=labels[1], title=title,
                        spark=self)

    def frame(self) -> DataFrame:
        """The whole diff as one Spark DataFrame, laid out as :meth:`DataDiff.to_pandas`
        (``change``, the key columns, ``changed``, ``<col>__old``/``<col>__new``)."""
        from pyspark.sql import functions as F

        values = [c for c in self.columns if c not in self.key]
        types = {f.name: f.dataType for f in self.added.schema.fields}
        every = F.array(*[F.lit(c) for c in values]).cast("array<string>")

        def side(df: DataFrame, kind: str) -> DataFrame:
            cols = [F.lit(kind).alias("change"), *[F.col(_q(k)) for k in self.key],
                    every.alias("changed")]
            for c in values:
                here, none = F.col(_q(c)), F.lit(None).cast(types[c])
                old, new = (none, here) if kind == "added" else (here, none)
                cols += [old.alias(f"{c}__old"), new.alias(f"{c}__new")]
            return df.select(*cols)

        changed = self.changed.select(F.lit("changed").alias("change"), "*")
        return side(self.added, "added").unionByName(side(self.removed, "removed")) \
            .unionByName(changed)


def diff_frames(before: DataFrame, after: DataFrame, key: Sequence[str] = ()) -> SparkDiff:
    """:func:`diff_tables` with Spark: the rows added, removed and changed from ``before`` to
    ``after`` (two Spark reads in one schema), by ``key`` or (no key) as multisets of whole
    rows. Equality as there: ``<=>`` (null equals null, NaN equals NaN), maps entry by
    entry."""
    from functools import reduce

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = tuple(before.columns)
    if tuple(after.columns) != columns:
        raise EvoError("Both sides of a data diff must be read in the same schema: "
                       f"{list(columns)} vs {after.columns}")
    key = tuple(key)
    missing = [k for k in key if k not in columns]
    if missing:
        raise EvoError(f"Key column {missing[0]!r} is not in the compared schema",
                       hint=f"columns: {', '.join(columns)}")
    types = {f.name: f.dataType for f in before.schema.fields}
    after = after.select(*[F.col(_q(c)).cast(types[c]).alias(c) for c in columns])
    n = len(columns)

    def prepared(df: DataFrame, side: str) -> DataFrame:
        cols = [F.col(_q(c)).alias(f"__{side}{i}") for i, c in enumerate(columns)]
        cols += [_comparable(F.col(_q(c)), types[c]).alias(f"__{side}c{i}")
                 for i, c in enumerate(columns)]
        out = df.select(*cols, F.lit(True).alias(f"__{side}p"))
        if not key:  # the n-th copy of a row meets the n-th copy on the other side
            window = Window.partitionBy(*[f"__{side}c{i}" for i in range(n)]) \
                .orderBy(F.monotonically_increasing_id())
            out = out.withColumn(f"__{side}r", F.row_number().over(window))
        return out

    old, new = prepared(before, "o"), prepared(after, "n")
    on_cols = [columns.index(k) for k in key] if key else list(range(n))
    on = [F.col(f"__oc{i}").eqNullSafe(F.col(f"__nc{i}")) for i in on_cols]
    if not key:
        on.append(F.col("__or") == F.col("__nr"))
    # Computed once: the three parts below (and their frame) read it, not the table again.
    joined = old.join(new, reduce(lambda a, b: a & b, on), "full").localCheckpoint(eager=True)
    order = key or sort_columns_spark(before)
    sort = [F.col(_q(c)).asc_nulls_first() for c in order]
    removed = joined.filter(F.col("__np").isNull()).select(
        *[F.col(f"__o{i}").alias(c) for i, c in enumerate(columns)]).orderBy(*sort)
    added = joined.filter(F.col("__op").isNull()).select(
        *[F.col(f"__n{i}").alias(c) for i, c in enumerate(columns)]).orderBy(*sort)
    values = [i for i, c in enumerate(columns) if c not in key]
    if key and values:
        differs = {i: ~F.col(f"__oc{i}").eqNullSafe(F.col(f"__nc{i}")) for i in values}
        names = F.array_compact(F.array(*[F.when(differs[i], F.lit(columns[i]))
                                          for i in values]))
        cols = [F.col(f"__o{columns.index(k)}").alias(k) for k in key]
        cols.append(names.alias("changed"))
        for i in values:
            cols += [F.col(f"__o{i}").alias(f"{columns[i]}__old"),
                     F.col(f"__n{i}").alias(f"{columns[i]}__new")]
        changed = joined.filter(F.col("__op") & F.col("__np")) \
            .filter(reduce(lambda a, b: a | b, differs.values())).select(*cols).orderBy(*sort)
    else:
        cols = [F.col(_q(k)) for k in key] + [F.array().cast("array<string>").alias("changed")]
        for i in values:
            cols += [F.col(_q(columns[i])).alias(f"{columns[i]}__old"),
                     F.col(_q(columns[i])).alias(f"{columns[i]}__new")]
        changed = before.select(*cols).limit(0)
    return SparkDiff(added=added, removed=removed, changed=changed, key=key, columns=columns)


def sort_columns_spark(df: DataFrame) -> tuple[str, ...]:
    """:func:`sort_columns` for a Spark DataFrame: its columns of plain types."""
    from pyspark.sql import types as T

    nested = (T.StructType, T.ArrayType, T.MapType, T.NullType)
    return tuple(f.name for f in df.schema.fields if not isinstance(f.dataType, nested))
