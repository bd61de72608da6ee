"""Iceberg metadata beside evonb tables: Iceberg clients read the same data files.

:func:`iceberg_schema` is the Iceberg view of one schema version (evonb's field IDs, mapped
types, the name mapping of physical names); :func:`sync` publishes Iceberg metadata for a
table's retained history under ``<table>/metadata/``; with the table property
``evonb.iceberg.enabled = 'true'`` that happens after every commit (:mod:`evonb.iceberg.publish`,
declared in the ``evonb.after_change`` entry points); :func:`iceberg_status` says how far the
published view is from the table. See ``docs/iceberg.md``.
"""

from evonb.iceberg.publish import ENABLED_PROPERTY, enabled, publish, sync_and_record
from evonb.iceberg.schema import (
    IcebergExportError,
    IcebergSchema,
    UncompactedLogsError,
    iceberg_schema,
)
from evonb.iceberg.status import IcebergStatus, iceberg_status
from evonb.iceberg.sync import SyncResult, snapshot_id, sync

__all__ = [
    "ENABLED_PROPERTY",
    "IcebergExportError",
    "IcebergSchema",
    "IcebergStatus",
    "SyncResult",
    "UncompactedLogsError",
    "enabled",
    "iceberg_schema",
    "iceberg_status",
    "publish",
    "snapshot_id",
    "sync",
    "sync_and_record",
]
