"""Physical column names: stable per field ID, unique across the table's whole history.

Data files name their columns by *physical* names, not by the current logical names. A column's
physical name is given when the column is created (its business name, so files stay readable,
or ``name__<id>`` when that name was ever used at the same level) and never changes on a rename.
A type change that Spark's Parquet reader cannot widen natively starts a new *generation*:
the column gets a fresh physical name, and files written before keep the old one.
This keeps Parquet filter pushdown correct after renames, swaps and drop-then-re-add (Delta
Lake's column-mapping idea), without reading by field ID.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evonb.schema.json_fields import type_from_json, type_to_json
from evonb.schema.schema import ROOT_ID, Schema, walk
from evonb.schema.types import (
    BIGINT,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    TIMESTAMP_NTZ,
    TINYINT,
    ArrayType,
    DecimalType,
    MapType,
    StructType,
    Type,
)

META_COMMIT_TIME = "_evo_commit_time"
"""Hidden column in every data file: the instant that wrote the row."""
RESERVED = frozenset({META_COMMIT_TIME.lower()})

_INTEGRAL_RANK = {TINYINT: 1, SMALLINT: 2, INT: 3, BIGINT: 4}
_DECIMAL_DIGITS_READ = {TINYINT: 10, SMALLINT: 10, INT: 10, BIGINT: 20}
"""The integer digits a decimal needs for Spark's vectorized Parquet reader to read an integer
column as it: a Parquet ``INT32`` (tinyint, smallint and int alike) as ``decimal(10,0)`` or
wider, an ``INT64`` as ``decimal(20,0)`` or wider. A narrower decimal fails the read, even one
that holds every value of the integer type (``tinyint`` as ``decimal(5,2)``)."""


# Not on the partner visitor: it compares two types' kinds only, and a struct ends the comparison.
def natively_readable(file_type: Type, read_type: Type) -> bool:
    """Whether Spark's Parquet readers read ``file_type`` data as ``read_type`` by themselves.

    Measured on Spark 4 (vectorized and row readers): wider integers, int -> double,
    float -> double, integers -> decimals with the integer digits the vectorized reader asks
    (:data:`_DECIMAL_DIGITS_READ`), decimal widening that keeps every integer digit and does
    not drop scale, date -> timestamp_ntz; nested types when their parts are. Anything else is
    read in its own type and cast.
    """
    if file_type == read_type:
        return True
    if isinstance(file_type, StructType) and isinstance(read_type, StructType):
        return True  # members carry their own physical names
    if isinstance(file_type, ArrayType) and isinstance(read_type, ArrayType):
        return _element_readable(file_type.element.type, read_type.element.type)
    if isinstance(file_type, MapType) and isinstance(read_type, MapType):
        return file_type.key.type == read_type.key.type and _element_readable(
            file_type.value.type, read_type.value.type
        )
    if file_type in _INTEGRAL_RANK and read_type in _INTEGRAL_RANK:
        return _INTEGRAL_RANK[read_type] >= _INTEGRAL_RANK[file_type]  # type: ignore[index]
    if file_type is INT and read_type is DOUBLE:
        return True
    if file_type is FLOAT and read_type is DOUBLE:
        return True
    if file_type in _DECIMAL_DIGITS_READ and isinstance(read_type, DecimalType):
        digits = _DECIMAL_DIGITS_READ[file_type]  # type: ignore[index]
        return read_type.precision - read_type.scale >= digits
    if isinstance(file_type, DecimalType) and isinstance(read_type, DecimalType):
        return (read_type.scale >= file_type.scale
                and read_type.precision - read_type.scale >= file_type.precision - file_type.scale)
    return file_type is DATE and read_type is TIMESTAMP_NTZ


def _element_readable(a: Type, b: Type) -> bool:
    if isinstance(a, StructType) and isinstance(b, StructType):
        return True
    return natively_readable(a, b)


def keeps_physical_name(old: Type, new: Type) -> bool:
    """Whether a field changed from ``old`` to ``new`` keeps its physical name: Spark's Parquet
    readers read ``old`` data as ``new`` by themselves, and give every value what ``try_cast``
    gives. Not date -> timestamp_ntz (in a list or map too): Spark's native widening fails the
    whole read on a date whose midnight no timestamp holds (past year 294247), where
    ``try_cast`` reads null, so that change starts a generation that reads cast."""
    return natively_readable(old, new) and not _date_to_timestamp(old, new)


def _date_to_timestamp(a: Type, b: Type) -> bool:
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return _date_to_timestamp(a.element.type, b.element.type)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return _date_to_timestamp(a.value.type, b.value.type)
    return a is DATE and b is TIMESTAMP_NTZ


_UNSAFE = re.compile(r"[^\w]", re.UNICODE)


def sanitize(name: str) -> str:
    """A Parquet-safe column name close to ``name`` (letters, digits and ``_`` kept)."""
    cleaned = _UNSAFE.sub("_", name).strip()
    return cleaned or "col"


@dataclass(frozen=True)
class Layout:
    """Physical names of one schema version: ``physical`` maps field ID -> physical name for
    every struct member and top-level column; ``used`` keeps, per parent ID, every physical name
    (lower case) ever handed out at that level, so none is ever given twice.

    ``types`` keeps, for every primitive field whose type changed, the types it has had, oldest
    first, ending with its type in this version: a value a file stored in an older type is read
    through each type after it (:func:`~evonb.table.read_plan.type_paths`), so what a read shows
    never depends on whether a rewrite in between stored it in one of those. ``typed`` is False
    for layouts written before histories were kept (their types are not known)."""

    physical: Mapping[int, str] = field(default_factory=dict)
    used: Mapping[int, frozenset[str]] = field(default_factory=dict)
    types: Mapping[int, tuple[Type, ...]] = field(default_factory=dict)
    typed: bool = True

    def name(self, field_id: int) -> str:
        return self.physical[field_id]

    def history(self, field_id: int, current: Type) -> tuple[Type, ...] | None:
        """The types field ``field_id`` (of type ``current`` in this version) has had, oldest
        first; None when this layout does not know them."""
        if not self.typed:
            return None
        return self.types.get(field_id, (current,))

    def to_dict(self) -> dict[str, Any]:
        return {
            "physical": {str(k): v for k, v in sorted(self.physical.items())},
            "used": {str(k): sorted(v) for k, v in sorted(self.used.items())},
            "types": {str(k): [type_to_json(t) for t in v] for k, v in sorted(self.types.items())},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Layout:
        return cls(
            physical={int(k): str(v) for k, v in data.get("physical", {}).items()},
            used={int(k): frozenset(v) for k, v in data.get("used", {}).items()},
            types={int(k): tuple(type_from_json(t) for t in v)
                   for k, v in data.get("types", {}).items()},
            typed="types" in data,
        )


def _histories(schema: Schema, previous: Schema | None, layout: Layout
               ) -> dict[int, tuple[Type, ...]]:
    """The type histories of ``schema``'s primitive fields (those with more than one type),
    continuing ``layout``'s (of ``previous``; a field ``previous`` lacks continues the history
    ``layout`` holds for it, a field a revert brings back)."""
    out: dict[int, tuple[Type, ...]] = {}
    for info in walk(schema.fields):
        t = info.field.type
        if not t.is_primitive:
            continue
        fid = info.field.id
        before: tuple[Type, ...] = layout.types.get(fid, ())
        if not before and previous is not None and previous.has_id(fid):
            old = previous.field_by_id(fid).type
            before = (old,) if old.is_primitive else ()
        history = before if before and before[-1] == t else (*before, t)
        if len(history) > 1:
            out[fid] = history
    return out


def named_members(schema: Schema) -> list[tuple[int, int, str, Type]]:
    """(id, parent id, name, type) of every field that has a physical name (struct members)."""
    out = []
    for info in walk(schema.fields):
        parent = info.parent_id
        if parent == ROOT_ID or isinstance(schema.field_by_id(parent).type, StructType):
            out.append((info.field.id, parent, info.field.name, info.field.type))
    return out


def derive_layout(schema: Schema, previous: tuple[Schema, Layout] | None = None) -> Layout:
    """The layout of ``schema``, continuing ``previous`` (the prior version and its layout)."""
    prev_schema, prev_layout = previous if previous else (None, Layout())
    physical: dict[int, str] = {}
    used: dict[int, set[str]] = {k: set(v) for k, v in prev_layout.used.items()}
    used.setdefault(ROOT_ID, set()).update(RESERVED)
    for field_id, parent, name, t in named_members(schema):
        old_name = prev_layout.physical.get(field_id)
        if old_name is not None and prev_schema is not None and prev_schema.has_id(field_id):
            old_type = prev_schema.field_by_id(field_id).type
            if keeps_physical_name(old_type, t):
                physical[field_id] = old_name
                continue
        elif old_name is not None:
            physical[field_id] = old_name
            continue
        level = used.setdefault(parent, set())
        base = sanitize(name)
        candidate = base
        if candidate.lower() in level:
            candidate = f"{base}__{field_id}"
            k = 2
            while candidate.lower() in level:
                candidate = f"{base}__{field_id}_{k}"
                k += 1
        level.add(candidate.lower())
        physical[field_id] = candidate
    return Layout(physical=physical, used={k: frozenset(v) for k, v in used.items()},
                  types=_histories(schema, prev_schema, prev_layout))
