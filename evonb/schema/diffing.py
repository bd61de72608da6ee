"""What changed between two schema versions, compared by field ID.

Names and positions are not identity: a field is the same field in both versions when it has the
same ID, whatever it is called and wherever it sits. :func:`diff` reports one :class:`Change` per
fact, in a stable order, and :class:`SchemaDiff` displays them as text (``repr``) and as a
before/after HTML view in notebooks.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from evonb.schema.changes import _KIND_ORDER, KINDS, Change, _json_safe, format_value, same_value
from evonb.schema.defaults import default_to_json
from evonb.schema.paths import ROOT_ID, FieldInfo, walk
from evonb.schema.render import diff_to_html, diff_to_text
from evonb.schema.types import NestedField, Type
from evonb.schema.views import SchemaView


@dataclass(frozen=True)
class SchemaDiff:
    """The changes from ``before`` to ``after``; falsy when there are none."""

    before: SchemaView
    after: SchemaView
    changes: tuple[Change, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changes)

    def __len__(self) -> int:
        return len(self.changes)

    def __iter__(self) -> Iterator[Change]:
        return iter(self.changes)

    def __getitem__(self, index: int) -> Change:
        return self.changes[index]

    @property
    def kinds(self) -> list[str]:
        """The distinct kinds present, in report order (``["added", "renamed"]``)."""
        present = {c.kind for c in self.changes}
        return [k for k in KINDS if k in present]

    def by_kind(self, kind: str) -> tuple[Change, ...]:
        """The changes of one kind, in report order."""
        if kind not in _KIND_ORDER:
            raise ValueError(f"unknown change kind {kind!r}; expected one of {KINDS}")
        return tuple(c for c in self.changes if c.kind == kind)

    def for_field(self, field_id: int) -> tuple[Change, ...]:
        """The changes to one field ID."""
        return tuple(c for c in self.changes if c.field_id == field_id)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict: the two version ids and the list of changes.

        Default values are written as in the schema JSON format (``docs/format.md``).
        """
        changes = []
        for c in self.changes:
            d = c.to_dict()
            if c.kind == "default":
                old_t = self.before.field_by_id(c.field_id).type
                new_t = self.after.field_by_id(c.field_id).type
                d["old"] = {k: _default_json(v, old_t) for k, v in c.old.items()}
                d["new"] = {k: _default_json(v, new_t) for k, v in c.new.items()}
            changes.append(d)
        return {
            "before_version": self.before.version_id,
            "after_version": self.after.version_id,
            "changes": changes,
        }

    def __repr__(self) -> str:
        return diff_to_text(self)

    def __str__(self) -> str:
        return repr(self)

    def _repr_html_(self) -> str:
        return diff_to_html(self)


def diff(before: SchemaView, after: SchemaView, *, moved: Iterable[int] = ()) -> SchemaDiff:
    """The changes from ``before`` to ``after``, matching fields by ID.

    ``moved`` names the field IDs the change is known to move (the ``move`` operations of the
    update that made ``after``): where the orders leave a choice of which fields moved (two
    neighbours swapped: ``[a, n] -> [n, a]`` is ``a`` after ``n`` or ``n`` first), they are
    the ones reported.

    Only the top-most added or dropped field is reported (not its children, nor the children
    that come or go with a field retyped to another kind of type). A field whose parent changed
    is ``moved``; within one parent, the fields present in both versions that are outside a
    longest common subsequence of the two orders are ``moved``, so adding or dropping never
    reports moves and moving one column reports one move. Changes are ordered by kind
    (:data:`KINDS`), then by pre-order position in ``after`` (``before`` for dropped fields).
    """
    old = {i.field.id: i for i in walk(before.fields)}
    new = {i.field.id: i for i in walk(after.fields)}
    old_pos = {fid: n for n, fid in enumerate(old)}
    new_pos = {fid: n for n, fid in enumerate(new)}
    # Fields whose kind of type changed (int -> array, struct -> map): their retype covers
    # what appeared or disappeared under them.
    reshaped = {
        fid for fid, info in new.items()
        if fid in old and _retyped(old[fid].field.type, info.field.type)
    }
    found: list[Change] = []
    for fid, info in new.items():
        if fid not in old:
            parent = info.parent_id
            if parent == ROOT_ID or (parent in old and parent not in reshaped):
                found.append(Change("added", fid, None, info.dotted, None, str(info.field.type)))
            continue
        found.extend(_field_changes(old[fid], info))
    for fid, info in old.items():
        parent = info.parent_id
        if fid not in new and (parent == ROOT_ID or (parent in new and parent not in reshaped)):
            found.append(Change("dropped", fid, info.dotted, None, str(info.field.type), None))
    found.extend(_moves(before, after, old, new, frozenset(moved)))

    def key(c: Change) -> tuple[int, int]:
        pos = old_pos[c.field_id] if c.kind == "dropped" else new_pos[c.field_id]
        return (_KIND_ORDER[c.kind], pos)

    return SchemaDiff(before, after, tuple(sorted(found, key=key)))


