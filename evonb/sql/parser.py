"""A small recursive-descent parser for Spark-style DDL over :mod:`evonb.sql.lexer` tokens.

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
"""

from __future__ import annotations

import datetime as dt
import decimal
import difflib
import re
from typing import Any, NoReturn, cast

from evonb.errors import DDLSyntaxError, InvalidDefaultError
from evonb.schema.defaults import INT_RANGES, coerce_default
from evonb.schema.ids import fresh_fields
from evonb.schema.schema import INITIAL_VERSION, Schema, format_path
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
    DecimalType,
    NestedField,
    StructType,
    Type,
    array_of,
    map_of,
)
from evonb.sql.lexer import EOF, IDENT, NUMBER, STR, WORD, Token, tokenize
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

PRIMITIVE_NAMES: dict[str, Type] = {
    "boolean": BOOLEAN,
    "bool": BOOLEAN,
    "tinyint": TINYINT,
    "byte": TINYINT,
    "smallint": SMALLINT,
    "short": SMALLINT,
    "int": INT,
    "integer": INT,
    "bigint": BIGINT,
    "long": BIGINT,
    "float": FLOAT,
    "real": FLOAT,
    "double": DOUBLE,
    "string": STRING,
    "binary": BINARY,
    "date": DATE,
    "timestamp": TIMESTAMP,
    "timestamp_ltz": TIMESTAMP,
    "timestamp_ntz": TIMESTAMP_NTZ,
}
DECIMAL_NAMES = ("decimal", "dec", "numeric")
CHAR_NAMES = ("varchar", "char", "character")
COMPLEX_NAMES = ("array", "map", "struct")
KNOWN_TYPES = (*PRIMITIVE_NAMES, *DECIMAL_NAMES, *CHAR_NAMES, *COMPLEX_NAMES)
MAX_DEPTH = 100
"""How deeply types may nest (deeper input is almost certainly a mistake)."""

_INT_SUFFIX = {"Y": TINYINT, "S": SMALLINT, "L": BIGINT}
_HEX_RE = re.compile(r"(?:[0-9a-fA-F]{2})*")
_LITERAL_HINT = (
    "a default must be a literal: a number, 'text', TRUE, FALSE, NULL, DATE '2020-01-01', "
    "TIMESTAMP '2020-01-01 10:00:00', X'0A0B' or CAST(literal AS type)"
)
_ALTER_ACTIONS = ("TYPE", "COMMENT", "FIRST", "AFTER", "BEFORE", "SET", "DROP")
_COLUMN_OPTIONS = ("NOT", "NULL", "DEFAULT", "COMMENT")
_POSITIONS = ("FIRST", "AFTER", "BEFORE")


class DDLDefaultError(DDLSyntaxError, InvalidDefaultError):
    """A DEFAULT literal that does not convert to its column's type, with its position in the text.

    Both a :class:`DDLSyntaxError` (line, column, token) and an :class:`InvalidDefaultError`.
    """


def _closest(word: str, options: tuple[str, ...] | list[str]) -> str | None:
    found = difflib.get_close_matches(word.lower(), [o.lower() for o in options], n=1, cutoff=0.6)
    return found[0] if found else None


