"""The stable JSON form of a schema (format version 1, documented in ``docs/format.md``).

The conversions themselves live in :mod:`evonb.schema.json_fields`, below
:class:`~evonb.schema.schema.Schema` (whose ``to_*``/``from_*`` methods use them); this module
re-exports them and adds the functions that return a ``Schema``.
"""

from __future__ import annotations

from typing import Any

from evonb.schema.json_fields import (
    FORMAT_VERSION,
    field_from_json,
    field_to_json,
    schema_parts_from_dict,
    schema_parts_from_json,
    schema_to_dict,
    schema_to_json,
    type_from_json,
    type_to_json,
)
from evonb.schema.schema import Schema


def schema_from_dict(data: dict[str, Any]) -> Schema:
    """A schema from its JSON document (a dict)."""
    return Schema(*schema_parts_from_dict(data))


def schema_from_json(text: str | bytes) -> Schema:
    """A schema from its JSON text."""
    return Schema(*schema_parts_from_json(text))


__all__ = [
    "FORMAT_VERSION", "field_from_json", "field_to_json", "schema_from_dict", "schema_from_json",
    "schema_parts_from_dict", "schema_parts_from_json", "schema_to_dict", "schema_to_json",
    "type_from_json", "type_to_json",
]
