"""Where Spark SQL's comments are, by the rules of Spark's own lexer.

The scanners of Spark SQL text (the DDL lexer :mod:`evonb.schema.ddl_lexer`, and those that find
table names in a query: :mod:`evonb.notebook.sqlrefs`, :mod:`evonb.spark.sql_writes`) must hide
exactly the text Spark hides, or a table that Spark
reads is missed (and Spark resolves the name to something else) or a name in a comment is
taken for a table. Spark's lexer differs from a plain regular expression in three ways that
matter: a ``--`` comment ends at a carriage return as well as at a line feed (and a backslash
before a line feed continues it), bracketed comments nest (``/* a /* b */ c */`` is one
comment), and ``r'...'`` is a raw string in which a backslash escapes nothing.
:func:`blank_comments` replaces every comment by spaces of the same length (line breaks kept),
so offsets into the blanked text are offsets into the query.
"""

from __future__ import annotations

import re

STRING = (r"""[rR]'[^']*'|[rR]"[^"]*"|'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*\"""")
"""A string literal as Spark reads it: raw (``r'...'``, no escapes) or with backslash escapes
(a doubled quote stays inside). Use it before the identifier pattern so ``r'x'`` is one
string."""

_SKIP = re.compile(rf"{STRING}|`(?:[^`]|``)*`|[A-Za-z0-9_]+|[^-/'\"`A-Za-z0-9_]+|.",
                   re.DOTALL)
_LINE_COMMENT = re.compile(r"--(?:\\\n|[^\r\n])*")
_BRACKET = re.compile(r"/\*|\*/")


def comment_end(text: str, start: int) -> int | None:
    """The end of the comment starting at ``start`` (an unclosed ``/*`` runs to the end of
    ``text``), or None when no comment starts there."""
    found = _comment(text, start)
    return None if found is None else found[0]


def _comment(text: str, start: int) -> tuple[int, bool] | None:
    """(end, closed) of the comment starting at ``start``, or None."""
    if text.startswith("--", start):
        match = _LINE_COMMENT.match(text, start)
        assert match is not None
        return match.end(), True
    if not text.startswith("/*", start):
        return None
    depth, pos = 0, start
    while (match := _BRACKET.search(text, pos)) is not None:
        depth += 1 if match.group() == "/*" else -1
        pos = match.end()
        if depth == 0:
            return pos, True
    return len(text), False


def unclosed_comment(text: str) -> int | None:
    """Where a ``/*`` that is never closed starts (Spark refuses such text), or None."""
    pos = 0
    while pos < len(text):
        found = _comment(text, pos)
        if found is not None:
            if not found[1]:
                return pos
            pos = found[0]
            continue
        match = _SKIP.match(text, pos)
        assert match is not None
        pos = match.end()
    return None


def blank_comments(text: str) -> str:
    """``text`` with each comment replaced by spaces (its line breaks kept): the same length,
    so a position in the result is the same position in ``text``. Strings and backquoted
    names are left as they are, comment marks inside them included."""
    out: list[str] = []
    pos = 0
    while pos < len(text):
        end = comment_end(text, pos)
        if end is not None:
            out.append(re.sub(r"[^\r\n]", " ", text[pos:end]))
            pos = end
            continue
        match = _SKIP.match(text, pos)
        assert match is not None  # the last alternative matches any character
        out.append(match.group())
        pos = match.end()
    return "".join(out)


__all__ = ["STRING", "blank_comments", "comment_end", "unclosed_comment"]
