"""The precombine rule (:mod:`evonb.table.precombine`) compiled to Spark columns.

Spark orders and compares doubles as the rule does (NaN above every number), so each sort key
is a column's ``desc_nulls_last`` (or its sibling) and a comparison is Spark's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evonb.table.precombine import SortKey

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

RANK = "__evo_rn"
INCOMING = "__evo_incoming"


def column(name: str) -> Column:
    """The column ``name`` (quoted: any name)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def order_columns(keys: Sequence[SortKey]) -> list[Column]:
    """The ``orderBy`` columns of an ordering."""
    out = []
    for k in keys:
        c = column(k.column)
        if k.descending:
            out.append(c.desc_nulls_first() if k.nulls_first else c.desc_nulls_last())
        else:
            out.append(c.asc_nulls_first() if k.nulls_first else c.asc_nulls_last())
    return out


def first_per_key(df: DataFrame, partition: Sequence[str], keys: Sequence[SortKey], *,
                  merged_only_where: str | None = None) -> DataFrame:
    """The first row of each ``partition`` value of ``df`` in the ordering ``keys`` (a window
    over the partition columns).

    ``merged_only_where``: a column that is 1 on incoming rows and 0 on stored ones; a key
    with no incoming row keeps every stored row it has (a key may be stored more than once:
    inserts of a key already stored, ``evonb.write.insert_duplicates = 'allow'``), so a merge
    changes only the keys that come in. Computed in the same window (one more frame)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy(*[column(p) for p in partition]).orderBy(*order_columns(keys))
    ranked = df.withColumn(RANK, F.row_number().over(w))
    if merged_only_where is None:
        return ranked.filter(F.col(RANK) == 1).drop(RANK)
    whole = w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    ranked = ranked.withColumn(INCOMING, F.max(column(merged_only_where)).over(whole))
    return ranked.filter((F.col(RANK) == 1) | (F.col(INCOMING) == 0)).drop(RANK, INCOMING)


def ahead(a: Column, b: Column, key: SortKey) -> Column:
    """Whether ``a`` comes strictly before ``b`` on ``key`` (never null)."""
    from pyspark.sql import functions as F

    before = a > b if key.descending else a < b
    nulls = (a.isNull() & b.isNotNull()) if key.nulls_first else (a.isNotNull() & b.isNull())
    return F.coalesce(before, F.lit(False)) | nulls


def beats(new: Column, old: Column, key: SortKey | None) -> Column:
    """Whether a later record whose precombine value is ``new`` beats an earlier one whose value
    is ``old`` (never null): unless ``old`` comes first on the precombine ``key``; always
    without a precombine column (``key`` None)."""
    from pyspark.sql import functions as F

    return F.lit(True) if key is None else ~ahead(old, new, key)


__all__ = ["ahead", "beats", "column", "first_per_key", "order_columns"]
