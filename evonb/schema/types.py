"""Immutable types with IDs on their fields.

Primitive types are singletons; complex types hold :class:`NestedField` children, each with an
integer ID that is never reused. Array elements and map keys and values are fields too, with the
reserved names ``element``, ``key`` and ``value``. ``str(type)`` is Spark's simple string.
"""

from __future__ import annotations

import dataclasses
import decimal
from abc import abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

ELEMENT, KEY, VALUE = "element", "key", "value"


class Type:
    """Base of every evonb type."""

    __slots__ = ()

    @property
    def is_primitive(self) -> bool:
        return True

    @property
    def is_nested(self) -> bool:
        return not self.is_primitive

    def children(self) -> tuple[NestedField, ...]:
        """The fields directly under this type (empty for primitives)."""
        return ()

    @abstractmethod
    def simple_string(self) -> str:
        """Spark's simple string for this type (every concrete type defines it)."""

    def __str__(self) -> str:
        return self.simple_string()


@dataclass(frozen=True, slots=True)
class PrimitiveType(Type):
    """A primitive type; one instance per name (see the module constants)."""

    name: str
    _registry: ClassVar[dict[str, PrimitiveType]] = {}

    def simple_string(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name.upper()


def _primitive(name: str) -> PrimitiveType:
    t = PrimitiveType(name)
    PrimitiveType._registry[name] = t
    return t


BOOLEAN = _primitive("boolean")
TINYINT = _primitive("tinyint")
SMALLINT = _primitive("smallint")
INT = _primitive("int")
BIGINT = _primitive("bigint")
FLOAT = _primitive("float")
DOUBLE = _primitive("double")
STRING = _primitive("string")
BINARY = _primitive("binary")
DATE = _primitive("date")
TIMESTAMP = _primitive("timestamp")
TIMESTAMP_NTZ = _primitive("timestamp_ntz")

PRIMITIVES: dict[str, PrimitiveType] = dict(PrimitiveType._registry)
INTEGRAL = (TINYINT, SMALLINT, INT, BIGINT)
FRACTIONAL = (FLOAT, DOUBLE)

MAX_DECIMAL_PRECISION = 38

WIDE_DECIMALS = decimal.Context(prec=2 * MAX_DECIMAL_PRECISION + 2)
"""A decimal context with room for every digit of a value of any decimal type, to quantize
and compare in (Python's default context keeps 28 digits: a double such as ``1e30`` cast to
``decimal(38,6)`` did not fit it)."""


@dataclass(frozen=True, slots=True)
class DecimalType(Type):
    """``decimal(precision, scale)``."""

    precision: int
    scale: int

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= MAX_DECIMAL_PRECISION:
            raise ValueError(f"decimal precision must be 1..38, got {self.precision}")
        if not 0 <= self.scale <= self.precision:
            raise ValueError(
                f"decimal scale must be 0..precision, got ({self.precision},{self.scale})"
            )

    def simple_string(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale})"


@dataclass(frozen=True, slots=True)
class NestedField:
    """A field with an ID: a column, a struct member, an array element, a map key or value.

    ``default`` is the read default (what rows written before the column existed read);
    ``write_default`` is what new rows that omit the column get. Both are Python values already
    converted to the field's type (see :mod:`evonb.schema.defaults`).
    """

    id: int
    name: str
    type: Type
    nullable: bool = True
    default: Any = None
    write_default: Any = None
    comment: str | None = None

    @property
    def required(self) -> bool:
        return not self.nullable

    def replace(self, **changes: Any) -> NestedField:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    def __str__(self) -> str:
        text = f"{self.id}: {self.name}: {'optional' if self.nullable else 'required'} {self.type}"
        if self.default is not None:
            text += f" default {self.default!r}"
        if self.write_default is not None and self.write_default != self.default:
            text += f" write-default {self.write_default!r}"
        if self.comment:
            text += f" ({self.comment})"
        return text