class Parser:
    """Parses one DDL text; every error is a :class:`DDLSyntaxError` pointing into it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    # ------------------------------------------------------------------ token helpers
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> Token:
        t = self.tokens[self.i]
        if t.kind != EOF:
            self.i += 1
        return t

    def error(self, message: str, tok: Token | None = None, *, hint: str | None = None,
              cls: type[DDLSyntaxError] = DDLSyntaxError) -> DDLSyntaxError:
        """A syntax error at ``tok`` (the current token by default)."""
        tok = tok or self.tok
        if tok.kind == EOF:
            message += ", but the text ended"
        return cls(message, text=self.text, line=tok.line, column=tok.column, token=tok.text,
                   hint=hint)

    def at_word(self, *words: str) -> bool:
        return self.tok.is_word(*words)

    def accept_word(self, *words: str) -> Token | None:
        if self.tok.is_word(*words):
            return self.advance()
        return None

    def expect_word(self, word: str, message: str, *, hint: str | None = None) -> Token:
        if not self.tok.is_word(word):
            raise self.error(message, hint=hint)
        return self.advance()

    def accept_punct(self, ch: str) -> Token | None:
        if self.tok.is_punct(ch):
            return self.advance()
        return None

    def expect_punct(self, ch: str, message: str, *, hint: str | None = None) -> Token:
        if not self.tok.is_punct(ch):
            raise self.error(message, hint=hint)
        return self.advance()

    def at_end_of_statement(self) -> bool:
        return self.tok.kind == EOF or self.tok.is_punct(";")

    def expect_end(self) -> None:
        if self.tok.kind != EOF:
            raise self.error("unexpected text after the end")

    # ------------------------------------------------------------------ names
    def name(self, message: str, *, hint: str | None = None) -> str:
        """One identifier: a word or a backquoted name."""
        tok = self.tok
        if tok.kind == WORD or (tok.kind == IDENT and tok.value):
            self.advance()
            return str(tok.value)
        if tok.kind == IDENT:
            raise self.error("empty backquoted name", hint=hint)
        raise self.error(message, hint=hint)

    def path(self, message: str) -> tuple[str, ...]:
        """A dotted path of identifiers: ``a.b.c``, ```a b`.c``."""
        parts = [self.name(message)]
        while self.accept_punct("."):
            parts.append(self.name(f"expected a name after '.' in {format_path(tuple(parts))!r}"))
        return tuple(parts)

    def table_name(self) -> str:
        return ".".join(_quote(p) for p in self.path("expected a table name"))

    def string(self, message: str) -> str:
        """A string literal; adjacent literals are joined (``'a' 'b'`` is ``'ab'``)."""
        if self.tok.kind != STR:
            raise self.error(message)
        parts = [self.advance().value]
        while self.tok.kind == STR:
            parts.append(self.advance().value)
        return "".join(parts)

    def integer(self, message: str) -> tuple[int, Token]:
        tok = self.tok
        if tok.kind != NUMBER or not tok.text.isdigit():
            raise self.error(message)
        self.advance()
        if len(tok.text.lstrip("0")) > 9:
            raise self.error("number too large", tok)
        return int(tok.text), tok

    # ------------------------------------------------------------------ types
    def type_(self, where: str, depth: int = 0) -> Type:
        """A type; ``where`` completes "expected a type ..." (e.g. "after column name 'x'")."""
        tok = self.tok
        if depth > MAX_DEPTH:
            raise self.error(f"types nested more than {MAX_DEPTH} deep")
        where = f" {where}" if where else ""
        if tok.kind != WORD:
            raise self.error(f"expected a type{where}", hint=f"known types: {_known()}")
        name = tok.value.lower()
        if name in PRIMITIVE_NAMES:
            self.advance()
            return PRIMITIVE_NAMES[name]
        if name in DECIMAL_NAMES:
            return self._decimal()
        if name in CHAR_NAMES:
            self.advance()
            self.expect_punct("(", f"expected '(' and a length after {tok.text}",
                              hint=f"write {tok.text}(n), or use string")
            self.integer(f"expected a length in {tok.text}(...)")
            self.expect_punct(")", f"expected ')' after the length of {tok.text}")
            return STRING
        if name == "array":
            self.advance()
            self.expect_punct("<", "expected '<' after array", hint="write array<element type>")
            element = self.type_("in array<...>", depth + 1)
            self.expect_punct(">", "expected '>' to close array<...>")
            return array_of(element)
        if name == "map":
            self.advance()
            self.expect_punct("<", "expected '<' after map", hint="write map<key type, value type>")
            key = self.type_("for the key of map<...>", depth + 1)
            self.expect_punct(",", "expected ',' between the key and value types of map<...>")
            value = self.type_("for the value of map<...>", depth + 1)
            self.expect_punct(">", "expected '>' to close map<...>")
            return map_of(key, value)
        if name == "struct":
            self.advance()
            self.expect_punct("<", "expected '<' after struct",
                              hint="write struct<name: type, ...>")
            return self._struct_body(depth)
        close = _closest(name, KNOWN_TYPES)
        hint = f"did you mean {close!r}? " if close else ""
        if tok.is_word(*_COLUMN_OPTIONS, *_POSITIONS):
            raise self.error(f"expected a type{where}", hint=f"{hint}known types: {_known()}")
        raise self.error(f"unknown type {tok.text!r}{where}",
                         hint=f"{hint}known types: {_known()}")

    def _decimal(self) -> DecimalType:
        self.advance()
        if not self.accept_punct("("):
            return DecimalType(10, 0)
        precision, ptok = self.integer("expected a precision in decimal(...)")
        scale, stok = 0, ptok
        if self.accept_punct(","):
            scale, stok = self.integer("expected a scale after ',' in decimal(...)")
        self.expect_punct(")", "expected ')' to close decimal(...)")
        if not 1 <= precision <= 38:
            raise self.error(f"decimal precision must be 1..38, got {precision}", ptok)
        if scale > precision:
            raise self.error(f"decimal scale must be 0..{precision}, got {scale}", stok)
        return DecimalType(precision, scale)

    def _struct_body(self, depth: int) -> StructType:
        fields: list[NestedField] = []
        seen: dict[str, str] = {}
        if self.accept_punct(">"):
            return StructType(())
        while True:
            name_tok = self.tok
            name = self.name("expected a field name in struct<...>",
                             hint="write struct<name: type, ...>")
            if name.lower() in seen:
                raise self.error(
                    f"duplicate field name {name!r} in struct<...> (names are case-insensitive)",
                    name_tok)
            seen[name.lower()] = name
            self.accept_punct(":")
            t = self.type_(f"after struct field name {name!r}", depth + 1)
            nullable, comment = True, None
            while True:
                if self.accept_word("NOT"):
                    self.expect_word("NULL", "expected NULL after NOT")
                    nullable = False
                elif self.accept_word("COMMENT"):
                    comment = self.string(f"expected a string after COMMENT for field {name!r}")
                else:
                    break
            fields.append(NestedField(0, name, t, nullable, comment=comment))
            if self.accept_punct(","):
                continue
            self.expect_punct(">", f"expected ',' or '>' after struct field {name!r}")
            return StructType(tuple(fields))

    # ------------------------------------------------------------------ literals
    def literal(self, where: str) -> tuple[Any, Token]:
        """A literal value and its first token."""
        tok = self.tok
        if tok.is_punct("-") or tok.is_punct("+"):
            self.advance()
            if self.tok.kind != NUMBER:
                raise self.error(f"expected a number after {tok.text!r}")
            return _number(self, self.advance(), negative=tok.text == "-"), tok
        if tok.kind == NUMBER:
            return _number(self, self.advance(), negative=False), tok
        if tok.kind == STR:
            return self.string("expected a string"), tok
        if tok.is_word("TRUE", "FALSE"):
            self.advance()
            return tok.value.upper() == "TRUE", tok
        if tok.is_word("NULL"):
            self.advance()
            return None, tok
        if tok.is_word("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "X") and (
            self.peek().kind == STR
        ):
            self.advance()
            return self._typed_literal(tok.value.upper(), self.advance()), tok
        if tok.is_word("CAST") and self.peek().is_punct("("):
            return self._cast(), tok
        raise self.error(f"expected a literal {where}", hint=_LITERAL_HINT)

    def _typed_literal(self, kind: str, s: Token) -> Any:
        text = str(s.value).strip()
        try:
            if kind == "DATE":
                return dt.date.fromisoformat(text)
            if kind.startswith("TIMESTAMP"):
                value = dt.datetime.fromisoformat(text)
                return value.replace(tzinfo=None) if kind == "TIMESTAMP_NTZ" else value
        except ValueError:
            example = "'2020-01-01'" if kind == "DATE" else "'2020-01-01 10:00:00'"
            raise self.error(f"invalid {kind} literal {s.text}", s,
                             hint=f"write {kind} {example}") from None
        if not _HEX_RE.fullmatch(text):
            raise self.error(f"invalid binary literal X{s.text}", s,
                             hint="write an even number of hex digits, e.g. X'0A0B'")
        return bytes.fromhex(text)

    def _cast(self) -> Any:
        self.advance()
        self.advance()
        start = self.i
        value, vtok = self.literal("in CAST(...)")
        literal_tokens = self.tokens[start : self.i]
        self.expect_word("AS", "expected AS in CAST(literal AS type)")
        t = self.type_("after AS in CAST(...)")
        self.expect_punct(")", "expected ')' to close CAST(...)")
        number = literal_tokens[-1]
        if (isinstance(t, DecimalType) and isinstance(value, float) and number.kind == NUMBER
                and number.text[-1] not in "dDfF"):
            # Read 1.5E-11 exactly rather than through a double.
            value = decimal.Decimal(("-" if literal_tokens[0].is_punct("-") else "") + number.text)
        try:
            return coerce_default(value, t)
        except InvalidDefaultError as exc:
            raise self.error(f"cannot cast {value!r} to {t}", vtok, hint=exc.message) from None

    # ------------------------------------------------------------------ columns
    def column_def(self, seen: dict[str, str]) -> NestedField:
        """``name type {NOT NULL | DEFAULT literal | COMMENT 'text'}`` of CREATE TABLE."""
        name_tok = self.tok
        name = self.name("expected a column name")
        if name.lower() in seen:
            raise self.error(
                f"duplicate column name {name!r} (names are case-insensitive)", name_tok)
        seen[name.lower()] = name
        self.accept_punct(":")
        t = self.type_(f"after column name {name!r}")
        nullable, comment = True, None
        has_default, default, dtok = False, None, None
        given: set[str] = set()
        while True:
            tok = self.tok
            key = tok.value.upper() if tok.kind == WORD else ""
            if key not in ("NOT", "DEFAULT", "COMMENT"):
                break
            if key in given:
                raise self.error(f"{tok.text} given twice for column {name!r}")
            given.add(key)
            self.advance()
            if key == "NOT":
                self.expect_word("NULL", "expected NULL after NOT")
                nullable = False
            elif key == "DEFAULT":
                default, dtok = self.literal(f"after DEFAULT for column {name!r}")
                has_default = True
            else:
                comment = self.string(f"expected a string after COMMENT for column {name!r}")
        value = self._convert_default(default, t, name, dtok) if has_default else None
        return NestedField(0, name, t, nullable, value, value, comment)

    def _convert_default(self, value: Any, t: Type, where: str, tok: Token | None) -> Any:
        try:
            return coerce_default(value, t, path=where)
        except InvalidDefaultError as exc:
            err = self.error(exc.message, tok, hint=exc.hint, cls=DDLDefaultError)
            err.path, err.new = where, value
            raise err from None

    def column_list(self, close: str | None) -> tuple[NestedField, ...]:
        """Column definitions separated by ',' up to ``close`` (or the end of the text)."""
        fields: list[NestedField] = []
        seen: dict[str, str] = {}
        if close is None and self.tok.kind == EOF:
            return ()
        while True:
            fields.append(self.column_def(seen))
            if self.accept_punct(","):
                continue
            if close is None and self.tok.kind == EOF:
                return tuple(fields)
            if close is not None and self.accept_punct(close):
                return tuple(fields)
            self._bad_after_column(fields[-1].name, close)

    def _bad_after_column(self, name: str, close: str | None, options: tuple[str, ...] = (
            "NOT NULL", "DEFAULT", "COMMENT")) -> NoReturn:
        ends = f"',' or {close!r}" if close else "','"
        hint = "column options are " + ", ".join(options)
        tok = self.tok
        if tok.kind == WORD:
            close_word = _closest(tok.value, [o.split()[0] for o in options])
            if close_word:
                hint = f"did you mean {close_word.upper()}? " + hint
        raise self.error(f"expected {ends} after column {name!r}", hint=hint)

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
                raise self.error("expected ';' or the end of the text after the statement")

    def statement(self, *, alter_only: bool = False) -> list[Statement]:
        tok = self.tok
        if self.accept_word("ALTER"):
            self.expect_word("TABLE", "expected TABLE after ALTER")
            table = self.table_name()
            return list(self.alter(table))
        if self.at_word("CREATE") and not alter_only:
            self.advance()
            self.expect_word("TABLE", "expected TABLE after CREATE")
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
                self.expect_word("EXISTS", "expected EXISTS after IF")
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
            self.expect_word("COLUMNS", "expected COLUMN or COLUMNS after ADD")
        paren = self.accept_punct("(") is not None
        columns: list[ColumnSpec] = []
        while True:
            columns.append(self._add_spec())
            if self.tok.is_word("NOT", "DEFAULT", "COMMENT", *_POSITIONS):
                what = "a position" if self.tok.is_word(*_POSITIONS) else self.tok.text
                raise self.error(f"{what} given twice for column {columns[-1].name!r}")
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
                self.expect_word("NULL", "expected NULL after NOT")
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
                    f"{key} must name a column next to {format_path(path)!r} ({where})", tok)
            other = other[-1:]
        return ColumnPosition(cast(PositionKind, key.lower()), other[0])

    def _drop(self, table: str) -> DropColumns:
        if not self.accept_word("COLUMN"):
            self.expect_word("COLUMNS", "expected COLUMN or COLUMNS after DROP")
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
            self.expect_punct(")", "expected ',' or ')' after the column to drop")
        return DropColumns(table, tuple(paths), if_exists)

    def _rename(self, table: str) -> RenameColumn:
        self.expect_word("COLUMN", "expected COLUMN after RENAME",
                         hint="only columns can be renamed here: RENAME COLUMN a.b TO c")
        path = self.path("expected the column to rename")
        self.expect_word("TO", f"expected TO after RENAME COLUMN {format_path(path)}")
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
                raise self.error(f"{kind} given twice for column {shown!r}", tok)
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
                    self.expect_word("NULL", f"expected NULL after {tok.value.upper()} NOT")
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
                    raise self.error(f"expected NOT NULL or DEFAULT after {tok.value.upper()}")
            elif (hive and not seen and tok.kind in (WORD, IDENT)
                  and not tok.is_word(*_ALTER_ACTIONS)):
                # Hive's form: CHANGE [COLUMN] old_name new_name type [COMMENT ..] [position]
                seen.update(("TYPE", "new name"))
                changes["new_name"] = self.name("expected the new column name")
                changes["new_type"] = self.type_(f"after column name {changes['new_name']!r}")
                if self.accept_word("NOT"):
                    self.expect_word("NULL", "expected NULL after NOT")
                    seen.add("NOT NULL")
                    changes["nullable"] = False
            else:
                break
        if not seen:
            raise self.error(
                f"expected TYPE, COMMENT, FIRST, AFTER, BEFORE, SET or DROP after column {shown!r}")
        return AlterColumn(table, path, **changes)

    def create_table(self) -> CreateTable:
        if_not_exists = False
        if self.at_word("IF"):
            self.advance()
            self.expect_word("NOT", "expected NOT EXISTS after IF")
            self.expect_word("EXISTS", "expected EXISTS after IF NOT")
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
                raise self.error(f"{tok.text} given twice", tok)
            self.advance()
            if key == "USING":
                clauses[key] = self.name("expected a format name after USING")
            elif key == "PARTITIONED":
                self.expect_word("BY", "expected BY after PARTITIONED")
                clauses[key] = self._partition_columns(schema)
            elif key in ("TBLPROPERTIES", "OPTIONS"):
                clauses[key] = True
                properties.update(self._properties(key))
            else:
                clauses[key] = self.string(f"expected a string after {key}")
        if self.at_word("AS"):
            raise self.error("CREATE TABLE ... AS SELECT is not supported")
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
        self.expect_punct(")", "expected ',' or ')' in PARTITIONED BY (...)")
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
        self.expect_punct(")", "expected ',' or ')' in UNSET TBLPROPERTIES (...)")
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
        self.expect_punct(")", f"expected ',' or ')' in {keyword} (...)")
        return out


def _lower(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(n.lower() for n in names)


def _known() -> str:
    return (
        "boolean, tinyint, smallint, int, bigint, float, double, decimal(p,s), string, "
        "varchar(n), binary, date, timestamp, timestamp_ntz, array<T>, map<K,V>, struct<...>"
    )


def _quote(name: str) -> str:
    """``name``, backquoted unless it is a plain identifier."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _number(parser: Parser, tok: Token, *, negative: bool) -> Any:
    """The value of a numeric literal token (``5``, ``5L``, ``1.5``, ``1.5e3``, ``1.5BD``)."""
    text = ("-" if negative else "") + tok.text
    upper = text.upper()
    try:
        if upper.endswith("BD"):
            return decimal.Decimal(text[:-2])
        suffix = upper[-1]
        if suffix in _INT_SUFFIX:
            body = text[:-1]
            if not body.lstrip("-").isdigit():
                raise parser.error(f"invalid integer literal {tok.text}", tok,
                                   hint="a Y, S or L suffix needs a whole number")
            value = int(body)
            lo, hi = INT_RANGES[_INT_SUFFIX[suffix]]
            if not lo <= value <= hi:
                raise parser.error(
                    f"{text} is out of range for {_INT_SUFFIX[suffix]} ({lo}..{hi})", tok)
            return value
        if suffix in "DF":
            return float(text[:-1])
        if "E" in upper:
            return float(text)
        if "." in text:
            return decimal.Decimal(text)
        return int(text)
    except (ValueError, ArithmeticError):
        raise parser.error(f"invalid number {tok.text}", tok) from None


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


