"""What a clean left readable: time travel to a cleaned commit is refused, naming the earliest
commit still readable."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evonb.errors import CommitNotFoundError
from evonb.table.retention import CommitCleanedError, check_readable, earliest_readable
from evonb.table.timeline import CommitRecord

V = "00000000000000000"


def _table(*records: CommitRecord) -> SimpleNamespace:
    return SimpleNamespace(timeline=SimpleNamespace(completed=lambda: list(records)))


def _commit(instant: str, completion: str | None = None) -> CommitRecord:
    meta = {"schema_version": V, **({"completion_time": completion} if completion else {})}
    return CommitRecord(instant, "commit", meta)


def _clean(instant: str, first: str, **meta) -> CommitRecord:
    return CommitRecord(instant, "clean", {"operation": "clean", "schema_version": V,
                                           "earliest_retained": first, **meta})


def test_without_a_clean_everything_is_readable():
    table = _table(_commit("20260101000000001"))
    assert earliest_readable(table) is None
    check_readable(table, "20260101000000001")
    check_readable(table, None)


def test_commits_before_the_retained_one_are_refused_by_completion_order():
    a = _commit("20260101000000001")
    # b started before c but completed after it: the clean's window starts at c's completion
    b = _commit("20260101000000002", completion="20260101000000009")
    c = _commit("20260101000000003", completion="20260101000000004")
    clean = _clean("20260101000000010", "20260101000000003")
    table = _table(a, c, b, clean)
    assert earliest_readable(table) == ("20260101000000003", "20260101000000010")
    check_readable(table, b.instant)  # completed after the window's start: still readable
    check_readable(table, c.instant)
    with pytest.raises(CommitCleanedError) as err:
        check_readable(table, a.instant)
    assert isinstance(err.value, CommitNotFoundError)
    assert (err.value.earliest_retained, err.value.clean_instant, err.value.nearest) == (
        "20260101000000003", "20260101000000010", ["20260101000000003"])
    assert "time travel to 20260101000000003 or later" in str(err.value.hint)


def test_the_clean_with_the_latest_window_wins():
    a = _commit("20260101000000001")
    b = _commit("20260101000000002")
    c = _commit("20260101000000003")
    later = _clean("20260101000000010", "20260101000000003")
    older = _clean("20260101000000011", "20260101000000002")  # recorded a smaller window
    table = _table(a, b, c, later, older)
    assert earliest_readable(table) == ("20260101000000003", "20260101000000010")
    with pytest.raises(CommitCleanedError):
        check_readable(table, b.instant)
