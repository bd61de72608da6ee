"""Evaluate read-plan expressions (:mod:`evonb.table.read_plan`) over Arrow arrays.

The Arrow twin of :mod:`evonb.spark.columns`: each expression gives the same values as the
Spark SQL it compiles to there. Casts follow Spark's ``try_cast`` for the type changes evonb
allows in metadata (``docs/schema-evolution.md``): a value the new type cannot carry reads as
null; numbers read as text the way Spark prints them (``1.0E7`` for a double, plain digits for
an integer or a decimal).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evonb.errors import EvoError
from evonb.schema.dates import LAST_TIMESTAMP_DAY, PYTHON_DAYS, date_text, epoch_days
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    WIDE_DECIMALS,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
    Type,
)
from evonb.table.read_plan import (
    Cast,
    Coalesce,
    Col,
    DefaultIn,
    Expr,
    ForEach,
    ForEachValue,
    GetField,
    Lit,
    StructOf,
    Var,
)

_SIMPLE: dict[Type, pa.DataType] = {
    BOOLEAN: pa.bool_(),
    TINYINT: pa.int8(),
    SMALLINT: pa.int16(),
    INT: pa.int32(),
    BIGINT: pa.int64(),
    FLOAT: pa.float32(),
    DOUBLE: pa.float64(),
    STRING: pa.string(),
    BINARY: pa.binary(),
    DATE: pa.date32(),
    TIMESTAMP: pa.timestamp("us", tz="UTC"),
    TIMESTAMP_NTZ: pa.timestamp("us"),
}


def arrow_type(t: Type) -> pa.DataType:
    """The plain Arrow type of ``t`` (no field IDs; every member nullable), as reads return
    it: list elements are named ``element``, map entries ``key`` and ``value``."""
    if isinstance(t, StructType):
        return pa.struct([arrow_field(f) for f in t.fields])
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", arrow_type(t.element.type)))
    if isinstance(t, MapType):
        return pa.map_(pa.field("key", arrow_type(t.key.type), nullable=False),
                       pa.field("value", arrow_type(t.value.type)))
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    found = _SIMPLE.get(t)
    if found is None:  # pragma: no cover - every evonb type is listed
        raise EvoError(f"No Arrow type for {t}")
    return found


def arrow_field(f: NestedField) -> pa.Field:
    return pa.field(f.name, arrow_type(f.type))


def arrow_schema(fields: tuple[NestedField, ...] | list[NestedField]) -> pa.Schema:
    """The plain Arrow schema of top-level ``fields``."""
    return pa.schema([arrow_field(f) for f in fields])


def literal(value: Any, t: Type, n: int) -> pa.Array:
    """``n`` copies of a constant of type ``t`` (``None``: nulls)."""
    at = arrow_type(t)
    if value is None or n == 0:
        return pa.nulls(n, at)
    return pa.repeat(pa.scalar(value, at), n)


class Frame:
    """The arrays an expression reads: the scan's physical columns by name, the rows' count
    and the data file's name (for :class:`DefaultIn`)."""

    __slots__ = ("columns", "file_name", "length")

    def __init__(self, columns: Mapping[str, pa.Array], length: int, file_name: str = ""):
        self.columns = columns
        self.length = length
        self.file_name = file_name


