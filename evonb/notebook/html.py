"""HTML pieces shared by the widgets and their no-frontend fallbacks.

Self-contained (inline styles only, no scripts) and escaped, like :mod:`evonb.schema.render`,
which renders schema diffs (their trees, badges and change list) for the widgets too.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from evonb.table.history import DELETING_ACTIONS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from evonb.table.history import Commit

FONT = "font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px;"
MONO = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;"
MUTED = "opacity: 0.65;"
CELL = "padding: 2px 8px; text-align: left; vertical-align: top; border: none;"
HEAD = CELL + " font-weight: 600; border-bottom: 1px solid rgba(128,128,128,0.5);"


def e(value: object) -> str:
    """Escaped text for HTML."""
    return escape(str(value), quote=True)


def note_html(text: str, kind: str = "info") -> str:
    """A one-line banner (``kind`` is ``info``, ``ok`` or ``warn``)."""
    colors = {"info": "rgba(0,123,255,0.12)", "ok": "rgba(40,167,69,0.15)",
              "warn": "rgba(255,193,7,0.25)"}
    return (f'<div class="evonb-note evonb-note-{e(kind)}" style="{FONT} padding: 4px 8px; '
            f'margin: 4px 0; border-radius: 4px; background: {colors.get(kind, colors["info"])};">'
            f"{e(text)}</div>")


def commit_line(c: Commit) -> str:
    """``20261122101500000 · commit/upsert · schema v1 (…) · +1/-0 files · 3 rows``."""
    what = c.operation if c.operation == c.action else f"{c.action}/{c.operation}"
    if c.action in DELETING_ACTIONS:  # what it deleted, not "+0/-0 files"
        return f"{c.instant} · {what} · schema {c.schema_label} · {c.effect}"
    return (f"{c.instant} · {what} · schema {c.schema_label} · "
            f"+{c.files_added}/-{c.files_removed} files · {c.rows_written} rows")


def commit_html(c: Commit) -> str:
    """A small key/value table describing one commit."""
    rows = [("instant", c.instant), ("time", c.time), ("completed", c.completed),
            ("action", c.action),
            ("operation", c.operation), ("schema version", c.schema_label)]
    if c.action in DELETING_ACTIONS:
        rows.append(("effect", c.effect))
    else:
        rows += [("files", f"+{c.files_added} / -{c.files_removed}"),
                 ("rows written", c.rows_written)]
    body = "".join(f'<tr><td style="{CELL} {MUTED}">{e(k)}</td>'
                   f'<td style="{CELL} {MONO}">{e(v)}</td></tr>' for k, v in rows)
    return f'<table class="evonb-commit" style="{FONT} border-collapse: collapse;">{body}</table>'


def frame_html(frame: pd.DataFrame, caption: str, *, more: bool = False) -> str:
    """A pandas frame as an escaped HTML table with a caption (``more``: rows were cut)."""
    table = frame.to_html(index=False, escape=True, na_rep="NULL", border=0,
                          classes="evonb-preview")
    extra = " (more rows not shown)" if more else ""
    return (f'<div style="{FONT}"><div style="{MUTED} padding: 2px 0;">{e(caption)}{e(extra)}'
            f"</div>{table}</div>")


def section(title: str, body: str) -> str:
    return (f'<div style="{FONT} margin-top: 6px;"><div style="font-weight: 600; '
            f'padding: 2px 0;">{e(title)}</div>{body}</div>')


def kv_table(rows: list[tuple[str, Any]], *, raw: frozenset[str] = frozenset()) -> str:
    """A two-column table; values of keys in ``raw`` are HTML already."""
    body = "".join(
        f'<tr><td style="{CELL} {MUTED}">{e(k)}</td><td style="{CELL}">'
        f"{v if k in raw else e(v)}</td></tr>" for k, v in rows
    )
    return f'<table style="{FONT} border-collapse: collapse;">{body}</table>'
