"""Reading type text, column lists and literals: ``struct<a:int,b:array<string>>``,
``decimal(10,2)``, ``id bigint NOT NULL DEFAULT 0 COMMENT 'key'``, ``DATE '2020-01-01'``.

This is the part of the DDL grammar that the schema core needs itself
(:meth:`~evonb.schema.schema.Schema.from_ddl`, type text given to
:class:`~evonb.schema.evolution.SchemaUpdate`). The statement parser of :mod:`evonb.sql` extends
:class:`TypeTextParser`, so there is one implementation of types, column definitions and
literals, and errors point into the text the same way everywhere. Tokens come from
:mod:`evonb.schema.ddl_lexer`.

Grammar (keywords in any case; ``[]`` optional, ``{}`` repeated)::

    columns    := [coldef {',' coldef}]
    coldef     := name [':'] type {NOT NULL | DEFAULT literal | COMMENT str}
    type       := primitive | decimal['(' p [',' s] ')'] | varchar '(' n ')' | array '<' type '>'
                | map '<' type ',' type '>' | struct '<' [member {',' member}] '>'
    member     := name [':'] type {NOT NULL | COMMENT str}
    literal    := ['-'|'+'] number | str {str} | TRUE | FALSE | NULL
                | (DATE|TIMESTAMP|TIMESTAMP_NTZ|TIMESTAMP_LTZ|X) str | CAST '(' literal AS type ')'
"""

from __future__ import annotations

import datetime as dt
import decimal
import difflib
import re
from typing import Any, NoReturn, cast

from evonb.errors import DDLSyntaxError, InvalidDefaultError
from evonb.schema.ddl_lexer import EOF, IDENT, NUMBER, STR, WORD, Token, tokenize
from evonb.schema.defaults import INT_RANGES, coerce_default
from evonb.schema.ids import fresh_fields
from evonb.schema.paths import format_path
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
_COLUMN_OPTIONS = ("NOT", "NULL", "DEFAULT", "COMMENT")
_POSITIONS = ("FIRST", "AFTER", "BEFORE")


class DDLDefaultError(DDLSyntaxError, InvalidDefaultError):
    """A DEFAULT literal that does not convert to its column's type, with its position in the text.

    Both a :class:`DDLSyntaxError` (line, column, token) and an :class:`InvalidDefaultError`.
    """


def _closest(word: str, options: tuple[str, ...] | list[str]) -> str | None:
    found = difflib.get_close_matches(word.lower(), [o.lower() for o in options], n=1, cutoff=0.6)
    return found[0] if found else None


NAME_HINT = "a name is a word of letters, digits and _, or any text in backquotes (`my col`)"
"""The hint of an error where a name was expected and the parser's caller gave none."""
END_HINT = "end the text there, or separate statements with ';'"
"""The hint of an error at text after the end of a type or statement."""
NOT_NULL_HINT = "write NOT NULL (a column that holds no nulls), or leave NOT out"
"""The hint of an error where NULL should follow NOT."""
STRING_HINT = "text goes in quotes: 'like this'"
"""The hint of an error where a string literal was expected and the caller gave none."""
TWICE_HINT = "give it once"
"""The hint of an error at a clause or setting given twice."""
DECIMAL_HINT = "decimal(p, s): a precision p of 1 to 38 digits, a scale s of 0 to p"
"""The hint of an error in a decimal type's precision or scale."""
DUPLICATE_HINT = "rename one of them (names differing only in case are the same name)"
"""The hint of an error at a column or field name given twice."""


