"""Iceberg schemas (format version 2) of evonb schema versions, and the name mapping.

evonb's field IDs are Iceberg field IDs: every struct field, list element, map key and map
value keeps its ID. Data files name their columns by *physical* names (:mod:`evonb.table.layout`),
so the table property ``schema.name-mapping.default`` maps each field ID to every physical name
it ever had; readers resolve columns of files through it (the hidden commit-time column is in no
schema and in no mapping, so it is never read).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evonb.errors import EvoError
from evonb.schema.paths import walk
from evonb.schema.schema import Schema
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    WIDE_DECIMALS,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
    Type,
)
from evonb.table.layout import META_COMMIT_TIME, Layout

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
HIDDEN_FIELD_ID = 2147483446
"""The field ID the name mapping gives the hidden commit-time column of data files: in no
schema (so never read), just below the IDs Iceberg reserves for metadata columns. Readers such
as pyiceberg need every column of a file to be mapped."""

_PRIMITIVES: dict[Type, str] = {
    BOOLEAN: "boolean",
    TINYINT: "int",
    SMALLINT: "int",
    INT: "int",
    BIGINT: "long",
    FLOAT: "float",
    DOUBLE: "double",
    STRING: "string",
    BINARY: "binary",
    DATE: "date",
    TIMESTAMP: "timestamptz",
    TIMESTAMP_NTZ: "timestamp",
}


class IcebergExportError(EvoError):
    """A table state that Iceberg metadata cannot express exactly (it is never exported
    wrong)."""


class UncompactedLogsError(IcebergExportError):
    """A merge-on-read table whose latest state has log blocks not yet compacted: Iceberg
    metadata cannot express them, so its Iceberg view advances at each compaction."""


def iceberg_type(t: Type, column: str = "?", *, defaults: bool = False
                 ) -> str | dict[str, Any]:
    """The Iceberg JSON type of an evonb type (``defaults``: struct members carry their
    defaults, format version 3); :class:`IcebergExportError` naming ``column`` when Iceberg
    has no such type."""
    if isinstance(t, DecimalType):
        return f"decimal({t.precision}, {t.scale})"
    if isinstance(t, StructType):
        return {"type": "struct",
                "fields": [_field(f, f"{column}.{f.name}", defaults) for f in t.fields]}
    if isinstance(t, ArrayType):
        e = t.element
        return {"type": "list", "element-id": e.id,
                "element": iceberg_type(e.type, f"{column}.element", defaults=defaults),
                "element-required": not e.nullable}
    if isinstance(t, MapType):
        k, v = t.key, t.value
        return {"type": "map", "key-id": k.id,
                "key": iceberg_type(k.type, f"{column}.key", defaults=defaults),
                "value-id": v.id,
                "value": iceberg_type(v.type, f"{column}.value", defaults=defaults),
                "value-required": not v.nullable}
    name = _PRIMITIVES.get(t)
    if name is None:
        raise IcebergExportError(
            f"Column {column!r} has type {t}, which Iceberg cannot express",
            hint="change the column to a type Iceberg has, or keep the table out of Iceberg")
    return name


def _field(f: NestedField, column: str, defaults: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "required": not f.nullable,
                           "type": iceberg_type(f.type, column, defaults=defaults)}
    if defaults and f.type.is_primitive:
        if f.default is not None:
            out["initial-default"] = default_json(out["type"], f.default)
        if f.write_default is not None:
            out["write-default"] = default_json(out["type"], f.write_default)
    if f.comment:
        out["doc"] = f.comment
    return out


@dataclass(frozen=True)
class IcebergSchema:
    """An evonb schema version as Iceberg sees it: ``schema`` is the spec's schema JSON object
    and ``name_mapping`` the JSON list of ``schema.name-mapping.default`` for its files."""

    schema: dict[str, Any]
    name_mapping: list[dict[str, Any]]
    last_column_id: int

    def properties(self) -> dict[str, str]:
        """The table properties a reader needs for this schema's files."""
        return {NAME_MAPPING_PROPERTY: json.dumps(self.name_mapping, separators=(",", ":"))}


