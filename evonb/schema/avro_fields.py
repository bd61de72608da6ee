"""Converting evonb schemas to and from Avro record schemas.

Written schemas carry the IDs as ``field-id`` on record fields and ``element-id``, ``key-id``,
``value-id`` on array and map schemas; nullable types are ``["null", T]`` unions with a null
default. evonb-only facts travel as extra attributes that other Avro readers ignore:
``evonb-name`` (a field's real name when it is not a valid Avro name), ``evonb-default`` /
``evonb-write-default`` (JSON form of the defaults), ``evonb-type`` (``tinyint``/``smallint``
on an ``int``) and, on the top record, ``evonb-version-id`` / ``evonb-max-column-id``.

Reading maps Avro types as follows (logical types first; unknown logical types fall back to
their underlying type, as the Avro spec asks):

========================================  ==================
``boolean``, ``int``, ``long``            boolean, int, bigint
``float``, ``double``                     float, double
``string``, ``enum``, ``uuid`` on string  string
``bytes``, ``fixed``                      binary
``decimal`` (bytes or fixed)              decimal(p,s)
``date``                                  date
``time-millis`` / ``time-micros``         int / bigint (time of day as a number)
``timestamp-millis|micros|nanos``         timestamp
``local-timestamp-millis|micros|nanos``   timestamp_ntz
``record`` / ``array`` / ``map``          struct / array / map<string, V>
========================================  ==================

fastavro is imported inside the functions only.
"""

from __future__ import annotations

import json
import re
from typing import Any

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

FIELD_ID = "field-id"
ELEMENT_ID = "element-id"
KEY_ID = "key-id"
VALUE_ID = "value-id"
NAME_ATTR = "evonb-name"
DEFAULT_ATTR = "evonb-default"
WRITE_DEFAULT_ATTR = "evonb-write-default"
TYPE_ATTR = "evonb-type"
VERSION_ATTR = "evonb-version-id"
MAX_COLUMN_ID_ATTR = "evonb-max-column-id"

_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# ------------------------------------------------------------------------------ evonb -> Avro
def schema_to_avro(schema: SchemaView, *, name: str = "record") -> dict[str, Any]:
    """An Avro record schema (a dict ``fastavro.parse_schema`` accepts) for ``schema``.

    Nested records are named ``r_<field id>``. Map keys must be strings.
    """
    return {
        "type": "record",
        "name": name,
        "fields": _fields_to_avro(schema.fields, ()),
        VERSION_ATTR: schema.version_id,
        MAX_COLUMN_ID_ATTR: schema.max_column_id,
    }


def avro_name(name: str, taken: set[str]) -> str:
    """``name`` if it is a valid Avro name, else ``_`` + its UTF-8 hex; unique within ``taken``."""
    candidate = name if _AVRO_NAME.match(name) else "_" + name.encode().hex()
    out, n = candidate, 1
    while out in taken:
        out, n = f"{candidate}_{n}", n + 1
    return out


def _fields_to_avro(fields: tuple[NestedField, ...], prefix: tuple[str, ...]) -> list[dict]:
    taken = {f.name for f in fields if _AVRO_NAME.match(f.name)}
    out = []
    for f in fields:
        path = (*prefix, f.name)
        avro = {"name": f.name} if _AVRO_NAME.match(f.name) else {
            "name": avro_name(f.name, taken),
            NAME_ATTR: f.name,
        }
        taken.add(avro["name"])
        avro["type"] = _nullable(type_to_avro(f.type, f.id, path), f.nullable)
        if f.nullable:
            avro["default"] = None
        avro[FIELD_ID] = f.id
        if f.comment is not None:
            avro["doc"] = f.comment
        if f.default is not None:
            avro[DEFAULT_ATTR] = default_to_json(f.default, f.type)
        if f.write_default is not None:
            avro[WRITE_DEFAULT_ATTR] = default_to_json(f.write_default, f.type)
        out.append(avro)
    return out


def _nullable(avro: Any, nullable: bool) -> Any:
    return ["null", avro] if nullable else avro


