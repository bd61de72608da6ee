"""Fixtures for the trust tests: the ``%evo`` magics on a warehouse of the test, and the marker
file planted code would leave behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def ip(warehouse: Path) -> Iterator[Any]:
    """The process's ``InteractiveShell`` with ``%load_ext evonb`` done and the warehouse of
    the test set."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("evonb")
    shell.run_line_magic("config", f"Evo.warehouse = {str(warehouse)!r}")
    magics = shell.magics_manager.registry["EvoMagics"]
    magics.context.locations.clear()
    yield shell
    magics.context.locations.clear()


@pytest.fixture
def evo(ip: Any) -> Any:
    """``evo("describe t")`` runs ``%evo describe t``; ``evo("", cell)`` runs a cell."""

    def run(line: str, cell: str | None = None) -> Any:
        if cell is None:
            return ip.run_line_magic("evo", line)
        return ip.run_cell_magic("evo", line, cell)

    return run


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """The file the planted module writes when it is imported or run (it must never exist)."""
    return tmp_path / "MARKER"
