"""parse_type: Spark type syntax, aliases, nesting, struct members, errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.errors import DDLSyntaxError
from evonb.schema.render import type_ddl
from evonb.schema.schema import walk
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
    Type,
    array_of,
    map_of,
    same_shape,
)
from evonb.sql import parse_type
from evonb.sql.parser import MAX_DEPTH


def reason(err: DDLSyntaxError) -> str:
    """The message of a syntax error without the position and excerpt appended to it."""
    suffix = f" at line {err.line}, column {err.column} (near {err.token!r})\n{err.excerpt}"
    assert err.message.endswith(suffix)
    return err.message[: -len(suffix)]


def test_nested_example_simple_string() -> None:
    t = parse_type("STRUCT<a: INT, b: ARRAY<MAP<STRING, DECIMAL(10,2)>>>")
    assert str(t) == "struct<a:int,b:array<map<string,decimal(10,2)>>>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("boolean", BOOLEAN),
        ("BOOL", BOOLEAN),
        ("tinyint", TINYINT),
        ("Byte", TINYINT),
        ("smallint", SMALLINT),
        ("short", SMALLINT),
        ("int", INT),
        ("INTEGER", INT),
        ("bigint", BIGINT),
        ("long", BIGINT),
        ("float", FLOAT),
        ("real", FLOAT),
        ("double", DOUBLE),
        ("string", STRING),
        ("varchar(10)", STRING),
        ("CHAR ( 3 )", STRING),
        ("binary", BINARY),
        ("date", DATE),
        ("timestamp", TIMESTAMP),
        ("timestamp_ltz", TIMESTAMP),
        ("TIMESTAMP_NTZ", TIMESTAMP_NTZ),
        ("decimal", DecimalType(10, 0)),
        ("dec", DecimalType(10, 0)),
        ("numeric", DecimalType(10, 0)),
        ("decimal(5)", DecimalType(5, 0)),
        ("DECIMAL(38, 38)", DecimalType(38, 38)),
        ("numeric(12,4)", DecimalType(12, 4)),
        ("  int  ", INT),
    ],
)
def test_primitives_and_aliases(text: str, expected: Type) -> None:
    assert parse_type(text) == expected


def test_primitives_are_the_singletons() -> None:
    assert parse_type("Long") is BIGINT
    assert parse_type("string") is STRING


def test_array_and_map() -> None:
    assert parse_type("array<int>") == array_of(INT)
    assert parse_type("map<string, array<bigint>>") == map_of(STRING, array_of(BIGINT))
    m = parse_type("map<int,string>")
    assert isinstance(m, MapType)
    assert (m.key.name, m.key.nullable, m.value.name, m.value.nullable) == (
        "key", False, "value", True,
    )
    a = parse_type("array<string>")
    assert isinstance(a, ArrayType)
    assert (a.element.name, a.element.nullable) == ("element", True)


def test_closing_angle_brackets_run_together() -> None:
    assert str(parse_type("array<array<array<int>>>")) == "array<array<array<int>>>"
    assert str(parse_type("map<string,map<string,array<int>>>")) == (
        "map<string,map<string,array<int>>>"
    )


def test_struct_member_forms() -> None:
    t = parse_type(
        "struct<a:int, b string, `c d`: string NOT NULL COMMENT 'the c', `e.f` : bigint,"
        " `g``h` struct<i:date>>"
    )
    assert t == StructType(
        (
            NestedField(0, "a", INT),
            NestedField(0, "b", STRING),
            NestedField(0, "c d", STRING, False, comment="the c"),
            NestedField(0, "e.f", BIGINT),
            NestedField(0, "g`h", StructType((NestedField(0, "i", DATE),))),
        )
    )
    assert str(t) == "struct<a:int,b:string,`c d`:string,`e.f`:bigint,`g``h`:struct<i:date>>"


def test_struct_comment_then_not_null_and_escapes() -> None:
    t = parse_type("struct<a: int COMMENT 'it''s \\'x\\'' NOT NULL>")
    assert t == StructType((NestedField(0, "a", INT, False, comment="it's 'x'"),))


def test_empty_struct() -> None:
    assert parse_type("struct<>") == StructType(())


def test_all_ids_are_zero() -> None:
    t = parse_type("struct<a:array<struct<b:map<int,struct<c:int>>>>, d:int>")
    ids = [info.field.id for info in walk(t.children())]
    assert len(ids) == 7  # a, element, b, key, value, c, d
    assert set(ids) == {0}


def test_whitespace_newlines_and_comments_inside_types() -> None:
    text = """struct<
        a: int,  -- the a
        /* block */ b: map< string ,
            array<double> >
    >"""
    assert str(parse_type(text)) == "struct<a:int,b:map<string,array<double>>>"


def test_deep_nesting() -> None:
    depth = 60
    text = "array<" * depth + "int" + ">" * depth
    t = parse_type(text)
    assert str(t) == text


def test_too_deep_is_a_syntax_error() -> None:
    depth = MAX_DEPTH + 5
    with pytest.raises(DDLSyntaxError, match="nested more than"):
        parse_type("array<" * depth + "int" + ">" * depth)


# ------------------------------------------------------------------------------ errors
def test_unknown_type_has_position_token_and_closest_match() -> None:
    text = "struct<\n  a: int,\n  b: strng\n>"
    with pytest.raises(DDLSyntaxError) as info:
        parse_type(text)
    err = info.value
    assert (err.line, err.column, err.token) == (3, 6, "strng")
    assert reason(err) == "unknown type 'strng' after struct field name 'b'"
    assert err.hint is not None and err.hint.startswith("did you mean 'string'?")
    assert "known types:" in err.hint
    assert err.excerpt == "  b: strng\n     ^"


@pytest.mark.parametrize(
    ("text", "line", "column", "token", "message"),
    [
        ("", 1, 1, "", "expected a type, but the text ended"),
        ("array<int", 1, 10, "", "expected '>' to close array<...>, but the text ended"),
        ("array<int>>", 1, 11, ">", "unexpected text after the end"),
        ("map<int>", 1, 8, ">", "expected ',' between the key and value types of map<...>"),
        ("map<int, >", 1, 10, ">", "expected a type for the value of map<...>"),
        ("struct<a int b int>", 1, 14, "b", "expected ',' or '>' after struct field 'a'"),
        ("struct<a:int,\n A:int>", 2, 2, "A",
         "duplicate field name 'A' in struct<...> (names are case-insensitive)"),
        ("struct<a:int NOT>", 1, 17, ">", "expected NULL after NOT"),
        ("struct<a:int COMMENT 5>", 1, 22, "5", "expected a string after COMMENT for field 'a'"),
        ("struct<1:int>", 1, 8, "1", "expected a field name in struct<...>"),
        ("decimal(39)", 1, 9, "39", "decimal precision must be 1..38, got 39"),
        ("decimal(0,0)", 1, 9, "0", "decimal precision must be 1..38, got 0"),
        ("decimal(5, 6)", 1, 12, "6", "decimal scale must be 0..5, got 6"),
        ("decimal(5,", 1, 11, "", "expected a scale after ',' in decimal(...), but the text ended"),
        ("decimal(1.5)", 1, 9, "1.5", "expected a precision in decimal(...)"),
        ("varchar", 1, 8, "", "expected '(' and a length after varchar, but the text ended"),
        ("array(int)", 1, 6, "(", "expected '<' after array"),
        ("struct<a:int", 1, 13, "",
         "expected ',' or '>' after struct field 'a', but the text ended"),
        ("'int'", 1, 1, "'int'", "expected a type"),
        ("int\n  string", 2, 3, "string", "unexpected text after the end"),
        ("struct<`a:int>", 1, 8, "`", "unterminated backquoted name"),
        ("struct<``:int>", 1, 8, "``", "empty backquoted name"),
    ],
)
def test_error_positions(text: str, line: int, column: int, token: str, message: str) -> None:
    with pytest.raises(DDLSyntaxError) as info:
        parse_type(text)
    err = info.value
    assert (err.line, err.column, err.token, reason(err)) == (line, column, token, message)


def test_interval_is_unknown_with_hint_listing_known_types() -> None:
    with pytest.raises(DDLSyntaxError) as info:
        parse_type("interval")
    assert reason(info.value) == "unknown type 'interval'"
    assert "timestamp_ntz" in (info.value.hint or "")


# ----------------------------------------------------------------------- round trips
_NAMES = st.one_of(
    st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6),
)


def _unique_fields(children: list[tuple[str, Type, bool]]) -> StructType:
    seen: set[str] = set()
    fields = []
    for name, t, nullable in children:
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        fields.append(NestedField(0, name, t, nullable))
    return StructType(tuple(fields))


_PRIMS = st.sampled_from(
    [BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, STRING, BINARY, DATE, TIMESTAMP,
     TIMESTAMP_NTZ]
) | st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s)))

_TYPES = st.recursive(
    _PRIMS,
    lambda inner: st.one_of(
        inner.map(array_of),
        st.tuples(_PRIMS, inner).map(lambda kv: map_of(*kv)),
        st.lists(st.tuples(_NAMES, inner, st.booleans()), max_size=4).map(_unique_fields),
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(_TYPES)
def test_rendered_types_parse_back(t: Type) -> None:
    parsed = parse_type(type_ddl(t))
    assert same_shape(parsed, t)
    assert str(parsed) == str(t)


@settings(max_examples=100, deadline=None)
@given(_TYPES)
def test_simple_strings_parse_back(t: Type) -> None:
    assert str(parse_type(str(t))) == str(t)
