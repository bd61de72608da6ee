"""The ``%evo`` subcommands: one small module per group, each making one library call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evonb.notebook.commands import ddl, explore, query, services, spark

if TYPE_CHECKING:  # pragma: no cover
    from evonb.notebook.context import Context


@dataclass(frozen=True)
class Command:
    """A subcommand: ``run(ctx, text)``; ``whole`` commands get their own word in ``text``
    (the DDL statement starts with it)."""

    name: str
    run: Callable[[Context, str], Any]
    usage: str
    summary: str
    whole: bool = False
    spark: bool = False


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("create", ddl.create, ddl.CREATE_USAGE, "create a table (DDL)", whole=True),
    Command("alter", ddl.alter, ddl.ALTER_USAGE,
            "change the schema (several statements = one change); shows the diff", whole=True),
    Command("preview", ddl.preview, ddl.PREVIEW_USAGE,
            "the diff and cost of an ALTER or a revert, without committing"),
    Command("revert", ddl.revert, ddl.REVERT_USAGE,
            "make an older schema version's fields current again; shows the diff"),
    Command("describe", explore.describe, explore.DESCRIBE_USAGE,
            "a table's settings and schema (as of a commit)"),
    Command("history", explore.history, explore.HISTORY_USAGE,
            "the timeline widget: commits, schema then, data then, changes"),
    Command("diff", explore.diff, explore.DIFF_USAGE,
            "the diff between two schemas; with --data, the rows that changed between two commits"),
    Command("lineage", explore.lineage, explore.LINEAGE_USAGE,
            "every column's life through the schema versions v0..vN"),
    Command("read", query.read, query.READ_USAGE, "the first rows (as of a commit)"),
    Command("sql", query.sql, query.SQL_USAGE, "Spark SQL over evonb tables",
            spark=True),
    Command("compact", services.compact, services.USAGES["compact"],
            "merge log blocks into base files, rewrite files of older schema versions",
            spark=True),
    Command("cluster", services.cluster, services.USAGES["cluster"],
            "rewrite small data files into files of the target size, sorted", spark=True),
    Command("rewrite", services.rewrite, services.USAGES["rewrite"],
            "rewrite data files in the latest schema", spark=True),
    Command("clean", services.clean, services.USAGES["clean"], "remove files no commit needs",
            spark=True),
    Command("rollback", services.rollback, services.USAGES["rollback"],
            "roll back to a commit", spark=True),
    Command("spark", spark.spark, spark.SPARK_USAGE,
            "session status and Spark UI link; stop, start, restart"),
)}

_CHANGES = ("insert", "update", "delete", "merge", "truncate")
"""First words of SQL statements that change a table: ``%evo sql`` refuses them on evonb
tables with what to use instead."""

ALIASES = {"select": "sql", "with": "sql", "show": "sql", "desc": "describe", "log": "history",
           **dict.fromkeys(_CHANGES, "sql")}
"""First words that mean a subcommand."""

SQL_WORDS = frozenset({"select", "with", "show", *_CHANGES})
"""Aliases that stay part of the text (the query starts with them)."""


def help_text() -> str:
    """The list of subcommands with their usage."""
    lines = ["%evo <command> ... (line) or %%evo [command] + statements (cell). Commands:"]
    for c in COMMANDS.values():
        lines.append(f"  {c.name:<9} {c.summary}\n            {c.usage}")
    lines += [
        "Commits: an instant (20261122101500000), a date-time in quotes ('2026-11-22 10:15'), "
        "or @N for the N-th commit (@0 the first, @-1 the latest).",
        "Schema versions: vN for the N-th schema version (v0 the first; %evo lineage lists "
        "them), or a version id, wherever a schema is named (schema ..., diff).",
        "Settings: %config Evo.warehouse = '...' (also Evo.engine = 'auto'|'arrow'|'spark', "
        "Evo.spark_master, Evo.spark_conf, Evo.preview_rows).",
    ]
    return "\n".join(lines)


__all__ = ["ALIASES", "COMMANDS", "SQL_WORDS", "Command", "help_text"]
