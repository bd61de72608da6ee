"""The Jupyter toolkit: ``%evo``/``%%evo`` magics, widgets and the ``Evo`` settings.

``%load_ext evonb`` registers the magics; the widgets work from Python too::

    from evonb.notebook import SchemaDiffWidget, TimelineWidget
    TimelineWidget(table)
"""

from evonb.notebook.config import Evo
from evonb.notebook.magics import EvoMagics, load_ipython_extension, unload_ipython_extension
from evonb.notebook.widgets import JobProgress, ProgressBar, SchemaDiffWidget, TimelineWidget

__all__ = [
    "Evo",
    "EvoMagics",
    "JobProgress",
    "ProgressBar",
    "SchemaDiffWidget",
    "TimelineWidget",
    "load_ipython_extension",
    "unload_ipython_extension",
]
