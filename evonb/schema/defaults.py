"""Default values: converting them to a column's type, and writing them as JSON or SQL literals.

A default is held as a plain Python value of the column's type: ``bool``, ``int``, ``float``,
``decimal.Decimal``, ``str``, ``bytes``, ``datetime.date`` or ``datetime.datetime``.
Only primitive columns take defaults.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from typing import Any

from evonb.errors import InvalidDefaultError
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
    DecimalType,
    Type,
)

INT_RANGES = {
    TINYINT: (-(2**7), 2**7 - 1),
    SMALLINT: (-(2**15), 2**15 - 1),
    INT: (-(2**31), 2**31 - 1),
    BIGINT: (-(2**63), 2**63 - 1),
}
FLOAT_MAX = 3.4028234663852886e38


def coerce_default(value: Any, t: Type, *, path: str | None = None) -> Any:
    """``value`` converted to type ``t``, or :class:`InvalidDefaultError` naming the column."""
    if value is None:
        return None
    try:
        return _coerce(value, t)
    except (ValueError, TypeError, ArithmeticError) as exc:
        where = f" for column {path!r}" if path else ""
        # a number literal of the DDL text reads as a Decimal: shown as written (1.5)
        shown = str(value) if isinstance(value, decimal.Decimal) else repr(value)
        raise InvalidDefaultError(
            f"Default {shown} does not convert to {t}{where}: {exc}",
            path=path,
            new=value,
            hint=("leave DEFAULT out; a struct's members can take defaults" if t.is_nested
                  else f"give a literal of type {t}"),
        ) from None


def _coerce(value: Any, t: Type) -> Any:
    if t in INT_RANGES:
        if isinstance(value, bool):
            raise TypeError("a boolean is not a number")
        if isinstance(value, str):
            value = int(value.strip())
        elif isinstance(value, float | decimal.Decimal):
            if value != int(value):
                raise ValueError("not a whole number")
            value = int(value)
        elif not isinstance(value, int):
            raise TypeError(f"expected a whole number, got {type(value).__name__}")
        lo, hi = INT_RANGES[t]
        if not lo <= value <= hi:
            raise ValueError(f"out of range {lo}..{hi}")
        return value
    if t in (FLOAT, DOUBLE):
        if isinstance(value, bool):
            raise TypeError("a boolean is not a number")
        if not isinstance(value, int | float | decimal.Decimal | str):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        f = float(value)
        if t is FLOAT and math.isfinite(f) and abs(f) > FLOAT_MAX:
            raise ValueError("out of range for float")
        return f
    if isinstance(t, DecimalType):
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal | str):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        d = decimal.Decimal(str(value).strip()) if not isinstance(value, decimal.Decimal) else value
        if not d.is_finite():
            raise ValueError("not a finite number")
        q = d.quantize(decimal.Decimal(1).scaleb(-t.scale), context=WIDE_DECIMALS)
        if q != d:
            raise ValueError(f"more than {t.scale} digits after the point")
        digits = len(q.as_tuple().digits) if q != 0 else 1
        integer_digits = max(digits - t.scale, 0) if q != 0 else 0
        if integer_digits > t.precision - t.scale:
            raise ValueError(f"more than {t.precision - t.scale} digits before the point")
        return q
    if t is BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise TypeError(f"expected true or false, got {value!r}")
    if t is STRING:
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float | decimal.Decimal):
            return str(value)
        if isinstance(value, dt.date):
            return value.isoformat()
        raise TypeError(f"expected a string, got {type(value).__name__}")
    if t is BINARY:
        if isinstance(value, bytes | bytearray):
            return bytes(value)
        if isinstance(value, str):
            return value.encode()
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    if t is DATE:
        if isinstance(value, dt.datetime):
            raise TypeError("a timestamp is not a date")
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            return dt.date.fromisoformat(value.strip())
        raise TypeError(f"expected a date, got {type(value).__name__}")
    if t in (TIMESTAMP, TIMESTAMP_NTZ):
        if isinstance(value, dt.datetime):
            ts = value
        elif isinstance(value, dt.date):
            ts = dt.datetime(value.year, value.month, value.day)
        elif isinstance(value, str):
            ts = dt.datetime.fromisoformat(value.strip())
        else:
            raise TypeError(f"expected a timestamp, got {type(value).__name__}")
        if t is TIMESTAMP_NTZ and ts.tzinfo is not None:
            ts = ts.replace(tzinfo=None)
        return ts
    raise TypeError(f"columns of type {t} take no default")


def default_to_json(value: Any, t: Type) -> Any:
    """A JSON-safe form of a default of type ``t`` (see ``docs/format.md``)."""
    if value is None:
        return None
    if isinstance(t, DecimalType):
        return str(value)
    if t is BINARY:
        return base64.b64encode(value).decode("ascii")
    if t in (DATE, TIMESTAMP, TIMESTAMP_NTZ):
        return value.isoformat()
    if t in (FLOAT, DOUBLE) and not math.isfinite(value):
        return str(value)
    return value


def default_from_json(value: Any, t: Type) -> Any:
    """Inverse of :func:`default_to_json`."""
    if value is None:
        return None
    if t is BINARY:
        return base64.b64decode(value)
    return _coerce(value, t)


def sql_literal(value: Any, t: Type) -> str:
    """A Spark SQL literal for ``value`` of type ``t`` (``EXISTS_DEFAULT``, ``CURRENT_DEFAULT``)."""
    if value is None:
        return "NULL"
    if t is BOOLEAN:
        return "true" if value else "false"
    if t in INT_RANGES:
        suffix = {TINYINT: "Y", SMALLINT: "S", INT: "", BIGINT: "L"}[t]
        return f"{value}{suffix}"
    if t in (FLOAT, DOUBLE):
        if not math.isfinite(value):
            text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return f"CAST('{text}' AS {t.simple_string().upper()})"
        return f"CAST({value!r} AS {t.simple_string().upper()})"
    if isinstance(t, DecimalType):
        return f"CAST({value:f} AS DECIMAL({t.precision},{t.scale}))"
    if t is STRING:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if t is BINARY:
        return "X'" + value.hex().upper() + "'"
    if t is DATE:
        return f"DATE '{value.isoformat()}'"
    if t is TIMESTAMP:
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if t is TIMESTAMP_NTZ:
        return f"TIMESTAMP_NTZ '{value.isoformat(sep=' ')}'"
    raise TypeError(f"columns of type {t} take no default")
