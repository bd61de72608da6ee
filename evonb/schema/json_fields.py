"""The stable JSON form of a schema (format version 1, documented in ``docs/format.md``)."""

from __future__ import annotations

import json
from typing import Any

from evonb.errors import SchemaEvolutionError
from evonb.schema.defaults import default_from_json, default_to_json
from evonb.schema.paths import SchemaParts
from evonb.schema.types import (
    ELEMENT,
    KEY,
    PRIMITIVES,
    VALUE,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
    Type,
)
from evonb.schema.views import SchemaView

FORMAT_VERSION = 1


def type_to_json(t: Type) -> Any:
    """Primitives are strings (``"bigint"``, ``"decimal(10,2)"``); nested types are objects."""
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [field_to_json(f) for f in t.fields]}
    if isinstance(t, ArrayType):
        return {
            "type": "array",
            "element-id": t.element.id,
            "element": type_to_json(t.element.type),
            "element-required": not t.element.nullable,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key.id,
            "key": type_to_json(t.key.type),
            "value-id": t.value.id,
            "value": type_to_json(t.value.type),
            "value-required": not t.value.nullable,
        }
    return t.simple_string()


def field_to_json(f: NestedField) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f.id,
        "name": f.name,
        "required": not f.nullable,
        "type": type_to_json(f.type),
    }
    if f.default is not None:
        out["default"] = default_to_json(f.default, f.type)
    if f.write_default is not None:
        out["write-default"] = default_to_json(f.write_default, f.type)
    if f.comment is not None:
        out["doc"] = f.comment
    return out


def type_from_json(data: Any) -> Type:
    if isinstance(data, str):
        if data in PRIMITIVES:
            return PRIMITIVES[data]
        if data.startswith("decimal(") and data.endswith(")"):
            p, s = data[len("decimal(") : -1].split(",")
            return DecimalType(int(p), int(s))
        raise ValueError(f"unknown type {data!r}")
    kind = data["type"]
    if kind == "struct":
        return StructType(tuple(field_from_json(f) for f in data["fields"]))
    if kind == "array":
        return ArrayType(
            NestedField(
                int(data["element-id"]), ELEMENT, type_from_json(data["element"]),
                not data.get("element-required", False),
            )
        )
    if kind == "map":
        return MapType(
            NestedField(int(data["key-id"]), KEY, type_from_json(data["key"]), False),
            NestedField(
                int(data["value-id"]), VALUE, type_from_json(data["value"]),
                not data.get("value-required", False),
            ),
        )
    raise ValueError(f"unknown type {kind!r}")


def field_from_json(data: dict[str, Any]) -> NestedField:
    t = type_from_json(data["type"])
    return NestedField(
        id=int(data["id"]),
        name=str(data["name"]),
        type=t,
        nullable=not data.get("required", False),
        default=default_from_json(data.get("default"), t),
        write_default=default_from_json(data.get("write-default"), t),
        comment=data.get("doc"),
    )


def schema_to_dict(schema: SchemaView) -> dict[str, Any]:
    return {
        "format-version": FORMAT_VERSION,
        "type": "struct",
        "version-id": schema.version_id,
        "max-column-id": schema.max_column_id,
        "fields": [field_to_json(f) for f in schema.fields],
    }


def schema_parts_from_dict(data: dict[str, Any]) -> SchemaParts:
    """The fields, version and max column ID of a schema document
    (:meth:`Schema.from_dict <evonb.schema.schema.Schema.from_dict>` builds the schema)."""
    try:
        version = int(data.get("format-version", FORMAT_VERSION))
        if version > FORMAT_VERSION:
            raise ValueError(
                f"schema format version {version} is newer than this evonb reads ({FORMAT_VERSION})"
            )
        return (
            tuple(field_from_json(f) for f in data["fields"]),
            str(data["version-id"]),
            int(data["max-column-id"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        # (ArithmeticError: decimal.InvalidOperation from a malformed decimal default)
        raise SchemaEvolutionError(
            f"Not a valid evonb schema document: {exc!r}",
            hint="a table's schema documents are written by evonb (Schema.to_json); one "
            "of a newer format needs a newer evonb") from None


def schema_to_json(schema: SchemaView, *, indent: int | None = None) -> str:
    return json.dumps(schema_to_dict(schema), indent=indent, ensure_ascii=False)


def schema_parts_from_json(text: str | bytes) -> SchemaParts:
    """The fields, version and max column ID of a schema document in JSON text."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SchemaEvolutionError(f"Schema JSON does not parse: {exc}") from None
    if not isinstance(data, dict):
        raise SchemaEvolutionError("Schema JSON must be an object")
    return schema_parts_from_dict(data)
