"""HTML pieces shared by the widgets and their no-frontend fallbacks.

Self-contained (inline styles only, no scripts) and escaped, like :mod:`evonb.schema.render`.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from evonb.schema.diffing import KINDS, format_value
from evonb.schema.render import display_name, type_label
from evonb.schema.schema import ROOT_ID, walk
from evonb.table.history import DELETING_ACTIONS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from evonb.schema.diffing import Change, SchemaDiff
    from evonb.schema.schema import Schema
    from evonb.table.history import Commit

FONT = "font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px;"
MONO = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;"
MUTED = "opacity: 0.65;"
CELL = "padding: 2px 8px; text-align: left; vertical-align: top; border: none;"
HEAD = CELL + " font-weight: 600; border-bottom: 1px solid rgba(128,128,128,0.5);"
KIND_COLORS = {
    "added": "rgba(40,167,69,0.35)",
    "dropped": "rgba(220,53,69,0.35)",
    "renamed": "rgba(0,123,255,0.30)",
    "retyped": "rgba(111,66,193,0.30)",
    "moved": "rgba(23,162,184,0.30)",
    "nullability": "rgba(253,126,20,0.30)",
    "default": "rgba(108,117,125,0.30)",
    "comment": "rgba(108,117,125,0.22)",
}
ROW_ADDED = "rgba(40,167,69,0.16)"
ROW_DROPPED = "rgba(220,53,69,0.16)"
ROW_CHANGED = "rgba(255,193,7,0.20)"
MARKERS = {"added": "+", "dropped": "-"}


def e(value: object) -> str:
    """Escaped text for HTML."""
    return escape(str(value), quote=True)


def badge(text: str, kind: str, title: str | None = None) -> str:
    """A small rounded label coloured by change kind."""
    style = (f"background: {KIND_COLORS.get(kind, ROW_CHANGED)}; border-radius: 8px; "
             "padding: 0 6px; margin-left: 6px; font-size: 11px; white-space: nowrap;")
    tip = f' title="{e(title)}"' if title else ""
    return f'<span class="evonb-kind evonb-kind-{e(kind)}" style="{style}"{tip}>{e(text)}</span>'


def badge_text(c: Change) -> str:
    """The kind and what it was: ``renamed (was name)``, ``retyped (was int)``."""
    if c.kind in ("added", "dropped"):
        return c.kind
    if c.kind == "moved":
        where = f" in {c.old_path.rsplit('.', 1)[0]}" if c.old_path and "." in c.old_path else ""
        return f"moved (was #{c.old}{where})"
    if c.kind == "nullability":
        return "nullability (was " + ("optional" if c.old else "required") + ")"
    if c.kind == "default":
        return f"default (was {format_value(c.old['default'])})"
    if c.kind in ("renamed", "retyped"):
        return f"{c.kind} (was {c.old})"
    return f"{c.kind} (was {format_value(c.old)})"


def _ancestors(schema: Schema, ids: set[int]) -> set[int]:
    out: set[int] = set()
    for fid in ids:
        if not schema.has_id(fid):
            continue
        parent = schema.parent_of(fid)
        while parent != ROOT_ID:
            out.add(parent)
            parent = schema.parent_of(parent)
    return out


def diff_tree_html(diff: SchemaDiff, side: str, *, only_changed: bool = False) -> str:
    """One side (``"before"`` or ``"after"``) of a diff as a tree: every field with its marker,
    ID, name, type and one badge per change kind."""
    schema = diff.before if side == "before" else diff.after
    edge = "dropped" if side == "before" else "added"
    top = {c.field_id for c in diff.changes if c.kind == edge}
    changed: dict[int, list[Change]] = {}
    for c in diff.changes:
        if c.kind not in ("added", "dropped"):
            changed.setdefault(c.field_id, []).append(c)
    keep = top | set(changed)
    keep |= _ancestors(schema, keep)
    rows = []
    inside: int | None = None  # depth of the added/dropped subtree being walked
    for info in walk(schema.fields):
        f, depth = info.field, len(info.path) - 1
        if inside is not None and depth <= inside:
            inside = None
        if f.id in top and inside is None:
            inside = depth
        if only_changed and inside is None and f.id not in keep:
            continue
        marker, bg, badges, kinds = "", "", "", []
        if inside is not None:
            marker, bg = MARKERS[edge], ROW_ADDED if edge == "added" else ROW_DROPPED
            if f.id in top:
                badges, kinds = badge(edge, edge), [edge]
        elif f.id in changed:
            marker, bg = "~", ROW_CHANGED
            kinds = [c.kind for c in changed[f.id]]
            if side == "after":
                badges = "".join(badge(badge_text(c), c.kind, str(c)) for c in changed[f.id])
        style = f"padding: 1px 8px 1px {6 + 16 * depth}px; white-space: nowrap;"
        if bg:
            style += f" background: {bg};"
        rows.append(
            f'<div class="evonb-field" style="{style}" data-field-id="{f.id}" '
            f'data-kinds="{e(" ".join(kinds))}">'
            f'<span style="{MONO} display: inline-block; width: 1.1em; font-weight: 700;">'
            f"{e(marker)}</span>"
            f'<span style="{MONO} {MUTED} margin-right: 6px;" title="field id">{f.id}</span>'
            f'<span style="font-weight: 600;">{e(display_name(f.name))}</span>'
            f'<span style="{MUTED}">: </span><span style="{MONO}">{e(type_label(f.type))}</span>'
            + ("" if f.nullable else f'<span style="{MUTED}"> not null</span>')
            + badges + "</div>"
        )
    if not rows:
        text = "no changed fields" if only_changed else "no columns"
        rows.append(f'<div style="padding: 1px 8px; {MUTED}">{text}</div>')
    return "".join(rows)


def diff_summary_html(diff: SchemaDiff, title: str | None = None) -> str:
    """``<title> · <before> → <after> · N changes`` and one chip per kind present."""
    n = len(diff.changes)
    summary = f"{n} change{'s' if n != 1 else ''}" if n else "no changes"
    chips = "".join(badge(f"{len(diff.by_kind(k))} {k}", k) for k in KINDS if diff.by_kind(k))
    head = f"<b>{e(title)}</b> · " if title else "<b>Schema diff</b> · "
    return (f'<div style="{FONT} margin-bottom: 4px;">{head}'
            f'<span style="{MONO}">{e(diff.before.version_id)}</span> → '
            f'<span style="{MONO}">{e(diff.after.version_id)}</span> · {summary}{chips}</div>')


def side_title_html(label: str, schema: Schema) -> str:
    return (f'<div style="{FONT} font-weight: 600; padding: 2px 8px; '
            f'border-bottom: 1px solid rgba(128,128,128,0.5);">{e(label)} '
            f'<span style="{MONO} {MUTED} font-weight: 400;">{e(schema.version_id)}</span></div>')


def change_list_html(diff: SchemaDiff) -> str:
    """One line per change: a kind badge, the field ID and what changed."""
    if not diff.changes:
        return f'<div style="{FONT} {MUTED} padding: 2px 8px;">no changes</div>'
    items = "".join(
        f'<li class="evonb-change" data-kind="{e(c.kind)}" data-field-id="{c.field_id}" '
        f'style="list-style: none; padding: 1px 0;">'
        f'{badge(c.kind, c.kind)} <span style="{MONO}">{c.field_id}: {e(c.describe())}</span></li>'
        for c in diff.changes
    )
    return f'<ul style="{FONT} margin: 4px 0; padding-left: 2px;">{items}</ul>'


def diff_html(diff: SchemaDiff, *, title: str | None = None, note: str = "",
              labels: tuple[str, str] = ("before", "after")) -> str:
    """The whole diff view as static HTML (the widget's fallback)."""
    line = " border-left: 1px solid rgba(128,128,128,0.35);"
    panes = "".join(
        f'<td style="{CELL} padding: 0;{line if side == "after" else ""}">'
        f"{side_title_html(label, schema)}{diff_tree_html(diff, side)}</td>"
        for side, label, schema in (("before", labels[0], diff.before),
                                    ("after", labels[1], diff.after))
    )
    return (f'<div class="evonb-diff" style="{FONT}">{diff_summary_html(diff, title)}{note}'
            f'<table style="border-collapse: collapse;"><tr>{panes}</tr></table>'
            f"{change_list_html(diff)}</div>")


def note_html(text: str, kind: str = "info") -> str:
    """A one-line banner (``kind`` is ``info``, ``ok`` or ``warn``)."""
    colors = {"info": "rgba(0,123,255,0.12)", "ok": "rgba(40,167,69,0.15)",
              "warn": "rgba(255,193,7,0.25)"}
    return (f'<div class="evonb-note evonb-note-{e(kind)}" style="{FONT} padding: 4px 8px; '
            f'margin: 4px 0; border-radius: 4px; background: {colors.get(kind, colors["info"])};">'
            f"{e(text)}</div>")


def commit_line(c: Commit) -> str:
    """``20261122101500000 · commit/upsert · schema … · +1/-0 files · 3 rows``."""
    what = c.operation if c.operation == c.action else f"{c.action}/{c.operation}"
    if c.action in DELETING_ACTIONS:  # what it deleted, not "+0/-0 files"
        return f"{c.instant} · {what} · schema {c.schema_version} · {c.effect}"
    return (f"{c.instant} · {what} · schema {c.schema_version} · "
            f"+{c.files_added}/-{c.files_removed} files · {c.rows_written} rows")


def commit_html(c: Commit) -> str:
    """A small key/value table describing one commit."""
    rows = [("instant", c.instant), ("time", c.time), ("completed", c.completed),
            ("action", c.action),
            ("operation", c.operation), ("schema version", c.schema_version)]
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
