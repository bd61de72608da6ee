"""evonb: tables with full, ID-based schema evolution on Apache Spark, and a Jupyter toolkit.

The schema core (:mod:`evonb.schema`) and the DDL parser (:mod:`evonb.sql`) import without
Spark; the table engine imports pyspark when a table is first used.
"""

from __future__ import annotations

from typing import Any

from evonb.errors import (
    ColumnNotFoundError,
    CommitNotFoundError,
    ConflictError,
    CorruptFileError,
    DataFileError,
    DataFileMissingError,
    DataValidationError,
    DDLSyntaxError,
    EvoError,
    InvalidArgumentError,
    InvalidDefaultError,
    MetadataCorruptError,
    SchemaEvolutionError,
    SQLStatementError,
    TableExistsError,
    TableLocationError,
    TableNameError,
    TableNotFoundError,
    UnknownPluginError,
    UnsupportedStatementError,
    UnsupportedTableError,
    WriteSchemaError,
)

__version__ = "0.1.0"

_LAZY = {
    "create_table": "evonb.api",
    "open_table": "evonb.api",
    "convert": "evonb.api",
    "Table": "evonb.api",
    "session": "evonb.spark.session",
    "sql": "evonb.sql",
    "schema": "evonb.schema",
}


def __getattr__(name: str) -> Any:
    """Import the engine lazily, so ``import evonb`` stays cheap and Spark-free."""
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name])
        value = module if name in ("sql", "schema") else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'evonb' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext evonb``: register the ``%evo`` magics."""
    from evonb.notebook.magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext evonb``: remove the ``%evo`` magics."""
    from evonb.notebook.magics import unload_ipython_extension as _unload

    _unload(ipython)


__all__ = [
    "ColumnNotFoundError",
    "CommitNotFoundError",
    "ConflictError",
    "CorruptFileError",
    "DDLSyntaxError",
    "DataFileError",
    "DataFileMissingError",
    "DataValidationError",
    "EvoError",
    "InvalidArgumentError",
    "InvalidDefaultError",
    "MetadataCorruptError",
    "SQLStatementError",
    "SchemaEvolutionError",
    "TableExistsError",
    "TableLocationError",
    "TableNameError",
    "TableNotFoundError",
    "UnknownPluginError",
    "UnsupportedStatementError",
    "UnsupportedTableError",
    "WriteSchemaError",
    "__version__",
    "convert",
    "create_table",
    "load_ipython_extension",
    "open_table",
    "session",
    "unload_ipython_extension",
]
