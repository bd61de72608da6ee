"""Instants: commit timestamps as 17-digit UTC strings ``yyyyMMddHHmmssSSS``.

Instants sort as strings in time order. :data:`INITIAL_INSTANT` (all zeros) comes before every
real instant and names "before the first commit" (e.g. the first schema version).
"""

from __future__ import annotations

import re
import threading
from datetime import UTC, date, datetime, timedelta

from evonb.errors import EvoError

INITIAL_INSTANT = "00000000000000000"
INSTANT_LENGTH = 17

_DIGITS = re.compile(r"[0-9]{17}")
_MIN = datetime.min.replace(tzinfo=UTC)

_lock = threading.Lock()
_last_issued: str = INITIAL_INSTANT


class InvalidInstantError(EvoError, ValueError):
    """Text that is neither an instant nor a date-time evonb can read."""


def format_instant(dt: datetime) -> str:
    """``dt`` as an instant (aware datetimes are converted to UTC; naive ones are taken as UTC).

    Sub-millisecond precision is truncated.
    """
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC)
    return (
        f"{dt.year:04d}{dt.month:02d}{dt.day:02d}{dt.hour:02d}{dt.minute:02d}{dt.second:02d}"
        f"{dt.microsecond // 1000:03d}"
    )


def is_instant(text: object) -> bool:
    """Whether ``text`` is a valid instant: 17 ASCII digits forming a real UTC date-time, or
    :data:`INITIAL_INSTANT`."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return False
    if text == INITIAL_INSTANT:
        return True
    try:
        _parse(text)
    except ValueError:
        return False
    return True


def _parse(text: str) -> datetime:
    dt = datetime.strptime(text[:14], "%Y%m%d%H%M%S")
    return dt.replace(microsecond=int(text[14:]) * 1000, tzinfo=UTC)


def parse_instant(text: str) -> datetime:
    """The UTC-aware datetime of an instant (:data:`INITIAL_INSTANT` -> ``datetime.min``)."""
    if isinstance(text, str) and text == INITIAL_INSTANT:
        return _MIN
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        raise InvalidInstantError(
            f"Not an instant: {text!r}", hint="instants are 17 digits: yyyyMMddHHmmssSSS (UTC)"
        )
    try:
        return _parse(text)
    except ValueError as exc:
        raise InvalidInstantError(f"Not an instant: {text!r} ({exc})") from None


def instant_from_datetime(value: datetime | date | str) -> str:
    """An instant from a datetime, a date (its midnight, UTC) or text.

    Text may be an instant already, or ISO 8601: ``"2026-11-22"``, ``"2026-11-22 10:00:00"``,
    ``"2026-11-22T10:00:00.250Z"``, ``"2026-11-22T12:00:00+02:00"``. Times without a zone are
    UTC. Anything else raises :class:`InvalidInstantError` (also a ``ValueError``).
    """
    if isinstance(value, datetime):
        return format_instant(value)
    if isinstance(value, date):
        return format_instant(datetime(value.year, value.month, value.day, tzinfo=UTC))
    if not isinstance(value, str):
        raise InvalidInstantError(f"Cannot read a point in time from {value!r}")
    text = value.strip()
    if is_instant(text):
        return text
    iso = text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise InvalidInstantError(
            f"Cannot read a point in time from {value!r}",
            hint='use an instant (yyyyMMddHHmmssSSS) or ISO text like "2026-11-22 10:00:00"',
        ) from None
    return format_instant(dt)


def add_millis(instant: str, millis: int) -> str:
    """``instant`` moved by ``millis`` milliseconds."""
    if instant == INITIAL_INSTANT:
        if millis < 0:
            raise InvalidInstantError("Cannot move before the initial instant")
        return f"{millis:017d}"
    if _DIGITS.fullmatch(instant) and not is_instant(instant):
        # Not a real date-time (e.g. a small counter): step numerically.
        return f"{int(instant) + millis:017d}"
    return format_instant(parse_instant(instant) + timedelta(milliseconds=millis))


def new_instant(after: str | None = None) -> str:
    """The current UTC time as an instant, strictly greater than ``after`` and than every instant
    this process issued before (bumped by 1 ms when the clock has not moved on or went back)."""
    global _last_issued
    now = format_instant(datetime.now(UTC))
    with _lock:
        floor = _last_issued if after is None or after < _last_issued else after
        candidate = now if now > floor else add_millis(floor, 1)
        _last_issued = candidate
    return candidate


__all__ = [
    "INITIAL_INSTANT",
    "INSTANT_LENGTH",
    "InvalidInstantError",
    "add_millis",
    "format_instant",
    "instant_from_datetime",
    "is_instant",
    "new_instant",
    "parse_instant",
]