def _field_changes(a: FieldInfo, b: FieldInfo) -> Iterator[Change]:
    """Everything but moves that changed on one field present in both versions."""
    fa, fb = a.field, b.field
    fid, op, np = fa.id, a.dotted, b.dotted
    if fa.name != fb.name:
        yield Change("renamed", fid, op, np, fa.name, fb.name)
    if _retyped(fa.type, fb.type):
        yield Change("retyped", fid, op, np, str(fa.type), str(fb.type))
    if fa.nullable != fb.nullable:
        yield Change("nullability", fid, op, np, fa.nullable, fb.nullable)
    if not (same_value(fa.default, fb.default) and same_value(fa.write_default, fb.write_default)):
        yield Change("default", fid, op, np, _defaults(fa), _defaults(fb))
    if (fa.comment or None) != (fb.comment or None):
        yield Change("comment", fid, op, np, fa.comment, fb.comment)


def _retyped(a: Type, b: Type) -> bool:
    """A type change on the field itself: a different primitive, or a different kind of type.

    Two structs (arrays, maps) are never a retype of their field: their children carry the
    changes, under their own IDs.
    """
    if a.is_primitive or b.is_primitive:
        return a != b
    return type(a) is not type(b)


def _moves(before: SchemaView, after: SchemaView, old: dict[int, FieldInfo],
           new: dict[int, FieldInfo], moved: frozenset[int] = frozenset()
           ) -> Iterator[Change]:
    """Fields whose parent changed, and fields outside the LCS of each parent's order (of
    equally long ones, the one that leaves ``moved`` out, when there is one)."""
    for fid, info in new.items():
        if fid in old and old[fid].parent_id != info.parent_id:
            yield _move(fid, old[fid], info, before, after)
    for parent in [ROOT_ID, *new]:
        if parent != ROOT_ID and parent not in old:
            continue
        after_kids = [f.id for f in after.children_of(parent)]
        kept = {
            fid for fid in after_kids if fid in old and old[fid].parent_id == parent
        }
        if len(kept) < 2:
            continue
        old_order = [f.id for f in before.children_of(parent) if f.id in kept]
        new_order = [fid for fid in after_kids if fid in kept]
        stay = _lcs_of_permutation(old_order, new_order)
        if moved.intersection(new_order):
            stay = _prefer_moved(old_order, new_order, moved, stay)
        for fid in new_order:
            if fid not in stay:
                yield _move(fid, old[fid], new[fid], before, after)


def _prefer_moved(old_order: list[int], new_order: list[int], moved: frozenset[int],
                  stay: set[int]) -> set[int]:
    """The fields that stay in place when the ``moved`` ones are taken as those that moved:
    every other field (if they kept their order) and each moved one still in its place; else
    ``stay`` (also when that explains the change with fewer moves)."""

    def same_order(keep: set[int]) -> bool:
        return [f for f in old_order if f in keep] == [f for f in new_order if f in keep]

    keep = {fid for fid in new_order if fid not in moved}
    if not same_order(keep):
        return stay
    for fid in new_order:
        if fid in moved and same_order(keep | {fid}):
            keep.add(fid)
    return keep if len(keep) >= len(stay) else stay


def _move(fid: int, a: FieldInfo, b: FieldInfo, before: SchemaView, after: SchemaView) -> Change:
    old_index = [f.id for f in before.children_of(a.parent_id)].index(fid)
    new_index = [f.id for f in after.children_of(b.parent_id)].index(fid)
    return Change("moved", fid, a.dotted, b.dotted, old_index, new_index)


def _lcs_of_permutation(old_order: list[int], new_order: list[int]) -> set[int]:
    """A longest common subsequence of two orderings of the same IDs, in O(n log n).

    It is a longest increasing run of old positions taken in the new order. On ties the field
    that comes earlier in the new order is the one reported moved (``[a, b] -> [b, a]`` moves
    ``b``, as ``move_first(b)`` would).
    """
    where = {fid: i for i, fid in enumerate(old_order)}
    seq = [where[fid] for fid in new_order]
    tails: list[int] = []  # smallest tail value of an increasing run of each length
    tail_at: list[int] = []  # index into seq of that tail
    prev = [-1] * len(seq)
    for i, v in enumerate(seq):
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
            tail_at.append(i)
        else:
            tails[k] = v
            tail_at[k] = i
        prev[i] = tail_at[k - 1] if k else -1
    out: set[int] = set()
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        out.add(new_order[i])
        i = prev[i]
    return out


def _defaults(f: NestedField) -> dict[str, Any]:
    return {"default": f.default, "write_default": f.write_default}


def _default_json(value: Any, t: Type) -> Any:
    try:
        return default_to_json(value, t)
    except (TypeError, ValueError, AttributeError):
        return _json_safe(value)


__all__ = ["KINDS", "Change", "SchemaDiff", "diff", "format_value", "same_value"]
