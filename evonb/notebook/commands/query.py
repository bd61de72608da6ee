"""``read`` and ``sql``: the table's data as a preview (and a Spark DataFrame on request)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from evonb.errors import UnsupportedStatementError
from evonb.notebook import sql_writes
from evonb.notebook.args import identifier, limit, parse_args, resolve_ref
from evonb.notebook.preview import Preview
from evonb.notebook.sqlrefs import TableChange, changed_tables, tokens
from evonb.spark import session as managed
from evonb.spark.temp_views import statement_views

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table
    from evonb.notebook.context import Context

READ_USAGE = ("%evo read <table> [as of <commit>] [schema latest|<commit>] [--limit n] "
              "[--to var] [--columns a,b] [--since <commit> [--until <commit>]]")
SQL_USAGE = ("%evo sql [--limit n] [--to var] <query>   (tables by name; "
             "<table> as of '<commit>' reads it as of a commit; INSERT, UPDATE, DELETE, "
             "MERGE INTO and DROP TABLE <table> PURGE change an evonb table, one commit each)")
_SQL_OPTION = re.compile(r"\s*--(limit|to)(?:=(\S*)|\s+(\S+)|\s*$)")
"""An option before the query; ``--limit=`` with nothing after the ``=`` is a missing value,
not a SQL comment."""


def read(ctx: Context, text: str) -> Preview:
    """The first rows of a table (as of a commit, in a chosen schema). ``Evo.engine`` says what
    reads them: the Arrow reader (no JVM) for 'arrow', and for 'auto' unless ``--to`` asks for
    a Spark DataFrame; Spark for 'spark'. With 'arrow', ``--to`` binds a pandas DataFrame."""
    args = parse_args(
        text, usage=READ_USAGE, clauses=("as of", "schema"), max_positional=1,
        options={"limit": limit, "to": identifier, "since": str, "until": str,
                 "columns": lambda v: [c.strip() for c in v.split(",") if c.strip()]},
    )
    table = ctx.open(args.table(READ_USAGE))
    as_of = args.clauses.get("as of")
    since, until = args.options.get("since"), args.options.get("until")
    if until is not None and since is None:
        raise UsageError(f"--until needs --since. Usage: {READ_USAGE}")
    if since is not None and as_of is not None:
        raise UsageError("Use either 'as of' (a snapshot) or --since (the rows written after a "
                         f"commit), not both. Usage: {READ_USAGE}")
    schema_ref = args.clauses.get("schema")
    schema = None
    if schema_ref is not None:
        schema = resolve_ref(table, schema_ref)
    columns = args.options.get("columns")
    target = args.options.get("to")
    rows = args.options.get("limit", ctx.preview_rows)
    arrow = ctx.config.reads_with_arrow(spark_dataframe=target is not None)
    if since is not None:
        start = table.commit(resolve_ref(table, since)).instant
        end = table.commit(resolve_ref(table, until)).instant if until else None
        where = f" written after {start}" + (f" up to {end}" if end else "")
        instant = end
    else:
        start = end = None
        instant = table.commit(resolve_ref(table, as_of)).instant if as_of else None
        where = f" as of {instant}" if instant else ""
    if schema is None:
        in_schema = "in that commit's schema" if instant else "in the latest schema"
    elif schema == "latest":
        in_schema = "in today's schema"
    else:
        in_schema = f"in the schema of {schema}"
    kind = "pandas DataFrame" if arrow else "DataFrame"
    stored = f"; the {kind} is in {target!r}" if target else ""
    caption = f"{table.name}{where}, {in_schema}{stored}"
    if arrow:
        return _read_arrow(ctx, table, caption, rows, target, since=start, until=end,
                           as_of=instant, schema=schema, columns=columns)
    if start is not None:
        df = table.read_incremental(start, end, schema=schema)
        if columns:
            df = df.select(*columns)
    else:
        df = table.read(as_of=instant, schema=schema, columns=columns)
    if target:
        ctx.user_ns[target] = df
    return Preview.of(df, rows, caption, order_by=table.primary_key)


def _read_arrow(ctx: Context, table: Table, caption: str, rows: int, target: str | None, *,
                since: str | None, until: str | None, as_of: str | None, schema: str | None,
                columns: list[str] | None) -> Preview:
    """:func:`read` with the Arrow reader: streamed for the preview (a table without a record
    key stops reading after ``rows + 1`` rows), whole when ``target`` binds it."""
    from evonb.arrow.reader import ArrowRead, IncrementalRead  # pyarrow: on the first read

    keyed = any(k in table.primary_key for k in (columns or table.primary_key))
    cap = None if target or keyed else rows + 1
    reader: ArrowRead | IncrementalRead
    if since is not None:
        reader = IncrementalRead(table, since, until, schema=schema, columns=columns, limit=cap)
    else:
        reader = ArrowRead(table, as_of, schema=schema, columns=columns, limit=cap)
    if target:
        whole = reader.to_table()
        ctx.user_ns[target] = whole.to_pandas()
        return Preview.of_arrow(whole, rows, caption, order_by=table.primary_key)
    return Preview.of_arrow(reader.batches(), rows, caption, order_by=table.primary_key,
                            schema=reader.output)


def sql(ctx: Context, text: str) -> Preview | sql_writes.Committed:
    """Spark SQL over evonb tables, each a temporary view named like the table for the
    statement (dropped once Spark has analysed it: :mod:`evonb.spark.temp_views`); INSERT,
    UPDATE, DELETE, MERGE and DROP TABLE ... PURGE on an evonb table run as one evonb write
    (:mod:`evonb.notebook.sql_writes`), other changing statements are refused."""
    options: dict[str, str] = {}
    while True:
        match = _SQL_OPTION.match(text)
        if not match:
            break
        value = match.group(2) if match.group(2) is not None else match.group(3)
        if not value:
            raise UsageError(f"--{match.group(1)} needs a value. Usage: {SQL_USAGE}")
        options[match.group(1)] = value
        text = text[match.end():]
    query = text.strip().rstrip(";").strip()
    if not query:
        raise UsageError(f"No query given. Usage: {SQL_USAGE}")
    rows = limit(options["limit"]) if "limit" in options else ctx.preview_rows
    try:
        target = identifier(options["to"]) if "to" in options else None
    except ValueError:
        raise UsageError(f"Bad --to value {options['to']!r} (a Python name). "
                         f"Usage: {SQL_USAGE}") from None

    names = {n.lower(): n for n in ctx.table_names()}
    written = sql_writes.written_table(query, names)
    if written is not None:  # INSERT, UPDATE, DELETE, MERGE, DROP: one evonb write
        return sql_writes.run(ctx, query, written, target)
    for change in changed_tables(query):
        if change.table.lower() in names:
            name = names[change.table.lower()]
            raise refusal(change, name, ctx.open(name).path)
    view_over = _view_over(query, names)
    if view_over is not None:
        raise UnsupportedStatementError(
            f"%evo sql does not create a Spark view over the evonb table {view_over!r}: an "
            "evonb table is a view only while the statement naming it runs, so a view made "
            "from it could not be read afterwards. Nothing was created.",
            statement="CREATE VIEW", table=view_over,
            hint=f"keep a DataFrame instead: %evo sql --to df SELECT ... FROM {view_over}, "
                 "then df.createOrReplaceTempView('name') (it reads the table as it is now)")

    with statement_views() as register:
        rewritten, read = sql_writes.statement_tables(ctx, query, register)
        spark = read[0].spark_session() if read else managed.session()
        df = spark.sql(rewritten)  # analysed here: the views may go once it returns
    if target:
        ctx.user_ns[target] = df
    stored = f"; the DataFrame is in {target!r}" if target else ""
    return Preview.of(df, rows, f"Result of {' '.join(query.split())[:80]}{stored}")


def _view_over(query: str, names: dict[str, str]) -> str | None:
    """The evonb table (of ``names``) a ``CREATE ... VIEW ... AS`` statement reads, or None."""
    toks = tokens(query)
    if not toks or not toks[0].is_word("create"):
        return None
    words = [t.text.lower() for t in toks if t.kind == "word"]
    if "view" not in words or "as" not in words or words.index("view") > words.index("as"):
        return None
    for tok in toks:
        if tok.kind in ("word", "quoted") and tok.value.lower() in names:
            return names[tok.value.lower()]
    return None


_INSTEAD = {
    "TRUNCATE": "delete every row with %evo sql DELETE FROM {table} (one commit)",
    "ALTER": "change the schema or table properties with %evo alter table {table} ...",
    "CREATE": "create an evonb table with %evo create table <new name> (...), or give a "
              "Spark view another name",
    "REPLACE": "create an evonb table with %evo create table <new name> (...)",
}


def refusal(change: TableChange, table: str, path: str) -> UnsupportedStatementError:
    """The error for a Spark SQL statement that would change the evonb table ``table`` in a
    way evonb does not run from SQL (TRUNCATE, ALTER, CREATE OR REPLACE, ...): Spark sees the
    table as a read-only view, so the statement would fail or change nothing."""
    instead = _INSTEAD.get(change.kind, "use the evonb API").format(table=table)
    if change.kind not in _INSTEAD:
        instead += f": t = evonb.open_table({path!r})"
    excerpt = " ".join(change.statement.split())
    excerpt = excerpt if len(excerpt) <= 80 else excerpt[:77] + "..."
    return UnsupportedStatementError(
        f"%evo sql does not run {change.kind} on the evonb table {table!r} (it runs INSERT, "
        f"UPDATE, DELETE, MERGE and DROP TABLE ... PURGE as evonb writes). Nothing was "
        f"changed. Statement: {excerpt}",
        statement=change.kind, table=table, hint=instead)
