"""The ``evonb`` command line (also ``python -m evonb``).

``evonb check <table> [--deep] [--repair [--force]] [--json]`` verifies a table (see
:mod:`evonb.table.check`): exit code 0 when it is clean, 1 when problems remain, 2 on a usage
error.

``evonb iceberg sync <table>`` publishes Iceberg metadata beside the table
(:mod:`evonb.iceberg`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evonb.errors import EvoError
from evonb.iceberg import sync_and_record
from evonb.table.check import check_table, repair_table


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evonb", description="Tools for evonb tables.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = sub.add_parser(
        "check", help="verify a table; --repair rolls back failed attempts and removes orphans",
        description="Verify an evonb table: every file a live commit references exists, has "
        "the size its commit recorded and a readable Parquet footer or Avro header, every "
        "live file's schema version exists, no orphan files, a well-formed timeline, no commit "
        "whose completed file went missing. Exit code 0 when clean, 1 when problems remain.")
    check.add_argument("table", help="the table's folder (a path or a file: URI)")
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
    iceberg = sub.add_parser("iceberg", help="Iceberg metadata beside the table")
    iceberg.add_argument("action", choices=["sync"], help="sync: publish Iceberg metadata "
                         "for the table's retained history under <table>/metadata/")
    iceberg.add_argument("table", help="the table's folder (a path or a file: URI)")
    return parser


def _iceberg(args: argparse.Namespace) -> int:
    try:
        result = sync_and_record(args.table)
    except EvoError as exc:
        print(f"evonb iceberg sync: {exc}", file=sys.stderr)
        return 1
    state = "published" if result.written else "unchanged"
    print(f"{result.metadata_file} ({state}, {len(result.snapshots)} snapshots)")
    if result.blocked:
        print(f"evonb iceberg sync: the latest state is not exported: {result.blocked}",
              file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""

    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "iceberg":
        return _iceberg(args)
    if args.command != "check":
        parser.print_help(sys.stderr)
        return 2
    if args.force and not args.repair:
        parser.error("--force needs --repair")
    try:
        report = (repair_table(args.table, force=args.force, deep=args.deep) if args.repair
                  else check_table(args.table, deep=args.deep))
    except EvoError as exc:
        print(f"evonb check: {exc}", file=sys.stderr)
        return 1
    print(report.to_json() if args.json else report.render())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
