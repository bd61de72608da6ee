"""Copies of a table for differential tests: the same state, other properties."""

from __future__ import annotations

import shutil
from collections.abc import Mapping

import evonb


def copy_with(t, where, properties: Mapping[str, str]):
    """A copy of ``t``'s folder at ``where`` (an earlier one removed), opened, with
    ``properties`` set."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(t.root, where)
    copy = evonb.open_table(where)
    copy.set_properties(dict(properties))
    return copy


def write_both(t, copy_at, off: Mapping[str, str], df, mode: str, *, driver: bool = True):
    """Write ``df`` into ``t`` and into a fresh copy of it at ``copy_at`` with ``off`` set
    (the driver path turned off); assert the driver took ``t``'s write when ``driver`` and
    never the copy's. The two tables and their last commits."""
    other = copy_with(t, copy_at, off)
    t.write(df, mode)
    other.write(df, mode)
    mine, theirs = t.timeline.last_completed(), other.timeline.last_completed()
    lookup = mine.metadata.get("key_lookup") or {}
    assert bool(lookup.get("driver")) == driver, lookup
    assert not (theirs.metadata.get("key_lookup") or {}).get("driver")
    return other, mine, theirs
