"""Code planted in a table's folder: a module, a package, a ``.pth`` file and a distribution
registering the module as a lock provider and a conflict policy. Imported or run, the module
writes a marker file; the trust tests check that the marker never appears."""

from __future__ import annotations

from pathlib import Path

EVIL_SOURCE = '''\
from pathlib import Path

Path({marker!r}).write_text("imported")


def run(*args, **kwargs):
    Path({marker!r}).write_text("ran")


class Policy:
    def __init__(self, *args, **kwargs):
        Path({marker!r}).write_text("built")

    def check(self, op, since):
        return op.base_schema_version
'''


def plant(folder: Path, marker: Path, *, module: str = "evil") -> None:
    """Plant ``<module>.py``, a package of that name's sibling, a ``.pth`` file importing it and
    a distribution registering it as a lock provider and a conflict policy, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    source = EVIL_SOURCE.format(marker=str(marker))
    (folder / f"{module}.py").write_text(source)
    package = folder / f"{module}_pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text(source)
    (folder / f"{module}.pth").write_text(f"import {module}\n")
    dist = folder / f"{module}-1.0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[evonb.conflict_policies]\n{module} = {module}:Policy\n\n"
        f"[evonb.lock_providers]\n{module} = {module}:Policy\n")
