"""Converting evonb schemas to and from Spark ``StructType``.

The conversions themselves live in :mod:`evonb.schema.spark_fields`, below
:class:`~evonb.schema.schema.Schema` (whose ``to_*``/``from_*`` methods use them); this module
re-exports them and adds the functions that return a ``Schema``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evonb.schema.schema import Schema
from evonb.schema.spark_fields import (
    COMMENT_KEY,
    CURRENT_DEFAULT_KEY,
    EXISTS_DEFAULT_KEY,
    FIELD_ID_KEY,
    MISSING_ID,
    NESTED_IDS_KEY,
    SCHEMA_KEY,
    assign_missing_ids,
    field_from_spark,
    field_to_spark,
    parse_sql_literal,
    schema_parts_from_spark,
    schema_to_spark,
    type_from_spark,
    type_to_spark,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import types as st


def schema_from_spark(
    struct: st.StructType, *, version_id: str | None = None, max_column_id: int | None = None
) -> Schema:
    """An evonb schema from a Spark ``StructType``.

    IDs come from ``parquet.field.id`` / ``evonb.nested.ids``; fields without one get fresh IDs
    in pre-order after the highest ID known (present, or recorded as ``max-column-id``).
    ``version_id`` and ``max_column_id`` override what ``evonb.schema`` metadata records.
    """
    return Schema(*schema_parts_from_spark(struct, version_id=version_id,
                                           max_column_id=max_column_id))


__all__ = [
    "COMMENT_KEY", "CURRENT_DEFAULT_KEY", "EXISTS_DEFAULT_KEY", "FIELD_ID_KEY", "MISSING_ID",
    "NESTED_IDS_KEY", "SCHEMA_KEY", "assign_missing_ids", "field_from_spark", "field_to_spark",
    "parse_sql_literal", "schema_from_spark", "schema_parts_from_spark", "schema_to_spark",
    "type_from_spark", "type_to_spark",
]
