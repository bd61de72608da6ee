"""Column lineage: the life of every field ID through an ordered list of schema versions.

:func:`lineage` compares each schema version with the one before it, by field ID (as
:func:`~evonb.schema.diffing.diff` does), and records for every column ever (nested struct
members, list elements, map keys and values included) what happened to it in each version:

========== ======================================================================
``born``     the field ID first appears (with the whole subtree of a new field)
``renamed``  ``old -> new`` name
``retyped``  ``old -> new`` type (a widening, or a change of kind of type)
``moved``    another position among its siblings, or another parent
``default``  a read or write default given, changed or removed
``required`` made required (NOT NULL); ``optional``: made nullable
``doc``      its comment set, changed or removed
``dropped``  the field ID is gone
``restored`` a field ID that was dropped comes back (a reverted schema)
``present``  already there in the first version listed, when older versions are gone
========== ======================================================================

It is pure: no table, no Spark. :class:`Lineage` shows as text (``str``, IPython's pretty
printer) and as an HTML grid (``_repr_html_``): one row per field ID, nested fields indented
under their parent, one column per schema version (``v0``, ``v1``, ...), each cell coloured by
what happened there, with the badge colours of the diff renderer. Every name is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evonb.schema.changes import Change, format_value, same_value
from evonb.schema.diffing import diff
from evonb.schema.paths import ROOT_ID, FieldInfo, walk
from evonb.schema.render import _badge, _e, _span, display_name, type_label

if TYPE_CHECKING:  # pragma: no cover
    from evonb.schema.schema import Schema

EVENT_KINDS: tuple[str, ...] = (
    "present", "born", "restored", "renamed", "retyped", "moved", "default", "required",
    "optional", "doc", "dropped",
)
"""Every event kind, in the order a cell lists them."""

_ORDER = {k: i for i, k in enumerate(EVENT_KINDS)}
_COLOR_OF = {"present": "comment", "born": "added", "restored": "added", "renamed": "renamed",
             "retyped": "retyped", "moved": "moved", "default": "default",
             "required": "nullability", "optional": "nullability", "doc": "comment",
             "dropped": "dropped"}
"""The diff renderer's badge colour (by change kind) each event kind is drawn with."""


def version_name(ordinal: int) -> str:
    """The readable name of the schema version at ``ordinal`` (0 the first): ``v0``."""
    return f"v{ordinal}"


@dataclass(frozen=True)
class Event:
    """What happened to one field ID in one schema version: ``kind`` (:data:`EVENT_KINDS`)
    and ``detail`` (``rider -> passenger``, ``int -> bigint``, the type of a new field)."""

    kind: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}" if self.detail else self.kind


@dataclass(frozen=True)
class ColumnLineage:
    """One field ID through the versions: its last known name, path, type and parent, its
    depth in the tree, and per version whether it existed and what happened to it."""

    field_id: int
    name: str
    path: str
    type: str
    parent_id: int
    depth: int
    present: tuple[bool, ...]
    events: tuple[tuple[Event, ...], ...]

    @property
    def dropped(self) -> bool:
        """Whether the field is absent from the last version."""
        return not self.present[-1]

    def history(self, names: Sequence[str]) -> list[tuple[str, Event]]:
        """``(version name, event)`` pairs, oldest first (``names``: the versions' names)."""
        return [(names[i], ev) for i, evs in enumerate(self.events) for ev in evs]


