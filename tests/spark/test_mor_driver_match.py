"""The driver path's key matcher (:class:`evonb.spark.mor_driver.KeyMatcher`): its three ways of
finding the incoming keys in a stored file (flags over a dense key range, a sorted search, an
Arrow hash join) give the pairs a plain Python lookup gives, for keys drawn at random: extreme
64-bit values, negative keys, keys stored twice, files in any order, dates and timestamps."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.spark.mor_driver import KeyMatcher

EXTREMES = [-2**63, -2**63 + 1, -1, 0, 1, 2**62, 2**63 - 2, 2**63 - 1]
keys = st.one_of(st.integers(-50, 50), st.integers(-2**63, 2**63 - 1), st.sampled_from(EXTREMES))


def _expected(stored: list, incoming: list) -> list[tuple[int, int]]:
    at = {k: i for i, k in enumerate(incoming)}
    return [(pos, at[k]) for pos, k in enumerate(stored) if k in at]


def _pairs(found: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    positions, incoming = found
    return sorted(zip(positions.tolist(), incoming.tolist(), strict=True))


def _every_way(stored: pa.Array, incoming: pa.Array) -> dict[str, list[tuple[int, int]]]:
    """The pairs each way of the matcher finds (the ways it would not take are forced)."""
    out = {}
    matcher = KeyMatcher(pa.table({"k": incoming}), ["k"])
    table = pa.table({"k": stored})
    if matcher.mask is not None:
        out["flags"] = _pairs(matcher.match(table))
    if matcher.sorted is not None:
        matcher.mask = None
        out["sorted"] = _pairs(matcher.match(table))
        matcher.sorted = None
    out["join"] = _pairs(matcher.match(table))
    return out


@settings(max_examples=300, deadline=None)
@given(stored=st.lists(keys, max_size=60), incoming=st.lists(keys, max_size=30, unique=True))
def test_every_way_finds_the_stored_rows_of_the_incoming_keys(stored, incoming) -> None:
    found = _every_way(pa.array(stored, pa.int64()), pa.array(incoming, pa.int64()))
    expected = _expected(stored, incoming)
    assert found == {way: expected for way in found}


@settings(max_examples=100, deadline=None)
@given(low=st.integers(-2**40, 2**40), picks=st.lists(st.integers(0, 999), max_size=200),
       wanted=st.lists(st.integers(0, 999), min_size=1, max_size=100, unique=True),
       shuffle=st.randoms())
def test_dense_keys_take_the_flags(low, picks, wanted, shuffle) -> None:
    """Incoming keys packed in a range (auto-increment ids) are matched with flags, against
    stored files in any order and with keys stored twice."""
    stored = [low + p for p in picks]
    shuffle.shuffle(stored)
    incoming = [low + w for w in wanted]
    found = _every_way(pa.array(stored, pa.int64()), pa.array(incoming, pa.int64()))
    if max(wanted) - min(wanted) + 1 <= 256 * len(wanted):
        assert "flags" in found
    assert found == {way: _expected(stored, incoming) for way in found}


def test_dates_timestamps_and_narrow_integers() -> None:
    days = [dt.date(2026, 1, d) for d in (5, 1, 9, 5, 30)]
    found = _every_way(pa.array(days, pa.date32()),
                       pa.array([dt.date(2026, 1, 5), dt.date(2026, 1, 30)], pa.date32()))
    assert found == {"flags": [(0, 0), (3, 0), (4, 1)], "sorted": [(0, 0), (3, 0), (4, 1)],
                     "join": [(0, 0), (3, 0), (4, 1)]}
    instants = pa.array([10, 2**40, -5], pa.int64()).cast(pa.timestamp("us", "UTC"))
    found = _every_way(instants, pa.array([-5, 2**40], pa.int64()).cast(
        pa.timestamp("us", "UTC")))
    assert "flags" not in found  # 2**40 apart: too sparse for flags
    assert found == {"sorted": [(1, 1), (2, 0)], "join": [(1, 1), (2, 0)]}
    small = _every_way(pa.array([3, -2, 7], pa.int8()), pa.array([7, 3], pa.int8()))
    assert small == {"flags": [(0, 1), (2, 0)], "sorted": [(0, 1), (2, 0)],
                     "join": [(0, 1), (2, 0)]}


def test_nothing_comes_in_or_nothing_is_stored() -> None:
    assert _every_way(pa.array([1, 2], pa.int64()), pa.array([], pa.int64())) == {
        "sorted": [], "join": []}
    assert _every_way(pa.array([], pa.int64()), pa.array([4], pa.int64())) == {
        "flags": [], "sorted": [], "join": []}
