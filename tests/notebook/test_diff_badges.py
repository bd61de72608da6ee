"""One diff renderer: for every change kind, top level and nested, the text form and every HTML
view of a diff (``SchemaDiff._repr_html_``, the widget's trees, its fallback) give the same
marks and badge texts, and each badge's tooltip is the change's line of the text form."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from html import unescape

import pytest

from evonb.notebook import SchemaDiffWidget
from evonb.schema import Schema, SchemaUpdate, diff
from evonb.schema.diffing import KINDS, SchemaDiff
from evonb.schema.types import DOUBLE, INT, NestedField, StructType

_ROW = re.compile(r'<div class="evonb-field"[^>]*? data-field-id="(\d+)"[^>]*>'
                  r"<span[^>]*>(.)</span>(.*?)</div>")
_BADGE = re.compile(r'<span class="evonb-kind evonb-kind-(\w+)"[^>]*? title="([^"]*)">'
                    r"([^<]*)</span>")

Badges = dict[tuple[str, int], tuple[str, list[tuple[str, str, str]]]]


def _update(ddl: str, change: Callable[[SchemaUpdate], SchemaUpdate]) -> SchemaDiff:
    before = Schema.from_ddl(ddl)
    return diff(before, change(SchemaUpdate(before)).apply(version_id="20260101000000000"))


def _ddl(before: str, after: str) -> SchemaDiff:
    """Two schemas from DDL: the same IDs where the columns line up."""
    return diff(Schema.from_ddl(before), Schema.from_ddl(after))


def _write_default() -> SchemaDiff:
    """A column whose read and write defaults differ gets a new write default."""
    before = Schema(fields=(NestedField(1, "x", DOUBLE, default=0.0, write_default=1.5),))
    return diff(before, replace(before, fields=(before.fields[0].replace(write_default=2.5),)))


def _into_a_new_struct() -> SchemaDiff:
    """``a`` moves into the struct ``s`` that comes with the change: ``s`` is added, ``a``
    is not (it keeps its ``~`` and its badge inside the added struct)."""
    a = NestedField(1, "a", INT)
    return diff(Schema(fields=(a,)), Schema(fields=(NestedField(2, "s", StructType((a,))),)))


def _to_another_parent(into_struct: bool) -> SchemaDiff:
    """``a`` moves from the top level into ``s`` (or from ``s`` to the top level)."""
    a, b = NestedField(1, "a", INT), NestedField(3, "b", INT)
    flat = Schema(fields=(a, NestedField(2, "s", StructType((b,)))))
    nested = Schema(fields=(NestedField(2, "s", StructType((b, a))),))
    return diff(flat, nested) if into_struct else diff(nested, flat)


# (the diff, its text form's change lines, {(side, field ID): (marker, [badge texts])})
CASES: dict[str, tuple[Callable[[], SchemaDiff], list[str], dict[tuple[str, int],
                                                                  tuple[str, list[str]]]]] = {
    "rename": (lambda: _update("id bigint, name string",
                               lambda u: u.rename_column("name", "full_name")),
               ["renamed  2: name -> full_name"],
               {("after", 2): ("~", ["renamed (was name)"])}),
    "type change": (lambda: _update("id bigint, score int",
                                    lambda u: u.update_column_type("score", "bigint")),
                    ["retyped  2: score: int -> bigint"],
                    {("after", 2): ("~", ["retyped (was int)"])}),
    "nullability": (lambda: _update("id bigint not null", lambda u: u.set_nullable("id", True)),
                    ["nullability 1: id: required -> optional"],
                    {("after", 1): ("~", ["nullability (was required)"])}),
    "default": (lambda: _update("id bigint, score int", lambda u: u.set_default("score", 0)),
                ["default  2: score: write-default null -> 0"],
                {("after", 2): ("~", ["default (was null)"])}),
    "default with another write default": (
        _write_default, ["default  1: x: write-default 1.5 -> 2.5"],
        {("after", 1): ("~", ["default (was 0.0, write-default 1.5)"])}),
    "doc": (lambda: _update("id bigint, note string comment 'old'",
                            lambda u: u.set_comment("note", "new")),
            ["comment  2: note: 'old' -> 'new'"],
            {("after", 2): ("~", ["comment (was 'old')"])}),
    "move": (lambda: _update("a int, b int, c int", lambda u: u.move_first("c")),
             ["moved    3: c: position 2 -> 0"],
             {("after", 3): ("~", ["moved (was #2)"])}),
    "add": (lambda: _update("id bigint", lambda u: u.add_column("x", "string")),
            ["added    2: x (string)"],
            {("after", 2): ("+", ["added"])}),
    "drop": (lambda: _update("id bigint, x string", lambda u: u.drop_column("x")),
             ["dropped  2: x (string)"],
             {("before", 2): ("-", ["dropped"])}),
    "nested add and drop": (
        lambda: _update("id int, s struct<a:int, b:int>",
                        lambda u: u.drop_column("s.b").add_column("s.c", "string")),
        ["added    5: s.c (string)", "dropped  4: s.b (int)"],
        {("after", 5): ("+", ["added"]), ("before", 4): ("-", ["dropped"])}),
    "nested rename": (lambda: _update("s struct<a:int, b:int>",
                                      lambda u: u.rename_column("s.a", "aa")),
                      ["renamed  2: s.a -> s.aa"],
                      {("after", 2): ("~", ["renamed (was a)"])}),
    "nested type change": (lambda: _update("tags array<int>",
                                           lambda u: u.update_column_type("tags.element",
                                                                          "bigint")),
                           ["retyped  2: tags.element: int -> bigint"],
                           {("after", 2): ("~", ["retyped (was int)"])}),
    "nested nullability and doc": (
        lambda: _ddl("s struct<a:int>", "s struct<a:int not null comment 'doc'>"),
        ["nullability 2: s.a: optional -> required", "comment  2: s.a: null -> 'doc'"],
        {("after", 2): ("~", ["nullability (was optional)", "comment (was null)"])}),
    "nested move": (lambda: _update("m map<string, struct<a:int, b:int>>",
                                    lambda u: u.move_first("m.value.b")),
                    ["moved    5: m.value.b: position 1 -> 0"],
                    {("after", 5): ("~", ["moved (was #1)"])}),
    "move into a struct": (lambda: _to_another_parent(True),
                           ["moved    1: s.a: position 0 -> 1"],
                           {("after", 1): ("~", ["moved (was #0 in top level)"])}),
    "move into a new struct": (_into_a_new_struct,
                               ["added    2: s (struct<a:int>)",
                                "moved    1: s.a: position 0 -> 0"],
                               {("after", 2): ("+", ["added"]),
                                ("after", 1): ("~", ["moved (was #0 in top level)"])}),
    "move out of a struct": (lambda: _to_another_parent(False),
                             ["moved    1: a: position 1 -> 0"],
                             {("after", 1): ("~", ["moved (was #1 in s)"])}),
}


def _badges(before_html: str, after_html: str) -> Badges:
    """``{(side, field ID): (marker, [(kind, badge text, tooltip), ...])}`` of the rows with a
    marker or a badge."""
    out: Badges = {}
    for side, markup in (("before", before_html), ("after", after_html)):
        for fid, marker, rest in _ROW.findall(markup):
            badges = [(k, unescape(text), unescape(tip)) for k, tip, text in _BADGE.findall(rest)]
            if marker != " " or badges:
                out[(side, int(fid))] = (marker, badges)
    return out


def _views(d: SchemaDiff) -> dict[str, Badges]:
    """The badges of every HTML view of ``d``."""
    widget = SchemaDiffWidget(d, title="t")
    live = _badges(widget._before.value, widget._after.value)
    widget.only_changed.value = True
    views = {"live widget": live,
             "only changed": _badges(widget._before.value, widget._after.value)}
    for name, markup in (("SchemaDiff._repr_html_", d._repr_html_()),
                         ("widget fallback", widget.fallback_html())):
        panes = markup.split("</td>")  # the before pane, then the after pane
        views[name] = _badges(panes[0], panes[1])
    return views


@pytest.mark.parametrize("case", list(CASES))
def test_text_and_every_html_view_show_the_same_badges(case: str) -> None:
    make, lines, expected = CASES[case]
    d = make()
    assert repr(d).splitlines()[1:] == [f"  {line}" for line in lines]
    views = _views(d)
    for name, found in views.items():
        shown = {key: (marker, [text for _, text, _ in badges])
                 for key, (marker, badges) in found.items()}
        assert {k: v for k, v in shown.items() if v[1]} == expected, name
        for marker, badges in found.values():
            for kind, text, tip in badges:
                # the tooltip is the change's line in the text form; text and badge agree on
                # the kind
                assert tip in lines, (name, tip)
                assert tip.split()[0] == kind and text.split()[0] == kind
                assert marker == {"added": "+", "dropped": "-"}.get(kind, "~")
    assert all(v == views["live widget"] for v in views.values())


def test_the_cases_cover_every_kind() -> None:
    kinds = {line.split()[0] for _, lines, _ in CASES.values() for line in lines}
    assert kinds == set(KINDS)
