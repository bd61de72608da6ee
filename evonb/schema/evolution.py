"""``SchemaUpdate``: stage schema changes by field ID, validate each call, apply them at once.

Paths in one update resolve against the base schema first (so renaming ``a`` to ``b`` and ``b``
to ``a`` swaps them), then against the changes staged so far (so a column added in this update
can take children). Nothing is stored: :meth:`SchemaUpdate.apply` returns the new
:class:`~evonb.schema.schema.Schema`, and a rejected call leaves the update as it was.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal

from evonb.errors import ColumnNotFoundError, SchemaEvolutionError
from evonb.schema.defaults import coerce_default
from evonb.schema.diffing import SchemaDiff, diff
from evonb.schema.ids import assign_fresh_ids
from evonb.schema.nesting import check_nesting
from evonb.schema.promotion import check_type_change
from evonb.schema.schema import (
    ROOT_ID,
    FieldInfo,
    Path,
    Schema,
    child_by_name,
    format_path,
    parse_path,
    walk,
)
from evonb.schema.type_text import parse_type
from evonb.schema.types import ArrayType, MapType, NestedField, StructType, Type, with_children

OperationKind = Literal[
    "add", "drop", "rename", "retype", "nullability", "default", "comment", "move"
]


@dataclass(frozen=True, slots=True)
class Operation:
    """One staged change: its kind, the column's path (as given) and ID, and the detail."""

    kind: OperationKind
    path: str
    field_id: int
    detail: Any = None

    def __str__(self) -> str:
        return f"{self.kind} {self.path} (id {self.field_id})" + (
            f": {self.detail}" if self.detail is not None else ""
        )


_Where = Literal["first", "before", "after"]


@dataclass(frozen=True, slots=True)
class _Move:
    field_id: int
    where: Literal["first", "before", "after"]
    other_id: int | None


def _as_type(t: Type | str) -> Type:
    if isinstance(t, Type):
        return t
    if isinstance(t, str):
        return parse_type(t)
    raise SchemaEvolutionError(f"Not a type: {t!r}", hint="pass an evonb Type or type text")


