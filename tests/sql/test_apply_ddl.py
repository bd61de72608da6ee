"""apply_ddl / ddl_to_update: ALTER statements become one SchemaUpdate, all or nothing."""

from __future__ import annotations

import decimal

import pytest

from evonb.errors import (
    ColumnNotFoundError,
    DDLSyntaxError,
    EvoError,
    InvalidDefaultError,
    SchemaEvolutionError,
)
from evonb.schema.evolution import SchemaUpdate
from evonb.schema.schema import Schema, walk
from evonb.schema.types import BIGINT, DOUBLE, INT, STRING, DecimalType
from evonb.sql import (
    AlterColumn,
    DropColumns,
    apply_ddl,
    ddl_to_update,
    parse_columns_schema,
    parse_ddl,
)

BASE_DDL = (
    "id bigint NOT NULL, name string, loc struct<lat:double, lon:double>, "
    "points array<struct<x:int>>, attrs map<string, struct<v:int>>, n int"
)


@pytest.fixture
def base() -> Schema:
    # IDs: id 1, name 2, loc 3 (lat 4, lon 5), points 6 (element 7, x 8),
    # attrs 9 (key 10, value 11, v 12), n 13
    return parse_columns_schema(BASE_DDL)


def layout(schema: Schema) -> list[tuple[str, int, str]]:
    """(dotted path, id, type) of every field in pre-order."""
    return [(info.dotted, info.field.id, str(info.field.type)) for info in walk(schema.fields)]


def test_base_ids(base: Schema) -> None:
    assert [(p, i) for p, i, _ in layout(base)] == [
        ("id", 1), ("name", 2), ("loc", 3), ("loc.lat", 4), ("loc.lon", 5), ("points", 6),
        ("points.element", 7), ("points.element.x", 8), ("attrs", 9), ("attrs.key", 10),
        ("attrs.value", 11), ("attrs.value.v", 12), ("n", 13),
    ]


def test_add_columns_top_level_and_nested_with_positions(base: Schema) -> None:
    new = apply_ddl(
        base,
        """ALTER TABLE t ADD COLUMNS (
             loc.alt double AFTER lat,
             points.element.y int,
             attrs.value.w string FIRST,
             age int NOT NULL DEFAULT 5 BEFORE name,
             tags array<string> COMMENT 'labels'
           )""",
    )
    assert layout(new) == [
        ("id", 1, "bigint"),
        ("age", 17, "int"),
        ("name", 2, "string"),
        ("loc", 3, "struct<lat:double,alt:double,lon:double>"),
        ("loc.lat", 4, "double"),
        ("loc.alt", 14, "double"),
        ("loc.lon", 5, "double"),
        ("points", 6, "array<struct<x:int,y:int>>"),
        ("points.element", 7, "struct<x:int,y:int>"),
        ("points.element.x", 8, "int"),
        ("points.element.y", 15, "int"),
        ("attrs", 9, "map<string,struct<w:string,v:int>>"),
        ("attrs.key", 10, "string"),
        ("attrs.value", 11, "struct<w:string,v:int>"),
        ("attrs.value.w", 16, "string"),
        ("attrs.value.v", 12, "int"),
        ("n", 13, "int"),
        ("tags", 18, "array<string>"),
        ("tags.element", 19, "string"),
    ]
    age = new.find("age")
    assert (age.nullable, age.default, age.write_default) == (False, 5, 5)
    assert new.find("tags").comment == "labels"
    assert new.max_column_id == 19


def test_two_renames_swap_names(base: Schema) -> None:
    new = apply_ddl(
        base,
        "ALTER TABLE t RENAME COLUMN id TO name;\nALTER TABLE t RENAME COLUMN name TO id",
    )
    assert [(f.name, f.id, str(f.type)) for f in new.fields[:2]] == [
        ("name", 1, "bigint"),
        ("id", 2, "string"),
    ]


def test_nested_rename_and_drop(base: Schema) -> None:
    new = apply_ddl(
        base,
        "ALTER TABLE t RENAME COLUMN loc.lat TO latitude; "
        "ALTER TABLE t DROP COLUMNS (loc.lon, points)",
    )
    assert [(p, i) for p, i, _ in layout(new)][:4] == [
        ("id", 1), ("name", 2), ("loc", 3), ("loc.latitude", 4),
    ]
    assert not new.has("points")
    assert not new.has("loc.lon")


def test_drop_if_exists_skips_missing_columns(base: Schema) -> None:
    new = apply_ddl(base, "ALTER TABLE t DROP COLUMN IF EXISTS nope, n")
    assert new.column_names == ["id", "name", "loc", "points", "attrs"]
    with pytest.raises(ColumnNotFoundError):
        apply_ddl(base, "ALTER TABLE t DROP COLUMN nope, n")


