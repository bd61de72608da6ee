"""What every subcommand gets: the settings, the user's namespace and table lookup by name."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.errors import TableNotFoundError
from evonb.notebook.config import Evo

if TYPE_CHECKING:  # pragma: no cover
    from evonb.table.table import Table


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
        ``<warehouse>/<name>`` (a dotted name is a sub-folder per part)."""
        key = _key(name)
        if key in self.locations:
            return self.locations[key]
        return self.warehouse.joinpath(*[p.strip("`") for p in name.split(".")])

    def remember(self, name: str, path: Path) -> None:
        """Record a table created at an explicit location, so later commands find it."""
        self.locations[_key(name)] = path

    def table_names(self) -> list[str]:
        """Tables in the warehouse folder and those created at a LOCATION, sorted."""
        from evonb.table.config import TableConfig

        names = set(self.locations)
        if self.warehouse.is_dir():
            names.update(p.name for p in self.warehouse.iterdir()
                         if p.is_dir() and TableConfig.exists(p))
        return sorted(names)

    def open(self, name: str) -> Table:
        """Open a table by name (or by path, when ``name`` is a folder holding a table)."""
        from evonb.table.config import TableConfig
        from evonb.table.table import open_table

        path = self.path_for(name)
        if not TableConfig.exists(path):
            direct = Path(os.path.expanduser(name))
            if (os.sep in name or name.startswith((".", "~"))) and TableConfig.exists(direct):
                return open_table(direct)
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
        return open_table(path)


def _key(name: str) -> str:
    return name.strip().strip("`").lower()
