"""``create table``, ``alter`` and ``preview alter``: DDL through the table API."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from evonb.errors import SchemaEvolutionError
from evonb.notebook.display import TableInfo
from evonb.notebook.widgets.diff import SchemaDiffWidget
from evonb.schema.diffing import diff
from evonb.schema.schema import format_path, transform_fields
from evonb.schema.types import Type
from evonb.sql import AlterColumn, CreateTable, Statement, parse_ddl

if TYPE_CHECKING:  # pragma: no cover
    from evonb.notebook.context import Context
    from evonb.schema.schema import Schema
    from evonb.table.table import Table

CREATE_USAGE = ("%evo create table [if not exists] <name> (<columns>) [partitioned by (...)] "
                "[location '<path>'] [tblproperties (primaryKey='id', preCombineField='ts')]")
ALTER_USAGE = "%evo alter table <name> <change>[; alter table <name> <change> ...]"
PREVIEW_USAGE = "%evo preview alter table <name> <change>[; ...]"

_KEY_PROPS = {"primarykey", "primary_key", "precombinefield", "precombine", "type",
              "table_type", "tabletype"}


def create(ctx: Context, text: str) -> TableInfo:
    """Create the table of one CREATE TABLE statement (in the warehouse, or at LOCATION)."""
    from evonb.table.table import create_table

    statements = parse_ddl(text)
    if len(statements) != 1 or not isinstance(statements[0], CreateTable):
        raise UsageError(f"Expected one CREATE TABLE statement. Usage: {CREATE_USAGE}")
    st = statements[0]
    path = Path(st.location).expanduser().resolve() if st.location else ctx.path_for(st.table)
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
        raise UsageError("CREATE TABLE cannot be combined with other statements: run it on its "
                         "own with %evo create table ...")
    names = {s.table.lower(): s.table for s in statements}
    if len(names) > 1:
        raise UsageError("The statements change more than one table ("
                         + ", ".join(sorted(names.values()))
                         + "): run the statements of each table separately")
    return statements[0].table


def alter(ctx: Context, text: str) -> SchemaDiffWidget:
    """Run ALTER TABLE statements as one schema change; show the diff."""
    name = _table_of(parse_ddl(text), ALTER_USAGE)
    table = ctx.open(name)
    change = table.alter(text)
    if change:
        note = (f"Committed schema version {change.after.version_id}: metadata only, no data "
                "file was rewritten.")
        kind = "ok"
    else:
        note, kind = "Nothing changed: the schema already is what the DDL asks for.", "info"
    return SchemaDiffWidget(change, title=f"ALTER TABLE {table.name}", note=note, note_kind=kind)


class AlterPreviewWidget(SchemaDiffWidget):
    """The diff an ALTER would make and its cost, ``"metadata-only"`` or ``"needs a rewrite"``."""

    def __init__(self, change: Any, *, title: str, cost: str, note: str, kind: str,
                 rejected: list[SchemaEvolutionError]) -> None:
        self.cost = cost
        self.rejected = rejected
        super().__init__(change, title=title, note=note, note_kind=kind,
                         labels=("now", "after the ALTER (not committed)"))


def preview(ctx: Context, text: str) -> AlterPreviewWidget:
    """The diff and the cost of ALTER statements, committing nothing."""
    if not text.strip().lower().startswith("alter"):
        raise UsageError(f"Usage: {PREVIEW_USAGE}")
    statements = parse_ddl(text)
    table = ctx.open(_table_of(statements, PREVIEW_USAGE))
    change, rejected = preview_alter(table, statements)
    if rejected:
        what = "; ".join(f"{e.path}: {e.old} -> {e.new}" for e in rejected)
        note = (f"Needs a rewrite: {what} is not a type change metadata can express, so every "
                "file must be rewritten: run the same ALTER with %evo rewrite (it checks that "
                "every value fits first). Nothing was committed.")
        return AlterPreviewWidget(change, title=f"Preview: ALTER TABLE {table.name}",
                                  cost="needs a rewrite", note=note, kind="warn",
                                  rejected=rejected)
    if any(c.new is False for c in change.by_kind("nullability")):
        note = ("Metadata only, after one scan: SET NOT NULL first checks that no row holds "
                "null. Nothing was committed.")
    else:
        note = ("Metadata only: no data file is touched. Nothing was committed; run the same "
                "DDL with %evo alter to apply it.")
    return AlterPreviewWidget(change, title=f"Preview: ALTER TABLE {table.name}",
                              cost="metadata-only", note=note, kind="info", rejected=[])


def preview_alter(table: Table, statements: list[Statement]
                  ) -> tuple[Any, list[SchemaEvolutionError]]:
    """``table.preview_alter`` that reports type changes metadata cannot express instead of
    failing: the diff then shows them as retypes, and the rejections are returned."""
    pending = list(statements)
    rejected: list[SchemaEvolutionError] = []
    while True:
        try:
            change = table.preview_alter(pending)  # type: ignore[arg-type]
            break
        except SchemaEvolutionError as exc:
            index = _rejected_type_change(pending, exc)
            if index is None:
                raise
            rejected.append(exc)
            pending[index] = dataclasses.replace(pending[index], new_type=None)  # type: ignore
    if not rejected:
        return change, rejected
    after = _retype(change.after, {e.field_id: e.new for e in rejected
                                   if e.field_id is not None})
    return diff(change.before, after), rejected


def _rejected_type_change(statements: list[Statement], exc: SchemaEvolutionError) -> int | None:
    """The statement whose type change ``exc`` rejected, if that is what it is."""
    if not (isinstance(exc.old, Type) and isinstance(exc.new, Type)) or not exc.path:
        return None
    if exc.old.is_nested or exc.new.is_nested:
        return None
    for i, s in enumerate(statements):
        if (isinstance(s, AlterColumn) and s.new_type == exc.new
                and format_path(s.path).lower() == exc.path.lower()):
            return i
    return None


def _retype(schema: Schema, types: dict[int, Type]) -> Schema:
    def fn(f: Any, _parent: int) -> Any:
        return f.replace(type=types[f.id]) if f.id in types else f

    return schema.replace(fields=transform_fields(schema.fields, fn))
