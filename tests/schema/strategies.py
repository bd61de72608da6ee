"""Hypothesis strategies for random valid evonb types and schemas.

``types()`` draws a type whose nested fields have unique IDs (pre-order from 1); ``schemas()``
draws a :class:`Schema` with unique but scattered IDs, names unique case-insensitively within
each struct, nesting up to ``max_depth``, random nullability, comments and defaults of the right
type on some primitive struct members. Defaults and comments are only put on struct members (not
on array elements or map keys/values), map keys are primitive and never nullable, and no float
default is NaN (NaN != NaN would break equality checks).
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from hypothesis import strategies as st

from evonb.schema.ids import fresh_fields
from evonb.schema.schema import Schema
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    ELEMENT,
    FLOAT,
    INT,
    KEY,
    PRIMITIVES,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    VALUE,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
    Type,
    with_children,
)

_PLAIN_NAMES = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,11}", fullmatch=True)
_ODD_NAMES = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8
).filter(lambda s: s.strip() == s and s.strip() != "")
_FIELD_NAMES = st.one_of(_PLAIN_NAMES, _PLAIN_NAMES, _PLAIN_NAMES, _ODD_NAMES)


def decimal_types() -> st.SearchStrategy[DecimalType]:
    """``decimal(p,s)`` with 1 <= p <= 38, 0 <= s <= p."""
    return st.integers(1, 38).flatmap(
        lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s))
    )


def primitive_types() -> st.SearchStrategy[Type]:
    """Any primitive type, decimals included."""
    return st.sampled_from([*PRIMITIVES.values(), None]).flatmap(
        lambda t: decimal_types() if t is None else st.just(t)
    )


def names() -> st.SearchStrategy[str]:
    """Field names: mostly identifiers, sometimes spaces, dots, punctuation or unicode."""
    return _FIELD_NAMES


def default_values(t: Type) -> st.SearchStrategy[Any]:
    """Values of primitive type ``t`` as a default holds them (after ``coerce_default``)."""
    ints = {TINYINT: 7, SMALLINT: 15, INT: 31, BIGINT: 63}
    if t in ints:
        bits = ints[t]
        return st.integers(-(2**bits), 2**bits - 1)
    if t is BOOLEAN:
        return st.booleans()
    if t is FLOAT:
        return st.floats(width=32, allow_nan=False)
    if t is DOUBLE:
        return st.floats(allow_nan=False)
    if isinstance(t, DecimalType):
        limit = 10**t.precision - 1
        ctx = decimal.Context(prec=80)
        return st.integers(-limit, limit).map(
            lambda n: decimal.Decimal(n).scaleb(-t.scale, ctx)
        )
    if t is STRING:
        return st.text(max_size=20)
    if t is BINARY:
        return st.binary(max_size=16)
    if t is DATE:
        return st.dates()
    if t in (TIMESTAMP, TIMESTAMP_NTZ):
        return st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))
    raise ValueError(f"{t} takes no default")


@st.composite
def _field(draw: st.DrawFn, name: str, depth: int, string_keys: bool) -> NestedField:
    t = draw(_type(depth, string_keys))
    default = write_default = None
    if t.is_primitive:
        default = draw(st.none() | default_values(t))
        write_default = draw(st.sampled_from(["none", "same", "other"]))
        if write_default == "same":
            write_default = default
        elif write_default == "other":
            write_default = draw(default_values(t))
        else:
            write_default = None
    comment = draw(st.none() | st.text(max_size=20))
    return NestedField(0, name, t, draw(st.booleans()), default, write_default, comment)


@st.composite
def _struct_fields(
    draw: st.DrawFn, depth: int, string_keys: bool, max_fields: int
) -> tuple[NestedField, ...]:
    field_names = draw(st.lists(names(), min_size=1, max_size=max_fields, unique_by=str.lower))
    return tuple(draw(_field(n, depth, string_keys)) for n in field_names)


def _type(depth: int, string_keys: bool) -> st.SearchStrategy[Type]:
    """Placeholder IDs (0); ``depth`` is how many more nesting levels are allowed."""
    if depth <= 0:
        return primitive_types()
    inner = _type(depth - 1, string_keys)
    keys = st.just(STRING) if string_keys else primitive_types()
    structs = _struct_fields(depth - 1, string_keys, 4).map(StructType)
    arrays = st.builds(
        lambda t, n: ArrayType(NestedField(0, ELEMENT, t, n)), inner, st.booleans()
    )
    maps = st.builds(
        lambda k, v, n: MapType(NestedField(0, KEY, k, False), NestedField(0, VALUE, v, n)),
        keys,
        inner,
        st.booleans(),
    )
    return st.one_of(primitive_types(), primitive_types(), structs, arrays, maps)


def _renumber(fields: tuple[NestedField, ...], ids: list[int]) -> tuple[NestedField, ...]:
    """Pre-order renumbering taking IDs from ``ids`` (consumed from the front)."""
    out = []
    for f in fields:
        new_id = ids.pop(0)
        t = f.type
        if t.is_nested:
            t = with_children(t, _renumber(t.children(), ids))
        out.append(f.replace(id=new_id, type=t))
    return tuple(out)


def _count(fields: tuple[NestedField, ...]) -> int:
    return sum(1 + _count(f.type.children()) for f in fields)


def types(max_depth: int = 3, *, string_keys: bool = False) -> st.SearchStrategy[Type]:
    """Random types nested up to ``max_depth``, nested fields numbered 1, 2, ... in pre-order.

    ``string_keys`` restricts map keys to strings (as Avro requires).
    """

    def number(t: Type) -> Type:
        if t.is_primitive:
            return t
        children, _ = fresh_fields(t.children(), 1)
        return with_children(t, children)

    return _type(max_depth, string_keys).map(number)


@st.composite
def schemas(
    draw: st.DrawFn, max_depth: int = 3, *, max_fields: int = 6, string_keys: bool = False
) -> Schema:
    """Random valid schemas with unique scattered IDs, a version id and a max column ID at or
    above the highest ID (as after drops). ``string_keys`` restricts map keys to strings."""
    fields = draw(_struct_fields(max_depth, string_keys, max_fields))
    n = _count(fields)
    ids = draw(st.lists(st.integers(1, 4 * n + 10), min_size=n, max_size=n, unique=True))
    fields = _renumber(fields, list(ids))
    version = draw(st.from_regex(r"[0-9]{17}", fullmatch=True))
    max_column_id = max(ids) + draw(st.integers(0, 5))
    return Schema(fields, version, max_column_id)


def sample_schema() -> Schema:
    """A fixed schema with every primitive, a decimal, a nested struct, an array of structs, a
    map with struct values, arrays/maps nested in each other, defaults of each primitive type,
    comments, and a ``max_column_id`` above the highest ID (as after a drop)."""
    from evonb.schema.types import array_of, map_of

    def f(i: int, name: str, t: Type, nullable: bool = True, **kw: Any) -> NestedField:
        return NestedField(i, name, t, nullable, **kw)

    return Schema(
        (
            f(1, "flag", BOOLEAN, default=True, write_default=False),
            f(2, "tiny", TINYINT, default=-3),
            f(3, "small", SMALLINT, write_default=300),
            f(4, "id", INT, False, default=42, write_default=43, comment="primary key"),
            f(5, "big", BIGINT, default=2**40),
            f(6, "ratio", FLOAT, default=1.5),
            f(7, "score", DOUBLE, default=-0.25, write_default=float("inf")),
            f(8, "price", DecimalType(10, 2), default=decimal.Decimal("12.34")),
            f(9, "note", STRING, default="it's a \\ test", comment="free text"),
            f(10, "blob", BINARY, default=b"\x0a\xff"),
            f(11, "day", DATE, default=dt.date(2020, 2, 29)),
            f(12, "at", TIMESTAMP, default=dt.datetime(2020, 1, 2, 3, 4, 5, 6)),
            f(13, "local", TIMESTAMP_NTZ, write_default=dt.datetime(2021, 6, 7, 8, 9, 10)),
            f(
                14,
                "point",
                StructType(
                    (f(15, "x", DOUBLE, False, default=0.0), f(16, "y", DOUBLE, comment="north"))
                ),
                comment="a place",
            ),
            f(
                17,
                "tags",
                array_of(
                    StructType((f(19, "k", STRING, False), f(20, "v", INT, default=1))),
                    element_id=18,
                    contains_null=False,
                ),
            ),
            f(
                21,
                "props",
                map_of(
                    STRING,
                    StructType(
                        (
                            f(24, "a", INT),
                            f(25, "b", array_of(STRING, element_id=26)),
                        )
                    ),
                    key_id=22,
                    value_id=23,
                ),
            ),
            f(27, "grid", array_of(array_of(INT, element_id=29), element_id=28), False),
            f(
                30,
                "deep",
                map_of(
                    STRING,
                    array_of(
                        map_of(STRING, BIGINT, key_id=34, value_id=35, value_contains_null=False),
                        element_id=33,
                    ),
                    key_id=31,
                    value_id=32,
                ),
            ),
        ),
        version_id="20240102030405678",
        max_column_id=40,
    )