def evaluate(expr: Expr, frame: Frame, env: dict[int, pa.Array] | None = None,
             length: int | None = None) -> pa.Array:
    """The values of ``expr`` over ``frame`` (inside a :class:`ForEach` / :class:`ForEachValue`,
    over the elements ``env`` binds by depth, ``length`` of them)."""
    env = env or {}
    n = frame.length if length is None else length
    if isinstance(expr, Col):
        found = frame.columns.get(expr.name)
        if found is None:
            raise EvoError(f"The scan has no column {expr.name!r}")  # pragma: no cover
        return found
    if isinstance(expr, Var):
        return env[expr.depth]
    if isinstance(expr, GetField):
        return _get_field(evaluate(expr.src, frame, env, n), expr.name)
    if isinstance(expr, Lit):
        return literal(expr.value, expr.type, n)
    if isinstance(expr, Cast):
        src = evaluate(expr.src, frame, env, n)
        out = cast(src, expr.type)
        return out if expr.exact is None else exact(src, out, expr.exact)
    if isinstance(expr, StructOf):
        src = evaluate(expr.src, frame, env, n)
        arrays = [evaluate(e, frame, env, n) for _, e in expr.members]
        fields = [pa.field(name, a.type) for (name, _), a in zip(expr.members, arrays,
                                                                 strict=True)]
        mask = _null_mask(src)
        if not fields:  # pragma: no cover - structs always have members
            return pa.nulls(n, pa.struct([]))
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)
    if isinstance(expr, ForEach):
        src = _whole(evaluate(expr.src, frame, env, n))
        values = src.values
        element = evaluate(expr.element, frame, {**env, expr.depth: values}, len(values))
        out_type = pa.list_(pa.field("element", element.type))
        return pa.ListArray.from_arrays(src.offsets, element, type=out_type,
                                        mask=_null_mask(src))
    if isinstance(expr, ForEachValue):
        src = _whole(evaluate(expr.src, frame, env, n))
        items = src.items
        value = evaluate(expr.value, frame, {**env, expr.depth: items}, len(items))
        out_type = pa.map_(src.type.key_field, pa.field("value", value.type))
        return pa.MapArray.from_arrays(src.offsets, src.keys, value, type=out_type,
                                       mask=_null_mask(src))
    if isinstance(expr, Coalesce):
        items = [evaluate(e, frame, env, n) for e in expr.items]
        return items[0] if len(items) == 1 else _coalesce(items)
    if isinstance(expr, DefaultIn):
        if frame.file_name in expr.files:
            return evaluate(expr.default, frame, env, n)
        return evaluate(expr.value, frame, env, n)
    raise TypeError(f"unknown expression {expr!r}")  # pragma: no cover


def _whole(arr: pa.Array | pa.ChunkedArray) -> Any:
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _null_mask(arr: pa.Array) -> pa.Array | None:
    """True where ``arr`` is null (None when it has no nulls)."""
    arr = _whole(arr)
    if arr.null_count == 0:
        return None
    return pc.is_null(arr)


def _get_field(arr: pa.Array, name: str) -> pa.Array:
    """A struct member, null where the struct is null (Spark's field access)."""
    arr = _whole(arr)
    index = arr.type.get_field_index(name)
    if index < 0:
        raise EvoError(f"The scan has no struct member {name!r}")  # pragma: no cover
    return arr.flatten()[index]


def _coalesce(items: list[pa.Array]) -> pa.Array:
    """The first non-null of ``items`` per row (nested types too)."""
    out = _whole(items[0])
    for item in items[1:]:
        if out.null_count == 0:
            break
        out = pc.if_else(pc.is_valid(out), out, _whole(item))
    return out


