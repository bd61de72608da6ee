"""Schema on write: reconcile an incoming DataFrame's schema with the table's, by name.

New columns are added (nullable, at the end of their parent) as a new schema version; types
meet by Hudi's "Type Promotions" chart (the table widens to a wider incoming type, narrower
incoming values are cast up); columns the data lacks get their write default or null. The
table properties ``evonb.write.add_columns``, ``evonb.write.fill_missing`` and
``evonb.write.type_widening`` (``auto`` or ``error``) turn the automatic behaviours into errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evonb.errors import WriteSchemaError
from evonb.schema.evolution import SchemaUpdate
from evonb.schema.partner import (
    FieldPartners,
    Partner,
    PartnerVisitor,
    by_lower_name,
    partner_as,
    visit_with_partner,
)
from evonb.schema.promotion import reconcile_write_type
from evonb.schema.schema import Schema, format_path
from evonb.schema.types import ArrayType, MapType, NestedField, StructType, Type, with_children


def _strip(t: Type) -> Type:
    if t.is_primitive:
        return t
    return with_children(t, tuple(c.replace(id=0, type=_strip(c.type)) for c in t.children()))


def _kind(t: Type) -> str:
    return type(t).__name__.replace("Type", "").lower() if t.is_nested else str(t)


def reconcile(
    table: Schema,
    incoming: Schema,
    *,
    add_columns: bool = True,
    fill_missing: bool = True,
    protected_ids: frozenset[int] = frozenset(),
    widen: bool = True,
) -> SchemaUpdate:
    """The schema update a write of ``incoming`` needs (empty when none); with ``widen``
    false, a column whose type the data would widen is an error.

    Raises :class:`WriteSchemaError` naming the column and both types when the data cannot be
    written, before anything is written.
    """
    update = SchemaUpdate(table)
    _reconcile_fields(update, table.fields, incoming.fields, (), add_columns, fill_missing,
                      protected_ids, widen)
    return update


def check_upsert_brings_precombine(table: Schema, incoming: Schema,
                                   precombine_id: int | None) -> None:
    """Refuse an upsert whose data lacks the precombine column, which has no write default:
    every incoming row would carry null there and lose to the stored row of its key (a null
    precombine value loses), so the upsert would change no stored row."""
    if precombine_id is None:
        return
    field = table.field_by_id(precombine_id)
    if field.write_default is not None:
        return
    if any(f.name.lower() == field.name.lower() for f in incoming.fields):
        return
    raise WriteSchemaError(
        f"Upsert data lacks the precombine column {field.name!r}: each incoming row would hold "
        "null there and lose to the stored row of its key, so no stored row would change",
        path=field.name, field_id=field.id, old=field.type,
        hint=f"add {field.name!r} to the data (the larger value wins), or give it a default "
        f"with ALTER TABLE ... ALTER COLUMN {field.name} SET DEFAULT ...",
    )


# Not on the partner visitor: these checks run parents before children and add as they go.
def _reconcile_fields(update: SchemaUpdate, table_fields: tuple[NestedField, ...],
                      incoming_fields: tuple[NestedField, ...], prefix: tuple[str, ...],
                      add_columns: bool, fill_missing: bool, protected: frozenset[int],
                      widen: bool = True) -> None:
    by_name = {f.name.lower(): f for f in table_fields}
    seen: set[str] = set()
    for inc in incoming_fields:
        low = inc.name.lower()
        path = (*prefix, inc.name)
        shown = format_path(path)
        if low in seen:
            raise WriteSchemaError(
                f"Incoming data has two columns named {shown!r} (names are case-insensitive)",
                path=shown, hint="rename or drop one of them before writing",
            )
        seen.add(low)
        existing = by_name.get(low)
        if existing is None:
            if not add_columns:
                raise WriteSchemaError(
                    f"Incoming column {shown!r} ({inc.type}) is not in the table",
                    path=shown, new=inc.type,
                    hint="add it with ALTER TABLE ... ADD COLUMN, or set the table property "
                    "evonb.write.add_columns=true",
                )
            update.add_column(path, _strip(inc.type), nullable=True, comment=inc.comment)
            continue
        _reconcile_one(update, existing, inc, (*prefix, existing.name), add_columns,
                       fill_missing, protected, widen)
    for f in table_fields:
        if f.name.lower() in seen:
            continue
        shown = format_path((*prefix, f.name))
        if not fill_missing:
            raise WriteSchemaError(
                f"Incoming data lacks column {shown!r} ({f.type})",
                path=shown, old=f.type,
                hint="add the column to the data, or set the table property "
                "evonb.write.fill_missing=true to write its default or null",
            )
        if not f.nullable and f.write_default is None:
            raise WriteSchemaError(
                f"Incoming data lacks required column {shown!r} ({f.type}), which has no default",
                path=shown, old=f.type,
                hint="add the column to the data, or give it a default with "
                f"ALTER TABLE ... ALTER COLUMN {shown} SET DEFAULT ...",
            )


def _reconcile_one(update: SchemaUpdate, existing: NestedField, inc: NestedField,
                   path: tuple[str, ...], add_columns: bool, fill_missing: bool,
                   protected: frozenset[int], widen: bool = True) -> None:
    shown = format_path(path)
    et, it = existing.type, inc.type
    if et.is_primitive and it.is_primitive:
        new_type = reconcile_write_type(et, it, path=shown)
        if new_type != et:
            if existing.id in protected:
                raise WriteSchemaError(
                    f"Incoming column {shown!r} is {it}, but key, partition and precombine "
                    f"columns cannot change type (table has {et})",
                    path=shown, old=et, new=it, hint=f"cast it to {et} before writing",
                )
            if not widen:
                raise WriteSchemaError(
                    f"Incoming column {shown!r} is {it}: writing it would widen the column "
                    f"from {et} to {new_type}, and the table property "
                    "evonb.write.type_widening is 'error'",
                    path=shown, field_id=existing.id, old=et, new=it,
                    hint=f"cast it to {et} before writing, change the type with ALTER TABLE "
                    "... ALTER COLUMN ... TYPE, or set evonb.write.type_widening='auto'")
            update.update_column_type(path, new_type)
        return
    if type(et) is not type(it):
        raise WriteSchemaError(
            f"Incompatible column type in write: {shown}: table has {et}, data has {it}",
            path=shown, old=et, new=it,
            hint=(f"the data's {shown} must be {et}, or a type that widens to it"
                  if et.is_primitive
                  else f"the data must bring a {_kind(et)} here"),
        )
    if isinstance(et, StructType) and isinstance(it, StructType):
        _reconcile_fields(update, et.fields, it.fields, path, add_columns, fill_missing,
                          protected, widen)
    elif isinstance(et, ArrayType) and isinstance(it, ArrayType):
        _reconcile_one(update, et.element, it.element, (*path, "element"), add_columns,
                       fill_missing, protected, widen)
    elif isinstance(et, MapType) and isinstance(it, MapType):
        if _strip(et.key.type) != _strip(it.key.type):
            raise WriteSchemaError(
                f"Incompatible map key type in write: {shown}: table has {et.key.type}, "
                f"data has {it.key.type}",
                path=shown, old=et, new=it, hint="map keys cannot change type",
            )
        _reconcile_one(update, et.value, it.value, (*path, "value"), add_columns,
                       fill_missing, protected, widen)


class _TableIds(PartnerVisitor[Partner, Any]):
    """The visited (incoming) type with each field's ID replaced by its partner's, the table
    field of the same name (case-insensitive); below a partner of another kind nothing changes."""

    def field(self, inc: NestedField, target: Partner | None, t: Type) -> NestedField:
        if target is None:
            return inc
        assert isinstance(target, NestedField)
        return inc.replace(id=target.id, type=t)

    def struct(self, inc: StructType, target: Partner | None, fields: Sequence[NestedField]
               ) -> Type:
        return inc if partner_as(target, StructType) is None else StructType(tuple(fields))

    def array(self, inc: ArrayType, target: Partner | None, element: NestedField) -> Type:
        return inc if partner_as(target, ArrayType) is None else ArrayType(element)

    def map(self, inc: MapType, target: Partner | None, key: NestedField, value: NestedField
            ) -> Type:
        return inc if partner_as(target, MapType) is None else MapType(key, value)

    def primitive(self, inc: Type, target: Partner | None) -> Type:
        return inc


class _Written(FieldPartners):
    """The table's fields by lower-case name; every incoming member has one (a KeyError if not)."""

    def field_partner(self, partner: Partner, field: NestedField) -> NestedField | None:
        index = self.members(partner)
        return None if index is None else index[by_lower_name(field)]


def match_ids(incoming: Schema, table: Schema) -> Schema:
    """``incoming`` with each field's ID replaced by the ID of the table field it writes."""
    matched = visit_with_partner(incoming.struct, table, _TableIds(), _Written(by_lower_name))
    return Schema(fields=matched.fields, version_id=table.version_id,
                  max_column_id=table.max_column_id)
