"""The ``%evo`` subcommands: one small module per group, each making one library call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evonb.notebook.commands import ddl, explore, health, query, services, spark

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
    examples: tuple[str, ...] = ()


COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command("create", ddl.create, ddl.CREATE_USAGE, "create a table (DDL)", whole=True,
            examples=("%evo create table trips (id bigint not null, rider string, fare double, "
                      "ts bigint) tblproperties (primaryKey='id', preCombineField='ts')",
                      "%evo create table trips_mor (id bigint not null, v string) "
                      "tblproperties (primaryKey='id', type='mor')")),
    Command("alter", ddl.alter, ddl.ALTER_USAGE,
            "change the schema (several statements = one change); shows the diff", whole=True,
            examples=("%evo alter table trips rename column rider to driver",
                      "%evo alter table trips add column tip double default 0.0 after fare")),
    Command("preview", ddl.preview, ddl.PREVIEW_USAGE,
            "the diff and cost of an ALTER or a revert, without committing",
            examples=("%evo preview alter table trips alter column fare type string",
                      "%evo preview revert trips to v0")),
    Command("revert", ddl.revert, ddl.REVERT_USAGE,
            "make an older schema version's fields current again; shows the diff",
            examples=("%evo revert trips to v1 --preview", "%evo revert trips to v1")),
    Command("describe", explore.describe, explore.DESCRIBE_USAGE,
            "a table's settings and schema (as of a commit)",
            examples=("%evo describe trips", "%evo describe trips as of @0",
                      "%evo describe trips schema v1")),
    Command("history", explore.history, explore.HISTORY_USAGE,
            "the timeline widget: commits, schema then, data then, changes",
            examples=("%evo history trips",)),
    Command("diff", explore.diff, explore.DIFF_USAGE,
            "the diff between two schemas; with --data, the rows that changed between two commits",
            examples=("%evo diff trips v0", "%evo diff trips @1 @-1 --data --to changes")),
    Command("lineage", explore.lineage, explore.LINEAGE_USAGE,
            "every column's life through the schema versions v0..vN",
            examples=("%evo lineage trips",)),
    Command("read", query.read, query.READ_USAGE, "the first rows (as of a commit)",
            examples=("%evo read trips --limit 5", "%evo read trips as of @0 schema latest",
                      "%evo read trips --columns id,driver --to df")),
    Command("sql", query.sql, query.SQL_USAGE, "Spark SQL over evonb tables",
            spark=True,
            examples=("%evo sql select driver, count(*) from trips group by driver",
                      "%evo sql UPDATE trips SET driver = upper(driver) WHERE id = 1")),
    Command("check", health.check, health.CHECK_USAGE,
            "verify a table's timeline and files; repair failed attempts and orphans",
            examples=("%evo check trips", "%evo check trips --deep", "%evo check trips --repair")),
    Command("compact", services.compact, services.USAGES["compact"],
            "merge log blocks into base files, rewrite files of older schema versions",
            spark=True, examples=("%evo compact trips_mor",)),
    Command("cluster", services.cluster, services.USAGES["cluster"],
            "rewrite small data files into files of the target size, sorted", spark=True,
            examples=("%evo cluster trips by (ts)", "%evo cluster trips by (ts, driver) zorder")),
    Command("rewrite", services.rewrite, services.USAGES["rewrite"],
            "rewrite data files in the latest schema", spark=True,
            examples=("%evo rewrite alter table trips alter column fare type float",
                      "%evo rewrite trips --purge-dropped")),
    Command("rollback", services.rollback, services.USAGES["rollback"],
            "roll back to a commit", spark=True,
            examples=("%evo rollback trips", "%evo rollback trips @-3 --cascade")),
    Command("clean", services.clean, services.USAGES["clean"], "remove files no commit needs",
            spark=True, examples=("%evo clean trips --retain-commits 10",)),
    Command("spark", spark.spark, spark.SPARK_USAGE,
            "session status and Spark UI link; stop, start, restart",
            examples=("%evo spark", "%evo spark restart --master local[2]")),
)}

_CHANGES = ("insert", "update", "delete", "merge", "truncate")
"""First words of SQL statements that change a table: ``%evo sql`` refuses them on evonb
tables with what to use instead."""

ALIASES = {"select": "sql", "with": "sql", "show": "sql", "desc": "describe", "log": "history",
           "schema": "describe", **dict.fromkeys(_CHANGES, "sql")}
"""First words that mean a subcommand."""

SQL_WORDS = frozenset({"select", "with", "show", *_CHANGES})
"""Aliases that stay part of the text (the query starts with them)."""


_NOTES = (
    "Commits: an instant (20261122101500000), a date-time in quotes ('2026-11-22 10:15'), "
    "or @N for the N-th commit (@0 the first, @-1 the latest).",
    "Schema versions: vN for the N-th schema version (v0 the first; %evo lineage lists "
    "them), or a version id, wherever a schema is named (schema ..., diff).",
    "Settings: %config Evo.warehouse = '...' (also Evo.engine = 'auto'|'arrow'|'spark', "
    "Evo.spark_master, Evo.spark_conf, Evo.preview_rows).",
)
"""What commits and schema versions are named by, and the settings."""


def help_text(command: str | None = None) -> str:
    """The list of subcommands with their usage; with ``command`` (a name in
    :data:`COMMANDS`), that subcommand's usage and examples."""
    if command is not None:
        c = COMMANDS[command]
        lines = [f"%evo {c.name}: {c.summary}", f"  {c.usage}"]
        if c.examples:
            lines += ["Examples:", *(f"  {x}" for x in c.examples)]
        lines += [*_NOTES[:2], "All commands: %evo help"]
        return "\n".join(lines)
    lines = ["%evo <command> ... (line) or %%evo [command] + statements (cell). Commands:"]
    for c in COMMANDS.values():
        lines.append(f"  {c.name:<9} {c.summary}\n            {c.usage}")
    lines += [*_NOTES, "Examples of one command: %evo help <command>"]
    return "\n".join(lines)


__all__ = ["ALIASES", "COMMANDS", "SQL_WORDS", "Command", "help_text"]