# ------------------------------------------------------------------------------------ casts
def cast(arr: pa.Array, target: Type) -> pa.Array:
    """``try_cast(arr AS target)`` with Spark's results for evonb's allowed type changes."""
    arr = _whole(arr)
    at = arrow_type(target)
    src = arr.type
    if src.equals(at):
        return arr
    if pa.types.is_integer(src) or pa.types.is_boolean(src):
        if pa.types.is_integer(at) and at.bit_width < src.bit_width:
            return _per_value(arr, at, lambda v: v if _fits(v, at) else None)
        if pa.types.is_integer(at) or pa.types.is_floating(at) or pa.types.is_string(at):
            return arr.cast(at, safe=False)
        if pa.types.is_decimal(at):
            return _per_value(arr, at, lambda v: _to_decimal(Decimal(v), target))
    if pa.types.is_floating(src):
        if pa.types.is_floating(at):
            return arr.cast(at, safe=False)
        if pa.types.is_integer(at):
            return _per_value(arr, at, lambda v: _integral(math.trunc(v), at)
                              if math.isfinite(v) else None)
        if pa.types.is_string(at):
            fmt = _java_float if pa.types.is_float32(src) else _java_double
            return _per_value(arr, at, fmt)
        if pa.types.is_decimal(at):
            return _per_value(arr, at, lambda v: None if not math.isfinite(v)
                              else _to_decimal(Decimal(repr(float(v))), target))
    if pa.types.is_decimal(src):
        if pa.types.is_string(at):
            return _per_value(arr, at, _decimal_text)
        if pa.types.is_decimal(at):
            return _per_value(arr, at, lambda v: _to_decimal(v, target))
        if pa.types.is_integer(at):
            return _per_value(arr, at, lambda v: _integral(int(v), at))
        if pa.types.is_floating(at):
            return _per_value(arr, at, float)
    if pa.types.is_string(src) or pa.types.is_large_string(src):
        if pa.types.is_integer(at):
            return _per_value(arr, at, lambda v: _parse_integral(v, at))
        if pa.types.is_floating(at):
            return _per_value(arr, at, _parse_float)
        if pa.types.is_date(at):
            return _per_value(arr, at, _parse_date)
        if pa.types.is_decimal(at):
            return _per_value(arr, at, lambda v: _parse_decimal(v, target))
    if pa.types.is_date(src) and pa.types.is_string(at):
        return _date_strings(arr)
    if pa.types.is_date(src) and pa.types.is_timestamp(at):
        return _date_midnights(arr, at)
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(at):
        return arr.cast(at)
    if pa.types.is_timestamp(src) and src.tz is None and pa.types.is_date(at):
        return arr.cast(at)  # the day each falls in (Arrow floors, as Spark does)
    raise EvoError(f"The Arrow reader cannot read {src} data as {target}",
                   hint="read the table with Table.read() (Spark)")


def exact(src: pa.Array, out: pa.Array, source: Type) -> pa.Array:
    """``out`` (``src`` cast to a narrower number type) with null where the value did not
    survive: an overflow to infinity for a float target, else a value that does not cast
    back to itself (the rule of :class:`~evonb.table.read_plan.Cast`'s ``exact``)."""
    src = _whole(src)
    if pa.types.is_floating(out.type):
        lost = pc.and_(pc.is_inf(out), pc.invert(pc.is_inf(src.cast(pa.float64()))))
    else:
        lost = pc.invert(pc.equal(cast(out, source), src))
    return pc.if_else(pc.fill_null(lost, False), pa.scalar(None, out.type), out)


def _per_value(arr: pa.Array, at: pa.DataType, fn: Callable[[Any], Any]) -> pa.Array:
    return pa.array([None if v is None else fn(v) for v in arr.to_pylist()], type=at)


def _fits(v: int, at: pa.DataType) -> bool:
    bound = 1 << (at.bit_width - 1)
    return -bound <= v < bound


def _integral(v: int, at: pa.DataType) -> int | None:
    return v if _fits(v, at) else None


# What Spark trims from text before a cast (measured): for integers and dates the ASCII
# whitespace and control characters (up to U+0020, and U+007F); for doubles and decimals those
# up to U+0020 only (Java's ``String.trim``); never U+00A0 or U+3000. Integers, doubles and
# dates read ASCII digits only; decimals (Java's ``BigDecimal``) any decimal digit.
_JAVA_TRIM = "".join(map(chr, range(0x21)))
_SPARK_TRIM = _JAVA_TRIM + "\x7f"
_INTEGRAL_TEXT = re.compile(r"[+-]?\d+", re.ASCII)
_FLOAT_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?", re.ASCII)
_FLOAT_WORDS = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf,
                "-infinity": -math.inf, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}


def _parse_integral(text: str, at: pa.DataType) -> int | None:
    """An integer from text as Spark's ``try_cast`` reads it (surrounding spaces allowed)."""
    s = text.strip(_SPARK_TRIM)
    return _integral(int(s), at) if _INTEGRAL_TEXT.fullmatch(s) else None