def test_alter_column_changes(base: Schema) -> None:
    new = apply_ddl(
        base,
        """ALTER TABLE t ALTER COLUMN n TYPE bigint;
           ALTER TABLE t ALTER COLUMN n SET DEFAULT 7;
           ALTER TABLE t ALTER COLUMN n COMMENT 'a number';
           ALTER TABLE t ALTER COLUMN id DROP NOT NULL;
           ALTER TABLE t ALTER COLUMN n FIRST;
           ALTER TABLE t ALTER COLUMN loc.lon BEFORE lat;
           ALTER TABLE t CHANGE COLUMN name AFTER loc""",
    )
    assert [f.name for f in new.fields] == ["n", "id", "loc", "name", "points", "attrs"]
    n = new.find("n")
    assert (n.id, n.type, n.write_default, n.comment) == (13, BIGINT, 7, "a number")
    assert new.find("id").nullable is True
    assert [f.name for f in new.find("loc").type.children()] == ["lon", "lat"]


def test_hudi_style_type_change_with_comment_and_position(base: Schema) -> None:
    new = apply_ddl(base, "ALTER TABLE t ALTER COLUMN n TYPE decimal(12,2) COMMENT 'c' AFTER id")
    assert [f.name for f in new.fields][:3] == ["id", "n", "name"]
    n = new.find("n")
    assert (n.id, n.type, n.comment) == (13, DecimalType(12, 2), "c")


def test_hive_change_renames_and_keeps_or_widens_the_type(base: Schema) -> None:
    new = apply_ddl(base, "ALTER TABLE t CHANGE COLUMN n num int COMMENT 'renamed'")
    num = new.find("num")
    assert (num.id, num.type, num.comment) == (13, INT, "renamed")
    new = apply_ddl(base, "ALTER TABLE t CHANGE n n double")
    assert (new.find("n").id, new.find("n").type) == (13, DOUBLE)
    new = apply_ddl(base, "ALTER TABLE t CHANGE loc loc struct<lat:double, lon:double>")
    assert new.fields == base.fields


def test_drop_default_and_set_default_null(base: Schema) -> None:
    with_default = apply_ddl(base, "ALTER TABLE t ALTER COLUMN name SET DEFAULT 'x'")
    assert with_default.find("name").write_default == "x"
    assert apply_ddl(with_default, "ALTER TABLE t ALTER COLUMN name DROP DEFAULT").find(
        "name"
    ).write_default is None
    assert apply_ddl(with_default, "ALTER TABLE t ALTER COLUMN name SET DEFAULT NULL").find(
        "name"
    ).write_default is None


def test_add_decimal_default_is_converted(base: Schema) -> None:
    new = apply_ddl(base, "ALTER TABLE t ADD COLUMN price decimal(6,2) DEFAULT 1.5")
    assert new.find("price").default == decimal.Decimal("1.50")


def test_set_not_null_needs_permission(base: Schema) -> None:
    with pytest.raises(SchemaEvolutionError, match="SET NOT NULL"):
        apply_ddl(base, "ALTER TABLE t ALTER COLUMN name SET NOT NULL")
    new = apply_ddl(base, "ALTER TABLE t ALTER COLUMN name SET NOT NULL",
                    allow_set_not_null=True)
    assert new.find("name").nullable is False


def test_a_failing_second_statement_applies_nothing(base: Schema) -> None:
    before = base.to_json()
    text = "ALTER TABLE t ADD COLUMN extra int;\nALTER TABLE t DROP COLUMN nmae"
    with pytest.raises(ColumnNotFoundError) as info:
        apply_ddl(base, text)
    err = info.value
    assert err.path == "nmae"
    assert err.suggestion == "name"
    assert err.__notes__ == ["in DDL statement 2 of 2: ALTER TABLE t DROP COLUMN nmae"]
    assert base.to_json() == before
    assert not base.has("extra")


def test_syntax_error_anywhere_applies_nothing(base: Schema) -> None:
    with pytest.raises(DDLSyntaxError) as info:
        ddl_to_update(base, "ALTER TABLE t ADD COLUMN extra int;\nALTER TABLE t DROP COLUM n")
    assert (info.value.line, info.value.column, info.value.token) == (2, 20, "COLUM")


def test_rejected_type_change(base: Schema) -> None:
    with pytest.raises(SchemaEvolutionError, match="smallint"):
        apply_ddl(base, "ALTER TABLE t ALTER COLUMN n TYPE smallint")


