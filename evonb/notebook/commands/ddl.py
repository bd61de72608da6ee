"""``create table``, ``alter`` and ``preview alter``: DDL through the table API."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from evonb.api import create_table
from evonb.notebook.args import parse_args, resolve_ref
from evonb.notebook.display import TableInfo
from evonb.notebook.widgets.diff import SchemaDiffWidget
from evonb.schema.diffing import SchemaDiff
from evonb.sql import CreateTable, Statement, parse_ddl
from evonb.sql.apply import property_changes
from evonb.table.fileio import is_object_path
from evonb.table.fsutil import table_path

if TYPE_CHECKING:  # pragma: no cover
    from evonb.notebook.context import Context
    from evonb.schema.diffing import Change
    from evonb.table.revert import RevertPreview

CREATE_USAGE = ("%evo create table [if not exists] <name> (<columns>) [partitioned by (...)] "
                "[location '<path>'] [tblproperties (primaryKey='id', preCombineField='ts')]")
ALTER_USAGE = "%evo alter table <name> <change>[; alter table <name> <change> ...]"
PREVIEW_USAGE = ("%evo preview alter table <name> <change>[; ...]   or   "
                 "%evo preview revert <table> to <commit|vN>")
REVERT_USAGE = "%evo revert <table> to <commit|vN> [--preview]"

_CREATE_ALONE = ("CREATE TABLE cannot be combined with other statements: run it on its own "
                 "(%evo create table ...), then the ALTER statements")
_KEY_PROPS = {"primarykey", "primary_key", "precombinefield", "precombine", "type",
              "table_type", "tabletype"}


def _location(location: str) -> Path:
    """The root a CREATE TABLE's LOCATION names: a bucket or container as it is (``s3://``,
    ``abfss://``, ``az://``; another scheme is an error naming it), a local path from the
    home folder or the working folder."""
    root = table_path(location)
    return root if is_object_path(root) else root.expanduser().resolve()


def create(ctx: Context, text: str) -> TableInfo:
    """Create the table of one CREATE TABLE statement (in the warehouse, or at LOCATION)."""

    statements = parse_ddl(text)
    if len(statements) > 1 and any(isinstance(s, CreateTable) for s in statements):
        raise UsageError(_CREATE_ALONE)
    if len(statements) != 1 or not isinstance(statements[0], CreateTable):
        raise UsageError(f"Expected one CREATE TABLE statement. Usage: {CREATE_USAGE}")
    st = statements[0]
    path = _location(st.location) if st.location else ctx.path_for(st.table)
    properties = {k: v for k, v in st.properties.items() if k.lower() not in _KEY_PROPS}
    table_type = next((v.lower() for k, v in st.properties.items()
                       if k.lower() in ("type", "table_type", "tabletype")), "cow")
    if st.comment:
        properties["comment"] = st.comment
    table = create_table(
        path, st.schema, primary_key=st.primary_key or None, precombine=st.precombine,
        partition_by=st.partition_by, table_type=table_type, properties=properties,
        name=st.table.split(".")[-1].strip("`"), exist_ok=st.if_not_exists,
    )
    if st.location:
        ctx.remember(st.table, path)
    return TableInfo(table, table.schema, title=f"Table {table.name}")


def _table_of(statements: list[Statement], usage: str) -> str:
    if not statements:
        raise UsageError(f"No DDL statement given. Usage: {usage}")
    if any(isinstance(s, CreateTable) for s in statements):
        raise UsageError(_CREATE_ALONE)
    names = {s.table.lower(): s.table for s in statements}
    if len(names) > 1:
        raise UsageError("The statements change more than one table ("
                         + ", ".join(sorted(names.values()))
                         + "): run the statements of each table separately")
    return statements[0].table


def alter(ctx: Context, text: str) -> SchemaDiffWidget:
    """Run ALTER TABLE statements as one schema change; show the diff."""
    statements = parse_ddl(text)
    name = _table_of(statements, ALTER_USAGE)
    table = ctx.open(name)
    change = table.alter(text)
    props = _property_note(statements)
    if change:
        note = (f"Committed schema version {change.after.version_id}: metadata only, no data "
                "file was rewritten." + (f" {props}" if props else ""))
        kind = "ok"
    elif props:
        note, kind = f"{props} The schema is unchanged.", "ok"
    else:
        note, kind = "Nothing changed: the schema already is what the DDL asks for.", "info"
    return SchemaDiffWidget(change, title=f"ALTER TABLE {table.name}", note=note, note_kind=kind)


def _property_note(statements: list[Statement]) -> str:
    """What SET/UNSET TBLPROPERTIES statements did, in a sentence ("" when none)."""
    set_, unset, _ = property_changes(statements)
    parts = []
    if set_:
        parts.append("set " + ", ".join(f"{k}={v}" for k, v in set_.items()))
    if unset:
        parts.append("unset " + ", ".join(unset))
    return f"Table properties: {'; '.join(parts)}." if parts else ""


class AlterPreviewWidget(SchemaDiffWidget):
    """The diff an ALTER would make and its cost, ``"metadata-only"`` or ``"needs a rewrite"``;
    ``rewrites`` are the type changes that need the rewrite."""

    def __init__(self, change: SchemaDiff, *, title: str, cost: str, note: str, kind: str,
                 rewrites: list[Change]) -> None:
        self.cost = cost
        self.rewrites = rewrites
        super().__init__(change, title=title, note=note, note_kind=kind,
                         labels=("now", "after the ALTER (not committed)"))


def preview(ctx: Context, text: str) -> AlterPreviewWidget | RevertWidget:
    """The diff and the cost of ALTER statements (or of a revert), committing nothing."""
    first = text.strip().split(None, 1)
    if first and first[0].lower() == "revert":
        return revert(ctx, f"{first[1] if len(first) > 1 else ''} --preview")
    if not text.strip().lower().startswith("alter"):
        raise UsageError(f"Usage: {PREVIEW_USAGE}")
    table = ctx.open(_table_of(parse_ddl(text), PREVIEW_USAGE))
    title = f"Preview: ALTER TABLE {table.name}"
    change = table.preview_alter(text)
    rewrites = list(change.rewrites)
    if rewrites:
        what = "; ".join(c.describe() for c in rewrites)
        note = (f"Needs a rewrite: {what} is not a type change metadata can express, so every "
                "file must be rewritten: run the same ALTER with %evo rewrite (it checks that "
                "every value fits first). Nothing was committed.")
        return AlterPreviewWidget(change, title=title, cost="needs a rewrite", note=note,
                                  kind="warn", rewrites=rewrites)
    if any(c.new is False for c in change.by_kind("nullability")):
        note = ("Metadata only, after one scan: SET NOT NULL first checks that no row holds "
                "null. Nothing was committed.")
    else:
        note = ("Metadata only: no data file is touched. Nothing was committed; run the same "
                "DDL with %evo alter to apply it.")
    return AlterPreviewWidget(change, title=title, cost="metadata-only", note=note, kind="info",
                              rewrites=[])


class RevertWidget(SchemaDiffWidget):
    """The diff of a schema revert (``revert``: the :class:`RevertPreview`, with the version
    reverted to, the field IDs restored and removed), committed or previewed."""

    def __init__(self, revert: RevertPreview, *, title: str, labels: tuple[str, str]) -> None:
        self.revert = revert
        plain = SchemaDiff(revert.before, revert.after, revert.changes)
        super().__init__(plain, title=title, note=revert.note,
                         note_kind="ok" if revert.committed else "info", labels=labels)


def revert(ctx: Context, text: str) -> RevertWidget:
    """Make an older schema version's fields current again (``Table.revert_schema``), or with
    ``--preview`` show the diff without committing (``Table.preview_revert``)."""
    args = parse_args(text, usage=REVERT_USAGE, clauses=("to",), flags=("preview",),
                      max_positional=1)
    name = args.table(REVERT_USAGE)
    ref = args.clauses.get("to")
    if ref is None:
        raise UsageError(f"Name the schema version or commit to revert to. Usage: {REVERT_USAGE}")
    table = ctx.open(name)
    target = resolve_ref(table, ref)
    if args.options.get("preview"):
        change = table.preview_revert(target)
        title = f"Preview: revert {table.name} to {ref}"
        after = f"after the revert to {change.target_name} (not committed)"
    else:
        change = table.revert_schema(target)
        title = f"Revert {table.name} to {ref}"
        after = f"after: {change.target_name}'s fields, new version " \
                f"{table.version_name(change.after.version_id)}"
    return RevertWidget(change, title=title, labels=("now" if not change.committed
                                                     else "before", after))
