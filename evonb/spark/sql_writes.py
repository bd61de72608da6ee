"""SQL statements that change an evonb table, run through evonb's writes: ``INSERT INTO``,
``INSERT OVERWRITE``, ``DELETE``, ``UPDATE``, ``MERGE INTO`` and ``DROP TABLE ... PURGE``.

:func:`execute` splits the statement into its parts with a small scanner (strings, quoted names
and comments skipped; parentheses and ``CASE ... END`` nest) and lets Spark SQL evaluate every
query part (``VALUES``, ``SELECT``, ``WHERE`` conditions, ``SET`` expressions, a ``MERGE``
source and its ``ON`` condition) over the table's current snapshot, registered as a temporary
view under the table's name. The outcome is one write, so one commit:

* rows only added: ``mode='insert'`` (``INSERT OVERWRITE``: ``'overwrite'``);
* a table with a record key whose changed rows each hold a key no other row holds, and whose
  updates keep the key and partition values and do not lower the precombine value:
  ``'delete'`` (only deletes) or ``'upsert'`` (updates and inserts);
* anything else (a keyless table, deletes mixed with updates, ...): ``'overwrite'`` with every
  row of the result, which rewrites the whole table but is exact.

Values are cast to the column types as Spark's ``INSERT`` does (ANSI store assignment: numbers
to numbers, anything to strings, dates to timestamps); other pairs are refused. ``MERGE``
follows Spark's rules: the first ``WHEN`` clause whose condition holds acts; a target row
matched by more than one source row is an error when the statement has a ``WHEN MATCHED``
clause; columns a ``MERGE``'s ``INSERT (cols) VALUES`` leaves out get their write default
(null without one), as with ``INSERT INTO t (cols)``. Every mistake is an
:class:`~evonb.errors.SQLStatementError` (or another evonb error) raised before anything is
written; the table is then unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evonb.errors import ColumnNotFoundError, EvoError, SQLStatementError
from evonb.schema.defaults import sql_literal
from evonb.schema.render import backquote
from evonb.schema.spark_comments import STRING, blank_comments
from evonb.spark.session import quiet_spark_logs
from evonb.spark.temp_views import statement_views
from evonb.spark.writes import DEFAULT_DUPLICATES, DUPLICATES_PROPERTY
from evonb.table.history import Commit
from evonb.table.properties import setting

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

    from evonb.spark.table import SparkTable

STATEMENTS = ("INSERT", "DELETE", "UPDATE", "MERGE", "DROP")
"""The statement types :func:`execute` runs."""

_TOKEN = re.compile(
    rf"""(?P<ws>\s+)
      | (?P<str>{STRING})
      | (?P<quoted>`(?:[^`]|``)*`)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[A-Za-z]*)
      | (?P<op><=>|<>|!=|<=|>=|==|\|\||::|.)""",
    re.VERBOSE | re.DOTALL,
)
_QUERY_START = frozenset({"select", "values", "with", "from", "table"})
_CLAUSE_WORDS = frozenset({
    "where", "set", "using", "on", "when", "values", "select", "with", "from", "table", "by",
    "partition", "purge", "matched", "not", "then",
})


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int
    depth: int  # open parentheses and CASE ... END before the token (a closing one inside)

    def word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words

    @property
    def name(self) -> str:
        return self.text[1:-1].replace("``", "`") if self.kind == "quoted" else self.text


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    depth = 0
    for m in _TOKEN.finditer(blank_comments(text)):
        kind = m.lastgroup or "op"
        if kind == "ws":
            continue
        word = m.group().lower() if kind == "word" else ""
        out.append(_Tok(kind, m.group(), m.start(), m.end(), depth))
        if m.group() == "(" or word == "case":
            depth += 1
        elif m.group() == ")" or word == "end":
            depth = max(depth - 1, 0)
    return out


# ------------------------------------------------------------------ results
@dataclass
class SQLWriteResult:
    """What a statement did: its type, the table, the commit it made (None: nothing changed,
    or a DROP) and the rows it inserted, updated and deleted; ``mode`` is the write mode it
    ran as (``insert``, ``upsert``, ``delete``, ``overwrite``, ``drop`` or ``none``)."""

    statement: str
    table: str
    commit: Commit | None
    mode: str
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    text: str = ""

    def counts(self) -> dict[str, int]:
        return {"inserted": self.inserted, "updated": self.updated, "deleted": self.deleted}

    def __repr__(self) -> str:
        if self.mode == "drop":
            return f"{self.statement}: dropped table {self.table!r} (its data and history)"
        rows = ", ".join(f"{v} {k}" for k, v in self.counts().items())
        if self.commit is None:
            return f"{self.statement} on {self.table!r}: no row changed, no commit ({rows})"
        return (f"{self.statement} on {self.table!r}: commit {self.commit.instant} "
                f"({self.commit.operation}), {rows}")


