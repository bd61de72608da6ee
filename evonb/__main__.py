"""The ``evonb`` command line (also ``python -m evonb``); ``docs/cli.md`` describes it.

Every command takes the table's folder (a path or a ``file:`` URI) as its first argument:

=========== ===============================================================================
``history``  the commits, in the order they completed
``schema``   the latest schema, one version (``--version v1``) or all of them (``--all``)
``diff``     what changed between two schema versions or the schemas of two commits
``lineage``  the life of every column through the schema versions
``read``     rows, read without Spark (``--as-of``, ``--schema``, ``--columns``, ``--limit``)
``alter``    run ALTER TABLE statements (``--dry-run``: show the diff, commit nothing)
``compact``  merge log blocks and rewrite files of older schema versions (starts Spark)
``cluster``  rewrite small files into files of the target size, sorted (starts Spark)
``clean``    remove files and schema versions no retained commit needs
``rollback`` undo the last commit, or the one named (``--cascade``)
``check``    verify the table's files and timeline (``--deep``, ``--repair``)
``iceberg``  ``iceberg sync``: publish Iceberg metadata beside the table; ``iceberg status``
             how far the published view is from the table
=========== ===============================================================================

Commands whose output is data take ``--json``. Only ``compact``, ``cluster`` (and ``alter`` with
``SET NOT NULL``, which first counts the nulls) start the managed Spark session; the others
run without a JVM.

Exit codes: 0 on success; 1 on an evonb error (printed to stderr as ``evonb: error: ...``
and its hint) and when ``check`` finds problems, ``iceberg sync`` cannot export the latest
state or ``iceberg status`` is neither current nor off; 2 on a usage error (an unknown
command or option, a missing argument).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from evonb.api import Table, open_table
from evonb.arrow.python_values import python_rows
from evonb.errors import EvoError
from evonb.iceberg import iceberg_status, sync_and_record
from evonb.table.check import check_table, repair_table
from evonb.table.history import Commit

TABLE_HELP = "the table's folder (a path or a file: URI)"
JSON_HELP = "print the result as JSON"
CELL_WIDTH = 40
"""The widest a cell of ``read``'s table is printed (longer values are cut with ``...``)."""


