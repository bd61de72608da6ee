"""Fixtures for the trust tests: the ``%evo`` magics on a warehouse of the test (the notebook
tests' own fixtures), and the marker file planted code would leave behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notebook.conftest import evo, ip

__all__ = ["evo", "ip", "marker"]


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """The file the planted module writes when it is imported or run (it must never exist)."""
    return tmp_path / "MARKER"
