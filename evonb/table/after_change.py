"""Work that follows a change of a table, done by the layers above the format.

The format never imports those layers. It finds the functions to run by name, in the entry
point group ``evonb.after_change`` of the installed packages (evonb declares its own Iceberg
publisher there, so every process that commits publishes, whichever evonb module it
imported)::

    [project.entry-points."evonb.after_change"]
    iceberg = "evonb.iceberg.publish:publish"

The group is read once, at the first change a process makes; a function's module is imported
when it first runs. :func:`register` adds a function in code (the same name replaces an entry
point's). Nothing a table holds names a function: a table's properties can switch a behaviour
on or off, nothing more, and a distribution found inside the changed table's folder (e.g. when
that folder is the working directory) is not used.

The format calls every function after a commit completes and after the table properties change
(:func:`table_changed`). A function must not raise: what it does after the commit point cannot
undo the commit. Should one raise, or fail to load, the error is logged and the others still
run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

from evonb.table.plugins import registered

_log = logging.getLogger(__name__)

AFTER_CHANGE_GROUP = "evonb.after_change"

AfterChange = Callable[[Any], None]
"""Called with the table (a :class:`~evonb.table.table.BaseTable`, not imported here: the
table module calls this one)."""

_REGISTERED: dict[str, AfterChange] = {}
_ENTRY_POINTS: dict[str, EntryPoint] | None = None  # the group, read once
_LOADED: dict[str, AfterChange | None] = {}  # entry point name -> its function (None: failed)
_LOCK = threading.Lock()


def register(name: str, fn: AfterChange) -> None:
    """Run ``fn(table)`` after every change of any table (the same ``name`` replaces, an
    entry point's too)."""
    _REGISTERED[name.strip().lower()] = fn


def _entry_points() -> dict[str, EntryPoint]:
    global _ENTRY_POINTS
    with _LOCK:
        if _ENTRY_POINTS is None:
            _ENTRY_POINTS = registered(AFTER_CHANGE_GROUP)
        return _ENTRY_POINTS


def _inside(ep: EntryPoint, folder: Path) -> bool:
    if ep.dist is None:
        return False
    try:
        return _location(ep).is_relative_to(folder.resolve())
    except OSError:
        return True  # cannot tell: do not use it


_LOCATIONS: dict[tuple[str, str], Path] = {}  # where each entry point's distribution is


def _location(ep: EntryPoint) -> Path:
    """The resolved folder of an entry point's distribution (looked up once: an installed
    distribution does not move while a process runs)."""
    key = (ep.name, ep.value)
    found = _LOCATIONS.get(key)
    if found is None:
        assert ep.dist is not None
        found = _LOCATIONS[key] = Path(str(ep.dist.locate_file(""))).resolve()
    return found


def _load(name: str, ep: EntryPoint) -> AfterChange | None:
    with _LOCK:
        if name not in _LOADED:
            try:
                fn = ep.load()
            except Exception:
                _log.exception("evonb: cannot load %s (%s) of group %s", name, ep.value,
                               AFTER_CHANGE_GROUP)
                fn = None
            if fn is not None and not callable(fn):
                _log.error("evonb: %s (%s) of group %s is not callable", name, ep.value,
                           AFTER_CHANGE_GROUP)
                fn = None
            _LOADED[name] = fn
        return _LOADED[name]


def functions(table: Any) -> dict[str, AfterChange]:
    """The functions that run after a change of ``table``, by name: the registered ones and
    those of the entry point group (imported now if not yet)."""
    out: dict[str, AfterChange] = {}
    root = getattr(table, "root", None)
    for name, ep in _entry_points().items():
        if name in _REGISTERED or (isinstance(root, Path) and _inside(ep, root)):
            continue
        fn = _load(name, ep)
        if fn is not None:
            out[name] = fn
    out.update(_REGISTERED)
    return out


def table_changed(table: Any) -> None:
    """Run every function for ``table`` (a commit completed or the properties changed)."""
    for name, fn in functions(table).items():
        try:
            fn(table)
        except Exception:  # after the commit point: log it, never fail the change
            _log.exception("evonb: %s after a change of %s failed", name, table.root)


__all__ = ["AFTER_CHANGE_GROUP", "AfterChange", "functions", "register", "table_changed"]
