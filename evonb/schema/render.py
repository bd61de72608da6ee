"""Showing schemas and schema diffs: plain text, HTML for notebooks, and column DDL.

This is the one renderer of schema diffs: their text form, the badge each change gets, the
marks of the trees and the change list, for ``SchemaDiff`` and for the notebook widgets alike.

HTML output is self-contained (inline ``style`` attributes only, no scripts, no external CSS)
and every name, type, default and comment in it is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

from evonb.schema.changes import KINDS, Change, format_value, same_value
from evonb.schema.defaults import sql_literal
from evonb.schema.paths import ROOT_ID, format_path, walk
from evonb.schema.types import (
    ELEMENT,
    KEY,
    STRING,
    VALUE,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
)
from evonb.schema.views import DiffView, SchemaView

# ------------------------------------------------------------------------------------ helpers
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset(
    {
        "all", "and", "any", "as", "authorization", "both", "case", "cast", "check", "collate",
        "column", "comment", "constraint", "create", "cross", "current_date", "current_time",
        "current_timestamp", "current_user", "default", "distinct", "else", "end", "except",
        "false", "fetch", "for", "foreign", "from", "full", "grant", "group", "having", "in",
        "inner", "intersect", "into", "is", "join", "leading", "left", "natural", "not", "null",
        "offset", "on", "only", "or", "order", "outer", "overlaps", "primary", "references",
        "right", "select", "session_user", "some", "table", "then", "time", "to", "trailing",
        "true", "union", "unique", "unknown", "user", "using", "when", "where", "with",
    }
)


def quote_identifier(name: str) -> str:
    """``name`` as a SQL identifier: plain ASCII identifiers as they are, others backquoted."""
    if _PLAIN.match(name) and name.lower() not in _RESERVED:
        return name
    return backquote(name)


def backquote(name: str) -> str:
    """``name`` always backquoted (a backquote inside doubled): for generated Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def display_name(name: str) -> str:
    """A name for text output: as it is, or backquoted when it has spaces, ``:`` or the like."""
    if name and all(ch.isalnum() or ch == "_" for ch in name):
        return name
    return "`" + _printable(name.replace("`", "``")) + "`"


