"""Tokens of DDL text (types, column lists, literals, statements), built on sqlparse's lexer.

sqlparse does the bulk of the work (whitespace, comments, words, punctuation); this module fixes
the places where its SQL dialect differs from Spark's: string literals with backslash escapes,
numeric literals with suffixes (``1.5BD``, ``5L``), multi-word keywords (``NOT NULL``), runs of
angle brackets (``>>``) and ``:name`` placeholders. Every token carries its 1-based line and
column so that errors can point at it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlparse import lexer as _sqlparse_lexer
from sqlparse import tokens as T

from evonb.arguments import check_text
from evonb.errors import DDLSyntaxError
from evonb.schema.spark_comments import blank_comments, unclosed_comment

WORD = "word"
"""An unquoted identifier or keyword; ``value`` is its text."""
IDENT = "ident"
"""A backquoted identifier; ``value`` is the name without quotes."""
STR = "string"
"""A string literal; ``value`` is the unescaped text."""
NUMBER = "number"
"""An unsigned numeric literal; ``value`` is its text (suffix included)."""
PUNCT = "punct"
"""A single character of punctuation or an operator."""
EOF = "eof"
"""The end of the input."""

NUMBER_RE = re.compile(
    r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?(?:[bB][dD]|[lLsSyYdDfF])?(?!\w)"
)
_WORD_RE = re.compile(r"\w+")
_DIGITS = frozenset("0123456789")
_ESCAPES = {
    "0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a",
    "%": "\\%", "_": "\\_",
}


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, source text, parsed value and position (1-based line and column)."""

    kind: str
    text: str
    value: Any
    offset: int
    end: int
    line: int
    column: int

    def is_word(self, *words: str) -> bool:
        """Whether this is an unquoted word equal (case-insensitively) to one of ``words``."""
        return self.kind == WORD and self.value.upper() in words

    def is_punct(self, ch: str) -> bool:
        return self.kind == PUNCT and self.text == ch


