"""Property tests of ``SchemaUpdate`` over random schemas and random (valid or not) changes.

- IDs stay unique and are never reused: after every applied update all IDs are unique,
  ``max_column_id`` never decreases, the new IDs are exactly ``old max + 1 ...``, and an ID that
  disappeared never comes back.
- A rejected call raises an :class:`EvoError` (nothing else) and leaves the update as it was:
  ``apply()`` gives the same schema (or the same error) and the staged operations are the same.
- Every schema an update produces round-trips through JSON.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evonb.errors import EvoError
from evonb.schema import ROOT_ID, Schema, SchemaUpdate, diff
from evonb.schema.promotion import can_change_type
from evonb.schema.types import ArrayType, MapType, StructType
from evonb.sql import parse_type
from tests.schema.strategies import schemas

NEW_NAMES = ["a", "B", "zz", "x y", "d.e", "Ünï", "element", "key", "value", "name", "tick`s"]
TYPES = [
    "int", "bigint", "smallint", "string", "double", "float", "decimal(10,2)", "decimal(38,4)",
    "date", "timestamp_ntz", "boolean", "binary", "struct<p:int,q:string>",
    "array<struct<r:int>>", "map<string,struct<s:int>>", "array<int>", "not a type",
]
VALUES: list[Any] = [
    None, 0, 1, -5, 300, 10**20, 1.5, "x", "7", "2020-01-02", "1.25", True,
    b"\x00", dt.date(2021, 3, 4), decimal.Decimal("12.5"), float("inf"),
]
BOGUS = [("nope",), ("nope", "x"), ("element",), ("key",)]

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _holders(s: Schema) -> list[tuple[str, ...]]:
    """Paths that columns could be added under (with a few that cannot take any)."""
    out: list[tuple[str, ...]] = [()]
    for fid in s.field_ids():
        t = s.field_by_id(fid).type
        if isinstance(t, StructType | ArrayType | MapType):
            out.append(s.info(fid).path)
    return out


@st.composite
def operations(draw: st.DrawFn, s: Schema) -> tuple[str, tuple, dict]:
    """One random SchemaUpdate call ``(method, args, kwargs)``; many are invalid."""
    paths = [s.info(fid).path for fid in s.field_ids()]
    path = draw(st.sampled_from(paths + BOGUS) if paths else st.sampled_from(BOGUS))
    names = st.sampled_from(NEW_NAMES + [p[-1] for p in paths])
    kind = draw(st.sampled_from([
        "add", "add", "add", "drop", "drop", "rename", "retype", "nullable", "default",
        "drop_default", "comment", "move",
    ]))
    if kind == "add":
        parent = draw(st.sampled_from(_holders(s)))
        kwargs: dict[str, Any] = {
            "nullable": draw(st.sampled_from([True, True, True, False])),
            "default": draw(st.sampled_from([None, None, *VALUES])),
        }
        where = draw(st.sampled_from(["end", "end", "first", "after", "before"]))
        if where == "first":
            kwargs["first"] = True
        elif where != "end":
            kwargs[where] = draw(_siblings(s, (*parent, "?")) | names)
        return "add_column", ((*parent, draw(names)), draw(st.sampled_from(TYPES))), kwargs
    if kind == "drop":
        return "drop_column", (path,), {}
    if kind == "rename":
        return "rename_column", (path, draw(names)), {}
    if kind == "retype":
        widenings = []
        if s.has(path):
            old = s.find(path).type
            widenings = [t for t in TYPES[:-1] if can_change_type(old, parse_type(t))]
        choices = st.sampled_from(TYPES)
        if widenings:
            choices = st.sampled_from(widenings) | choices
        return "update_column_type", (path, draw(choices)), {}
    if kind == "nullable":
        return "set_nullable", (path, draw(st.booleans())), {}
    if kind == "default":
        return "set_default", (path, draw(st.sampled_from(VALUES))), {}
    if kind == "drop_default":
        return "drop_default", (path,), {}
    if kind == "comment":
        return "set_comment", (path, draw(st.sampled_from([None, "c", "ünï <b>"]))), {}
    where = draw(st.sampled_from(["first", "after", "before"]))
    if where == "first":
        return "move_first", (path,), {}
    other = draw(_siblings(s, path).map(lambda n: (n,)) | st.sampled_from(paths + BOGUS)
                 | names.map(lambda n: (n,)))
    return f"move_{where}", (path, other), {}


def _siblings(s: Schema, path: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Names of the fields beside ``path`` (any name when there are none)."""
    parent = path[:-1]
    kids = s.fields if not parent else (s.find(parent).type.children() if s.has(parent) else ())
    if parent and s.has(parent):
        t = s.find(parent).type
        if isinstance(t, ArrayType | MapType) and isinstance(t.children()[-1].type, StructType):
            kids = t.children()[-1].type.children()
    found = [f.name for f in kids]
    return st.sampled_from(found) if found else st.sampled_from(NEW_NAMES)