# ----------------------------------------------------------------------------- output
def _json_value(value: Any) -> Any:
    """A value JSON cannot hold as it is, as JSON: date-times and dates in ISO form, decimals
    as strings (no precision lost), bytes in base64."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=_json_value))


def _commit_dict(commit: Commit | None, t: Table | None = None) -> dict[str, Any] | None:
    """A commit as JSON: the columns of the history, when it completed and what it did
    (``t``: the table, which names the schema version when the commit does not)."""
    if commit is None:
        return None
    name = commit.schema_name
    if not name and t is not None:
        name = t.version_name(commit.schema_version)
        name = "" if name == commit.schema_version else name
    return {"instant": commit.instant, "time": commit.time, "completed": commit.completed,
            "action": commit.action, "operation": commit.operation,
            "schema_version": commit.schema_version, "schema_name": name,
            "files_added": commit.files_added, "files_removed": commit.files_removed,
            "rows_written": commit.rows_written, "effect": commit.effect}


def _cell(value: Any, width: int | None = CELL_WIDTH) -> str:
    """One value of a printed table: ``null`` for None, nested values as JSON, cut to
    ``width`` characters (None: not cut)."""
    if value is None:
        text = "null"
    elif isinstance(value, dict | list | tuple):
        text = json.dumps(value, ensure_ascii=False, default=_json_value)
    elif isinstance(value, bytes | bytearray | memoryview | datetime | date | time | Decimal):
        text = str(_json_value(value))
    else:
        text = str(value)
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text if width is None or len(text) <= width else text[:width - 3] + "..."


def _render_rows(names: Sequence[str], rows: Sequence[dict[str, Any]], *,
                 width: int | None = CELL_WIDTH) -> str:
    """Rows as an aligned text table under a header row (cells cut to ``width``)."""
    cells = [[_cell(r[n], width) for n in names] for r in rows]
    widths = [max([len(n), *(len(row[i]) for row in cells)]) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in cells]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- commands
def _history(t: Table, args: argparse.Namespace) -> int:
    history = t.history()
    commits = list(history)[-args.last:] if args.last else list(history)
    if args.json:
        _print_json([_commit_dict(c) for c in commits])
        return 0
    print(f"History of {t.name}: {len(history)} commits")
    rows = [{"instant": c.instant, "completed": c.completed, "operation": c.operation,
             "schema": c.schema_name or c.schema_version, "effect": c.effect} for c in commits]
    print(_render_rows(["instant", "completed", "operation", "schema", "effect"], rows,
                       width=None))
    return 0


def _schema(t: Table, args: argparse.Namespace) -> int:
    if args.all:
        if args.version is not None:
            raise _Usage("--all and --version exclude each other")
        versions = t.schemas()
        if args.json:
            _print_json([{"name": n, "version_id": s.version_id, "schema": s.to_dict()}
                         for n, s in zip(versions.names, versions, strict=True)])
        elif args.ddl:
            for n, s in zip(versions.names, versions, strict=True):
                print(f"{n} {s.version_id}: {s.to_ddl()}")
        else:
            print(repr(versions))
        return 0
    schema = t.resolve_schema(args.version) if args.version is not None else t.schema
    if args.json:
        _print_json({"name": t.version_name(schema.version_id), **schema.to_dict()})
    elif args.ddl:
        print(schema.to_ddl())
    else:
        print(f"{t.version_name(schema.version_id)}: {schema}")
    return 0


def _show(result: Any, args: argparse.Namespace) -> int:
    """Print ``result``: its ``to_dict()`` as JSON with ``--json``, else its text."""
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result)
    return 0


def _diff(t: Table, args: argparse.Namespace) -> int:
    return _show(t.diff(args.a, args.b), args)


def _lineage(t: Table, args: argparse.Namespace) -> int:
    return _show(t.lineage(), args)


def _read(t: Table, args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise _Usage("--limit must be 0 or more")
    columns = None
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        if not columns:
            raise _Usage("--columns names no column")
    data = t.to_arrow(args.as_of, schema=args.schema, columns=columns,
                      limit=args.limit or None)
    rows = python_rows(data)
    if args.json:
        _print_json(rows)
        return 0
    print(_render_rows(data.column_names, rows))
    capped = args.limit and len(rows) == args.limit
    print(f"({len(rows)} row{'' if len(rows) == 1 else 's'}"
          f"{f'; --limit {args.limit} reached' if capped else ''})")
    return 0


_ALTER_TABLE = re.compile(r"\s*alter\s+table\b", re.IGNORECASE)


def _ddl_text(t: Table, ddl: str) -> str:
    """The DDL to run: ``-`` reads it from standard input; a text that does not start with
    ``ALTER TABLE`` is one clause of an ``ALTER TABLE`` on this table."""
    if ddl == "-":
        ddl = sys.stdin.read()
    if not ddl.strip():
        raise _Usage("the DDL is empty")
    if not _ALTER_TABLE.match(ddl):
        ddl = f"ALTER TABLE `{t.name.replace('`', '``')}` {ddl.strip()}"
    return ddl


def _alter(t: Table, args: argparse.Namespace) -> int:
    ddl = _ddl_text(t, args.ddl)
    if args.dry_run:
        preview = t.preview_alter(ddl)
        if args.json:
            _print_json({**preview.to_dict(), "cost": preview.cost, "note": preview.note,
                         "committed": False})
        else:
            print(preview)
        return 0
    changes = t.alter(ddl)
    name = t.version_name(changes.after.version_id)
    if args.json:
        _print_json({**changes.to_dict(), "after_name": name, "committed": bool(changes)})
    elif changes:
        print(f"{changes}\nschema {name} ({changes.after.version_id}) committed")
    else:
        print("no change: nothing was committed")
    return 0


def _report_commit(t: Table, commit: Commit | None, args: argparse.Namespace,
                   nothing: str) -> int:
    """A service's commit: ``compact 2026...: +1/-1 files, 3 rows``, ``nothing`` when it
    made none, or the commit as JSON (``null`` for none)."""
    if args.json:
        _print_json(_commit_dict(commit, t))
    elif commit is None:
        print(nothing)
    else:
        print(f"{commit.operation} {commit.instant}: {commit.effect}")
    return 0


def _compact(t: Table, args: argparse.Namespace) -> int:
    commit = t.compact(upgrade_schema=not args.no_upgrade_schema)
    return _report_commit(t, commit, args, "nothing to compact")


def _cluster(t: Table, args: argparse.Namespace) -> int:
    by = [c.strip() for c in args.by.split(",") if c.strip()] if args.by is not None else None
    target = (None if args.target_file_mb is None
              else int(args.target_file_mb * 1024 * 1024))  # below 1 byte: refused
    commit = t.cluster(by=by, order="zorder" if args.zorder else None,
                       target_file_bytes=target, where=args.where)
    return _report_commit(t, commit, args, "nothing to cluster")


def _clean(t: Table, args: argparse.Namespace) -> int:
    commit = t.clean(retain_commits=args.retain_commits, retain_hours=args.retain_hours,
                     keep_schema_versions=args.keep_schema_versions)
    return _report_commit(t, commit, args, "nothing to clean")


def _rollback(t: Table, args: argparse.Namespace) -> int:
    commit = t.rollback(args.commit, cascade=args.cascade)
    return _report_commit(t, commit, args, "")


TABLE_COMMANDS: dict[str, Callable[[Table, argparse.Namespace], int]] = {
    "history": _history, "schema": _schema, "diff": _diff, "lineage": _lineage,
    "read": _read, "alter": _alter, "compact": _compact, "cluster": _cluster,
    "clean": _clean,
    "rollback": _rollback,
}


def _check(args: argparse.Namespace) -> int:
    if args.force and not args.repair:
        raise _Usage("--force needs --repair")
    report = (repair_table(args.table, force=args.force, deep=args.deep) if args.repair
              else check_table(args.table, deep=args.deep))
    print(report.to_json() if args.json else report.render())
    return 0 if report.ok else 1


def _iceberg(args: argparse.Namespace) -> int:
    if args.action == "status":
        status = iceberg_status(args.table)
        print(status)
        return 0 if status.ok else 1
    result = sync_and_record(args.table)
    state = "published" if result.written else "unchanged"
    print(f"{result.metadata_file} ({state}, {len(result.snapshots)} snapshots)")
    if result.blocked:
        print(f"evonb: error: the latest state is not exported: {result.blocked}",
              file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------------------ parser
class _Usage(Exception):
    """A usage mistake found after parsing (reported as argparse reports its own: exit 2)."""


def _command(sub: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand's parser, which it finds again in ``args.command_parser`` (to report a
    usage mistake found after parsing)."""
    parser: argparse.ArgumentParser = sub.add_parser(name, **kwargs)
    parser.set_defaults(command_parser=parser)
    return parser