def _printable(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\x00``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def type_label(t: Type) -> str:
    """The type as shown next to a field: ``struct``/``array``/``map`` for nested types (their
    children are shown as fields of their own), the full type string for primitives."""
    if isinstance(t, StructType):
        return "struct"
    if isinstance(t, ArrayType):
        return "array"
    if isinstance(t, MapType):
        return "map"
    return str(t)


def field_line(f: NestedField) -> str:
    """``4: lat: required double default 0.0 (comment)``."""
    text = f"{f.id}: {display_name(f.name)}: {'optional' if f.nullable else 'required'} "
    text += type_label(f.type)
    if f.default is not None:
        text += f" default {format_value(f.default)}"
    if f.write_default is not None and not same_value(f.write_default, f.default):
        text += f" write-default {format_value(f.write_default)}"
    if f.comment:
        text += f" ({_printable(f.comment)})"
    return text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --------------------------------------------------------------------------------- text forms
def schema_to_text(schema: SchemaView) -> str:
    """A tree, one field per line, indented two spaces per level::

        schema 00000000000000000 (max column id 4)
          1: id: required bigint
          3: loc: optional struct
            4: lat: required double default 0.0 (latitude)
    """
    lines = [f"schema {schema.version_id} (max column id {schema.max_column_id})"]
    lines.extend("  " * len(info.path) + field_line(info.field) for info in walk(schema.fields))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- DDL
def schema_to_ddl(schema: SchemaView) -> str:
    """Column DDL: ``id bigint NOT NULL, name string DEFAULT 'x' COMMENT 'c', `odd name` int``.

    DDL has room for one default per column, so ``DEFAULT`` is the *write* default (what new rows
    that omit the column get); the read default of rows written before the column existed is not
    expressible. Field IDs, defaults of nested fields and the nullability of array elements and
    map values are not expressible either; nested struct members keep ``NOT NULL`` and
    ``COMMENT``.
    """
    return ", ".join(column_ddl(f) for f in schema.fields)


def column_ddl(f: NestedField) -> str:
    """One top-level column: ``name type [NOT NULL] [DEFAULT lit] [COMMENT 'text']``."""
    parts = [quote_identifier(f.name), type_ddl(f.type)]
    if not f.nullable:
        parts.append("NOT NULL")
    if f.write_default is not None:
        parts.append("DEFAULT " + _literal(f.write_default, f.type))
    if f.comment:
        parts.append("COMMENT " + _literal(f.comment, STRING))
    return " ".join(parts)


def type_ddl(t: Type) -> str:
    """A type in DDL: ``struct<a:int NOT NULL,`b c`:string>``, ``array<int>``, ``map<k,v>``."""
    if isinstance(t, StructType):
        members = []
        for f in t.fields:
            member = f"{quote_identifier(f.name)}:{type_ddl(f.type)}"
            if not f.nullable:
                member += " NOT NULL"
            if f.comment:
                member += " COMMENT " + _literal(f.comment, STRING)
            members.append(member)
        return "struct<" + ",".join(members) + ">"
    if isinstance(t, ArrayType):
        return f"array<{type_ddl(t.element.type)}>"
    if isinstance(t, MapType):
        return f"map<{type_ddl(t.key.type)},{type_ddl(t.value.type)}>"
    return str(t)


def _literal(value: object, t: Type) -> str:
    """:func:`sql_literal`, with line breaks and tabs in strings written as escapes."""
    text = sql_literal(value, t)
    if t is STRING:
        text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return text


# ---------------------------------------------------------------------------------------- HTML
_FONT = "font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px;"
_MONO = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;"
_MUTED = "opacity: 0.6;"
_CELL = "padding: 2px 8px; text-align: left; vertical-align: top; border: none;"
_HEAD = _CELL + " font-weight: 600; border-bottom: 1px solid rgba(128,128,128,0.5);"
_ADDED = "rgba(40,167,69,0.18)"
_DROPPED = "rgba(220,53,69,0.18)"
_CHANGED = "rgba(255,193,7,0.22)"
_KIND_COLORS = {
    "added": "rgba(40,167,69,0.35)",
    "dropped": "rgba(220,53,69,0.35)",
    "renamed": "rgba(0,123,255,0.30)",
    "retyped": "rgba(111,66,193,0.30)",
    "moved": "rgba(23,162,184,0.30)",
    "nullability": "rgba(253,126,20,0.30)",
    "default": "rgba(108,117,125,0.30)",
    "comment": "rgba(108,117,125,0.22)",
}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _span(text: str, style: str = "", title: str | None = None) -> str:
    """An escaped ``<span>``; ``text`` is plain text."""
    attrs = f' style="{_e(style)}"' if style else ""
    if title:
        attrs += f' title="{_e(title)}"'
    return f"<span{attrs}>{_e(text)}</span>"


def _name_html(f: NestedField) -> str:
    style = "font-style: italic;" if f.name in (ELEMENT, KEY, VALUE) else "font-weight: 600;"
    return _span(f.name, style)


def schema_to_html(schema: SchemaView) -> str:
    """A compact table: ID, path (indented by depth), type, nullability, defaults, comment."""
    rows = []
    for info in walk(schema.fields):
        f = info.field
        depth = len(info.path) - 1
        parent = format_path(info.path[:-1])
        path = (_span(parent + ".", _MUTED) if parent else "") + _name_html(f)
        default = "" if f.default is None else _e(format_value(f.default))
        if f.write_default is not None and not same_value(f.write_default, f.default):
            default += (" " if default else "") + _span(
                f"write: {format_value(f.write_default)}", _MUTED
            )
        rows.append(
            "<tr>"
            f'<td style="{_CELL} {_MONO} {_MUTED}">{f.id}</td>'
            f'<td style="{_CELL} padding-left: {8 + 16 * depth}px;">{path}</td>'
            f'<td style="{_CELL} {_MONO}">{_e(type_label(f.type))}</td>'
            f'<td style="{_CELL}">{"optional" if f.nullable else "<b>required</b>"}</td>'
            f'<td style="{_CELL} {_MONO}">{default}</td>'
            f'<td style="{_CELL}">{_e(f.comment or "")}</td>'
            "</tr>"
        )
    if not rows:
        rows.append(f'<tr><td colspan="6" style="{_CELL} {_MUTED}">no columns</td></tr>')
    caption = (
        f"schema {_e(schema.version_id)} · {_plural(len(schema.fields), 'column')}"
        f" · max column id {schema.max_column_id}"
    )
    head = "".join(
        f'<th style="{_HEAD}">{h}</th>'
        for h in ("id", "path", "type", "nullability", "default", "comment")
    )
    return (
        f'<div style="{_FONT}">'
        f'<table style="border-collapse: collapse;">'
        f'<caption style="text-align: left; padding: 2px 8px; {_MUTED}">{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


# --------------------------------------------------------------------------------------- diffs
# The one renderer of schema diffs: the text form (``repr``), and the HTML pieces that
# ``SchemaDiff._repr_html_``, the notebook's diff widget and its timeline are made of.
MARKERS: dict[str, str] = {"added": "+", "dropped": "-", "changed": "~", "same": " "}
"""The mark in front of a field of a diff tree, by the field's state."""

_ROW_COLORS = {"added": _ADDED, "dropped": _DROPPED, "changed": _CHANGED}


def badge_text(c: Change, diff: DiffView) -> str:
    """What a field's badge says about one change: the kind and the old value
    (``renamed (was name)``, ``moved (was #0 in loc)``); ``added`` and ``dropped`` alone."""
    if c.kind in ("added", "dropped"):
        return c.kind
    if c.kind == "moved":
        old_parent = diff.before.parent_of(c.field_id)
        if old_parent == diff.after.parent_of(c.field_id):
            return f"moved (was #{c.old})"
        where = "top level" if old_parent == ROOT_ID else diff.before.path_of(old_parent)
        return f"moved (was #{c.old} in {where})"
    if c.kind == "nullability":
        return "nullability (was " + ("optional" if c.old else "required") + ")"
    if c.kind == "default":
        text = f"default (was {format_value(c.old['default'])}"
        if not same_value(c.old["write_default"], c.old["default"]):
            text += f", write-default {format_value(c.old['write_default'])}"
        return text + ")"
    if c.kind in ("renamed", "retyped"):
        return f"{c.kind} (was {c.old})"
    return f"{c.kind} (was {format_value(c.old)})"


def diff_summary(diff: DiffView) -> str:
    """``N changes`` (``1 change``), or ``no changes``."""
    return _plural(len(diff.changes), "change") if diff.changes else "no changes"


def diff_to_text(diff: DiffView) -> str:
    """``SchemaDiff <before> -> <after>: N changes`` and one indented line per change. A
    preview's changes have no version of their own yet: its after side reads ``(not
    committed)``."""
    before, after = diff.before.version_id, diff.after.version_id
    if after == before and diff.changes:
        after = "(not committed)"
    head = f"SchemaDiff {before} -> {after}: "
    return "\n".join([head + diff_summary(diff)] + [f"  {c}" for c in diff.changes])


@dataclass(frozen=True)
class DiffRow:
    """One field of one side of a diff tree.

    ``state`` is ``added``/``dropped`` for the fields of an added (dropped) subtree,
    ``changed`` for a field with other changes, else ``same``. ``changes`` are the field's
    changes (its own ``added``/``dropped`` at the top of such a subtree); ``badges`` pairs
    those shown on this side with their :func:`badge_text`.
    """

    field: NestedField
    depth: int
    state: str
    changes: tuple[Change, ...] = ()
    badges: tuple[tuple[Change, str], ...] = ()

    @property
    def marker(self) -> str:
        return MARKERS[self.state]


def diff_rows(diff: DiffView, side: str, *, only_changed: bool = False) -> list[DiffRow]:
    """The fields of one side (``"before"`` or ``"after"``) in tree order with their marks
    and badges: ``dropped`` on the before side; ``added`` and the other changes, with their
    old values, on the after side. ``only_changed`` leaves out unchanged fields that hold no
    changed one."""
    if side not in ("before", "after"):
        raise ValueError(f"side must be 'before' or 'after', not {side!r}")
    schema = diff.after if side == "after" else diff.before
    edge = "added" if side == "after" else "dropped"
    top = {c.field_id: c for c in diff.changes if c.kind == edge}
    changed: dict[int, list[Change]] = {}
    for c in diff.changes:
        if c.kind not in ("added", "dropped"):
            changed.setdefault(c.field_id, []).append(c)
    keep = _with_ancestors(schema, set(top) | set(changed))
    rows = []
    inside: int | None = None  # depth of the added/dropped subtree being walked
    for info in walk(schema.fields):
        f, depth = info.field, len(info.path) - 1
        if inside is not None and depth <= inside:
            inside = None
        if f.id in top and inside is None:
            inside = depth
        if f.id in changed:  # present on both sides, even inside a new or dropped struct
            ours = tuple(changed[f.id])
            badges = tuple((c, badge_text(c, diff)) for c in ours) if side == "after" else ()
            rows.append(DiffRow(f, depth, "changed", ours, badges))
        elif inside is not None:
            ours = (top[f.id],) if f.id in top else ()
            rows.append(DiffRow(f, depth, edge, ours,
                                tuple((c, badge_text(c, diff)) for c in ours)))
        elif not only_changed or f.id in keep:
            rows.append(DiffRow(f, depth, "same"))
    return rows


def _with_ancestors(schema: SchemaView, ids: set[int]) -> set[int]:
    out = set(ids)
    for fid in ids:
        parent = schema.parent_of(fid)
        while parent != ROOT_ID:
            out.add(parent)
            parent = schema.parent_of(parent)
    return out


def _badge(text: str, kind: str, title: str | None = None) -> str:
    """A small rounded label coloured by change kind, classed ``evonb-kind-<kind>``."""
    style = (
        f"background: {_KIND_COLORS.get(kind, _CHANGED)}; border-radius: 8px; padding: 0 6px;"
        " margin-left: 6px; font-size: 11px; white-space: nowrap;"
    )
    tip = f' title="{_e(title)}"' if title else ""
    return (f'<span class="evonb-kind evonb-kind-{_e(kind)}" style="{style}"{tip}>'
            f"{_e(text)}</span>")


def diff_tree_html(diff: DiffView, side: str, *, only_changed: bool = False) -> str:
    """One side of the diff view (:func:`diff_rows`): each field a ``div.evonb-field`` with
    its marker, ID, name, type and badges, and ``data-field-id``/``data-kinds``."""
    rows = []
    for row in diff_rows(diff, side, only_changed=only_changed):
        f = row.field
        style = f"padding: 1px 8px 1px {6 + 16 * row.depth}px; white-space: nowrap;"
        if row.state in _ROW_COLORS:
            style += f" background: {_ROW_COLORS[row.state]};"
        title = ""
        if row.state == "changed":
            title = f' title="{_e("; ".join(str(c) for c in row.changes))}"'
        kinds = " ".join(c.kind for c in row.changes)
        rows.append(
            f'<div class="evonb-field" style="{style}" data-field-id="{f.id}"'
            f' data-kinds="{_e(kinds)}"{title}>'
            + _span(row.marker, _MONO + " display: inline-block; width: 1.2em; font-weight: 700;")
            + _span(str(f.id), _MONO + " " + _MUTED + " margin-right: 6px;", "field id")
            + _name_html(f)
            + _span(": ", _MUTED)
            + _span(type_label(f.type), _MONO)
            + ("" if f.nullable else _span(" not null", _MUTED))
            + "".join(_badge(text, c.kind, str(c)) for c, text in row.badges)
            + "</div>"
        )
    if not rows:
        text = "no changed fields" if only_changed else "no columns"
        rows.append(f'<div style="padding: 1px 8px; {_MUTED}">{text}</div>')
    return "".join(rows)


def diff_summary_html(diff: DiffView, title: str | None = None) -> str:
    """``<title> · <before> → <after> · N changes`` and one chip per kind present."""
    chips = "".join(
        _badge(f"{len(diff.by_kind(k))} {k}", k) for k in KINDS if diff.by_kind(k)
    )
    return (
        f'<div style="{_FONT} margin-bottom: 4px;"><b>{_e(title or "Schema diff")}</b> · '
        f"{_span(diff.before.version_id, _MONO)} → {_span(diff.after.version_id, _MONO)}"
        f" · {_e(diff_summary(diff))}{chips}</div>"
    )


def diff_side_title_html(label: str, schema: SchemaView) -> str:
    """The heading of one side of the diff view: ``before 2024...``."""
    return (
        f'<div style="{_FONT} font-weight: 600; padding: 2px 8px; '
        f'border-bottom: 1px solid rgba(128,128,128,0.5);">{_e(label)} '
        + _span(schema.version_id, f"{_MONO} {_MUTED} font-weight: 400;") + "</div>"
    )


def change_list_html(diff: DiffView) -> str:
    """The changes, as :func:`diff_to_text` lists them: a kind badge, the field ID and what
    changed, one ``li.evonb-change`` each."""
    if not diff.changes:
        return f'<div style="{_FONT} {_MUTED} padding: 2px 8px;">no changes</div>'
    items = "".join(
        f'<li class="evonb-change" data-kind="{_e(c.kind)}" data-field-id="{c.field_id}" '
        f'style="list-style: none; padding: 1px 0;">{_badge(c.kind, c.kind)} '
        + _span(_printable(f"{c.field_id}: {c.describe()}"), _MONO) + "</li>"
        for c in diff.changes
    )
    return f'<ul style="{_FONT} margin: 4px 0; padding-left: 2px;">{items}</ul>'


def diff_to_html(diff: DiffView, *, title: str | None = None, note: str = "",
                 labels: tuple[str, str] = ("before", "after")) -> str:
    """The diff view: the summary, ``note`` (HTML, already escaped), before and after side by
    side as trees (added fields green ``+``, dropped red ``-``, other changes ``~`` with a
    badge per change naming the old value), then the list of changes."""
    line = " border-left: 1px solid rgba(128,128,128,0.35);"
    panes = "".join(
        f'<td style="{_CELL} padding: 0;{line if side == "after" else ""}">'
        f"{diff_side_title_html(label, schema)}{diff_tree_html(diff, side)}</td>"
        for side, label, schema in (("before", labels[0], diff.before),
                                    ("after", labels[1], diff.after))
    )
    return (
        f'<div class="evonb-diff" style="{_FONT}">{diff_summary_html(diff, title)}{note}'
        f'<table style="border-collapse: collapse;"><tr>{panes}</tr></table>'
        f"{change_list_html(diff)}</div>"
    )
