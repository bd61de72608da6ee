"""The visitor with a partner: the walk, the hooks' order and FieldPartners' matching."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from evonb.schema.partner import (
    FieldPartners,
    PartnerVisitor,
    by_id,
    by_lower_name,
    by_name,
    partner_type,
    visit_field,
    visit_with_partner,
)
from evonb.schema.schema import Schema
from evonb.schema.types import (
    BIGINT,
    INT,
    STRING,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
)


def _struct(*fields: NestedField) -> StructType:
    return StructType(fields)


# query: id 1 a:int, 2 s:struct<3 x:int, 4 gone:string>, 5 l:array<6 struct<7 y:int>>,
#        8 m:map<9 string, 10 struct<11 z:int, 12 new:int>>
QUERY = Schema((
    NestedField(1, "a", INT),
    NestedField(2, "s", _struct(NestedField(3, "x", INT), NestedField(4, "gone", STRING))),
    NestedField(5, "l", ArrayType(NestedField(6, "element", _struct(NestedField(7, "y", INT))))),
    NestedField(8, "m", MapType(NestedField(9, "key", STRING, False),
                                NestedField(10, "value", _struct(NestedField(11, "z", INT),
                                                                 NestedField(12, "new", INT))))),
))

# the file: renamed a -> A (same ID), s lacks 4, l's member renamed, m has no member 12, and
# an extra column 99 the query does not ask for
FILE = Schema((
    NestedField(99, "extra", INT),
    NestedField(1, "A", BIGINT),
    NestedField(2, "S", _struct(NestedField(3, "X", INT))),
    NestedField(5, "l", ArrayType(NestedField(6, "element", _struct(NestedField(7, "yy", INT))))),
    NestedField(8, "m", MapType(NestedField(9, "key", STRING, False),
                                NestedField(10, "value", _struct(NestedField(11, "z", INT))))),
))


class Pairs(PartnerVisitor[Any, list[tuple[str, Any]]]):
    """Every field as (path, partner's (id, name) or None), in the order the walk finishes."""

    def __init__(self) -> None:
        self.path: list[str] = []
        self.events: list[str] = []

    def before_field(self, field: NestedField, partner: Any) -> None:
        self.path.append(field.name)
        self.events.append("+" + field.name)

    def after_field(self, field: NestedField, partner: Any) -> None:
        self.path.pop()
        self.events.append("-" + field.name)

    def schema(self, schema: Schema, partner: Any, result: list[tuple[str, Any]]
               ) -> list[tuple[str, Any]]:
        return [("<schema>", partner.version_id if partner is not None else None), *result]

    def field(self, field: NestedField, partner: Any, result: list[tuple[str, Any]]
              ) -> list[tuple[str, Any]]:
        seen = None if partner is None else (partner.id, partner.name)
        return [*result, (".".join(self.path), seen)]

    def struct(self, struct: StructType, partner: Any, fields: Sequence[list[tuple[str, Any]]]
               ) -> list[tuple[str, Any]]:
        return [p for f in fields for p in f]

    def array(self, array: ArrayType, partner: Any, element: list[tuple[str, Any]]
              ) -> list[tuple[str, Any]]:
        return element

    def map(self, map_type: MapType, partner: Any, key: list[tuple[str, Any]],
            value: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        return key + value

    def primitive(self, primitive: Type, partner: Any) -> list[tuple[str, Any]]:
        return []


def test_by_id_pairs_every_field_with_its_partner_at_every_depth() -> None:
    pairs = visit_with_partner(QUERY, FILE, Pairs(), FieldPartners(by_id))
    assert pairs == [
        ("<schema>", "00000000000000000"),
        ("a", (1, "A")),
        ("s.x", (3, "X")),
        ("s.gone", None),
        ("s", (2, "S")),
        ("l.element.y", (7, "yy")),
        ("l.element", (6, "element")),
        ("l", (5, "l")),
        ("m.key", (9, "key")),
        ("m.value.z", (11, "z")),
        ("m.value.new", None),
        ("m.value", (10, "value")),
        ("m", (8, "m")),
    ]


def test_by_name_is_exact_and_by_lower_name_ignores_case() -> None:
    exact = dict(visit_with_partner(QUERY, FILE, Pairs(), FieldPartners(by_name)))
    assert exact["a"] is None and exact["s"] is None and exact["s.x"] is None
    assert exact["l.element.y"] is None  # renamed member
    assert exact["l.element"] == (6, "element")
    lower = dict(visit_with_partner(QUERY, FILE, Pairs(), FieldPartners(by_lower_name)))
    assert lower["a"] == (1, "A")
    assert lower["s.x"] == (3, "X")


def test_no_partner_at_all() -> None:
    pairs = visit_with_partner(QUERY, None, Pairs(), FieldPartners(by_id))
    assert pairs[0] == ("<schema>", None)
    assert all(seen is None for _, seen in pairs)
    assert len(pairs) == 1 + 12


def test_a_partner_of_another_kind_has_no_children() -> None:
    # the file has s as an array and l as a primitive
    other = Schema((
        NestedField(2, "s", ArrayType(NestedField(3, "element", INT))),
        NestedField(5, "l", INT),
        NestedField(8, "m", ArrayType(NestedField(9, "element", INT))),
    ))
    pairs = dict(visit_with_partner(QUERY, other, Pairs(), FieldPartners(by_id)))
    assert pairs["s"] == (2, "s") and pairs["s.x"] is None
    assert pairs["l"] == (5, "l") and pairs["l.element"] is None
    assert pairs["m"] == (8, "m") and pairs["m.key"] is None and pairs["m.value"] is None


class Recording(FieldPartners):
    def __init__(self) -> None:
        super().__init__(by_id)
        self.asked: list[Any] = []

    def field_partner(self, partner: Any, field: NestedField) -> NestedField | None:
        self.asked.append(partner)
        return super().field_partner(partner, field)


def test_the_accessor_is_never_asked_about_a_missing_partner() -> None:
    accessor = Recording()
    visit_with_partner(QUERY, FILE, Pairs(), accessor)
    assert None not in accessor.asked
    # root members (4), s's members (2), l's element struct (1), m's value struct (2)
    assert len(accessor.asked) == 9


def test_hooks_run_children_first_and_before_after_bracket_every_field() -> None:
    schema = Schema((NestedField(1, "l", ArrayType(NestedField(2, "element", _struct(
        NestedField(3, "x", INT))))),))
    visitor = Pairs()
    visit_with_partner(schema, schema, visitor, FieldPartners(by_id))
    assert visitor.events == ["+l", "+element", "+x", "-x", "-element", "-l"]
    assert visitor.path == []


def test_after_field_runs_when_a_hook_raises() -> None:
    class Boom(Pairs):
        def primitive(self, primitive: Type, partner: Any) -> list[tuple[str, Any]]:
            raise ValueError(".".join(self.path))

    visitor = Boom()
    with pytest.raises(ValueError, match=r"^s\.x$"):
        visit_field(QUERY.fields[1], FILE.fields[2], visitor, FieldPartners(by_id))
    assert visitor.path == []


class Rebuild(PartnerVisitor[Any, Any]):
    """The query's type, every field taking its partner's ID and nullability (a rebuild)."""

    def field(self, field: NestedField, partner: Any, result: Any) -> NestedField:
        if partner is None:
            return field.replace(type=result)
        return field.replace(id=partner.id, nullable=partner.nullable, type=result)

    def struct(self, struct: StructType, partner: Any, fields: Sequence[Any]) -> Type:
        return StructType(tuple(fields))

    def array(self, array: ArrayType, partner: Any, element: Any) -> Type:
        return ArrayType(element)

    def map(self, map_type: MapType, partner: Any, key: Any, value: Any) -> Type:
        return MapType(key, value)

    def primitive(self, primitive: Type, partner: Any) -> Type:
        return primitive


def test_a_rebuild_takes_ids_from_partners_matched_by_name() -> None:
    incoming = _struct(
        NestedField(0, "X", INT),
        NestedField(0, "m", MapType(NestedField(0, "key", STRING, False),
                                    NestedField(0, "value", ArrayType(
                                        NestedField(0, "element", INT))))),
        NestedField(0, "other", INT),
    )
    table = _struct(
        NestedField(7, "x", INT, False),
        NestedField(8, "M", MapType(NestedField(9, "key", STRING, False),
                                    NestedField(10, "value", ArrayType(
                                        NestedField(11, "element", INT, False))))),
    )
    out = visit_with_partner(incoming, table, Rebuild(), FieldPartners(by_lower_name))
    assert out == _struct(
        NestedField(7, "X", INT, False),
        NestedField(8, "m", MapType(NestedField(9, "key", STRING, False),
                                    NestedField(10, "value", ArrayType(
                                        NestedField(11, "element", INT, False))))),
        NestedField(0, "other", INT),
    )


def test_visit_field_and_partner_type() -> None:
    f = QUERY.fields[1]
    assert visit_field(f, FILE.fields[2], Pairs(), FieldPartners(by_id)) == [
        ("s.x", (3, "X")), ("s.gone", None), ("s", (2, "S"))]
    assert partner_type(FILE) == FILE.struct
    assert partner_type(FILE.fields[1]) is BIGINT
    assert partner_type(INT) is INT


def test_when_two_members_share_a_key_the_last_is_the_partner() -> None:
    partner = _struct(NestedField(1, "a", INT), NestedField(2, "A", INT))
    accessor = FieldPartners(by_lower_name)
    found = accessor.field_partner(partner, NestedField(5, "a", INT))
    assert found is not None and found.id == 2
    assert accessor.field_partner(INT, NestedField(5, "a", INT)) is None
