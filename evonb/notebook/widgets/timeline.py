"""The timeline widget: a table's commits with a selector; the chosen commit's schema, its data
(in its own schema or today's) and what it changed in the schema."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import ipywidgets as W

import evonb.notebook.html as H
from evonb.errors import EvoError
from evonb.notebook.errors import format_evo_error, format_spark_error
from evonb.notebook.preview import Preview, error_html
from evonb.notebook.widgets.base import FallbackMixin
from evonb.notebook.widgets.timeline_svg import legend, timeline_svg
from evonb.schema.diffing import diff
from evonb.schema.render import diff_to_html
from evonb.spark.session import quiet_spark_logs

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table
    from evonb.schema.schema import Schema
    from evonb.table.history import Commit

MODES = (("that commit's schema", "commit"), ("today's schema", "latest"))
PICK_CLASS = "evonb-timeline-pick"
"""The hidden text box a click on the picture writes the clicked commit's instant into."""
PICK_JS = (
    "var w=this.closest('.evonb-timeline-widget');"
    f"var i=w&&w.querySelector('.{PICK_CLASS} input');"
    "if(i){i.value=this.getAttribute('data-instant');"
    "i.dispatchEvent(new Event('input',{bubbles:true}));"
    "i.dispatchEvent(new Event('change',{bubbles:true}));}")
"""A mark's ``onclick``: set the hidden text box of the enclosing timeline widget and fire the
events its view listens to, so the kernel gets the instant (plain ipywidgets, no new
dependency)."""


def picture_html(history: object, onclick: str | None = None) -> str:
    """The SVG picture of a history (oldest first) and its legend; ``onclick`` for the marks."""
    commits = list(history)  # type: ignore[call-overload]
    return (f'<div class="evonb-timeline-picture">{timeline_svg(commits, onclick=onclick)}'
            f'<div style="font-size:11px">{legend(commits)}</div></div>')


