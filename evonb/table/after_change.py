"""Work that follows a change of a table, registered by the layers above the format.

The format never imports those layers; they register a function here when they are imported
(:func:`register`), and the format calls every registered function after a commit completes
and after the table properties change (:func:`table_changed`). Functions are registered by
evonb's own code only, never named by a table: a table's properties can switch a registered
behaviour on or off, nothing more.

A registered function must not raise: what it does after the commit point cannot undo the
commit. Should one raise anyway, the error is logged and the other functions still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

_log = logging.getLogger(__name__)

AfterChange = Callable[[Any], None]
"""Called with the table (a :class:`~evonb.table.table.BaseTable`, not imported here: the
table module calls this one)."""

_REGISTERED: dict[str, AfterChange] = {}


def register(name: str, fn: AfterChange) -> None:
    """Run ``fn(table)`` after every change of any table (the same ``name`` replaces)."""
    _REGISTERED[name] = fn


def table_changed(table: Any) -> None:
    """Run every registered function for ``table`` (a commit completed or the properties
    changed)."""
    for name, fn in list(_REGISTERED.items()):
        try:
            fn(table)
        except Exception:  # after the commit point: log it, never fail the change
            _log.exception("evonb: %s after a change of %s failed", name, table.root)


__all__ = ["AfterChange", "register", "table_changed"]
