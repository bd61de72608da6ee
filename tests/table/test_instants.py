"""Instants: 17-digit UTC timestamps, read from date-times and text, issued strictly
increasing."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from evonb.table import instants
from evonb.table.instants import (
    INITIAL_INSTANT,
    InvalidInstantError,
    add_millis,
    format_instant,
    instant_from_datetime,
    is_instant,
    new_instant,
    parse_instant,
)


def test_format_and_parse_round_trip_in_utc_to_the_millisecond():
    dt = datetime(2026, 11, 22, 10, 15, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    text = format_instant(dt)
    assert text == "20261122081500123"
    assert parse_instant(text) == datetime(2026, 11, 22, 8, 15, 0, 123000, tzinfo=UTC)
    assert parse_instant(INITIAL_INSTANT) == datetime.min.replace(tzinfo=UTC)


def test_text_dates_and_datetimes_become_instants():
    assert instant_from_datetime(date(2026, 1, 2)) == "20260102000000000"
    assert instant_from_datetime("2026-11-22T12:00:00+02:00") == "20261122100000000"
    assert instant_from_datetime(" 2026-11-22T10:00:00.250Z ") == "20261122100000250"
    assert instant_from_datetime("20261122100000250") == "20261122100000250"
    with pytest.raises(InvalidInstantError):
        instant_from_datetime("yesterday")
    with pytest.raises(ValueError):  # also a ValueError
        parse_instant("20261340000000000")


def test_only_real_date_times_and_the_initial_instant_are_instants():
    assert is_instant(INITIAL_INSTANT) and is_instant("20260228235959999")
    assert not is_instant("20260230000000000")  # 30 February
    assert not is_instant("2026022823595999") and not is_instant(20260228235959999)


def test_add_millis_crosses_days_and_steps_counters_numerically():
    assert add_millis("20261231235959999", 1) == "20270101000000000"
    assert add_millis(INITIAL_INSTANT, 5) == "00000000000000005"
    assert add_millis("00000000000000005", 2) == "00000000000000007"
    with pytest.raises(InvalidInstantError):
        add_millis(INITIAL_INSTANT, -1)


def test_new_instants_increase_past_a_given_floor(monkeypatch):
    # the floor this test raises is the process's: put it back afterwards
    monkeypatch.setattr(instants, "_last_issued", instants._last_issued)
    future = "29990101000000000"
    first = new_instant(after=future)
    assert first == "29990101000000001"
    assert new_instant() > first  # never below what this process issued
