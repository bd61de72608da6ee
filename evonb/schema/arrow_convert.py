"""Converting evonb schemas to and from pyarrow schemas.

The conversions themselves live in :mod:`evonb.schema.arrow_fields`, below
:class:`~evonb.schema.schema.Schema` (whose ``to_*``/``from_*`` methods use them); this module
re-exports them and adds the functions that return a ``Schema``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evonb.schema.arrow_fields import (
    COMMENT_KEY,
    DEFAULT_KEY,
    FIELD_ID_KEY,
    MAX_COLUMN_ID_KEY,
    VERSION_KEY,
    WRITE_DEFAULT_KEY,
    field_from_arrow,
    field_to_arrow,
    schema_parts_from_arrow,
    schema_to_arrow,
    type_from_arrow,
    type_to_arrow,
)
from evonb.schema.schema import Schema

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def schema_from_arrow(
    schema: pa.Schema, *, version_id: str | None = None, max_column_id: int | None = None
) -> Schema:
    """An evonb schema from a pyarrow schema.

    Fields without ``PARQUET:field_id`` get fresh IDs in pre-order after the highest ID known.
    The version and max column ID come from the keyword arguments, else the schema metadata.
    """
    return Schema(*schema_parts_from_arrow(schema, version_id=version_id,
                                           max_column_id=max_column_id))


__all__ = [
    "COMMENT_KEY", "DEFAULT_KEY", "FIELD_ID_KEY", "MAX_COLUMN_ID_KEY", "VERSION_KEY",
    "WRITE_DEFAULT_KEY", "field_from_arrow", "field_to_arrow", "schema_from_arrow",
    "schema_parts_from_arrow", "schema_to_arrow", "type_from_arrow", "type_to_arrow",
]
