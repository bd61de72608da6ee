"""Showing schemas and schema diffs: plain text, HTML for notebooks, and column DDL.

HTML output is self-contained (inline ``style`` attributes only, no scripts, no external CSS)
and every name, type, default and comment in it is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import re
from html import escape
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # pragma: no cover
    from evonb.schema.diffing import SchemaDiff
    from evonb.schema.schema import Schema

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
def schema_to_text(schema: Schema) -> str:
    """A tree, one field per line, indented two spaces per level::

        schema 00000000000000000 (max column id 4)
          1: id: required bigint
          3: loc: optional struct
            4: lat: required double default 0.0 (latitude)
    """
    lines = [f"schema {schema.version_id} (max column id {schema.max_column_id})"]
    lines.extend("  " * len(info.path) + field_line(info.field) for info in walk(schema.fields))
    return "\n".join(lines)


def diff_to_text(diff: SchemaDiff) -> str:
    """``SchemaDiff <before> -> <after>: N changes`` and one indented line per change."""
    head = f"SchemaDiff {diff.before.version_id} -> {diff.after.version_id}: "
    if not diff.changes:
        return head + "no changes"
    return "\n".join([head + _plural(len(diff.changes), "change")]
                     + [f"  {c}" for c in diff.changes])


# ----------------------------------------------------------------------------------------- DDL
def schema_to_ddl(schema: Schema) -> str:
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


def _badge(text: str, kind: str, title: str | None = None) -> str:
    style = (
        f"background: {_KIND_COLORS.get(kind, _CHANGED)}; border-radius: 8px; padding: 0 6px;"
        " margin-left: 6px; font-size: 11px; white-space: nowrap;"
    )
    return _span(text, style, title)


def _name_html(f: NestedField) -> str:
    style = "font-style: italic;" if f.name in (ELEMENT, KEY, VALUE) else "font-weight: 600;"
    return _span(f.name, style)


def schema_to_html(schema: Schema) -> str:
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


def _badge_text(c: Change, diff: SchemaDiff) -> str:
    """A badge naming the kind and the old value: ``renamed (was name)``."""
    if c.kind == "moved":
        old_parent = diff.before.parent_of(c.field_id)
        if old_parent == diff.after.parent_of(c.field_id):
            return f"moved (was #{c.old})"
        where = "top level" if old_parent == ROOT_ID else diff.before.path_of(old_parent)
        return f"moved (was #{c.old} in {where})"
    if c.kind == "nullability":
        return "nullability (was " + ("optional" if c.old else "required") + ")"
    if c.kind == "default":
        return f"default (was {format_value(c.old['default'])}" + (
            f", write {format_value(c.old['write_default'])})"
            if not same_value(c.old["write_default"], c.old["default"]) else ")"
        )
    if c.kind in ("renamed", "retyped"):
        return f"{c.kind} (was {c.old})"
    return f"{c.kind} (was {format_value(c.old)})"


def _tree(schema: Schema, side: str, diff: SchemaDiff) -> str:
    """One side of the diff view: every field with its marker, ID, name, type and badges."""
    top = {c.field_id for c in diff.changes if c.kind == ("added" if side == "after"
                                                            else "dropped")}
    changed: dict[int, list[Change]] = {}
    for c in diff.changes:
        if c.kind not in ("added", "dropped"):
            changed.setdefault(c.field_id, []).append(c)
    rows = []
    marked_depth: int | None = None  # depth of the added/dropped subtree being walked
    for info in walk(schema.fields):
        f, depth = info.field, len(info.path) - 1
        if marked_depth is not None and depth <= marked_depth:
            marked_depth = None
        if f.id in top and marked_depth is None:
            marked_depth = depth
        marker, bg, badges, title = " ", "", "", ""
        if marked_depth is not None:
            marker, bg = ("+", _ADDED) if side == "after" else ("-", _DROPPED)
            if f.id in top:
                kind = "added" if side == "after" else "dropped"
                badges = _badge(kind, kind)
        elif f.id in changed:
            marker, bg = "~", _CHANGED
            title = f' title="{_e("; ".join(str(c) for c in changed[f.id]))}"'
            if side == "after":
                badges = "".join(
                    _badge(_badge_text(c, diff), c.kind, str(c)) for c in changed[f.id]
                )
        style = f"padding: 1px 6px 1px {6 + 16 * depth}px; white-space: nowrap;"
        if bg:
            style += f" background: {bg};"
        rows.append(
            f'<div style="{style}" data-field-id="{f.id}"{title}>'
            + _span(marker, _MONO + " display: inline-block; width: 1.2em; font-weight: 700;")
            + _span(str(f.id), _MONO + " " + _MUTED + " margin-right: 6px;")
            + _name_html(f)
            + _span(": ", _MUTED)
            + _span(type_label(f.type), _MONO)
            + ("" if f.nullable else _span(" not null", _MUTED))
            + badges
            + "</div>"
        )
    if not rows:
        rows.append(f'<div style="padding: 1px 6px; {_MUTED}">no columns</div>')
    return "".join(rows)


def diff_to_html(diff: SchemaDiff) -> str:
    """Before and after side by side: added fields green ``+``, dropped red ``-``, other changes
    ``~`` with a badge naming the kind and the old value; then the list of changes."""
    n = len(diff.changes)
    summary = _plural(n, "change") if n else "no changes"
    chips = "".join(
        _badge(f"{len(diff.by_kind(k))} {k}", k) for k in KINDS if diff.by_kind(k)
    )
    header = (
        f'<div style="margin-bottom: 4px;"><b>SchemaDiff</b> '
        f"{_span(diff.before.version_id, _MONO)} → {_span(diff.after.version_id, _MONO)}"
        f" · {summary}{chips}</div>"
    )
    cols = "".join(
        f'<th style="{_HEAD}">{label} {_span(schema.version_id, _MONO + _MUTED)}</th>'
        for label, schema in (("before", diff.before), ("after", diff.after))
    )
    body = (
        f'<td style="{_CELL} padding: 2px 0;">{_tree(diff.before, "before", diff)}</td>'
        f'<td style="{_CELL} padding: 2px 0; border-left: 1px solid rgba(128,128,128,0.35);">'
        f'{_tree(diff.after, "after", diff)}</td>'
    )
    table = (
        f'<table style="border-collapse: collapse;"><thead><tr>{cols}</tr></thead>'
        f"<tbody><tr>{body}</tr></tbody></table>"
    )
    listing = ""
    if n:
        items = "".join(f"<li>{_span(str(c), _MONO)}</li>" for c in diff.changes)
        listing = (
            f'<details style="margin-top: 4px;"><summary>{_e(summary)}</summary>'
            f'<ul style="margin: 2px 0; padding-left: 20px;">{items}</ul></details>'
        )
    return f'<div style="{_FONT}">{header}{table}{listing}</div>'
