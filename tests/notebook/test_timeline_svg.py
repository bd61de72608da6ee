"""The timeline as a picture: marks, colours, sizes, schema bands, escaping, and the widget."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import pytest

from evonb.notebook import TimelineWidget
from evonb.notebook.widgets.timeline import PICK_CLASS
from evonb.notebook.widgets.timeline_svg import MAX_R, PALETTE, UNKNOWN, timeline_svg

NS = "{http://www.w3.org/2000/svg}"


@dataclass
class FakeCommit:
    instant: str
    operation: str
    schema_name: str
    rows_written: int = 0
    action: str = "commit"
    schema_version: str = ""

    @property
    def time(self) -> str:
        i = self.instant
        return f"{i[:4]}-{i[4:6]}-{i[6:8]} {i[8:10]}:{i[10:12]}:{i[12:14]}.{i[14:17]}"


def commits() -> list[FakeCommit]:
    return [
        FakeCommit("20261101090000000", "create", "v0", action="alter"),
        FakeCommit("20261102090000000", "insert", "v0", rows_written=100),
        FakeCommit("20261103090000000", "upsert", "v0", rows_written=10),
        FakeCommit("20261104090000000", "alter", "v1", action="alter"),
        FakeCommit("20261105090000000", "delete", "v1", rows_written=1),
        FakeCommit("20261106090000000", "compact", "v1", action="replace"),
        FakeCommit("20261107090000000", "frobnicate", "v2", action="frob"),
    ]


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def marks(root: ET.Element) -> list[ET.Element]:
    return [c for c in root.iter(f"{NS}circle") if "evonb-mark" in c.get("class", "")]


def bands(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if g.get("class") == "evonb-band"]


def test_one_mark_per_commit_coloured_by_operation_with_a_tooltip():
    cs = commits()
    root = parse(timeline_svg(cs))
    found = marks(root)
    assert len(found) == len(cs)
    assert [m.get("data-instant") for m in found] == [c.instant for c in cs]
    by_instant = {m.get("data-instant"): m for m in found}
    assert by_instant[cs[1].instant].get("fill") == PALETTE["insert"]
    assert by_instant[cs[2].instant].get("fill") == PALETTE["upsert"]
    assert by_instant[cs[3].instant].get("fill") == PALETTE["alter"]
    assert by_instant[cs[4].instant].get("fill") == PALETTE["delete"]
    assert by_instant[cs[5].instant].get("fill") == PALETTE["compact"]
    assert by_instant[cs[6].instant].get("fill") == UNKNOWN  # unknown operation and action
    assert by_instant[cs[0].instant].get("fill") == PALETTE["alter"]  # by action: create
    tip = by_instant[cs[2].instant].find(f"{NS}title").text
    assert cs[2].instant in tip and "upsert" in tip and "10 rows" in tip and "schema v0" in tip


def test_data_changing_commits_are_sized_by_rows():
    cs = commits()
    r = {m.get("data-instant"): float(m.get("r")) for m in marks(parse(timeline_svg(cs)))}
    big, mid, small = (r[cs[i].instant] for i in (1, 2, 4))
    assert big == pytest.approx(MAX_R)
    assert big > mid > small > 0
    assert mid == pytest.approx(MAX_R * (10 / 100) ** 0.5, abs=0.05)  # area proportional to rows


def test_schema_versions_are_labelled_alternating_bands():
    root = parse(timeline_svg(commits()))
    found = bands(root)
    assert [b.get("data-schema") for b in found] == ["v0", "v1", "v2"]
    assert [b.find(f"{NS}text").text for b in found] == ["v0", "v1", "v2"]
    fills = [b.find(f"{NS}rect").get("fill") for b in found]
    assert fills[0] != fills[1] and fills[0] == fills[2]
    xs = [(float(b.find(f"{NS}rect").get("x")), float(b.find(f"{NS}rect").get("width")))
          for b in found]
    assert all(w > 0 for _, w in xs) and xs[0][0] < xs[1][0] < xs[2][0]


def test_axis_is_time_when_readable_and_commit_order_when_bunched():
    cs = commits()
    assert parse(timeline_svg(cs)).get("data-axis") == "time"
    ticks = [t.text for t in parse(timeline_svg(cs)).iter(f"{NS}text")
             if t.get("class") == "evonb-tick"]
    assert ticks[0] == "2026-11-01" and ticks[-1] == "2026-11-07"
    bunched = [*cs, FakeCommit("20261107090000001", "upsert", "v2", rows_written=5),
               FakeCommit("20261107090000002", "upsert", "v2", rows_written=5)]
    root = parse(timeline_svg(bunched))
    assert root.get("data-axis") == "rank"
    xs = [float(m.get("cx")) for m in marks(root)]
    assert xs == sorted(xs) and len(set(xs)) == len(bunched)
    assert parse(timeline_svg([])).get("data-axis") == "none"
    assert len(marks(parse(timeline_svg(cs[:1])))) == 1


def test_every_text_is_escaped():
    hostile = '<b>&"x\'</b>'
    cs = [FakeCommit("20261101090000000", hostile, hostile, rows_written=3, action=hostile),
          FakeCommit("20261102090000000", "upsert", f"v1{hostile}", rows_written=1)]
    svg = timeline_svg(cs, onclick="alert(\"<&>\")")
    assert "<b>" not in svg
    root = parse(svg)  # well-formed despite the names
    assert [b.get("data-schema") for b in bands(root)] == [hostile, f"v1{hostile}"]
    first = marks(root)[0]
    assert first.get("data-operation") == hostile and first.get("fill") == UNKNOWN
    assert hostile in first.find(f"{NS}title").text
    assert first.get("onclick") == "alert(\"<&>\")"


@pytest.mark.spark
def test_the_widget_and_its_html_fallback_show_the_picture(trips, spark):
    trips.alter("ALTER TABLE trips ADD COLUMN note string")
    history = trips.history()
    widget = TimelineWidget(trips)
    svg = widget.picture.value
    start = svg.index("<svg")
    root = parse(svg[start:svg.index("</svg>") + len("</svg>")])
    assert [m.get("data-instant") for m in marks(root)] == [c.instant for c in history]
    assert all(m.get("onclick") for m in marks(root))
    assert [b.get("data-schema") for b in bands(root)] == ["v0", "v1"]

    html = widget._repr_mimebundle_()["text/html"]
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="evonb-timeline-svg"' in html
    assert "onclick" not in html  # the static picture has no script
    assert html.count('class="evonb-mark"') == len(history)

    # A click on a mark writes its instant into the hidden pick box: the list follows.
    assert PICK_CLASS in widget._pick._dom_classes
    widget._pick.value = history[0].instant
    assert widget.selector.value == history[0].instant
    assert widget._pick.value == ""  # cleared, so the same mark can be clicked again
    widget._pick.value = "not-an-instant"
    assert widget.selector.value == history[0].instant


def test_every_operation_evonb_commits_has_its_own_colour():
    from evonb.services.clustering import OPERATION as CLUSTER

    operations = ("insert", "upsert", "delete", "overwrite", "alter", "revert", "compact",
                  CLUSTER, "rewrite", "convert", "clean", "rollback")
    colours = [PALETTE[op] for op in operations]
    assert UNKNOWN not in colours
    assert len(set(colours)) == len(operations)  # no two operations look alike