class _Positions:
    """Offset -> (line, column), with lines split exactly as :class:`DDLSyntaxError` splits them."""

    def __init__(self, text: str) -> None:
        self.starts: list[int] = []
        pos = 0
        for line in text.splitlines(keepends=True):
            self.starts.append(pos)
            pos += len(line)
        if not self.starts:
            self.starts.append(0)
        self.text = text

    def at(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.starts[lo] + 1


def _raw_tokens(text: str, start: int) -> Iterator[tuple[Any, str, int]]:
    """sqlparse's tokens of ``text[start:]`` with their absolute offsets."""
    offset = start
    for ttype, value in _sqlparse_lexer.tokenize(text[start:]):
        yield ttype, value, offset
        offset += len(value)


def _scan_string(text: str, start: int) -> tuple[int, str] | None:
    """Scan the quoted string at ``start``: (end offset, unescaped value), or None if unclosed.

    Backslash escapes (``\\n``, ``\\t``, ``\\'``, ``\\\\``, ``\\uXXXX``, ...) and a doubled
    quote (``'it''s'``) are understood.
    """
    quote = text[start]
    out: list[str] = []
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 >= n:
                return None
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if ch == quote:
            if i + 1 < n and text[i + 1] == quote:
                out.append(quote)
                i += 2
                continue
            return i + 1, "".join(out)
        out.append(ch)
        i += 1
    return None


def _scan_backquoted(text: str, start: int) -> tuple[int, str] | None:
    """Scan the backquoted identifier at ``start``: (end offset, name), or None if unclosed."""
    out: list[str] = []
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "`":
            if i + 1 < n and text[i + 1] == "`":
                out.append("`")
                i += 2
                continue
            return i + 1, "".join(out)
        out.append(ch)
        i += 1
    return None


_SKIPPED = (T.Text.Whitespace, T.Comment)


def _is(ttype: Any, groups: tuple[Any, ...]) -> bool:
    """Whether sqlparse token type ``ttype`` is one of ``groups`` or a subtype of one."""
    return any(ttype in group for group in groups)


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text`` (comments and whitespace dropped), ending with an EOF token.

    Raises :class:`DDLSyntaxError` for unterminated strings, backquotes and comments.
    """
    check_text(text, "ddl", "'ALTER TABLE t ADD COLUMNS (note string)'")
    original = text
    pos_of = _Positions(original)
    out: list[Token] = []

    def emit(kind: str, start: int, end: int, value: Any) -> None:
        line, column = pos_of.at(start)
        out.append(Token(kind, original[start:end], value, start, end, line, column))

    def fail(message: str, start: int, hint: str | None = None) -> DDLSyntaxError:
        line, column = pos_of.at(start)
        return DDLSyntaxError(
            message, text=original, line=line, column=column, token=original[start], hint=hint
        )

    unclosed = unclosed_comment(original)
    if unclosed is not None:
        raise fail("unterminated /* comment", unclosed, hint="close the comment with */")
    # Comments as Spark reads them (nested /* */, -- ended by \r or \n) become blanks of the
    # same length: offsets, lines and columns stay those of the original text.
    text = blank_comments(original)

    def scan(pos: int, token_start: bool) -> int:
        """Emit the token at ``pos`` (or skip whitespace there); returns where it ends.

        Returns ``pos`` itself when a comment starts inside a sqlparse token, so that lexing
        restarts there.
        """
        ch = text[pos]
        if ch.isspace():
            return pos + 1
        if ch in "rR" and text[pos + 1 : pos + 2] in ("'", '"'):  # raw: no escapes
            close = text.find(text[pos + 1], pos + 2)
            if close < 0:
                raise fail("unterminated string literal", pos + 1,
                           hint=f"close the string with a matching {text[pos + 1]}")
            emit(STR, pos, close + 1, text[pos + 2 : close])
            return close + 1
        if ch in "'\"":
            scanned = _scan_string(text, pos)
            if scanned is None:
                raise fail("unterminated string literal", pos,
                           hint=f"close the string with a matching {ch}")
            emit(STR, pos, scanned[0], scanned[1])
            return scanned[0]
        if ch == "`":
            scanned = _scan_backquoted(text, pos)
            if scanned is None:
                raise fail("unterminated backquoted name", pos,
                           hint="close the name with a backquote (write `` for a backquote)")
            emit(IDENT, pos, scanned[0], scanned[1])
            return scanned[0]
        if ch in _DIGITS or (ch == "." and text[pos + 1 : pos + 2] in _DIGITS):
            m = NUMBER_RE.match(text, pos)
            if m:
                emit(NUMBER, pos, m.end(), m.group())
                return m.end()
        w = _WORD_RE.match(text, pos)
        if w is not None:
            emit(WORD, pos, w.end(), w.group())
            return w.end()
        if text.startswith("/*", pos) or text.startswith("--", pos):
            if not token_start:
                return pos
            if ch == "/":
                raise fail("unterminated /* comment", pos, hint="close the comment with */")
        # Punctuation and operators, one character at a time (``>>`` is two ``>``).
        emit(PUNCT, pos, pos + 1, ch)
        return pos + 1

    pos = 0
    n = len(text)
    while pos < n:
        restart: int | None = None
        for ttype, value, off in _raw_tokens(text, pos):
            if _is(ttype, _SKIPPED):
                continue
            # sqlparse's token, re-split into ours: ``NOT NULL`` is two words, ``>>`` two
            # characters, ``-5`` a sign and a number. Where ours ends elsewhere (a string with
            # a backslash escape, ``1.5BD``), lexing restarts after it.
            end = off + len(value)
            covered = off
            while covered < end:
                after = scan(covered, covered == off)
                if after == covered:
                    break
                covered = after
            if covered != end:
                restart = covered
                break
        if restart is None:
            break
        pos = restart
    end_offset = out[-1].end if out else 0
    line, column = pos_of.at(end_offset)
    out.append(Token(EOF, "", None, end_offset, end_offset, line, column))
    return out