def type_to_avro(t: Type, field_id: int = 0, path: tuple[str, ...] = ()) -> Any:
    """The Avro schema of ``t``; a record is named after ``field_id``, the ID of its field."""
    if isinstance(t, StructType):
        fields = _fields_to_avro(t.fields, path)
        return {"type": "record", "name": f"r_{field_id}", "fields": fields}
    if isinstance(t, ArrayType):
        el = t.element
        return {
            "type": "array",
            "items": _nullable(type_to_avro(el.type, el.id, (*path, ELEMENT)), el.nullable),
            ELEMENT_ID: el.id,
        }
    if isinstance(t, MapType):
        if t.key.type != STRING:
            where = format_path(path)
            raise SchemaEvolutionError(
                f"Avro maps have string keys; column {where!r} has {t.key.type} keys",
                path=where,
                new=str(t),
                hint="use string map keys, or an array of key/value structs",
            )
        v = t.value
        return {
            "type": "map",
            "values": _nullable(type_to_avro(v.type, v.id, (*path, VALUE)), v.nullable),
            KEY_ID: t.key.id,
            VALUE_ID: v.id,
        }
    if isinstance(t, DecimalType):
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if t in (TINYINT, SMALLINT):
        return {"type": "int", TYPE_ATTR: t.simple_string()}
    if t is DATE:
        return {"type": "int", "logicalType": "date"}
    if t is TIMESTAMP:
        return {"type": "long", "logicalType": "timestamp-micros"}
    if t is TIMESTAMP_NTZ:
        return {"type": "long", "logicalType": "local-timestamp-micros"}
    simple = {
        BOOLEAN: "boolean",
        INT: "int",
        BIGINT: "long",
        FLOAT: "float",
        DOUBLE: "double",
        STRING: "string",
        BINARY: "bytes",
    }
    try:
        return simple[t]
    except KeyError:
        raise TypeError(f"no Avro type for {t!r}") from None


# ------------------------------------------------------------------------------ Avro -> evonb
def schema_parts_from_avro(
    avro_schema: str | dict[str, Any],
    *,
    version_id: str | None = None,
    max_column_id: int | None = None,
) -> SchemaParts:
    """The fields, version and max column ID of an evonb schema from an Avro record schema
    (JSON text or dict; :meth:`Schema.from_avro <evonb.schema.schema.Schema.from_avro>` builds
    the schema).

    IDs come from ``field-id``/``element-id``/``key-id``/``value-id`` attributes when present;
    other fields get fresh IDs in pre-order (from 1 when there are none). Names and namespaces of
    records are ignored; ``doc`` becomes the comment. ``version_id`` and ``max_column_id`` default
    to what our own :func:`schema_to_avro` recorded, else the initial version and the highest ID.
    """
    import fastavro

    if isinstance(avro_schema, str | bytes):
        try:
            avro_schema = json.loads(avro_schema)
        except ValueError as exc:
            raise SchemaEvolutionError(f"Avro schema JSON does not parse: {exc}") from None
    try:
        parsed = fastavro.parse_schema(avro_schema)
    except Exception as exc:  # fastavro raises several kinds for a bad schema
        raise SchemaEvolutionError(f"Not a valid Avro schema: {exc}") from None
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise SchemaEvolutionError("An Avro table schema must be a record")
    reader = _AvroReader(parsed.get("__named_schemas", {}))
    fields = reader.record_fields(parsed, ())
    if version_id is None:
        version_id = str(parsed.get(VERSION_ATTR, INITIAL_VERSION))
    if max_column_id is None and parsed.get(MAX_COLUMN_ID_ATTR) is not None:
        max_column_id = int(parsed[MAX_COLUMN_ID_ATTR])
    fields, highest = assign_missing_ids(fields, max_column_id or 0)
    return fields, version_id, max(max_column_id or 0, highest)


_PRIMITIVES = {
    "boolean": BOOLEAN,
    "int": INT,
    "long": BIGINT,
    "float": FLOAT,
    "double": DOUBLE,
    "string": STRING,
    "bytes": BINARY,
}
_LOGICAL = {
    "date": DATE,
    "time-millis": INT,
    "time-micros": BIGINT,
    "timestamp-millis": TIMESTAMP,
    "timestamp-micros": TIMESTAMP,
    "timestamp-nanos": TIMESTAMP,
    "local-timestamp-millis": TIMESTAMP_NTZ,
    "local-timestamp-micros": TIMESTAMP_NTZ,
    "local-timestamp-nanos": TIMESTAMP_NTZ,
}


