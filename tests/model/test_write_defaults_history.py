"""A fixed history of write-default changes through the model's machine: ``SET DEFAULT`` (a
value, ``NULL``, hostile text) and ``DROP DEFAULT`` between ``INSERT`` and ``MERGE``
statements and DataFrame inserts that leave columns out, then type changes and a revert. The
random histories draw :meth:`~tests.model.machine.TableMachine.set_default` too, but seldom
before an insert that leaves the column out; this one always does, and every step and every
commit at the end is checked against the model (both readers)."""

from __future__ import annotations

import pytest

from tests.model import machine


@pytest.mark.spark
def test_write_defaults_change_apart_from_read_defaults(state) -> None:
    """Rows stored before a column was added read its read default (3) after every
    ``SET DEFAULT``; rows an ``INSERT`` or ``MERGE`` stores without it hold the write default
    of that moment, as do rows of a DataFrame without it; a revert brings back the defaults
    of the schema it restores."""
    state.create(flavour=1)  # merge-on-read, Avro blocks: rewrites and log blocks both seen
    state.insert(vseed=3)
    state.add_column(where=0, type_pick=0, pos=0, default=3, name=0)  # an int, DEFAULT 3
    state.sql_insert(pick=1, vseed=5)
    before = machine.DEFAULTS.copy()
    # the added column: 7, then NULL, then 9, then dropped; ``a``: 12
    for pick, value in [(0, 7), (1, 12), (2, 40), (4, 9), (6, 5)]:
        state.set_default(pick=pick, value=value)
        state.sql_insert(pick=3 * pick, vseed=pick + 40)  # leaves both columns out
        state.insert_leaving_out(pick=pick, vseed=pick + 80)  # a DataFrame without it
    state.sql_merge(pick=1, vseed=61)  # inserts leave the added column out
    made = machine.DEFAULTS - before
    assert made == {"SET DEFAULT value": 3, "SET DEFAULT NULL": 1, "DROP DEFAULT": 1}, made
    state.change_type(pick=0, to=2)  # the added column's read default becomes text
    state.change_type(pick=4, to=2)  # ``a``'s write default too: '12'
    state.sql_insert(pick=0, vseed=99)
    before = state.commits[-1]
    state.set_default(pick=1, value=21)  # ``a``: '`t`21'
    state.sql_insert(pick=0, vseed=97)
    state.revert_to(before[0], before[2])  # ``a``'s write default is '12' again
    assert state.reverts["made"] == 1
    state.sql_insert(pick=0, vseed=98)
    # every commit is read by both readers at the end by the fixture's teardown
