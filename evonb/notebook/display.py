"""Rich results of the magics that are not widgets: a table's description."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import evonb.notebook.html as H

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table
    from evonb.schema.schema import Schema


@dataclass
class TableInfo:
    """A table's settings and its schema (the latest, or as of a commit)."""

    table: Table
    schema: Schema
    title: str
    as_of: str | None = None

    def facts(self) -> list[tuple[str, str]]:
        t = self.table
        last = t.timeline.last_completed()
        rows = [("path", t.path), ("type", t.table_type),
                ("record key", ", ".join(t.primary_key) or "-"),
                ("precombine", t.precombine or "-"),
                ("partitioned by", ", ".join(t.partition_by) or "-"),
                ("commits", str(len(t.timeline.completed()))),
                ("last commit", last.instant if last else "-")]
        if self.as_of:
            rows.append(("as of", self.as_of))
        name = t.version_name(self.schema.version_id)
        rows.append(("schema version", self.schema.version_id if name == self.schema.version_id
                     else f"{name} ({self.schema.version_id})"))
        return rows

    def _repr_html_(self) -> str:
        return (f'<div class="evonb-describe" style="{H.FONT}"><b>{H.e(self.title)}</b>'
                f"{H.kv_table(self.facts())}{self.schema._repr_html_()}</div>")

    def __repr__(self) -> str:
        facts = "\n".join(f"  {k}: {v}" for k, v in self.facts())
        return f"{self.title}\n{facts}\n{self.schema}"
