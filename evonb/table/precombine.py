"""The precombine ordering rule: which of the records of one record key wins.

Every place that keeps one record per key (a copy-on-write upsert, the deduplication of incoming
rows, the resolution of merge-on-read log records and their merge with the base row,
compaction, the JVM-free reader) orders the records of a key by :data:`RULE` and keeps the
first:

1. *live*: the records after the key's last delete come first (a delete removes what came
   before it; when nothing follows it, the delete is the key's last word);
2. *precombine*: the larger precombine value first; a null value last (it loses to any value);
   values compare as Spark orders them: NaN above every other number, ``-0.0`` equal to
   ``0.0`` (Hudi's Java comparison of doubles puts NaN on top as well);
3. *commit*: the later commit first (a stored row before an incoming one, a log record after
   its base row, a later log block after an earlier one);
4. *sequence*: the later record of one commit first (the later of two incoming rows).

A role a caller has no column for (a table without a precombine column, records without
deletes or without a sequence) is left out. A later record *beats* an earlier one of its key
(:func:`precombine_key`) unless the earlier one comes first on the precombine key: a tie goes
to the later record.

The rule is data here; :mod:`evonb.spark.precombine` compiles it to Spark columns and
:mod:`evonb.spark.precombine_arrow` to Arrow sort keys and kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    """What a sort key of the rule orders by."""

    LIVE = "live"
    """True for a record after its key's last delete (or of a key never deleted)."""
    PRECOMBINE = "precombine"
    """The table's precombine column."""
    COMMIT = "commit"
    """The order of the commit (or log block) that wrote the record."""
    SEQUENCE = "sequence"
    """The order of the record among those of its commit."""


@dataclass(frozen=True)
class Term:
    """One key of the rule: a role, larger first when ``descending``, nulls first or last."""

    role: Role
    descending: bool
    nulls_first: bool


@dataclass(frozen=True)
class SortKey:
    """A key of an ordering bound to a column: larger values first when ``descending``, nulls
    first or last; NaN is larger than every other number of its column."""

    column: str
    descending: bool = True
    nulls_first: bool = False


RULE: tuple[Term, ...] = (
    Term(Role.LIVE, descending=True, nulls_first=False),
    Term(Role.PRECOMBINE, descending=True, nulls_first=False),
    Term(Role.COMMIT, descending=True, nulls_first=False),
    Term(Role.SEQUENCE, descending=True, nulls_first=False),
)
"""The precombine ordering: the records of a key sorted by these keys, the first wins."""


def ordering(*, live: str | None = None, precombine: str | None = None,
             commit: str | None = None, sequence: str | None = None) -> tuple[SortKey, ...]:
    """:data:`RULE` bound to the caller's columns; the roles given no column are left out."""
    columns = {Role.LIVE: live, Role.PRECOMBINE: precombine, Role.COMMIT: commit,
               Role.SEQUENCE: sequence}
    return tuple(SortKey(column, t.descending, t.nulls_first)
                 for t in RULE if (column := columns[t.role]) is not None)


def precombine_key(column: str | None) -> SortKey | None:
    """The rule's precombine key on ``column`` (None without a precombine column): what decides
    whether a later record beats an earlier one of its key."""
    return ordering(precombine=column)[0] if column is not None else None


__all__ = ["RULE", "Role", "SortKey", "Term", "ordering", "precombine_key"]
