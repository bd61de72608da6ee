"""Registering lock providers and conflict policies in tests the way an installed package does.

:func:`install` writes a distribution's metadata (``<name>-1.0.dist-info`` with ``METADATA``
and ``entry_points.txt``) into a folder and puts the folder on ``sys.path``, where
:mod:`importlib.metadata` finds it like any installed package. The entry points name classes
in the tests package.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

LOCKS = "evonb.lock_providers"
POLICIES = "evonb.conflict_policies"


def install(monkeypatch: pytest.MonkeyPatch, folder: Path, name: str,
            entry_points: Mapping[str, Mapping[str, str]]) -> Path:
    """Install the metadata of distribution ``name`` registering ``entry_points``
    (``{group: {entry point name: "module:attr"}}``) in ``folder``; the folder is on
    ``sys.path`` until the test ends. Returns the ``.dist-info`` folder."""
    dist = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    sections = []
    for group, points in entry_points.items():
        lines = [f"{key} = {value}" for key, value in points.items()]
        sections.append("\n".join([f"[{group}]", *lines]))
    (dist / "entry_points.txt").write_text("\n\n".join(sections) + "\n")
    monkeypatch.syspath_prepend(str(folder))  # also clears importlib's caches
    return dist
