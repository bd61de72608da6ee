"""Record-key statistics: each data file's min and max of every record-key column.

Writers take them from the Parquet footers of the files they have just written (the footer is
already read for the row count; nothing else is scanned) and record them in the commit
metadata, by field ID, in each ``added`` entry (``key_stats``). An upsert or delete on a
record-key table computes the incoming keys' min and max in the job that checks them for nulls,
and looks for existing keys only in files whose ranges overlap the incoming ones
(:func:`prune`). A file without statistics (written before they existed, adopted in place, a
key column of a type without an order kept here) is always looked in: pruning only ever skips
files that provably hold none of the incoming keys.

Values are kept in the JSON form of defaults (``docs/format.md``) and compared as the type the
file was written with, converted to the key's current type: wider integers and decimals compare
as numbers, a date as the midnight of a ``timestamp_ntz``; other type changes drop the file's
statistics for that column. Field IDs make renames irrelevant (statistics name no column).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from evonb.schema.defaults import default_from_json, default_to_json
from evonb.schema.types import (
    BOOLEAN,
    DATE,
    INTEGRAL,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    DecimalType,
    Type,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow.parquet as pq

    from evonb.schema.schema import Schema
    from evonb.table.layout import Layout

KeyStats = tuple[tuple[int, Any, Any], ...]
"""Per key field ID: (id, min, max), values in their JSON form, sorted by ID."""

VersionLookup = Callable[[str], "tuple[Schema, Layout]"]


class StatsFile(Protocol):
    """What pruning reads of a data file (a :class:`~evonb.table.snapshot.DataFile`): the
    schema version it was written in and its key statistics."""

    @property
    def version(self) -> str: ...

    @property
    def key_stats(self) -> KeyStats | None: ...


F = TypeVar("F", bound=StatsFile)

_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICRO = dt.timedelta(microseconds=1)


def prunable(t: Type) -> bool:
    """Whether key ranges of type ``t`` are recorded and compared.

    Integers, decimals, strings, dates, timestamps and booleans: the order of their Parquet
    statistics (signed integers, decimals by value, strings by unsigned bytes = code points)
    is Spark's order. Floating-point keys (NaN, -0.0) and binary keys are not."""
    return (t in INTEGRAL or isinstance(t, DecimalType)
            or t in (STRING, DATE, TIMESTAMP, TIMESTAMP_NTZ, BOOLEAN))


def key_columns(key_ids: Iterable[int], schema: Schema,
                layout: Layout) -> dict[int, tuple[str, Type]]:
    """The key columns a file written in ``schema``/``layout`` gets statistics for:
    field ID -> (physical name, type)."""
    out: dict[int, tuple[str, Type]] = {}
    for fid in key_ids:
        if not schema.has_id(fid):
            continue
        t = schema.field_by_id(fid).type
        if prunable(t) and fid in layout.physical:
            out[fid] = (layout.name(fid), t)
    return out


# ------------------------------------------------------------------------------ writing
def footer_stats(metadata: pq.FileMetaData,
                 columns: Mapping[int, tuple[str, Type]]) -> KeyStats | None:
    """The key statistics of one Parquet file from its footer (row-group statistics): a
    column is left out when a row group with non-null values has no min/max. None when no
    column has statistics."""
    if not columns or metadata.num_row_groups == 0:
        return None
    index: dict[str, int] = {}
    first = metadata.row_group(0)
    for i in range(first.num_columns):
        index.setdefault(first.column(i).path_in_schema, i)
    out = []
    for fid, (name, t) in sorted(columns.items()):
        pos = index.get(name)
        if pos is None:
            continue
        found = _column_range(metadata, pos)
        if found is None:
            continue
        try:
            lo, hi = default_to_json(found[0], t), default_to_json(found[1], t)
            if not all(isinstance(v, str | int) for v in (lo, hi)):
                continue  # e.g. bytes for a string column without its logical type
            if _decode(lo, t) is None or _decode(hi, t) is None:
                continue
        except (TypeError, ValueError, ArithmeticError, AttributeError):
            continue
        out.append((fid, lo, hi))
    return tuple(out) or None


def _column_range(metadata: pq.FileMetaData, pos: int) -> tuple[Any, Any] | None:
    lo = hi = None
    for g in range(metadata.num_row_groups):
        rg = metadata.row_group(g)
        if rg.num_rows == 0:
            continue
        col = rg.column(pos)
        try:
            s = col.statistics
            if s is None:
                return None
            if s.has_null_count and s.null_count >= rg.num_rows:
                continue  # only nulls here: no key a join could match
            if not s.has_min_max:
                return None
            a, b = s.min, s.max
        except (ValueError, OverflowError, UnicodeDecodeError, NotImplementedError):
            return None  # statistics pyarrow cannot decode (a date past year 9999: Overflow)
        if a is None or b is None:
            return None
        lo = a if lo is None or a < lo else lo
        hi = b if hi is None or b > hi else hi
    if lo is None:
        return None
    return lo, hi


def stats_to_json(stats: KeyStats) -> dict[str, dict[str, Any]]:
    return {str(fid): {"min": lo, "max": hi} for fid, lo, hi in stats}


