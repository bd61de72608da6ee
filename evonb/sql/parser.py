"""A small recursive-descent parser for Spark-style DDL over :mod:`evonb.schema.ddl_lexer` tokens.

Grammar (keywords in any case; ``[]`` optional, ``{}`` repeated)::

    ddl        := [statement] {';' [statement]}
    statement  := ALTER TABLE name alter
                | CREATE TABLE [IF NOT EXISTS] name '(' coldefs ')' {clause}
    alter      := ADD (COLUMN|COLUMNS) ('(' addcol {',' addcol} ')' | addcol {',' addcol})
                | DROP (COLUMN|COLUMNS) [IF EXISTS] ('(' paths ')' | paths)
                | RENAME COLUMN path TO name
                | (ALTER|CHANGE) [COLUMN] path change {change} {',' path change {change}}
                | SET TBLPROPERTIES '(' str '=' value {',' str '=' value} ')'
                | UNSET TBLPROPERTIES [IF EXISTS] '(' str {',' str} ')'
    change     := TYPE type | COMMENT str | FIRST | AFTER name | BEFORE name
                | (SET|DROP) NOT NULL | SET DEFAULT literal | DROP DEFAULT
    type       := primitive | decimal['(' p [',' s] ')'] | varchar '(' n ')' | array '<' type '>'
                | map '<' type ',' type '>' | struct '<' [member {',' member}] '>'
    member     := name [':'] type {NOT NULL | COMMENT str}

Types, column definitions and literals are read by :class:`~evonb.schema.type_text.TypeTextParser`,
which :class:`Parser` extends with statements.
"""

from __future__ import annotations

from typing import Any, cast

from evonb.schema.ddl_lexer import EOF, IDENT, STR, WORD, Token
from evonb.schema.ids import fresh_fields
from evonb.schema.render import quote_identifier
from evonb.schema.schema import INITIAL_VERSION, Schema, format_path
from evonb.schema.type_text import (
    _POSITIONS,
    CHAR_NAMES,
    COMPLEX_NAMES,
    DECIMAL_NAMES,
    END_HINT,
    KNOWN_TYPES,
    MAX_DEPTH,
    PRIMITIVE_NAMES,
    TWICE_HINT,
    DDLDefaultError,
    TypeTextParser,
    _closest,
    parse_type,
)
from evonb.schema.types import NestedField
from evonb.sql.statements import (
    AddColumns,
    AlterColumn,
    AlterStatement,
    ColumnPosition,
    ColumnSpec,
    CreateTable,
    DropColumns,
    PositionKind,
    RenameColumn,
    SetProperties,
    Statement,
    UnsetProperties,
)

_ALTER_ACTIONS = ("TYPE", "COMMENT", "FIRST", "AFTER", "BEFORE", "SET", "DROP")


