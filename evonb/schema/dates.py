"""Dates as Spark holds, reads and prints them, over Spark's whole range.

Spark keeps a date as its day number since 1970-01-01 (an int) in the proleptic Gregorian
calendar, so its years run from -5877641 to +5881580, far past the years 1 to 9999 that
Python's :class:`datetime.date` (and Arrow's text cast) can hold. The Gregorian calendar
repeats every 400 years, so a date in any year maps onto the same day of a year in 2000-2399,
which Python's dates hold, and back.
"""

from __future__ import annotations

from datetime import date, timedelta

CYCLE_DAYS = 146_097
"""The days in 400 Gregorian years, after which the calendar repeats."""

_ANCHOR = date(2000, 1, 1)
_ANCHOR_DAYS = (_ANCHOR - date(1970, 1, 1)).days
_INT32 = 1 << 31

PYTHON_DAYS = ((date.min - date(1970, 1, 1)).days, (date.max - date(1970, 1, 1)).days)
"""The first and last day numbers Python's dates hold (years 1 to 9999)."""

MICROS_PER_DAY = 86_400_000_000
LAST_TIMESTAMP_DAY = ((1 << 63) - 1) // MICROS_PER_DAY
"""The last day (and, negated, the first) whose midnight a timestamp in microseconds holds:
Spark's ``try_cast`` of a date beyond it to a timestamp is null."""


def epoch_days(year: int, month: int, day: int) -> int | None:
    """The day number of a date of the proleptic Gregorian calendar; None when it is not a
    date (a 13th month, a 30th of February) or falls outside a Spark date (an int)."""
    cycles, year_in_cycle = divmod(year - _ANCHOR.year, 400)
    try:
        same_day = date(_ANCHOR.year + year_in_cycle, month, day)
    except ValueError:
        return None
    days = (same_day - _ANCHOR).days + _ANCHOR_DAYS + cycles * CYCLE_DAYS
    return days if -_INT32 <= days < _INT32 else None


def civil(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a day number."""
    cycles, rest = divmod(days - _ANCHOR_DAYS, CYCLE_DAYS)
    same_day = _ANCHOR + timedelta(days=rest)
    return same_day.year + 400 * cycles, same_day.month, same_day.day


def date_text(days: int) -> str:
    """A day number as Spark prints the date: ``yyyy-MM-dd``, with a ``+`` before a year past
    9999 and a ``-`` before one before year 0 (``+164111-01-01``, ``-0027-01-01``)."""
    year, month, day = civil(days)
    if year > 9999:
        shown = f"+{year}"
    elif year < 0:
        shown = f"-{-year:04d}"
    else:
        shown = f"{year:04d}"
    return f"{shown}-{month:02d}-{day:02d}"


def micros_text(micros: int) -> str:
    """Microseconds since 1970-01-01 (an instant's in UTC, a wall-clock time's as it is) as
    Spark prints the timestamp, over its whole range: ``2020-01-01 05:00:00.12``, the fraction
    of a second only where there is one and without trailing zeros, a year past 9999 as
    :func:`date_text` spells it (``+294247-01-10 04:00:54``)."""
    days, rest = divmod(micros, MICROS_PER_DAY)
    seconds, fraction = divmod(rest, 1_000_000)
    text = (f"{date_text(days)} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:"
            f"{seconds % 60:02d}")
    if fraction:
        text += "." + f"{fraction:06d}".rstrip("0")
    return text


__all__ = ["CYCLE_DAYS", "LAST_TIMESTAMP_DAY", "MICROS_PER_DAY", "PYTHON_DAYS", "civil",
           "date_text", "epoch_days", "micros_text"]
