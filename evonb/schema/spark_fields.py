"""Converting evonb schemas to and from Spark ``StructType``.

Field IDs travel as StructField metadata ``parquet.field.id`` (Spark writes it into Parquet).
Spark has no metadata on array elements or map keys and values, so their IDs, and those of arrays
and maps nested under them down to the next struct, go on the enclosing StructField as
``evonb.nested.ids``: a dict from a relative path (``element``, ``key``, ``value.element``, ...)
to the ID. Defaults use Spark's own keys, ``EXISTS_DEFAULT`` (read default) and
``CURRENT_DEFAULT`` (write default), as SQL literals. The first top-level field carries
``evonb.schema``: ``{"version-id": ..., "max-column-id": ...}``.

pyspark is imported inside the functions only, so the schema core imports without Spark.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evonb.errors import InvalidDefaultError, SchemaEvolutionError
from evonb.schema.defaults import coerce_default, sql_literal
from evonb.schema.paths import INITIAL_VERSION, SchemaParts, format_path
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
from evonb.schema.views import SchemaView

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import types as st


FIELD_ID_KEY = "parquet.field.id"
COMMENT_KEY = "comment"
EXISTS_DEFAULT_KEY = "EXISTS_DEFAULT"
CURRENT_DEFAULT_KEY = "CURRENT_DEFAULT"
NESTED_IDS_KEY = "evonb.nested.ids"
SCHEMA_KEY = "evonb.schema"

MISSING_ID = 0
"""Placeholder ID of a field read without one; replaced by :func:`assign_missing_ids`."""


# ------------------------------------------------------------------------------ evonb -> Spark
def schema_to_spark(schema: SchemaView) -> st.StructType:
    """A Spark ``StructType`` carrying IDs, defaults, comments and the schema's version info."""
    from pyspark.sql import types as st

    fields = [field_to_spark(f) for f in schema.fields]
    if fields:
        first = fields[0]
        meta = {
            **first.metadata,
            SCHEMA_KEY: {"version-id": schema.version_id, "max-column-id": schema.max_column_id},
        }
        fields[0] = st.StructField(first.name, first.dataType, first.nullable, meta)
    return st.StructType(fields)


def field_to_spark(f: NestedField) -> st.StructField:
    """A ``StructField`` for a column or struct member, with its metadata."""
    from pyspark.sql import types as st

    meta: dict[str, Any] = {FIELD_ID_KEY: f.id}
    if f.comment is not None:
        meta[COMMENT_KEY] = f.comment
    if f.default is not None:
        meta[EXISTS_DEFAULT_KEY] = sql_literal(f.default, f.type)
    if f.write_default is not None:
        meta[CURRENT_DEFAULT_KEY] = sql_literal(f.write_default, f.type)
    nested = _nested_ids(f.type)
    if nested:
        meta[NESTED_IDS_KEY] = nested
    return st.StructField(f.name, type_to_spark(f.type), f.nullable, meta)


def _nested_ids(t: Type, prefix: str = "") -> dict[str, int]:
    """IDs of array elements and map keys/values under ``t``, down to the next struct."""
    out: dict[str, int] = {}
    for child in t.children() if isinstance(t, ArrayType | MapType) else ():
        path = prefix + child.name
        out[path] = child.id
        out.update(_nested_ids(child.type, path + "."))
    return out


_TO_SPARK = {
    BOOLEAN: "BooleanType",
    TINYINT: "ByteType",
    SMALLINT: "ShortType",
    INT: "IntegerType",
    BIGINT: "LongType",
    FLOAT: "FloatType",
    DOUBLE: "DoubleType",
    STRING: "StringType",
    BINARY: "BinaryType",
    DATE: "DateType",
    TIMESTAMP: "TimestampType",
    TIMESTAMP_NTZ: "TimestampNTZType",
}


def type_to_spark(t: Type) -> st.DataType:
    """The Spark type for ``t``. IDs of elements/keys/values are not part of a Spark type: they
    live in the enclosing field's metadata (see :func:`field_to_spark`)."""
    from pyspark.sql import types as st

    if isinstance(t, StructType):
        return st.StructType([field_to_spark(f) for f in t.fields])
    if isinstance(t, ArrayType):
        return st.ArrayType(type_to_spark(t.element.type), t.element.nullable)
    if isinstance(t, MapType):
        return st.MapType(type_to_spark(t.key.type), type_to_spark(t.value.type), t.value.nullable)
    if isinstance(t, DecimalType):
        return st.DecimalType(t.precision, t.scale)
    try:
        return getattr(st, _TO_SPARK[t])()
    except KeyError:
        raise TypeError(f"no Spark type for {t!r}") from None