def test_add_default_of_the_wrong_type(base: Schema) -> None:
    with pytest.raises(InvalidDefaultError):
        apply_ddl(base, "ALTER TABLE t ADD COLUMN x int DEFAULT 'abc'")


def test_misspelt_position_anchor(base: Schema) -> None:
    with pytest.raises(ColumnNotFoundError) as info:
        apply_ddl(base, "ALTER TABLE t ADD COLUMN loc.alt double AFTER lta")
    assert info.value.suggestion == "lat"


def test_ddl_to_update_returns_one_update(base: Schema) -> None:
    update = ddl_to_update(
        base, "ALTER TABLE t ADD COLUMN a int; ALTER TABLE t RENAME COLUMN n TO m"
    )
    assert isinstance(update, SchemaUpdate)
    assert [op.kind for op in update.operations] == ["add", "rename"]
    new = update.apply()
    assert new.column_names == ["id", "name", "loc", "points", "attrs", "m", "a"]


def test_ddl_to_update_accepts_statements(base: Schema) -> None:
    statements = parse_ddl("ALTER TABLE t ALTER COLUMN n TYPE bigint")
    assert apply_ddl(base, statements).find("n").type == BIGINT
    single = AlterColumn("t", ("name",), comment="c")
    assert apply_ddl(base, single).find("name").comment == "c"
    assert apply_ddl(base, [DropColumns("t", (("n",),))]).column_names[-1] == "attrs"


def test_create_table_and_mixed_tables_are_refused(base: Schema) -> None:
    with pytest.raises(SchemaEvolutionError, match="CREATE TABLE"):
        apply_ddl(base, "CREATE TABLE t (a int)")
    with pytest.raises(SchemaEvolutionError, match="more than one table"):
        apply_ddl(base, "ALTER TABLE t DROP COLUMN n; ALTER TABLE u DROP COLUMN name")
    # Table names compare case-insensitively.
    assert apply_ddl(base, "ALTER TABLE T DROP COLUMN n; ALTER TABLE t DROP COLUMN name")


def test_backquoted_names_with_dots_and_spaces() -> None:
    base = parse_columns_schema("`a.b` struct<`c d`:int>, e int")
    new = apply_ddl(
        base,
        "ALTER TABLE t ADD COLUMN `a.b`.`x.y` string AFTER `c d`;"
        "ALTER TABLE t RENAME COLUMN `a.b`.`c d` TO `c.d`;"
        "ALTER TABLE t ALTER COLUMN e FIRST",
    )
    assert layout(new) == [
        ("e", 3, "int"),
        ("`a.b`", 1, "struct<`c.d`:int,`x.y`:string>"),
        ("`a.b`.`c.d`", 2, "int"),
        ("`a.b`.`x.y`", 4, "string"),
    ]


def test_move_after_a_sibling_whose_name_has_a_dot() -> None:
    base = parse_columns_schema("e int, `a.b` int")
    new = apply_ddl(base, "ALTER TABLE t ALTER COLUMN e AFTER `a.b`")
    assert new.column_names == ["a.b", "e"]


def test_empty_text_is_an_empty_update(base: Schema) -> None:
    update = ddl_to_update(base, " -- nothing ;")
    assert not update
    assert update.apply().fields == base.fields


def test_version_id_passes_through(base: Schema) -> None:
    new = apply_ddl(base, "ALTER TABLE t DROP COLUMN n", version_id="20240101000000000")
    assert new.version_id == "20240101000000000"
    assert new.fields[0].type == BIGINT
    assert new.find("name").type == STRING


@pytest.mark.parametrize(("ddl", "message", "hint"), [
    ("ALTER TABLE t ALTER COLUMN loc SET DEFAULT 1",
     "Cannot set a default on 'loc': struct<lat:double,lon:double> columns take no default",
     "set it on a member: ALTER COLUMN loc.<member> SET DEFAULT"),
    ("ALTER TABLE t ADD COLUMN z array<int> DEFAULT 1",
     "Default 1 does not convert to array<int> for column 'z': columns of type array<int> "
     "take no default", "leave DEFAULT out"),
    ("ALTER TABLE t ALTER COLUMN n SET DEFAULT 1.5",
     "Default 1.5 does not convert to int for column 'n'", "give a literal of type int"),
    ("ALTER TABLE t ALTER COLUMN n AFTER n", "Cannot move 'n' after itself",
     "name another column"),
    ("ALTER TABLE t ALTER COLUMN n", "expected TYPE, COMMENT, FIRST, AFTER, BEFORE, SET or DROP",
     "ALTER COLUMN n TYPE bigint"),
    ("ALTER TABLE t ADD COLUMN 1.5 int", "expected a column name", "in backquotes"),
    ("ALTER TABLE t DROP COLUMN n n", "expected ';' or the end of the text",
     "separate statements with ';'"),
])
def test_ddl_mistakes_say_what_to_do(base: Schema, ddl: str, message: str, hint: str) -> None:
    """Each of these refusals had no hint, or showed a literal as ``Decimal('1.5')``."""
    with pytest.raises(EvoError) as exc:
        apply_ddl(base, ddl)
    assert exc.value.message.startswith(message), exc.value.message
    assert hint in (exc.value.hint or ""), exc.value.hint


