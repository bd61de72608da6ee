"""Converting evonb schemas to and from pyarrow schemas.

Every Arrow field, list elements and map keys and values included, carries its ID as field
metadata ``PARQUET:field_id`` (what Parquet writers read). Comments are ``comment``; defaults
are ``evonb.default`` / ``evonb.write_default``, JSON text of
:func:`~evonb.schema.defaults.default_to_json`. The schema metadata holds
``evonb.version_id`` and ``evonb.max_column_id``.

pyarrow is imported inside the functions only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from evonb.errors import InvalidDefaultError, SchemaEvolutionError
from evonb.schema.defaults import coerce_default, default_from_json, default_to_json
from evonb.schema.paths import INITIAL_VERSION, SchemaParts, format_path
from evonb.schema.spark_fields import MISSING_ID, assign_missing_ids
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
    MAX_DECIMAL_PRECISION,
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
)
from evonb.schema.views import SchemaView

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


FIELD_ID_KEY = b"PARQUET:field_id"
COMMENT_KEY = b"comment"
DEFAULT_KEY = b"evonb.default"
WRITE_DEFAULT_KEY = b"evonb.write_default"
VERSION_KEY = b"evonb.version_id"
MAX_COLUMN_ID_KEY = b"evonb.max_column_id"


# ------------------------------------------------------------------------------ evonb -> Arrow
def schema_to_arrow(schema: SchemaView) -> pa.Schema:
    """A pyarrow schema with IDs, comments and defaults as field metadata."""
    import pyarrow as pa

    return pa.schema(
        [field_to_arrow(f) for f in schema.fields],
        metadata={
            VERSION_KEY: schema.version_id.encode(),
            MAX_COLUMN_ID_KEY: str(schema.max_column_id).encode(),
        },
    )


def field_to_arrow(f: NestedField) -> pa.Field:
    """A pyarrow field with ``PARQUET:field_id`` (and comment/default) metadata."""
    import pyarrow as pa

    meta: dict[bytes, bytes] = {FIELD_ID_KEY: str(f.id).encode()}
    if f.comment is not None:
        meta[COMMENT_KEY] = f.comment.encode()
    if f.default is not None:
        meta[DEFAULT_KEY] = _json_bytes(default_to_json(f.default, f.type))
    if f.write_default is not None:
        meta[WRITE_DEFAULT_KEY] = _json_bytes(default_to_json(f.write_default, f.type))
    return pa.field(f.name, type_to_arrow(f.type), f.nullable, metadata=meta)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def type_to_arrow(t: Type) -> pa.DataType:
    """The pyarrow type of ``t``; nested fields carry their IDs."""
    import pyarrow as pa

    if isinstance(t, StructType):
        return pa.struct([field_to_arrow(f) for f in t.fields])
    if isinstance(t, ArrayType):
        return pa.list_(field_to_arrow(t.element))
    if isinstance(t, MapType):
        return pa.map_(field_to_arrow(t.key), field_to_arrow(t.value))
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    simple = {
        BOOLEAN: pa.bool_,
        TINYINT: pa.int8,
        SMALLINT: pa.int16,
        INT: pa.int32,
        BIGINT: pa.int64,
        FLOAT: pa.float32,
        DOUBLE: pa.float64,
        STRING: pa.string,
        BINARY: pa.binary,
        DATE: pa.date32,
    }
    if t in simple:
        return simple[t]()
    if t is TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    if t is TIMESTAMP_NTZ:
        return pa.timestamp("us")
    raise TypeError(f"no Arrow type for {t!r}")


# ------------------------------------------------------------------------------ Arrow -> evonb
def schema_parts_from_arrow(
    schema: pa.Schema, *, version_id: str | None = None, max_column_id: int | None = None
) -> SchemaParts:
    """The fields, version and max column ID of an evonb schema from a pyarrow schema
    (:meth:`Schema.from_arrow <evonb.schema.schema.Schema.from_arrow>` builds the schema).

    Fields without ``PARQUET:field_id`` get fresh IDs in pre-order after the highest ID known.
    The version and max column ID come from the keyword arguments, else the schema metadata.
    """
    meta = schema.metadata or {}
    if version_id is None:
        version_id = meta.get(VERSION_KEY, INITIAL_VERSION.encode()).decode()
    if max_column_id is None and MAX_COLUMN_ID_KEY in meta:
        max_column_id = int(meta[MAX_COLUMN_ID_KEY])
    fields = tuple(field_from_arrow(f) for f in schema)
    fields, highest = assign_missing_ids(fields, max_column_id or 0)
    return fields, version_id, max(max_column_id or 0, highest)


def field_from_arrow(
    f: pa.Field, prefix: tuple[str, ...] = (), *, name: str | None = None
) -> NestedField:
    """A field from a pyarrow field; without ``PARQUET:field_id`` its ID is 0 until assigned.

    ``name`` overrides the Arrow name (list elements and map entries take evonb's names).
    """
    name = f.name if name is None else name
    path = (*prefix, name)
    meta = f.metadata or {}
    t = _type_from_arrow(f.type, path)
    where = format_path(path)
    comment = meta.get(COMMENT_KEY)
    return NestedField(
        id=_id(meta.get(FIELD_ID_KEY), where),
        name=name,
        type=t,
        nullable=f.nullable,
        default=_default(meta.get(DEFAULT_KEY), t, where),
        write_default=_default(meta.get(WRITE_DEFAULT_KEY), t, where),
        comment=None if comment is None else comment.decode(),
    )


def type_from_arrow(t: pa.DataType) -> Type:
    """The evonb type of a pyarrow type (IDs of nested fields from their metadata, else 0)."""
    return _type_from_arrow(t, ())


def _type_from_arrow(t: pa.DataType, path: tuple[str, ...]) -> Type:
    import pyarrow as pa
    import pyarrow.types as pat

    if pat.is_struct(t):
        return StructType(tuple(field_from_arrow(t.field(i), path) for i in range(t.num_fields)))
    if pat.is_map(t):
        key = field_from_arrow(t.key_field, path, name=KEY).replace(nullable=False)
        return MapType(key, field_from_arrow(t.item_field, path, name=VALUE))
    if pat.is_list(t) or pat.is_large_list(t):
        return ArrayType(field_from_arrow(t.value_field, path, name=ELEMENT))
    if pat.is_dictionary(t):
        return _type_from_arrow(t.value_type, path)
    if pat.is_decimal(t) and t.precision <= MAX_DECIMAL_PRECISION:
        return DecimalType(t.precision, t.scale)
    if pat.is_timestamp(t):
        return TIMESTAMP if t.tz is not None else TIMESTAMP_NTZ
    if pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t):
        return STRING
    if pat.is_binary(t) or pat.is_large_binary(t) or pat.is_binary_view(t):
        return BINARY
    simple = {
        pa.bool_(): BOOLEAN,
        pa.int8(): TINYINT,
        pa.int16(): SMALLINT,
        pa.int32(): INT,
        pa.int64(): BIGINT,
        pa.float32(): FLOAT,
        pa.float64(): DOUBLE,
        pa.date32(): DATE,
        pa.date64(): DATE,
    }
    for arrow_type, evonb_type in simple.items():
        if t == arrow_type:
            return evonb_type
    where = format_path(path) if path else "(type)"
    raise SchemaEvolutionError(
        f"Unsupported Arrow type {t} for column {where!r}",
        path=where if path else None,
        new=str(t),
        hint="cast the column to a supported type first",
    )


def _id(raw: bytes | None, where: str) -> int:
    if raw is None:
        return MISSING_ID
    try:
        ident = int(raw)
    except ValueError:
        ident = 0
    if ident <= 0:
        raise SchemaEvolutionError(f"Bad field ID {raw!r} on column {where!r}", path=where)
    return ident


def _default(raw: bytes | None, t: Type, where: str) -> Any:
    if raw is None:
        return None
    try:
        value = default_from_json(json.loads(raw), t)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise InvalidDefaultError(
            f"Cannot read default {raw!r} of column {where!r}: {exc}", path=where, new=raw
        ) from None
    return coerce_default(value, t, path=where)
