"""``describe``, ``history``, ``diff`` and ``lineage``: looking at a table's schemas and
timeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evonb.notebook.args import identifier, parse_args, resolve_ref
from evonb.notebook.display import TableInfo
from evonb.notebook.widgets.diff import SchemaDiffWidget
from evonb.notebook.widgets.timeline import TimelineWidget

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table
    from evonb.arrow.data_diff import DataDiff
    from evonb.notebook.context import Context
    from evonb.schema.lineage import Lineage

DESCRIBE_USAGE = "%evo describe <table> [as of <commit> | schema <version>]"
HISTORY_USAGE = "%evo history <table>"
DIFF_USAGE = ("%evo diff <table> <commit or version> [<commit or version>|latest]   |   "
              "%evo diff <table> <commit> <commit> --data [schema latest|<version>|<commit>] "
              "[--to var]")
LINEAGE_USAGE = "%evo lineage <table>"


def describe(ctx: Context, text: str) -> TableInfo:
    """The table's settings and its schema, latest or as of a commit."""
    args = parse_args(text, usage=DESCRIBE_USAGE, clauses=("as of", "schema"),
                      max_positional=1)
    table = ctx.open(args.table(DESCRIBE_USAGE))
    ref = args.clauses.get("as of")
    version = args.clauses.get("schema")
    if ref is not None and version is not None:
        from IPython.core.error import UsageError

        raise UsageError("Use either 'as of' (a commit) or 'schema' (a schema version), not "
                         f"both. Usage: {DESCRIBE_USAGE}")
    if version is not None:
        schema = table.resolve_schema(resolve_ref(table, version))
        name = table.version_name(schema.version_id)
        return TableInfo(table, schema, title=f"Table {table.name}, schema {name}")
    if ref is None:
        return TableInfo(table, table.schema, title=f"Table {table.name}")
    commit = table.commit(resolve_ref(table, ref))
    return TableInfo(table, table.schema_at(commit.instant), as_of=commit.instant,
                     title=f"Table {table.name} as of {commit.instant}")


def history(ctx: Context, text: str) -> TimelineWidget:
    """The timeline widget of a table."""
    args = parse_args(text, usage=HISTORY_USAGE, max_positional=1)
    table = ctx.open(args.table(HISTORY_USAGE))
    engine = "arrow" if ctx.config.reads_with_arrow() else "spark"
    return TimelineWidget(table, preview_rows=ctx.preview_rows, engine=engine)


def diff(ctx: Context, text: str) -> SchemaDiffWidget | DataDiff:
    """What changed between two commits' schemas (or schema versions); b defaults to latest.
    With ``--data``, the rows added, removed and changed between two commits, read in one
    schema (``schema ...``, default latest) by the engine ``Evo.engine`` names, as ``%evo
    read`` does: Arrow (no JVM) for 'arrow', and for 'auto' unless ``--to`` asks for a
    DataFrame; Spark for 'spark'. ``--to var`` binds the whole diff as a pandas DataFrame
    (:meth:`DataDiff.to_pandas`) after an Arrow diff, a Spark one (:meth:`DataDiff.to_spark`)
    after a Spark diff."""
    from IPython.core.error import UsageError

    args = parse_args(text, usage=DIFF_USAGE, max_positional=3, clauses=("schema",),
                      flags=("data",), options={"to": identifier})
    table = ctx.open(args.table(DIFF_USAGE))
    refs = [resolve_ref(table, r) for r in args.positional[1:]]
    if args.options.get("data"):
        return _data_diff(ctx, table, refs, args.clauses.get("schema"), args.options.get("to"))
    if "to" in args.options or "schema" in args.clauses:
        raise UsageError(f"--to and schema go with --data (a data diff). Usage: {DIFF_USAGE}")
    if not refs:
        raise UsageError(f"Name the schema to compare with. Usage: {DIFF_USAGE}")
    a, b = refs[0], refs[1] if len(refs) > 1 else "latest"
    change = table.diff(a, b)
    names = (table.version_name(change.before.version_id),
             table.version_name(change.after.version_id))
    return SchemaDiffWidget(change, title=f"{table.name}: {a} → {b}",
                            labels=(f"before {names[0]}", f"after {names[1]}"))


def _data_diff(ctx: Context, table: Table, refs: list[str], schema: str | None,
               to: str | None) -> DataDiff:
    from dataclasses import replace

    from IPython.core.error import UsageError

    if len(refs) != 2:
        raise UsageError(f"A data diff compares two commits. Usage: {DIFF_USAGE}")
    query = resolve_ref(table, schema) if schema is not None else "latest"
    arrow = ctx.config.reads_with_arrow(spark_dataframe=to is not None)
    result = table.diff_data(refs[0], refs[1], schema=query,
                             engine="arrow" if arrow else "spark")
    if to is None:
        return result
    ctx.user_ns[to] = result.to_pandas() if arrow else result.to_spark()
    kind = "a pandas DataFrame" if arrow else "a Spark DataFrame"
    return replace(result, note=f"the whole diff is in {to!r} ({kind})")


def lineage(ctx: Context, text: str) -> Lineage:
    """The life of every column of a table through its schema versions (``t.lineage()``):
    a grid of field IDs against versions v0..vN, or its text form."""
    args = parse_args(text, usage=LINEAGE_USAGE, max_positional=1)
    return ctx.open(args.table(LINEAGE_USAGE)).lineage()
