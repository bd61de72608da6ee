"""ipywidgets views over evonb results, each with an HTML and text fallback."""

from evonb.notebook.widgets.diff import SchemaDiffWidget
from evonb.notebook.widgets.progress import JobProgress, ProgressBar
from evonb.notebook.widgets.timeline import TimelineWidget

__all__ = ["JobProgress", "ProgressBar", "SchemaDiffWidget", "TimelineWidget"]