class Parser(TypeTextParser):
    """Parses one DDL text; every error is a :class:`DDLSyntaxError` pointing into it."""

    def at_end_of_statement(self) -> bool:
        return self.tok.kind == EOF or self.tok.is_punct(";")

    def table_name(self) -> str:
        return ".".join(quote_identifier(p) for p in self.path("expected a table name"))

    # ------------------------------------------------------------------ statements
    def statements(self, *, alter_only: bool = False) -> list[tuple[Statement, str]]:
        """All statements with the source text of each."""
        out: list[tuple[Statement, str]] = []
        while True:
            while self.accept_punct(";"):
                pass
            if self.tok.kind == EOF:
                return out
            start = self.tok.offset
            parsed = self.statement(alter_only=alter_only)
            source = self.text[start : self.tokens[self.i - 1].end]
            out.extend((s, source) for s in parsed)
            if not self.at_end_of_statement():
                raise self.error("expected ';' or the end of the text after the statement",
                                 hint=END_HINT)

    def statement(self, *, alter_only: bool = False) -> list[Statement]:
        tok = self.tok
        if self.accept_word("ALTER"):
            self.expect_word("TABLE", "expected TABLE after ALTER",
                             hint="ALTER TABLE t ADD COLUMN c int")
            table = self.table_name()
            return list(self.alter(table))
        if self.at_word("CREATE") and not alter_only:
            self.advance()
            self.expect_word("TABLE", "expected TABLE after CREATE",
                             hint="CREATE TABLE t (id bigint, name string)")
            return [self.create_table()]
        hint = "statements start with ALTER TABLE" + ("" if alter_only else " or CREATE TABLE")
        close = _closest(tok.value, ["ALTER", "CREATE"]) if tok.kind == WORD else None
        if close:
            hint = f"did you mean {close.upper()}? {hint}"
        expected = "ALTER TABLE" if alter_only else "ALTER TABLE or CREATE TABLE"
        raise self.error(f"expected {expected}", hint=hint)

    def alter(self, table: str) -> list[AlterStatement]:
        tok = self.tok
        if self.accept_word("ADD"):
            return [self._add(table)]
        if self.accept_word("DROP"):
            return [self._drop(table)]
        if self.accept_word("RENAME"):
            return [self._rename(table)]
        if self.at_word("ALTER", "CHANGE"):
            hive = self.advance().value.upper() == "CHANGE"
            if self.at_word("COLUMN") and self.peek().kind in (WORD, IDENT):
                self.advance()
            out: list[AlterStatement] = [self._alter_column(table, hive)]
            while self.accept_punct(","):
                out.append(self._alter_column(table, hive))
            return out
        if self.accept_word("SET"):
            self.expect_word("TBLPROPERTIES", "expected TBLPROPERTIES after SET",
                             hint="SET TBLPROPERTIES ('key' = 'value', ...)")
            return [SetProperties(table, self._properties("TBLPROPERTIES"))]
        if self.accept_word("UNSET"):
            self.expect_word("TBLPROPERTIES", "expected TBLPROPERTIES after UNSET",
                             hint="UNSET TBLPROPERTIES [IF EXISTS] ('key', ...)")
            if_exists = self.accept_word("IF") is not None
            if if_exists:
                self.expect_word("EXISTS", "expected EXISTS after IF",
                                 hint="UNSET TBLPROPERTIES IF EXISTS ('key', ...)")
            return [UnsetProperties(table, self._property_names(), if_exists)]
        actions = ["ADD", "DROP", "RENAME", "ALTER", "CHANGE", "SET", "UNSET"]
        close = _closest(tok.value, actions) if tok.kind == WORD else None
        hint = f"did you mean {close.upper()}? " if close else ""
        raise self.error(f"expected ADD, DROP, RENAME, ALTER, CHANGE, SET or UNSET after table "
                         f"{table!r}",
                         hint=hint + "evonb DDL changes columns (ADD COLUMNS, DROP COLUMNS, "
                         "RENAME COLUMN, ALTER COLUMN) and table properties (SET/UNSET "
                         "TBLPROPERTIES)")

    def _add(self, table: str) -> AddColumns:
        if not self.accept_word("COLUMN"):
            self.expect_word("COLUMNS", "expected COLUMN or COLUMNS after ADD",
                             hint="ADD COLUMN c int, or ADD COLUMNS (c int, d string)")
        paren = self.accept_punct("(") is not None
        columns: list[ColumnSpec] = []
        while True:
            columns.append(self._add_spec())
            if self.tok.is_word("NOT", "DEFAULT", "COMMENT", *_POSITIONS):
                what = "a position" if self.tok.is_word(*_POSITIONS) else self.tok.text
                raise self.error(f"{what} given twice for column {columns[-1].name!r}",
                                 hint=TWICE_HINT)
            if self.accept_punct(","):
                continue
            done = self.accept_punct(")") if paren else self.at_end_of_statement()
            if done:
                return AddColumns(table, tuple(columns))
            self._bad_after_column(columns[-1].name, ")" if paren else ";", (
                "NOT NULL", "DEFAULT", "COMMENT", "FIRST", "AFTER", "BEFORE"))

    def _add_spec(self) -> ColumnSpec:
        path = self.path("expected a column name")
        shown = format_path(path)
        t = self.type_(f"after column name {shown!r}")
        nullable, default, has_default, comment = True, None, False, None
        position: ColumnPosition | None = None
        given: set[str] = set()
        while self.tok.kind == WORD:
            key = self.tok.value.upper()
            group = "POSITION" if key in _POSITIONS else key
            if key not in ("NOT", "DEFAULT", "COMMENT", *_POSITIONS) or group in given:
                break
            given.add(group)
            self.advance()
            if key == "NOT":
                self.expect_null()
                nullable = False
            elif key == "DEFAULT":
                default, dtok = self.literal(f"after DEFAULT for column {shown!r}")
                has_default = True
                if default is not None:
                    self._convert_default(default, t, shown, dtok)
            elif key == "COMMENT":
                comment = self.string(f"expected a string after COMMENT for column {shown!r}")
            else:
                position = self._position(key, path)
        return ColumnSpec(path, t, nullable, default, has_default, comment, position)

    def _position(self, key: str, path: tuple[str, ...]) -> ColumnPosition:
        """The rest of ``FIRST`` / ``AFTER col`` / ``BEFORE col`` (the keyword is consumed)."""
        if key == "FIRST":
            return ColumnPosition("first")
        tok = self.tok
        other = self.path(f"expected a column name after {key}")
        parent = path[:-1]
        if len(other) > 1:
            if _lower(other[:-1]) != _lower(parent):
                where = f"in {format_path(parent)!r}" if parent else "at the top level"
                raise self.error(
                    f"{key} must name a column next to {format_path(path)!r} ({where})", tok,
                    hint=f"name a column {where}: {key} {format_path((*parent, other[-1]))}")
            other = other[-1:]
        return ColumnPosition(cast(PositionKind, key.lower()), other[0])

    def _drop(self, table: str) -> DropColumns:
        if not self.accept_word("COLUMN"):
            self.expect_word("COLUMNS", "expected COLUMN or COLUMNS after DROP",
                             hint="DROP COLUMN c, or DROP COLUMNS (c, d)")
        if_exists = False
        if self.at_word("IF") and self.peek().is_word("EXISTS"):
            self.advance()
            self.advance()
            if_exists = True
        paren = self.accept_punct("(") is not None
        paths = [self.path("expected a column name to drop")]
        while self.accept_punct(","):
            paths.append(self.path("expected a column name to drop"))
        if paren:
            self.expect_punct(")", "expected ',' or ')' after the column to drop",
                              hint="DROP COLUMNS (c, d): names separated by ',', closed by ')'")
        return DropColumns(table, tuple(paths), if_exists)

    def _rename(self, table: str) -> RenameColumn:
        self.expect_word("COLUMN", "expected COLUMN after RENAME",
                         hint="only columns can be renamed here: RENAME COLUMN a.b TO c")
        path = self.path("expected the column to rename")
        self.expect_word("TO", f"expected TO after RENAME COLUMN {format_path(path)}",
                         hint=f"RENAME COLUMN {format_path(path)} TO new_name")
        tok = self.tok
        target = self.path("expected the new column name after TO")
        if len(target) > 1 and _lower(target[:-1]) != _lower(path[:-1]):
            raise self.error(
                "RENAME COLUMN cannot move a column to another struct", tok,
                hint=f"give only the new name: RENAME COLUMN {format_path(path)} TO "
                f"{format_path(target[-1:])}")
        return RenameColumn(table, path, target[-1])

    def _alter_column(self, table: str, hive: bool) -> AlterColumn:
        path = self.path("expected a column name")
        shown = format_path(path)
        changes: dict[str, Any] = {}
        seen: set[str] = set()

        def once(kind: str, tok: Token) -> None:
            if kind in seen:
                raise self.error(f"{kind} given twice for column {shown!r}", tok, hint=TWICE_HINT)
            seen.add(kind)

        while True:
            tok = self.tok
            if self.accept_word("TYPE"):
                once("TYPE", tok)
                changes["new_type"] = self.type_("after TYPE")
            elif self.accept_word("COMMENT"):
                once("COMMENT", tok)
                changes["comment"] = self.string(f"expected a string after COMMENT for {shown!r}")
            elif self.accept_word(*_POSITIONS):
                once("a position", tok)
                changes["position"] = self._position(tok.value.upper(), path)
            elif self.accept_word("SET", "DROP"):
                setting = tok.value.upper() == "SET"
                if self.accept_word("NOT"):
                    self.expect_null(f"{tok.value.upper()} NOT")
                    once("NOT NULL", tok)
                    changes["nullable"] = not setting
                elif self.accept_word("DEFAULT"):
                    once("DEFAULT", tok)
                    if setting:
                        changes["default"] = self.literal(f"after SET DEFAULT for {shown!r}")[0]
                        changes["set_default"] = True
                    else:
                        changes["drop_default"] = True
                else:
                    raise self.error(f"expected NOT NULL or DEFAULT after {tok.value.upper()}",
                                 hint="SET NOT NULL, DROP NOT NULL, SET DEFAULT 0 or DROP DEFAULT")
            elif (hive and not seen and tok.kind in (WORD, IDENT)
                  and not tok.is_word(*_ALTER_ACTIONS)):
                # Hive's form: CHANGE [COLUMN] old_name new_name type [COMMENT ..] [position]
                seen.update(("TYPE", "new name"))
                changes["new_name"] = self.name("expected the new column name")
                changes["new_type"] = self.type_(f"after column name {changes['new_name']!r}")
                if self.accept_word("NOT"):
                    self.expect_null()
                    seen.add("NOT NULL")
                    changes["nullable"] = False
            else:
                break
        if not seen:
            raise self.error(
                f"expected TYPE, COMMENT, FIRST, AFTER, BEFORE, SET or DROP after column {shown!r}",
                hint=f"e.g. ALTER COLUMN {shown} TYPE bigint, or ALTER COLUMN {shown} SET "
                     "DEFAULT 0")
        return AlterColumn(table, path, **changes)

    def create_table(self) -> CreateTable:
        if_not_exists = False
        if self.at_word("IF"):
            self.advance()
            self.expect_word("NOT", "expected NOT EXISTS after IF",
                             hint="CREATE TABLE IF NOT EXISTS t (id bigint)")
            self.expect_word("EXISTS", "expected EXISTS after IF NOT",
                             hint="CREATE TABLE IF NOT EXISTS t (id bigint)")
            if_not_exists = True
        table = self.table_name()
        self.expect_punct("(", f"expected '(' and the columns after the table name {table!r}",
                          hint="CREATE TABLE t (id bigint, name string)")
        fields = self.column_list(")")
        schema = _schema(fields, INITIAL_VERSION)
        clauses: dict[str, Any] = {}
        properties: dict[str, str] = {}
        while True:
            tok = self.tok
            key = tok.value.upper() if tok.kind == WORD else ""
            if key not in ("USING", "PARTITIONED", "TBLPROPERTIES", "OPTIONS", "LOCATION",
                           "COMMENT"):
                break
            if key in clauses:
                raise self.error(f"{tok.text} given twice", tok, hint=TWICE_HINT)
            self.advance()
            if key == "USING":
                clauses[key] = self.name("expected a format name after USING")
            elif key == "PARTITIONED":
                self.expect_word("BY", "expected BY after PARTITIONED",
                                 hint="PARTITIONED BY (col1, col2)")
                clauses[key] = self._partition_columns(schema)
            elif key in ("TBLPROPERTIES", "OPTIONS"):
                clauses[key] = True
                properties.update(self._properties(key))
            else:
                clauses[key] = self.string(f"expected a string after {key}")
        if self.at_word("AS"):
            raise self.error("CREATE TABLE ... AS SELECT is not supported",
                             hint="create the table, then write the query's rows: "
                             "evonb.create_table(...).write(spark.sql(query))")
        return CreateTable(
            table,
            schema,
            partition_by=clauses.get("PARTITIONED", ()),
            properties=properties,
            location=clauses.get("LOCATION"),
            comment=clauses.get("COMMENT"),
            using=clauses.get("USING"),
            if_not_exists=if_not_exists,
            primary_key=_primary_key(properties),
            precombine=_prop(properties, "precombinefield", "precombine"),
        )

    def _partition_columns(self, schema: Schema) -> tuple[str, ...]:
        self.expect_punct("(", "expected '(' after PARTITIONED BY",
                          hint="PARTITIONED BY (col1, col2)")
        names: list[str] = []
        while True:
            tok = self.tok
            name = self.name("expected a column name in PARTITIONED BY (...)")
            column = schema.struct.field_by_name(name)
            if column is None:
                close = _closest(name, schema.column_names)
                raise self.error(f"partition column {name!r} is not a column of the table", tok,
                                 hint=f"did you mean {close!r}?" if close else None)
            names.append(column.name)
            if not self.accept_punct(","):
                break
        self.expect_punct(")", "expected ',' or ')' in PARTITIONED BY (...)",
                          hint="PARTITIONED BY (col1, col2): names separated by ',', closed by ')'")
        return tuple(names)

    def _property_names(self) -> tuple[str, ...]:
        self.expect_punct("(", "expected '(' after UNSET TBLPROPERTIES",
                          hint="UNSET TBLPROPERTIES ('key', ...)")
        names: list[str] = []
        while True:
            if self.tok.kind == STR:
                names.append(self.string("expected a property name"))
            else:
                names.append(".".join(self.path("expected a property name in UNSET "
                                                "TBLPROPERTIES (...)")))
            if not self.accept_punct(","):
                break
        self.expect_punct(")", "expected ',' or ')' in UNSET TBLPROPERTIES (...)",
                          hint="UNSET TBLPROPERTIES ('key1', 'key2')")
        return tuple(names)

    def _properties(self, keyword: str) -> dict[str, str]:
        self.expect_punct("(", f"expected '(' after {keyword}",
                          hint=f"{keyword} ('key' = 'value', ...)")
        out: dict[str, str] = {}
        if self.accept_punct(")"):
            return out
        while True:
            if self.tok.kind == STR:
                key = self.string("expected a property name")
            else:
                key = ".".join(self.path(f"expected a property name in {keyword} (...)"))
            self.accept_punct("=")
            if self.tok.kind == WORD and not self.tok.is_word("TRUE", "FALSE", "NULL"):
                out[key] = self.advance().text
            else:
                out[key] = _property_text(self.literal(f"for property {key!r}")[0])
            if not self.accept_punct(","):
                break
        self.expect_punct(")", f"expected ',' or ')' in {keyword} (...)",
                          hint=f"{keyword} ('key1' = 'value', 'key2' = 'value')")
        return out


