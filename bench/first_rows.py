"""First rows in a fresh process: a new Python process that loads the ``%evo`` magics and shows
the first 20 rows of an evolved table with ``%evo read``, with the Arrow reader
(``Evo.engine = 'arrow'``: no JVM) against Spark (``'spark'``: the JVM starts first)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from bench.harness import Case, Result, Side

if TYPE_CHECKING:  # pragma: no cover
    from bench.suite import Context

SCRIPT = """
import sys
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "evonb")
shell.run_line_magic("config", f"Evo.warehouse = {sys.argv[1]!r}")
shell.run_line_magic("config", f"Evo.engine = {sys.argv[2]!r}")
print(repr(shell.run_line_magic("evo", "read first_rows --limit 20")))
"""


def _show(warehouse: str, engine: str) -> str:
    """Run the script in a new process; its output (the preview as text)."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, warehouse, engine],
                          capture_output=True, text=True, timeout=600, check=False,
                          env=dict(os.environ))
    if done.returncode != 0:
        raise RuntimeError(f"the {engine} process failed: {done.stderr[-2000:]}")
    return done.stdout


def first_rows(ctx: Context) -> Iterator[Case | Result]:
    """A fresh process to the first 20 rows of ``%evo read``: Arrow path vs Spark path."""
    spark, rows = ctx.spark, ctx.size.rows
    import evonb

    warehouse = ctx.path("first_rows_warehouse")
    t = evonb.create_table(warehouse / "first_rows",
                           "id bigint not null, name string, amount float, ts bigint",
                           primary_key="id", precombine="ts")
    t.write(spark.range(rows).selectExpr("id", "concat('n', id) AS name",
                                         "CAST(id % 1000 AS float) / 10 AS amount",
                                         "1L AS ts"), "insert")
    t.alter("ALTER TABLE first_rows RENAME COLUMN name TO label; "
            "ALTER TABLE first_rows ALTER COLUMN amount TYPE double; "
            "ALTER TABLE first_rows ADD COLUMN region string DEFAULT 'eu'")
    t.write(spark.range(0, rows, 10).selectExpr("id", "concat('u', id) AS label",
                                                "CAST(id AS double) AS amount", "2L AS ts",
                                                "'us' AS region"), "upsert")
    shown: dict[str, str] = {}

    def run(engine: str) -> None:
        shown[engine] = _show(str(warehouse), engine)

    def same(result: Result) -> None:
        equal = bool(shown) and shown.get("arrow") == shown.get("spark")
        lines = shown.get("arrow", "").splitlines()
        result.notes.append(f"both processes printed the same 20 rows: {equal} "
                            f"({len(lines) - 3} rows shown; table of {rows:,} rows, "
                            f"{len(t.snapshot().files)} files, 2 schema versions in use)")

    yield Case(
        name="first_rows.fresh_process",
        evonb=Side("new process: %load_ext evonb, Evo.engine='arrow', %evo read (20 rows)",
                   lambda: run("arrow")),
        baseline=Side("new process: the same with Evo.engine='spark' (starts the JVM)",
                      lambda: run("spark")),
        bar=0.2, after=same,
    )


__all__ = ["first_rows"]
