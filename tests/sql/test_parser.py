"""parse_ddl / parse_columns_schema: statements, literals, names, errors, fuzzing."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.errors import DDLSyntaxError, InvalidDefaultError
from evonb.schema.schema import Schema
from evonb.schema.types import (
    BIGINT,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    DecimalType,
    NestedField,
    StructType,
    array_of,
)
from evonb.sql import (
    AddColumns,
    AlterColumn,
    ColumnPosition,
    ColumnSpec,
    CreateTable,
    DDLDefaultError,
    DropColumns,
    RenameColumn,
    parse_alter,
    parse_columns_schema,
    parse_ddl,
    parse_type,
)


def reason(err: DDLSyntaxError) -> str:
    """The message of a syntax error without the position and excerpt appended to it."""
    suffix = f" at line {err.line}, column {err.column} (near {err.token!r})\n{err.excerpt}"
    assert err.message.endswith(suffix)
    return err.message[: -len(suffix)]


def syntax_error(text: str) -> DDLSyntaxError:
    with pytest.raises(DDLSyntaxError) as info:
        parse_ddl(text)
    return info.value


# ------------------------------------------------------------------------- ADD COLUMNS
def test_add_columns_with_every_option() -> None:
    (stmt,) = parse_ddl(
        "ALTER TABLE db.events ADD COLUMNS ("
        "a.b int NOT NULL DEFAULT 5 COMMENT 'x' AFTER c, "
        "`x y` string FIRST, "
        "m.value.z double BEFORE w, "
        "arr.element.y decimal(5,2) DEFAULT 1.25)"
    )
    assert stmt == AddColumns(
        "db.events",
        (
            ColumnSpec(("a", "b"), INT, False, 5, True, "x", ColumnPosition("after", "c")),
            ColumnSpec(("x y",), STRING, position=ColumnPosition("first")),
            ColumnSpec(("m", "value", "z"), DOUBLE, position=ColumnPosition("before", "w")),
            ColumnSpec(("arr", "element", "y"), DecimalType(5, 2),
                       default=decimal.Decimal("1.25"), has_default=True),
        ),
    )


def test_add_single_column_without_parentheses_and_options_in_any_order() -> None:
    assert parse_ddl("alter table t add column c bigint comment 'cc' not null default 0") == [
        AddColumns("t", (ColumnSpec(("c",), BIGINT, False, 0, True, "cc"),))
    ]
    assert parse_ddl("ALTER TABLE t ADD COLUMNS a int, b string") == [
        AddColumns("t", (ColumnSpec(("a",), INT), ColumnSpec(("b",), STRING)))
    ]


def test_add_default_null_is_recorded() -> None:
    (stmt,) = parse_ddl("ALTER TABLE t ADD COLUMN a int DEFAULT NULL")
    assert isinstance(stmt, AddColumns)
    assert stmt.columns[0].has_default is True
    assert stmt.columns[0].default is None


def test_add_position_may_repeat_the_parent_path() -> None:
    (stmt,) = parse_ddl("ALTER TABLE t ADD COLUMN loc.alt double AFTER LOC.lat")
    assert isinstance(stmt, AddColumns)
    assert stmt.columns[0].position == ColumnPosition("after", "lat")


def test_add_nested_struct_column() -> None:
    (stmt,) = parse_ddl("ALTER TABLE t ADD COLUMN p struct<x:int, y:array<string>>")
    assert isinstance(stmt, AddColumns)
    assert str(stmt.columns[0].type) == "struct<x:int,y:array<string>>"


# ---------------------------------------------------------------- ALTER / CHANGE COLUMN
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALTER TABLE t ALTER COLUMN a TYPE bigint", AlterColumn("t", ("a",), new_type=BIGINT)),
        ("alter table t alter a type bigint", AlterColumn("t", ("a",), new_type=BIGINT)),
        ("ALTER TABLE t CHANGE COLUMN a.b TYPE double COMMENT 'd' AFTER c",
         AlterColumn("t", ("a", "b"), new_type=DOUBLE, comment="d",
                     position=ColumnPosition("after", "c"))),
        ("ALTER TABLE t CHANGE a TYPE decimal(12,2) FIRST",
         AlterColumn("t", ("a",), new_type=DecimalType(12, 2),
                     position=ColumnPosition("first"))),
        ("ALTER TABLE t ALTER COLUMN a COMMENT 'hello'", AlterColumn("t", ("a",), comment="hello")),
        ("ALTER TABLE t ALTER COLUMN a COMMENT ''", AlterColumn("t", ("a",), comment="")),
        ("ALTER TABLE t ALTER COLUMN a FIRST",
         AlterColumn("t", ("a",), position=ColumnPosition("first"))),
        ("ALTER TABLE t ALTER COLUMN s.a AFTER b",
         AlterColumn("t", ("s", "a"), position=ColumnPosition("after", "b"))),
        ("ALTER TABLE t ALTER COLUMN s.a BEFORE s.b",
         AlterColumn("t", ("s", "a"), position=ColumnPosition("before", "b"))),
        ("ALTER TABLE t ALTER COLUMN a DROP NOT NULL", AlterColumn("t", ("a",), nullable=True)),
        ("ALTER TABLE t ALTER COLUMN a SET NOT NULL", AlterColumn("t", ("a",), nullable=False)),
        ("ALTER TABLE t ALTER COLUMN a SET DEFAULT 'x'",
         AlterColumn("t", ("a",), default="x", set_default=True)),
        ("ALTER TABLE t ALTER COLUMN a SET DEFAULT NULL",
         AlterColumn("t", ("a",), default=None, set_default=True)),
        ("ALTER TABLE t ALTER COLUMN a DROP DEFAULT", AlterColumn("t", ("a",), drop_default=True)),
        ("ALTER TABLE t CHANGE COLUMN a b bigint COMMENT 'c' AFTER x",
         AlterColumn("t", ("a",), new_type=BIGINT, comment="c",
                     position=ColumnPosition("after", "x"), new_name="b")),
        ("ALTER TABLE t CHANGE a `new name` int", AlterColumn("t", ("a",), new_type=INT,
                                                               new_name="new name")),
        ("ALTER TABLE t ALTER COLUMN type TYPE int", AlterColumn("t", ("type",), new_type=INT)),
    ],
)
def test_alter_column_forms(text: str, expected: AlterColumn) -> None:
    assert parse_ddl(text) == [expected]


def test_alter_several_columns_in_one_statement() -> None:
    assert parse_ddl("ALTER TABLE t ALTER COLUMN a TYPE bigint, b COMMENT 'x'") == [
        AlterColumn("t", ("a",), new_type=BIGINT),
        AlterColumn("t", ("b",), comment="x"),
    ]


# -------------------------------------------------------------------- DROP / RENAME
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALTER TABLE t DROP COLUMN a", DropColumns("t", (("a",),))),
        ("ALTER TABLE t DROP COLUMNS a, b.c", DropColumns("t", (("a",), ("b", "c")))),
        ("ALTER TABLE t DROP COLUMNS (a, `b.c`.d)", DropColumns("t", (("a",), ("b.c", "d")))),
        ("ALTER TABLE t DROP COLUMN IF EXISTS a", DropColumns("t", (("a",),), if_exists=True)),
        ("ALTER TABLE t DROP COLUMN if", DropColumns("t", (("if",),))),
    ],
)
def test_drop_forms(text: str, expected: DropColumns) -> None:
    assert parse_ddl(text) == [expected]


def test_rename() -> None:
    assert parse_ddl("ALTER TABLE t RENAME COLUMN a.b TO c") == [
        RenameColumn("t", ("a", "b"), "c")
    ]
    assert parse_ddl("ALTER TABLE t RENAME COLUMN a.b TO a.c") == [
        RenameColumn("t", ("a", "b"), "c")
    ]
    assert parse_ddl("ALTER TABLE t RENAME COLUMN `a b` TO `c.d`") == [
        RenameColumn("t", ("a b",), "c.d")
    ]


# -------------------------------------------------------------------------- names
def test_backquoted_names_with_spaces_dots_and_backquotes() -> None:
    (stmt,) = parse_ddl("ALTER TABLE `my db`.`the.table` RENAME COLUMN `a``b`.`c d.e` TO `f g`")
    assert stmt == RenameColumn("`my db`.`the.table`", ("a`b", "c d.e"), "f g")


def test_table_names() -> None:
    assert parse_ddl("ALTER TABLE db.t DROP COLUMN a")[0].table == "db.t"
    assert parse_ddl("ALTER TABLE `db`.`t` DROP COLUMN a")[0].table == "db.t"
    assert parse_ddl("ALTER TABLE cat.db.t DROP COLUMN a")[0].table == "cat.db.t"


def test_mixed_case_keywords_and_comments() -> None:
    text = """
    -- a leading comment
    aLtEr TaBlE T /* inline */ AdD cOlUmN X InT nOt NuLl DeFaUlT 1 CoMmEnT 'c' FiRsT;
    /* between
       statements */
    ALTER table t Drop Columns (y);  -- trailing
    """
    assert parse_ddl(text) == [
        AddColumns("T", (ColumnSpec(("X",), INT, False, 1, True, "c", ColumnPosition("first")),)),
        DropColumns("t", (("y",),)),
    ]


def test_empty_statements_are_ignored() -> None:
    assert parse_ddl("") == []
    assert parse_ddl(" ;; -- nothing\n ; ") == []
    assert len(parse_ddl(";ALTER TABLE t DROP COLUMN a;;ALTER TABLE t DROP COLUMN b;")) == 2


def test_parse_alter_refuses_create() -> None:
    with pytest.raises(DDLSyntaxError) as info:
        parse_alter("ALTER TABLE t DROP COLUMN a;\nCREATE TABLE u (a int)")
    assert (info.value.line, info.value.column, info.value.token) == (2, 1, "CREATE")
    assert reason(info.value) == "expected ALTER TABLE"
    assert parse_alter("ALTER TABLE t DROP COLUMN a") == [DropColumns("t", (("a",),))]


# ------------------------------------------------------------------------- literals
@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("5", 5),
        ("-5", -5),
        ("- 5", -5),
        ("+7", 7),
        ("0", 0),
        ("5L", 5),
        ("-128Y", -128),
        ("12S", 12),
        ("1.5", decimal.Decimal("1.5")),
        ("-1.50", decimal.Decimal("-1.50")),
        (".5", decimal.Decimal("0.5")),
        ("5.", decimal.Decimal("5")),
        ("1.5e3", 1500.0),
        ("1E-2", 0.01),
        ("-2.5E+2", -250.0),
        ("1.5BD", decimal.Decimal("1.5")),
        ("-3bd", decimal.Decimal("-3")),
        ("1.5D", 1.5),
        ("2f", 2.0),
        ("'it''s'", "it's"),
        ("'a\\'b'", "a'b"),
        ('"say ""hi"" \\"there\\""', 'say "hi" "there"'),
        ("'tab\\there\\nnewline'", "tab\there\nnewline"),
        ("'back\\\\slash'", "back\\slash"),
        ("'\\u00e9t\\u00e9'", "été"),
        ("'a' 'b'", "ab"),
        ("''", ""),
        ("'semi;colon -- not a comment'", "semi;colon -- not a comment"),
        ("TRUE", True),
        ("false", False),
        ("NULL", None),
        ("DATE '2020-01-31'", dt.date(2020, 1, 31)),
        ("date'2020-01-31'", dt.date(2020, 1, 31)),
        ("TIMESTAMP '2020-01-01 10:00:00'", dt.datetime(2020, 1, 1, 10, 0, 0)),
        ("TIMESTAMP '2020-01-01 10:00:00.5+02:00'",
         dt.datetime(2020, 1, 1, 10, 0, 0, 500000, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
        ("TIMESTAMP_NTZ '2020-01-01T10:00:00'", dt.datetime(2020, 1, 1, 10, 0, 0)),
        ("X'0A0B'", b"\n\x0b"),
        ("x'ff'", b"\xff"),
        ("X''", b""),
        ("CAST(1.50 AS DECIMAL(5,2))", decimal.Decimal("1.50")),
        ("CAST(-1 AS BIGINT)", -1),
        ("CAST(8.768592273479873E-11 AS DECIMAL(26,26))",
         decimal.Decimal("8.768592273479873E-11")),
        ("cast('2020-02-02' as date)", dt.date(2020, 2, 2)),
        ("CAST('-Infinity' AS DOUBLE)", -math.inf),
    ],
)
def test_literals(literal: str, expected: Any) -> None:
    (stmt,) = parse_ddl(f"ALTER TABLE t ALTER COLUMN c SET DEFAULT {literal}")
    assert isinstance(stmt, AlterColumn)
    assert stmt.set_default is True
    assert stmt.default == expected
    assert type(stmt.default) is type(expected)


def test_nan_literal() -> None:
    (stmt,) = parse_ddl("ALTER TABLE t ALTER COLUMN c SET DEFAULT CAST('NaN' AS DOUBLE)")
    assert isinstance(stmt, AlterColumn)
    assert math.isnan(stmt.default)


@pytest.mark.parametrize(
    ("literal", "column", "token", "message"),
    [
        ("DATE '2020-13-01'", 47, "'2020-13-01'", "invalid DATE literal '2020-13-01'"),
        ("TIMESTAMP 'noon'", 52, "'noon'", "invalid TIMESTAMP literal 'noon'"),
        ("X'ABC'", 43, "'ABC'", "invalid binary literal X'ABC'"),
        ("X'GG'", 43, "'GG'", "invalid binary literal X'GG'"),
        ("300Y", 42, "300Y", "300Y is out of range for tinyint (-128..127)"),
        ("1.5L", 42, "1.5L", "invalid integer literal 1.5L"),
        ("now()", 42, "now", "expected a literal after SET DEFAULT for 'c'"),
        ("CAST('x' AS INT)", 47, "'x'", "cannot cast 'x' to int"),
        ("CAST(1 INT)", 49, "INT", "expected AS in CAST(literal AS type)"),
        ("-'x'", 43, "'x'", "expected a number after '-'"),
        ("", 41, "", "expected a literal after SET DEFAULT for 'c', but the text ended"),
    ],
)
def test_bad_literals(literal: str, column: int, token: str, message: str) -> None:
    err = syntax_error(f"ALTER TABLE t ALTER COLUMN c SET DEFAULT {literal}")
    assert (err.line, err.column, err.token, reason(err)) == (1, column, token, message)


# ---------------------------------------------------------------------- CREATE TABLE
def test_create_table_everything() -> None:
    (stmt,) = parse_ddl(
        """CREATE TABLE IF NOT EXISTS db.`my t` (
             id bigint NOT NULL COMMENT 'key',
             ts timestamp,
             name string DEFAULT 'anon',
             loc struct<lat:double, lon:double>
           )
           USING evonb
           PARTITIONED BY (NAME)
           TBLPROPERTIES ('primaryKey' = 'id', preCombineField = 'ts', 'x.y' 5, flag = true)
           LOCATION '/data/t'
           COMMENT 'a table'"""
    )
    assert isinstance(stmt, CreateTable)
    assert stmt.table == "db.`my t`"
    assert stmt.if_not_exists is True
    assert stmt.using == "evonb"
    assert stmt.partition_by == ("name",)
    assert stmt.properties == {"primaryKey": "id", "preCombineField": "ts", "x.y": "5",
                               "flag": "true"}
    assert stmt.primary_key == ("id",)
    assert stmt.precombine == "ts"
    assert stmt.location == "/data/t"
    assert stmt.comment == "a table"
    assert stmt.schema == Schema(
        (
            NestedField(1, "id", BIGINT, False, comment="key"),
            NestedField(2, "ts", TIMESTAMP),
            NestedField(3, "name", STRING, default="anon", write_default="anon"),
            NestedField(4, "loc", StructType((NestedField(5, "lat", DOUBLE),
                                              NestedField(6, "lon", DOUBLE)))),
        ),
        "00000000000000000",
        6,
    )


def test_create_table_minimal_and_snake_case_keys() -> None:
    (stmt,) = parse_ddl(
        "create table t (a int, b int) options (primary_key = 'a, b', precombine = 'b')"
    )
    assert stmt == CreateTable(
        "t",
        parse_columns_schema("a int, b int"),
        properties={"primary_key": "a, b", "precombine": "b"},
        primary_key=("a", "b"),
        precombine="b",
    )


@pytest.mark.parametrize(
    ("text", "line", "column", "token", "message"),
    [
        ("CREATE TABLE t", 1, 15, "",
         "expected '(' and the columns after the table name 't', but the text ended"),
        ("CREATE TABLE t ()", 1, 17, ")", "expected a column name"),
        ("CREATE TABLE t (a int,\n a string)", 2, 2, "a",
         "duplicate column name 'a' (names are case-insensitive)"),
        ("CREATE TABLE t (a int) PARTITIONED BY (b)", 1, 40, "b",
         "partition column 'b' is not a column of the table"),
        ("CREATE TABLE t (a int) LOCATION '/x' LOCATION '/y'", 1, 38, "LOCATION",
         "LOCATION given twice"),
        ("CREATE TABLE t (a int) AS SELECT 1", 1, 24, "AS",
         "CREATE TABLE ... AS SELECT is not supported"),
        ("CREATE TABLE t (a int) TBLPROPERTIES ('k' = 'v'", 1, 48, "",
         "expected ',' or ')' in TBLPROPERTIES (...), but the text ended"),
        ("CREATE TABLE IF EXISTS t (a int)", 1, 17, "EXISTS", "expected NOT EXISTS after IF"),
        ("CREATE VIEW v", 1, 8, "VIEW", "expected TABLE after CREATE"),
    ],
)
def test_create_table_errors(text: str, line: int, column: int, token: str,
                             message: str) -> None:
    err = syntax_error(text)
    assert (err.line, err.column, err.token, reason(err)) == (line, column, token, message)


def test_create_table_bad_default_is_both_syntax_and_default_error() -> None:
    with pytest.raises(DDLDefaultError) as info:
        parse_ddl("CREATE TABLE t (\n  a int DEFAULT 'x'\n)")
    err = info.value
    assert isinstance(err, DDLSyntaxError)
    assert isinstance(err, InvalidDefaultError)
    assert (err.line, err.column, err.token) == (2, 17, "'x'")
    assert err.path == "a"


# ------------------------------------------------------------------- column schemas
def test_parse_columns_schema_ids_in_pre_order() -> None:
    schema = parse_columns_schema(
        "id bigint not null, name string DEFAULT 'x' COMMENT 'the name', "
        "loc struct<lat:double,lon:double>, tags array<string>, n int",
        version_id="20240101000000000",
    )
    assert schema == Schema(
        (
            NestedField(1, "id", BIGINT, False),
            NestedField(2, "name", STRING, default="x", write_default="x", comment="the name"),
            NestedField(3, "loc", StructType((NestedField(4, "lat", DOUBLE),
                                              NestedField(5, "lon", DOUBLE)))),
            NestedField(6, "tags", array_of(STRING, element_id=7)),
            NestedField(8, "n", INT),
        ),
        "20240101000000000",
        8,
    )


def test_parse_columns_schema_defaults_are_converted() -> None:
    schema = parse_columns_schema(
        "d date DEFAULT '2020-01-02', x double DEFAULT 1, y decimal(4,2) DEFAULT 1.5, "
        "b boolean default true"
    )
    assert [(f.default, f.write_default) for f in schema.fields] == [
        (dt.date(2020, 1, 2), dt.date(2020, 1, 2)),
        (1.0, 1.0),
        (decimal.Decimal("1.50"), decimal.Decimal("1.50")),
        (True, True),
    ]
    assert schema.find("x").default.__class__ is float


def test_parse_columns_schema_other_forms() -> None:
    assert parse_columns_schema("") == Schema()
    assert parse_columns_schema("struct<a:int, b:string>") == parse_columns_schema(
        "a int, b string"
    )
    assert parse_columns_schema("`a b` int, `c``d` date").column_names == ["a b", "c`d"]


def test_parse_columns_schema_errors() -> None:
    with pytest.raises(DDLSyntaxError) as info:
        parse_columns_schema("a int,\nb strnig,\nc int")
    err = info.value
    assert (err.line, err.column, err.token) == (2, 3, "strnig")
    with pytest.raises(DDLSyntaxError) as info:
        parse_columns_schema("a int DEFALT 5")
    assert reason(info.value) == "expected ',' after column 'a'"
    assert (info.value.hint or "").startswith("did you mean DEFAULT?")
    with pytest.raises(DDLSyntaxError, match="expected a type after column name 'b'"):
        parse_columns_schema("a int, b")


def test_schema_from_ddl_round_trip_of_rendered_defaults() -> None:
    text = (
        "a tinyint DEFAULT 5, b double DEFAULT 1.5 COMMENT 'it''s\\n', "
        "c double DEFAULT CAST('NaN' AS DOUBLE), d decimal(5,2) DEFAULT 1.5, "
        "e string DEFAULT 'x\\'y', f binary DEFAULT X'0a', "
        "g timestamp DEFAULT TIMESTAMP '2020-01-01 10:00:00', "
        "h timestamp_ntz DEFAULT TIMESTAMP_NTZ '2020-01-01 10:00:00', "
        "i date DEFAULT DATE '2020-01-01', `j k` bigint NOT NULL DEFAULT -5, "
        "l float DEFAULT 1.5e3, m smallint DEFAULT -2"
    )
    schema = Schema.from_ddl(text)
    again = Schema.from_ddl(schema.to_ddl())
    assert again.to_ddl() == schema.to_ddl()
    assert [f.write_default for f in again.fields if f.name != "c"] == [
        f.write_default for f in schema.fields if f.name != "c"
    ]
    assert math.isnan(again.find("c").default)


# ---------------------------------------------------------------------------- errors
def test_error_position_in_multi_line_text() -> None:
    text = "ALTER TABLE t ADD COLUMNS (\n  a int,\n  b strin COMMENT 'x'\n);"
    err = syntax_error(text)
    assert (err.line, err.column, err.token) == (3, 5, "strin")
    assert reason(err) == "unknown type 'strin' after column name 'b'"
    assert (err.hint or "").startswith("did you mean 'string'?")
    assert err.excerpt == "  b strin COMMENT 'x'\n    ^"


def test_error_in_second_statement_points_into_it() -> None:
    text = "ALTER TABLE t DROP COLUMN a;\n\nALTER TABLE t\n  ADD COLUMN x"
    err = syntax_error(text)
    assert (err.line, err.column, err.token) == (4, 15, "")
    assert reason(err) == "expected a type after column name 'x', but the text ended"


@pytest.mark.parametrize(
    ("text", "line", "column", "token", "message"),
    [
        ("ALTER TABLE t ADD COLUMN a string\n  COMMENT 'oops", 2, 11, "'",
         "unterminated string literal"),
        ("ALTER TABLE t DROP COLUMN `oops", 1, 27, "`", "unterminated backquoted name"),
        ("ALTER TABLE t DROP COLUMN a /* never closed", 1, 29, "/", "unterminated /* comment"),
        ("ALTER TABLE t DROP COLUMN a b", 1, 29, "b",
         "expected ';' or the end of the text after the statement"),
        ("ALTER TABLE t ADD COLUMNS (a int", 1, 33, "",
         "expected ',' or ')' after column 'a', but the text ended"),
        ("ALTER TABLE t ADD COLUMNS (a int))", 1, 34, ")",
         "expected ';' or the end of the text after the statement"),
        ("ALTER TABLE t ADD COLUMN a int DEFALT 5", 1, 32, "DEFALT",
         "expected ',' or ';' after column 'a'"),
        ("ALTER TABLE t ADD COLUMN a int NOT NULL NOT NULL", 1, 41, "NOT",
         "NOT given twice for column 'a'"),
        ("ALTER TABLE t ADD COLUMN a int FIRST AFTER b", 1, 38, "AFTER",
         "a position given twice for column 'a'"),
        ("ALTER TABLE t ADD a int", 1, 19, "a", "expected COLUMN or COLUMNS after ADD"),
        ("ALTER TABLE t DROP COLUMNS (a, b", 1, 33, "",
         "expected ',' or ')' after the column to drop, but the text ended"),
        ("ALTER TABLE t DROP COLUMN a.", 1, 29, "",
         "expected a name after '.' in 'a', but the text ended"),
        ("ALTER TABLE t RENAME COLUMN a b", 1, 31, "b", "expected TO after RENAME COLUMN a"),
        ("ALTER TABLE t RENAME COLUMN a.b TO x.c", 1, 36, "x",
         "RENAME COLUMN cannot move a column to another struct"),
        ("ALTER TABLE t RENAME TO u", 1, 22, "TO", "expected COLUMN after RENAME"),
        ("ALTER TABLE t ALTER COLUMN a", 1, 29, "",
         "expected TYPE, COMMENT, FIRST, AFTER, BEFORE, SET or DROP after column 'a', "
         "but the text ended"),
        ("ALTER TABLE t ALTER COLUMN a SET NULL", 1, 34, "NULL",
         "expected NOT NULL or DEFAULT after SET"),
        ("ALTER TABLE t ALTER COLUMN a TYPE int TYPE bigint", 1, 39, "TYPE",
         "TYPE given twice for column 'a'"),
        ("ALTER TABLE t ALTER COLUMN a TYPE", 1, 34, "",
         "expected a type after TYPE, but the text ended"),
        ("ALTER TABLE t ALTER COLUMN a.b AFTER c.d", 1, 38, "c",
         "AFTER must name a column next to 'a.b' (in 'a')"),
        ("ALTER TABLE t ALTER COLUMN a AFTER c.d", 1, 36, "c",
         "AFTER must name a column next to 'a' (at the top level)"),
        ("ALTER TABLE t ADD COLUMN a decimal(40,2)", 1, 36, "40",
         "decimal precision must be 1..38, got 40"),
        ("ALTER TABLE t SET LOCATION '/x'", 1, 19, "LOCATION",
         "expected TBLPROPERTIES after SET"),
        ("ALTER TABLE t MOVE COLUMN a", 1, 15, "MOVE",
         "expected ADD, DROP, RENAME, ALTER, CHANGE, SET or UNSET after table 't'"),
        ("ALTER TABLE", 1, 12, "", "expected a table name, but the text ended"),
        ("ALTER VIEW v", 1, 7, "VIEW", "expected TABLE after ALTER"),
        ("SELECT 1", 1, 1, "SELECT", "expected ALTER TABLE or CREATE TABLE"),
        ("ALTER TABLE t DROP COLUMN a; garbage", 1, 30, "garbage",
         "expected ALTER TABLE or CREATE TABLE"),
        ("ALTER TABLE t DROP COLUMN $a", 1, 27, "$", "expected a column name to drop"),
    ],
)
def test_syntax_errors(text: str, line: int, column: int, token: str, message: str) -> None:
    err = syntax_error(text)
    assert (err.line, err.column, err.token, reason(err)) == (line, column, token, message)


def test_misspelt_keyword_hints() -> None:
    assert (syntax_error("ALTR TABLE t").hint or "").startswith("did you mean ALTER?")
    assert (syntax_error("ALTER TABLE t DORP COLUMN a").hint or "").startswith(
        "did you mean DROP?"
    )
    assert (syntax_error("ALTER TABLE t ADD COLUMNS (a int DEFALT 1)").hint or "").startswith(
        "did you mean DEFAULT?"
    )


def test_add_column_default_of_wrong_type_points_at_the_literal() -> None:
    with pytest.raises(DDLDefaultError) as info:
        parse_ddl("ALTER TABLE t ADD COLUMN a int\n  DEFAULT 'x'")
    err = info.value
    assert (err.line, err.column, err.token) == (2, 11, "'x'")
    assert isinstance(err, InvalidDefaultError)


@pytest.mark.parametrize(
    "text",
    [
        "ALTER TABLE t ALTER COLUMN c SET DEFAULT " + "9" * 5000,
        "ALTER TABLE t ALTER COLUMN c SET DEFAULT 1e99999999L",
        "ALTER TABLE t ADD COLUMN c decimal(" + "9" * 5000 + ")",
        "ALTER TABLE t ADD COLUMN c " + "array<" * 5000,
    ],
)
def test_huge_inputs_are_syntax_errors(text: str) -> None:
    with pytest.raises(DDLSyntaxError):
        parse_ddl(text)


def test_crlf_and_tabs_positions() -> None:
    err = syntax_error("ALTER TABLE t\r\n\tADD COLUMN a strng")
    assert (err.line, err.column, err.token) == (2, 15, "strng")


# ---------------------------------------------------------------------------- fuzzing
_VOCAB = [
    "ALTER", "TABLE", "ADD", "COLUMN", "COLUMNS", "DROP", "RENAME", "TO", "CHANGE", "TYPE",
    "COMMENT", "FIRST", "AFTER", "BEFORE", "SET", "NOT", "NULL", "DEFAULT", "CREATE", "IF",
    "EXISTS", "USING", "PARTITIONED", "BY", "TBLPROPERTIES", "OPTIONS", "LOCATION", "CAST", "AS",
    "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "X", "TRUE", "FALSE", "int", "bigint", "string",
    "decimal", "varchar", "array", "map", "struct", "double", "a", "b", "t", "`a b`", "`x.y`",
    "``", "(", ")", "<", ">", ">>", ",", ";", ".", ":", "=", "-", "+", "'s'", '"d"', "'it''s'",
    "'\\''", "5", "-5", "1.5", "1.5e3", "1.5BD", "5L", "300Y", "99999999999999999999",
    "1e99999999", "9" * 30, "'2020-01-01'", "'0A'", "'", '"', "`", "/*", "*/", "--", "\n",
    "$", "@", "#", "\\", "é", "\u2028", "\x00", "1col",
]
_SEPARATORS = st.sampled_from(["", " ", "\n", "\t", "\r\n"])
_SOUP = st.lists(st.tuples(st.sampled_from(_VOCAB), _SEPARATORS), max_size=40).map(
    lambda items: "".join(word + sep for word, sep in items)
)
_PREFIXES = st.sampled_from(
    ["", "ALTER TABLE t ", "ALTER TABLE t ADD COLUMN a ", "ALTER TABLE t ALTER COLUMN a ",
     "CREATE TABLE t (", "CREATE TABLE t (a int) ", "ALTER TABLE t ADD COLUMNS (a ",
     "ALTER TABLE t ALTER COLUMN a SET DEFAULT ", "ALTER TABLE t ADD COLUMN a int DEFAULT "]
)


def _only_syntax_errors(fn: Any, text: str) -> None:
    try:
        fn(text)
    except DDLSyntaxError as err:
        lines = text.splitlines()
        assert 1 <= err.line <= max(1, len(lines))
        assert err.column >= 1
        assert err.excerpt.endswith("^")


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=120))
def test_random_text_raises_only_syntax_errors(text: str) -> None:
    _only_syntax_errors(parse_ddl, text)
    _only_syntax_errors(parse_type, text)
    _only_syntax_errors(parse_columns_schema, text)


@settings(max_examples=400, deadline=None)
@given(_PREFIXES, _SOUP)
def test_token_soup_raises_only_syntax_errors(prefix: str, soup: str) -> None:
    _only_syntax_errors(parse_ddl, prefix + soup)
    _only_syntax_errors(parse_type, soup)
    _only_syntax_errors(parse_columns_schema, soup)


# Comments and raw strings as Spark's lexer reads them (each case checked against Spark 4's
# parser: the column's comment it records, or its refusal).
@pytest.mark.parametrize(("ddl", "comment"), [
    ("ALTER TABLE t ADD COLUMN x int /* a /* b */ c */ COMMENT 'k'", "k"),  # nested
    ("ALTER TABLE t ADD COLUMN x int --c\rCOMMENT 'z'", "z"),  # \r ends a -- comment
    ("ALTER TABLE t ADD COLUMN x int COMMENT r'a\\'", "a\\"),  # raw: no escapes
    ("ALTER TABLE t ADD COLUMN x int -- a\\\nCOMMENT 'hidden'", None),  # \ + newline continues
])
def test_comments_and_raw_strings_read_as_spark_reads_them(ddl: str, comment: str | None) -> None:
    (statement,) = parse_ddl(ddl)
    assert statement.columns[0].comment == comment


def test_an_unclosed_nested_comment_is_refused_where_it_starts() -> None:
    with pytest.raises(DDLSyntaxError, match="unterminated /\\* comment") as info:
        parse_ddl("ALTER TABLE t ADD COLUMN x int /* a /* b */")
    assert info.value.column == 32
