"""The ``iceberg_export`` benchmark group: what publishing Iceberg metadata costs, and how fast an
Iceberg client reads an evonb table.

- ``iceberg_export.upsert``: a 1-row upsert into a table with ``evonb.iceberg.enabled = 'true'``
  against the same upsert into an identical table without it (bar <= 1.15x). Each sample adds a
  commit on both sides; a publication replays the retained history, so its cost grows with it.
- ``iceberg_export.write``: a write of every row of the size into a fresh table, with the
  property on against off (bar <= 1.03x).
- ``iceberg_export.pyiceberg_read``: pyiceberg's ``scan().to_arrow()`` of the evolved evonb
  table through the published metadata, against pyiceberg reading its own table of the same rows
  and the same schema changes (bar <= 1.1x). The evolution is the ``evolved_read`` one without
  read defaults (format version 2 cannot carry them); both reads must return the same rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from bench.harness import Case, Result, Side, skipped
from bench.suite import (
    BASE_COLUMNS,
    EVOLUTION,
    PYICEBERG_MISSING,
    _apply,
    _ddl,
    _slice,
    build_iceberg_evolved,
    has_pyiceberg,
)
from bench.util import same_rows

if TYPE_CHECKING:  # pragma: no cover
    from bench.suite import Context
    from evonb.api import Table

ON = {"evonb.iceberg.enabled": "true"}
COLUMNS = {"id": ("bigint", "id"), "ts": ("bigint", "0"), "qty": ("int", "id % 1000"),
           "amount": ("double", "(id % 1000) / 10"), "name": ("string", "concat('n', id)")}
FILES = 8


def _no_defaults(ddl: str) -> str:
    """An ``evolved_read`` change without its read default."""
    return ddl.split(" DEFAULT ")[0]


def _evolved_export(ctx: Context) -> Table:
    """The ``evolved_read`` table and slices, without read defaults, publishing at the end."""
    import evonb
    from evonb.iceberg import sync

    spark, size = ctx.spark, ctx.size
    columns = dict(BASE_COLUMNS)
    t = evonb.create_table(ctx.path("ice_export"), _ddl(columns))
    steps = len(EVOLUTION) + 1
    bounds = [size.rows * i // steps for i in range(steps + 1)]
    t.write(_slice(spark, columns, bounds[0], bounds[1], size.slice_partitions))
    for i, (ddl, op) in enumerate(EVOLUTION, start=1):
        t.alter(f"ALTER TABLE {t.name} {_no_defaults(ddl)}")
        columns = _apply(columns, op)
        t.write(_slice(spark, columns, bounds[i], bounds[i + 1], size.slice_partitions))
    result = sync(t)
    if result.blocked:
        raise AssertionError(f"the evolved table is not exported: {result.blocked}")
    return t


def iceberg_export(ctx: Context) -> Iterator[Case | Result]:
    """Publication cost (upsert, write) and pyiceberg reading the export vs its own table."""
    import evonb

    spark, size = ctx.spark, ctx.size
    if not has_pyiceberg():
        yield skipped("iceberg_export", "iceberg_export", PYICEBERG_MISSING)
        return

    def keyed(name: str, properties: dict[str, str]) -> Table:
        t = evonb.create_table(ctx.path(name), _ddl(COLUMNS), primary_key="id",
                               precombine="ts", properties=properties)
        t.write(_slice(spark, COLUMNS, 0, size.rows, FILES))
        return t

    on, off = keyed("ice_on", ON), keyed("ice_off", {})
    ts = itertools.count(1)

    def upsert(t: Table) -> Any:
        cols = dict(COLUMNS, ts=("bigint", str(next(ts))))
        return t.write(_slice(spark, cols, 7, 8, 1), mode="upsert")

    def published(result: Result) -> None:
        status = on.iceberg_status()
        result.notes.append(f"after the samples: the Iceberg view is {status.state} "
                            f"(metadata v{status.metadata_version}), "
                            f"{len(on.timeline.completed())} commits on each side")
        if status.state != "current":
            raise AssertionError(f"publication fell behind: {status}")

    yield Case(
        name="iceberg_export.upsert",
        evonb=Side("1-row upsert, evonb.iceberg.enabled = 'true'", lambda: upsert(on)),
        baseline=Side("the same upsert, property off", lambda: upsert(off)),
        bar=1.15, after=published, same_calls=True,
        notes=[f"{size.rows:,} rows in {FILES} files; every sample adds a commit on both "
               "sides (a publication replays the retained history)"],
    )

    fresh: dict[str, Table] = {}

    def make(name: str, properties: dict[str, str]) -> None:
        fresh[name] = evonb.create_table(ctx.path(f"ice_write_{name}"), _ddl(COLUMNS),
                                         primary_key="id", precombine="ts",
                                         properties=properties)

    data = _slice(spark, COLUMNS, 0, size.rows, FILES)
    yield Case(
        name="iceberg_export.write",
        evonb=Side(f"write of {size.rows:,} rows into a fresh table, property on",
                   lambda: fresh["on"].write(data), prepare=lambda: make("on", ON)),
        baseline=Side("the same write, property off", lambda: fresh["off"].write(data),
                      prepare=lambda: make("off", {})),
        bar=1.03,
    )

    from pyiceberg.table import StaticTable

    t = _evolved_export(ctx)
    exported = StaticTable.from_metadata(t.iceberg_status().metadata_file or "")
    own = build_iceberg_evolved(ctx, t, name="evolved_export_baseline")
    if not same_rows(exported.scan().to_arrow(), own.scan().to_arrow()):
        raise AssertionError("pyiceberg reads different rows from the export and its own table")
    yield Case(
        name="iceberg_export.pyiceberg_read",
        evonb=Side("pyiceberg scan().to_arrow() of the evonb table (published metadata)",
                   lambda: exported.scan().to_arrow()),
        baseline=Side("pyiceberg scan().to_arrow() of its own table, same rows and evolution",
                      lambda: own.scan().to_arrow()),
        bar=1.1, cpu=True,
        notes=[f"{len(EVOLUTION)} schema changes (evolved_read's, without read defaults); "
               f"evonb files: {len(t.snapshot().files)}, pyiceberg's own: "
               f"{len(list(own.scan().plan_files()))}; both reads return the same rows"],
    )


__all__ = ["iceberg_export"]