# ---------------------------------------------------------------------- public entry points
def parse_type(text: str) -> Type:
    """A Spark SQL type (``"struct<a:int,b:array<string>>"``); every field ID in it is 0."""
    p = Parser(text)
    t = p.type_("")
    p.expect_end()
    return t


def parse_columns_schema(text: str, *, version_id: str = INITIAL_VERSION) -> Schema:
    """A schema from a column list (``"id bigint not null, name string COMMENT 'x'"``).

    IDs are assigned from 1 in pre-order. A ``struct<...>`` type is also accepted.
    """
    p = Parser(text)
    if p.at_word("STRUCT") and p.peek().is_punct("<"):
        t = p.type_("")
        p.expect_end()
        return _schema(cast(StructType, t).fields, version_id)
    return _schema(p.column_list(None), version_id)


def parse_with_sources(text: str, *, alter_only: bool = False) -> list[tuple[Statement, str]]:
    """Statements of ``text``, each with the source text of the statement it came from."""
    return Parser(text).statements(alter_only=alter_only)


def parse_ddl(text: str) -> list[Statement]:
    """The statements of a DDL text, in order (empty statements between ``;`` are skipped)."""
    return [s for s, _ in parse_with_sources(text)]


def parse_alter(text: str) -> list[AlterStatement]:
    """Like :func:`parse_ddl` but only ALTER TABLE statements are allowed."""
    return [cast(AlterStatement, s) for s, _ in parse_with_sources(text, alter_only=True)]