class _AvroReader:
    """Walks a parsed Avro schema, resolving named types and refusing recursive ones."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.stack: list[str] = []

    def record_fields(self, record: dict[str, Any], path: tuple[str, ...]) -> tuple:
        name = record.get("name", "")
        if name in self.stack:
            where = format_path(path)
            raise SchemaEvolutionError(
                f"Recursive Avro record {name!r} at column {where!r}",
                path=where,
                hint="evonb schemas are finite trees",
            )
        self.stack.append(name)
        try:
            return tuple(self.field(f, path) for f in record["fields"])
        finally:
            self.stack.pop()

    def field(self, avro: dict[str, Any], prefix: tuple[str, ...]) -> NestedField:
        # An Avro field "default" is deliberately not read as an evonb default: Avro defaults fill
        # fields missing from the writer's schema during Avro schema resolution, which says
        # nothing about what rows written before the column existed read in this table.
        name = str(avro.get(NAME_ATTR, avro["name"]))
        path = (*prefix, name)
        t, nullable = self.nullable_type(avro["type"], path)
        where = format_path(path)
        doc = avro.get("doc")
        return NestedField(
            id=_id(avro.get(FIELD_ID), where),
            name=name,
            type=t,
            nullable=nullable,
            default=_default(avro.get(DEFAULT_ATTR), t, where),
            write_default=_default(avro.get(WRITE_DEFAULT_ATTR), t, where),
            comment=None if doc is None else str(doc),
        )

    def nullable_type(self, avro: Any, path: tuple[str, ...]) -> tuple[Type, bool]:
        if isinstance(avro, list):
            branches = [b for b in avro if b != "null"]
            if len(branches) == 1 and len(avro) <= 2:
                return self.type(branches[0], path), len(avro) == 2
            where = format_path(path)
            raise SchemaEvolutionError(
                f"Unsupported Avro union {json.dumps(avro)[:200]} for column {where!r}",
                path=where,
                hint="only [\"null\", T] unions map to a (nullable) column",
            )
        return self.type(avro, path), False

    def type(self, avro: Any, path: tuple[str, ...]) -> Type:
        if isinstance(avro, str):
            if avro in _PRIMITIVES:
                return _PRIMITIVES[avro]
            if avro in self.named:
                return self.type(self.named[avro], path)
            return self.unsupported(avro, path)
        if isinstance(avro, list):
            return self.unsupported(avro, path)
        kind = avro.get("type")
        logical = avro.get("logicalType")
        if logical == "decimal" and kind in ("bytes", "fixed"):
            precision, scale = int(avro.get("precision", 0)), int(avro.get("scale", 0))
            if 1 <= precision <= MAX_DECIMAL_PRECISION and 0 <= scale <= precision:
                return DecimalType(precision, scale)
            return self.unsupported(avro, path)
        if logical in _LOGICAL and kind in ("int", "long"):
            return _LOGICAL[logical]
        if kind == "int" and avro.get(TYPE_ATTR) in ("tinyint", "smallint"):
            return TINYINT if avro[TYPE_ATTR] == "tinyint" else SMALLINT
        if kind == "record":
            return StructType(self.record_fields(avro, path))
        if kind == "array":
            el_type, el_null = self.nullable_type(avro["items"], (*path, ELEMENT))
            el_id = _id(avro.get(ELEMENT_ID), format_path(path))
            return ArrayType(NestedField(el_id, ELEMENT, el_type, el_null))
        if kind == "map":
            v_type, v_null = self.nullable_type(avro["values"], (*path, VALUE))
            where = format_path(path)
            return MapType(
                NestedField(_id(avro.get(KEY_ID), where), KEY, STRING, False),
                NestedField(_id(avro.get(VALUE_ID), where), VALUE, v_type, v_null),
            )
        if kind == "enum":
            return STRING
        if kind == "fixed":
            return BINARY
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        return self.unsupported(avro, path)

    @staticmethod
    def unsupported(avro: Any, path: tuple[str, ...]) -> Type:
        where = format_path(path)
        raise SchemaEvolutionError(
            f"Unsupported Avro type {json.dumps(avro)[:200]} for column {where!r}",
            path=where,
            hint="convert the column to a supported type first",
        )


def _id(raw: Any, where: str) -> int:
    if raw is None:
        return MISSING_ID
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise SchemaEvolutionError(f"Bad field ID {raw!r} on column {where!r}", path=where)
    try:
        ident = int(raw)
    except ValueError:
        ident = 0
    if ident <= 0:
        raise SchemaEvolutionError(f"Bad field ID {raw!r} on column {where!r}", path=where)
    return ident


def _default(raw: Any, t: Type, where: str) -> Any:
    if raw is None:
        return None
    try:
        value = default_from_json(raw, t)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise InvalidDefaultError(
            f"Cannot read default {raw!r} of column {where!r}: {exc}", path=where, new=raw
        ) from None
    return coerce_default(value, t, path=where)
