"""Finding evonb table names in a Spark SQL query, and ``<table> AS OF '<commit>'`` clauses.

A small scanner skips strings, backquoted names and comments (found by Spark's rules:
:mod:`evonb.schema.spark_comments`), so only real identifiers match.
Each ``name AS OF <ref>`` (also ``TIMESTAMP AS OF`` / ``VERSION AS OF``) is replaced by the name
of a temporary view holding the table as of that commit, aliased back to the table's name.
:func:`changed_tables` finds the statements that would change a table (INSERT, UPDATE, DELETE,
MERGE, DROP, TRUNCATE, ALTER, CREATE) and the table each names, with sqlparse's tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import sqlparse
from sqlparse import sql as S
from sqlparse import tokens as T

from evonb.schema.spark_comments import STRING, blank_comments

_TOKEN = re.compile(
    rf"""(?P<ws>\s+)
      | (?P<str>{STRING})
      | (?P<quoted>`(?:[^`]|``)*`)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>\d+(?:\.\d+)?)
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_NOT_ALIAS = frozenset({
    "where", "join", "inner", "left", "right", "full", "outer", "cross", "natural", "on",
    "using", "group", "order", "limit", "having", "union", "except", "intersect", "minus",
    "window", "cluster", "distribute", "sort", "lateral", "pivot", "unpivot", "tablesample",
    "semi", "anti", "offset", "qualify",
})


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int

    @property
    def value(self) -> str:
        """Identifiers without backquotes, strings without quotes."""
        if self.kind == "quoted":
            return self.text[1:-1].replace("``", "`")
        if self.kind == "str":
            if self.text[0] in "rR":  # a raw string: no escapes
                return self.text[2:-1]
            quote = self.text[0]
            return self.text[1:-1].replace(quote * 2, quote).replace("\\" + quote, quote)
        return self.text

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words


@dataclass(frozen=True)
class TableRef:
    """A table named in the query; ``as_of`` is the commit text of an AS OF clause."""

    name: str
    as_of: str | None = None


def tokens(query: str) -> list[Token]:
    """The significant tokens of ``query`` (no whitespace, no comments)."""
    out = []
    for m in _TOKEN.finditer(blank_comments(query)):
        kind = m.lastgroup or "other"
        if kind != "ws":
            out.append(Token(kind, m.group(), m.start(), m.end()))
    return out


def rewrite(query: str, names: Iterable[str],
            view_for: Callable[[TableRef], str]) -> tuple[str, list[TableRef]]:
    """``query`` with every ``name AS OF ref`` replaced by ``view_for(ref)``, and the table
    references found (plain mentions too), in order."""
    known = {n.lower(): n for n in names}
    toks = tokens(query)
    refs: list[TableRef] = []
    edits: list[tuple[int, int, str]] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        qualified = i > 0 and toks[i - 1].text == "."
        if tok.kind in ("word", "quoted") and tok.value.lower() in known and not qualified \
                and not (i + 1 < len(toks) and toks[i + 1].text == "."):
            name = known[tok.value.lower()]
            j = i + 1
            if j < len(toks) and toks[j].is_word("timestamp", "version"):
                j += 1
            if (j + 2 < len(toks) and toks[j].is_word("as") and toks[j + 1].is_word("of")
                    and toks[j + 2].kind in ("str", "number")):
                ref = TableRef(name, toks[j + 2].value)
                refs.append(ref)
                after = toks[j + 3] if j + 3 < len(toks) else None
                has_alias = after is not None and (
                    after.is_word("as") or (after.kind in ("word", "quoted")
                                            and after.text.lower() not in _NOT_ALIAS))
                text = f"`{view_for(ref)}`" + ("" if has_alias else f" AS `{tok.value}`")
                edits.append((tok.start, toks[j + 2].end, text))
                i = j + 3
                continue
            refs.append(TableRef(name))
        i += 1
    for start, end, text in reversed(edits):
        query = query[:start] + text + query[end:]
    return query, refs


CHANGING = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "DROP", "TRUNCATE", "ALTER",
                      "CREATE", "CREATE OR REPLACE", "REPLACE"})
"""Statement types (sqlparse's ``get_type``) that change the table they name."""
_BEFORE_TARGET = frozenset({
    "into", "overwrite", "table", "view", "from", "if", "not", "exists", "if exists",
    "if not exists", "temp", "temporary", "global", "external", "or", "replace", "or replace",
    "only",
})


@dataclass(frozen=True)
class TableChange:
    """A statement that changes ``table``: ``kind`` is its type (``INSERT``, ``DROP``, ...)
    and ``statement`` its text."""

    kind: str
    table: str
    statement: str


def changed_tables(query: str) -> list[TableChange]:
    """The statements of ``query`` that change a table, each with the table it names
    (unqualified names only; comments, case and quoting do not matter)."""
    out = []
    for st in sqlparse.parse(blank_comments(query)):
        kind = st.get_type()
        if kind not in CHANGING:
            continue
        table = _target(st, kind)
        if table is not None:
            out.append(TableChange(kind.split()[0], table, str(st).strip()))
    return out


def _target(st: S.Statement, kind: str) -> str | None:
    """The unqualified name the statement of type ``kind`` changes, or None."""
    tokens = [t for t in st.tokens if not t.is_whitespace and not isinstance(t, S.Comment)
              and t.ttype not in T.Comment]
    start = next((i for i, t in enumerate(tokens) if t.ttype in (T.DML, T.DDL)
                  and " ".join(t.normalized.upper().split()) == kind), None)
    if start is None:
        return None
    for tok in tokens[start + 1:]:
        if tok.ttype in T.Keyword and " ".join(tok.value.lower().split()) in _BEFORE_TARGET:
            continue
        if isinstance(tok, S.Identifier | S.Function):
            if tok.get_parent_name() is not None:
                return None
            return tok.get_real_name()
        if tok.ttype in T.Name or tok.ttype in T.Keyword:
            return tok.value.strip("`")
        return None
    return None
