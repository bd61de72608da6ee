"""A ``to_arrow`` filter that does not apply to the table: one evonb error that names the
column and suggests the fix (no Spark needed: the filter is checked before any file is read)."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

import evonb
from evonb.errors import ColumnNotFoundError, EvoError


@pytest.fixture()
def table(tmp_path):
    return evonb.create_table(tmp_path / "t", "id BIGINT, s STRUCT<y: INT, z: STRING>, "
                              "name STRING", primary_key="id")


def test_a_struct_members_name_is_answered_with_its_path(table):
    with pytest.raises(ColumnNotFoundError) as caught:
        table.to_arrow(columns=["s.y"], filter=pc.field("y") > 1)
    assert caught.value.path == "y"
    assert caught.value.hint == "a struct member is named by its path: pc.field('s', 'y')"
    assert table.to_arrow(columns=["s.y"], filter=pc.field("s", "y") > 1).column_names == ["y"]


def test_a_misspelt_column_gets_the_closest_name_and_an_unknown_one_the_columns(table):
    with pytest.raises(ColumnNotFoundError, match=r"in the filter \(nmae > 1\): 'nmae'") as caught:
        table.to_arrow(filter=pc.field("nmae") > 1)
    assert caught.value.hint == "did you mean 'name'?"
    with pytest.raises(ColumnNotFoundError) as caught:
        table.to_arrow(filter=pc.field("zzz") > 1)
    assert caught.value.hint == "existing columns: id, s, name"


def test_a_comparison_of_mismatched_types_is_one_readable_line(table):
    with pytest.raises(EvoError) as caught:
        table.to_arrow(filter=pc.field("name") > 1)
    assert not isinstance(caught.value, ColumnNotFoundError)
    assert caught.value.message.startswith("The filter (name > 1) does not apply to the "
                                           "query's columns: ")
    assert "\n" not in caught.value.message  # no schema dump
    assert "value of its type" in caught.value.hint


def test_a_renamed_members_old_name_gets_its_new_path(table):
    table.alter("ALTER TABLE t RENAME COLUMN s.y TO y2")
    with pytest.raises(ColumnNotFoundError) as caught:
        table.to_arrow(filter=pc.field("s", "y") > 1)
    assert caught.value.path == "s.y" and caught.value.hint == "did you mean 's.y2'?"


def test_a_column_named_by_its_position_is_refused(table):
    """``pc.field(1)`` would name the file's column 1 once pushed into a file, and another
    column with other ``columns``: refused before anything is read, whatever else it holds."""
    for expr in (pc.field(1) > 1, (pc.field("id") > 0) & pc.field(("s", 0)).is_null()):
        with pytest.raises(EvoError, match="names a column by its position") as caught:
            table.to_arrow(filter=expr)
        assert "pyarrow.compute.field('fare')" in caught.value.hint
    text = pc.field("name") == "FieldPath(1)"  # in a literal, it is text
    assert table.to_arrow(filter=text).num_rows == 0
