"""The pure id-schema core: types with IDs, schemas, changes, type rules, diffs, conversions.

Nothing here imports pyspark at module level; conversions import their engine when called.
"""

from evonb.schema.diffing import Change, SchemaDiff, diff
from evonb.schema.evolution import SchemaUpdate
from evonb.schema.schema import INITIAL_VERSION, ROOT_ID, FieldInfo, Schema, format_path, parse_path
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
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    Type,
)

__all__ = [
    "BIGINT", "BINARY", "BOOLEAN", "DATE", "DOUBLE", "FLOAT", "INITIAL_VERSION", "INT",
    "ROOT_ID", "SMALLINT", "STRING", "TIMESTAMP", "TIMESTAMP_NTZ", "TINYINT",
    "ArrayType", "Change", "DecimalType", "FieldInfo", "MapType", "NestedField",
    "PrimitiveType", "Schema", "SchemaDiff", "SchemaUpdate", "StructType", "Type",
    "diff", "format_path", "parse_path",
]
