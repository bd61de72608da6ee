"""Rich results of the magics that are not widgets: a table's description, a table's check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import evonb.notebook.html as H

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table
    from evonb.schema.schema import Schema
    from evonb.table.check import CheckReport, Problem


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


@dataclass
class TableCheck:
    """What ``%evo check`` found: the :class:`~evonb.table.check.CheckReport` of a table (after
    a repair, with what the repair did), shown as one banner, the table's figures, and each
    problem and note with the file it concerns."""

    name: str
    report: CheckReport
    deep: bool = False
    repair: bool = False

    @property
    def ok(self) -> bool:
        return self.report.ok

    def summary(self) -> str:
        """``check t: OK, no problems`` or ``check t: 2 problems (1 repairable: ...)``."""
        how = " (every row read)" if self.deep else ""
        if self.report.ok:
            done = f", {len(self.report.repaired)} repaired" if self.report.repaired else ""
            return f"check {self.name}{how}: OK, no problems{done}"
        n = len(self.report.problems)
        fixable = sum(p.repairable for p in self.report.problems)
        more = (f" ({fixable} repairable: run %evo check {self.name} --repair)"
                if fixable and not self.repair else "")
        return f"check {self.name}{how}: {n} problem{'' if n == 1 else 's'}{more}"

    def figures(self) -> list[tuple[str, str]]:
        s = self.report.stats
        if not s:
            return []
        commits = str(s.get("commits", 0)) + (f" ({s['archived']} archived)"
                                              if s.get("archived") else "")
        return [("commits", commits), ("latest commit", s.get("latest_commit") or "-"),
                ("schema version", s.get("schema_version") or "-"),
                ("schema versions", str(s.get("schema_versions", 0))),
                ("live files", str(s.get("live_files", 0))),
                ("pending attempts", str(s.get("pending", 0)))]

    def _repr_html_(self) -> str:
        r = self.report
        parts = [H.note_html(self.summary(), "ok" if r.ok else "warn"),
                 H.kv_table(self.figures())]
        if r.found_before_repair:
            parts.append(H.section("Found before the repair", _problems_html(
                r.found_before_repair)))
        if r.repaired:
            items = "".join(f'<li style="{H.MONO}">{H.e(x)}</li>' for x in r.repaired)
            parts.append(H.section(f"Repaired ({len(r.repaired)})",
                                   f'<ul style="margin: 2px 0;">{items}</ul>'))
        if r.problems:
            parts.append(H.section("Problems", _problems_html(r.problems)))
        if r.notes:
            parts.append(H.section("Notes", _problems_html(r.notes)))
        return f'<div class="evonb-check" style="{H.FONT}">{"".join(parts)}</div>'

    def __repr__(self) -> str:
        return self.report.render()


def _problems_html(problems: list[Problem]) -> str:
    head = "".join(f'<th style="{H.HEAD}">{h}</th>'
                   for h in ("kind", "file", "what", "repairable"))
    rows = "".join(
        f'<tr><td style="{H.CELL}">{H.e(p.kind)}</td>'
        f'<td style="{H.CELL} {H.MONO}">{H.e(p.path)}</td>'
        f'<td style="{H.CELL}">{H.e(p.message)}</td>'
        f'<td style="{H.CELL}">{"yes" if p.repairable else "no"}</td></tr>'
        for p in problems)
    return (f'<table class="evonb-problems" style="{H.FONT} border-collapse: collapse;">'
            f"<tr>{head}</tr>{rows}</table>")