def _lower(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(n.lower() for n in names)


def _property_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _prop(properties: dict[str, str], *names: str) -> str | None:
    lowered = {k.lower(): v for k, v in properties.items()}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


def _primary_key(properties: dict[str, str]) -> tuple[str, ...]:
    value = _prop(properties, "primarykey", "primary_key")
    if not value:
        return ()
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _schema(fields: tuple[NestedField, ...], version_id: str) -> Schema:
    numbered, last = fresh_fields(fields, 1)
    return Schema(numbered, version_id, last)


def parse_with_sources(text: str, *, alter_only: bool = False) -> list[tuple[Statement, str]]:
    """Statements of ``text``, each with the source text of the statement it came from."""
    return Parser(text).statements(alter_only=alter_only)


def parse_ddl(text: str) -> list[Statement]:
    """The statements of a DDL text, in order (empty statements between ``;`` are skipped)."""
    return [s for s, _ in parse_with_sources(text)]


def parse_alter(text: str) -> list[AlterStatement]:
    """Like :func:`parse_ddl` but only ALTER TABLE statements are allowed."""
    return [cast(AlterStatement, s) for s, _ in parse_with_sources(text, alter_only=True)]


def parse_columns_schema(text: str, *, version_id: str = INITIAL_VERSION) -> Schema:
    """A schema from a column list (``"id bigint not null, name string COMMENT 'x'"``).

    IDs are assigned from 1 in pre-order. A ``struct<...>`` type is also accepted. The same as
    :meth:`Schema.from_ddl <evonb.schema.schema.Schema.from_ddl>`.
    """
    return Schema.from_ddl(text, version_id=version_id)


__all__ = [
    "CHAR_NAMES", "COMPLEX_NAMES", "DECIMAL_NAMES", "KNOWN_TYPES", "MAX_DEPTH", "PRIMITIVE_NAMES",
    "DDLDefaultError", "Parser", "parse_alter", "parse_columns_schema", "parse_ddl", "parse_type",
    "parse_with_sources",
]
