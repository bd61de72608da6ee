"""The timeline as a picture: a table's commits on a time axis, as an SVG string.

A pure function of the commit list (no widget, no Spark): one circle per commit, coloured by
operation; data-changing commits (rows written) sized by rows, circle *area* proportional to the
rows between a minimum and a maximum radius; schema versions as alternating background bands
labelled ``v0``, ``v1``...; a ``<title>`` tooltip per mark; every text escaped.

The axis: commits are placed by time when that stays readable, else by rank. "Readable" means
every two consecutive commits are at least :data:`MIN_GAP` pixels apart on a linear time
scale; when commits are bunched (a burst of writes after a quiet month), the picture switches to
an ordinal axis: evenly spaced commits in order, each tick labelled with its date. The axis used
is named in the picture (``time`` or ``commit order``) and in the SVG's ``data-axis``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Any, Protocol

PALETTE: dict[str, str] = {
    "insert": "#1f77b4", "commit": "#1f77b4", "write": "#1f77b4",
    "upsert": "#2ca02c",
    "delete": "#d62728",
    "overwrite": "#8c564b", "replace": "#8c564b",
    "alter": "#9467bd",
    "revert": "#e377c2",
    "compact": "#17becf",
    "cluster": "#aec7e8",
    "rewrite": "#c5b0d5",
    "convert": "#c49c94",
    "clean": "#bcbd22",
    "rollback": "#ff7f0e",
}
"""Mark colour by operation (then by action when the operation is not listed)."""
UNKNOWN = "#999999"
"""The colour of an operation not in :data:`PALETTE`."""

WIDTH, HEIGHT = 640, 150
LEFT, RIGHT, TOP, AXIS_Y = 24, 24, 22, 108
MIN_R, MAX_R, PLAIN_R = 4.0, 14.0, 5.0
"""Radii: data-changing commits between ``MIN_R`` and ``MAX_R`` (area by rows); others
``PLAIN_R``."""
MIN_GAP = 8.0
"""Consecutive commits closer than this (pixels) on a time scale switch to the rank axis."""
BANDS = ("rgba(128,128,128,0.08)", "rgba(128,128,128,0.18)")


class CommitLike(Protocol):  # pragma: no cover - a structural type
    instant: str
    action: str
    operation: str
    schema_version: str
    schema_name: str
    rows_written: int

    @property
    def time(self) -> str: ...


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def color(c: CommitLike) -> str:
    """The mark colour of a commit: by operation, else by action, else grey."""
    return PALETTE.get(str(c.operation).lower(), PALETTE.get(str(c.action).lower(), UNKNOWN))


def _when(c: CommitLike) -> datetime | None:
    try:
        return datetime.fromisoformat(c.time)
    except (ValueError, TypeError):
        return None


def _date_format(span_seconds: float) -> str:
    if span_seconds > 2 * 86400:
        return "%Y-%m-%d"
    if span_seconds > 120:
        return "%m-%d %H:%M"
    return "%H:%M:%S"


def radius(rows: int, max_rows: int) -> float:
    """A data-changing commit's radius: area proportional to ``rows`` within the bounds."""
    if rows <= 0 or max_rows <= 0:
        return PLAIN_R
    return max(MIN_R, MAX_R * math.sqrt(rows / max_rows))


def _positions(times: list[datetime | None]) -> tuple[list[float], str]:
    """x of each commit and the axis used (``"time"`` or ``"rank"``)."""
    n = len(times)
    inner = WIDTH - LEFT - RIGHT
    rank = [LEFT + inner / 2] if n == 1 else [LEFT + inner * i / (n - 1) for i in range(n)]
    if n < 2 or any(t is None for t in times):
        return rank, "rank"
    stamps = [t.timestamp() for t in times if t is not None]
    span = stamps[-1] - stamps[0]
    if span <= 0:
        return rank, "rank"
    xs = [LEFT + inner * (s - stamps[0]) / span for s in stamps]
    if min(b - a for a, b in itertools.pairwise(xs)) < MIN_GAP:
        return rank, "rank"
    return xs, "time"