def _outcome(u: SchemaUpdate) -> tuple:
    """What ``apply()`` gives now: the schema, or the error."""
    try:
        return ("schema", u.apply())
    except EvoError as exc:
        return ("error", type(exc), str(exc))


def _call(u: SchemaUpdate, op: tuple[str, tuple, dict]) -> bool:
    """Make the call; on rejection check that the update is unchanged. True if accepted."""
    method, args, kwargs = op
    before, ops = _outcome(u), u.operations
    try:
        getattr(u, method)(*args, **kwargs)
    except EvoError:
        assert _outcome(u) == before
        assert u.operations == ops
        event(f"{method} rejected")
        return False
    event(f"{method} accepted")
    return True


def _check_step(old: Schema, new: Schema, gone: set[int]) -> None:
    ids = new.field_ids()
    old_ids = set(old.field_ids())
    assert len(ids) == len(set(ids)), "IDs must be unique"
    assert new.max_column_id >= old.max_column_id, "max_column_id never decreases"
    assert max(ids, default=0) <= new.max_column_id
    added = set(ids) - old_ids
    assert all(i > old.max_column_id for i in added), "new IDs are above the previous max"
    assert added == set(range(old.max_column_id + 1, new.max_column_id + 1))
    assert not set(ids) & gone, "an ID that disappeared came back"
    # Every schema an update produces is stored as JSON: it must round-trip.
    assert Schema.from_json(new.to_json()) == new
    # The diff agrees on what was added and dropped.
    d = diff(old, new)
    assert {c.field_id for c in d.by_kind("added")} <= added
    assert {c.field_id for c in d.by_kind("dropped")} <= old_ids - set(ids)
    for fid in old_ids & set(ids):
        assert old.field_by_id(fid).type.is_nested == new.field_by_id(fid).type.is_nested


@SETTINGS
@given(data=st.data())
def test_ids_are_unique_and_never_reused(data: st.DataObject) -> None:
    with decimal.localcontext(prec=80):
        current = data.draw(schemas(max_depth=2, max_fields=4), label="schema")
    gone: set[int] = set()
    applied = 0
    for step in range(data.draw(st.integers(1, 6), label="steps")):
        u = SchemaUpdate(current, allow_set_not_null=data.draw(st.booleans()))
        for _ in range(data.draw(st.integers(1, 4), label="calls")):
            _call(u, data.draw(operations(current), label="call"))
        try:
            new = u.apply(version_id=f"{step + 1:017d}")
        except EvoError:
            event("update rejected at apply")
            continue
        _check_step(current, new, gone)
        gone |= set(current.field_ids()) - set(new.field_ids())
        current = new
        applied += 1
    event(f"updates applied: {min(applied, 3)}{'+' if applied >= 3 else ''}")
    assert current.max_column_id >= max(current.field_ids(), default=0)


@SETTINGS
@given(data=st.data())
def test_rejected_calls_change_nothing(data: st.DataObject) -> None:
    with decimal.localcontext(prec=80):
        base = data.draw(schemas(max_depth=2, max_fields=4), label="schema")
    base_json = base.to_json()
    u = SchemaUpdate(base, allow_set_not_null=data.draw(st.booleans()))
    accepted = []
    for _ in range(data.draw(st.integers(1, 12), label="calls")):
        op = data.draw(operations(base), label="call")
        if _call(u, op):
            accepted.append(op)
    # Replaying only the accepted calls on a fresh update gives the same result.
    replay = SchemaUpdate(base, allow_set_not_null=u._allow_set_not_null)
    for method, args, kwargs in accepted:
        getattr(replay, method)(*args, **kwargs)
    assert _outcome(replay) == _outcome(u)
    assert replay.operations == u.operations
    assert base.to_json() == base_json  # the base itself is never touched


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_change_changes_nothing_else(data: st.DataObject) -> None:
    """An accepted single call changes only the field it names, its subtree and its ancestors."""
    with decimal.localcontext(prec=80):
        base = data.draw(schemas(max_depth=2, max_fields=4), label="schema")
    u = SchemaUpdate(base)
    if not _call(u, data.draw(operations(base), label="call")):
        return
    try:
        new = u.apply()
    except EvoError:
        return
    touched = {o.field_id for o in u.operations}
    if not touched:
        assert new == base
        return
    (fid,) = touched
    related = {fid} | _ancestors(base, fid) | _ancestors(new, fid)
    for other in set(base.field_ids()) & set(new.field_ids()):
        if other in related or fid in _ancestors(base, other) | _ancestors(new, other):
            continue
        assert new.field_by_id(other) == base.field_by_id(other)
        assert new.path_of(other) == base.path_of(other)
        assert new.parent_of(other) == base.parent_of(other)


def _ancestors(s: Schema, fid: int) -> set[int]:
    out: set[int] = set()
    if not s.has_id(fid):
        return out
    while (fid := s.parent_of(fid)) != ROOT_ID:
        out.add(fid)
    return out