def stats_from_json(data: Any) -> KeyStats | None:
    """Parse ``key_stats``; anything malformed reads as no statistics (the file is scanned)."""
    if not isinstance(data, Mapping):
        return None
    out = []
    for key, value in data.items():
        try:
            fid = int(key)
        except (TypeError, ValueError):
            return None
        if not isinstance(value, Mapping) or "min" not in value or "max" not in value:
            return None
        lo, hi = value["min"], value["max"]
        if not all(isinstance(v, str | int | float | bool) for v in (lo, hi)):
            return None
        out.append((fid, lo, hi))
    return tuple(sorted(out, key=lambda x: x[0])) or None


# ------------------------------------------------------------------------------ pruning
def _decode(value: Any, t: Type) -> Any:
    """A JSON statistics value of type ``t`` as a comparable Python value (None if invalid)."""
    try:
        v = default_from_json(value, t)
    except (TypeError, ValueError, ArithmeticError):
        return None
    return comparable(v, t)


def comparable(value: Any, t: Type) -> Any:
    """``value`` of type ``t`` in a form that orders like Spark: timestamps (instants) as
    microseconds since the epoch; everything else as is."""
    if value is None:
        return None
    if t is TIMESTAMP:
        if isinstance(value, int):
            return value
        if value.tzinfo is None:  # a UTC instant without its zone
            value = value.replace(tzinfo=dt.UTC)
        return (value - _EPOCH_UTC) // _MICRO
    return value


def convert(value: Any, src: Type, dst: Type) -> Any:
    """A comparable value of a file's type ``src`` as the key's current type ``dst``; None when
    the change does not keep the order of values (the statistics are then not used)."""
    if src == dst:
        return value
    numeric = (src in INTEGRAL or isinstance(src, DecimalType),
               dst in INTEGRAL or isinstance(dst, DecimalType))
    if all(numeric):
        return value  # ints and Decimals compare by value
    if src is DATE and dst is TIMESTAMP_NTZ and isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    return None


@dataclass(frozen=True)
class KeyRange:
    """The incoming keys' range on one key column, in the column's current type."""

    field_id: int
    type: Type
    low: Any
    high: Any


def may_hold(f: StatsFile, ranges: Sequence[KeyRange], versions: VersionLookup) -> bool:
    """False only when ``f``'s statistics show that no incoming key can be in it."""
    if not ranges or not f.key_stats:
        return True
    stats = {fid: (lo, hi) for fid, lo, hi in f.key_stats}
    schema = None
    for r in ranges:
        found = stats.get(r.field_id)
        if found is None:
            continue
        if schema is None:
            schema = versions(f.version)[0]
        if not schema.has_id(r.field_id):
            continue
        src = schema.field_by_id(r.field_id).type
        if not prunable(src):
            continue
        lo = convert(_decode(found[0], src), src, r.type)
        hi = convert(_decode(found[1], src), src, r.type)
        if lo is None or hi is None:
            continue
        try:
            if hi < r.low or r.high < lo:
                return False
        except TypeError:  # values that do not compare: no conclusion
            continue
    return True


def no_key_in_two(files: Sequence[StatsFile], key_types: Mapping[int, Type],
                  versions: VersionLookup) -> bool:
    """True only when ``files``' statistics show that no key is in two of them: on some key
    column (field ID -> its current type in ``key_types``) every file has a range and no two
    ranges overlap. Two files can share a key only if their ranges overlap on every key
    column. False whenever that cannot be shown (a file without statistics, a type change
    that drops them, values that do not compare)."""
    if len(files) < 2:
        return True
    if not key_types or any(not f.key_stats for f in files):
        return False
    seen: dict[str, Any] = {}
    for fid, dst in key_types.items():
        ranges = []
        for f in files:
            found = next(((lo, hi) for i, lo, hi in f.key_stats or () if i == fid), None)
            if found is None:
                break
            if f.version not in seen:
                seen[f.version] = versions(f.version)[0]
            schema = seen[f.version]
            if not schema.has_id(fid) or not prunable(src := schema.field_by_id(fid).type):
                break
            lo = convert(_decode(found[0], src), src, dst)
            hi = convert(_decode(found[1], src), src, dst)
            if lo is None or hi is None:
                break
            ranges.append((lo, hi))
        else:
            try:
                ranges.sort()
                if all(a[1] < b[0] for a, b in itertools.pairwise(ranges)):
                    return True
            except TypeError:  # values that do not compare: no conclusion on this column
                continue
    return False


def prune(files: Sequence[F], ranges: Sequence[KeyRange] | None,
          versions: VersionLookup) -> list[F]:
    """The files that may hold one of the incoming keys (``ranges`` None: all of them)."""
    if not ranges:
        return list(files)
    seen: dict[str, Any] = {}

    def once(version: str) -> Any:  # a look-up per schema version, not per file
        if version not in seen:
            seen[version] = versions(version)
        return seen[version]

    return [f for f in files if may_hold(f, ranges, once)]


__all__ = [
    "KeyRange",
    "KeyStats",
    "StatsFile",
    "comparable",
    "convert",
    "footer_stats",
    "key_columns",
    "may_hold",
    "no_key_in_two",
    "prunable",
    "prune",
    "stats_from_json",
    "stats_to_json",
]