def default_json(kind: str, value: Any) -> Any:
    """A default ``value`` of Iceberg primitive type ``kind`` in Iceberg's single-value JSON
    form (written by pyiceberg's own conversion)."""
    from pyiceberg.conversions import to_json
    from pyiceberg.types import NestedField as IceField

    ice_type = IceField.model_validate(
        {"id": 1, "name": "v", "type": kind, "required": False}).field_type
    if kind.startswith("decimal("):
        value = Decimal(value).quantize(Decimal(1).scaleb(-ice_type.scale),
                                        context=WIDE_DECIMALS)
    return to_json(ice_type, value)


def has_defaults(schema: Schema) -> bool:
    """Whether a field of ``schema`` has a read or write default (Iceberg format version 3
    carries them)."""
    return any(i.field.default is not None or i.field.write_default is not None
               for i in walk(schema.fields))


def schema_json(schema: Schema, schema_id: int = 0, *, defaults: bool = False
                ) -> dict[str, Any]:
    """The Iceberg schema JSON object of ``schema`` (evonb's field IDs everywhere;
    ``defaults``: with ``initial-default`` and ``write-default``, format version 3)."""
    return {
        "type": "struct",
        "schema-id": schema_id,
        "fields": [_field(f, f.name, defaults) for f in schema.fields],
    }


def iceberg_schema(schema: Schema, layout: Layout, *, schema_id: int = 0) -> IcebergSchema:
    """The Iceberg view of one schema version: its schema JSON, the name mapping of its
    physical names, and ``last-column-id`` (the version's max column ID).
    :class:`IcebergExportError` names a column whose type Iceberg cannot express."""
    return IcebergSchema(schema_json(schema, schema_id), name_mapping([(schema, layout)]),
                         schema.max_column_id)


def name_mapping(versions: Iterable[tuple[Schema, Layout]]) -> list[dict[str, Any]]:
    """The Iceberg name mapping (JSON list) of field ID -> physical names, merged over
    ``versions`` (a field lists every physical name it had; a physical name is never given
    to two fields at one level, so the merge is unambiguous)."""
    root: dict[int, dict[str, Any]] = {
        HIDDEN_FIELD_ID: {"names": [META_COMMIT_TIME], "fields": {}}}
    for schema, layout in versions:
        _merge(root, schema.fields, layout)
    return _emit(root)


def _merge(level: dict[int, dict[str, Any]], fields: Iterable[NestedField], layout: Layout,
           fixed: str | None = None) -> None:
    for f in fields:
        node = level.setdefault(f.id, {"names": [], "fields": {}})
        name = fixed if fixed is not None else layout.physical.get(f.id, f.name)
        if name not in node["names"]:
            node["names"].append(name)
        t = f.type
        if isinstance(t, StructType):
            _merge(node["fields"], t.fields, layout)
        elif isinstance(t, ArrayType):
            _merge(node["fields"], [t.element], layout, "element")
        elif isinstance(t, MapType):
            _merge(node["fields"], [t.key], layout, "key")
            _merge(node["fields"], [t.value], layout, "value")


def _emit(level: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for field_id, node in sorted(level.items()):
        entry: dict[str, Any] = {"field-id": field_id, "names": node["names"]}
        if node["fields"]:
            entry["fields"] = _emit(node["fields"])
        out.append(entry)
    return out


_PROMOTIONS = {("int", "long"), ("float", "double")}


def promotable(old: Any, new: Any) -> bool:
    """Whether Iceberg reads a primitive of type ``old`` (JSON) as ``new``: equal, or an
    Iceberg type promotion (int -> long, float -> double, decimal precision widening)."""
    if old == new:
        return True
    if isinstance(old, str) and isinstance(new, str):
        if (old, new) in _PROMOTIONS:
            return True
        if old.startswith("decimal(") and new.startswith("decimal("):
            p1, s1 = (int(x) for x in old[8:-1].split(","))
            p2, s2 = (int(x) for x in new[8:-1].split(","))
            return s1 == s2 and p2 >= p1
    return False


__all__ = ["HIDDEN_FIELD_ID", "NAME_MAPPING_PROPERTY", "IcebergExportError", "IcebergSchema",
           "default_json", "has_defaults", "iceberg_schema", "iceberg_type", "name_mapping",
           "promotable", "schema_json"]