# ------------------------------------------------------------------------------ Spark -> evonb
def schema_parts_from_spark(
    struct: st.StructType, *, version_id: str | None = None, max_column_id: int | None = None
) -> SchemaParts:
    """The fields, version and max column ID of an evonb schema from a Spark ``StructType``
    (:meth:`Schema.from_spark <evonb.schema.schema.Schema.from_spark>` builds the schema).

    IDs come from ``parquet.field.id`` / ``evonb.nested.ids``; fields without one get fresh IDs
    in pre-order after the highest ID known (present, or recorded as ``max-column-id``).
    ``version_id`` and ``max_column_id`` override what ``evonb.schema`` metadata records.
    """
    info: dict[str, Any] = {}
    if struct.fields:
        recorded = struct.fields[0].metadata.get(SCHEMA_KEY)
        if isinstance(recorded, dict):
            info = recorded
    fields = tuple(field_from_spark(f) for f in struct.fields)
    if version_id is None:
        version_id = str(info.get("version-id", INITIAL_VERSION))
    if max_column_id is None and info.get("max-column-id") is not None:
        max_column_id = int(info["max-column-id"])
    fields, highest = assign_missing_ids(fields, max_column_id or 0)
    return fields, version_id, max(max_column_id or 0, highest)


def field_from_spark(sf: st.StructField, prefix: tuple[str, ...] = ()) -> NestedField:
    """A field from a ``StructField``; fields without an ID get ID 0 (:data:`MISSING_ID`)."""
    path = (*prefix, sf.name)
    meta = sf.metadata or {}
    nested = meta.get(NESTED_IDS_KEY) or {}
    t = _type_from_spark(sf.dataType, path, nested, "")
    default = _default_from_meta(meta, EXISTS_DEFAULT_KEY, t, path)
    write_default = _default_from_meta(meta, CURRENT_DEFAULT_KEY, t, path)
    comment = meta.get(COMMENT_KEY)
    return NestedField(
        id=_as_id(meta.get(FIELD_ID_KEY), path),
        name=sf.name,
        type=t,
        nullable=sf.nullable,
        default=default,
        write_default=write_default,
        comment=None if comment is None else str(comment),
    )


def type_from_spark(dt: st.DataType) -> Type:
    """The evonb type of a Spark type (element/key/value IDs are 0 until assigned)."""
    return _type_from_spark(dt, (), {}, "")


def _type_from_spark(
    dt: st.DataType, path: tuple[str, ...], nested: dict[str, Any], rel: str
) -> Type:
    from pyspark.sql import types as st

    if isinstance(dt, st.StructType):
        return StructType(tuple(field_from_spark(f, path) for f in dt.fields))
    if isinstance(dt, st.ArrayType):
        el = rel + ELEMENT
        el_type = _type_from_spark(dt.elementType, (*path, ELEMENT), nested, el + ".")
        return ArrayType(
            NestedField(_as_id(nested.get(el), path), ELEMENT, el_type, dt.containsNull)
        )
    if isinstance(dt, st.MapType):
        k, v = rel + KEY, rel + VALUE
        key_type = _type_from_spark(dt.keyType, (*path, KEY), nested, k + ".")
        value_type = _type_from_spark(dt.valueType, (*path, VALUE), nested, v + ".")
        return MapType(
            NestedField(_as_id(nested.get(k), path), KEY, key_type, False),
            NestedField(_as_id(nested.get(v), path), VALUE, value_type, dt.valueContainsNull),
        )
    if isinstance(dt, st.DecimalType):
        return DecimalType(dt.precision, dt.scale)
    if isinstance(dt, st.StringType):
        if not dt.isUTF8BinaryCollation():
            raise _unsupported(dt, path, "drop the collation (evonb strings compare binary)")
        return STRING
    if isinstance(dt, st.CharType | st.VarcharType):
        return STRING
    for t, name in _TO_SPARK.items():
        if type(dt) is getattr(st, name):
            return t
    raise _unsupported(dt, path, "cast the column to a supported type first")


def _unsupported(dt: Any, path: tuple[str, ...], hint: str) -> SchemaEvolutionError:
    where = format_path(path) if path else "(type)"
    return SchemaEvolutionError(
        f"Unsupported Spark type {dt.simpleString()} for column {where!r}",
        path=where if path else None,
        new=dt.simpleString(),
        hint=hint,
    )


