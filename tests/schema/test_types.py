"""Types with IDs: simple strings, decimal bounds, nested fields, helpers and the DDL aliases."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from evonb.errors import DDLSyntaxError
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    ELEMENT,
    FLOAT,
    INT,
    KEY,
    PRIMITIVES,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    VALUE,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    array_of,
    map_of,
    same_shape,
    with_children,
)
from evonb.sql import parse_type
from tests.schema.strategies import types

POINT = StructType((NestedField(1, "lat", DOUBLE), NestedField(2, "lon", DOUBLE)))


# ------------------------------------------------------------------------ simple strings
@pytest.mark.parametrize(
    ("t", "text"),
    [
        (BOOLEAN, "boolean"),
        (TINYINT, "tinyint"),
        (SMALLINT, "smallint"),
        (INT, "int"),
        (BIGINT, "bigint"),
        (FLOAT, "float"),
        (DOUBLE, "double"),
        (STRING, "string"),
        (BINARY, "binary"),
        (DATE, "date"),
        (TIMESTAMP, "timestamp"),
        (TIMESTAMP_NTZ, "timestamp_ntz"),
        (DecimalType(10, 2), "decimal(10,2)"),
        (DecimalType(38, 0), "decimal(38,0)"),
        (DecimalType(1, 1), "decimal(1,1)"),
        (array_of(STRING), "array<string>"),
        (POINT, "struct<lat:double,lon:double>"),
        (map_of(STRING, INT), "map<string,int>"),
        (array_of(map_of(STRING, array_of(DecimalType(5, 2)))),
         "array<map<string,array<decimal(5,2)>>>"),
        (StructType((NestedField(1, "p", POINT), NestedField(4, "tags", array_of(STRING)))),
         "struct<p:struct<lat:double,lon:double>,tags:array<string>>"),
        (StructType(()), "struct<>"),
    ],
)
def test_simple_string_is_sparks(t, text: str) -> None:
    assert str(t) == text
    assert t.simple_string() == text


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("a b", "`a b`"),
        ("c.d", "`c.d`"),
        ("x`y", "`x``y`"),
        ("1st", "`1st`"),
        ("_ok_1", "_ok_1"),
        ("Ünï", "Ünï"),
        ("a-b", "`a-b`"),
    ],
)
def test_simple_string_quotes_names_that_are_not_identifiers(name: str, shown: str) -> None:
    t = StructType((NestedField(1, name, INT),))
    assert str(t) == f"struct<{shown}:int>"
    # ... and the DDL reads the quoted form back to the same name.
    assert parse_type(str(t)).fields[0].name == name


def test_primitives_are_the_twelve_singletons() -> None:
    assert list(PRIMITIVES) == [
        "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "string",
        "binary", "date", "timestamp", "timestamp_ntz",
    ]
    for name, t in PRIMITIVES.items():
        assert isinstance(t, PrimitiveType)
        assert t.name == name
        assert repr(t) == name.upper()
        assert t.is_primitive and not t.is_nested
        assert t.children() == ()
    assert PrimitiveType("int") == INT
    assert hash(PrimitiveType("int")) == hash(INT)


@pytest.mark.parametrize(
    ("precision", "scale", "message"),
    [
        (0, 0, "decimal precision must be 1..38, got 0"),
        (39, 0, "decimal precision must be 1..38, got 39"),
        (-1, 0, "decimal precision must be 1..38, got -1"),
        (5, 6, "decimal scale must be 0..precision, got (5,6)"),
        (5, -1, "decimal scale must be 0..precision, got (5,-1)"),
    ],
)
def test_decimal_bounds(precision: int, scale: int, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        DecimalType(precision, scale)
    assert str(exc.value) == message


def test_decimal_is_a_value() -> None:
    assert DecimalType(10, 2) == DecimalType(10, 2)
    assert DecimalType(10, 2) != DecimalType(10, 3)
    assert hash(DecimalType(10, 2)) == hash(DecimalType(10, 2))
    assert repr(DecimalType(10, 2)) == "DecimalType(10, 2)"
    assert DecimalType(10, 2).is_primitive


# ---------------------------------------------------------------------------- nested types
def test_every_nested_field_has_an_id() -> None:
    arr = array_of(POINT, element_id=7, contains_null=False)
    assert arr.element == NestedField(7, ELEMENT, POINT, False)
    assert arr.children() == (arr.element,)
    assert arr.element_type == POINT
    assert arr.is_nested and not arr.is_primitive

    m = map_of(STRING, POINT, key_id=3, value_id=4, value_contains_null=False)
    assert m.key == NestedField(3, KEY, STRING, False)
    assert m.value == NestedField(4, VALUE, POINT, False)
    assert m.children() == (m.key, m.value)
    assert (m.key_type, m.value_type) == (STRING, POINT)
    assert m.is_nested

    assert POINT.children() == POINT.fields
    assert [f.id for f in POINT.fields] == [1, 2]
    assert POINT.is_nested


def test_map_keys_are_never_nullable_and_values_default_to_nullable() -> None:
    m = map_of(INT, STRING)
    assert (m.key.nullable, m.value.nullable) == (False, True)
    assert array_of(INT).element.nullable is True


def test_struct_field_by_name_is_case_insensitive_and_keeps_case() -> None:
    s = StructType((NestedField(1, "Lat", DOUBLE), NestedField(2, "lon", DOUBLE)))
    assert s.field_by_name("LAT") == NestedField(1, "Lat", DOUBLE)
    assert s.field_by_name("lat").name == "Lat"
    assert s.field_by_name("Lon").id == 2
    assert s.field_by_name("alt") is None


def test_struct_takes_a_list_as_a_tuple() -> None:
    s = StructType([NestedField(1, "a", INT)])  # type: ignore[arg-type]
    assert s.fields == (NestedField(1, "a", INT),)
    assert s == StructType((NestedField(1, "a", INT),))
    assert hash(s) == hash(StructType((NestedField(1, "a", INT),)))


def test_types_compare_ids_too() -> None:
    assert array_of(INT, element_id=1) == array_of(INT, element_id=1)
    assert array_of(INT, element_id=1) != array_of(INT, element_id=2)
    assert map_of(STRING, INT, key_id=1, value_id=2) != map_of(STRING, INT, key_id=1, value_id=3)


def test_reprs() -> None:
    assert repr(array_of(INT, element_id=5)) == (
        "ArrayType(NestedField(id=5, name='element', type=INT, nullable=True, default=None, "
        "write_default=None, comment=None))"
    )
    assert repr(StructType((NestedField(1, "a", BIGINT, False),))) == (
        "StructType([NestedField(id=1, name='a', type=BIGINT, nullable=False, default=None, "
        "write_default=None, comment=None)])"
    )


# --------------------------------------------------------------------------- NestedField
def test_nested_field_defaults_and_required() -> None:
    f = NestedField(3, "name", STRING)
    assert (f.nullable, f.default, f.write_default, f.comment) == (True, None, None, None)
    assert f.required is False
    g = NestedField(4, "id", BIGINT, False)
    assert g.required is True


def test_nested_field_replace_is_a_copy() -> None:
    f = NestedField(3, "name", STRING, comment="c")
    g = f.replace(name="full_name", nullable=False)
    assert g == NestedField(3, "full_name", STRING, False, comment="c")
    assert f == NestedField(3, "name", STRING, comment="c")
    with pytest.raises(AttributeError):
        f.name = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("f", "text"),
    [
        (NestedField(1, "id", BIGINT, False), "1: id: required bigint"),
        (NestedField(2, "n", INT, default=5), "2: n: optional int default 5"),
        (NestedField(2, "n", INT, default=5, write_default=5), "2: n: optional int default 5"),
        (NestedField(2, "n", INT, default=5, write_default=6),
         "2: n: optional int default 5 write-default 6"),
        (NestedField(2, "n", INT, write_default=6), "2: n: optional int write-default 6"),
        (NestedField(3, "s", STRING, comment="free text"), "3: s: optional string (free text)"),
        (NestedField(4, "p", POINT), "4: p: optional struct<lat:double,lon:double>"),
    ],
)
def test_nested_field_str(f: NestedField, text: str) -> None:
    assert str(f) == text


# ------------------------------------------------------------------------------- helpers
def test_with_children_keeps_the_kind() -> None:
    a, b = NestedField(8, "a", INT), NestedField(9, "b", STRING)
    assert with_children(POINT, (a, b)) == StructType((a, b))
    assert with_children(array_of(INT), (a,)) == ArrayType(a)
    assert with_children(map_of(STRING, INT), (a, b)) == MapType(a, b)
    with pytest.raises(TypeError, match="int has no children"):
        with_children(INT, ())
    with pytest.raises(ValueError):
        with_children(array_of(INT), (a, b))


def test_same_shape_ignores_ids_case_defaults_and_comments() -> None:
    one = StructType((NestedField(1, "Lat", DOUBLE, default=1.0, comment="x"),
                      NestedField(2, "tags", array_of(STRING, element_id=3))))
    two = StructType((NestedField(10, "lat", DOUBLE),
                      NestedField(20, "TAGS", array_of(STRING, element_id=30))))
    assert same_shape(one, two)
    assert same_shape(INT, INT)
    assert not same_shape(INT, BIGINT)
    assert not same_shape(INT, one)
    assert not same_shape(array_of(INT), map_of(INT, INT))


@pytest.mark.parametrize(
    "other",
    [
        StructType((NestedField(1, "lat", DOUBLE, False), NestedField(2, "lon", DOUBLE))),
        StructType((NestedField(1, "lon", DOUBLE), NestedField(2, "lat", DOUBLE))),
        StructType((NestedField(1, "lat", DOUBLE),)),
        StructType((NestedField(1, "lat", DOUBLE), NestedField(2, "lon", FLOAT))),
        StructType((NestedField(1, "lat", DOUBLE), NestedField(2, "alt", DOUBLE))),
    ],
)
def test_same_shape_sees_nullability_order_count_types_and_names(other: StructType) -> None:
    assert not same_shape(POINT, other)


# ------------------------------------------------------------------------ DDL type text
@pytest.mark.parametrize(
    ("text", "t"),
    [
        ("long", BIGINT),
        ("integer", INT),
        ("short", SMALLINT),
        ("byte", TINYINT),
        ("LONG", BIGINT),
        ("Integer", INT),
        ("bigint", BIGINT),
        ("timestamp_ntz", TIMESTAMP_NTZ),
        ("decimal(10,2)", DecimalType(10, 2)),
        ("array<long>", array_of(BIGINT)),
        ("map<string,integer>", map_of(STRING, INT)),
    ],
)
def test_ddl_aliases(text: str, t) -> None:
    assert parse_type(text) == t


def test_ddl_type_of_a_struct_has_placeholder_ids() -> None:
    t = parse_type("struct<lat:double,lon:double>")
    assert t == StructType((NestedField(0, "lat", DOUBLE), NestedField(0, "lon", DOUBLE)))


def test_ddl_rejects_case_duplicates_in_a_struct() -> None:
    with pytest.raises(DDLSyntaxError, match="duplicate field name 'A'"):
        parse_type("struct<a:int,A:int>")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=types(max_depth=3))
def test_simple_string_parses_back(t) -> None:
    back = parse_type(str(t))
    assert str(back) == str(t)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=types(max_depth=3))
def test_types_from_the_strategy_number_nested_fields_in_pre_order(t) -> None:
    def ids(x) -> list[int]:
        return [i for c in x.children() for i in (c.id, *ids(c.type))]

    assert ids(t) == list(range(1, len(ids(t)) + 1))
