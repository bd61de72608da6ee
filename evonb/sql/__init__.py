"""Spark-style DDL: types, column lists and ALTER/CREATE TABLE statements.

``parse_type`` reads a type, ``parse_columns_schema`` a column list, ``parse_ddl`` statements;
``apply_ddl``/``ddl_to_update`` turn ALTER statements into one schema change. Syntax errors are
:class:`~evonb.errors.DDLSyntaxError` with the line, column and token they are about.
"""

from evonb.sql.apply import apply_ddl, ddl_to_update
from evonb.sql.parser import (
    DDLDefaultError,
    parse_alter,
    parse_columns_schema,
    parse_ddl,
    parse_type,
)
from evonb.sql.statements import (
    AddColumns,
    AlterColumn,
    AlterStatement,
    ColumnPosition,
    ColumnSpec,
    CreateTable,
    DropColumns,
    PropertyStatement,
    RenameColumn,
    SetProperties,
    Statement,
    UnsetProperties,
)

__all__ = [
    "AddColumns",
    "AlterColumn",
    "AlterStatement",
    "ColumnPosition",
    "ColumnSpec",
    "CreateTable",
    "DDLDefaultError",
    "DropColumns",
    "PropertyStatement",
    "RenameColumn",
    "SetProperties",
    "Statement",
    "UnsetProperties",
    "apply_ddl",
    "ddl_to_update",
    "parse_alter",
    "parse_columns_schema",
    "parse_ddl",
    "parse_type",
]
