"""``check``: whether a table is whole (its timeline, schema versions, data files and log
blocks), and its repair on request: ``python -m evonb check`` in a notebook, with no JVM."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from evonb.notebook.args import identifier, parse_args
from evonb.notebook.display import TableCheck
from evonb.table.check import check_table, repair_table

if TYPE_CHECKING:  # pragma: no cover
    from evonb.notebook.context import Context

CHECK_USAGE = "%evo check <table> [--deep] [--repair [--force]] [--to var]"


def check(ctx: Context, text: str) -> TableCheck:
    """Check a table by name (:func:`evonb.table.check.check_table`); ``--deep`` reads every
    row, ``--repair`` restores lost commits, rolls back failed attempts and removes orphans
    first (:func:`~evonb.table.check.repair_table`; ``--force`` also rolls back attempts that
    may still be running). The table is located, not opened, so a table whose own metadata is
    damaged is still checked. ``--to`` binds the :class:`~evonb.table.check.CheckReport`."""
    args = parse_args(text, usage=CHECK_USAGE, flags=("deep", "repair", "force"),
                      options={"to": identifier}, max_positional=1)
    deep = bool(args.options.get("deep"))
    repair = bool(args.options.get("repair"))
    force = bool(args.options.get("force"))
    if force and not repair:
        raise UsageError(f"--force needs --repair. Usage: {CHECK_USAGE}")
    name = args.table(CHECK_USAGE)
    path = ctx.locate(name)
    report = (repair_table(path, force=force, deep=deep) if repair
              else check_table(path, deep=deep))
    target = args.options.get("to")
    if target:
        ctx.user_ns[target] = report
    return TableCheck(name, report, deep=deep, repair=repair)


__all__ = ["CHECK_USAGE", "check"]
