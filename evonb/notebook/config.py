"""``Evo``: the toolkit's settings, as traitlets so ``%config Evo.warehouse = ...`` works."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from traitlets import Dict, Int, TraitError, Unicode, observe, validate
from traitlets.config import Configurable

from evonb.spark import session as managed

DEFAULT_WAREHOUSE = "evonb-warehouse"
ENGINES = ("auto", "arrow", "spark")
"""Values of ``Evo.engine``: what reads a table's data for the ``%evo`` previews."""


class Evo(Configurable):
    """Settings of the ``%evo`` magics (set with ``%config Evo.<name> = value``)."""

    warehouse = Unicode(
        os.environ.get("EVONB_WAREHOUSE", DEFAULT_WAREHOUSE),
        help="Folder holding tables named in %evo commands (relative to the working folder). "
        "CREATE TABLE ... LOCATION '<path>' puts a table elsewhere.",
    ).tag(config=True)
    spark_master = Unicode(
        "",
        help="Spark master URL used when the session next starts (e.g. 'local[2]'); empty "
        "keeps evonb's default (local[*]).",
    ).tag(config=True)
    spark_conf = Dict(
        value_trait=Unicode(),
        key_trait=Unicode(),
        help="Extra Spark settings used when the session next starts.",
    ).tag(config=True)
    preview_rows = Int(
        20, min=0, help="How many rows %evo read, %evo sql and the timeline show."
    ).tag(config=True)

    engine = Unicode(
        "auto",
        help="What reads data for %evo read, the timeline's preview and %evo diff --data: "
        "'auto' (Arrow, no JVM, for previews; Spark where a Spark DataFrame is asked for: "
        "%evo read --to), 'arrow' (always Arrow: --to gives a pandas DataFrame) or 'spark' "
        "(always Spark). %evo sql and the services use Spark.",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._apply_spark_settings()

    @validate("engine")
    def _check_engine(self, proposal: Any) -> str:
        value = proposal["value"]
        if value not in ENGINES:
            raise TraitError(f"Evo.engine must be one of {', '.join(map(repr, ENGINES))}, "
                             f"not {value!r}")
        return str(value)

    @observe("spark_master", "spark_conf")
    def _spark_settings_changed(self, change: Any) -> None:
        self._apply_spark_settings()

        if managed.is_running():
            print(f"Evo.{change['name']} takes effect when Spark next starts "
                  "(run %evo spark restart)")

    def _apply_spark_settings(self) -> None:
        if not self.spark_master and not self.spark_conf:
            return

        managed.configure(master=self.spark_master or None, conf=dict(self.spark_conf))

    def reads_with_arrow(self, *, spark_dataframe: bool = False) -> bool:
        """Whether a read for a preview uses the Arrow reader (``spark_dataframe``: the user
        asked for the result as a DataFrame, a Spark one unless the engine is 'arrow')."""
        if self.engine == "auto":
            return not spark_dataframe
        return self.engine == "arrow"

    @property
    def warehouse_path(self) -> Path:
        """The warehouse folder as an absolute path (``~`` and variables expanded)."""
        return Path(os.path.expandvars(self.warehouse)).expanduser().resolve()
