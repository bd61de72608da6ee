"""``iceberg_status``: how far the Iceberg view of a table is from the table, without writing.

It replays the timeline as :func:`evonb.iceberg.sync.sync` would, reads the published
``v<N>.metadata.json`` and the record a failed or stopped automatic publication left, and says
one of:

- ``off``: the table does not publish Iceberg metadata (``evonb.iceberg.enabled`` is not
  ``'true'``) and none was published by hand;
- ``unpublished``: it should, but nothing is published yet;
- ``current``: the published metadata shows the table's latest state;
- ``behind``: a sync would publish more (a commit since, or a publication that failed);
- ``blocked``: the latest state cannot be expressed in Iceberg (a column whose type change is
  no Iceberg promotion, a required column older files lack, a cleaned state); the reason
  names the column and the way out (``t.rewrite()``);
- ``uncompacted``: a merge-on-read table has log blocks Iceberg cannot express; its Iceberg
  view advances at the next compaction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from evonb.errors import MetadataCorruptError
from evonb.iceberg.publish import enabled
from evonb.iceberg.schema import IcebergExportError, UncompactedLogsError
from evonb.iceberg.sync import (
    METADATA_DIR,
    Plan,
    Versions,
    iceberg_location,
    plan_publication,
    published_metadata,
)
from evonb.table.fsutil import evo_dir, read_json
from evonb.table.names import ICEBERG_STATUS_FILE
from evonb.table.table import BaseTable, open_table

State = Literal["off", "unpublished", "current", "behind", "blocked", "uncompacted"]


@dataclass(frozen=True)
class IcebergStatus:
    """The Iceberg view of a table against the table (see the module docstring)."""

    table: str
    enabled: bool
    state: State
    metadata_version: int | None
    metadata_file: str | None
    published_commit: str | None
    """The evonb commit whose data the current Iceberg snapshot shows (None: no snapshot)."""
    latest_commit: str | None
    reason: str | None = None
    hint: str | None = None
    failure: str | None = None
    """The reason the last automatic publication failed, when it did."""

    @property
    def ok(self) -> bool:
        """Whether Iceberg clients see the table's latest state (or publication is off)."""
        return self.state in ("off", "current")

    def __str__(self) -> str:
        head = f"Iceberg view of {self.table}: {self.state}"
        lines = [head]
        if self.metadata_file:
            lines.append(f"  metadata: v{self.metadata_version} ({self.metadata_file})")
        if self.published_commit or self.latest_commit:
            lines.append(f"  published commit: {self.published_commit or '-'}; "
                         f"latest commit: {self.latest_commit or '-'}")
        if self.reason:
            lines.append(f"  why: {self.reason}")
        if self.failure:
            lines.append(f"  last publication failed: {self.failure}")
        if self.hint:
            lines.append(f"  way out: {self.hint}")
        return "\n".join(lines)


def iceberg_status(table: BaseTable | str | os.PathLike[str]) -> IcebergStatus:
    """The Iceberg view of ``table`` against the table; reads only."""
    t = table if isinstance(table, BaseTable) else open_table(table)
    is_on = enabled(t)
    last = t.timeline.last_completed()
    latest = last.instant if last else None
    previous = published_metadata(t.root / METADATA_DIR)
    version = previous[0] if previous else None
    meta_file = (iceberg_location(t.root / METADATA_DIR / f"v{version}.metadata.json")
                 if previous else None)
    body = previous[1] if previous else {}
    current_snap = body.get("current-snapshot-id")
    shown = next((s.get("summary", {}).get("evonb.instant") for s in body.get("snapshots", [])
                  if s.get("snapshot-id") == current_snap), None)
    failure = _failure(t) if is_on else None

    def status(state: State, reason: str | None = None, hint: str | None = None
               ) -> IcebergStatus:
        return IcebergStatus(t.name, is_on, state, version, meta_file, shown, latest,
                             reason, hint, failure)

    if not is_on and previous is None:
        return status("off", hint="set the table property evonb.iceberg.enabled = 'true' "
                      "(or run `python -m evonb iceberg sync <table>` once)")
    sync_hint = "run `python -m evonb iceberg sync <table>`"
    try:
        versions = Versions(t)
        plan = plan_publication(t, versions)
    except IcebergExportError as exc:
        return status("uncompacted" if isinstance(exc, UncompactedLogsError) else "blocked",
                      exc.message, exc.hint)
    if previous is None:
        return status("unpublished", "no Iceberg metadata is published yet", sync_hint)
    if _shows(plan, versions, body) and failure is None:
        if plan.blocked is not None:
            return status("blocked", plan.blocked.message, plan.blocked.hint)
        return status("current")
    return status("behind", "the published metadata does not show the latest expressible "
                  "state", sync_hint)


def _shows(plan: Plan, versions: Versions, body: dict) -> bool:
    """Whether the published metadata shows the plan's last snapshot and current schema."""
    want_snap = plan.snapshots[-1].snapshot_id if plan.snapshots else None
    for snap in plan.snapshots:  # schema IDs are given in this order, as sync gives them
        versions.schema_id(snap.schema_version)
    want_schema = versions.schema_id(plan.current)
    return (body.get("current-snapshot-id") == want_snap
            and body.get("current-schema-id") == want_schema
            and len(body.get("snapshots") or []) == len(plan.snapshots))


def _failure(t: BaseTable) -> str | None:
    """The reason recorded by a failed automatic publication (None if none failed)."""
    try:
        record = read_json(evo_dir(t.root) / ICEBERG_STATUS_FILE)
    except (FileNotFoundError, MetadataCorruptError):
        return None
    if isinstance(record, dict) and record.get("state") == "failed":
        return str(record.get("reason", "no reason recorded"))
    return None


__all__ = ["IcebergStatus", "iceberg_status"]