@dataclass(frozen=True)
class StructType(Type):
    """``struct<a:int,b:string>``: an ordered tuple of named fields."""

    fields: tuple[NestedField, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))

    @property
    def is_primitive(self) -> bool:
        return False

    def children(self) -> tuple[NestedField, ...]:
        return self.fields

    def field_by_name(self, name: str) -> NestedField | None:
        """The child named ``name`` (case-insensitive), or None."""
        return self._by_lower_name.get(name.lower())

    @cached_property
    def _by_lower_name(self) -> dict[str, NestedField]:
        return {f.name.lower(): f for f in self.fields}

    def simple_string(self) -> str:
        return "struct<" + ",".join(f"{_quote(f.name)}:{f.type}" for f in self.fields) + ">"

    def __repr__(self) -> str:
        return f"StructType({list(self.fields)!r})"


@dataclass(frozen=True, slots=True)
class ArrayType(Type):
    """``array<T>``; the element is a field named ``element`` with its own ID."""

    element: NestedField

    @property
    def is_primitive(self) -> bool:
        return False

    def children(self) -> tuple[NestedField, ...]:
        return (self.element,)

    @property
    def element_type(self) -> Type:
        return self.element.type

    def simple_string(self) -> str:
        return f"array<{self.element.type}>"

    def __repr__(self) -> str:
        return f"ArrayType({self.element!r})"


@dataclass(frozen=True, slots=True)
class MapType(Type):
    """``map<K,V>``; key and value are fields named ``key`` and ``value`` with their own IDs."""

    key: NestedField
    value: NestedField

    @property
    def is_primitive(self) -> bool:
        return False

    def children(self) -> tuple[NestedField, ...]:
        return (self.key, self.value)

    @property
    def key_type(self) -> Type:
        return self.key.type

    @property
    def value_type(self) -> Type:
        return self.value.type

    def simple_string(self) -> str:
        return f"map<{self.key.type},{self.value.type}>"

    def __repr__(self) -> str:
        return f"MapType({self.key!r}, {self.value!r})"


def array_of(element_type: Type, *, element_id: int = 0, contains_null: bool = True) -> ArrayType:
    """Build ``array<element_type>`` (IDs default to 0 until assigned)."""
    return ArrayType(NestedField(element_id, ELEMENT, element_type, contains_null))


def map_of(
    key_type: Type,
    value_type: Type,
    *,
    key_id: int = 0,
    value_id: int = 0,
    value_contains_null: bool = True,
) -> MapType:
    """Build ``map<key_type,value_type>`` (IDs default to 0 until assigned)."""
    return MapType(
        NestedField(key_id, KEY, key_type, False),
        NestedField(value_id, VALUE, value_type, value_contains_null),
    )


def _quote(name: str) -> str:
    """Quote a struct member name for a simple string when it is not a plain identifier."""
    if name.replace("_", "a").isalnum() and not name[:1].isdigit():
        return name
    return "`" + name.replace("`", "``") + "`"


def with_children(t: Type, children: tuple[NestedField, ...]) -> Type:
    """The same kind of nested type as ``t`` with new children."""
    if isinstance(t, StructType):
        return StructType(children)
    if isinstance(t, ArrayType):
        (element,) = children
        return ArrayType(element)
    if isinstance(t, MapType):
        key, value = children
        return MapType(key, value)
    raise TypeError(f"{t} has no children")


def same_shape(a: Type, b: Type) -> bool:
    """True when two types are equal ignoring field IDs, names' case, defaults and comments."""
    if a.is_primitive or b.is_primitive:
        return a == b
    if type(a) is not type(b):
        return False
    ca, cb = a.children(), b.children()
    return len(ca) == len(cb) and all(
        x.name.lower() == y.name.lower() and x.nullable == y.nullable and same_shape(x.type, y.type)
        for x, y in zip(ca, cb, strict=True)
    )
