"""Assigning fresh field IDs to a type, in pre-order."""

from __future__ import annotations

from collections.abc import Iterator

from evonb.schema.types import NestedField, Type, with_children


def assign_fresh_ids(field: NestedField, ids: Iterator[int]) -> NestedField:
    """``field`` and everything under it renumbered from ``ids``, in pre-order.

    The field itself takes the next ID, then each child in order, each before its own
    children (``struct<a:struct<c:int>,b:int>`` numbers a, c, b).
    """
    new_id = next(ids)
    return field.replace(id=new_id, type=_fresh_type(field.type, ids))


def _fresh_type(t: Type, ids: Iterator[int]) -> Type:
    if t.is_primitive:
        return t
    return with_children(t, tuple(assign_fresh_ids(c, ids) for c in t.children()))


def fresh_fields(
    fields: tuple[NestedField, ...], start: int
) -> tuple[tuple[NestedField, ...], int]:
    """Renumber top-level ``fields`` from ``start``; returns them and the last ID used."""
    counter = iter(range(start, 2**31))
    out = tuple(assign_fresh_ids(f, counter) for f in fields)
    return out, next(counter) - 1
