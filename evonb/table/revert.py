"""Reverting a table's schema to an older version (as Iceberg's set-current-schema).

A revert commits a new schema version whose fields are those of the older version, with their
field IDs. Reads resolve columns by field ID through each file's schema version, so:

- a column added since the older version disappears (its ID is gone from the schema);
- a column dropped since comes back with its old ID, so files written before the drop show their
  old values again and files written while it was gone show its read default, or null. A column
  re-added under the same name after the drop has a new ID: it disappears, and the old one comes
  back;
- ``max_column_id`` never decreases, so no ID is ever given twice.

A column that comes back is stored, in files written after the revert, under the physical name it
had in the older version: names are never handed out twice at one level (:mod:`layout`), so that
name is the old column's alone, and a later column that took the logical name has a physical name
of its own.

Refused, before anything is committed, with the column and the fix:

- a record key, precombine or partition column that the older version does not have, has under
  another type or not at the top level;
- a column whose type in some version (since the older one) cannot be read as its type in the older
  version: a widened column cannot be narrowed again, values written since may not fit;
- a revert to the current schema, or to a version whose fields the schema already has.

A column that comes back NOT NULL comes back nullable (rows written while it was gone hold no
value); a column that is nullable now and was NOT NULL then is checked against the data first, as
``SET NOT NULL`` is.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evonb.errors import CommitNotFoundError, SchemaEvolutionError
from evonb.schema.diffing import SchemaDiff, diff
from evonb.schema.promotion import can_change_type
from evonb.schema.render import diff_to_html, diff_to_text
from evonb.schema.schema import ROOT_ID, Schema, transform_fields, walk
from evonb.schema.types import NestedField, Type
from evonb.table.layout import Layout, derive_layout, named_members

if TYPE_CHECKING:  # pragma: no cover
    from evonb.table.handle import TableHandle

REVERT = "revert"
"""The ``operation`` of a revert's commit (its action is ``alter``; the details name the version
reverted to as ``revert_to``)."""


@dataclass(frozen=True, repr=False)
class RevertPreview(SchemaDiff):
    """The diff a revert makes from the current schema to the older version's fields.

    ``target`` is the version reverted to (its id) and ``target_name`` its name (``v1``);
    ``restored`` the field IDs that come back (the top-most of each subtree), ``removed`` those
    that disappear, ``relaxed`` the paths of columns that come back nullable although they were
    NOT NULL. ``committed`` says whether the revert was committed (``revert_schema``) or only
    previewed (``preview_revert``).
    """

    target: str = ""
    target_name: str = ""
    restored: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    relaxed: tuple[str, ...] = ()
    committed: bool = False

    @property
    def sets_not_null(self) -> bool:
        """Whether a column that is nullable now becomes NOT NULL (checked against the data)."""
        return any(c.new is False for c in self.by_kind("nullability"))

    @property
    def summary(self) -> str:
        """What the revert does, in a sentence or two."""
        parts = [f"Reverts the schema to {self.target_name} ({self.target})."]
        if self.restored:
            names = ", ".join(f"{self.after.path_of(i)} (ID {i})" for i in self.restored)
            parts.append(f"Restored: {names}, with the values of the files written before its "
                         "drop; rows written while it was gone read its default, or null.")
        if self.removed:
            names = ", ".join(f"{self.before.path_of(i)} (ID {i})" for i in self.removed)
            parts.append(f"Removed: {names}.")
        if self.relaxed:
            parts.append(f"Comes back nullable: {', '.join(self.relaxed)} (it was NOT NULL in "
                         f"{self.target_name}).")
        return " ".join(parts)

    @property
    def note(self) -> str:
        """The summary, and what applying the revert takes (or took)."""
        if self.committed:
            cost = "Metadata only: no data file was rewritten."
        elif self.sets_not_null:
            cost = ("Metadata only, after one scan: a column made NOT NULL is checked for nulls "
                    "first. Nothing was committed.")
        else:
            cost = "Metadata only: no data file is touched. Nothing was committed."
        return f"{self.summary} {cost}"

    def __repr__(self) -> str:
        return f"{diff_to_text(self)}\n{self.note}"

    def __str__(self) -> str:
        return repr(self)

    def _repr_html_(self) -> str:
        return f"{diff_to_html(self)}<p class='evonb-note'>{html.escape(self.note)}</p>"


def resolve_target(table: TableHandle, to: Any) -> Schema:
    """The stored schema version ``to`` names: a version name (``v1``) or id, a commit (an
    instant, ``@N``, a date-time), or a :class:`Schema` of the table;
    :class:`CommitNotFoundError` for anything else."""
    if to is None or (isinstance(to, str) and not to.strip()):
        raise CommitNotFoundError(to, what="schema version or commit to revert to",
                                  hint="name one: vN (t.schemas() lists them), an instant or @N")
    schema = table.resolve_schema(to)
    if schema.version_id not in table.schema_store.versions():
        raise CommitNotFoundError(
            schema.version_id, what="schema version of this table",
            hint="name a version of the table: vN (t.schemas() lists them), an instant or @N")
    return table.schema_store.load(schema.version_id)


def plan_revert(table: TableHandle, to: Any, *, base: Schema | None = None) -> RevertPreview:
    """The revert of ``base`` (default: the current schema) to the version ``to`` names, checked
    (see the module docstring); nothing is committed."""
    base = base if base is not None else table.schema
    target = resolve_target(table, to)
    name = table.version_name(target.version_id)
    label = f"{name} ({target.version_id})" if name != target.version_id else name
    current = table.version_name(base.version_id)
    if target.version_id == base.version_id:
        raise SchemaEvolutionError(
            f"Nothing to revert: {label} is the current schema of table {table.name!r}",
            hint="name an older version: t.schemas() (or %evo lineage) lists them")
    _check_keys(table, base, target, label)
    _check_types(table, target, label)
    base_ids = set(base.field_ids())
    relaxed: list[str] = []

    def relax(f: NestedField, parent: int) -> NestedField:
        if f.id not in base_ids and (parent == ROOT_ID or parent in base_ids) and not f.nullable:
            relaxed.append(target.path_of(f.id))
            return f.replace(nullable=True)
        return f

    fields = transform_fields(target.fields, relax)
    after = Schema(fields=fields, version_id=base.version_id,
                   max_column_id=max(base.max_column_id, target.max_column_id))
    changes = diff(base, after)
    if not changes:
        raise SchemaEvolutionError(
            f"Nothing to revert: the current schema of table {table.name!r} ({current}) "
            f"already has the fields of {label}",
            hint="name another version: t.schemas() (or %evo lineage) lists them")
    return RevertPreview(
        base, after, changes.changes, target=target.version_id, target_name=name,
        restored=tuple(c.field_id for c in changes.by_kind("added")),
        removed=tuple(c.field_id for c in changes.by_kind("dropped")),
        relaxed=tuple(sorted(relaxed, key=after.paths().index)))


def revert_layout(table: TableHandle, base: Schema, new: Schema, target: str) -> Layout:
    """The layout of ``new`` (the reverted schema) after ``base``: the physical names of
    ``base`` for the fields it has, and for the fields that come back the names they had in the
    version reverted to (never handed to another field at their level)."""
    _, base_layout = table.version(base.version_id)
    target_schema, target_layout = table.version(target)
    physical = dict(base_layout.physical)
    used = {k: set(v) for k, v in base_layout.used.items()}
    types = dict(base_layout.types)
    for fid, parent, _, _ in named_members(new):
        if base.has_id(fid) or fid not in target_layout.physical:
            continue
        if target_schema.parent_of(fid) != parent:
            continue  # pragma: no cover - the fields of new are those of the target
        physical[fid] = target_layout.physical[fid]
        used.setdefault(parent, set()).add(physical[fid].lower())
    for fid in new.field_ids():  # fields that come back keep the types they had
        if not base.has_id(fid) and fid in target_layout.types:
            types[fid] = target_layout.types[fid]
    seed = Layout(physical=physical, used={k: frozenset(v) for k, v in used.items()},
                  types=types, typed=base_layout.typed)
    return derive_layout(new, (base, seed))


_ROLES = (("record key", "primary_key_ids"), ("partition", "partition_ids"))


def _protected(table: TableHandle) -> list[tuple[str, int]]:
    config = table.raw_config
    out = [(role, fid) for role, attr in _ROLES for fid in getattr(config, attr)]
    if config.precombine_id is not None:
        out.append(("precombine", config.precombine_id))
    return out


def _check_keys(table: TableHandle, base: Schema, target: Schema, label: str) -> None:
    """Refuse a revert that would change a record key, partition or precombine column."""
    hint = ("revert to a version that has it as it is now; key, precombine and partition "
            "columns cannot change (to change them, create a new table and copy)")
    for role, fid in _protected(table):
        path = base.path_of(fid) if base.has_id(fid) else f"ID {fid}"
        if not target.has_id(fid):
            other = ""
            if target.has(path):
                other = (f" (it has a column {path!r}, but that is another column, "
                         f"ID {target.find_id(path)})")
            raise SchemaEvolutionError(
                f"Cannot revert to {label}: the {role} column {path!r} (ID {fid}) is not in "
                f"it{other}", path=path, field_id=fid, hint=hint)
        then = target.field_by_id(fid)
        if target.parent_of(fid) != ROOT_ID:
            raise SchemaEvolutionError(
                f"Cannot revert to {label}: the {role} column {path!r} (ID {fid}) is "
                f"{target.path_of(fid)!r}, not a top-level column, there",
                path=path, field_id=fid, hint=hint)
        if base.has_id(fid) and base.field_by_id(fid).type != then.type:
            now = base.field_by_id(fid).type
            raise SchemaEvolutionError(
                f"Cannot revert to {label}: the {role} column {path!r} (ID {fid}) is {now} "
                f"now and {then.type} there", path=path, field_id=fid, old=now, new=then.type,
                hint=hint)


def _readable(have: Type, want: Type) -> bool:
    """Whether values stored as ``have`` read as ``want`` (equal, or a metadata widening)."""
    if have.is_primitive and want.is_primitive:
        return have == want or can_change_type(have, want)
    return type(have) is type(want)


def _check_types(table: TableHandle, target: Schema, label: str) -> None:
    """Refuse a revert to types that data written in some version cannot be read as."""
    versions = table.schemas()
    for version, vname in zip(versions, versions.names, strict=True):
        for info in walk(version.fields):
            fid = info.field.id
            if not target.has_id(fid):
                continue
            want = target.field_by_id(fid).type
            have = info.field.type
            if _readable(have, want):
                continue
            path = target.path_of(fid)
            raise SchemaEvolutionError(
                f"Cannot revert to {label}: column {path!r} (ID {fid}) is {want} there but "
                f"{have} in {vname}, and values written as {have} may not fit {want}",
                path=path, field_id=fid, old=have, new=want,
                hint=f"revert to {vname} or a later version, where {path!r} is {have} "
                     "already; or make the other changes with ALTER TABLE")


__all__ = ["REVERT", "RevertPreview", "plan_revert", "resolve_target", "revert_layout"]
