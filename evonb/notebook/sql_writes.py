"""``%evo sql`` statements that change an evonb table (INSERT, UPDATE, DELETE, MERGE,
``DROP TABLE ... PURGE``): run by :func:`evonb.spark.sql_writes.execute` as one commit, and
shown as what they committed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlparse
from IPython.core.error import UsageError

import evonb.notebook.html as H
from evonb.notebook.args import resolve_ref
from evonb.notebook.sqlrefs import TableRef, changed_tables, rewrite, tokens
from evonb.spark.sql_writes import STATEMENTS, SQLWriteResult, execute
from evonb.spark.temp_views import statement_views

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from evonb.api import Table
    from evonb.notebook.context import Context


@dataclass
class Committed:
    """What one statement committed: the instant, the operation, the rows it inserted,
    updated and deleted."""

    result: SQLWriteResult

    def facts(self) -> list[tuple[str, str]]:
        r = self.result
        if r.mode == "drop":
            return [("table", r.table), ("dropped", "its folder: data files and history")]
        rows = [("table", r.table)]
        if r.commit is None:
            rows.append(("commit", "none (no row changed)"))
        else:
            c = r.commit
            rows += [("instant", c.instant), ("operation", f"{c.action}/{c.operation}"),
                     ("files", f"+{c.files_added} / -{c.files_removed}")]
        rows += [(f"rows {k}", str(v)) for k, v in r.counts().items()]
        return rows

    @property
    def title(self) -> str:
        excerpt = " ".join(self.result.text.split())
        return excerpt if len(excerpt) <= 80 else excerpt[:77] + "..."

    def _repr_html_(self) -> str:
        return (f'<div class="evonb-sql-write" style="{H.FONT}"><b>{H.e(self.title)}</b>'
                f"{H.kv_table(self.facts())}</div>")

    def __repr__(self) -> str:
        facts = "\n".join(f"  {k}: {v}" for k, v in self.facts())
        return f"{self.title}\n{facts}"


_WRITE_WORDS = frozenset(w.lower() for w in STATEMENTS)


def written_table(query: str, names: dict[str, str]) -> str | None:
    """The evonb table (of ``names``: lower-case name -> name) that ``query`` inserts into,
    updates, deletes from, merges into or drops, or None. A statement starting with one of
    those words that does not parse still counts when an evonb table stands where its
    target would, so its syntax error is reported as such."""
    for change in changed_tables(query):
        if change.kind in STATEMENTS and change.table.lower() in names:
            return names[change.table.lower()]
    toks = tokens(query)
    if toks and toks[0].is_word(*_WRITE_WORDS):
        for tok in toks[1:4]:  # where the target stands (INSERT INTO TABLE t, DELETE FROM t)
            if tok.kind in ("word", "quoted") and tok.value.lower() in names:
                return names[tok.value.lower()]
    return None


def statement_tables(ctx: Context, query: str, register: Callable[[str, DataFrame], None],
                     *, written: str | None = None) -> tuple[str, list[Table]]:
    """``query`` with every evonb table it reads made a view with ``register`` (of
    :func:`~evonb.spark.temp_views.statement_views`): ``<table> AS OF '<commit>'`` becomes a
    view of that commit, any other evonb table (but ``written``, the one the statement
    changes) a view of its latest snapshot. Returns the rewritten query and the tables read
    as they are now."""

    def view_for(ref: TableRef) -> str:
        source = ctx.open(ref.name)
        instant = source.commit(resolve_ref(source, ref.as_of or "")).instant
        view = f"{ref.name}__as_of_{instant}"
        register(view, source.read(as_of=instant))
        return view

    rewritten, refs = rewrite(query, ctx.table_names(), view_for)
    current = []
    for name in dict.fromkeys(r.name for r in refs if r.as_of is None):
        if written is None or name.lower() != written.lower():
            table = ctx.open(name)
            register(name, table.read())
            current.append(table)
    return rewritten, current


def run(ctx: Context, query: str, name: str, target: str | None = None) -> Committed:
    """Run ``query``, one statement changing the evonb table ``name``; other evonb tables it
    reads (``t AS OF '<commit>'`` too) are temporary views as in a query. ``target`` names a
    variable for the :class:`~evonb.spark.sql_writes.SQLWriteResult`."""
    if len([s for s in sqlparse.split(query) if s.strip()]) > 1:
        raise UsageError(f"%evo sql runs a statement that changes the evonb table {name!r} "
                         "alone: put each statement in a %evo sql of its own")
    table = ctx.open(name)

    with statement_views() as register:
        rewritten, _ = statement_tables(ctx, query, register, written=name)
        result = execute(table, rewritten, name=name)
    if result.mode == "drop":
        ctx.locations.pop(name.strip().strip("`").lower(), None)
    if target:
        ctx.user_ns[target] = result
    return Committed(result)


__all__ = ["STATEMENTS", "Committed", "run", "statement_tables", "written_table"]