class TimelineWidget(FallbackMixin, W.VBox):
    """The commits of a table, newest first. Choosing one shows the schema in force then, a data
    preview as of it (in that commit's schema or today's: the toggle) and the schema change
    from the previous commit."""

    def __init__(self, table: Table, *, preview_rows: int = 20, select: str | None = None,
                 engine: Literal["arrow", "spark"] = "arrow") -> None:
        """``select`` names the commit chosen first (default: the latest); ``engine`` reads
        the previews: ``"arrow"`` (no JVM) or ``"spark"``."""
        if engine not in ("arrow", "spark"):
            raise EvoError(f"engine must be 'arrow' or 'spark', not {engine!r}")
        self.table = table
        self.engine = engine
        self.history = table.history()
        self.preview_rows = preview_rows
        self._commits = {c.instant: c for c in self.history}
        self._order = [c.instant for c in self.history]
        self._previews: dict[tuple[str, str], Preview | str] = {}
        newest_first = [(H.commit_line(c), c.instant) for c in reversed(self.history)]
        first = table.commit(select).instant if select else (
            self._order[-1] if self._order else None)
        self.selector = W.Select(options=newest_first, value=first,
                                 rows=max(2, min(len(newest_first), 8)),
                                 layout=W.Layout(width="640px"))
        self.mode = W.ToggleButtons(options=MODES, value="commit", description="Data in",
                                    style={"button_width": "180px"})
        self._details = W.HTML()
        self._schema = W.HTML()
        self._change = W.HTML()
        self._preview = W.HTML()
        self.picture = W.HTML(picture_html(self.history, onclick=PICK_JS))
        self._pick = W.Text(value="", layout=W.Layout(display="none"))
        self._pick.add_class(PICK_CLASS)
        pane = W.Layout(border="1px solid rgba(128,128,128,0.35)", padding="2px 6px",
                        margin="4px 8px 0 0", overflow="auto")
        header = W.HTML(
            f'<div style="{H.FONT}"><b>Timeline of {H.e(table.name)}</b> · '
            f"{len(self.history)} commits · <code>{H.e(table.path)}</code></div>")
        super().__init__(children=[
            header,
            self.picture,
            self._pick,
            W.HBox([self.selector, self._details]),
            W.HBox([W.VBox([W.HTML("<b>Schema in force then</b>"), self._schema], layout=pane),
                    W.VBox([W.HTML("<b>Change from the previous commit</b>"), self._change],
                           layout=pane)]),
            self.mode,
            self._preview,
        ])
        self.add_class("evonb-timeline-widget")
        self.selector.observe(self._render, names="value")
        self.mode.observe(self._render_preview, names="value")
        self._pick.observe(self._picked, names="value")
        self._render()

    # --------------------------------------------------------------- state
    @property
    def selected(self) -> Commit | None:
        """The chosen commit."""
        value = self.selector.value
        return self._commits.get(value) if value else None

    def select(self, ref: str) -> None:
        """Choose a commit by instant."""
        self.selector.value = self.table.commit(ref).instant

    def _picked(self, change: dict[str, object]) -> None:
        """A click on a mark of the picture: select that commit, as the list does."""
        instant = change.get("new")
        if isinstance(instant, str) and instant in self._commits:
            self.selector.value = instant
        if instant:
            self._pick.value = ""  # so clicking the same mark again still reports

    def schema_of(self, c: Commit) -> Schema:
        """The schema a commit was written with."""
        return self.table.version(c.schema_version)[0]

    def previous(self, c: Commit) -> Commit | None:
        index = self._order.index(c.instant)
        return self._commits[self._order[index - 1]] if index else None

    def preview(self, c: Commit, mode: str) -> Preview | str:
        """The data as of ``c`` (``mode`` ``"commit"`` or ``"latest"`` schema), or an error."""
        key = (c.instant, mode)
        if key not in self._previews:
            schema_name = "that commit's" if mode == "commit" else "today's"
            caption = f"Data as of {c.instant}, in {schema_name} schema"
            schema = "latest" if mode == "latest" else None
            try:
                if self.engine == "arrow":
                    self._previews[key] = self._arrow_preview(c, schema, caption)
                else:
                    with quiet_spark_logs():
                        df = self.table.read(as_of=c.instant, schema=schema)
                        self._previews[key] = Preview.of(df, self.preview_rows, caption,
                                                         order_by=self.table.primary_key)
            except EvoError as exc:
                self._previews[key] = format_evo_error(exc)
            except Exception as exc:  # a Spark failure must not break the widget
                self._previews[key] = format_spark_error(exc)
        return self._previews[key]

    def _arrow_preview(self, c: Commit, schema: str | None, caption: str) -> Preview:
        """The preview read with the Arrow reader (streamed; a table without a record key
        stops after the rows shown)."""
        from evonb.arrow.reader import ArrowRead  # pyarrow: on the first preview

        keyed = bool(self.table.primary_key)
        reader = ArrowRead(self.table, c.instant, schema=schema,
                           limit=None if keyed else self.preview_rows + 1)
        return Preview.of_arrow(reader.batches(), self.preview_rows, caption,
                                order_by=self.table.primary_key, schema=reader.output)

    # ------------------------------------------------------------- display
    def _change_html(self, c: Commit) -> str:
        prev = self.previous(c)
        if prev is None:
            return H.note_html("The table was created with this schema.")
        moved = [ch.get("field_id") for ch in c.metadata.get("changes", ())
                 if isinstance(ch, dict) and ch.get("kind") == "moved"]
        change = diff(self.schema_of(prev), self.schema_of(c),
                      moved=[m for m in moved if isinstance(m, int)])
        if not change:
            return H.note_html(f"No schema change (schema {c.schema_label}).")
        return diff_to_html(change, title=f"{c.operation} {c.instant}")

    def _render(self, _change: object = None) -> None:
        c = self.selected
        if c is None:
            for pane in (self._details, self._schema, self._change, self._preview):
                pane.value = H.note_html("The table has no commits.")
            return
        self._details.value = H.commit_html(c)
        self._schema.value = self.schema_of(c)._repr_html_()
        self._change.value = self._change_html(c)
        self._render_preview()

    def _render_preview(self, _change: object = None) -> None:
        c = self.selected
        if c is None:
            return
        result = self.preview(c, self.mode.value)
        self._preview.value = (error_html(result) if isinstance(result, str)
                               else result._repr_html_())

    def fallback_html(self) -> str:
        out = [picture_html(self.history), self.history._repr_html_()]
        c = self.selected
        if c is not None:
            result = self.preview(c, self.mode.value)
            shown = error_html(result) if isinstance(result, str) else result._repr_html_()
            out += [
                H.section(f"Commit {c.instant}", H.commit_html(c)),
                H.section("Schema in force then", self.schema_of(c)._repr_html_()),
                H.section("Change from the previous commit", self._change_html(c)),
                H.section("Data", shown),
            ]
        return f'<div class="evonb-timeline">{"".join(out)}</div>'

    def fallback_text(self) -> str:
        text = repr(self.history)
        c = self.selected
        if c is not None:
            text += f"\nSelected: {c}"
        return text