class TypeTextParser:
    """Parses types, column lists and literals of one text; every error is a
    :class:`DDLSyntaxError` pointing into it."""

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

    def expect_null(self, after: str = "NOT") -> Token:
        """The word NULL that must follow ``after`` (``NOT``, or ``SET NOT`` and the like)."""
        return self.expect_word("NULL", f"expected NULL after {after}", hint=NOT_NULL_HINT)

    def accept_punct(self, ch: str) -> Token | None:
        if self.tok.is_punct(ch):
            return self.advance()
        return None

    def expect_punct(self, ch: str, message: str, *, hint: str | None = None) -> Token:
        if not self.tok.is_punct(ch):
            raise self.error(message, hint=hint)
        return self.advance()

    def expect_end(self) -> None:
        if self.tok.kind != EOF:
            raise self.error("unexpected text after the end", hint=END_HINT)

    # ------------------------------------------------------------------ names
    def name(self, message: str, *, hint: str | None = None) -> str:
        """One identifier: a word or a backquoted name."""
        tok = self.tok
        if tok.kind == WORD or (tok.kind == IDENT and tok.value):
            self.advance()
            return str(tok.value)
        hint = hint or NAME_HINT
        if tok.kind == IDENT:
            raise self.error("empty backquoted name", hint=hint)
        raise self.error(message, hint=hint)

    def path(self, message: str) -> tuple[str, ...]:
        """A dotted path of identifiers: ``a.b.c``, ```a b`.c``."""
        parts = [self.name(message)]
        while self.accept_punct("."):
            parts.append(self.name(f"expected a name after '.' in {format_path(tuple(parts))!r}"))
        return tuple(parts)

    def string(self, message: str, *, hint: str | None = None) -> str:
        """A string literal; adjacent literals are joined (``'a' 'b'`` is ``'ab'``)."""
        if self.tok.kind != STR:
            raise self.error(message, hint=hint or STRING_HINT)
        parts = [self.advance().value]
        while self.tok.kind == STR:
            parts.append(self.advance().value)
        return "".join(parts)

    def integer(self, message: str, *, hint: str) -> tuple[int, Token]:
        """A whole number of at most 9 digits, and its token."""
        tok = self.tok
        if tok.kind != NUMBER or not tok.text.isdigit():
            raise self.error(message, hint=hint)
        self.advance()
        if len(tok.text.lstrip("0")) > 9:
            raise self.error("number too large", tok, hint=hint)
        return int(tok.text), tok

    # ------------------------------------------------------------------ types
    def type_(self, where: str, depth: int = 0) -> Type:
        """A type; ``where`` completes "expected a type ..." (e.g. "after column name 'x'")."""
        tok = self.tok
        if depth > MAX_DEPTH:
            raise self.error(f"types nested more than {MAX_DEPTH} deep",
                             hint="nest fewer levels of struct, array and map")
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
            self.integer(f"expected a length in {tok.text}(...)",
                         hint=f"write {tok.text}(n), or use string")
            self.expect_punct(")", f"expected ')' after the length of {tok.text}",
                              hint=f"write {tok.text}(n), or use string")
            return STRING
        if name == "array":
            self.advance()
            self.expect_punct("<", "expected '<' after array", hint="write array<element type>")
            element = self.type_("in array<...>", depth + 1)
            self.expect_punct(">", "expected '>' to close array<...>",
                              hint="array<int>, or array<struct<a: int>>")
            return array_of(element)
        if name == "map":
            self.advance()
            self.expect_punct("<", "expected '<' after map", hint="write map<key type, value type>")
            key = self.type_("for the key of map<...>", depth + 1)
            self.expect_punct(",", "expected ',' between the key and value types of map<...>",
                              hint="map<string, int>: the key type, ',', the value type")
            value = self.type_("for the value of map<...>", depth + 1)
            self.expect_punct(">", "expected '>' to close map<...>",
                              hint="map<string, int>: the key type, ',', the value type")
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
        precision, ptok = self.integer("expected a precision in decimal(...)", hint=DECIMAL_HINT)
        scale, stok = 0, ptok
        if self.accept_punct(","):
            scale, stok = self.integer("expected a scale after ',' in decimal(...)",
                                       hint=DECIMAL_HINT)
        self.expect_punct(")", "expected ')' to close decimal(...)",
                          hint=DECIMAL_HINT)
        if not 1 <= precision <= 38:
            raise self.error(f"decimal precision must be 1..38, got {precision}", ptok,
                             hint=DECIMAL_HINT)
        if scale > precision:
            raise self.error(f"decimal scale must be 0..{precision}, got {scale}", stok,
                             hint=DECIMAL_HINT)
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
                    name_tok, hint=DUPLICATE_HINT)
            seen[name.lower()] = name
            self.accept_punct(":")
            t = self.type_(f"after struct field name {name!r}", depth + 1)
            nullable, comment = True, None
            while True:
                if self.accept_word("NOT"):
                    self.expect_null()
                    nullable = False
                elif self.accept_word("COMMENT"):
                    comment = self.string(f"expected a string after COMMENT for field {name!r}")
                else:
                    break
            fields.append(NestedField(0, name, t, nullable, comment=comment))
            if self.accept_punct(","):
                continue
            self.expect_punct(">", f"expected ',' or '>' after struct field {name!r}",
                              hint="struct<a: int, b: string>: fields separated by ',', "
                                   "closed by '>'")
            return StructType(tuple(fields))

    # ------------------------------------------------------------------ literals
    def literal(self, where: str) -> tuple[Any, Token]:
        """A literal value and its first token."""
        tok = self.tok
        if tok.is_punct("-") or tok.is_punct("+"):
            self.advance()
            if self.tok.kind != NUMBER:
                raise self.error(f"expected a number after {tok.text!r}",
                                 hint=f"write the number right after it: {tok.text}5")
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
        self.expect_word("AS", "expected AS in CAST(literal AS type)",
                         hint="CAST('2024-01-31' AS date)")
        t = self.type_("after AS in CAST(...)")
        self.expect_punct(")", "expected ')' to close CAST(...)",
                          hint="CAST('2024-01-31' AS date)")
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
                f"duplicate column name {name!r} (names are case-insensitive)", name_tok,
                hint=DUPLICATE_HINT)
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
                raise self.error(f"{tok.text} given twice for column {name!r}", hint=TWICE_HINT)
            given.add(key)
            self.advance()
            if key == "NOT":
                self.expect_null()
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


def _known() -> str:
    return (
        "boolean, tinyint, smallint, int, bigint, float, double, decimal(p,s), string, "
        "varchar(n), binary, date, timestamp, timestamp_ntz, array<T>, map<K,V>, struct<...>"
    )


def _number(parser: TypeTextParser, tok: Token, *, negative: bool) -> Any:
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



# ---------------------------------------------------------------------- public entry points
def parse_type(text: str) -> Type:
    """A Spark SQL type (``"struct<a:int,b:array<string>>"``); every field ID in it is 0."""
    p = TypeTextParser(text)
    t = p.type_("")
    p.expect_end()
    return t


def parse_columns(text: str) -> tuple[tuple[NestedField, ...], int]:
    """The fields of a column list (``"id bigint not null, name string COMMENT 'x'"``) and the
    last ID given to them: IDs are assigned from 1 in pre-order. A ``struct<...>`` type is also
    accepted."""
    p = TypeTextParser(text)
    if p.at_word("STRUCT") and p.peek().is_punct("<"):
        t = p.type_("")
        p.expect_end()
        return fresh_fields(cast(StructType, t).fields, 1)
    return fresh_fields(p.column_list(None), 1)
