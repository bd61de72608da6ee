"""Previews of ALTER statements: the diff they would make and what it costs, committing nothing.

A change metadata can express (``metadata-only``) is applied by ``Table.alter``; a type change
it cannot express (``int -> string``, ``double -> int``) ``needs a rewrite``: ``Table.rewrite``
with the same DDL rewrites every file. :func:`preview_alter` reports either instead of failing
on the second, as ``%evo preview`` shows it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evonb.errors import SchemaEvolutionError
from evonb.schema.diffing import Change, SchemaDiff
from evonb.schema.evolution import SchemaUpdate
from evonb.schema.promotion import can_change_type
from evonb.schema.render import diff_to_html, diff_to_text
from evonb.schema.schema import Schema
from evonb.schema.types import Type
from evonb.sql import SetProperties, UnsetProperties, ddl_to_update, parse_alter

if TYPE_CHECKING:  # pragma: no cover
    from evonb.table.handle import TableHandle

METADATA_ONLY = "metadata-only"
NEEDS_REWRITE = "needs a rewrite"


@dataclass(frozen=True, repr=False)
class AlterPreview(SchemaDiff):
    """The diff an ALTER would make, with ``rewrites``: the type changes among them that
    metadata cannot express (empty when the change is metadata only)."""

    rewrites: tuple[Change, ...] = ()

    @property
    def needs_rewrite(self) -> bool:
        return bool(self.rewrites)

    @property
    def cost(self) -> str:
        """``"metadata-only"`` or ``"needs a rewrite"``."""
        return NEEDS_REWRITE if self.rewrites else METADATA_ONLY

    @property
    def sets_not_null(self) -> bool:
        """Whether the change makes a column NOT NULL (checked against the data first)."""
        return any(c.new is False for c in self.by_kind("nullability"))

    @property
    def note(self) -> str:
        """One sentence on what applying the change takes."""
        if self.rewrites:
            what = "; ".join(c.describe() for c in self.rewrites)
            return (f"Needs a rewrite: {what} is not a type change metadata can express, so "
                    "every file must be rewritten: run the same DDL with Table.rewrite(ddl) "
                    "(it checks that every value fits first). Nothing was committed.")
        if self.sets_not_null:
            return ("Metadata only, after one scan: SET NOT NULL first checks that no row "
                    "holds null. Nothing was committed.")
        return "Metadata only: no data file is touched. Nothing was committed."

    def __repr__(self) -> str:
        return f"{diff_to_text(self)}\n{self.cost}: {self.note}"

    def __str__(self) -> str:
        return repr(self)

    def _repr_html_(self) -> str:
        return f"{diff_to_html(self)}<p class='evonb-note'>{html.escape(self.note)}</p>"


def preview_alter(table: TableHandle, ddl: str) -> AlterPreview:
    """The diff ``table.alter(ddl)`` would make; a type change metadata cannot express gives
    the diff a rewrite would make, with those type changes in ``rewrites``. Other mistakes
    (an unknown column, a key column retyped) raise as ``alter`` would."""
    try:
        update = ddl_to_update(table.schema, ddl, allow_set_not_null=True)
        table.check_protected(update)
        change = update.preview()
        return AlterPreview(change.before, change.after, change.changes)
    except SchemaEvolutionError as exc:
        if not (isinstance(exc.old, Type) and isinstance(exc.new, Type)):
            raise
        rejected = exc
    change = rewrite_update(table.schema, ddl).preview()
    rewrites = [c for c in change.by_kind("retyped")
                if not can_change_type(change.before.field_by_id(c.field_id).type,
                                       change.after.field_by_id(c.field_id).type)]
    if not rewrites:
        raise rejected
    keys = {k.lower() for k in (*table.primary_key, *table.partition_by,
                                *([table.precombine] if table.precombine else []))}
    for c in rewrites:
        if (c.old_path or "").lower() in keys:
            raise SchemaEvolutionError(
                f"Key column {c.old_path!r} cannot be retyped, not even by a rewrite: it is a "
                "record key, precombine or partition column", path=c.old_path,
                field_id=c.field_id, hint="to change keys, create a new table and copy")
    return AlterPreview(change.before, change.after, change.changes, tuple(rewrites))


def rewrite_update(schema: Schema, ddl: str) -> SchemaUpdate:
    """The schema change of ``ddl``, allowing type changes that need a rewrite. Table
    properties are refused: they are changed with ``alter``, not by rewriting data."""
    if any(isinstance(s, SetProperties | UnsetProperties) for s in parse_alter(ddl)):
        raise SchemaEvolutionError(
            "A rewrite cannot change table properties",
            hint="run SET/UNSET TBLPROPERTIES with alter (%evo alter), then the rewrite")
    return ddl_to_update(schema, ddl, allow_set_not_null=True, allow_rewrite_type_changes=True)


__all__ = ["METADATA_ONLY", "NEEDS_REWRITE", "AlterPreview", "preview_alter"]
