"""``Schema``: construction checks, lookups by path and ID, case rules, paths, JSON round trip."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evonb.errors import ColumnNotFoundError, EvoError, SchemaEvolutionError
from evonb.schema import INITIAL_VERSION, ROOT_ID, Schema, format_path, parse_path
from evonb.schema.types import (
    BIGINT,
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    STRING,
    TIMESTAMP,
    DecimalType,
    NestedField,
    StructType,
    array_of,
    map_of,
)
from tests.schema.strategies import names, sample_schema, schemas

DDL = (
    "id bigint not null, name string, loc struct<lat:double,lon:double>, "
    "points array<struct<x:int,y:int>>, members map<string,struct<a:int,b:string>>, "
    "Tags array<string>"
)


@pytest.fixture
def s() -> Schema:
    return Schema.from_ddl(DDL)


# ---------------------------------------------------------------------------- construction
def test_new_schema_ids_version_and_max(s: Schema) -> None:
    assert s.version_id == INITIAL_VERSION == "00000000000000000"
    assert s.max_column_id == 16
    assert list(zip(s.paths(), s.field_ids(), strict=True)) == [
        ("id", 1), ("name", 2), ("loc", 3), ("loc.lat", 4), ("loc.lon", 5),
        ("points", 6), ("points.element", 7), ("points.element.x", 8),
        ("points.element.y", 9), ("members", 10), ("members.key", 11),
        ("members.value", 12), ("members.value.a", 13), ("members.value.b", 14),
        ("Tags", 15), ("Tags.element", 16),
    ]
    assert s.column_names == ["id", "name", "loc", "points", "members", "Tags"]
    assert len(s) == 6
    assert [f.name for f in s] == s.column_names
    assert s.find("id") == NestedField(1, "id", BIGINT, False)
    assert s.struct == StructType(s.fields)
    assert repr(s) == (
        "Schema(version_id='00000000000000000', max_column_id=16, fields='struct<id:bigint,"
        "name:string,loc:struct<lat:double,lon:double>,points:array<struct<x:int,y:int>>,"
        "members:map<string,struct<a:int,b:string>>,Tags:array<string>>')"
    )


def test_empty_schema() -> None:
    e = Schema()
    assert (e.fields, e.version_id, e.max_column_id) == ((), INITIAL_VERSION, 0)
    assert e.paths() == [] and e.field_ids() == []


def test_max_column_id_is_at_least_the_highest_id() -> None:
    f = NestedField(7, "a", INT)
    assert Schema((f,)).max_column_id == 7
    assert Schema((f,), max_column_id=3).max_column_id == 7
    assert Schema((f,), max_column_id=12).max_column_id == 12


def test_fields_may_be_a_list() -> None:
    sch = Schema([NestedField(1, "a", INT)])  # type: ignore[arg-type]
    assert sch.fields == (NestedField(1, "a", INT),)


def test_duplicate_ids_are_rejected() -> None:
    with pytest.raises(SchemaEvolutionError, match=r"Duplicate field IDs in schema: \[2\]"):
        Schema((NestedField(2, "a", INT),
                NestedField(1, "b", StructType((NestedField(2, "c", INT),)))))


@pytest.mark.parametrize("bad", [0, -1])
def test_ids_must_be_positive(bad: int) -> None:
    with pytest.raises(SchemaEvolutionError, match="Field IDs must be positive integers"):
        Schema((NestedField(bad, "a", INT),))


def test_empty_names_are_rejected() -> None:
    with pytest.raises(SchemaEvolutionError, match="Empty column name in table"):
        Schema((NestedField(1, "", INT),))


def _dup(where_type) -> Schema:
    return Schema((NestedField(1, "x", where_type),))


CASE_DUPES = StructType((NestedField(10, "a", INT), NestedField(11, "A", INT)))


@pytest.mark.parametrize(
    ("build", "where"),
    [
        (lambda: Schema((NestedField(1, "Name", INT), NestedField(2, "NAME", INT))), "table"),
        (lambda: _dup(CASE_DUPES), "x"),
        (lambda: _dup(array_of(CASE_DUPES, element_id=2)), "x.element"),
        (lambda: _dup(map_of(STRING, CASE_DUPES, key_id=2, value_id=3)), "x.value"),
        (lambda: _dup(map_of(CASE_DUPES, INT, key_id=2, value_id=3)), "x.key"),
        (lambda: _dup(array_of(array_of(CASE_DUPES, element_id=3), element_id=2)),
         "x.element.element"),
        (lambda: _dup(map_of(STRING, array_of(CASE_DUPES, element_id=4), key_id=2, value_id=3)),
         "x.value.element"),
        (lambda: _dup(StructType((NestedField(2, "s", array_of(CASE_DUPES, element_id=3)),))),
         "x.s.element"),
    ],
)
def test_names_differing_only_by_case_are_rejected_at_any_depth(build, where: str) -> None:
    with pytest.raises(SchemaEvolutionError) as exc:
        build()
    assert "names are case-insensitive" in exc.value.message
    assert exc.value.message.startswith(f"Duplicate column name in {where}: ")


def test_same_name_in_different_structs_is_fine() -> None:
    sch = Schema.from_ddl("a struct<a:int>, b struct<a:int, b:array<struct<a:int>>>")
    assert sch.paths() == ["a", "a.a", "b", "b.a", "b.b", "b.b.element", "b.b.element.a"]


# ----------------------------------------------------------------------------- lookups
@pytest.mark.parametrize(
    ("path", "fid", "name"),
    [
        ("id", 1, "id"),
        ("ID", 1, "id"),
        ("loc.lat", 4, "lat"),
        ("LOC.Lat", 4, "lat"),
        ("points", 6, "points"),
        ("points.element", 7, "element"),
        ("points.element.x", 8, "x"),
        ("points.x", 8, "x"),
        ("POINTS.ELEMENT.Y", 9, "y"),
        ("members.key", 11, "key"),
        ("members.value", 12, "value"),
        ("members.value.a", 13, "a"),
        ("members.b", 14, "b"),
        ("Members.Value.B", 14, "b"),
        ("tags", 15, "Tags"),
        ("tags.element", 16, "element"),
        (("loc", "lat"), 4, "lat"),
        (("MEMBERS", "value", "a"), 13, "a"),
        (" loc.lat ", 4, "lat"),
    ],
)
def test_find_by_path_is_case_insensitive_and_keeps_stored_case(
    s: Schema, path, fid: int, name: str
) -> None:
    assert s.find_id(path) == fid
    f = s.find(path)
    assert (f.id, f.name) == (fid, name)
    assert s.has(path)


@pytest.mark.parametrize(
    ("path", "suggestion"),
    [
        ("loc.lag", "loc.lat"),
        ("nme", "name"),
        ("NAEM", "name"),
        ("points.element.z", "points.element.y"),
        ("tags.element.x", "Tags.element"),
        ("members.kee", "members.key"),
        ("id.x", "id"),
        ("qqqqqqqqqq", None),
    ],
)
def test_missing_paths_raise_column_not_found_with_the_closest_name(
    s: Schema, path: str, suggestion: str | None
) -> None:
    assert not s.has(path)
    with pytest.raises(ColumnNotFoundError) as exc:
        s.find(path)
    assert exc.value.path == path
    assert exc.value.message == f"Column not found: {path!r}"
    assert exc.value.suggestion == suggestion
    if suggestion is not None:
        assert exc.value.hint == f"did you mean {suggestion!r}?"
    else:
        assert exc.value.hint.startswith("existing columns: id, name, loc, loc.lat")


@pytest.mark.parametrize("path", ["", "   ", "a..b", ".a", "a.", "`a", (), ("a", ""), 5])
def test_malformed_paths_raise_column_not_found(s: Schema, path) -> None:
    with pytest.raises(ColumnNotFoundError):
        s.find(path)
    assert not s.has(path)


def test_lookups_by_id(s: Schema) -> None:
    assert s.field_by_id(13).name == "a"
    assert s.path_of(13) == "members.value.a"
    assert s.parent_of(13) == 12
    assert s.parent_of(1) == ROOT_ID == -1
    assert s.parent_of(7) == 6
    info = s.info(8)
    assert (info.field.name, info.path, info.parent_id, info.dotted) == (
        "x", ("points", "element", "x"), 7, "points.element.x"
    )
    assert s.has_id(16) and not s.has_id(17)
    assert [f.id for f in s.children_of(ROOT_ID)] == [1, 2, 3, 6, 10, 15]
    assert [f.id for f in s.children_of(3)] == [4, 5]
    assert [f.id for f in s.children_of(10)] == [11, 12]
    assert [f.id for f in s.children_of(12)] == [13, 14]
    assert s.children_of(1) == ()
    with pytest.raises(ColumnNotFoundError) as exc:
        s.field_by_id(99)
    assert exc.value.message == "Column not found with that ID: 'id 99'"


def test_replace_and_with_version(s: Schema) -> None:
    t = s.with_version("20240101000000000")
    assert (t.version_id, t.fields, t.max_column_id) == ("20240101000000000", s.fields, 16)
    assert s.version_id == INITIAL_VERSION
    assert s.replace(max_column_id=40).max_column_id == 40
    assert t != s
    assert s.with_version(INITIAL_VERSION) == s
    assert hash(s.with_version(INITIAL_VERSION)) == hash(s)


# ------------------------------------------------------------------------ dotted names
DOTTED = Schema((
    NestedField(1, "a.b", INT),
    NestedField(2, "a", StructType((NestedField(3, "b", STRING), NestedField(4, "c.d", INT)))),
    NestedField(5, "x`y", INT),
    NestedField(6, " pad ", INT),
))


@pytest.mark.parametrize(
    ("path", "fid"),
    [
        (("a.b",), 1),
        ("`a.b`", 1),
        ("a.b", 3),
        (("a", "b"), 3),
        ("a.`c.d`", 4),
        (("a", "c.d"), 4),
        ("`a`.`c.d`", 4),
        ("`x``y`", 5),
        (("x`y",), 5),
        ("` pad `", 6),
        ((" pad ",), 6),
        ("`A.B`", 1),
    ],
)
def test_names_with_dots_are_addressable(path, fid: int) -> None:
    assert DOTTED.find_id(path) == fid


def test_paths_backquote_names_that_need_it() -> None:
    assert DOTTED.paths() == ["`a.b`", "a", "a.b", "a.`c.d`", "`x``y`", "` pad `"]
    for path, fid in zip(DOTTED.paths(), DOTTED.field_ids(), strict=True):
        assert DOTTED.find_id(path) == fid


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("a", ("a",)),
        ("a.b.c", ("a", "b", "c")),
        ("`a.b`.c", ("a.b", "c")),
        ("`a``b`", ("a`b",)),
        ("a.`b c`", ("a", "b c")),
        ("  a.b  ", ("a", "b")),
        (("x.y", "z"), ("x.y", "z")),
    ],
)
def test_parse_path(text, parsed: tuple[str, ...]) -> None:
    assert parse_path(text) == parsed


@pytest.mark.parametrize("bad", ["", "a..b", "`a", "a.`b", ".", (), ("",), ("a", 1)])
def test_parse_path_rejects(bad) -> None:
    with pytest.raises(ColumnNotFoundError):
        parse_path(bad)


@settings(max_examples=200, deadline=None)
@given(st.lists(names(), min_size=1, max_size=4).map(tuple))
def test_format_path_parses_back(parts: tuple[str, ...]) -> None:
    assert parse_path(format_path(parts)) == parts


# ------------------------------------------------------------------------------- JSON
def test_json_document_is_exact() -> None:
    sch = Schema(
        (
            NestedField(1, "id", BIGINT, False, comment="key"),
            NestedField(2, "tags", array_of(STRING, element_id=3, contains_null=False)),
            NestedField(4, "m", map_of(STRING, DOUBLE, key_id=5, value_id=6)),
            NestedField(7, "p", StructType((NestedField(8, "x", DecimalType(10, 2),
                                                        default=decimal.Decimal("1.50")),))),
            NestedField(9, "d", DATE, default=dt.date(2020, 2, 29),
                        write_default=dt.date(2021, 1, 1)),
        ),
        version_id="20240102030405678",
        max_column_id=12,
    )
    assert json.loads(sch.to_json()) == {
        "format-version": 1,
        "type": "struct",
        "version-id": "20240102030405678",
        "max-column-id": 12,
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "bigint", "doc": "key"},
            {"id": 2, "name": "tags", "required": False,
             "type": {"type": "array", "element-id": 3, "element": "string",
                      "element-required": True}},
            {"id": 4, "name": "m", "required": False,
             "type": {"type": "map", "key-id": 5, "key": "string", "value-id": 6,
                      "value": "double", "value-required": False}},
            {"id": 7, "name": "p", "required": False,
             "type": {"type": "struct", "fields": [
                 {"id": 8, "name": "x", "required": False, "type": "decimal(10,2)",
                  "default": "1.50"}]}},
            {"id": 9, "name": "d", "required": False, "type": "date",
             "default": "2020-02-29", "write-default": "2021-01-01"},
        ],
    }
    assert Schema.from_json(sch.to_json()) == sch
    assert Schema.from_json(sch.to_json(indent=2).encode()) == sch
    assert Schema.from_dict(sch.to_dict()) == sch
    assert sch.to_json(indent=1).startswith('{\n "format-version": 1,')


def test_json_round_trip_of_the_sample_schema_keeps_every_detail() -> None:
    sch = sample_schema()
    back = Schema.from_json(sch.to_json())
    assert back == sch
    assert back.max_column_id == 40
    assert back.version_id == "20240102030405678"
    for a, b in zip(sch.struct.fields, back.struct.fields, strict=True):
        assert (a.default, a.write_default, a.comment) == (b.default, b.write_default, b.comment)
        assert type(a.default) is type(b.default)
    assert back.find("score").write_default == float("inf")
    assert back.find("blob").default == b"\x0a\xff"
    assert back.find("at").default == dt.datetime(2020, 1, 2, 3, 4, 5, 6)


def test_json_keeps_odd_names_and_unicode() -> None:
    sch = Schema((NestedField(1, "ünï \"q\" `a.b`", STRING, default="✓ \n", comment="ß"),
                  NestedField(2, "f", FLOAT, default=float("-inf")),
                  NestedField(3, "b", BINARY, default=b""),
                  NestedField(4, "t", TIMESTAMP, write_default=dt.datetime(1, 1, 1))))
    text = sch.to_json()
    assert "ünï" in text  # not escaped to \u sequences
    assert Schema.from_json(text) == sch


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "Schema JSON does not parse"),
        ("[1, 2]", "Schema JSON must be an object"),
        ('{"format-version": 2, "fields": [], "version-id": "0", "max-column-id": 0}',
         "newer than this evonb reads"),
        ('{"fields": []}', "Not a valid evonb schema document"),
        ('{"fields": [{"id": 1, "name": "a", "type": "varchar"}], "version-id": "0", '
         '"max-column-id": 1}', "unknown type 'varchar'"),
        ('{"fields": [{"id": 1, "name": "a", "type": {"type": "set"}}], "version-id": "0", '
         '"max-column-id": 1}', "unknown type 'set'"),
        ('{"fields": [{"id": 1, "name": "a", "type": "decimal(5,2)", "default": "abc"}], '
         '"version-id": "0", "max-column-id": 1}', "InvalidOperation"),
        ('{"fields": [{"id": 1, "name": "a", "type": "decimal(5,2)", "default": "1.234"}], '
         '"version-id": "0", "max-column-id": 1}', "more than 2 digits after the point"),
        ('{"fields": [{"id": 1, "name": "a", "type": "int", "default": "x"}], '
         '"version-id": "0", "max-column-id": 1}', "invalid literal for int"),
        ('{"fields": [{"id": 1, "name": "a", "type": "binary", "default": 5}], '
         '"version-id": "0", "max-column-id": 1}', "Not a valid evonb schema document"),
        ('{"fields": 5, "version-id": "0", "max-column-id": 1}', "not iterable"),
        ('{"fields": [], "version-id": "0", "max-column-id": "x"}', "invalid literal for int"),
        ('{"fields": [{"id": 1, "name": "a", "type": "decimal(40,2)"}], "version-id": "0", '
         '"max-column-id": 1}', "decimal precision must be 1..38"),
    ],
)
def test_bad_json_is_a_schema_evolution_error(text: str, message: str) -> None:
    with pytest.raises(SchemaEvolutionError, match=message):
        Schema.from_json(text)


def test_json_with_duplicate_ids_is_rejected() -> None:
    text = ('{"fields": [{"id": 1, "name": "a", "type": "int"}, {"id": 1, "name": "b", '
            '"type": "int"}], "version-id": "0", "max-column-id": 1}')
    with pytest.raises(EvoError, match="Duplicate field IDs"):
        Schema.from_json(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_json_round_trip_of_random_schemas(data: st.DataObject) -> None:
    with decimal.localcontext(prec=80):
        sch = data.draw(schemas(max_depth=3), label="schema")
    back = Schema.from_json(sch.to_json())
    assert back == sch
    assert back.paths() == sch.paths()
    assert back.field_ids() == sch.field_ids()
    assert (back.version_id, back.max_column_id) == (sch.version_id, sch.max_column_id)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_path_of_a_random_schema_finds_its_field(data: st.DataObject) -> None:
    with decimal.localcontext(prec=80):
        sch = data.draw(schemas(max_depth=2), label="schema")
    ids = sch.field_ids()
    assert len(ids) == len(set(ids))
    assert sch.max_column_id >= max(ids)
    for path, fid in zip(sch.paths(), ids, strict=True):
        assert sch.find_id(path) == fid
        assert sch.path_of(fid) == path
        parts = sch.info(fid).path
        assert sch.find_id(parts) == fid
        if all(n.upper().lower() == n.lower() for n in parts):
            assert sch.find_id(tuple(n.upper() for n in parts)) == fid
