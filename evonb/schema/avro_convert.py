"""Converting evonb schemas to and from Avro record schemas.

The conversions themselves live in :mod:`evonb.schema.avro_fields`, below
:class:`~evonb.schema.schema.Schema` (whose ``to_*``/``from_*`` methods use them); this module
re-exports them and adds the functions that return a ``Schema``.
"""

from __future__ import annotations

from typing import Any

from evonb.schema.avro_fields import (
    DEFAULT_ATTR,
    ELEMENT_ID,
    FIELD_ID,
    KEY_ID,
    MAX_COLUMN_ID_ATTR,
    NAME_ATTR,
    TYPE_ATTR,
    VALUE_ID,
    VERSION_ATTR,
    WRITE_DEFAULT_ATTR,
    avro_name,
    schema_parts_from_avro,
    schema_to_avro,
    type_to_avro,
)
from evonb.schema.schema import Schema


def schema_from_avro(
    avro_schema: str | dict[str, Any],
    *,
    version_id: str | None = None,
    max_column_id: int | None = None,
) -> Schema:
    """An evonb schema from an Avro record schema (JSON text or dict).

    IDs come from ``field-id``/``element-id``/``key-id``/``value-id`` attributes when present;
    other fields get fresh IDs in pre-order (from 1 when there are none). Names and namespaces of
    records are ignored; ``doc`` becomes the comment. ``version_id`` and ``max_column_id`` default
    to what our own :func:`schema_to_avro` recorded, else the initial version and the highest ID.
    """
    return Schema(*schema_parts_from_avro(avro_schema, version_id=version_id,
                                          max_column_id=max_column_id))


__all__ = [
    "DEFAULT_ATTR", "ELEMENT_ID", "FIELD_ID", "KEY_ID", "MAX_COLUMN_ID_ATTR", "NAME_ATTR",
    "TYPE_ATTR", "VALUE_ID", "VERSION_ATTR", "WRITE_DEFAULT_ATTR", "avro_name", "schema_from_avro",
    "schema_parts_from_avro", "schema_to_avro", "type_to_avro",
]
