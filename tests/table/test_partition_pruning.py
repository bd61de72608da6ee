"""Skipping files by partition folder (evonb.table.partition_pruning): sound against the
spelling evonb's object writer gives a folder (a file is never skipped when one of its rows
could match), exact where the spelling is (integers, strings, dates, booleans), and the null
folder kept for every value it can stand for."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.schema.types import BIGINT, BOOLEAN, DATE, DOUBLE, INT, STRING, TIMESTAMP
from evonb.table.partition_folders import NULL_FOLDER, folder_value
from evonb.table.partition_pruning import folder_values, may_match

OPS = ["==", ">", ">=", "<", "<=", "in", "is_null", "is_valid"]


def _holds(op: str, value: Any, operand: Any) -> bool:
    """The SQL meaning of one filter on one value (the reference)."""
    if op == "is_null":
        return value is None
    if op == "is_valid":
        return value is not None
    if value is None:
        return False
    if op == "in":
        return value in operand
    return {"==": value == operand, ">": value > operand, ">=": value >= operand,
            "<": value < operand, "<=": value <= operand}[op]


KINDS = {
    BIGINT: st.integers(-10**12, 10**12),
    STRING: st.text(max_size=6),
    DATE: st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 1, 1)),
    BOOLEAN: st.booleans(),
}


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, Any, Any, str, Any]:
    kind = draw(st.sampled_from(list(KINDS)))
    values = KINDS[kind]
    value = draw(st.none() | values)
    op = draw(st.sampled_from(OPS))
    operand = (draw(st.lists(values, min_size=1, max_size=4)) if op == "in"
               else None if op in ("is_null", "is_valid") else draw(values))
    return kind, values, value, op, operand


@settings(max_examples=400, deadline=None)
@given(cases())
def test_a_file_is_skipped_only_when_its_rows_cannot_match(case: Any) -> None:
    kind, _, value, op, operand = case
    folder = f"c={folder_value(value)}"
    kept = may_match(folder, [kind], [("c",)], [(op, ("c",), operand)])
    if _holds(op, value, operand):
        assert kept, (folder, op, operand)  # sound: a matching row is never skipped
    elif value is not None and not (kind == STRING and value in ("", NULL_FOLDER)):
        assert not kept, (folder, op, operand)  # exact where the spelling is


def test_folder_values_by_position_and_type() -> None:
    kinds = [DATE, STRING, INT]
    assert folder_values("day=2024-01-31/city=a%2Fb/n=-3", kinds) == [
        (datetime.date(2024, 1, 31),), ("a/b",), (-3,)]
    # the folder names are the names at write time: a renamed column is matched by position
    assert folder_values("old=2024-01-31", kinds) == [(datetime.date(2024, 1, 31),), None,
                                                       None]
    assert folder_values(f"d={NULL_FOLDER}/c={NULL_FOLDER}/n=x", kinds) == [
        (None,), (None, "", NULL_FOLDER), None]
    # types whose spelling is not exact are never told
    assert folder_values("x=1.5/t=2024-01-01 00:00:00", [DOUBLE, TIMESTAMP]) == [None, None]
    assert folder_values("", [INT]) == [None]


def test_filters_on_several_columns_and_on_other_columns() -> None:
    kinds, cols = [DATE, STRING], [("day",), ("city",)]
    folder = "day=2024-01-31/city=paris"

    def kept(*filters: tuple[str, tuple[str, ...], Any]) -> bool:
        return may_match(folder, kinds, cols, list(filters))

    assert kept(("==", ("city",), "paris"), (">=", ("day",), datetime.date(2024, 1, 1)))
    assert not kept(("==", ("city",), "paris"), ("<", ("day",), datetime.date(2024, 1, 31)))
    assert not kept(("in", ("city",), ["oslo", "rome"]))
    assert kept(("==", ("name",), "x"))  # not a partition column: says nothing
    assert kept(("==", ("city",), 3))  # an operand of another type: kept
    assert not kept(("is_null", ("city",), None))
    assert may_match(f"day={NULL_FOLDER}/city=paris", kinds, cols,
                     [("is_null", ("day",), None)])