@dataclass(frozen=True)
class Lineage:
    """The life of every column of a table: ``columns`` in tree order (each parent before its
    children) against the schema versions ``names`` (``v0``, ...) with ``version_ids``."""

    names: tuple[str, ...]
    version_ids: tuple[str, ...]
    columns: tuple[ColumnLineage, ...]
    table_name: str = ""

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[ColumnLineage]:
        return iter(self.columns)

    def column(self, key: int | str) -> ColumnLineage:
        """A column by field ID, or by its last known dotted path (case-insensitive)."""
        for c in self.columns:
            if c.field_id == key or (isinstance(key, str) and c.path.lower() == key.lower()):
                return c
        raise KeyError(key)

    def events(self) -> list[tuple[str, int, str, str]]:
        """Every event as ``(version name, field ID, kind, detail)``, by version then in
        tree order."""
        return [(self.names[i], c.field_id, ev.kind, ev.detail)
                for i in range(len(self.names)) for c in self.columns for ev in c.events[i]]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form: the versions and, per column, its events by version name."""
        return {
            "versions": [{"name": n, "version_id": v}
                         for n, v in zip(self.names, self.version_ids, strict=True)],
            "columns": [{
                "field_id": c.field_id, "name": c.name, "path": c.path, "type": c.type,
                "parent_id": c.parent_id, "dropped": c.dropped,
                "events": [{"version": n, "kind": ev.kind, "detail": ev.detail}
                           for n, ev in c.history(self.names)],
            } for c in self.columns],
        }

    # --------------------------------------------------------------- display
    def title(self) -> str:
        span = f"{self.names[0]} .. {self.names[-1]}" if self.names else "none"
        count = len(self.names)
        return (f"Lineage of {self.table_name or 'table'}: {len(self.columns)} column"
                f"{'' if len(self.columns) == 1 else 's'}, {count} schema version"
                f"{'' if count == 1 else 's'} ({span})")

    def __str__(self) -> str:
        lines = [self.title()]
        lines += [f"  {n} = {v}" for n, v in zip(self.names, self.version_ids, strict=True)]
        for c in self.columns:
            head = "  " * (c.depth + 1) + f"{c.field_id}: {display_name(c.name)}"
            life = "; ".join(f"{n} {ev}" for n, ev in c.history(self.names))
            lines.append(f"{head:<28} {_printable(life)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        return lineage_to_html(self)


def _printable(text: str) -> str:
    return text if text.isprintable() else "".join(
        ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


# ------------------------------------------------------------------------------ computation
def lineage(schemas: Sequence[Schema], *, names: Sequence[str] | None = None,
            moved: Mapping[str, Iterable[int]] | None = None, complete: bool = True,
            table_name: str = "") -> Lineage:
    """The lineage of ``schemas`` (oldest first). ``names`` are the versions' readable names
    (default ``v0``, ``v1``, ...); ``moved`` the field IDs each version's change is known to
    move, by version id (see :func:`~evonb.schema.diffing.diff`); ``complete`` False says
    older versions are missing, so the fields of the first one are ``present``, not ``born``."""
    names = tuple(names) if names is not None else tuple(
        version_name(i) for i in range(len(schemas)))
    if len(names) != len(schemas):
        raise ValueError(f"{len(names)} names for {len(schemas)} schema versions")
    moved = moved or {}
    n = len(schemas)
    events: dict[int, list[list[Event]]] = {}
    present: dict[int, list[bool]] = {}
    last: dict[int, FieldInfo] = {}  # the last version's info of each field ID
    seen: set[int] = set()

    def note(fid: int, i: int, event: Event) -> None:
        events.setdefault(fid, [[] for _ in range(n)])[i].append(event)

    previous: Schema | None = None
    for i, schema in enumerate(schemas):
        infos = {info.field.id: info for info in walk(schema.fields)}
        for fid, info in infos.items():
            present.setdefault(fid, [False] * n)[i] = True
            last[fid] = info
            if previous is None:
                note(fid, i, Event("born" if complete else "present",
                                   type_label(info.field.type)))
            elif not previous.has_id(fid):
                note(fid, i, Event("restored" if fid in seen else "born",
                                   type_label(info.field.type)))
        if previous is not None:
            for info in walk(previous.fields):
                if info.field.id not in infos:
                    note(info.field.id, i, Event("dropped"))
            change = diff(previous, schema, moved=moved.get(schema.version_id, ()))
            for c in change.changes:
                if c.kind not in ("added", "dropped"):
                    note(c.field_id, i, _event(c, previous, schema))
        seen.update(infos)
        previous = schema
    columns = _tree_order(last)
    out = []
    for fid, depth in columns:
        info = last[fid]
        per_version = events.get(fid, [[] for _ in range(n)])
        out.append(ColumnLineage(
            field_id=fid, name=info.field.name, path=info.dotted,
            type=type_label(info.field.type), parent_id=info.parent_id, depth=depth,
            present=tuple(present[fid]),
            events=tuple(tuple(sorted(evs, key=lambda e: _ORDER[e.kind]))
                         for evs in per_version)))
    return Lineage(names, tuple(s.version_id for s in schemas), tuple(out),
                   table_name=table_name)


def _event(c: Change, before: Schema, after: Schema) -> Event:
    """The event of one change to a field present in both versions."""
    if c.kind == "renamed":
        return Event("renamed", f"{c.old} -> {c.new}")
    if c.kind == "retyped":
        return Event("retyped", f"{c.old} -> {c.new}")
    if c.kind == "moved":
        if before.parent_of(c.field_id) != after.parent_of(c.field_id):
            return Event("moved", f"{c.old_path} -> {c.new_path}")
        return Event("moved", f"#{c.old} -> #{c.new}")
    if c.kind == "nullability":
        return Event("optional" if c.new else "required")
    if c.kind == "default":
        parts = [f"{label} {format_value(c.old[key])} -> {format_value(c.new[key])}"
                 for key, label in (("default", "read"), ("write_default", "write"))
                 if not same_value(c.old[key], c.new[key])]
        return Event("default", ", ".join(parts))
    return Event("doc", f"{format_value(c.old)} -> {format_value(c.new)}")


def _tree_order(last: Mapping[int, FieldInfo]) -> list[tuple[int, int]]:
    """``(field ID, depth)`` of every field, each under its last known parent, siblings by
    field ID (the order they were born in)."""
    children: dict[int, list[int]] = {}
    for fid, info in last.items():
        parent = info.parent_id if info.parent_id in last else ROOT_ID
        children.setdefault(parent, []).append(fid)
    out: list[tuple[int, int]] = []
    stack = [(fid, 0) for fid in sorted(children.get(ROOT_ID, ()), reverse=True)]
    while stack:
        fid, depth = stack.pop()
        out.append((fid, depth))
        stack.extend((kid, depth + 1) for kid in sorted(children.get(fid, ()), reverse=True))
    return out


# ------------------------------------------------------------------------------------- HTML
_FONT = "font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px;"
_MONO = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;"
_MUTED = "opacity: 0.6;"
_CELL = "padding: 2px 6px; text-align: left; vertical-align: top; border: none;"
_HEAD = _CELL + " font-weight: 600; border-bottom: 1px solid rgba(128,128,128,0.5);"
_ALIVE = "background: rgba(128,128,128,0.08);"


def lineage_to_html(lin: Lineage) -> str:
    """The grid: a row per field ID (indented under its parent), a column per version; a
    cell holds a badge per event, coloured by kind, with the detail as its tooltip; the
    versions a field lived through are shaded."""
    head = (f'<th style="{_HEAD}">id</th><th style="{_HEAD}">column</th>' + "".join(
        f'<th style="{_HEAD}" title="{_e(v)}">{_e(n)}'
        f'<div style="{_MONO} {_MUTED} font-weight: 400; font-size: 10px;">{_e(v)}</div></th>'
        for n, v in zip(lin.names, lin.version_ids, strict=True)))
    rows = []
    for c in lin.columns:
        name_style = "text-decoration: line-through; opacity: 0.7;" if c.dropped else ""
        name = _span(c.name, name_style + " font-weight: 600;", c.path)
        cells = "".join(
            f'<td class="evonb-lineage-cell" data-version="{_e(lin.names[i])}" '
            f'data-kinds="{_e(" ".join(ev.kind for ev in evs))}" '
            f'style="{_CELL} {_ALIVE if c.present[i] else ""}">'
            + "".join(_event_badge(ev) for ev in evs) + "</td>"
            for i, evs in enumerate(c.events))
        rows.append(
            f'<tr class="evonb-lineage-row" data-field-id="{c.field_id}">'
            f'<td style="{_CELL} {_MONO} {_MUTED}">{c.field_id}</td>'
            f'<td style="{_CELL} padding-left: {6 + 16 * c.depth}px; white-space: nowrap;">'
            f"{name}{_span(': ' + c.type, _MONO + ' ' + _MUTED)}</td>{cells}</tr>")
    if not rows:
        rows.append(f'<tr><td colspan="{len(lin.names) + 2}" style="{_CELL} {_MUTED}">'
                    "no columns</td></tr>")
    legend = "".join(_badge(k, _COLOR_OF[k]) for k in EVENT_KINDS if k != "present")
    return (f'<div class="evonb-lineage" style="{_FONT}"><div style="margin-bottom: 4px;">'
            f"<b>{_e(lin.title())}</b></div>"
            f'<table style="border-collapse: collapse;"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
            f'<div style="{_MUTED} margin-top: 4px;">{legend}</div></div>')


def _event_badge(ev: Event) -> str:
    text = ev.kind if ev.kind in ("born", "present", "restored", "dropped") or not ev.detail \
        else f"{ev.kind} {ev.detail}"
    return _badge(text, _COLOR_OF[ev.kind], str(ev))


__all__ = ["EVENT_KINDS", "ColumnLineage", "Event", "Lineage", "lineage", "lineage_to_html",
           "version_name"]