def _parse_float(text: str) -> float | None:
    s = text.strip(_JAVA_TRIM)
    if _FLOAT_TEXT.fullmatch(s):
        return float(s.rstrip("dDfF"))
    return _FLOAT_WORDS.get(s.lower())


def _to_decimal(value: Decimal, target: Type) -> Decimal | None:
    """``value`` rounded half up to ``target``'s scale; None when it does not fit."""
    assert isinstance(target, DecimalType)
    try:
        q = value.quantize(Decimal(1).scaleb(-target.scale), rounding=ROUND_HALF_UP,
                           context=WIDE_DECIMALS)
    except InvalidOperation:  # more digits than any decimal holds
        return None
    digits = len(q.as_tuple().digits) if q != 0 else 1
    integer_digits = max(digits - target.scale, 0) if q != 0 else 0
    return q if integer_digits <= target.precision - target.scale else None


_DECIMAL_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _parse_decimal(text: str, target: Type) -> Decimal | None:
    s = text.strip(_JAVA_TRIM)
    if not _DECIMAL_TEXT.fullmatch(s):
        return None
    return _to_decimal(Decimal(s), target)


def _decimal_text(value: Decimal) -> str:
    """A decimal as Spark prints it: plain digits, no exponent, every digit of the scale."""
    return format(value, "f")


_DATE_TEXT = re.compile(r"([+-]?)(\d{4,7})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?",
                        re.S | re.ASCII)


def _parse_date(text: str) -> int | None:
    """The day number of a date in text as Spark's cast reads it (``yyyy``, ``yyyy-[m]m``,
    ``yyyy-[m]m-[d]d`` with an optional time part; a year of 4 to 7 digits with an optional
    sign); None when it is not one or falls outside a Spark date."""
    m = _DATE_TEXT.fullmatch(text.strip(_SPARK_TRIM))
    if m is None:
        return None
    sign, year, month, day = m.groups()
    return epoch_days(int(year) * (-1 if sign == "-" else 1), int(month or 1), int(day or 1))


def _date_strings(arr: pa.Array) -> pa.Array:
    """Dates as Spark prints them: Arrow's cast where every one is of years 1 to 9999 (which
    it prints as Spark does), else :func:`date_text`."""
    days = arr.cast(pa.int32())
    low, high = pc.min_max(days).values()
    if low.as_py() is None or (low.as_py() >= PYTHON_DAYS[0]
                               and high.as_py() <= PYTHON_DAYS[1]):
        return arr.cast(pa.string())
    return _per_value(days, pa.string(), date_text)


def _date_midnights(arr: pa.Array, at: pa.DataType) -> pa.Array:
    """Dates as timestamps of their midnight (UTC); null for a date whose midnight no
    timestamp in microseconds holds (Spark's ``try_cast``), where Arrow's cast would fail."""
    days = arr.cast(pa.int32())
    fits = pc.less_equal(pc.abs(days.cast(pa.int64())), LAST_TIMESTAMP_DAY)
    kept = pc.if_else(fits, arr, pa.scalar(None, arr.type))
    return kept.cast(at)


def _java_digits(text: str) -> str:
    """Shortest round-trip digits (``text``: Python or numpy repr) in Java's
    ``Double.toString`` form."""
    value = Decimal(text)
    if value.is_zero():
        return "-0.0" if value.is_signed() else "0.0"
    a = abs(value)
    if Decimal("0.001") <= a < Decimal("10000000"):
        plain = format(value, "f")
        return plain if "." in plain else plain + ".0"
    sign, digits, exponent = value.as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp = exponent + len(digits) - 1
    mantissa = ds[0] + "." + (ds[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{exp}"


def _java_double(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return _java_digits(repr(float(v)))


def _java_float(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return _java_digits(np.format_float_scientific(np.float32(v), unique=True))


__all__ = ["Frame", "arrow_field", "arrow_schema", "arrow_type", "cast", "evaluate", "literal"]
