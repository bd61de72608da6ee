"""The read-ahead iterator: the producer's items in order, its errors where they happened, at
most ``depth`` items ahead, and no thread left running however the consumer stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.table.read_ahead import read_ahead


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers()), st.integers(min_value=-1, max_value=5))
def test_items_come_in_order(items: list[int], depth: int) -> None:
    assert list(read_ahead(iter(items), depth=depth, name="ra-order")) == items
    assert not _threads("ra-order")


def test_the_producer_runs_at_most_depth_items_ahead() -> None:
    made: list[int] = []

    def numbers() -> Iterator[int]:
        for i in range(100):
            made.append(i)
            yield i

    ahead = read_ahead(numbers(), depth=3, name="ra-depth")
    assert next(ahead) == 0
    time.sleep(0.3)  # time for the producer to fill the queue
    # 0 taken, 3 in the queue, 1 made and waiting for room
    assert len(made) == 5, made
    ahead.close()
    assert len(made) == 5 and not _threads("ra-depth")


def test_an_error_of_the_producer_is_raised_where_it_happened() -> None:
    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("file 3 is corrupt")

    got: list[int] = []
    with pytest.raises(ValueError, match="file 3 is corrupt"):
        for item in read_ahead(failing(), depth=2, name="ra-error"):
            got.append(item)
    assert got == [1, 2]
    assert not _threads("ra-error")


def test_a_consumer_that_stops_early_stops_and_closes_the_producer() -> None:
    closed = threading.Event()
    made: list[int] = []

    def endless() -> Iterator[int]:
        try:
            i = 0
            while True:
                made.append(i)
                yield i
                i += 1
        finally:
            closed.set()

    with pytest.raises(RuntimeError, match="the writer failed"):
        for item in read_ahead(endless(), depth=2, name="ra-stop"):
            if item == 3:
                raise RuntimeError("the writer failed")
    assert closed.is_set()  # the generator's finally ran
    assert not _threads("ra-stop")
    assert len(made) <= 4 + 2 + 1  # taken, queued, one waiting for room


def test_no_read_ahead_below_depth_one_runs_in_the_callers_thread() -> None:
    seen: list[str] = []

    def where() -> Iterator[int]:
        seen.append(threading.current_thread().name)
        yield 1

    assert list(read_ahead(where(), depth=0)) == [1]
    assert seen == [threading.current_thread().name]
    seen.clear()
    assert list(read_ahead(where(), depth=1, name="ra-thread")) == [1]
    assert seen == ["ra-thread"]
