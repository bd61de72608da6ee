"""What every subcommand gets: the settings, the user's namespace and table lookup by name."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.api import open_table
from evonb.errors import TableNameError, TableNotFoundError
from evonb.notebook.config import Evo
from evonb.table.config import TableConfig

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table


@dataclass
class Context:
    """The magics' state: settings, the user namespace, and tables created at a LOCATION."""

    config: Evo
    user_ns: dict[str, Any] = field(default_factory=dict)
    locations: dict[str, Path] = field(default_factory=dict)

    @property
    def warehouse(self) -> Path:
        return self.config.warehouse_path

    @property
    def preview_rows(self) -> int:
        return int(self.config.preview_rows)

    def path_for(self, name: str) -> Path:
        """Where a table of this name lives: its LOCATION if it was created at one, else
        ``<warehouse>/<name>`` (a dotted name is a sub-folder per part). A name that would
        lead out of the warehouse (a path, ``..``, a link to elsewhere) raises
        :class:`TableNameError`."""
        key = _key(name)
        if key in self.locations:
            return self.locations[key]
        return warehouse_path(self.warehouse, name)

    def remember(self, name: str, path: Path) -> None:
        """Record a table created at an explicit location, so later commands find it."""
        self.locations[_key(name)] = path

    def table_names(self) -> list[str]:
        """Tables in the warehouse folder and those created at a LOCATION, sorted."""

        names = set(self.locations)
        if self.warehouse.is_dir():
            names.update(p.name for p in self.warehouse.iterdir()
                         if p.is_dir() and _stays_in(p, self.warehouse)
                         and TableConfig.exists(p))
        return sorted(names)

    def open(self, name: str) -> Table:
        """Open a table by name: one created at a LOCATION, else one in the warehouse."""
        return open_table(self.locate(name))

    def locate(self, name: str) -> Path:
        """The folder of an existing table of this name (see :meth:`path_for`), without
        opening it; :class:`TableNotFoundError` naming the closest table otherwise."""

        path = self.path_for(name)
        if not TableConfig.exists(path):
            names = self.table_names()
            close = difflib.get_close_matches(name, names, n=1)
            if close:
                hint = f"did you mean {close[0]!r}?"
            elif names:
                hint = "tables in the warehouse: " + ", ".join(names)
            else:
                hint = "create it with %evo create table, or set %config Evo.warehouse = '...'"
            raise TableNotFoundError(f"No table {name!r} in the warehouse {self.warehouse}",
                                     hint=hint)
        return path


def _key(name: str) -> str:
    return name.strip().strip("`").lower()


def _stays_in(path: Path, warehouse: Path) -> bool:
    """Whether ``path``, links followed, is inside ``warehouse`` (not the warehouse itself)."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a link loop
        return False
    return resolved != warehouse and resolved.is_relative_to(warehouse)


MAX_NAME_BYTES = 255
"""The longest folder name (in bytes) of common file systems: a longer table name is refused."""


def warehouse_path(warehouse: Path, name: str) -> Path:
    """The folder of table ``name`` in ``warehouse`` (resolved, links followed): a dotted name
    is a sub-folder per part, backquotes are removed. A name with ``..``, ``/``, ``\\``, a
    leading ``~`` or an empty part, or one that reaches a link leading out of the warehouse,
    raises :class:`TableNameError`: a name never leaves the warehouse."""
    text = name.strip()
    bare = text.replace("`", "")
    if not bare.strip():
        raise TableNameError(name, "is empty")
    for bad, what in (("..", "'..'"), ("/", "'/'"), ("\\", "'\\'"), ("\0", "a NUL character")):
        if bad in bare:
            raise TableNameError(name, f"contains {what}: it would be a path, not a name")
    parts = [p.strip().strip("`").strip() for p in text.split(".")]
    if any(not p for p in parts):
        raise TableNameError(name, "has an empty part (a leading, trailing or doubled dot)")
    for part in parts:
        size = len(part.encode("utf-8", "surrogatepass"))
        if size > MAX_NAME_BYTES:
            raise TableNameError(
                name, f"has a part of {size} bytes: a folder name holds at most "
                      f"{MAX_NAME_BYTES}", hint="use a shorter name")
    if any(p.startswith("~") for p in parts):
        raise TableNameError(name, "starts with '~': it would be a home folder, not a name")
    root = warehouse.resolve()
    path = root.joinpath(*parts)
    if not _stays_in(path, root):
        raise TableNameError(
            name, f"leads out of the warehouse {root} (through a link to "
                  f"{_resolved(path)})",
            hint="a table name stays in the warehouse; to use a table elsewhere, create it "
                 "with LOCATION '...' in CREATE TABLE")
    return path


def _resolved(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return "a link loop"