class SchemaUpdate:
    """A builder of one new schema version from ``base``.

    Every method validates its arguments against the schema as staged so far, raises an evonb
    error naming the column when something is wrong (leaving the update unchanged), and returns
    ``self`` so calls chain. ``apply()`` gives the new schema; ``preview()`` the diff.
    ``allow_set_not_null`` is for the table engine, which checks the data before it sets
    ``NOT NULL`` on an existing column. ``allow_rewrite_type_changes`` (for ``Table.rewrite``,
    which casts and checks every value) allows any primitive type change.
    """

    def __init__(self, base: Schema, *, allow_set_not_null: bool = False,
                 allow_rewrite_type_changes: bool = False) -> None:
        self._base = base
        self._allow_set_not_null = allow_set_not_null
        self._allow_rewrite = allow_rewrite_type_changes
        self._next_id = base.max_column_id + 1
        self._adds: dict[int, list[NestedField]] = {}
        self._added_ids: set[int] = set()
        self._updates: dict[int, dict[str, Any]] = {}
        self._deletes: set[int] = set()
        self._moves: dict[int, list[_Move]] = {}
        self._ops: list[Operation] = []

    # ------------------------------------------------------------------ info
    @property
    def base(self) -> Schema:
        return self._base

    @property
    def operations(self) -> tuple[Operation, ...]:
        """The staged changes, in the order they were made."""
        return tuple(self._ops)

    @property
    def moved_ids(self) -> frozenset[int]:
        """The IDs of the fields this update moves (what a diff reports as moved)."""
        return frozenset(op.field_id for op in self._ops if op.kind == "move")

    @property
    def only_adds_columns(self) -> bool:
        """True when every staged change adds a nullable column (an implicit write evolution)."""
        return all(op.kind == "add" for op in self._ops)

    def __bool__(self) -> bool:
        return bool(self._ops)

    def __repr__(self) -> str:
        ops = "; ".join(str(op) for op in self._ops) or "no changes"
        return f"SchemaUpdate(base={self._base.version_id}, {ops})"

    # ------------------------------------------------------------- resolving
    def _pending_infos(self) -> dict[int, FieldInfo]:
        fields = self._build(validate=False)
        return {info.field.id: info for info in walk(fields)}

    def _resolve(self, path: Path) -> tuple[int, NestedField, int, str]:
        """(id, field as staged, parent id, display path) for ``path``."""
        names = parse_path(path)
        shown = path if isinstance(path, str) else format_path(names)
        infos = self._pending_infos()
        field_id: int | None = None
        if self._base.has(names):
            field_id = self._base.find_id(names)
            chain = {field_id}
            parent = self._base.parent_of(field_id)
            while parent != ROOT_ID:
                chain.add(parent)
                parent = self._base.parent_of(parent)
            if chain & self._deletes:
                raise SchemaEvolutionError(
                    f"Cannot change column {shown!r}: it is dropped in this update",
                    path=shown, field_id=field_id,
                    hint="make the other change in a separate update, or do not drop it",
                )
        else:
            found = _find(tuple(info.field for info in infos.values()
                                if info.parent_id == ROOT_ID), names)
            if found is not None:
                field_id = found.id
        if field_id is None:
            raise ColumnNotFoundError(shown, [i.dotted for i in infos.values()])
        info = infos[field_id]
        return field_id, info.field, info.parent_id, shown

    def _container_of(self, field_id: int) -> Type | None:
        """The type that holds ``field_id`` (None for top-level columns), as staged."""
        infos = self._pending_infos()
        parent = infos[field_id].parent_id
        return None if parent == ROOT_ID else infos[parent].field.type

    def _check_not_structural(self, field_id: int, shown: str, action: str) -> None:
        container = self._container_of(field_id)
        if isinstance(container, ArrayType):
            raise SchemaEvolutionError(
                f"Cannot {action} {shown!r}: it is the element of an array",
                path=shown, field_id=field_id,
                hint="change the array column itself, or fields inside its element struct",
            )
        if isinstance(container, MapType):
            raise SchemaEvolutionError(
                f"Cannot {action} {shown!r}: it is the {_role(container, field_id)} of a map",
                path=shown, field_id=field_id,
                hint="change the map column itself, or fields inside its value struct",
            )

    def _check_not_in_map_key(self, field_id: int, shown: str) -> None:
        infos = self._pending_infos()
        current = field_id
        while current != ROOT_ID:
            parent = infos[current].parent_id
            if parent != ROOT_ID:
                container = infos[parent].field.type
                if isinstance(container, MapType) and container.key.id == current:
                    raise SchemaEvolutionError(
                        f"Cannot change {shown!r}: map keys cannot change",
                        path=shown, field_id=field_id,
                        hint="map keys are compared for equality; rewrite the map instead",
                    )
            current = parent

    def _check_not_dropping_touched(self, field_id: int, shown: str) -> None:
        if field_id in self._added_ids:
            raise SchemaEvolutionError(
                f"Cannot drop {shown!r}: it is added in this update", path=shown,
                field_id=field_id, hint="remove the ADD instead",
            )
        subtree = {info.field.id for info in walk((self._pending_infos()[field_id].field,))}
        touched = {op.field_id for op in self._ops} | set(self._adds)
        if subtree & touched:
            raise SchemaEvolutionError(
                f"Cannot drop {shown!r}: it has other changes in this update",
                path=shown, field_id=field_id,
                hint="drop it in a separate update, or leave out the other changes",
            )
        anchors = {m.other_id for moves in self._moves.values() for m in moves}
        if subtree & anchors:
            raise SchemaEvolutionError(
                f"Cannot drop {shown!r}: another change in this update places a column "
                "before or after it",
                path=shown, field_id=field_id,
                hint="drop it in a separate update, or place the other column elsewhere",
            )

    def _check_not_emptying(self, field_id: int, parent_id: int, shown: str) -> None:
        infos = self._pending_infos()
        if any(i.parent_id == parent_id and i.field.id != field_id for i in infos.values()):
            return
        if parent_id == ROOT_ID:
            raise SchemaEvolutionError(
                f"Cannot drop {shown!r}: it is the last column of the table",
                path=shown, field_id=field_id, hint="a table needs one column",
            )
        raise SchemaEvolutionError(
            f"Cannot drop {shown!r}: it is the last field of struct "
            f"{infos[parent_id].dotted!r}, which cannot be left empty",
            path=shown, field_id=field_id, hint="drop the struct column itself instead",
        )

    def _record(self, kind: OperationKind, shown: str, field_id: int, detail: Any = None) -> None:
        self._ops.append(Operation(kind, shown, field_id, detail))

    def _stage_update(self, field_id: int, **changes: Any) -> None:
        self._updates.setdefault(field_id, {}).update(changes)

    # ------------------------------------------------------------------ adds
    def add_column(
        self,
        path: Path,
        type: Type | str,
        *,
        nullable: bool = True,
        default: Any = None,
        comment: str | None = None,
        first: bool = False,
        after: str | None = None,
        before: str | None = None,
    ) -> SchemaUpdate:
        """Add a column at ``path`` (``a``, ``loc.alt``, ``points.element.x``, ``m.value.y``).

        ``default`` is the new column's read default (what existing rows read) and its write
        default. A NOT NULL column (``nullable=False``) needs a default. Position: at the end
        of its parent, or ``first``, ``after``/``before`` a sibling.
        """
        names = parse_path(path)
        shown = path if isinstance(path, str) else format_path(names)
        name = names[-1]
        if not name.strip():
            raise SchemaEvolutionError("Cannot add a column with an empty name", path=shown)
        holder_id = ROOT_ID
        if len(names) > 1:
            parent_id, parent, _, parent_shown = self._resolve(names[:-1])
            self._check_not_in_map_key(parent_id, parent_shown)
            holder = _struct_holder(parent)
            if holder is None:
                raise SchemaEvolutionError(
                    f"Cannot add {shown!r}: {parent_shown!r} is {parent.type}, not a struct",
                    path=shown,
                    hint="columns can be added inside structs, array elements of struct type "
                    "and map values of struct type",
                )
            holder_id = holder.id
        col_type = _as_type(type)
        if default is not None and col_type.is_nested:
            raise SchemaEvolutionError(
                f"Cannot add {shown!r} with a default: {col_type} columns take no default",
                path=shown, hint="add it without DEFAULT; a struct's members can take "
                "defaults (ALTER COLUMN <column>.<member> SET DEFAULT ...)",
            )
        value = coerce_default(default, col_type, path=shown)
        if not nullable and value is None:
            raise SchemaEvolutionError(
                f"Cannot add NOT NULL column {shown!r} without a default: existing rows "
                "would have no value",
                path=shown,
                hint=f"add it with a DEFAULT (e.g. ADD COLUMN {shown} {col_type} NOT NULL "
                "DEFAULT ...), or as nullable",
            )
        template = NestedField(0, name, col_type, nullable, value, value, comment)
        counter = itertools.count(self._next_id)
        new_field = assign_fresh_ids(template, counter)
        position = self._position(holder_id, shown, first=first, after=after, before=before)
        # Commit the staged state only after every check passed.
        self._next_id = next(counter)
        self._adds.setdefault(holder_id, []).append(new_field)
        self._added_ids.update(info.field.id for info in walk((new_field,)))
        if position is not None:
            where, other_id = position
            self._moves.setdefault(holder_id, []).append(_Move(new_field.id, where, other_id))
        self._record("add", shown, new_field.id, str(col_type))
        return self

    def add_columns(self, columns: str) -> SchemaUpdate:
        """Add top-level columns from column DDL text (``"a int, b string DEFAULT 'x'"``)."""
        parsed = Schema.from_ddl(columns)
        for f in parsed.fields:
            self.add_column((f.name,), _strip_ids(f.type), nullable=f.nullable,
                            default=f.default, comment=f.comment)
        return self

    def _position(self, holder_id: int, shown: str, *, first: bool, after: str | None,
                  before: str | None) -> tuple[_Where, int | None] | None:
        given = sum([bool(first), after is not None, before is not None])
        if given > 1:
            raise SchemaEvolutionError(
                f"Give one position for {shown!r}: FIRST, AFTER or BEFORE", path=shown,
                hint="keep one of them, e.g. AFTER <column>",
            )
        if first:
            return ("first", None)
        anchor = after if after is not None else before
        if anchor is None:
            return None
        other_id = self._sibling(holder_id, anchor, shown)
        return ("after" if after is not None else "before", other_id)

    def _sibling(self, holder_id: int, anchor: Path, shown: str) -> int:
        infos = self._pending_infos()
        siblings = [i for i in infos.values() if i.parent_id == holder_id]
        names = parse_path(anchor)
        if len(names) > 1:
            # A full path (``points.x`` or ``points.element.x``): it must be a sibling.
            other_id, _, other_parent, other_shown = self._resolve(names)
            if other_parent != holder_id:
                raise SchemaEvolutionError(
                    f"Cannot place {shown!r} next to {other_shown!r}: they are in different "
                    "structs",
                    path=shown, hint="columns are placed only within their own struct",
                )
            return other_id
        for info in siblings:
            if info.field.name.lower() == names[-1].lower():
                return info.field.id
        raise ColumnNotFoundError(
            format_path(names), [i.field.name for i in siblings], context=f"beside {shown!r}"
        )

    # ----------------------------------------------------------------- drops
    def drop_column(self, path: Path) -> SchemaUpdate:
        """Drop a column (top-level or nested) and everything under it."""
        field_id, _, parent_id, shown = self._resolve(path)
        self._check_not_structural(field_id, shown, "drop")
        self._check_not_in_map_key(field_id, shown)
        self._check_not_dropping_touched(field_id, shown)
        self._check_not_emptying(field_id, parent_id, shown)
        self._deletes.add(field_id)
        self._record("drop", shown, field_id)
        return self

    # --------------------------------------------------------------- updates
    def rename_column(self, path: Path, new_name: str) -> SchemaUpdate:
        """Rename a column; its ID, type and data stay."""
        field_id, current, _, shown = self._resolve(path)
        self._check_not_structural(field_id, shown, "rename")
        if not isinstance(new_name, str) or not new_name.strip():
            raise SchemaEvolutionError(f"Cannot rename {shown!r} to an empty name", path=shown,
                                       hint=f"give the new name, e.g. RENAME COLUMN {shown} "
                                       "TO new_name")
        self._stage_update(field_id, name=new_name)
        self._record("rename", shown, field_id, (current.name, new_name))
        return self

    def update_column_type(self, path: Path, new_type: Type | str) -> SchemaUpdate:
        """Change a primitive column's type (widenings only; see :mod:`promotion`)."""
        field_id, current, _, shown = self._resolve(path)
        self._check_not_in_map_key(field_id, shown)
        target = _as_type(new_type)
        if not (self._allow_rewrite and current.type.is_primitive and target.is_primitive):
            check_type_change(current.type, target, path=shown, field_id=field_id)
        if target == current.type:
            return self
        changes: dict[str, Any] = {"type": target}
        if current.default is not None:
            changes["default"] = coerce_default(current.default, target, path=shown)
        if current.write_default is not None:
            changes["write_default"] = coerce_default(current.write_default, target, path=shown)
        self._stage_update(field_id, **changes)
        self._record("retype", shown, field_id, (str(current.type), str(target)))
        return self

    def set_nullable(self, path: Path, nullable: bool) -> SchemaUpdate:
        """``DROP NOT NULL`` (``True``) or ``SET NOT NULL`` (``False``, table engine only)."""
        field_id, current, _, shown = self._resolve(path)
        self._check_not_in_map_key(field_id, shown)
        if not nullable and current.nullable and not self._allow_set_not_null:
            raise SchemaEvolutionError(
                f"Cannot SET NOT NULL on {shown!r} here: existing rows may hold nulls",
                path=shown, field_id=field_id,
                hint="use Table.alter(), which checks the data for nulls first",
            )
        if current.nullable == nullable:
            return self
        self._stage_update(field_id, nullable=nullable)
        self._record("nullability", shown, field_id, nullable)
        return self

    def require(self, path: Path) -> SchemaUpdate:
        """Shorthand for ``set_nullable(path, False)``."""
        return self.set_nullable(path, False)

    def make_optional(self, path: Path) -> SchemaUpdate:
        """Shorthand for ``set_nullable(path, True)``."""
        return self.set_nullable(path, True)

    def set_default(self, path: Path, value: Any) -> SchemaUpdate:
        """Set the write default (what new rows that omit the column get)."""
        field_id, current, _, shown = self._resolve(path)
        self._check_not_structural(field_id, shown, "set a default on")
        self._check_not_in_map_key(field_id, shown)
        if current.type.is_nested:
            raise SchemaEvolutionError(
                f"Cannot set a default on {shown!r}: {current.type} columns take no default",
                path=shown, field_id=field_id,
                hint=(f"set it on a member: ALTER COLUMN {shown}.<member> SET DEFAULT ..."
                      if isinstance(current.type, StructType)
                      else "only primitive columns and struct members take defaults"),
            )
        coerced = coerce_default(value, current.type, path=shown)
        if coerced is None:
            return self.drop_default(path)
        self._stage_update(field_id, write_default=coerced)
        self._record("default", shown, field_id, coerced)
        return self

    def drop_default(self, path: Path) -> SchemaUpdate:
        """Remove the write default; rows written before keep what they read."""
        field_id, _, _, shown = self._resolve(path)
        self._check_not_structural(field_id, shown, "drop the default of")
        self._stage_update(field_id, write_default=None)
        self._record("default", shown, field_id, None)
        return self

    def set_comment(self, path: Path, comment: str | None) -> SchemaUpdate:
        """Set (or with ``None`` remove) a column's comment."""
        field_id, _, _, shown = self._resolve(path)
        self._check_not_structural(field_id, shown, "comment on")
        self._stage_update(field_id, comment=comment)
        self._record("comment", shown, field_id, comment)
        return self

    # ----------------------------------------------------------------- moves
    def move_first(self, path: Path) -> SchemaUpdate:
        """Move a column to the first place of its parent."""
        return self._move(path, "first", None)

    def move_after(self, path: Path, other: Path) -> SchemaUpdate:
        """Move a column right after a sibling."""
        return self._move(path, "after", other)

    def move_before(self, path: Path, other: Path) -> SchemaUpdate:
        """Move a column right before a sibling."""
        return self._move(path, "before", other)

    def _move(self, path: Path, where: Literal["first", "before", "after"],
              other: Path | None) -> SchemaUpdate:
        field_id, _, parent_id, shown = self._resolve(path)
        self._check_not_structural(field_id, shown, "move")
        other_id: int | None = None
        if other is not None:
            other_names = parse_path(other)
            if len(other_names) == 1:
                other_id = self._sibling(parent_id, other_names, shown)
            else:
                other_id, _, other_parent, other_shown = self._resolve(other)
                if other_parent != parent_id:
                    raise SchemaEvolutionError(
                        f"Cannot move {shown!r} {where} {other_shown!r}: they are in different "
                        "structs",
                        path=shown, field_id=field_id,
                        hint="columns move only within their own struct",
                    )
            if other_id == field_id:
                raise SchemaEvolutionError(
                    f"Cannot move {shown!r} {where} itself", path=shown, field_id=field_id,
                    hint="name another column of the same struct, or use FIRST",
                )
        self._moves.setdefault(parent_id, []).append(_Move(field_id, where, other_id))
        self._record("move", shown, field_id, (where, other_id))
        return self

    # ------------------------------------------------------------- applying
    def apply(self, *, version_id: str | None = None) -> Schema:
        """The new schema (validated). ``version_id`` defaults to the base schema's."""
        fields = self._build(validate=True)
        check_nesting(fields, self._base.fields)
        return Schema(
            fields=fields,
            version_id=version_id if version_id is not None else self._base.version_id,
            max_column_id=max(self._base.max_column_id, self._next_id - 1),
        )

    def preview(self) -> SchemaDiff:
        """The diff this update would make, without storing anything."""
        return diff(self._base, self.apply(), moved=self.moved_ids)

    def _build(self, *, validate: bool) -> tuple[NestedField, ...]:
        top = self._rebuild(self._base.fields + tuple(self._adds.get(ROOT_ID, ())), ROOT_ID,
                            (), validate)
        if validate and not top:
            raise SchemaEvolutionError(
                "Cannot drop every column of the table", hint="a table needs one column"
            )
        return top

    def _rebuild(self, fields: tuple[NestedField, ...], parent_id: int,
                 prefix: tuple[str, ...], validate: bool) -> tuple[NestedField, ...]:
        out: list[NestedField] = []
        for f in fields:
            if f.id in self._deletes:
                continue
            if f.id in self._updates:
                f = f.replace(**self._updates[f.id])
            if f.type.is_nested:
                kids = f.type.children()
                if isinstance(f.type, StructType):
                    kids = kids + tuple(self._adds.get(f.id, ()))
                new_kids = self._rebuild(kids, f.id, (*prefix, f.name), validate)
                if isinstance(f.type, StructType) and validate and not new_kids:
                    raise SchemaEvolutionError(
                        f"Cannot leave struct {format_path((*prefix, f.name))!r} empty",
                        path=format_path((*prefix, f.name)), field_id=f.id,
                        hint="drop the struct column itself instead",
                    )
                f = f.replace(type=with_children(f.type, new_kids))
            out.append(f)
        out = self._apply_moves(out, parent_id, prefix, validate)
        if validate:
            self._check_unique(out, prefix)
        return tuple(out)

    def _apply_moves(self, fields: list[NestedField], parent_id: int,
                     prefix: tuple[str, ...], validate: bool) -> list[NestedField]:
        for move in self._moves.get(parent_id, ()):
            ids = [f.id for f in fields]
            if move.field_id not in ids:
                continue
            moving = fields.pop(ids.index(move.field_id))
            ids = [f.id for f in fields]
            if move.where == "first":
                fields.insert(0, moving)
            elif move.other_id not in ids:
                if validate:
                    raise SchemaEvolutionError(
                        f"Cannot move {format_path((*prefix, moving.name))!r} {move.where} "
                        "a column dropped in this update",
                        path=format_path((*prefix, moving.name)), field_id=moving.id,
                    )
                fields.append(moving)
            else:
                at = ids.index(move.other_id)
                fields.insert(at + 1 if move.where == "after" else at, moving)
        return fields

    def _check_unique(self, fields: list[NestedField], prefix: tuple[str, ...]) -> None:
        seen: dict[str, NestedField] = {}
        for f in fields:
            low = f.name.lower()
            if low in seen:
                other = seen[low]
                clash = f if (f.id in self._added_ids or f.id in self._updates) else other
                kept = other if clash is f else f
                path = format_path((*prefix, clash.name))
                verb = "add" if clash.id in self._added_ids else "rename a column to"
                raise SchemaEvolutionError(
                    f"Cannot {verb} {path!r}: a column named {kept.name!r} exists there "
                    "(names are case-insensitive)",
                    path=path, field_id=clash.id,
                    hint="choose another name, or rename or drop the existing column in the "
                    "same update",
                )
            seen[low] = f


def _find(fields: tuple[NestedField, ...], names: tuple[str, ...]) -> NestedField | None:
    container: Type | None = None
    current = fields
    found: NestedField | None = None
    for name in names:
        found = child_by_name(container, current, name)
        if found is None:
            return None
        container, current = found.type, found.type.children()
    return found


def _struct_holder(parent: NestedField) -> NestedField | None:
    """The field whose struct receives children added under ``parent``."""
    t = parent.type
    if isinstance(t, StructType):
        return parent
    if isinstance(t, ArrayType) and isinstance(t.element.type, StructType):
        return t.element
    if isinstance(t, MapType) and isinstance(t.value.type, StructType):
        return t.value
    return None


def _role(container: MapType, field_id: int) -> str:
    return "key" if container.key.id == field_id else "value"


def _strip_ids(t: Type) -> Type:
    if t.is_primitive:
        return t
    return with_children(t, tuple(c.replace(id=0, type=_strip_ids(c.type)) for c in t.children()))

