"""Checks of numeric arguments and options: the right kind of value, finite, in range.

Each check takes the value as given (a number, or the text of a notebook option) and returns
it converted, or raises :class:`~evonb.errors.InvalidArgumentError` naming the argument, the
value and the accepted range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evonb.errors import InvalidArgumentError

SPARK_INT_MAX = 2**31 - 1
"""The largest row count Spark takes (a Java ``int``), e.g. for a limit."""


def _accepts(what: str, minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"{what} from {minimum} to {maximum}"
    if minimum is not None:
        return f"{what} of at least {minimum}"
    if maximum is not None:
        return f"{what} of at most {maximum}"
    return what


def _fail(name: str, value: Any, accepts: str, why: str = "") -> InvalidArgumentError:
    shown = value if isinstance(value, str) else repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    reason = f" ({why})" if why else ""
    return InvalidArgumentError(f"{name} must be {accepts}, not {shown}{reason}", name=name,
                                value=value, hint=f"give {name} {accepts}")


def whole_number(name: str, value: Any, *, minimum: int | None = 0,
                 maximum: int | None = None) -> int:
    """``value`` (an int, or text holding one) as an int in ``[minimum, maximum]``."""
    accepts = _accepts("a whole number", minimum, maximum)
    if isinstance(value, bool):
        raise _fail(name, value, accepts)
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            number = int(text)
        except ValueError:
            raise _fail(name, value, accepts) from None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    else:
        raise _fail(name, value, accepts)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _fail(name, value, accepts, "out of range")
    return number


def finite_number(name: str, value: Any, *, minimum: float | None = 0,
                  maximum: float | None = None) -> float:
    """``value`` (a number, or text holding one) as a finite float in ``[minimum, maximum]``."""
    accepts = _accepts("a finite number", minimum, maximum)
    if isinstance(value, bool):
        raise _fail(name, value, accepts)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _fail(name, value, accepts) from None
    elif isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            raise _fail(name, value, accepts, "out of range") from None
    else:
        raise _fail(name, value, accepts)
    if not math.isfinite(number):
        raise _fail(name, value, accepts)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise _fail(name, value, accepts, "out of range")
    return number


def check_dataframe(df: Any, name: str = "df") -> None:
    """Raise :class:`~evonb.errors.InvalidArgumentError` unless ``df`` is a Spark DataFrame,
    saying how to make one of what was given (rows, a pandas DataFrame, ...)."""
    from pyspark.sql import DataFrame

    if isinstance(df, DataFrame):
        return
    kind = f"{type(df).__module__}.{type(df).__qualname__}".removeprefix("builtins.")
    if kind.startswith(("pandas.", "pyarrow.", "polars.")):
        how = "convert it with spark.createDataFrame(data) (evonb.session() is a session)"
    elif isinstance(df, list | tuple):
        how = ("make one with spark.createDataFrame(rows, 'col type, ...') "
               "(evonb.session() is a session)")
    else:
        how = "pass a pyspark.sql.DataFrame, e.g. spark.createDataFrame(rows, schema)"
    raise InvalidArgumentError(f"{name} must be a Spark DataFrame, not {kind}", name=name,
                               value=type(df).__name__, hint=how)


def check_text(value: Any, name: str, example: str) -> str:
    """``value`` if it is a str; :class:`~evonb.errors.InvalidArgumentError` otherwise."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be text (a str), not {type(value).__name__}",
                                   name=name, value=value, hint=f"pass a string, e.g. {example}")
    return value


def column_names(value: Any, name: str, example: str) -> tuple[str, ...]:
    """Column-name argument ``value`` (None: none; a name; a list or tuple of names) as a
    tuple of names; :class:`~evonb.errors.InvalidArgumentError` naming ``name`` otherwise."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    shown = type(value).__name__
    if isinstance(value, list | tuple):
        odd = next(v for v in value if not isinstance(v, str))
        shown = f"a {shown} holding {odd!r}"
    raise InvalidArgumentError(
        f"{name} must be a column name or a list of column names, not {shown}", name=name,
        value=value, hint=f"pass e.g. {example}")


def check_mapping(value: Any, name: str, example: str) -> dict[Any, Any]:
    """``value`` (None: empty) as a dict if it is a mapping;
    :class:`~evonb.errors.InvalidArgumentError` naming ``name`` otherwise."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    raise InvalidArgumentError(f"{name} must be a dict, not {type(value).__name__}", name=name,
                               value=value, hint=f"pass e.g. {example}")


__all__ = ["SPARK_INT_MAX", "check_dataframe", "check_mapping", "check_text", "column_names",
           "finite_number", "whole_number"]
