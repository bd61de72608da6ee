"""Skipping data files by their partition folder: which files a conjunction of simple filters
on partition columns cannot match.

A partition folder (``day=2024-01-31/region=eu``) names the values the writer routed the
file's rows by, one piece per partition column in the table's partition order (the names in
the folder are the columns' names when the file was written; a later rename does not move
files, so pieces are matched by position). The values are a lossy spelling: Spark writes both
null and ``''`` of a string column to ``__HIVE_DEFAULT_PARTITION__``, escapes characters a path
cannot hold as ``%XX``, and spells numbers, dates and booleans as text. So a file is skipped
only when every value its folder can stand for fails a filter, and only for the types whose
spelling is exact (integers, strings, dates, booleans). Files evonb did not write itself
(``kind`` other than ``"base"``: adopted by :func:`evonb.convert` or from Hudi) are never
skipped: evonb reads partition columns from the files, and a file's folder need not agree
with its rows.

Filters are in the JSON form the Spark data source pushes
(:func:`evonb.arrow.spark_source.pushed_filter`): ``[operator, path, value]`` with operator one
of ``==``, ``>``, ``>=``, ``<``, ``<=``, ``in``, ``is_null``, ``is_valid``. Pure Python: no
Spark, no pyarrow.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

from evonb.schema.types import BOOLEAN, DATE, INTEGRAL, STRING, Type
from evonb.table.partition_folders import NULL_FOLDER

_UNKNOWN = object()


def _parse(text: str, kind: Type) -> Any:
    """The value a folder piece spells for a column of type ``kind``; :data:`_UNKNOWN` when
    it cannot be told exactly."""
    try:
        if kind in INTEGRAL:
            return int(text)
        if kind == STRING:
            return unquote(text)
        if kind == DATE:
            return datetime.date.fromisoformat(text)
        if kind == BOOLEAN and text in ("true", "false"):
            return text == "true"
    except ValueError:
        pass
    return _UNKNOWN


def folder_values(folder: str, kinds: Sequence[Type]) -> list[tuple[Any, ...] | None]:
    """For each partition column (``kinds``: their types, in partition order), the values
    the folder's piece can stand for; None where it cannot be told (a piece missing or
    unparsable, a type left out)."""
    pieces = folder.split("/") if folder else []
    out: list[tuple[Any, ...] | None] = []
    for i, kind in enumerate(kinds):
        if i >= len(pieces) or "=" not in pieces[i]:
            out.append(None)
            continue
        raw = pieces[i].split("=", 1)[1]
        if raw == NULL_FOLDER:
            # Spark writes null and "" there; a string can also be spelled so itself
            out.append((None, "", NULL_FOLDER) if kind == STRING else (None,))
            continue
        value = _parse(raw, kind)
        out.append(None if value is _UNKNOWN else (value,))
    return out


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}


def _holds(op: str, value: Any, operand: Any) -> bool:
    """Whether the filter ``op operand`` keeps a row whose column is ``value`` (SQL: a
    comparison with null keeps nothing)."""
    if op == "is_null":
        return value is None
    if op == "is_valid":
        return value is not None
    if value is None:
        return False
    operands = list(operand) if op == "in" else [operand]
    if not all(type(v) is type(value) for v in operands):
        return True  # an operand of another type: cannot tell, so keep
    if op == "in":
        return value in operands
    return _COMPARE[op](value, operand)


def may_match(folder: str, kinds: Sequence[Type], columns: Sequence[Sequence[str]],
              filters: Sequence[tuple[str, Sequence[str], Any]]) -> bool:
    """Whether a file in partition ``folder`` may hold a row that every filter keeps.
    ``columns`` are the partition columns' paths in the read's schema and ``kinds`` their
    types; filters on other columns say nothing here."""
    values = folder_values(folder, kinds)
    where = {tuple(path): i for i, path in enumerate(columns)}
    for op, path, operand in filters:
        i = where.get(tuple(path))
        if i is None or values[i] is None:
            continue
        if not any(_holds(op, v, operand) for v in values[i]):
            return False
    return True


__all__ = ["NULL_FOLDER", "folder_values", "may_match"]