def timeline_svg(commits: Sequence[CommitLike], *, onclick: str | None = None) -> str:
    """The commits (oldest first) as an SVG string.

    ``onclick``, when given, is a JavaScript statement set as each mark's ``onclick`` (the mark is
    ``this``; its instant is ``this.getAttribute('data-instant')``)."""
    commits = list(commits)
    n = len(commits)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="evonb-timeline-svg" '
           f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'font-family="sans-serif" font-size="10" role="img" '
           f'aria-label="Timeline of {n} commits"']
    if n == 0:
        out.append(' data-axis="none"><text x="10" y="20">No commits.</text></svg>')
        return "".join(out)
    times = [_when(c) for c in commits]
    xs, axis = _positions(times)
    out.append(f' data-axis="{axis}">')

    # Schema version bands: runs of consecutive commits written with the same schema.
    runs: list[tuple[int, int, str]] = []
    for i, c in enumerate(commits):
        name = c.schema_name or c.schema_version
        if runs and runs[-1][2] == name:
            runs[-1] = (runs[-1][0], i, name)
        else:
            runs.append((i, i, name))
    def edge(i: float) -> float:  # halfway between commit i-1/2 and i+1/2, clamped
        if i <= 0:
            return 0.0
        if i >= n - 1:
            return float(WIDTH)
        lo, hi = math.floor(i), math.ceil(i)
        return (xs[lo] + xs[hi]) / 2
    for k, (first, last, name) in enumerate(runs):
        x0, x1 = edge(first - 0.5), edge(last + 0.5)
        out.append(f'<g class="evonb-band" data-schema="{_e(name)}">'
                   f'<rect x="{x0:.1f}" y="0" width="{x1 - x0:.1f}" height="{AXIS_Y}" '
                   f'fill="{BANDS[k % 2]}"/>'
                   f'<text x="{x0 + 3:.1f}" y="12" fill="currentColor">{_e(name)}</text></g>')

    # Axis and ticks.
    out.append(f'<line x1="{LEFT}" y1="{AXIS_Y}" x2="{WIDTH - RIGHT}" y2="{AXIS_Y}" '
               f'stroke="currentColor" stroke-opacity="0.5"/>')
    known = [t for t in times if t is not None]
    fmt = _date_format((known[-1] - known[0]).total_seconds() if len(known) > 1 else 0)
    if axis == "time":
        t0, t1 = known[0].timestamp(), known[-1].timestamp()
        ticks = [(LEFT + (WIDTH - LEFT - RIGHT) * j / 4,
                  datetime.fromtimestamp(t0 + (t1 - t0) * j / 4, tz=known[0].tzinfo))
                 for j in range(5)]
        label = "time"
    else:
        step = max(1, math.ceil(n / 6))
        ticks = [(xs[i], times[i]) for i in range(0, n, step)]
        label = "commit order"
    for x, t in ticks:
        text = t.strftime(fmt) if t is not None else ""
        out.append(f'<line x1="{x:.1f}" y1="{AXIS_Y}" x2="{x:.1f}" y2="{AXIS_Y + 4}" '
                   f'stroke="currentColor" stroke-opacity="0.5"/>'
                   f'<text class="evonb-tick" x="{x:.1f}" y="{AXIS_Y + 15}" '
                   f'text-anchor="middle" fill="currentColor">{_e(text)}</text>')
    out.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end" '
               f'fill="currentColor" fill-opacity="0.7">axis: {label}</text>')

    # Marks.
    max_rows = max((max(0, int(c.rows_written)) for c in commits), default=0)
    y = TOP + (AXIS_Y - TOP) / 2
    click = f' onclick="{_e(onclick)}" style="cursor:pointer"' if onclick else ""
    for c, x, t in zip(commits, xs, times, strict=True):
        rows = max(0, int(c.rows_written))
        r = radius(rows, max_rows)
        name = c.schema_name or c.schema_version
        what = c.operation if c.operation == c.action else f"{c.action}/{c.operation}"
        tip = (f"{c.instant} ({t.isoformat(sep=' ') if t else '?'})\n{what}\n"
               f"{rows} rows\nschema {name}")
        out.append(f'<circle class="evonb-mark" cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" '
                   f'fill="{color(c)}" fill-opacity="0.85" stroke="currentColor" '
                   f'stroke-opacity="0.4" data-instant="{_e(c.instant)}" '
                   f'data-operation="{_e(c.operation)}" data-rows="{rows}"{click}>'
                   f'<title>{_e(tip)}</title></circle>')
    out.append("</svg>")
    return "".join(out)


def legend(commits: Sequence[Any]) -> str:
    """An HTML legend of the operations present: a coloured dot and the name."""
    seen: dict[str, str] = {}
    for c in commits:
        seen.setdefault(str(c.operation), color(c))
    return " ".join(f'<span style="white-space:nowrap"><span style="color:{col}">&#9679;</span> '
                    f'{_e(op)}</span>' for op, col in seen.items())
