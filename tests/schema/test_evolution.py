"""``SchemaUpdate``: every change, every rejection, IDs, positions, defaults and atomicity."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable

import pytest

from evonb.errors import (
    ColumnNotFoundError,
    DDLSyntaxError,
    EvoError,
    InvalidDefaultError,
    SchemaEvolutionError,
)
from evonb.schema import ROOT_ID, Schema, SchemaUpdate
from evonb.schema.types import (
    BIGINT,
    DOUBLE,
    INT,
    STRING,
    DecimalType,
    NestedField,
    StructType,
    array_of,
)

BASE_DDL = (
    "id bigint not null, name string, loc struct<lat:double,lon:double>, "
    "points array<struct<x:int,y:int>>, members map<string,struct<a:int,b:string>>, "
    "tags array<string>, m2 map<struct<k:int,j:int>,int>"
)
BASE_LAYOUT = [
    ("id", 1), ("name", 2), ("loc", 3), ("loc.lat", 4), ("loc.lon", 5), ("points", 6),
    ("points.element", 7), ("points.element.x", 8), ("points.element.y", 9), ("members", 10),
    ("members.key", 11), ("members.value", 12), ("members.value.a", 13),
    ("members.value.b", 14), ("tags", 15), ("tags.element", 16), ("m2", 17), ("m2.key", 18),
    ("m2.key.k", 19), ("m2.key.j", 20), ("m2.value", 21),
]


@pytest.fixture
def base() -> Schema:
    s = Schema.from_ddl(BASE_DDL)
    assert layout(s) == BASE_LAYOUT
    assert s.max_column_id == 21
    return s


def layout(s: Schema) -> list[tuple[str, int]]:
    return list(zip(s.paths(), s.field_ids(), strict=True))


def children(s: Schema, path: str | None = None) -> list[tuple[str, int]]:
    parent = ROOT_ID if path is None else s.find_id(path)
    return [(f.name, f.id) for f in s.children_of(parent)]


TOP = [("id", 1), ("name", 2), ("loc", 3), ("points", 6), ("members", 10), ("tags", 15),
       ("m2", 17)]


# ===================================================================================== add
def test_add_top_level_column_at_the_end(base: Schema) -> None:
    u = SchemaUpdate(base).add_column("city", "string")
    after = u.apply()
    assert children(after) == [*TOP, ("city", 22)]
    assert after.find("city") == NestedField(22, "city", STRING)
    assert after.max_column_id == 22
    assert after.version_id == base.version_id
    assert layout(base) == BASE_LAYOUT  # nothing stored in the base
    assert [str(op) for op in u.operations] == ["add city (id 22): string"]
    assert u.only_adds_columns and bool(u)


def test_add_nested_after_a_sibling(base: Schema) -> None:
    after = SchemaUpdate(base).add_column("loc.alt", "double", after="lat").apply()
    assert children(after, "loc") == [("lat", 4), ("alt", 22), ("lon", 5)]
    assert after.find("loc.alt") == NestedField(22, "alt", DOUBLE)


@pytest.mark.parametrize(
    ("kwargs", "order"),
    [
        ({}, ["id", "name", "loc", "points", "members", "tags", "m2", "z"]),
        ({"first": True}, ["z", "id", "name", "loc", "points", "members", "tags", "m2"]),
        ({"after": "id"}, ["id", "z", "name", "loc", "points", "members", "tags", "m2"]),
        ({"before": "id"}, ["z", "id", "name", "loc", "points", "members", "tags", "m2"]),
        ({"after": "m2"}, ["id", "name", "loc", "points", "members", "tags", "m2", "z"]),
        ({"before": "M2"}, ["id", "name", "loc", "points", "members", "tags", "z", "m2"]),
    ],
)
def test_add_positions_at_the_top(base: Schema, kwargs: dict, order: list[str]) -> None:
    after = SchemaUpdate(base).add_column("z", INT, **kwargs).apply()
    assert after.column_names == order
    assert after.find("z").id == 22


@pytest.mark.parametrize(
    ("path", "kwargs", "parent", "order"),
    [
        ("loc.alt", {"first": True}, "loc", ["alt", "lat", "lon"]),
        ("loc.alt", {"before": "lon"}, "loc", ["lat", "alt", "lon"]),
        ("loc.alt", {}, "loc", ["lat", "lon", "alt"]),
        ("points.element.z", {}, "points.element", ["x", "y", "z"]),
        ("points.element.z", {"first": True}, "points.element", ["z", "x", "y"]),
        ("points.z", {"after": "x"}, "points.element", ["x", "z", "y"]),
        ("members.value.c", {"before": "b"}, "members.value", ["a", "c", "b"]),
        ("members.c", {}, "members.value", ["a", "b", "c"]),
        ("Members.Value.C", {"first": True}, "members.value", ["C", "a", "b"]),
    ],
)
def test_add_inside_structs_array_elements_and_map_values(
    base: Schema, path: str, kwargs: dict, parent: str, order: list[str]
) -> None:
    after = SchemaUpdate(base).add_column(path, "int", **kwargs).apply()
    assert [n for n, _ in children(after, parent)] == order
    new = [i for n, i in children(after, parent) if n.lower() in ("alt", "z", "c")]
    assert new == [22]
    assert after.max_column_id == 22
    # everything else kept its ID
    assert [x for x in layout(after) if x[1] != 22] == BASE_LAYOUT


@pytest.mark.parametrize(
    "anchor", [{"after": "x"}, {"after": "points.x"}, {"before": "POINTS.element.Y"},
               {"before": "y"}, {"after": ("points", "element", "x")}],
)
def test_add_anchor_may_be_a_full_path(base: Schema, anchor: dict) -> None:
    after = SchemaUpdate(base).add_column("points.z", "int", **anchor).apply()
    assert children(after, "points.element") == [("x", 8), ("z", 22), ("y", 9)]


def test_add_anchor_in_another_struct_is_rejected(base: Schema) -> None:
    u = SchemaUpdate(base)
    with pytest.raises(SchemaEvolutionError) as exc:
        u.add_column("points.z", "int", after="loc.lat")
    assert exc.value.message == (
        "Cannot place 'points.z' next to 'loc.lat': they are in different structs"
    )
    assert u.apply() == base


def test_add_complex_types_numbers_children_in_pre_order(base: Schema) -> None:
    u = (
        SchemaUpdate(base)
        .add_column("s", "struct<a:int,b:array<struct<c:int,d:map<string,int>>>,e:string>")
        .add_column("m", "map<string,array<int>>")
        .add_column("n", "bigint")
    )
    after = u.apply()
    assert layout(after)[len(BASE_LAYOUT):] == [
        ("s", 22), ("s.a", 23), ("s.b", 24), ("s.b.element", 25), ("s.b.element.c", 26),
        ("s.b.element.d", 27), ("s.b.element.d.key", 28), ("s.b.element.d.value", 29),
        ("s.e", 30), ("m", 31), ("m.key", 32), ("m.value", 33), ("m.value.element", 34),
        ("n", 35),
    ]
    assert after.max_column_id == 35
    assert [op.field_id for op in u.operations] == [22, 31, 35]


def test_add_a_type_object_with_ids_renumbers_it(base: Schema) -> None:
    t = StructType((NestedField(1, "a", INT), NestedField(2, "b", array_of(STRING, element_id=3))))
    after = SchemaUpdate(base).add_column("s", t).apply()
    assert layout(after)[-4:] == [("s", 22), ("s.a", 23), ("s.b", 24), ("s.b.element", 25)]


def test_add_children_to_a_column_added_in_the_same_update(base: Schema) -> None:
    after = (
        SchemaUpdate(base)
        .add_column("s", "struct<a:int>")
        .add_column("t", "int")
        .add_column("s.b", "string", first=True)
        .apply()
    )
    assert layout(after)[len(BASE_LAYOUT):] == [("s", 22), ("s.b", 25), ("s.a", 23), ("t", 24)]


def test_add_column_with_a_default_sets_read_and_write_default(base: Schema) -> None:
    after = SchemaUpdate(base).add_column(
        "score", "decimal(5,2)", nullable=False, default="1.5", comment="points"
    ).apply()
    assert after.find("score") == NestedField(
        22, "score", DecimalType(5, 2), False, decimal.Decimal("1.50"), decimal.Decimal("1.50"),
        "points",
    )
    # A later SET DEFAULT changes only the write default.
    later = SchemaUpdate(after).set_default("score", 2).apply()
    f = later.find("score")
    assert (f.default, f.write_default) == (decimal.Decimal("1.50"), decimal.Decimal("2.00"))
    # ... and DROP DEFAULT only removes the write default.
    dropped = SchemaUpdate(later).drop_default("score").apply()
    f = dropped.find("score")
    assert (f.default, f.write_default) == (decimal.Decimal("1.50"), None)


def test_add_nullable_column_with_a_default(base: Schema) -> None:
    after = SchemaUpdate(base).add_column("loc.alt", "double", default=0).apply()
    assert after.find("loc.alt") == NestedField(22, "alt", DOUBLE, True, 0.0, 0.0)


def test_add_columns_from_ddl_text(base: Schema) -> None:
    after = SchemaUpdate(base).add_columns(
        "a int not null default 3, b struct<c:string> comment 'x', `d.e` date default "
        "'2020-01-02'"
    ).apply()
    assert layout(after)[len(BASE_LAYOUT):] == [
        ("a", 22), ("b", 23), ("b.c", 24), ("`d.e`", 25)
    ]
    assert after.find("a") == NestedField(22, "a", INT, False, 3, 3)
    assert after.find("b").comment == "x"
    assert after.find(("d.e",)).default == dt.date(2020, 1, 2)


def test_add_names_with_dots(base: Schema) -> None:
    after = (
        SchemaUpdate(base)
        .add_column(("a.b",), "int")
        .add_column("`c.d`", "struct<x:int>")
        .add_column("`c.d`.`y.z`", "int", first=True)
        .apply()
    )
    assert layout(after)[len(BASE_LAYOUT):] == [
        ("`a.b`", 22), ("`c.d`", 23), ("`c.d`.`y.z`", 25), ("`c.d`.x", 24)
    ]


def test_add_may_reuse_a_name_the_same_update_frees(base: Schema) -> None:
    after = SchemaUpdate(base).drop_column("name").add_column("NAME", "int").apply()
    assert children(after)[-1] == ("NAME", 22)
    assert "name" not in after.column_names
    after = SchemaUpdate(base).add_column("name", "int").rename_column("name", "old_name").apply()
    assert children(after)[1] == ("old_name", 2)
    assert children(after)[-1] == ("name", 22)


@pytest.mark.parametrize(
    ("path", "shown", "existing"),
    [("name", "name", "name"), ("ID", "ID", "id"), ("loc.LAT", "loc.LAT", "lat"),
     ("points.x", "points.element.x", "x"), ("members.value.B", "members.value.B", "b")],
)
def test_add_an_existing_name_is_rejected(
    base: Schema, path: str, shown: str, existing: str
) -> None:
    u = SchemaUpdate(base).add_column(path, "int")  # a later rename or drop could free the name
    with pytest.raises(SchemaEvolutionError) as exc:
        u.apply()
    assert exc.value.message == (
        f"Cannot add {shown!r}: a column named {existing!r} exists there "
        "(names are case-insensitive)"
    )
    assert (exc.value.path, exc.value.field_id) == (shown, 22)


def test_add_the_same_new_name_twice_is_rejected(base: Schema) -> None:
    with pytest.raises(SchemaEvolutionError, match="Cannot add 'Z': a column named 'z' exists"):
        SchemaUpdate(base).add_column("z", "int").add_column("Z", "int").apply()


def test_add_not_null_without_default_is_rejected(base: Schema) -> None:
    with pytest.raises(SchemaEvolutionError) as exc:
        SchemaUpdate(base).add_column("loc.alt", "double", nullable=False)
    assert exc.value.message == (
        "Cannot add NOT NULL column 'loc.alt' without a default: existing rows would have no "
        "value"
    )
    assert exc.value.path == "loc.alt"
    assert "DEFAULT" in exc.value.hint


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda u: u.add_column("missing.x", "int"), ColumnNotFoundError,
         "Column not found: 'missing'"),
        (lambda u: u.add_column("lco.x", "int"), ColumnNotFoundError, "Column not found: 'lco'"),
        (lambda u: u.add_column("id.x", "int"), SchemaEvolutionError,
         "Cannot add 'id.x': 'id' is bigint, not a struct"),
        (lambda u: u.add_column("tags.x", "int"), SchemaEvolutionError,
         "Cannot add 'tags.x': 'tags' is array<string>, not a struct"),
        (lambda u: u.add_column("m2.key.x", "int"), SchemaEvolutionError,
         "Cannot change 'm2.key': map keys cannot change"),
        (lambda u: u.add_column("m2.x", "int"), SchemaEvolutionError,
         "Cannot add 'm2.x': 'm2' is map<struct<k:int,j:int>,int>, not a struct"),
        (lambda u: u.add_column("z", "int", default="abc"), InvalidDefaultError,
         "Default 'abc' does not convert to int for column 'z': "),
        (lambda u: u.add_column("z", "array<int>", default="x"), SchemaEvolutionError,
         "Cannot add 'z' with a default: array<int> columns take no default"),
        (lambda u: u.add_column("z", "int", first=True, after="id"), SchemaEvolutionError,
         "Give one position for 'z': FIRST, AFTER or BEFORE"),
        (lambda u: u.add_column("z", "int", after="nope"), ColumnNotFoundError,
         "Column not found beside 'z': 'nope'"),
        (lambda u: u.add_column("loc.z", "int", after="id"), ColumnNotFoundError,
         "Column not found beside 'loc.z': 'id'"),
        (lambda u: u.add_column("z", "varchar2"), DDLSyntaxError, "unknown type"),
        (lambda u: u.add_column("z", 5), SchemaEvolutionError, "Not a type: 5"),
        (lambda u: u.add_column(" ", "int"), ColumnNotFoundError, "Column not found"),
    ],
)
def test_add_rejections(base: Schema, call: Callable, error: type, message: str) -> None:
    u = SchemaUpdate(base)
    with pytest.raises(error) as exc:
        call(u)
    assert type(exc.value) is error
    assert message in str(exc.value)
    assert exc.value.hint, "each refusal says what to do instead"
    assert u.apply() == base
    assert not u


def test_add_suggests_the_closest_parent(base: Schema) -> None:
    with pytest.raises(ColumnNotFoundError) as exc:
        SchemaUpdate(base).add_column("lco.x", "int")
    assert exc.value.suggestion == "loc"


# ==================================================================================== drop
def test_drop_top_level_and_nested(base: Schema) -> None:
    u = SchemaUpdate(base).drop_column("name").drop_column("loc.lon").drop_column("points.y")
    after = u.apply()
    assert [p for p, _ in layout(after)] == [
        "id", "loc", "loc.lat", "points", "points.element", "points.element.x", "members",
        "members.key", "members.value", "members.value.a", "members.value.b", "tags",
        "tags.element", "m2", "m2.key", "m2.key.k", "m2.key.j", "m2.value",
    ]
    assert after.max_column_id == 21
    assert [str(op) for op in u.operations] == [
        "drop name (id 2)", "drop loc.lon (id 5)", "drop points.y (id 9)"
    ]
    assert not u.only_adds_columns


def test_drop_a_struct_drops_everything_under_it(base: Schema) -> None:
    after = SchemaUpdate(base).drop_column("members").apply()
    assert [i for _, i in layout(after)] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19, 20,
                                             21]


def test_ids_are_never_reused_after_a_drop(base: Schema) -> None:
    dropped = SchemaUpdate(base).drop_column("m2").apply()
    assert dropped.max_column_id == 21
    readded = SchemaUpdate(dropped).add_column("m2", "map<struct<k:int,j:int>,int>").apply()
    assert layout(readded)[-5:] == [
        ("m2", 22), ("m2.key", 23), ("m2.key.k", 24), ("m2.key.j", 25), ("m2.value", 26)
    ]
    assert readded.max_column_id == 26


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("members.key", "Cannot drop 'members.key': it is the key of a map"),
        ("members.value", "Cannot drop 'members.value': it is the value of a map"),
        ("tags.element", "Cannot drop 'tags.element': it is the element of an array"),
        ("points.element", "Cannot drop 'points.element': it is the element of an array"),
        ("m2.key.j", "Cannot change 'm2.key.j': map keys cannot change"),
        ("m2.value", "Cannot drop 'm2.value': it is the value of a map"),
    ],
)
def test_drop_structural_fields_is_rejected(base: Schema, path: str, message: str) -> None:
    u = SchemaUpdate(base)
    with pytest.raises(SchemaEvolutionError) as exc:
        u.drop_column(path)
    assert exc.value.message == message
    assert exc.value.path == path
    assert u.apply() == base


def test_emptying_a_struct_is_rejected(base: Schema) -> None:
    u = SchemaUpdate(base).drop_column("loc.lat")
    with pytest.raises(SchemaEvolutionError) as exc:
        u.drop_column("loc.lon")
    assert exc.value.message == (
        "Cannot drop 'loc.lon': it is the last field of struct 'loc', which cannot be left empty"
    )
    assert exc.value.hint == "drop the struct column itself instead"
    assert children(u.apply(), "loc") == [("lon", 5)]
    # Adding a field first makes room.
    after = SchemaUpdate(base).add_column("loc.alt", "int").drop_column("loc.lat") \
        .drop_column("loc.lon").apply()
    assert children(after, "loc") == [("alt", 22)]


def test_emptying_an_element_struct_is_rejected(base: Schema) -> None:
    u = SchemaUpdate(base).drop_column("points.x")
    with pytest.raises(SchemaEvolutionError, match=r"last field of struct 'points\.element'"):
        u.drop_column("points.element.y")


def test_emptying_a_struct_built_directly_is_rejected_at_apply() -> None:
    s = Schema((NestedField(1, "a", INT), NestedField(2, "s", StructType(()))))
    with pytest.raises(SchemaEvolutionError, match="Cannot leave struct 's' empty"):
        SchemaUpdate(s).add_column("b", "int").apply()


def test_dropping_every_column_is_rejected() -> None:
    s = Schema.from_ddl("a int, b int")
    u = SchemaUpdate(s).drop_column("a")
    with pytest.raises(SchemaEvolutionError) as exc:
        u.drop_column("b")
    assert exc.value.message == "Cannot drop 'b': it is the last column of the table"
    assert u.apply().column_names == ["b"]


def test_drop_missing_column_suggests_the_closest(base: Schema) -> None:
    with pytest.raises(ColumnNotFoundError) as exc:
        SchemaUpdate(base).drop_column("loc.lag")
    assert exc.value.message == "Column not found: 'loc.lag'"
    assert exc.value.suggestion == "loc.lat"


# ================================================================================== rename
def test_rename_top_level_and_nested_keeps_ids(base: Schema) -> None:
    u = (
        SchemaUpdate(base)
        .rename_column("name", "full_name")
        .rename_column("loc.lat", "latitude")
        .rename_column("points.element.x", "X")
        .rename_column("members.a", "alpha")
    )
    after = u.apply()
    assert [(p, i) for p, i in layout(after) if i in (2, 4, 8, 13)] == [
        ("full_name", 2), ("loc.latitude", 4), ("points.element.X", 8),
        ("members.value.alpha", 13),
    ]
    assert str(u.operations[0]) == "rename name (id 2): ('name', 'full_name')"


def test_rename_swap(base: Schema) -> None:
    after = SchemaUpdate(base).rename_column("id", "name").rename_column("name", "id").apply()
    assert children(after)[:2] == [("name", 1), ("id", 2)]
    after = (
        SchemaUpdate(base).rename_column("loc.lat", "lon").rename_column("loc.lon", "lat")
        .apply()
    )
    assert children(after, "loc") == [("lon", 4), ("lat", 5)]


def test_rename_through_a_temporary_name(base: Schema) -> None:
    after = (
        SchemaUpdate(base)
        .rename_column("id", "tmp")
        .rename_column("name", "id")
        .rename_column("tmp", "name")
        .apply()
    )
    assert children(after)[:2] == [("name", 1), ("id", 2)]


def test_rename_onto_a_name_dropped_in_the_same_update(base: Schema) -> None:
    after = SchemaUpdate(base).drop_column("name").rename_column("id", "NAME").apply()
    assert children(after)[:2] == [("NAME", 1), ("loc", 3)]


def test_rename_to_another_case_of_itself(base: Schema) -> None:
    after = SchemaUpdate(base).rename_column("name", "NAME").apply()
    assert children(after)[1] == ("NAME", 2)


def test_rename_staged_column_then_address_it_by_the_new_name(base: Schema) -> None:
    after = (
        SchemaUpdate(base)
        .rename_column("loc", "place")
        .add_column("place.alt", "double")
        .rename_column("place.lat", "latitude")
        .apply()
    )
    assert children(after, "place") == [("latitude", 4), ("lon", 5), ("alt", 22)]


@pytest.mark.parametrize(
    ("path", "new"), [("id", "NAME"), ("loc.lat", "LON"), ("points.x", "y"), ("members.a", "b")]
)
def test_rename_onto_an_existing_name_is_rejected(base: Schema, path: str, new: str) -> None:
    with pytest.raises(SchemaEvolutionError) as exc:
        SchemaUpdate(base).rename_column(path, new).apply()
    assert exc.value.message.startswith("Cannot rename a column to ")
    assert exc.value.message.endswith("exists there (names are case-insensitive)")


@pytest.mark.parametrize(
    ("path", "new", "message"),
    [
        ("members.key", "k", "Cannot rename 'members.key': it is the key of a map"),
        ("tags.element", "e", "Cannot rename 'tags.element': it is the element of an array"),
        ("name", "", "Cannot rename 'name' to an empty name"),
        ("name", "  ", "Cannot rename 'name' to an empty name"),
    ],
)
def test_rename_rejections(base: Schema, path: str, new: str, message: str) -> None:
    with pytest.raises(SchemaEvolutionError) as exc:
        SchemaUpdate(base).rename_column(path, new)
    assert exc.value.message == message


def test_rename_missing(base: Schema) -> None:
    with pytest.raises(ColumnNotFoundError, match="did you mean 'name'"):
        SchemaUpdate(base).rename_column("nmae", "x")


# ============================================================================= change type
def test_change_type_keeps_id_position_and_converts_defaults() -> None:
    s = Schema.from_ddl("a int default 5, b string, c struct<d:int>, e date default "
                        "'2020-01-02', f array<int>, g map<string,float>")
    after = (
        SchemaUpdate(s)
        .update_column_type("a", "decimal(12,2)")
        .update_column_type("c.d", BIGINT)
        .update_column_type("e", "string")
        .update_column_type("f.element", "long")
        .update_column_type("g.value", "double")
        .apply()
    )
    assert layout(after) == layout(s)
    assert after.find("a") == NestedField(1, "a", DecimalType(12, 2), True,
                                          decimal.Decimal("5.00"), decimal.Decimal("5.00"))
    assert after.find("c.d").type == BIGINT
    assert after.find("e") == NestedField(5, "e", STRING, True, "2020-01-02", "2020-01-02")
    assert str(after.find("f").type) == "array<bigint>"
    assert str(after.find("g").type) == "map<string,double>"


def test_change_type_twice_in_one_update() -> None:
    s = Schema.from_ddl("a tinyint")
    after = SchemaUpdate(s).update_column_type("a", "smallint").update_column_type(
        "a", "bigint").apply()
    assert after.find("a") == NestedField(1, "a", BIGINT)
    with pytest.raises(SchemaEvolutionError, match="a: bigint -> smallint"):
        SchemaUpdate(s).update_column_type("a", "bigint").update_column_type("a", "smallint")


def test_change_type_with_a_default_that_does_not_convert_is_rejected() -> None:
    s = Schema.from_ddl("a string default 'abc'")
    u = SchemaUpdate(s)
    with pytest.raises(InvalidDefaultError) as exc:
        u.update_column_type("a", "date")
    assert exc.value.message.startswith("Default 'abc' does not convert to date for column 'a'")
    assert u.apply() == s


def test_change_type_to_the_same_type_is_no_change(base: Schema) -> None:
    u = SchemaUpdate(base).update_column_type("id", "long")
    assert not u and u.apply() == base


@pytest.mark.parametrize(
    ("path", "new", "message"),
    [
        ("id", "int", "Cannot change column type: id: bigint -> int"),
        ("m2.key.k", "bigint", "Cannot change 'm2.key.k': map keys cannot change"),
        ("members.key", "binary", "Cannot change 'members.key': map keys cannot change"),
        ("loc", "struct<lat:double,lon:double,alt:double>",
         "(nested types change through their fields, not as a whole)"),
        ("tags", "array<int>", "Cannot change column type: tags: array<string> -> array<int>"),
        ("name", "boolean", "Cannot change column type: name: string -> boolean"),
    ],
)
def test_change_type_rejections(base: Schema, path: str, new: str, message: str) -> None:
    with pytest.raises(SchemaEvolutionError) as exc:
        SchemaUpdate(base).update_column_type(path, new)
    assert message in exc.value.message


def test_rewrite_type_changes_allow_any_primitive_change() -> None:
    s = Schema.from_ddl("a double default 2.0, b struct<c:int>")
    after = SchemaUpdate(s, allow_rewrite_type_changes=True).update_column_type("a", INT).apply()
    assert after.find("a") == NestedField(1, "a", INT, True, 2, 2)
    u = SchemaUpdate(s, allow_rewrite_type_changes=True)
    with pytest.raises(SchemaEvolutionError, match="nested types"):
        u.update_column_type("b", "string")


# ============================================================================= nullability
def test_drop_not_null(base: Schema) -> None:
    u = SchemaUpdate(base).make_optional("id")
    assert base.find("id").nullable is False
    assert u.apply().find("id") == NestedField(1, "id", BIGINT, True)
    assert [str(op) for op in u.operations] == ["nullability id (id 1): True"]


def test_set_not_null_needs_the_engine(base: Schema) -> None:
    u = SchemaUpdate(base)
    with pytest.raises(SchemaEvolutionError) as exc:
        u.require("name")
    assert exc.value.message == (
        "Cannot SET NOT NULL on 'name' here: existing rows may hold nulls"
    )
    assert (exc.value.path, exc.value.field_id) == ("name", 2)
    assert u.apply() == base
    after = SchemaUpdate(base, allow_set_not_null=True).set_nullable("name", False) \
        .set_nullable("loc.lat", False).apply()
    assert after.find("name") == NestedField(2, "name", STRING, False)
    assert after.find("loc.lat").nullable is False


def test_nullability_unchanged_is_no_change(base: Schema) -> None:
    u = SchemaUpdate(base).set_nullable("id", False).set_nullable("name", True)
    assert not u and u.apply() == base


def test_nullability_of_elements_and_map_values(base: Schema) -> None:
    s = Schema.from_ddl("a array<int>, m map<string,int>")
    s = SchemaUpdate(s, allow_set_not_null=True).require("a.element").require("m.value").apply()
    assert (s.find("a.element").nullable, s.find("m.value").nullable) == (False, False)
    back = SchemaUpdate(s).make_optional("a.element").make_optional("m.value").apply()
    assert (back.find("a.element").nullable, back.find("m.value").nullable) == (True, True)
    with pytest.raises(SchemaEvolutionError, match="map keys cannot change"):
        SchemaUpdate(s).make_optional("m.key")


# ================================================================================ defaults
def test_set_and_drop_write_default() -> None:
    s = Schema.from_ddl("a int default 1, b string, c struct<d:date>")
    u = (
        SchemaUpdate(s)
        .set_default("a", "7")
        .set_default("b", "x")
        .set_default("c.d", dt.date(2020, 1, 1))
    )
    after = u.apply()
    assert after.find("a") == NestedField(1, "a", INT, True, 1, 7)
    assert after.find("b") == NestedField(2, "b", STRING, True, None, "x")
    assert after.find("c.d").write_default == dt.date(2020, 1, 1)
    assert [str(op) for op in u.operations] == [
        "default a (id 1): 7", "default b (id 2): x", "default c.d (id 4): 2020-01-01",
    ]
    again = SchemaUpdate(after).drop_default("a").set_default("b", None).apply()
    assert again.find("a") == NestedField(1, "a", INT, True, 1, None)
    assert again.find("b") == NestedField(2, "b", STRING)


@pytest.mark.parametrize(
    ("path", "value", "error", "message"),
    [
        ("id", "x", InvalidDefaultError, "Default 'x' does not convert to bigint for column 'id'"),
        ("loc.lat", "north", InvalidDefaultError, "Default 'north' does not convert to double"),
        ("loc", "x", SchemaEvolutionError,
         "Cannot set a default on 'loc': struct<lat:double,lon:double> columns take no default"),
        ("tags.element", "x", SchemaEvolutionError,
         "Cannot set a default on 'tags.element': it is the element of an array"),
        ("members.value", "x", SchemaEvolutionError,
         "Cannot set a default on 'members.value': it is the value of a map"),
        ("members.key", "x", SchemaEvolutionError,
         "Cannot set a default on 'members.key': it is the key of a map"),
        ("m2.key.k", 1, SchemaEvolutionError, "Cannot change 'm2.key.k': map keys cannot change"),
        ("nope", 1, ColumnNotFoundError, "Column not found: 'nope'"),
    ],
)
def test_set_default_rejections(
    base: Schema, path: str, value: object, error: type, message: str
) -> None:
    u = SchemaUpdate(base)
    with pytest.raises(error) as exc:
        u.set_default(path, value)
    assert type(exc.value) is error
    assert exc.value.message.startswith(message)
    assert exc.value.hint, "each refusal says what to do instead"
    assert u.apply() == base


def test_drop_default_of_an_element_is_rejected(base: Schema) -> None:
    with pytest.raises(SchemaEvolutionError,
                       match=r"Cannot drop the default of 'tags\.element': it is the element"):
        SchemaUpdate(base).drop_default("tags.element")


# ================================================================================ comments
def test_set_and_remove_comment(base: Schema) -> None:
    after = SchemaUpdate(base).set_comment("id", "key").set_comment("members.a", "alpha") \
        .set_comment("m2.key.k", "part of the key").apply()
    assert after.find("id").comment == "key"
    assert after.find("members.value.a").comment == "alpha"
    assert after.find("m2.key.k").comment == "part of the key"
    again = SchemaUpdate(after).set_comment("id", None).apply()
    assert again.find("id").comment is None


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("tags.element", "Cannot comment on 'tags.element': it is the element of an array"),
        ("members.key", "Cannot comment on 'members.key': it is the key of a map"),
        ("members.value", "Cannot comment on 'members.value': it is the value of a map"),
    ],
)
def test_comments_on_elements_keys_and_values_are_rejected(
    base: Schema, path: str, message: str
) -> None:
    """The JSON and Spark forms have no place for them, so they would be lost on commit."""
    with pytest.raises(SchemaEvolutionError) as exc:
        SchemaUpdate(base).set_comment(path, "c")
    assert exc.value.message == message


# =================================================================================== moves
@pytest.mark.parametrize(
    ("call", "parent", "order"),
    [
        (lambda u: u.move_first("m2"), None,
         ["m2", "id", "name", "loc", "points", "members", "tags"]),
        (lambda u: u.move_after("id", "loc"), None,
         ["name", "loc", "id", "points", "members", "tags", "m2"]),
        (lambda u: u.move_before("tags", "NAME"), None,
         ["id", "tags", "name", "loc", "points", "members", "m2"]),
        (lambda u: u.move_after("id", "m2"), None,
         ["name", "loc", "points", "members", "tags", "m2", "id"]),
        (lambda u: u.move_first("loc.lon"), "loc", ["lon", "lat"]),
        (lambda u: u.move_before("loc.lon", "lat"), "loc", ["lon", "lat"]),
        (lambda u: u.move_after("loc.lat", "loc.lon"), "loc", ["lon", "lat"]),
        (lambda u: u.move_after("loc.lat", "lon"), "loc", ["lon", "lat"]),
        (lambda u: u.move_after("points.element.x", "y"), "points.element", ["y", "x"]),
        (lambda u: u.move_first("members.b"), "members.value", ["b", "a"]),
        (lambda u: u.move_after("loc.lon", "lat"), "loc", ["lat", "lon"]),
    ],
)
def test_moves_keep_ids(base: Schema, call: Callable, parent: str | None,
                        order: list[str]) -> None:
    after = call(SchemaUpdate(base)).apply()
    assert [n for n, _ in children(after, parent)] == order
    assert sorted(layout(after), key=lambda x: x[1]) == sorted(BASE_LAYOUT, key=lambda x: x[1])


def test_moves_apply_in_order(base: Schema) -> None:
    after = (
        SchemaUpdate(base)
        .move_first("tags")
        .move_after("id", "tags")
        .move_before("m2", "id")
        .add_column("z", "int", after="tags")
        .apply()
    )
    assert after.column_names == ["tags", "z", "m2", "id", "name", "loc", "points", "members"]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda u: u.move_after("name", "name"), SchemaEvolutionError,
         "Cannot move 'name' after itself"),
        (lambda u: u.move_before("loc.lat", "LAT"), SchemaEvolutionError,
         "Cannot move 'loc.lat' before itself"),
        (lambda u: u.move_after("id", "loc.lat"), SchemaEvolutionError,
         "Cannot move 'id' after 'loc.lat': they are in different structs"),
        (lambda u: u.move_before("loc.lat", "points.x"), SchemaEvolutionError,
         "Cannot move 'loc.lat' before 'points.x': they are in different structs"),
        (lambda u: u.move_after("loc.lat", "id"), ColumnNotFoundError,
         "Column not found beside 'loc.lat': 'id'"),
        (lambda u: u.move_first("tags.element"), SchemaEvolutionError,
         "Cannot move 'tags.element': it is the element of an array"),
        (lambda u: u.move_first("members.value"), SchemaEvolutionError,
         "Cannot move 'members.value': it is the value of a map"),
        (lambda u: u.move_first("nope"), ColumnNotFoundError, "Column not found: 'nope'"),
        (lambda u: u.move_after("id", "nope"), ColumnNotFoundError,
         "Column not found beside 'id': 'nope'"),
    ],
)
def test_move_rejections(base: Schema, call: Callable, error: type, message: str) -> None:
    u = SchemaUpdate(base)
    with pytest.raises(error) as exc:
        call(u)
    assert type(exc.value) is error
    assert exc.value.message == message
    assert u.apply() == base


# =============================================================== conflicts in one update
@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        (lambda u: u.set_comment("name", "x"), lambda u: u.drop_column("name"),
         "Cannot drop 'name': it has other changes in this update"),
        (lambda u: u.rename_column("name", "n2"), lambda u: u.drop_column("name"),
         "Cannot drop 'name': it has other changes in this update"),
        (lambda u: u.update_column_type("loc.lat", "string"), lambda u: u.drop_column("loc"),
         "Cannot drop 'loc': it has other changes in this update"),
        (lambda u: u.add_column("loc.alt", "int"), lambda u: u.drop_column("loc"),
         "Cannot drop 'loc': it has other changes in this update"),
        (lambda u: u.move_first("name"), lambda u: u.drop_column("name"),
         "Cannot drop 'name': it has other changes in this update"),
        (lambda u: u.add_column("z", "int"), lambda u: u.drop_column("z"),
         "Cannot drop 'z': it is added in this update"),
        (lambda u: u.move_after("id", "name"), lambda u: u.drop_column("name"),
         "Cannot drop 'name': another change in this update places a column before or after it"),
        (lambda u: u.add_column("z", "int", before="tags"), lambda u: u.drop_column("tags"),
         "Cannot drop 'tags': another change in this update places a column before or after it"),
        (lambda u: u.drop_column("name"), lambda u: u.rename_column("name", "q"),
         "Cannot change column 'name': it is dropped in this update"),
        (lambda u: u.drop_column("name"), lambda u: u.drop_column("name"),
         "Cannot change column 'name': it is dropped in this update"),
        (lambda u: u.drop_column("name"), lambda u: u.set_default("name", "x"),
         "Cannot change column 'name': it is dropped in this update"),
        (lambda u: u.drop_column("loc"), lambda u: u.update_column_type("loc.lat", "string"),
         "Cannot change column 'loc.lat': it is dropped in this update"),
        (lambda u: u.drop_column("loc"), lambda u: u.add_column("loc.alt", "int"),
         "Cannot change column 'loc': it is dropped in this update"),
        (lambda u: u.drop_column("id"), lambda u: u.move_first("id"),
         "Cannot change column 'id': it is dropped in this update"),
    ],
)
def test_conflicting_changes_to_one_column(
    base: Schema, first: Callable, second: Callable, message: str
) -> None:
    u = first(SchemaUpdate(base))
    before, ops = u.apply(), u.operations
    with pytest.raises(SchemaEvolutionError) as exc:
        second(u)
    assert exc.value.message == message
    assert u.apply() == before
    assert u.operations == ops


def test_moving_after_a_dropped_column_is_column_not_found(base: Schema) -> None:
    u = SchemaUpdate(base).drop_column("name")
    with pytest.raises(ColumnNotFoundError, match="Column not found beside 'id': 'name'"):
        u.move_after("id", "name")


def test_drop_child_then_parent_drops_both(base: Schema) -> None:
    after = SchemaUpdate(base).drop_column("loc.lat").drop_column("loc").apply()
    assert "loc" not in after.column_names
    assert not after.has_id(4) and not after.has_id(5)


# ============================================================================== atomicity
BAD_CALLS: list[Callable[[SchemaUpdate], object]] = [
    lambda u: u.add_column("z", "int", nullable=False),
    lambda u: u.add_column("nope.z", "int"),
    lambda u: u.add_column("q", "struct<a:int>", default=1),
    lambda u: u.add_column("q", "int", after="nope"),
    lambda u: u.add_column("q", "not a type"),
    lambda u: u.drop_column("tags.element"),
    lambda u: u.drop_column("nope"),
    lambda u: u.rename_column("members.key", "k"),
    lambda u: u.update_column_type("id", "int"),
    lambda u: u.update_column_type("m2.key.k", "bigint"),
    lambda u: u.require("name"),
    lambda u: u.set_default("id", "x"),
    lambda u: u.set_default("loc", 1),
    lambda u: u.set_comment("tags.element", "c"),
    lambda u: u.move_after("id", "id"),
    lambda u: u.move_after("id", "loc.lat"),
    lambda u: u.drop_column("loc.lat"),  # loc.lon is dropped below: would empty loc
]


def test_rejected_calls_leave_the_update_unchanged(base: Schema) -> None:
    u = (
        SchemaUpdate(base)
        .add_column("z", "int", default=1, first=True)
        .rename_column("name", "full_name")
        .drop_column("loc.lon")
        .move_after("tags", "id")
    )
    staged, ops = u.apply(), u.operations
    for call in BAD_CALLS:
        with pytest.raises(EvoError):
            call(u)
        assert u.apply() == staged
        assert u.operations == ops
    # Later valid calls still apply cleanly, with the next free ID.
    after = u.add_column("w", "string").set_comment("z", "new").apply()
    assert after.column_names == [
        "z", "id", "tags", "full_name", "loc", "points", "members", "m2", "w"
    ]
    assert after.find("z") == NestedField(22, "z", INT, True, 1, 1, "new")
    assert after.find("w").id == 23
    assert children(after, "loc") == [("lat", 4)]


def test_an_update_that_fails_to_apply_stores_nothing(base: Schema) -> None:
    u = SchemaUpdate(base).add_column("z", "int").rename_column("id", "name")
    with pytest.raises(SchemaEvolutionError):
        u.apply()
    with pytest.raises(SchemaEvolutionError):
        u.apply()
    assert layout(base) == BASE_LAYOUT
    # Freeing the name in the same update makes it apply.
    assert u.rename_column("name", "id").apply().column_names[:2] == ["name", "id"]


# ================================================================================= apply
def test_apply_is_repeatable_and_takes_a_version(base: Schema) -> None:
    u = SchemaUpdate(base).add_column("z", "int")
    a, b = u.apply(), u.apply()
    assert a == b
    assert a.version_id == "00000000000000000"
    c = u.apply(version_id="20250101000000000")
    assert c.version_id == "20250101000000000"
    assert c.fields == a.fields and c.max_column_id == 22


def test_empty_update(base: Schema) -> None:
    u = SchemaUpdate(base)
    assert not u
    assert u.apply() == base
    assert u.only_adds_columns
    assert repr(u) == "SchemaUpdate(base=00000000000000000, no changes)"
    assert u.base is base
    assert not u.preview()


def test_preview_is_the_diff(base: Schema) -> None:
    u = SchemaUpdate(base).add_column("z", "int").rename_column("name", "n").drop_column("tags")
    d = u.preview()
    assert [(c.kind, c.field_id) for c in d] == [("added", 22), ("dropped", 15),
                                                  ("renamed", 2)]
    assert repr(u) == (
        "SchemaUpdate(base=00000000000000000, add z (id 22): int; rename name (id 2): "
        "('name', 'n'); drop tags (id 15))"
    )


def test_max_column_id_above_the_highest_id_is_the_base_for_new_ids() -> None:
    s = Schema((NestedField(3, "a", INT),), max_column_id=10)
    after = SchemaUpdate(s).add_column("b", "struct<c:int>").apply()
    assert layout(after) == [("a", 3), ("b", 11), ("b.c", 12)]
    assert after.max_column_id == 12
    assert SchemaUpdate(s).apply().max_column_id == 10
