"""The schema diff widget: before and after side by side as trees, changes marked by kind."""

from __future__ import annotations

import ipywidgets as W

import evonb.notebook.html as H
from evonb.notebook.widgets.base import FallbackMixin
from evonb.schema.diffing import SchemaDiff
from evonb.schema.render import (
    change_list_html,
    diff_side_title_html,
    diff_summary_html,
    diff_to_html,
    diff_tree_html,
)


class SchemaDiffWidget(FallbackMixin, W.VBox):
    """Shows a :class:`SchemaDiff`: a summary with one chip per change kind, the two schemas
    as trees (every field with its ID; added ``+``, dropped ``-``, changed ``~`` with a badge
    per change), and the list of changes. "only changed fields" hides the unchanged ones.
    The pieces are those of the schema layer's diff renderer (:mod:`evonb.schema.render`)."""

    def __init__(self, diff: SchemaDiff, *, title: str | None = None, note: str = "",
                 note_kind: str = "info", labels: tuple[str, str] = ("before", "after")
                 ) -> None:
        self.diff = diff
        self.labels = labels
        self.title = title
        self.note = note
        self._note_html = H.note_html(note, note_kind) if note else ""
        self.only_changed = W.Checkbox(value=False, description="only changed fields",
                                       indent=False, layout=W.Layout(width="auto"))
        self._before = W.HTML()
        self._after = W.HTML()
        pane = W.Layout(border="1px solid rgba(128,128,128,0.35)", margin="0 8px 0 0",
                        overflow="auto")
        before = W.VBox([W.HTML(diff_side_title_html(labels[0], diff.before)), self._before],
                        layout=pane)
        after = W.VBox([W.HTML(diff_side_title_html(labels[1], diff.after)), self._after],
                       layout=pane)
        children: list[W.Widget] = [W.HTML(diff_summary_html(diff, title))]
        if self._note_html:
            children.append(W.HTML(self._note_html))
        children += [self.only_changed, W.HBox([before, after]),
                     W.HTML(change_list_html(diff))]
        super().__init__(children=children)
        self.add_class("evonb-diff-widget")
        self.only_changed.observe(self._render, names="value")
        self._render()

    def _render(self, _change: object = None) -> None:
        only = bool(self.only_changed.value)
        self._before.value = diff_tree_html(self.diff, "before", only_changed=only)
        self._after.value = diff_tree_html(self.diff, "after", only_changed=only)

    def fallback_html(self) -> str:
        return diff_to_html(self.diff, title=self.title, note=self._note_html,
                            labels=self.labels)

    def fallback_text(self) -> str:
        lines = [self.title] if self.title else []
        if self.note:
            lines.append(self.note)
        lines.append(repr(self.diff))
        return "\n".join(lines)