SYNTAX_MISTAKES = [
    ("ALTER t ADD COLUMN z int", "TABLE t ADD COLUMN"),
    ("ALTER TABLE t ADD z int", "ADD COLUMNS ("),
    ("ALTER TABLE t DROP n", "DROP COLUMNS ("),
    ("ALTER TABLE t DROP COLUMNS (n, id", "closed by ')'"),
    ("ALTER TABLE t RENAME COLUMN n AS m", "RENAME COLUMN n TO new_name"),
    ("ALTER TABLE t ADD COLUMN z int NOT", "NOT NULL"),
    ("ALTER TABLE t ALTER COLUMN n SET NOT", "NOT NULL"),
    ("ALTER TABLE t ALTER COLUMN n SET", "SET DEFAULT 0"),
    ("ALTER TABLE t ALTER COLUMN n COMMENT 5", "quotes"),
    ("ALTER TABLE t ALTER COLUMN n COMMENT 'a' COMMENT 'b'", "give it once"),
    ("ALTER TABLE t ALTER COLUMN loc.lat AFTER points.x", "in 'loc': AFTER loc.x"),
    ("ALTER TABLE t ADD COLUMN z array<int", "array<int>"),
    ("ALTER TABLE t ADD COLUMN z map<string int>", "map<string, int>"),
    ("ALTER TABLE t ADD COLUMN z struct<a: int b: int>", "closed by '>'"),
    ("ALTER TABLE t ADD COLUMN z struct<a: int, A: int>", "rename one of them"),
    ("ALTER TABLE t ADD COLUMN z decimal(10 2)", "decimal(p, s)"),
    ("ALTER TABLE t ADD COLUMN z decimal(x)", "decimal(p, s)"),
    ("ALTER TABLE t ADD COLUMN z decimal(40, 2)", "decimal(p, s)"),
    ("ALTER TABLE t ADD COLUMN z decimal(5, 7)", "decimal(p, s)"),
    ("ALTER TABLE t ADD COLUMN z varchar(x)", "varchar(n)"),
    ("ALTER TABLE t ADD COLUMN z varchar(9999999999)", "varchar(n)"),
    ("ALTER TABLE t ADD COLUMN z int DEFAULT -", "-5"),
    ("ALTER TABLE t ADD COLUMN z date DEFAULT CAST('2024-01-31' date)", "AS date)"),
    ("CREATE TABLE t (z int, Z int)", "rename one of them"),
    ("ALTER TABLE t ADD COLUMN z " + "array<" * 200 + "int" + ">" * 200, "nest fewer"),
    ("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b'", "'key1' = 'value'"),
    ("ALTER TABLE t UNSET TBLPROPERTIES IF ('a')", "IF EXISTS"),
    ("ALTER TABLE t UNSET TBLPROPERTIES ('a'", "('key1', 'key2')"),
    ("CREATE t (id int)", "CREATE TABLE t ("),
    ("CREATE TABLE IF EXISTS t (id int)", "IF NOT EXISTS"),
    ("CREATE TABLE t (id int) PARTITIONED (id)", "PARTITIONED BY (col1"),
    ("CREATE TABLE t (id int) PARTITIONED BY (id", "PARTITIONED BY (col1"),
    ("CREATE TABLE t (id int) COMMENT 'a' COMMENT 'b'", "give it once"),
]
"""Syntax mistakes, each with words its hint must show (the statement's right form)."""


@pytest.mark.parametrize(("ddl", "hint"), SYNTAX_MISTAKES, ids=[d for d, _ in SYNTAX_MISTAKES])
def test_syntax_mistakes_show_the_right_form(base: Schema, ddl: str, hint: str) -> None:
    """Each raised an error without a hint: the caret showed where, not what to write."""
    with pytest.raises(EvoError) as exc:
        if ddl.startswith("CREATE"):
            parse_ddl(ddl)
        else:
            apply_ddl(base, ddl)
    assert hint in (exc.value.hint or ""), (exc.value.message, exc.value.hint)
