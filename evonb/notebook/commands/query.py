"""``read`` and ``sql``: the table's data as a preview (and a Spark DataFrame on request)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from evonb.notebook.args import identifier, parse_args, positive_int, resolve_ref
from evonb.notebook.preview import Preview
from evonb.notebook.sqlrefs import TableRef, rewrite

if TYPE_CHECKING:  # pragma: no cover
    from evonb.notebook.context import Context

READ_USAGE = ("%evo read <table> [as of <commit>] [schema latest|<commit>] [--limit n] "
              "[--to var] [--columns a,b] [--since <commit> [--until <commit>]]")
SQL_USAGE = ("%evo sql [--limit n] [--to var] <query>   (tables by name; "
             "<table> as of '<commit>' reads it as of a commit)")
_SQL_OPTION = re.compile(r"\s*--(limit|to)(?:=|\s+)(\S+)")


def read(ctx: Context, text: str) -> Preview:
    """The first rows of a table (as of a commit, in a chosen schema)."""
    args = parse_args(
        text, usage=READ_USAGE, clauses=("as of", "schema"), max_positional=1,
        options={"limit": positive_int, "to": identifier, "since": str, "until": str,
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
    if since is not None:
        start = table.commit(resolve_ref(table, since)).instant
        end = table.commit(resolve_ref(table, until)).instant if until else None
        df = table.read_incremental(start, end, schema=schema)
        if columns:
            df = df.select(*columns)
        where = f" written after {start}" + (f" up to {end}" if end else "")
        instant = end
    else:
        instant = table.commit(resolve_ref(table, as_of)).instant if as_of else None
        df = table.read(as_of=instant, schema=schema, columns=columns)
        where = f" as of {instant}" if instant else ""
    if "to" in args.options:
        ctx.user_ns[args.options["to"]] = df
    if schema is None:
        in_schema = "in that commit's schema" if instant else "in the latest schema"
    elif schema == "latest":
        in_schema = "in today's schema"
    else:
        in_schema = f"in the schema of {schema}"
    limit = args.options.get("limit", ctx.preview_rows)
    stored = f"; the DataFrame is in {args.options['to']!r}" if "to" in args.options else ""
    return Preview.of(df, limit, f"{table.name}{where}, {in_schema}{stored}",
                      order_by=table.primary_key)


def sql(ctx: Context, text: str) -> Preview:
    """Spark SQL over evonb tables, each a temporary view named like the table."""
    options: dict[str, str] = {}
    while True:
        match = _SQL_OPTION.match(text)
        if not match:
            break
        options[match.group(1)] = match.group(2)
        text = text[match.end():]
    query = text.strip().rstrip(";").strip()
    if not query:
        raise UsageError(f"No query given. Usage: {SQL_USAGE}")
    try:
        limit = positive_int(options.get("limit", str(ctx.preview_rows)))
        target = identifier(options["to"]) if "to" in options else None
    except ValueError:
        raise UsageError(f"Bad --limit or --to value. Usage: {SQL_USAGE}") from None

    def view_for(ref: TableRef) -> str:
        table = ctx.open(ref.name)
        instant = table.commit(resolve_ref(table, ref.as_of or "")).instant
        view = f"{ref.name}__as_of_{instant}"
        table.read(as_of=instant).createOrReplaceTempView(view)
        return view

    rewritten, refs = rewrite(query, ctx.table_names(), view_for)
    spark = None
    for name in dict.fromkeys(r.name for r in refs if r.as_of is None):
        table = ctx.open(name)
        table.read().createOrReplaceTempView(name)
        spark = table.spark
    if spark is None:
        from evonb.spark.session import session

        spark = session()
    df = spark.sql(rewritten)
    if target:
        ctx.user_ns[target] = df
    stored = f"; the DataFrame is in {target!r}" if target else ""
    return Preview.of(df, limit, f"Result of {' '.join(query.split())[:80]}{stored}")
