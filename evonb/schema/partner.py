"""Walking an evonb type in lockstep with a *partner*: another tree read alongside it.

Reading, writing and adopting all compare an evonb type with a second structure: the schema
version a file was written with, the incoming data's schema, the columns a Parquet footer
lists. :func:`visit_with_partner` walks the evonb side; a :class:`PartnerAccessor` says, for
each struct member, array element, map key and map value, what its partner is (or None when
the other side has nothing there); a :class:`PartnerVisitor` turns each node and its partner
into a result, children first. Below a missing partner every partner is None: the accessor is
never asked about None.

:class:`FieldPartners` is the accessor for a partner that is itself an evonb tree, members
matched by a key (the field ID, the exact name, the lower-case name).

This module sits above :mod:`evonb.schema.schema` (it walks a ``Schema``) and below nothing:
the read planner, the write-schema reconciliation and adoption use it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, Protocol, TypeVar

from evonb.schema.schema import Schema
from evonb.schema.types import ArrayType, MapType, NestedField, StructType, Type

P = TypeVar("P")
R = TypeVar("R")
K = TypeVar("K", bound="Type")


class PartnerAccessor(Protocol[P]):
    """Where the partner of each child is, given the (non-None) partner of its parent."""

    def field_partner(self, partner: P, field: NestedField) -> P | None:
        """The partner of struct member ``field`` of a struct partnered with ``partner``."""
        ...

    def element_partner(self, partner: P) -> P | None:
        """The partner of the element of an array partnered with ``partner``."""
        ...

    def key_partner(self, partner: P) -> P | None:
        """The partner of the key of a map partnered with ``partner``."""
        ...

    def value_partner(self, partner: P) -> P | None:
        """The partner of the value of a map partnered with ``partner``."""
        ...


class PartnerVisitor(ABC, Generic[P, R]):
    """Hooks called by :func:`visit_with_partner`, children before their parent.

    A field's type is visited with the field's partner, then :meth:`field` gets the type's
    result; :meth:`struct`, :meth:`array` and :meth:`map` get their fields' results.
    :meth:`before_field` and :meth:`after_field` bracket every field (struct members, array
    elements, map keys and values) for a visitor that needs to know where it is.
    """

    def schema(self, schema: Schema, partner: P | None, result: R) -> R:
        return result

    def field(self, field: NestedField, partner: P | None, result: R) -> R:
        return result

    @abstractmethod
    def struct(self, struct: StructType, partner: P | None, fields: Sequence[R]) -> R:
        """The result at this node."""

    @abstractmethod
    def array(self, array: ArrayType, partner: P | None, element: R) -> R:
        """The result at this node."""

    @abstractmethod
    def map(self, map_type: MapType, partner: P | None, key: R, value: R) -> R:
        """The result at this node."""

    @abstractmethod
    def primitive(self, primitive: Type, partner: P | None) -> R:
        """The result at this node."""

    def before_field(self, field: NestedField, partner: P | None) -> None:
        return None

    def after_field(self, field: NestedField, partner: P | None) -> None:
        return None


def visit_with_partner(node: Schema | Type, partner: P | None, visitor: PartnerVisitor[P, R],
                       accessor: PartnerAccessor[P]) -> R:
    """Walk ``node`` (a schema or a type) with ``partner``; the visitor's result for it."""
    if isinstance(node, Schema):
        return visitor.schema(node, partner, visit_with_partner(node.struct, partner, visitor,
                                                                accessor))
    if isinstance(node, StructType):
        results = [
            visit_field(f, None if partner is None else accessor.field_partner(partner, f),
                        visitor, accessor)
            for f in node.fields
        ]
        return visitor.struct(node, partner, results)
    if isinstance(node, ArrayType):
        element = None if partner is None else accessor.element_partner(partner)
        return visitor.array(node, partner, visit_field(node.element, element, visitor, accessor))
    if isinstance(node, MapType):
        key = None if partner is None else accessor.key_partner(partner)
        value = None if partner is None else accessor.value_partner(partner)
        return visitor.map(node, partner, visit_field(node.key, key, visitor, accessor),
                           visit_field(node.value, value, visitor, accessor))
    return visitor.primitive(node, partner)


def visit_field(field: NestedField, partner: P | None, visitor: PartnerVisitor[P, R],
                accessor: PartnerAccessor[P]) -> R:
    """Walk one field (its type, then :meth:`PartnerVisitor.field`) with its ``partner``."""
    visitor.before_field(field, partner)
    try:
        result = visit_with_partner(field.type, partner, visitor, accessor)
        return visitor.field(field, partner, result)
    finally:
        visitor.after_field(field, partner)


Partner = NestedField | Type | Schema
"""A partner in another evonb tree: a field, or at the root a schema or a struct type."""


def partner_type(partner: Partner) -> Type:
    """The type a partner stands for (a schema's struct, a field's type)."""
    if isinstance(partner, Schema):
        return partner.struct
    if isinstance(partner, NestedField):
        return partner.type
    return partner


def partner_as(partner: Partner | None, kind: type[K]) -> K | None:
    """The partner's type when it is a ``kind``; None without a partner or for another kind."""
    if partner is None:
        return None
    t = partner_type(partner)
    return t if isinstance(t, kind) else None


class FieldPartners:
    """The accessor for an evonb partner tree: a struct member's partner is the partner
    struct's member with the same ``key`` (the last one if several share it); an element,
    key or value's partner is the partner's element, key or value when the partner is an array
    or a map. A partner of another kind has no children.

    One accessor keeps an index per partner struct it saw: make one per walk.
    """

    __slots__ = ("_index", "_key")

    def __init__(self, key: Callable[[NestedField], Hashable]) -> None:
        self._key = key
        self._index: dict[int, tuple[StructType, dict[Hashable, NestedField]]] = {}

    def members(self, partner: Partner) -> dict[Hashable, NestedField] | None:
        """The partner's struct members by key, or None if the partner is not a struct."""
        t = partner_type(partner)
        if not isinstance(t, StructType):
            return None
        seen = self._index.get(id(t))
        if seen is None or seen[0] is not t:
            seen = self._index[id(t)] = (t, {self._key(f): f for f in t.fields})
        return seen[1]

    def field_partner(self, partner: Partner, field: NestedField) -> NestedField | None:
        index = self.members(partner)
        return None if index is None else index.get(self._key(field))

    def element_partner(self, partner: Partner) -> NestedField | None:
        t = partner_type(partner)
        return t.element if isinstance(t, ArrayType) else None

    def key_partner(self, partner: Partner) -> NestedField | None:
        t = partner_type(partner)
        return t.key if isinstance(t, MapType) else None

    def value_partner(self, partner: Partner) -> NestedField | None:
        t = partner_type(partner)
        return t.value if isinstance(t, MapType) else None


def by_id(f: NestedField) -> int:
    """Match members by field ID."""
    return f.id


def by_name(f: NestedField) -> str:
    """Match members by exact name."""
    return f.name


def by_lower_name(f: NestedField) -> str:
    """Match members by name, ignoring case."""
    return f.name.lower()


__all__ = ["FieldPartners", "Partner", "PartnerAccessor", "PartnerVisitor", "by_id",
           "by_lower_name", "by_name", "partner_as", "partner_type", "visit_field",
           "visit_with_partner"]
