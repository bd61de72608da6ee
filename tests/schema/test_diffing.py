"""Schema diffs by field ID: exact changes for hand-built schemas, and a property test against
``SchemaUpdate`` (one random operation is reported as exactly that change)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evonb.schema.diffing import KINDS, Change, SchemaDiff, diff
from evonb.schema.evolution import SchemaUpdate
from evonb.schema.schema import ROOT_ID, Schema, walk
from evonb.schema.types import (
    BIGINT,
    DATE,
    DOUBLE,
    INT,
    STRING,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
    Type,
)

try:  # shared strategies (tests/schema/strategies.py), imported as a package or from its folder
    from tests.schema.strategies import schemas
except ImportError:  # pragma: no cover - depends on how pytest puts tests on sys.path
    from strategies import schemas  # type: ignore[no-redef]


def base() -> Schema:
    """id, name, loc struct, points array<struct>, attrs map<string,struct>, tags array<int>."""
    return Schema(
        fields=(
            NestedField(1, "id", BIGINT, False),
            NestedField(2, "name", STRING),
            NestedField(3, "loc", StructType((
                NestedField(4, "lat", DOUBLE, False, default=0.0, write_default=0.0),
                NestedField(5, "lon", DOUBLE),
            ))),
            NestedField(6, "points", ArrayType(NestedField(7, "element", StructType((
                NestedField(8, "x", INT),
                NestedField(9, "y", INT),
            ))))),
            NestedField(10, "attrs", MapType(
                NestedField(11, "key", STRING, False),
                NestedField(12, "value", StructType((NestedField(13, "a", INT),))),
            )),
            NestedField(14, "tags", ArrayType(NestedField(15, "element", INT))),
        ),
        version_id="20240101000000000",
    )


def with_fields(s: Schema, *fields: NestedField) -> Schema:
    return replace(s, fields=tuple(fields), version_id="20240102000000000")


def top(s: Schema, name: str) -> NestedField:
    return next(f for f in s.fields if f.name == name)


def struct_with(f: NestedField, *children: NestedField) -> NestedField:
    return f.replace(type=StructType(children))


def rows(d: SchemaDiff) -> list[tuple]:
    return [(c.kind, c.field_id, c.old_path, c.new_path, c.old, c.new) for c in d]


# ----------------------------------------------------------------------------------- added
def test_add_top_level_column() -> None:
    s = base()
    t = with_fields(s, *s.fields, NestedField(16, "email", STRING))
    assert rows(diff(s, t)) == [("added", 16, None, "email", None, "string")]


def test_add_struct_column_reports_only_the_struct() -> None:
    s = base()
    meta = NestedField(16, "meta", StructType((NestedField(17, "k", STRING),
                                               NestedField(18, "v", INT))))
    t = with_fields(s, meta, *s.fields)
    assert rows(diff(s, t)) == [("added", 16, None, "meta", None, "struct<k:string,v:int>")]


def test_add_inside_array_element_struct() -> None:
    s = base()
    points = top(s, "points")
    element = points.type.element
    new_element = struct_with(element, *element.type.fields, NestedField(16, "z", INT))
    t = with_fields(s, *[points.replace(type=ArrayType(new_element)) if f is points else f
                         for f in s.fields])
    assert rows(diff(s, t)) == [("added", 16, None, "points.element.z", None, "int")]


def test_add_inside_map_value_struct() -> None:
    s = base()
    attrs = top(s, "attrs")
    value = attrs.type.value
    new_value = struct_with(value, NestedField(16, "b", ArrayType(NestedField(17, "element",
                                                                              STRING))),
                            *value.type.fields)
    t = with_fields(s, *[attrs.replace(type=MapType(attrs.type.key, new_value))
                         if f is attrs else f for f in s.fields])
    assert rows(diff(s, t)) == [("added", 16, None, "attrs.value.b", None, "array<string>")]


# --------------------------------------------------------------------------------- dropped
def test_drop_struct_reports_only_the_struct() -> None:
    s = base()
    t = with_fields(s, *[f for f in s.fields if f.name != "loc"])
    assert rows(diff(s, t)) == [
        ("dropped", 3, "loc", None, "struct<lat:double,lon:double>", None)
    ]


def test_drop_nested_field() -> None:
    s = base()
    loc = top(s, "loc")
    t = with_fields(s, *[struct_with(f, f.type.fields[1]) if f is loc else f for f in s.fields])
    assert rows(diff(s, t)) == [("dropped", 4, "loc.lat", None, "double", None)]


# --------------------------------------------------------------------------------- renamed
def test_rename_parent_does_not_report_children() -> None:
    s = base()
    t = with_fields(s, *[f.replace(name="location") if f.name == "loc" else f for f in s.fields])
    assert rows(diff(s, t)) == [("renamed", 3, "loc", "location", "loc", "location")]


def test_rename_child_of_renamed_parent_has_both_paths() -> None:
    s = base()
    loc = top(s, "loc")
    lat, lon = loc.type.fields
    new_loc = struct_with(loc.replace(name="location"), lat.replace(name="latitude"), lon)
    t = with_fields(s, *[new_loc if f is loc else f for f in s.fields])
    assert rows(diff(s, t)) == [
        ("renamed", 3, "loc", "location", "loc", "location"),
        ("renamed", 4, "loc.lat", "location.latitude", "lat", "latitude"),
    ]


def test_swap_two_names_is_two_renames() -> None:
    s = base()
    swapped = {"id": "name", "name": "id"}
    t = with_fields(s, *[f.replace(name=swapped.get(f.name, f.name)) for f in s.fields])
    assert rows(diff(s, t)) == [
        ("renamed", 1, "id", "name", "id", "name"),
        ("renamed", 2, "name", "id", "name", "id"),
    ]


def test_case_only_rename_is_a_rename() -> None:
    s = base()
    t = with_fields(s, *[f.replace(name="ID") if f.id == 1 else f for f in s.fields])
    assert rows(diff(s, t)) == [("renamed", 1, "id", "ID", "id", "ID")]


# --------------------------------------------------------------------------------- retyped
def test_retype_array_element_reports_the_element_id() -> None:
    s = base()
    tags = top(s, "tags")
    new_tags = tags.replace(type=ArrayType(tags.type.element.replace(type=BIGINT)))
    t = with_fields(s, *[new_tags if f is tags else f for f in s.fields])
    assert rows(diff(s, t)) == [("retyped", 15, "tags.element", "tags.element", "int", "bigint")]


def test_retype_decimal_and_nested_member() -> None:
    s = Schema(fields=(
        NestedField(1, "amount", DecimalType(10, 2)),
        NestedField(2, "s", StructType((NestedField(3, "n", INT),))),
    ))
    t = with_fields(
        s,
        NestedField(1, "amount", DecimalType(12, 2)),
        NestedField(2, "s", StructType((NestedField(3, "n", BIGINT),))),
    )
    assert rows(diff(s, t)) == [
        ("retyped", 1, "amount", "amount", "decimal(10,2)", "decimal(12,2)"),
        ("retyped", 3, "s.n", "s.n", "int", "bigint"),
    ]


def test_retype_that_changes_the_kind_of_type() -> None:
    s = Schema(fields=(NestedField(1, "a", INT), NestedField(2, "b", STRING)))
    t = with_fields(s, NestedField(1, "a", ArrayType(NestedField(3, "element", INT))), s.fields[1])
    assert rows(diff(s, t)) == [("retyped", 1, "a", "a", "int", "array<int>")]


# ----------------------------------------------------------------------------------- moved
def test_move_one_column_first_is_exactly_one_move() -> None:
    s = base()
    tags = top(s, "tags")
    t = with_fields(s, tags, *[f for f in s.fields if f is not tags])
    assert rows(diff(s, t)) == [("moved", 14, "tags", "tags", 5, 0)]


def test_move_one_column_last_is_exactly_one_move() -> None:
    s = base()
    first = s.fields[0]
    t = with_fields(s, *s.fields[1:], first)
    assert rows(diff(s, t)) == [("moved", 1, "id", "id", 0, 5)]


def test_move_inside_struct() -> None:
    s = base()
    loc = top(s, "loc")
    lat, lon = loc.type.fields
    t = with_fields(s, *[struct_with(loc, lon, lat) if f is loc else f for f in s.fields])
    # an adjacent swap is one move either way; the field that comes first afterwards is named
    assert rows(diff(s, t)) == [("moved", 5, "loc.lon", "loc.lon", 1, 0)]


def test_adds_and_drops_never_report_moves() -> None:
    s = base()
    f = s.fields
    t = with_fields(s, NestedField(16, "new_first", INT), f[0], f[2], NestedField(17, "mid", INT),
                    f[3], f[4], f[5])
    assert rows(diff(s, t)) == [
        ("added", 16, None, "new_first", None, "int"),
        ("added", 17, None, "mid", None, "int"),
        ("dropped", 2, "name", None, "string", None),
    ]


def test_move_to_another_parent_is_a_move() -> None:
    s = Schema(fields=(
        NestedField(1, "a", INT),
        NestedField(2, "s", StructType((NestedField(3, "b", INT),))),
    ))
    t = with_fields(s, NestedField(2, "s", StructType((NestedField(3, "b", INT),
                                                       NestedField(1, "a", INT)))))
    assert rows(diff(s, t)) == [("moved", 1, "a", "s.a", 0, 1)]


# ------------------------------------------------------------ nullability, default, comment
def test_nullability() -> None:
    s = base()
    loc = top(s, "loc")
    lat, lon = loc.type.fields
    t = with_fields(s, *[struct_with(loc, lat.replace(nullable=True), lon) if f is loc else f
                         for f in s.fields])
    assert rows(diff(s, t)) == [("nullability", 4, "loc.lat", "loc.lat", False, True)]


def test_write_default_change() -> None:
    s = base()
    loc = top(s, "loc")
    lat, lon = loc.type.fields
    t = with_fields(s, *[struct_with(loc, lat.replace(write_default=1.5), lon) if f is loc else f
                         for f in s.fields])
    assert rows(diff(s, t)) == [(
        "default", 4, "loc.lat", "loc.lat",
        {"default": 0.0, "write_default": 0.0}, {"default": 0.0, "write_default": 1.5},
    )]
    assert str(diff(s, t).changes[0]) == "default  4: loc.lat: write-default 0.0 -> 1.5"


def test_read_default_change() -> None:
    s = Schema(fields=(NestedField(1, "n", INT),))
    t = with_fields(s, NestedField(1, "n", INT, default=7))
    assert rows(diff(s, t)) == [(
        "default", 1, "n", "n",
        {"default": None, "write_default": None}, {"default": 7, "write_default": None},
    )]


def test_equal_nan_defaults_are_not_a_change() -> None:
    s = Schema(fields=(NestedField(1, "x", DOUBLE, default=float("nan")),))
    t = with_fields(s, NestedField(1, "x", DOUBLE, default=float("nan")))
    assert not diff(s, t)


def test_comment() -> None:
    s = base()
    t = with_fields(s, *[f.replace(comment="full name") if f.id == 2 else f for f in s.fields])
    assert rows(diff(s, t)) == [("comment", 2, "name", "name", None, "full name")]


def test_empty_comment_equals_no_comment() -> None:
    s = base()
    t = with_fields(s, *[f.replace(comment="") if f.id == 2 else f for f in s.fields])
    assert not diff(s, t)


# ------------------------------------------------------------------------- the diff object
def test_no_op_diff_is_falsy() -> None:
    s = base()
    d = diff(s, with_fields(s, *s.fields))
    assert not d
    assert len(d) == 0
    assert list(d) == []
    assert d.kinds == []
    assert repr(d) == "SchemaDiff 20240101000000000 -> 20240102000000000: no changes"
    assert d.to_dict() == {
        "before_version": "20240101000000000",
        "after_version": "20240102000000000",
        "changes": [],
    }


def test_order_by_kind_then_position_and_repr() -> None:
    s = base()
    f = s.fields
    t = with_fields(
        s,
        f[0].replace(comment="key"),
        f[1].replace(name="full_name", nullable=False),
        f[3],
        f[5].replace(type=ArrayType(f[5].type.element.replace(type=BIGINT))),
        f[4],
        NestedField(16, "email", STRING),
    )
    d = diff(s, t)
    assert [(c.kind, c.field_id) for c in d] == [
        ("added", 16), ("dropped", 3), ("renamed", 2), ("retyped", 15), ("moved", 14),
        ("nullability", 2), ("comment", 1),
    ]
    assert d
    assert len(d) == 7
    assert d.kinds == ["added", "dropped", "renamed", "retyped", "moved", "nullability",
                       "comment"]
    assert [c.field_id for c in d.by_kind("renamed")] == [2]
    assert d.by_kind("default") == ()
    with pytest.raises(ValueError):
        d.by_kind("nope")
    assert repr(d) == "\n".join([
        "SchemaDiff 20240101000000000 -> 20240102000000000: 7 changes",
        "  added    16: email (string)",
        "  dropped  3: loc (struct<lat:double,lon:double>)",
        "  renamed  2: name -> full_name",
        "  retyped  15: tags.element: int -> bigint",
        "  moved    14: tags: position 5 -> 3",
        "  nullability 2: full_name: optional -> required",
        "  comment  1: id: null -> 'key'",
    ])
    assert s.diff(t) == d


def test_single_change_header_is_singular() -> None:
    s = base()
    t = with_fields(s, *s.fields[:-1])
    assert repr(diff(s, t)).splitlines()[0].endswith(": 1 change")


def test_to_dict_is_json_safe() -> None:
    s = Schema(fields=(
        NestedField(1, "d", DATE, default=dt.date(2024, 1, 31)),
        NestedField(2, "m", DecimalType(5, 2), write_default=decimal.Decimal("1.50")),
    ))
    t = with_fields(
        s,
        NestedField(1, "d", DATE, default=dt.date(2024, 2, 1)),
        NestedField(2, "m", DecimalType(5, 2), write_default=None),
    )
    data = diff(s, t).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["changes"][0] == {
        "kind": "default", "field_id": 1, "old_path": "d", "new_path": "d",
        "old": {"default": "2024-01-31", "write_default": None},
        "new": {"default": "2024-02-01", "write_default": None},
    }
    assert data["changes"][1]["old"] == {"default": None, "write_default": "1.50"}


def test_change_validates_kind_and_str_is_one_line() -> None:
    with pytest.raises(ValueError):
        Change("bogus", 1, "a", "a", None, None)
    c = Change("renamed", 2, "name", "full\nname", "name", "full\nname")
    assert "\n" not in str(c)
    assert str(Change("renamed", 2, "name", "full_name", "name", "full_name")) == (
        "renamed  2: name -> full_name"
    )
    assert set(KINDS) == {"added", "dropped", "renamed", "retyped", "moved", "nullability",
                          "default", "comment"}


# ----------------------------------------------------------------- property: one operation
# New names for added and renamed columns (more than a struct of schemas() has fields).
_NAMES = ["a", "b", "zz_new", "x y", "dotted.name", "Ümlaut", "<b>", "q'uote", "tick`s"]
_PRIMS: list[Type] = [INT, BIGINT, STRING, DOUBLE]


def _structural(s: Schema, fid: int) -> bool:
    """Array elements and map keys/values cannot be dropped, renamed or moved."""
    parent = s.parent_of(fid)
    return parent != ROOT_ID and not isinstance(s.field_by_id(parent).type, StructType)


def _in_map_key(s: Schema, fid: int) -> bool:
    while fid != ROOT_ID:
        parent = s.parent_of(fid)
        if parent != ROOT_ID:
            pt = s.field_by_id(parent).type
            if isinstance(pt, MapType) and pt.key.id == fid:
                return True
        fid = parent
    return False


def _siblings(s: Schema, fid: int) -> tuple[NestedField, ...]:
    return s.children_of(s.parent_of(fid))


def _struct_holders(s: Schema) -> list[int]:
    """IDs whose type is a struct that columns can be added to (ROOT_ID for the top level)."""
    return [ROOT_ID] + [i.field.id for i in walk(s.fields) if isinstance(i.field.type, StructType)
                        and not _in_map_key(s, i.field.id)]


def _path(s: Schema, fid: int) -> tuple[str, ...]:
    return s.info(fid).path


@st.composite
def single_operations(draw: st.DrawFn, s: Schema) -> tuple[str, int, SchemaUpdate]:
    """A random single operation: (expected kind, field id, the staged update)."""
    ids = [i.field.id for i in walk(s.fields)]
    free = [i for i in ids if not _structural(s, i) and not _in_map_key(s, i)]
    ops = ["add", "comment"]
    droppable = [i for i in free if len(_siblings(s, i)) > 1]
    if droppable:
        ops += ["drop", "move"]
    if free:
        ops.append("rename")
    ints = [i for i in ids if s.field_by_id(i).type == INT and not _in_map_key(s, i)]
    if ints:
        ops.append("retype")
    required = [i for i in ids if not s.field_by_id(i).nullable and not _in_map_key(s, i)]
    if required:
        ops.append("nullable")
    op = draw(st.sampled_from(ops))
    u = SchemaUpdate(s)
    if op == "add":
        holder = draw(st.sampled_from(_struct_holders(s)))
        taken = {f.name.lower() for f in s.children_of(holder)}
        name = draw(st.sampled_from([n for n in _NAMES if n.lower() not in taken]))
        prefix = () if holder == ROOT_ID else _path(s, holder)
        u.add_column((*prefix, name), draw(st.sampled_from(_PRIMS)))
        return "added", s.max_column_id + 1, u
    if op == "comment":
        fid = draw(st.sampled_from([i for i in ids if not _structural(s, i)]))
        current = s.field_by_id(fid).comment
        u.set_comment(_path(s, fid), draw(st.sampled_from(
            [c for c in ["note", "a <b> & 'c'", "ünï"] if c != current])))
        return "comment", fid, u
    if op == "drop":
        fid = draw(st.sampled_from(droppable))
        u.drop_column(_path(s, fid))
        return "dropped", fid, u
    if op == "rename":
        fid = draw(st.sampled_from(free))
        taken = {f.name.lower() for f in _siblings(s, fid)}
        u.rename_column(_path(s, fid), draw(st.sampled_from(
            [n for n in _NAMES if n.lower() not in taken])))
        return "renamed", fid, u
    if op == "retype":
        fid = draw(st.sampled_from(ints))
        u.update_column_type(_path(s, fid), BIGINT)
        return "retyped", fid, u
    if op == "nullable":
        fid = draw(st.sampled_from(required))
        u.set_nullable(_path(s, fid), True)
        return "nullability", fid, u
    fid = draw(st.sampled_from(droppable))
    others = [f.id for f in _siblings(s, fid) if f.id != fid]
    where = draw(st.sampled_from(["first", "after", "before"]))
    if where == "first":
        u.move_first(_path(s, fid))
    else:
        other = _path(s, draw(st.sampled_from(others)))
        # SchemaUpdate re-parses a one-name anchor as a dotted path, so a top-level anchor
        # whose name holds "." or "`" cannot be addressed; leave those out here.
        assume(len(other) > 1 or not any(ch in other[0] for ch in ".`"))
        (u.move_after if where == "after" else u.move_before)(_path(s, fid), other)
    return "moved", fid, u


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_diff_reports_exactly_the_single_operation(data: st.DataObject) -> None:
    # strategies.py builds decimal defaults of up to 38 digits under the ambient context
    # (28 digits by default); give it room so such draws do not fail.
    with decimal.localcontext(prec=80):
        s = data.draw(schemas(max_depth=2, max_fields=5), label="schema")
    kind, fid, update = data.draw(single_operations(s), label="operation")
    after = update.apply()
    d = diff(s, after)
    if kind != "moved":
        assert [(c.kind, c.field_id) for c in d] == [(kind, fid)]
        return
    parent = s.parent_of(fid)
    old_order = [f.id for f in s.children_of(parent)]
    new_order = [f.id for f in after.children_of(parent)]
    if old_order == new_order:  # e.g. moving a column after the one it already follows
        assert not d
        return
    assert [c.kind for c in d] == ["moved"]
    moved = d.changes[0].field_id
    # An adjacent swap is one move of either column: the reported one must explain the change.
    assert [i for i in old_order if i != moved] == [i for i in new_order if i != moved]
    if moved != fid:
        assert abs(old_order.index(fid) - new_order.index(fid)) == 1


def test_known_moves_decide_an_adjacent_swap() -> None:
    s = base()
    loc = top(s, "loc")
    lat, lon = loc.type.fields
    t = with_fields(s, *[struct_with(loc, lon, lat) if f is loc else f for f in s.fields])
    assert rows(diff(s, t, moved=[lat.id])) == [("moved", lat.id, "loc.lat", "loc.lat", 0, 1)]
    assert rows(diff(s, t, moved=[lon.id])) == [("moved", lon.id, "loc.lon", "loc.lon", 1, 0)]


def test_known_moves_never_add_moves() -> None:
    s = base()
    tags = top(s, "tags")
    t = with_fields(s, tags, *[f for f in s.fields if f is not tags])
    # naming a field that kept its place, or one that is not the fewest-moves answer
    assert rows(diff(s, t, moved=[s.fields[0].id])) == [("moved", 14, "tags", "tags", 5, 0)]
    assert rows(diff(s, t, moved=[tags.id, s.fields[0].id])) == [
        ("moved", 14, "tags", "tags", 5, 0)]