# ------------------------------------------------------------------ parsing
@dataclass
class _Assign:
    column: str
    expr: str


@dataclass
class _Action:
    """One way a row changes: ``delete``, ``update`` (``assigns``; ``star``: every column from
    the source) or ``insert`` (``columns`` and ``values``; ``star``: every column)."""

    kind: str
    assigns: list[_Assign] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    star: bool = False


@dataclass
class _Clause:
    match: str  # "matched", "not_matched" (by target), "not_matched_by_source"
    condition: str | None
    action: _Action


@dataclass
class _Parsed:
    kind: str
    table: str
    alias: str | None = None
    query: str = ""  # INSERT: the rows
    columns: list[str] | None = None  # INSERT: the column list
    by_name: bool = False
    overwrite: bool = False
    condition: str | None = None  # DELETE/UPDATE: WHERE; MERGE: ON
    assigns: list[_Assign] = field(default_factory=list)
    source: str = ""  # MERGE: a table name or a parenthesized query
    source_alias: str | None = None
    clauses: list[_Clause] = field(default_factory=list)
    purge: bool = False
    if_exists: bool = False


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    # ---- helpers
    def peek(self, k: int = 0) -> _Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def fail(self, message: str, hint: str | None = None) -> SQLStatementError:
        tok = self.peek()
        where = f" near {tok.text!r}" if tok else " at the end"
        return SQLStatementError(f"{message}{where}", statement=self.text, hint=hint)

    def accept(self, *words: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.word(*words):
            self.i += 1
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.fail(f"Expected {' or '.join(w.upper() for w in words)}")

    def name(self) -> str:
        tok = self.peek()
        if tok is None or tok.kind not in ("word", "quoted"):
            raise self.fail("Expected a name")
        self.i += 1
        if self.peek() is not None and self.peek().text == ".":  # type: ignore[union-attr]
            raise self.fail("Qualified names are not evonb tables",
                            hint="name the table as %evo does: by its name alone")
        return tok.name

    def qualified(self) -> str:
        """A table or view name, parts joined by dots (a Spark table ``db.t`` too), quoted."""
        parts = []
        while True:
            tok = self.peek()
            if tok is None or tok.kind not in ("word", "quoted"):
                raise self.fail("Expected a name")
            parts.append(backquote(tok.name))
            self.i += 1
            dot = self.peek()
            if dot is None or dot.text != ".":
                return ".".join(parts)
            self.i += 1

    def alias(self) -> str | None:
        if self.accept("as"):
            return self.name()
        tok = self.peek()
        if tok is not None and (tok.kind == "quoted" or (
                tok.kind == "word" and tok.text.lower() not in _CLAUSE_WORDS)):
            self.i += 1
            return tok.name
        return None

    def until(self, stop: Callable[[_Tok], bool], depth: int = 0) -> str:
        """The text from the current token up to the first token at ``depth`` for which
        ``stop`` holds (or the end)."""
        start = self.i
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            if tok.depth == depth and stop(tok):
                break
            self.i += 1
        if start == self.i:
            raise self.fail("Expected an expression")
        return self.text[self.toks[start].start:self.toks[self.i - 1].end]

    def rest(self) -> str:
        if self.i >= len(self.toks):
            raise self.fail("Expected a query")
        return self.text[self.toks[self.i].start:]

    def paren_list(self) -> list[str]:
        """``( a, b, ... )``: the items' text (nested parentheses kept)."""
        open_tok = self.peek()
        if open_tok is None or open_tok.text != "(":
            raise self.fail("Expected '('")
        self.i += 1
        depth = open_tok.depth + 1
        items = []
        while True:
            items.append(self.until(lambda t: t.text in (",", ")"), depth))
            tok = self.peek()
            self.i += 1
            if tok is None or tok.text == ")":
                return items

    def assigns(self, stop: Callable[[_Tok], bool]) -> list[_Assign]:
        out = []
        while True:
            column = self.until(lambda t: t.text == "=")
            self.i += 1
            expr = self.until(lambda t: t.text == "," or stop(t))
            out.append(_Assign(column.strip(), expr))
            if self.peek() is not None and self.peek().text == ",":  # type: ignore[union-attr]
                self.i += 1
                continue
            return out

    # ---- statements
    def parse(self) -> _Parsed:
        cte = ""
        first = self.peek()
        if first is not None and first.word("with"):
            at = next((j for j, t in enumerate(self.toks) if t.depth == 0 and t.word("insert")),
                      None)
            if at is None:
                raise self.fail("Only INSERT may follow a WITH clause")
            cte = self.text[first.start:self.toks[at].start]
            self.i = at
        tok = self.peek()
        kind = tok.text.upper() if tok is not None and tok.kind == "word" else ""
        if kind not in STATEMENTS:
            raise self.fail("Not a statement that changes a table")
        self.i += 1
        parsed = getattr(self, "_" + kind.lower())()
        if cte and parsed.query:
            parsed.query = cte + parsed.query
        return parsed

    def _insert(self) -> _Parsed:
        overwrite = self.accept("overwrite")
        if not overwrite:
            self.expect("into")
        self.accept("table")
        out = _Parsed("INSERT", self.name(), overwrite=overwrite)
        if self.peek() is not None and self.peek().word("partition"):  # type: ignore[union-attr]
            raise self.fail("A PARTITION clause is not supported",
                            hint="name the partition columns' values in the query instead")
        if self.accept("by"):
            self.expect("name")
            out.by_name = True
        tok, after = self.peek(), self.peek(1)
        if tok is not None and tok.text == "(" and not (
                after is not None and after.kind == "word"
                and after.text.lower() in _QUERY_START | {"("}):
            out.columns = [c.strip().strip("`") for c in self.paren_list()]
        out.query = self.rest()
        return out

    def _delete(self) -> _Parsed:
        self.expect("from")
        out = _Parsed("DELETE", self.name())
        out.alias = self.alias()
        if self.accept("where"):
            out.condition = self.until(lambda t: False)
        elif self.peek() is not None:
            raise self.fail("Expected WHERE")
        return out

    def _update(self) -> _Parsed:
        out = _Parsed("UPDATE", self.name())
        out.alias = self.alias()
        self.expect("set")
        out.assigns = self.assigns(lambda t: t.word("where"))
        if self.accept("where"):
            out.condition = self.until(lambda t: False)
        elif self.peek() is not None:
            raise self.fail("Expected WHERE")
        return out

    def _merge(self) -> _Parsed:
        self.expect("into")
        out = _Parsed("MERGE", self.name())
        out.alias = self.alias()
        self.expect("using")
        tok = self.peek()
        if tok is not None and tok.text == "(":
            start = self.i
            self.until(lambda t: t.text == ")", tok.depth + 1)
            self.i += 1
            out.source = self.text[tok.start:self.toks[self.i - 1].end]
            del start
        else:
            out.source = self.qualified()
        out.source_alias = self.alias()
        if out.source_alias is None:
            if out.source.startswith("("):
                raise self.fail("A MERGE source query needs an alias",
                                hint="write USING (SELECT ...) AS s")
            last = _tokens(out.source)[-1]
            out.source_alias = last.name
        self.expect("on")
        out.condition = self.until(lambda t: t.word("when"))
        while self.accept("when"):
            out.clauses.append(self._clause())
        if self.peek() is not None:
            raise self.fail("Expected WHEN")
        if not out.clauses:
            raise self.fail("MERGE needs at least one WHEN clause")
        return out

    def _clause(self) -> _Clause:
        if self.accept("not"):
            self.expect("matched")
            match = "not_matched"
            if self.accept("by"):
                if self.accept("source"):
                    match = "not_matched_by_source"
                else:
                    self.expect("target")
        else:
            self.expect("matched")
            match = "matched"
        condition = None
        if self.accept("and"):
            condition = self.until(lambda t: t.word("then"))
        self.expect("then")
        if self.accept("delete"):
            action = _Action("delete")
        elif self.accept("update"):
            self.expect("set")
            action = _Action("update")
            if self.peek() is not None and self.peek().text == "*":  # type: ignore[union-attr]
                self.i += 1
                action.star = True
            else:
                action.assigns = self.assigns(lambda t: t.word("when"))
        elif self.accept("insert"):
            action = _Action("insert")
            if self.peek() is not None and self.peek().text == "*":  # type: ignore[union-attr]
                self.i += 1
                action.star = True
            else:
                action.columns = [c.strip().strip("`") for c in self.paren_list()]
                self.expect("values")
                action.values = self.paren_list()
                if len(action.values) != len(action.columns):
                    raise self.fail(f"INSERT names {len(action.columns)} columns but gives "
                                    f"{len(action.values)} values")
        else:
            raise self.fail("Expected UPDATE, DELETE or INSERT")
        if action.kind == "insert" and match != "not_matched":
            raise self.fail("INSERT is only allowed in WHEN NOT MATCHED [BY TARGET]")
        if action.kind != "insert" and match == "not_matched":
            raise self.fail("WHEN NOT MATCHED [BY TARGET] can only INSERT")
        return _Clause(match, condition, action)

    def _drop(self) -> _Parsed:
        self.expect("table")
        if_exists = self.accept("if")
        if if_exists:
            self.expect("exists")
        out = _Parsed("DROP", self.name(), if_exists=if_exists)
        out.purge = self.accept("purge")
        if self.peek() is not None:
            raise self.fail("Unexpected text after DROP TABLE")
        return out


def parse(statement: str) -> _Parsed:
    """The parts of one INSERT, DELETE, UPDATE, MERGE or DROP TABLE statement."""
    return _Parser(statement.strip().rstrip(";")).parse()


def target(statement: str) -> tuple[str, str] | None:
    """The statement type and the table it changes, or None if ``statement`` is no statement
    :func:`execute` runs (or does not parse)."""
    try:
        parsed = parse(statement)
    except EvoError:
        return None
    return parsed.kind, parsed.table


# ------------------------------------------------------------------ errors
_PLAN = re.compile(r";\s*\n\s*['\w]")


def _spark_message(exc: BaseException) -> str:
    """A Spark error's message without the JVM stack and the logical plan."""
    text = str(exc).split("\nJVM stacktrace:", 1)[0].split("\n\tat ", 1)[0].strip()
    if "== SQL" not in text:
        match = _PLAN.search(text)
        if match:
            text = text[:match.start()]
    return _INTERNAL_SUGGESTIONS.sub(_user_columns, text.strip()) or type(exc).__name__


_INTERNAL_SUGGESTIONS = re.compile(r"\[(`[^\]]*`)\]")
"""A list of suggested columns in Spark's message (``Did you mean one of the following?``)."""


def _user_columns(match: re.Match[str]) -> str:
    """The suggested columns without the statement's own helper columns (``__evo_*``)."""
    names = [n for n in match.group(1).split(", ") if not n.startswith("`__evo_")]
    return "[" + ", ".join(names) + "]"


@contextmanager
def _spark_errors(statement: str, part: str) -> Iterator[None]:
    """Spark errors (analysis, parsing, a failed cast) as one :class:`SQLStatementError`."""
    try:
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover
        yield
        return
    try:
        with quiet_spark_logs():
            yield
    except PySparkException as exc:
        raise SQLStatementError(f"{part}: {_spark_message(exc)}", statement=statement,
                                hint="fix the statement; nothing was written") from None
    except Exception as exc:
        if type(exc).__name__ != "Py4JJavaError":
            raise
        raise SQLStatementError(f"{part}: {_spark_message(exc)}", statement=statement,
                                hint="fix the statement; nothing was written") from None


# ------------------------------------------------------------------ types
def assignable(source: DataType, target: DataType) -> bool:
    """Whether Spark's INSERT (ANSI store assignment) stores a ``source`` value in a
    ``target`` column."""
    from pyspark.sql import types as T

    if isinstance(source, T.NullType) or source.simpleString() == target.simpleString():
        return True
    if isinstance(source, T.NumericType) and isinstance(target, T.NumericType):
        return True
    if isinstance(target, T.StringType) and isinstance(source, T.AtomicType) \
            and not isinstance(source, T.BinaryType):
        return True
    times = (T.DateType, T.TimestampType, T.TimestampNTZType)
    if isinstance(source, times) and isinstance(target, times):
        return True
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        return len(source.fields) == len(target.fields) and all(
            assignable(s.dataType, t.dataType)
            for s, t in zip(source.fields, target.fields, strict=True))
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        return assignable(source.elementType, target.elementType)
    if isinstance(source, T.MapType) and isinstance(target, T.MapType):
        return (assignable(source.keyType, target.keyType)
                and assignable(source.valueType, target.valueType))
    return False


def _cast(expr: str, source: DataType, target: DataType) -> str:
    if source.simpleString() == target.simpleString():
        return expr
    return f"CAST({expr} AS {target.simpleString()})"


# ------------------------------------------------------------------ running
class _Run:
    def __init__(self, table: SparkTable, parsed: _Parsed, text: str) -> None:
        self.table = table
        self.p = parsed
        self.text = text
        self.spark: SparkSession = table.spark_session()
        self.df = table.read()
        self.columns = [f.name for f in self.df.schema.fields]
        self.types = {f.name: f.dataType for f in self.df.schema.fields}
        self.by_lower = {c.lower(): c for c in self.columns}

    def sql(self, query: str, part: str) -> DataFrame:
        with _spark_errors(self.text, part):
            return self.spark.sql(query)

    def column(self, name: str) -> str:
        """The table's column ``name`` (any case; ``alias.name`` allowed)."""
        bare = name.strip()
        if "." in bare and not bare.startswith("`"):
            prefix, bare = bare.rsplit(".", 1)
            if prefix.strip("`").lower() not in {self.p.table.lower(),
                                                  (self.p.alias or "").lower()}:
                raise SQLStatementError(
                    f"{name!r} is a nested field or another table's column: SET and INSERT "
                    "name top-level columns of the target table",
                    statement=self.text, hint="assign the whole struct column")
        bare = bare.strip("`")
        found = self.by_lower.get(bare.lower())
        if found is None:
            self.table.schema.find(bare)  # ColumnNotFoundError naming the closest column
            raise ColumnNotFoundError(bare)  # pragma: no cover - find raised
        return found

    def check_types(self, pairs: Sequence[tuple[str, DataType]], part: str) -> None:
        for column, source in pairs:
            target = self.types[column]
            if not assignable(source, target):
                raise SQLStatementError(
                    f"{part}: cannot store a {source.simpleString()} in column {column!r} "
                    f"of type {target.simpleString()} (Spark's INSERT would refuse it too)",
                    statement=self.text,
                    hint=f"CAST the value to {target.simpleString()} in the statement")

    # ---- INSERT
    def insert(self) -> SQLWriteResult:
        p = self.p
        src = self.sql(p.query, "The rows to insert")
        names = src.columns
        if p.by_name:
            targets = [self.column(n) for n in names]
            chosen = names
        elif p.columns is not None:
            targets = [self.column(c) for c in p.columns]
            if len(targets) != len(names):
                raise SQLStatementError(
                    f"INSERT names {len(targets)} columns but the query gives {len(names)}",
                    statement=self.text, hint="give one value per named column")
            chosen = names
        else:
            if len(names) != len(self.columns):
                raise SQLStatementError(
                    f"INSERT without a column list needs one value per column of "
                    f"{self.p.table!r} ({len(self.columns)}: {', '.join(self.columns)}), "
                    f"and the query gives {len(names)}",
                    statement=self.text, hint="name the columns: INSERT INTO t (a, b) ...")
            targets, chosen = list(self.columns), names
        if len(set(c.lower() for c in targets)) != len(targets):
            raise SQLStatementError("INSERT names a column twice", statement=self.text)
        types = dict(zip(chosen, (f.dataType for f in src.schema.fields), strict=True))
        self.check_types([(t, types[c]) for t, c in zip(targets, chosen, strict=True)],
                         "INSERT")
        from pyspark.sql import functions as F

        rows = src.select(*[
            F.expr(_cast(backquote(c), types[c], self.types[t])).alias(t)
            for c, t in zip(chosen, targets, strict=True)])
        mode = "overwrite" if p.overwrite else "insert"
        with _spark_errors(self.text, "INSERT"):
            count = rows.count()
            before = self.table.read().count() if p.overwrite else 0
            if count == 0 and not p.overwrite:
                return SQLWriteResult("INSERT", self.p.table, None, "none", text=self.text)
            if p.overwrite and self.table.primary_key:
                self.refuse_shared_keys(rows)
            elif not p.overwrite:
                self.refuse_existing_keys(rows)
            commit = self.table.write(rows, mode)
        return SQLWriteResult("INSERT", self.p.table, commit, mode, inserted=count,
                              deleted=before, text=self.text)

    # ---- DELETE / UPDATE / MERGE
    def changes(self) -> SQLWriteResult:
        """DELETE, UPDATE and MERGE: every target row (and every inserted row) with what
        happens to it, then one write."""
        p = self.p
        me = backquote(p.alias or p.table)
        alias = backquote(p.source_alias or 's')
        target = (f"(SELECT *, monotonically_increasing_id() AS __evo_tid, true AS __evo_tp "
                  f"FROM {backquote(p.table)}) AS {me}")
        clauses: list[_Clause]
        if p.kind == "DELETE":
            relation = target
            clauses = [_Clause("matched", p.condition, _Action("delete"))]
        elif p.kind == "UPDATE":
            relation = target
            clauses = [_Clause("matched", p.condition, _Action("update", assigns=p.assigns))]
        else:
            src = self.sql(f"SELECT * FROM {p.source} AS {alias}",
                           "The MERGE source")
            self.source_columns = src.columns
            relation = (f"{target} FULL OUTER JOIN (SELECT *, true AS __evo_sp FROM "
                        f"{p.source} AS {alias}) AS "
                        f"{alias} ON {p.condition}")
            clauses = p.clauses
        sp = f"{alias}.__evo_sp" if p.kind == "MERGE" else "true"
        tp = f"{me}.__evo_tp"
        # The action per row: the index of the first clause that applies.
        groups = {"matched": f"{tp} AND {sp}",
                  "not_matched_by_source": f"{tp} AND {sp} IS NULL",
                  "not_matched": f"{tp} IS NULL"}
        whens = []
        for k, c in enumerate(clauses):
            cond = f"({groups[c.match]})" + (f" AND ({c.condition})" if c.condition else "")
            whens.append(f"WHEN {cond} THEN {k}")
        action = f"CASE {' '.join(whens)} END"
        # The values each clause gives each column.
        values: dict[tuple[int, str], str] = {}
        assigned: set[str] = set()
        for k, c in enumerate(clauses):
            a = c.action
            if a.kind == "update":
                pairs = ([(col, f"{alias}.{backquote(self.source_col(col))}")
                          for col in self.columns] if a.star
                         else [(self.column(x.column), x.expr) for x in a.assigns])
            elif a.kind == "insert":
                pairs = ([(col, f"{alias}.{backquote(self.source_col(col))}")
                          for col in self.columns] if a.star
                         else [(self.column(col), v)
                               for col, v in zip(a.columns, a.values, strict=True)])
            else:
                pairs = []
            seen: set[str] = set()
            for col, expr in pairs:
                if col in seen:
                    raise SQLStatementError(f"Column {col!r} is assigned twice in one clause",
                                            statement=self.text)
                seen.add(col)
                values[(k, col)] = expr
                if a.kind == "update":
                    assigned.add(col)
        index = {key: i for i, key in enumerate(values)}
        inner = [f"{me}.__evo_tid AS __evo_tid", f"({tp} AND {sp}) AS __evo_both",
                 f"{action} AS __evo_action"]
        inner += [f"{me}.{backquote(c)} AS __evo_o{i}" for i, c in enumerate(self.columns)]
        inner += [f"({expr}) AS __evo_v{index[key]}" for key, expr in values.items()]
        inner_sql = f"SELECT {', '.join(inner)} FROM {relation}"
        inner_df = self.sql(inner_sql, f"The {p.kind} statement")
        kinds = {f.name: f.dataType for f in inner_df.schema.fields}
        self.check_types([(col, kinds[f"__evo_v{index[(k, col)]}"]) for (k, col) in values],
                         p.kind)
        outer = []
        for i, col in enumerate(self.columns):
            t = self.types[col]
            cases = []
            for k in range(len(clauses)):
                if (k, col) in values:
                    v = f"__evo_v{index[(k, col)]}"
                    cases.append(f"WHEN {k} THEN {_cast(v, kinds[v], t)}")
            inserts = [k for k, c in enumerate(clauses) if c.action.kind == "insert"
                       and (k, col) not in values]
            cases += [f"WHEN {k} THEN {self.write_default(col)}" for k in inserts]
            value = f"CASE __evo_action {' '.join(cases)} ELSE __evo_o{i} END" if cases \
                else f"__evo_o{i}"
            outer.append(f"{value} AS {backquote(col)}")
        kind_cases = " ".join(f"WHEN {k} THEN '{c.action.kind}'" for k, c in enumerate(clauses))
        outer.append(f"CASE WHEN __evo_action IS NOT NULL THEN CASE __evo_action {kind_cases} "
                     "END WHEN __evo_tid IS NOT NULL THEN 'keep' END AS __evo_kind")
        outer += ["__evo_tid", "__evo_both"]
        outer += [f"__evo_o{i}" for i in range(len(self.columns))]
        result = inner_df.selectExpr(*outer)
        return self.commit(result, clauses, assigned)

    def write_default(self, column: str) -> str:
        """The value an INSERT that leaves ``column`` out stores: its write default (as
        ``INSERT INTO t (cols)`` and Spark's MERGE do), else null, as SQL of its type."""
        f = self.table.schema.find(column)
        value = sql_literal(f.write_default, f.type)
        return f"CAST({value} AS {self.types[column].simpleString()})"

    def source_col(self, column: str) -> str:
        names = {c.lower(): c for c in self.source_columns}
        found = names.get(column.lower())
        if found is None:
            raise SQLStatementError(
                f"UPDATE SET * / INSERT * needs every column of {self.p.table!r} in the "
                f"MERGE source, and {column!r} is missing",
                statement=self.text, hint="name the columns: UPDATE SET a = s.a, ...")
        return found

    def commit(self, result: DataFrame, clauses: Sequence[_Clause],
               assigned: set[str]) -> SQLWriteResult:
        p = self.p
        table = self.table
        with _spark_errors(self.text, p.kind):
            if p.kind == "MERGE":
                # One materialized result: row ids (and so the checks and the write) agree.
                result = result.localCheckpoint(eager=True)
                if any(c.match == "matched" for c in clauses):
                    dup = (result.filter("__evo_both").groupBy("__evo_tid").count()
                           .filter("count > 1").limit(1).collect())
                    if dup:
                        raise SQLStatementError(
                            "MERGE_CARDINALITY_VIOLATION: a row of the target table "
                            f"{p.table!r} is matched by {dup[0]['count']} rows of the "
                            "source; MERGE must not update or delete one target row twice",
                            statement=self.text,
                            hint="make the ON condition match at most one source row per "
                            "target row (e.g. deduplicate the source)")
                rows = result.filter("__evo_tid IS NOT NULL").dropDuplicates(["__evo_tid"])
                rows = rows.unionByName(result.filter("__evo_tid IS NULL"))
            else:
                rows = result
            rows = rows.filter("__evo_kind IS NOT NULL")
            counts, exact = self.tally(rows, assigned)
            inserted, updated, deleted = (counts[k] for k in ("insert", "update", "delete"))
            out = SQLWriteResult(p.kind, p.table, None, "none", inserted=inserted,
                                 updated=updated, deleted=deleted, text=self.text)
            if not (inserted or updated or deleted):
                return out
            data = [backquote(c) for c in self.columns]
            if not (updated or deleted):
                out.mode = "insert"
                frame = rows.filter("__evo_kind = 'insert'").select(*data)
                self.refuse_existing_keys(frame)  # a MERGE's ON need not be the key
            elif exact and not (deleted and (updated or inserted)):
                out.mode = "upsert" if not deleted else "delete"
                if deleted:
                    frame = rows.filter("__evo_kind = 'delete'").select(*data)
                else:
                    frame = rows.filter("__evo_kind IN ('update', 'insert')").select(*data)
            else:
                out.mode = "overwrite"
                frame = rows.filter("__evo_kind <> 'delete'").select(*data)
                if table.primary_key:
                    self.refuse_shared_keys(frame)
            out.commit = table.write(frame, out.mode)
        return out

    def refuse_shared_keys(self, frame: DataFrame) -> None:
        """Refuse a result in which two rows hold one record key (an UPDATE or MERGE that set
        a row's key to one another row keeps): written, every later upsert or delete of that
        key would be ambiguous. One Spark job, before anything is written."""
        from pyspark.sql import functions as F

        keys = [self.by_lower[k.lower()] for k in self.table.primary_key]
        shared = (frame.groupBy(*[F.col(backquote(k)) for k in keys]).count()
                  .filter("count > 1").limit(1).collect())
        if shared:
            row = shared[0]
            held = ", ".join(f"{k} = {row[k]!r}" for k in keys)
            raise SQLStatementError(
                f"{self.p.kind} would leave {row['count']} rows of {self.p.table!r} with the "
                f"record key {held}; a record key identifies one row",
                statement=self.text,
                hint="change the key only to values no other row holds, or delete the row "
                "that holds it in the same MERGE")

    def refuse_existing_keys(self, frame: DataFrame) -> None:
        """Refuse rows to insert into a table with a record key when a row of the table
        already holds one of their keys: the table would hold two rows of that key, and
        every later UPDATE of it would be refused. One Spark job, before anything is written.
        A table whose ``evonb.write.insert_duplicates`` is ``allow`` takes them, as
        ``Table.write(df, mode="insert")`` does (rows sharing a key among themselves are the
        write's own check)."""
        table = self.table
        if not table.primary_key or setting(
                table.raw_config, DUPLICATES_PROPERTY, DEFAULT_DUPLICATES) == "allow":
            return
        keys = [self.by_lower[k.lower()] for k in table.primary_key]
        held = (frame.select(*[backquote(k) for k in keys])
                .join(table.read().select(*[backquote(k) for k in keys]), on=keys, how="left_semi")
                .limit(1).collect())
        if held:
            row = held[0]
            key = ", ".join(f"{k} = {row[k]!r}" for k in keys)
            raise SQLStatementError(
                f"{self.p.kind} would leave 2 rows of {self.p.table!r} with the record key "
                f"{key}: the table holds a row with that key already, and a record key "
                "identifies one row",
                statement=self.text,
                hint="change that row with UPDATE, or MERGE ... WHEN MATCHED THEN UPDATE "
                "(Table.write(df, mode='upsert') in Python); nothing was written")

    def tally(self, rows: DataFrame, assigned: set[str]) -> tuple[dict[str, int], bool]:
        """The rows inserted, updated and deleted, and (tables with a record key) whether a
        delete or upsert by key does exactly what the statement says: every changed row's
        key held by no other row, and updates that keep key and partition values and do not
        lower the precombine value. One Spark job."""
        from pyspark.sql import functions as F

        table = self.table
        kind = F.col("__evo_kind")
        if not table.primary_key:
            found = {r["__evo_kind"]: int(r["count"])
                     for r in rows.groupBy("__evo_kind").count().collect()}
            return {k: found.get(k, 0) for k in ("insert", "update", "delete")}, False
        keys = [self.by_lower[k.lower()] for k in table.primary_key]
        fixed = [self.by_lower[c.lower()] for c in (*table.primary_key, *table.partition_by)]
        checks = [f"NOT ({backquote(c)} <=> __evo_o{self.columns.index(c)})"
                  for c in fixed if c in assigned]
        pre = table.precombine
        if pre is not None and self.by_lower.get(pre.lower()) in assigned:
            c = self.by_lower[pre.lower()]
            o = f"__evo_o{self.columns.index(c)}"
            checks.append(f"NOT ({backquote(c)} <=> {o} OR coalesce({backquote(c)} > {o}, false))")
        moved = F.expr(" OR ".join(checks)) if checks else F.lit(False)

        def number(condition: Any) -> Any:
            return F.sum(F.when(condition, 1).otherwise(0))

        # per key: its rows (n), inserted (i), updated (u), deleted (d) and moved (m), named
        # apart from the key columns (a key may be called ``d``)
        n, i, u, d, m = (f"__evo_tally_{c}" for c in "niudm")
        per_key = rows.groupBy(*[F.col(backquote(k)) for k in keys]).agg(
            F.count(F.lit(1)).alias(n), number(kind == "insert").alias(i),
            number(kind == "update").alias(u), number(kind == "delete").alias(d),
            number((kind == "update") & F.coalesce(moved, F.lit(True))).alias(m))
        total = per_key.agg(
            F.sum(i).alias("insert"), F.sum(u).alias("update"), F.sum(d).alias("delete"),
            F.sum(m).alias("moved"),
            number((F.col(n) > 1) & (F.col(i) + F.col(u) + F.col(d) > 0)
                   ).alias("shared")).collect()[0]
        counts = {k: int(total[k] or 0) for k in ("insert", "update", "delete")}
        return counts, not (total["moved"] or total["shared"])


def execute(table: SparkTable, statement: str, *, name: str | None = None) -> SQLWriteResult:
    """Run one INSERT, DELETE, UPDATE, MERGE or ``DROP TABLE ... PURGE`` statement on
    ``table`` (named in the statement ``name``, by default the table's name) as one evonb
    write.

    Other tables and views the statement reads must be known to the table's SparkSession;
    the table itself is a temporary view of its current snapshot under its name while the
    statement runs (:mod:`evonb.spark.temp_views`; a view of that name is gone afterwards).
    Raises :class:`SQLStatementError` (or another evonb error) for a statement that does not
    parse, names unknown columns, stores values of an incompatible type or (MERGE)
    matches a target row more than once; the table is then unchanged."""
    text = statement.strip().rstrip(";").strip()
    with _spark_errors(text, "Syntax"):
        table.spark_session()._jsparkSession.sessionState().sqlParser().parsePlan(text)
    parsed = parse(text)
    name = name or table.name
    if parsed.table.lower() != name.lower():
        raise SQLStatementError(
            f"The statement changes {parsed.table!r}, not the table {name!r}",
            statement=text)
    if parsed.kind == "DROP":
        if not parsed.purge:
            raise SQLStatementError(
                f"DROP TABLE {parsed.table} deletes the table's data and its whole history; "
                "add PURGE to say so", statement=text,
                hint=f"DROP TABLE {parsed.table} PURGE")
        table.drop()
        return SQLWriteResult("DROP", parsed.table, None, "drop", text=text)
    run = _Run(table, parsed, text)
    with statement_views() as register:
        register(parsed.table, run.df)
        if parsed.kind == "INSERT":
            return run.insert()
        return run.changes()


__all__ = ["STATEMENTS", "SQLWriteResult", "assignable", "execute", "parse", "target"]
