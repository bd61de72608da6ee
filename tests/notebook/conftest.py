"""Fixtures for the magics and widgets: an IPython shell with ``%load_ext evonb`` done."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def ip(warehouse: Path) -> Iterator[Any]:
    """The process's ``InteractiveShell`` with the extension loaded and the warehouse of the
    test set (``%config Evo.warehouse``)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("evonb")
    shell.run_line_magic("config", f"Evo.warehouse = {str(warehouse)!r}")
    shell.run_line_magic("config", "Evo.preview_rows = 20")
    shell.run_line_magic("config", "Evo.engine = 'auto'")
    magics = shell.magics_manager.registry["EvoMagics"]
    magics.context.locations.clear()
    yield shell
    magics.context.locations.clear()


@pytest.fixture
def evo(ip: Any) -> Any:
    """``evo("read t")`` runs ``%evo read t``; ``evo("", cell)`` runs a ``%%evo`` cell."""

    def run(line: str, cell: str | None = None) -> Any:
        if cell is None:
            return ip.run_line_magic("evo", line)
        return ip.run_cell_magic("evo", line, cell)

    return run


TRIPS_DDL = """
CREATE TABLE trips (
  trip_id bigint NOT NULL,
  rider string,
  fare double,
  city string,
  ts bigint
)
PARTITIONED BY (city)
TBLPROPERTIES (primaryKey = 'trip_id', preCombineField = 'ts')
"""
TRIPS_COLUMNS = "trip_id bigint, rider string, fare double, city string, ts bigint"
TRIPS_ROWS = [(1, "alice", 12.5, "paris", 1), (2, "bob", 7.0, "oslo", 1),
              (3, "carol", 22.0, "paris", 1)]


@pytest.fixture
def trips(evo: Any, spark: Any, warehouse: Path) -> Any:
    """A ``trips`` table in the warehouse with one write of three rows (two commits)."""
    import evonb

    evo("", TRIPS_DDL)
    table = evonb.open_table(warehouse / "trips")
    table.write(spark.createDataFrame(TRIPS_ROWS, TRIPS_COLUMNS), mode="upsert")
    return table
