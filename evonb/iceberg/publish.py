"""Iceberg metadata beside every commit, for tables with ``evonb.iceberg.enabled = 'true'``.

evonb declares :func:`publish` in the entry point group ``evonb.after_change``, so the format
layer runs it after every commit and every change of table properties in every process
(:mod:`evonb.table.after_change`). A failure to publish never fails the
evonb commit: it is recorded in ``.evo/iceberg.json`` (with the reason) and reported by
``evonb check``; the next commit, or ``python -m evonb iceberg sync <table>``, tries again and
removes the record once the metadata is published. A latest state Iceberg cannot express
(:attr:`SyncResult.blocked`) is recorded the same way.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from evonb.iceberg.sync import SyncResult, sync
from evonb.table.file_checks import first_line
from evonb.table.fileio import file_io
from evonb.table.fsutil import atomic_write_json, evo_dir
from evonb.table.names import ICEBERG_ENABLED_PROPERTY, ICEBERG_STATUS_FILE
from evonb.table.table import BaseTable, open_table

ENABLED_PROPERTY = ICEBERG_ENABLED_PROPERTY


def enabled(table: BaseTable) -> bool:
    """Whether the table publishes Iceberg metadata at every commit."""
    return table.raw_config.bool_property(ENABLED_PROPERTY)


def sync_and_record(table: BaseTable | str | os.PathLike[str]) -> SyncResult:
    """:func:`sync`, then the status record: removed when the latest state is published,
    written when it is blocked. An error is recorded and raised."""
    t = table if isinstance(table, BaseTable) else open_table(table)
    status = evo_dir(t.root) / ICEBERG_STATUS_FILE
    last = t.timeline.last_completed()
    record = {"commit": last.instant if last else None,
              "time": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")}
    try:
        result = sync(t)
    except Exception as exc:
        atomic_write_json(status, {**record, "state": "failed",
                                   "reason": f"{type(exc).__name__}: {first_line(exc)}"})
        raise
    if result.blocked:
        atomic_write_json(status, {**record, "state": "blocked", "reason": result.blocked,
                                   "metadata_file": result.metadata_file})
    else:
        file_io().delete(status)
    return result


def publish(table: BaseTable) -> None:
    """After a change: publish Iceberg metadata if the table asks for it (never raises)."""
    if not enabled(table):
        return
    try:
        sync_and_record(table)
    except Exception:  # recorded in .evo/iceberg.json, reported by evonb check
        return


__all__ = ["ENABLED_PROPERTY", "enabled", "publish", "sync_and_record"]
