"""Iceberg metadata beside evonb tables: Iceberg clients read the same data files.

:func:`iceberg_schema` is the Iceberg view of one schema version (evonb's field IDs, mapped
types, the name mapping of physical names); :func:`sync` publishes Iceberg metadata for a
table's retained history under ``<table>/metadata/``. See ``docs/iceberg.md``.
"""

from evonb.iceberg.schema import IcebergExportError, IcebergSchema, iceberg_schema
from evonb.iceberg.sync import SyncResult, snapshot_id, sync

__all__ = ["IcebergExportError", "IcebergSchema", "SyncResult", "iceberg_schema",
           "snapshot_id", "sync"]