def _as_id(value: Any, path: tuple[str, ...]) -> int:
    if value is None:
        return MISSING_ID
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise SchemaEvolutionError(
            f"Bad field ID {value!r} on column {format_path(path)!r}", path=format_path(path)
        )
    try:
        ident = int(value)
    except ValueError:
        raise SchemaEvolutionError(
            f"Bad field ID {value!r} on column {format_path(path)!r}", path=format_path(path)
        ) from None
    if ident <= 0:
        raise SchemaEvolutionError(
            f"Field ID {ident} on column {format_path(path)!r} is not positive",
            path=format_path(path),
        )
    return ident


def _default_from_meta(meta: dict[str, Any], key: str, t: Type, path: tuple[str, ...]) -> Any:
    text = meta.get(key)
    if text is None:
        return None
    where = format_path(path)
    try:
        value = parse_sql_literal(str(text))
    except ValueError as exc:
        raise InvalidDefaultError(
            f"Cannot read {key} {text!r} of column {where!r}: {exc}",
            path=where,
            new=text,
            hint="give the default as a plain literal",
        ) from None
    return coerce_default(value, t, path=where)


def assign_missing_ids(
    fields: tuple[NestedField, ...], after: int = 0
) -> tuple[tuple[NestedField, ...], int]:
    """Give every field with ID 0 a fresh ID, in pre-order, after ``after`` and after the highest
    ID present. Returns the fields and the highest ID in them."""
    present = [i for i in _ids(fields) if i != MISSING_ID]
    counter = iter(range(max([after, *present]) + 1, 2**31))
    out = tuple(_fill(f, counter) for f in fields)
    return out, max(_ids(out), default=0)


def _ids(fields: tuple[NestedField, ...]) -> Iterator[int]:
    for f in fields:
        yield f.id
        yield from _ids(f.type.children())


def _fill(f: NestedField, counter: Iterator[int]) -> NestedField:
    new_id = next(counter) if f.id == MISSING_ID else f.id
    t = f.type
    if t.is_nested:
        t = with_children(t, tuple(_fill(c, counter) for c in t.children()))
    return f if (new_id == f.id and t is f.type) else f.replace(id=new_id, type=t)


# ------------------------------------------------------------------------- SQL literal parser
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?(BD|[YSLDF])?", re.IGNORECASE)
_CAST = re.compile(r"CAST\s*\((.*)\s+AS\s+([A-Z_]+(\s*\(\s*\d+\s*,\s*\d+\s*\))?)\s*\)\Z",
                   re.IGNORECASE | re.DOTALL)
_TYPED = re.compile(r"(DATE|TIMESTAMP_NTZ|TIMESTAMP_LTZ|TIMESTAMP)\s*(['\"].*)\Z",
                    re.IGNORECASE | re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "0": "\0", "Z": "\x1a"}


def parse_sql_literal(text: str) -> Any:
    """The Python value of a Spark SQL literal, as :func:`sql_literal` or Spark writes them.

    Returns a raw value (``int``, ``Decimal``, ``str``, ``bytes``, ``bool`` or None) that
    :func:`~evonb.schema.defaults.coerce_default` converts to the column's type; typed literals
    (``DATE '...'``, ``TIMESTAMP '...'``) and casts return their inner value.
    """
    s = text.strip()
    if not s:
        raise ValueError("empty literal")
    upper = s.upper()
    if upper == "NULL":
        return None
    if upper in ("TRUE", "FALSE"):
        return upper == "TRUE"
    if s[0] in "'\"":
        return _parse_string(s)
    if upper.startswith("X'") or upper.startswith('X"'):
        return bytes.fromhex(_parse_string(s[1:]))
    m = _TYPED.match(s)
    if m:
        return _parse_string(m.group(2))
    m = _CAST.match(s)
    if m:
        return parse_sql_literal(m.group(1))
    m = _NUMBER.fullmatch(s)
    if m:
        digits, suffix = s[: m.start(3)] if m.group(3) else s, (m.group(3) or "").upper()
        if suffix in ("Y", "S", "L") or (not suffix and re.fullmatch(r"[+-]?\d+", digits)):
            return int(digits)
        return decimal.Decimal(digits)
    raise ValueError(f"not a literal: {text!r}")


def _parse_string(s: str) -> str:
    quote = s[0]
    out: list[str] = []
    i = 1
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "u" and i + 5 < len(s):
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if ch == quote:
            if i != len(s) - 1:
                raise ValueError(f"text after the closing quote in {s!r}")
            return "".join(out)
        out.append(ch)
        i += 1
    raise ValueError(f"unterminated string {s!r}")