def _add_table(parser: argparse.ArgumentParser, *, json_output: bool = True) -> None:
    parser.add_argument("table", help=TABLE_HELP)
    if json_output:
        parser.add_argument("--json", action="store_true", help=JSON_HELP)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evonb", description="Tools for evonb tables. Every command takes the table's "
        "folder; `evonb COMMAND --help` describes one command.",
        epilog="Exit codes: 0 success; 1 an evonb error (or problems found by check); "
        "2 a usage error.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    refs = ("A commit is named by its instant, @N (the N-th commit of the history, @-1 the "
            "latest), latest, or a date-time (the last commit completed at or before it); a "
            "schema version also by its name (v0, v1, ...) or its id.")

    p = _command(sub, "history", help="the commits, in the order they completed",
                       description="List the table's commits in the order they completed: "
                       "instant, completion time, operation, schema version and effect.")
    _add_table(p)
    p.add_argument("--last", type=int, metavar="N", help="only the last N commits")

    p = _command(sub, "schema", help="the latest schema, or another version",
                       description="Print a schema with its column IDs. " + refs)
    _add_table(p)
    p.add_argument("--version", metavar="REF",
                   help="the schema version (v1, a version id) or the schema of a commit "
                   "(default: the latest)")
    p.add_argument("--all", action="store_true", help="every schema version, oldest first")
    p.add_argument("--ddl", action="store_true", help="print column DDL text")

    p = _command(sub, "diff", help="what changed between two schema versions",
                       description="What changed, by column ID, from schema A to schema B. "
                       + refs)
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("a", metavar="A", help="the older schema (v0, a version id or a commit)")
    p.add_argument("b", metavar="B", nargs="?", default="latest",
                   help="the newer schema (default: latest)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = _command(sub, "lineage", help="the life of every column through the versions",
                       description="When each column was born, renamed, retyped, moved, given "
                       "a default, made required or optional, documented or dropped, through "
                       "the schema versions v0, v1, ...")
    _add_table(p)

    p = _command(sub, "read", help="rows of the table (no Spark)",
                       description="Read rows without Spark and print them as a table, or as "
                       "JSON records with --json. " + refs)
    _add_table(p)
    p.add_argument("--as-of", metavar="REF", help="read the table as of this commit")
    p.add_argument("--schema", metavar="REF",
                   help="read in this schema version (v1, a version id, a commit)")
    p.add_argument("--columns", metavar="A,B", help="columns to read, comma separated; "
                   "struct members by dotted path (info.city)")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="at most N rows (default 20; 0: every row)")

    p = _command(sub, "alter", help="run ALTER TABLE statements",
                       description="Run ALTER TABLE statements (one new schema version; no "
                       "data file is touched). A text that does not start with ALTER TABLE is "
                       "one clause for this table: evonb alter T 'RENAME COLUMN a TO b'. SET NOT "
                       "NULL counts the nulls with Spark first.")
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("ddl", metavar="DDL", help="the statements, or - to read them from "
                   "standard input")
    p.add_argument("--dry-run", action="store_true",
                   help="print the diff and its cost; commit nothing")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = _command(sub, "compact", help="merge log blocks, rewrite old-schema files (Spark)",
                       description="Merge log blocks into new base files and rewrite files of "
                       "older schema versions in the latest one. Starts the managed Spark "
                       "session when there is work to do.")
    _add_table(p)
    p.add_argument("--no-upgrade-schema", action="store_true",
                   help="leave files of older schema versions as they are")

    p = _command(sub, "cluster", help="rewrite small files into sorted files (Spark)",
                       description="Rewrite small files (and base files with log blocks) into "
                       "files of about the target size, sorted by the table's clustering order "
                       "or --by, in one replacecommit. Starts the managed Spark session.")
    _add_table(p)
    p.add_argument("--by", metavar="COLUMNS", default=None,
                   help="sort by these columns (comma-separated); saved as the table's order")
    p.add_argument("--zorder", action="store_true",
                   help="z-order the --by columns (two or more) instead of sorting linearly")
    p.add_argument("--target-file-mb", type=float, default=None, metavar="N",
                   help="target file size in MiB (default: the table's, else 128)")
    p.add_argument("--where", default=None, metavar="PREDICATE",
                   help="only partitions matching this SQL predicate over partition columns")

    p = _command(sub, "clean", help="remove files no retained commit needs",
                       description="Remove data files and schema versions that no commit in "
                       "the retention window needs (default: the table's properties).")
    _add_table(p)
    p.add_argument("--retain-commits", type=int, metavar="N",
                   help="keep the last N commits readable")
    p.add_argument("--retain-hours", type=float, metavar="H",
                   help="keep the commits of the last H hours readable")
    p.add_argument("--keep-schema-versions", type=int, metavar="N",
                   help="keep at least N schema versions")

    p = _command(sub, "rollback", help="undo the last commit, or the one named",
                       description="Undo the data, schema or service commit that completed "
                       "last, or COMMIT (which must be the last unless --cascade). " + refs)
    p.add_argument("table", help=TABLE_HELP)
    p.add_argument("commit", metavar="COMMIT", nargs="?", help="the commit to undo "
                   "(default: the last)")
    p.add_argument("--cascade", action="store_true",
                   help="also undo the commits that completed after COMMIT")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    check = _command(
        sub, "check",
        help="verify a table; --repair rolls back failed attempts and removes orphans",
        description="Verify an evonb table: every file a live commit references exists, has "
        "the size its commit recorded and a readable Parquet footer or Avro header, every "
        "live file's schema version exists, no orphan files, a well-formed timeline, no commit "
        "whose completed file went missing. Exit code 0 when clean, 1 when problems remain.")
    check.add_argument("table", help=TABLE_HELP)
    check.add_argument("--deep", action="store_true",
                       help="also read every row group of every live Parquet file and every "
                       "block of every Avro log block")
    check.add_argument("--repair", action="store_true",
                       help="restore commits whose completed file went missing (when "
                       "provable), roll back failed attempts and remove orphans, then check "
                       "again")
    check.add_argument("--force", action="store_true",
                       help="with --repair: also roll back attempts that may still be running "
                       "(only when no writer is running)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    iceberg = _command(sub, "iceberg", help="Iceberg metadata beside the table",
                             description="Publish Iceberg metadata beside the table, or say how "
                       "far the published view is from it.")
    iceberg.add_argument("action", choices=["sync", "status"],
                         help="sync: publish Iceberg metadata for the table's retained history "
                         "under <table>/metadata/; status: how far the published view is from "
                         "the table (exit 1 unless current or off)")
    iceberg.add_argument("table", help=TABLE_HELP)
    return parser


def _error(exc: EvoError) -> None:
    """An evonb error on stderr: ``evonb: error: <message>`` and ``hint: <hint>``."""
    lines = [f"evonb: error: {exc.message}"]
    if exc.hint:
        lines.append(f"hint: {exc.hint}")
    print("\n".join(lines), file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    if args.command == "check":
        return _check(args)
    if args.command == "iceberg":
        return _iceberg(args)
    return TABLE_COMMANDS[args.command](open_table(args.table), args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (a usage error exits with 2)."""

    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return _run(args)
    except _Usage as exc:
        args.command_parser.error(str(exc))  # exits with 2
    except EvoError as exc:
        _error(exc)
        return 1
    except BrokenPipeError:  # the reader of the output went away (`evonb read T | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"evonb: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("evonb: interrupted", file=sys.stderr)
        return 130
    raise AssertionError("unreachable")  # pragma: no cover (error() exits)


if __name__ == "__main__":
    sys.exit(main())
