"""The benchmarks. Each is a generator of :class:`~bench.harness.Case` (timed by the runner) or
:class:`~bench.harness.Result` (a skip); they build their data in the run's work folder."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.first_rows import first_rows
from bench.harness import Case, Result, Side, skipped
from bench.util import (
    Size,
    collect_with_metrics,
    commit_arrow_files,
    full_aggregate,
    same_rows,
    small_batches,
    spark_conf,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from evonb.api import Table

PYICEBERG_MISSING = "pyiceberg not installed"
MOR_MISSING = "merge-on-read not available yet"


@dataclass
class Context:
    spark: SparkSession
    workdir: Path
    size: Size
    log: Callable[[str], None]
    repeat: int = 5  # timed runs (benchmarks that time whole workloads themselves use these)
    warmup: int = 1

    def path(self, name: str) -> Path:
        p = self.workdir / name
        if p.exists():
            shutil.rmtree(p)
        return p


Benchmark = Callable[[Context], Iterator["Case | Result"]]


def has_pyiceberg() -> bool:
    return (importlib.util.find_spec("pyiceberg") is not None
            and importlib.util.find_spec("sqlalchemy") is not None)


# --------------------------------------------------------------- 1. evolved-table read
# The evolved table starts with these columns (type, Spark SQL expression of ``id``) ...
BASE_COLUMNS: dict[str, tuple[str, str]] = {
    "id": ("bigint", "id"),
    "user_id": ("int", "id"),
    "amount": ("float", "(id % 1000) / 10"),
    "name": ("string", "concat('n', id % 5000)"),
    "cat": ("string", "concat('c', id % 50)"),
    "qty": ("int", "id % 7"),
}
# ... and goes through these changes; a slice of the rows is written after each version.
EVOLUTION: list[tuple[str, tuple[Any, ...]]] = [
    ("RENAME COLUMN user_id TO customer_id", ("rename", "user_id", "customer_id")),
    ("ADD COLUMN region string DEFAULT 'eu'", ("add", "region", "string", "concat('r', id % 4)")),
    ("ALTER COLUMN qty TYPE bigint", ("type", "qty", "bigint")),
    ("DROP COLUMN name", ("drop", "name")),
    ("RENAME COLUMN cat TO category", ("rename", "cat", "category")),
    ("ALTER COLUMN amount TYPE double", ("type", "amount", "double")),
    ("ADD COLUMN score int DEFAULT 0", ("add", "score", "int", "id % 100")),
    ("RENAME COLUMN customer_id TO account_id", ("rename", "customer_id", "account_id")),
    ("ALTER COLUMN score TYPE bigint", ("type", "score", "bigint")),
    ("ADD COLUMN flag boolean DEFAULT false", ("add", "flag", "boolean", "id % 2 = 0")),
    ("RENAME COLUMN region TO zone", ("rename", "region", "zone")),
]
FILTER_COLUMN = "account_id"  # renamed twice (user_id -> customer_id -> account_id)


def _apply(columns: dict[str, tuple[str, str]], op: tuple[Any, ...]) -> dict[str, tuple[str, str]]:
    kind = op[0]
    out = dict(columns)
    if kind == "rename":
        out = {(op[2] if k == op[1] else k): v for k, v in columns.items()}
    elif kind == "add":
        out[op[1]] = (op[2], op[3])
    elif kind == "type":
        out[op[1]] = (op[2], columns[op[1]][1])
    elif kind == "drop":
        del out[op[1]]
    return out


def _slice(spark: SparkSession, columns: dict[str, tuple[str, str]], lo: int, hi: int,
           partitions: int) -> DataFrame:
    exprs = [f"cast({expr} as {typ}) as `{name}`" for name, (typ, expr) in columns.items()]
    return spark.range(lo, hi, 1, partitions).selectExpr(*exprs)


def _ddl(columns: dict[str, tuple[str, str]]) -> str:
    return ", ".join(f"{n} {t}{' not null' if n == 'id' else ''}"
                     for n, (t, _) in columns.items())


def build_evolved(ctx: Context, name: str = "evolved") -> tuple[Table, list[str]]:
    """The evolved table: every schema version holds live files (one slice of rows each)."""
    import evonb

    spark, size = ctx.spark, ctx.size
    columns = dict(BASE_COLUMNS)
    t = evonb.create_table(ctx.path(name), _ddl(columns))
    steps = len(EVOLUTION) + 1
    bounds = [size.rows * i // steps for i in range(steps + 1)]
    log = []
    t.write(_slice(spark, columns, bounds[0], bounds[1], size.slice_partitions))
    for i, (ddl, op) in enumerate(EVOLUTION, start=1):
        t.alter(f"ALTER TABLE {name} {ddl}")
        columns = _apply(columns, op)
        t.write(_slice(spark, columns, bounds[i], bounds[i + 1], size.slice_partitions))
        log.append(ddl)
    return t, log


def _same_layout(ctx: Context, t: Table, snap: Any) -> Iterator[Case | Result]:
    from pyspark.sql import functions as F

    from evonb.table.layout import META_COMMIT_TIME

    spark, size = ctx.spark, ctx.size
    same = str(ctx.path("evolved_same_layout"))
    with spark_conf(spark, parquet__block__size=str(size.block_size)):
        for instant in sorted({f.instant for f in snap.files}):
            parts = sum(1 for f in snap.files if f.instant == instant)
            (t.read(meta_columns=True).filter(F.col(META_COMMIT_TIME) == instant)
             .drop(META_COMMIT_TIME).repartitionByRange(parts, "id")
             .write.mode("append").parquet(same))
    same_files = len(list(Path(same).glob("*.parquet")))
    yield Case(
        name="evolved_read.scan_same_layout",
        evonb=Side("t.read() full-scan aggregate of every column",
                   lambda: full_aggregate(t.read())),
        baseline=Side(f"Parquet with the table's file layout ({same_files} files, one write "
                      "per slice), same aggregate",
                      lambda: full_aggregate(spark.read.parquet(same))),
        notes=["diagnostic, no bar: isolates the cost of schema evolution from the cost of "
               "the table's smaller files"],
    )


def evolved_read(ctx: Context) -> Iterator[Case | Result]:
    """An evolved table (>= 10 schema versions, live files in each) against plain Parquet."""
    spark, size = ctx.spark, ctx.size
    with spark_conf(spark, parquet__block__size=str(size.block_size)):
        t, _ = build_evolved(ctx)
        plain = str(ctx.path("evolved_plain"))
        t.read().write.parquet(plain)
    snap = t.snapshot()
    versions = snap.by_version()
    plain_files = len(list(Path(plain).glob("*.parquet")))
    layout_note = (f"{snap.rows:,} rows in {len(snap.files)} files over {len(versions)} schema "
                   f"versions ({len(EVOLUTION)} ALTERs: renames, drops, adds with defaults, "
                   f"widenings); Parquet copy: {plain_files} files written once by Spark; "
                   f"parquet.block.size={size.block_size}")

    def check_equal(result: Result) -> None:
        a = full_aggregate(t.read())[0]
        b = full_aggregate(spark.read.parquet(plain))[0]
        same = a["rows"] == b["rows"] and a.asDict().keys() == b.asDict().keys()
        result.notes.append(f"same row count and columns on both sides: {same}")
        result.metrics["rows"] = a["rows"]

    yield Case(
        name="evolved_read.scan",
        evonb=Side("t.read() full-scan aggregate of every column",
                   lambda: full_aggregate(t.read())),
        baseline=Side("spark.read.parquet(copy), same aggregate",
                      lambda: full_aggregate(spark.read.parquet(plain))),
        bar=1.05, notes=[layout_note], after=check_equal,
    )

    # A diagnostic (full size only, it costs 12 more writes): plain Parquet laid out like the
    # evolved table (one write per slice, as many files), to tell the cost of evolution from
    # the cost of more, smaller files.
    if size.name == "full":
        yield from _same_layout(ctx, t, snap)

    lo = size.rows // 2 + 7
    hi = lo + max(1, size.rows // 1000)
    cond = f"`{FILTER_COLUMN}` >= {lo} AND `{FILTER_COLUMN}` < {hi}"

    def evo_filtered() -> DataFrame:
        return t.read().filter(cond)

    def plain_filtered() -> DataFrame:
        return spark.read.parquet(plain).filter(cond)

    def filter_metrics(result: Result) -> None:
        e_rows, e = collect_with_metrics(spark, evo_filtered().groupBy().count())
        b_rows, b = collect_with_metrics(spark, plain_filtered().groupBy().count())
        result.metrics.update({"evonb": e, "parquet": b, "matching_rows": e_rows[0][0],
                               "table_rows": size.rows})
        result.notes.append(
            f"filter {FILTER_COLUMN} in [{lo}, {hi}) matches {e_rows[0][0]:,} of "
            f"{size.rows:,} rows (parquet: {b_rows[0][0]:,})")
        for label, m in (("evonb", e), ("parquet", b)):
            io_text = (f", task input {m['input_bytes']:,} bytes / {m['input_records']:,} "
                       "records" if "input_bytes" in m else "")
            result.notes.append(
                f"{label}: {m['scans']} scans, {m['scan_output_rows']:,} rows out of the scans "
                f"({m['scan_output_rows'] / size.rows:.2%} of the table), {m['files_read']} "
                f"files ({m['file_bytes']:,} bytes){io_text}")

    def skipped_most(result: Result) -> bool:
        e = result.metrics["evonb"]
        return (result.metrics["matching_rows"] == hi - lo
                and e["scan_output_rows"] <= 0.05 * size.rows)

    yield Case(
        name="evolved_read.filter",
        evonb=Side(f"t.read() filtered on renamed {FILTER_COLUMN} (~0.1%), all columns",
                   lambda: full_aggregate(evo_filtered())),
        baseline=Side("same filter on the Parquet copy",
                      lambda: full_aggregate(plain_filtered())),
        bar_text="row groups skipped: scan rows <= 5%", after=filter_metrics,
        check=skipped_most,
    )

    if not has_pyiceberg():
        yield skipped("evolved_read", "evolved_read.arrow_vs_pyiceberg", PYICEBERG_MISSING)
        return
    yield from _arrow_same_files(t)
    ice = build_iceberg_evolved(ctx, t)
    ice_files = len(list(ice.scan().plan_files()))
    yield Case(
        name="evolved_read.arrow_vs_pyiceberg",
        evonb=Side("t.read().toArrow()", lambda: t.read().toArrow()),
        baseline=Side("pyiceberg scan().to_arrow() of the same evolution",
                      lambda: ice.scan().to_arrow()),
        notes=[f"pyiceberg table: same rows, same {len(EVOLUTION)} schema changes, "
               f"{ice_files} data files; no bar in the issue (reported only)"],
    )


def _arrow_same_files(t: Table) -> Iterator[Case | Result]:
    """evonb's JVM-free reader against pyiceberg's reader over the same files: the evolved
    table published as Iceberg metadata (format version 3 carries its read defaults)."""
    from pyiceberg.table import StaticTable

    from evonb.iceberg import sync

    result = sync(t)
    if result.blocked:
        raise AssertionError(f"the evolved table is not exported: {result.blocked}")
    ice = StaticTable.from_metadata(result.metadata_file)
    ours = t.to_arrow()
    if not same_rows(ours, ice.scan().to_arrow()):
        raise AssertionError("t.to_arrow() and pyiceberg read different rows from one table")
    yield Case(
        name="evolved_read.to_arrow_vs_pyiceberg",
        evonb=Side("t.to_arrow() (no JVM)", lambda: t.to_arrow()),
        baseline=Side("pyiceberg scan().to_arrow() of the same table, through its published "
                      "Iceberg metadata", lambda: ice.scan().to_arrow()),
        bar=1.0, cpu=True,
        notes=[f"the same {len(t.snapshot().files)} data files and {len(EVOLUTION)} schema "
               f"changes on both sides (read defaults as Iceberg v3 initial-default); both "
               f"reads return the same {ours.num_rows:,} rows"],
    )


# ----------------------------------------------------------------------------------- pyiceberg
def iceberg_catalog(ctx: Context) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    root = ctx.workdir / "iceberg"
    root.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{root / 'catalog.db'}",
                         warehouse=(root / "warehouse").as_uri())
    with contextlib.suppress(Exception):
        catalog.create_namespace("bench")
    return catalog


def _iceberg_type(name: str) -> Any:
    from pyiceberg import types as it

    return {"bigint": it.LongType(), "int": it.IntegerType(), "float": it.FloatType(),
            "double": it.DoubleType(), "string": it.StringType(),
            "boolean": it.BooleanType()}[name]


def _iceberg_schema(columns: dict[str, tuple[str, str]]) -> Any:
    from pyiceberg.schema import Schema as IceSchema
    from pyiceberg.types import NestedField as IceField

    return IceSchema(*[IceField(i, n, _iceberg_type(t), required=False)
                       for i, (n, (t, _)) in enumerate(columns.items(), start=1)])


def _arrow_for(ice_table: Any, arrow: Any) -> Any:
    """``arrow`` cast to the Iceberg table's current Arrow schema (types and nullability)."""
    return arrow.cast(ice_table.schema().as_arrow())


def build_iceberg_evolved(ctx: Context, t: Table, name: str = "evolved") -> Any:
    """The same evolution and slices as :func:`build_evolved`, as a pyiceberg table
    (``bench.<name>``)."""
    spark, size = ctx.spark, ctx.size
    catalog = iceberg_catalog(ctx)
    columns = dict(BASE_COLUMNS)
    ice = catalog.create_table(f"bench.{name}", schema=_iceberg_schema(columns),
                               properties={"format-version": "2"})
    steps = len(EVOLUTION) + 1
    bounds = [size.rows * i // steps for i in range(steps + 1)]
    ice.append(_arrow_for(ice, _slice(spark, columns, bounds[0], bounds[1], 1).toArrow()))
    for i, (_, op) in enumerate(EVOLUTION, start=1):
        with ice.update_schema() as u:
            kind = op[0]
            if kind == "rename":
                u.rename_column(op[1], op[2])
            elif kind == "add":
                u.add_column(op[1], _iceberg_type(op[2]))
            elif kind == "type":
                u.update_column(op[1], _iceberg_type(op[2]))
            elif kind == "drop":
                u.delete_column(op[1])
        columns = _apply(columns, op)
        data = _slice(spark, columns, bounds[i], bounds[i + 1], 1).toArrow()
        ice.append(_arrow_for(ice, data))
    return ice


# --------------------------------------------------------------------------- 2. DDL latency
DDL_SCHEMA = ("id bigint not null, note string, v int, amount double, cat string, "
              "qty bigint, flag boolean, ts bigint")


def _ddl_batch(start: int, n: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({
        "id": ids,
        "note": pc.cast(ids, pa.string()),
        "v": pc.cast(pc.bit_wise_and(ids, 1023), pa.int32()),
        "amount": pc.cast(ids, pa.float64()),
        "cat": pc.cast(pc.bit_wise_and(ids, 31), pa.string()),
        "qty": ids,
        "flag": pc.equal(pc.bit_wise_and(ids, 1), 0),
        "ts": ids,
    })


def _renamer(alter: Callable[[str, str], Any], first: str) -> Callable[[], Any]:
    """A thunk that renames the column to a new name on every call."""
    counter = itertools.count(1)
    state = {"name": first}

    def run() -> Any:
        new = f"{first}_{next(counter)}"
        out = alter(state["name"], new)
        state["name"] = new
        return out

    return run


HISTORY_COMMITS = 190
"""The commits of the ``ddl.history`` table before it is timed."""


def ddl(ctx: Context) -> Iterator[Case | Result]:
    """ALTER latency: a 1-file vs a many-file table; evonb vs pyiceberg's update_schema."""
    import evonb

    size = ctx.size
    one = evonb.create_table(ctx.path("ddl_one"), DDL_SCHEMA)
    commit_arrow_files(one, [_ddl_batch(0, size.alter_rows)])
    many = evonb.create_table(ctx.path("ddl_many"), DDL_SCHEMA)
    commit_arrow_files(many, small_batches(size.ddl_files, size.alter_rows, _ddl_batch))
    n_many = len(many.snapshot().files)

    def evo_alter(table: Table) -> Callable[[str, str], Any]:
        return lambda old, new: table.alter(f"ALTER TABLE t RENAME COLUMN {old} TO {new}")

    build = (f"tables built by pyarrow files + one engine commit each: {size.alter_rows:,} rows "
             f"in 1 file vs {n_many:,} files")
    yield Case(
        name="ddl.scale",
        evonb=Side(f"ALTER ... RENAME COLUMN on the {n_many:,}-file table",
                   _renamer(evo_alter(many), "note")),
        baseline=Side("the same ALTER on the 1-file table", _renamer(evo_alter(one), "note")),
        bar=1.2, notes=[build], same_calls=True,
    )

    long = evonb.create_table(ctx.path("ddl_history"), DDL_SCHEMA)
    commit_arrow_files(long, [_ddl_batch(0, size.alter_rows)])
    grow = _renamer(evo_alter(long), "cat")
    for _ in range(HISTORY_COMMITS - len(long.timeline.completed())):
        grow()
    short: dict[str, Callable[[], Any]] = {}

    def fresh_short() -> None:  # untimed, before each sample: a table of 2 commits again
        table = evonb.create_table(ctx.path("ddl_short"), DDL_SCHEMA)
        commit_arrow_files(table, [_ddl_batch(0, size.alter_rows)])
        short["alter"] = _renamer(evo_alter(table), "cat")

    yield Case(
        name="ddl.history",
        evonb=Side(f"ALTER ... RENAME COLUMN on a table of {HISTORY_COMMITS} commits or more",
                   grow),
        baseline=Side("the same ALTER on a table of 2 commits (made again before each sample)",
                      lambda: short["alter"](), prepare=fresh_short),
        same_calls=True, cpu=True,
        notes=[f"report only: what a long history adds to a commit. {HISTORY_COMMITS} commits "
               "with the default archiving (evonb.timeline.archive.keep = 100: the timeline "
               "folder holds 100 to 200 completed commits) is about the largest folder an "
               "ALTER lists; both tables hold the same rows in one file"],
    )

    if not has_pyiceberg():
        yield skipped("ddl", "ddl.vs_pyiceberg", PYICEBERG_MISSING, "<= 1x")
        return
    import pyarrow.parquet as pq

    catalog = iceberg_catalog(ctx)
    ice = catalog.create_table("bench.ddl_many", schema=_iceberg_schema(
        {n: (t.split()[0], "") for n, t in (c.strip().split(" ", 1)
                                            for c in DDL_SCHEMA.split(","))}))
    folder = ctx.path("ddl_iceberg_files")
    folder.mkdir()
    paths = []
    for i, batch in enumerate(small_batches(size.ddl_files, size.alter_rows, _ddl_batch)):
        p = folder / f"part-{i:05d}.parquet"
        pq.write_table(_arrow_for(ice, batch), p)
        paths.append(str(p))
    ice.add_files(paths)

    def ice_rename(old: str, new: str) -> None:
        with ice.update_schema() as u:
            u.rename_column(old, new)

    yield Case(
        name="ddl.vs_pyiceberg",
        evonb=Side(f"evonb ALTER ... RENAME COLUMN ({n_many:,}-file table, DDL text parsed)",
                   _renamer(evo_alter(many), "cat")),
        baseline=Side(f"pyiceberg update_schema().rename_column commit (SqlCatalog on sqlite, "
                      f"{len(paths):,}-file table)", _renamer(ice_rename, "cat")),
        bar=1.0, same_calls=True,
        notes=["both tables hold the same rows in the same number of files, added in one "
               "commit; each run renames a column to a new name; both sides make the same "
               "number of commits (each commit grows pyiceberg's metadata file)"],
    )


# ---------------------------------------------------------------------------- 3. time travel
TT_SCHEMA = {"id": ("bigint", "id"), "user_id": ("int", "id"),
             "amount": ("float", "(id % 1000) / 10"), "cat": ("string", "concat('c', id % 50)"),
             "qty": ("int", "id % 7")}


def time_travel(ctx: Context) -> Iterator[Case | Result]:
    """Reading as of an old commit (old schema) vs the latest snapshot of the same size."""
    import evonb
    from evonb.table.layout import META_COMMIT_TIME

    spark, size = ctx.spark, ctx.size
    columns = dict(TT_SCHEMA)
    t = evonb.create_table(ctx.path("time_travel"), _ddl(columns))
    parts = size.slice_partitions * 2
    old = t.write(_slice(spark, columns, 0, size.rows, parts))
    for ddl_text, op in [("RENAME COLUMN user_id TO account_id",
                          ("rename", "user_id", "account_id")),
                         ("ALTER COLUMN qty TYPE bigint", ("type", "qty", "bigint")),
                         ("ALTER COLUMN amount TYPE double", ("type", "amount", "double"))]:
        t.alter(f"ALTER TABLE t {ddl_text}")
        columns = _apply(columns, op)
    t.write(_slice(spark, columns, 0, size.rows, parts), mode="overwrite")
    t.alter("ALTER TABLE t ALTER COLUMN cat COMMENT 'category code'")
    t.alter("ALTER TABLE t RENAME COLUMN cat TO category")
    n_old = len(t.snapshot(old.instant).files)
    n_new = len(t.snapshot().files)
    yield Case(
        name="time_travel",
        evonb=Side("t.read(as_of=first commit) full-scan aggregate (schema of then)",
                   lambda: full_aggregate(t.read(as_of=old.instant))),
        baseline=Side("t.read() latest snapshot, same aggregate",
                      lambda: full_aggregate(t.read())),
        bar=1.05,
        notes=[f"{size.rows:,} rows either way ({n_old} vs {n_new} files); 5 ALTERs and an "
               "overwrite after the old commit"],
    )
    # The first commit's own files read as plain Parquet: the same types (int and float where
    # the latest snapshot has bigint and double), so only evonb's time travel differs.
    old_paths = [str(t.root / f.path) for f in t.snapshot(old.instant).files]
    yield Case(
        name="time_travel.same_files",
        evonb=Side("t.read(as_of=first commit) full-scan aggregate (schema of then)",
                   lambda: full_aggregate(t.read(as_of=old.instant))),
        baseline=Side("spark.read.parquet(the first commit's files), same aggregate",
                      lambda: full_aggregate(spark.read.parquet(*old_paths)
                                             .drop(META_COMMIT_TIME))),
        notes=["diagnostic, no bar: the cost of reading as of an old commit against plain "
               "Parquet of the same files, apart from the old schema's narrower types"],
    )


# ------------------------------------------------------------------------------- 4. planning
def _plan_batch(start: int, n: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "v": pc.cast(ids, pa.int32()), "s": pc.cast(ids, pa.string())})


def planning(ctx: Context) -> Iterator[Case | Result]:
    """The read plan of a many-file table from the timeline vs Spark listing its folder."""
    import evonb
    from evonb.spark.reader import plan_read

    spark, size = ctx.spark, ctx.size
    root = ctx.path("planning")
    t = evonb.create_table(root, "id bigint not null, v int, s string")
    commit_arrow_files(t, small_batches(size.plan_files, size.plan_files * 10, _plan_batch))

    def evo_plan() -> Any:
        table = evonb.open_table(root)  # cold: a fresh timeline, nothing cached
        snap = table.snapshot()
        query = table.version(snap.schema_version)[0]
        groups = plan_read(table.root, snap.files, query, table.version)
        assert sum(len(g.files) for g in groups) == size.plan_files
        return groups

    def spark_list() -> Any:
        return spark.read.parquet(str(root)).schema

    yield Case(
        name="planning",
        evonb=Side(f"open_table + snapshot + plan_read ({size.plan_files:,} files)", evo_plan),
        baseline=Side("spark.read.parquet(folder): InMemoryFileIndex listing + schema "
                      "inference", spark_list),
        bar=1.0,
        notes=[f"{size.plan_files:,} tiny files written by pyarrow and committed in one engine "
               "commit (Spark takes ~10 ms per file to write them)"],
    )


# ---------------------------------------------------------------------------- 5. COW upsert
UPSERT_COLUMNS = {"id": ("bigint", "id"), "ts": ("bigint", "0"),
                  "amount": ("double", "(id % 1000) / 10"),
                  "name": ("string", "concat('name-', id)"),
                  "cat": ("string", "concat('c', id % 50)")}


KEEP_PARTITIONS = {"evonb.write.target.file.bytes": "0"}
"""The upsert and merge-on-read tables keep one file per input partition (50 file groups), as
their benchmarks describe, instead of coalescing into files of the default target size."""


def cow_upsert(ctx: Context) -> Iterator[Case | Result]:
    """Upserting 1% of the keys (clustered) vs Spark rewriting the whole table."""
    import evonb

    spark, size = ctx.spark, ctx.size
    t = evonb.create_table(ctx.path("cow"), _ddl(UPSERT_COLUMNS), primary_key="id",
                           precombine="ts", properties=KEEP_PARTITIONS)
    t.write(_slice(spark, UPSERT_COLUMNS, 0, size.rows, size.upsert_files))
    plain = str(ctx.path("cow_plain"))
    _slice(spark, UPSERT_COLUMNS, 0, size.rows, size.upsert_files).write.parquet(plain)
    out = str(ctx.path("cow_rewrite"))
    per_file = size.rows // size.upsert_files
    lo = (size.upsert_files // 2) * per_file
    hi = lo + max(1, size.rows // 100)
    ts = itertools.count(1)

    def upsert() -> Any:
        cols = dict(UPSERT_COLUMNS, ts=("bigint", str(next(ts))),
                    amount=("double", "(id % 1000) / 10 + 1"))
        return t.write(_slice(spark, cols, lo, hi, 1), mode="upsert")

    def rewrite() -> None:
        spark.read.parquet(plain).write.mode("overwrite").parquet(out)

    def touched(result: Result) -> None:
        meta = t.timeline.last_completed().metadata
        lookup = meta.get("key_lookup") or {}
        result.metrics.update({"files_removed": len(meta.get("removed", ())),
                               "files_added": len(meta.get("added", ())),
                               "files_key_scanned": lookup.get("scanned"),
                               "live_files": len(t.snapshot().files)})
        scanned = (f"scanned the keys of {lookup['scanned']} of {lookup['live']} files, "
                   if lookup else "")
        result.notes.append(
            f"last upsert {scanned}rewrote {len(meta.get('removed', ()))} of "
            f"{len(t.snapshot().files)} live files; {t.read().count():,} rows after")

    yield Case(
        name="cow_upsert",
        evonb=Side(f"t.write(upsert) of {hi - lo:,} keys (1%)", upsert),
        baseline=Side(f"spark.read.parquet + write.parquet of all {size.rows:,} rows", rewrite),
        bar=0.3, after=touched,
        notes=[f"table written as {size.upsert_files} files of contiguous id ranges "
               f"(spark.range partitions); the upserted keys are the contiguous range "
               f"[{lo}, {hi}) starting at a file boundary, so they fall in one file"],
    )


# --------------------------------------------------------------------------- 6-7. merge-on-read
def mor_available(ctx: Context) -> str | None:
    """Why merge-on-read cannot be benchmarked, or None when it can."""
    from evonb.api import Table

    if not hasattr(Table, "compact"):
        return MOR_MISSING
    return None


def _mor_table(ctx: Context, name: str, table_type: str,
               properties: dict[str, str] | None = None) -> Table:
    import evonb

    t = evonb.create_table(ctx.path(name), _ddl(UPSERT_COLUMNS), primary_key="id",
                           precombine="ts", table_type=table_type,
                           properties={**KEEP_PARTITIONS, **(properties or {})})
    t.write(_slice(ctx.spark, UPSERT_COLUMNS, 0, ctx.size.rows, ctx.size.upsert_files))
    return t


MOR_UPDATE_FRACTION = 0.10
"""The share of the keys each merge-on-read upsert updates (issue #4: 10% of keys in logs)."""


def _random_updates(ctx: Context, seed: int, ts: int,
                    fraction: float = MOR_UPDATE_FRACTION) -> DataFrame:
    """A random ``fraction`` of the keys (10% by default), spread over every file group."""
    cols = dict(UPSERT_COLUMNS, ts=("bigint", str(ts)), amount=("double", "(id % 1000) / 10 + 2"))
    keys = ctx.spark.range(0, ctx.size.rows, 1, 2).sample(fraction=fraction, seed=seed)
    return keys.selectExpr(*[f"cast({e} as {t}) as `{n}`" for n, (t, e) in cols.items()])


def _layout_note(t: Table) -> str:
    snap = t.snapshot()
    logs = getattr(snap, "logs", ())
    return (f"{snap.rows:,} base rows in {len(snap.files)} file groups, "
            f"{len(logs)} live log blocks")


def _log_rows(t: Table) -> int:
    return sum(f.rows for f in getattr(t.snapshot(), "logs", ()))


def _wrote_delta(t: Table) -> bool:
    last = t.timeline.last_completed()
    return last is not None and last.action == "deltacommit"


def mor_compaction(ctx: Context) -> Iterator[Case | Result]:
    """Compacting a merge-on-read table vs Spark reading and rewriting the same rows.

    Every timed compaction starts from the same layout: a fresh copy of a table of 50 file
    groups, each with a log block (an upsert of 10% of the keys at random), made untimed."""
    import shutil

    import evonb

    reason = mor_available(ctx)
    if reason:
        yield skipped("mor_compaction", "mor_compaction", reason, "<= 1.3x")
        return
    spark, size = ctx.spark, ctx.size
    t = _mor_table(ctx, "mor_compact", "mor")
    t.write(_random_updates(ctx, 0, 1), mode="upsert")
    if not _wrote_delta(t):
        yield skipped("mor_compaction", "mor_compaction",
                      f"{MOR_MISSING} (an upsert wrote no deltacommit)", "<= 1.3x")
        return
    plain = str(ctx.path("mor_plain"))
    t.read().write.parquet(plain)
    out = str(ctx.path("mor_rewrite"))
    copy = ctx.path("mor_compact_copy")
    current: list[Table] = []

    def fresh_copy() -> None:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(t.root, copy)
        current[:] = [evonb.open_table(copy)]

    def compacted(result: Result) -> None:
        meta = current[0].timeline.last_completed().metadata
        result.notes.append(
            f"last compaction: {len(meta.get('removed', ()))} files replaced, "
            f"{meta.get('logs_merged', '?')} log blocks merged, "
            f"{meta.get('rows_written', '?'):,} rows written in "
            f"{len(meta.get('added', ()))} files; "
            f"{meta.get('groups_in_tasks', 0)} file groups merged in tasks with Arrow")

    yield Case(
        name="mor_compaction",
        evonb=Side(f"t.compact() of a fresh copy of a table after a {MOR_UPDATE_FRACTION:.0%} "
                   "random upsert (every file group has a delta)",
                   lambda: current[0].compact(), prepare=fresh_copy),
        baseline=Side(f"spark.read.parquet + write.parquet of the same {size.rows:,} rows",
                      lambda: spark.read.parquet(plain).write.mode("overwrite").parquet(out)),
        bar=1.3, after=compacted,
        notes=[f"before the runs (untimed): an upsert of {MOR_UPDATE_FRACTION:.0%} random "
               f"keys (so {MOR_UPDATE_FRACTION:.0%} of the keys are in log blocks); "
               f"{_layout_note(t)}; each run compacts a fresh copy of that table"],
    )


MOR_READ_BAR = 1.15
"""The merge-on-read read's bar against copy-on-write (issue #24; issue #4 had set 1.5x)."""


def mor_read(ctx: Context) -> Iterator[Case | Result]:
    """A merge-on-read snapshot read (base + deltas) vs a copy-on-write read of the same data,
    with log blocks in each format (the bar is judged on the default format's)."""
    from evonb.spark.mor import DEFAULT_LOG_FORMAT, LOG_FORMAT_PROPERTY
    from evonb.table.names import LOG_FORMATS

    bar_text = f"<= {MOR_READ_BAR}x"
    reason = mor_available(ctx)
    if reason:
        yield skipped("mor_read", "mor_read", reason, bar_text)
        return
    cow = None
    for fmt in sorted(LOG_FORMATS, key=lambda f: f != DEFAULT_LOG_FORMAT):  # default first
        default = fmt == DEFAULT_LOG_FORMAT
        name = "mor_read" if default else f"mor_read.{fmt}"
        mor = _mor_table(ctx, f"mor_read_{fmt}", "mor", {LOG_FORMAT_PROPERTY: fmt})
        mor.write(_random_updates(ctx, 0, 1), mode="upsert")
        if not _wrote_delta(mor):
            yield skipped("mor_read", name, f"{MOR_MISSING} (an upsert wrote no deltacommit)",
                          bar_text if default else "report only")
            continue
        if cow is None:
            cow = _mor_table(ctx, "mor_read_cow", "cow")
            cow.write(_random_updates(ctx, 0, 1), mode="upsert")
        yield Case(
            name=name,
            evonb=Side(f"merge-on-read t.read() full-scan aggregate (base + "
                       f"{MOR_UPDATE_FRACTION:.0%} delta in {fmt} log blocks)",
                       lambda mor=mor: full_aggregate(mor.read())),
            baseline=Side("copy-on-write t.read() of the same rows",
                          lambda cow=cow: full_aggregate(cow.read())),
            bar=MOR_READ_BAR if default else None,
            notes=[f"{MOR_UPDATE_FRACTION:.0%} of the keys (random, every file group) upserted "
                   f"once on both tables; merge-on-read: {_layout_note(mor)} "
                   f"({_log_rows(mor):,} log records, {fmt} blocks); copy-on-write: "
                   f"{_layout_note(cow)}"
                   + ("" if default else "; report only: the bar is judged on the default "
                      f"({DEFAULT_LOG_FORMAT}) blocks")],
        )


# ------------------------------------------------------------------ 7b. realistic random upsert
RANDOM_UPSERT_FRACTION = 0.01
RANDOM_UPSERT_SEED = 24


def _random_keys(ctx: Context, path: Path) -> int:
    """Write the upsert batch to ``path``: ``RANDOM_UPSERT_FRACTION`` of the keys, drawn
    uniformly at random (seeded) over the whole key range, so over every file. Its size."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = ctx.size.rows
    rng = np.random.default_rng(RANDOM_UPSERT_SEED)
    keys = np.sort(rng.choice(rows, size=max(1, int(rows * RANDOM_UPSERT_FRACTION)),
                              replace=False)).astype(np.int64)
    path.mkdir(parents=True)
    pq.write_table(pa.table({"id": keys}), path / "keys.parquet")
    return len(keys)


def random_upsert(ctx: Context) -> Iterator[Case | Result]:
    """Upserting 1% of the keys drawn at random over all files (copy-on-write and
    merge-on-read) vs Spark rewriting the whole table with the same changes."""
    spark, size = ctx.spark, ctx.size
    key_path = ctx.path("random_keys")
    n_keys = _random_keys(ctx, key_path)
    cols = dict(UPSERT_COLUMNS, ts=("bigint", "1"), amount=("double", "(id % 1000) / 10 + 3"))
    exprs = [f"cast({e} as {t}) as `{n}`" for n, (t, e) in cols.items()]

    def updates() -> DataFrame:
        return spark.read.parquet(str(key_path)).selectExpr(*exprs)

    plain = str(ctx.path("random_plain"))
    _slice(spark, UPSERT_COLUMNS, 0, size.rows, size.upsert_files).write.parquet(plain)
    out = str(ctx.path("random_rewrite"))
    names = list(UPSERT_COLUMNS)

    def rewrite() -> None:
        changes = updates()
        (spark.read.parquet(plain).join(changes.select("id"), "id", "left_anti")
         .unionByName(changes).write.mode("overwrite").parquet(out))

    variants = (("cow", "cow", None, None), ("mor", "mor", 0.15, None),
                ("mor_parquet", "mor", None, {"evonb.mor.log_format": "parquet"}))
    for variant, table_type, bar, props in variants:
        name = f"random_upsert.{variant}"
        if table_type == "mor" and mor_available(ctx):
            yield skipped("random_upsert", name, MOR_MISSING,
                          "<= 0.15x" if bar else "report only")
            continue
        t = _mor_table(ctx, f"random_{variant}", table_type, props)
        files = len(t.snapshot().files)
        copy = ctx.path(f"random_{variant}_copy")
        current: list[Table] = []

        def fresh_copy(t: Table = t, copy: Path = copy, current: list[Table] = current) -> None:
            current[:] = [_fresh_copy(t, copy)]

        def checked(result: Result, current: list[Table] = current, files: int = files) -> None:
            table = current[0]
            meta = table.timeline.last_completed().metadata
            after = table.read().select(*names)
            rewritten = spark.read.parquet(out).select(*names)
            differ = after.exceptAll(rewritten).count() + rewritten.exceptAll(after).count()
            if differ:
                raise AssertionError(f"{result.name}: the upserted table and the full rewrite "
                                     f"differ in {differ} rows")
            snap = table.snapshot()
            logs = getattr(snap, "logs", ())
            rewrote = len(meta.get("removed", ()))
            driver = bool((meta.get("key_lookup") or {}).get("driver"))
            result.metrics.update({"keys": n_keys, "files": files, "files_rewritten": rewrote,
                                   "log_blocks": len(logs), "equal_to_rewrite": True,
                                   "driver_lookup": driver})
            result.notes.append(
                f"last upsert rewrote {rewrote} of {files} files"
                + (f", wrote {len(logs)} log blocks" if logs else "")
                + (" (keys looked up by the driver)" if driver else "")
                + f"; rows after equal the full rewrite's ({snap.rows:,} base rows)")

        kind = ("copy-on-write" if table_type == "cow" else
                "merge-on-read" + (" (Parquet log blocks)" if props else ""))
        yield Case(
            name=name,
            evonb=Side(f"{kind} t.write(upsert) of {n_keys:,} random keys (1%) into a fresh "
                       "copy",
                       lambda current=current: current[0].write(updates(), mode="upsert"),
                       prepare=fresh_copy),
            baseline=Side(f"spark.read.parquet of all {size.rows:,} rows, the same changes "
                          "applied (anti-join + union), write.parquet (overwrite)", rewrite),
            bar=bar, after=checked,
            notes=[f"{size.rows:,} rows in {files} files; keys drawn uniformly at random "
                   f"(seed {RANDOM_UPSERT_SEED}) over all of them"
                   + ("; report only: random keys touch nearly every file, so copy-on-write "
                      "rewrites nearly the whole table (the same work as the baseline plus "
                      "the key lookup)" if table_type == "cow" else "")
                   + ("; report only: the bar is judged on the default (Avro) blocks"
                      if props else "")],
        )
        if variant == "cow":
            yield _split_merge_case(t, copy, updates, n_keys)
            yield _cow_driver_case(t, copy, updates, n_keys)
        if variant == "mor":
            yield _driver_lookup_case(t, copy, updates, n_keys)


def _driver_lookup_case(t: Table, copy: Path, updates: Callable[[], DataFrame],
                        n_keys: int) -> Case:
    """The merge-on-read random upsert looked up by the driver (the default for small
    deltas) against the same upsert through Spark tasks."""
    return _upsert_pair(
        t, copy, updates, name="random_upsert.mor_driver",
        evonb=(f"merge-on-read upsert of {n_keys:,} random keys, looked up and written by the "
               "driver in Arrow", {}),
        baseline=("the same upsert through Spark tasks (key scan, join, block-writing job; "
                  "evonb before 2026-11-29)", {"evonb.mor.driver_lookup.rows": "0"}),
        note="report only: the gain of the driver path on the same table, copies and keys")


def _upsert_pair(t: Table, copy: Path, updates: Callable[[], DataFrame], *, name: str,
                 evonb: tuple[str, dict[str, str]], baseline: tuple[str, dict[str, str]],
                 note: str) -> Case:
    """The same upsert into fresh copies of ``t`` whose properties differ: each side is a
    description and the properties its copy gets."""
    current: list[Table] = []

    def fresh(properties: dict[str, str]) -> None:
        table = _fresh_copy(t, copy)
        if properties:
            table.set_properties(properties)
        current[:] = [table]

    def upsert() -> None:
        current[0].write(updates(), mode="upsert")

    return Case(
        name=name,
        evonb=Side(evonb[0], upsert, prepare=lambda: fresh(evonb[1])),
        baseline=Side(baseline[0], upsert, prepare=lambda: fresh(baseline[1])),
        notes=[note],
    )


def _fresh_copy(t: Table, copy: Path) -> Table:
    """A fresh copy of ``t``'s folder at ``copy`` (an earlier one removed), opened."""
    import evonb

    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(t.root, copy)
    return evonb.open_table(copy)


def _split_merge_case(t: Table, copy: Path, updates: Callable[[], DataFrame],
                      n_keys: int) -> Case:
    """The copy-on-write random upsert with the stored rows split by the incoming keys (the
    default for large rewrites) against the same upsert merged in one window."""
    from evonb.spark.cow_driver import REWRITE_BYTES_PROPERTY
    from evonb.spark.writes import SPLIT_MERGE_PROPERTY

    spark_path = {REWRITE_BYTES_PROPERTY: "0"}  # the split is a step of Spark's merge
    return _upsert_pair(
        t, copy, updates, name="random_upsert.cow_split",
        evonb=(f"copy-on-write upsert of {n_keys:,} random keys through Spark, stored rows "
               "split by the incoming keys (only theirs shuffled)",
               {**spark_path, SPLIT_MERGE_PROPERTY: "0"}),
        baseline=("the same upsert with every stored row of the rewritten files shuffled "
                  "into one window (evonb before 2026-11-26)",
                  {**spark_path, SPLIT_MERGE_PROPERTY: str(2**62)}),
        note="report only: the gain of the split on the same table, copies and keys")


def _cow_driver_case(t: Table, copy: Path, updates: Callable[[], DataFrame],
                     n_keys: int) -> Case:
    """The copy-on-write random upsert rewritten by the driver (the default for small
    rewrites) against the same upsert through Spark."""
    from evonb.spark.cow_driver import REWRITE_BYTES_PROPERTY

    return _upsert_pair(
        t, copy, updates, name="random_upsert.cow_driver",
        evonb=(f"copy-on-write upsert of {n_keys:,} random keys, its files read, merged and "
               "written by the driver in Arrow", {REWRITE_BYTES_PROPERTY: str(2**40)}),
        baseline=("the same upsert through Spark (key lookup job, window, write; evonb before "
                  "2026-12-04)", {REWRITE_BYTES_PROPERTY: "0"}),
        note="report only: the gain of the driver path on the same table, copies and keys "
             "(the driver side lifts the size limit, so the pair compares the paths at every "
             "size)")


# ------------------------------------------------------------------------ 8. notebook path
@contextlib.contextmanager
def _magics(warehouse: Path) -> Iterator[tuple[Any, str]]:
    """An IPython shell with ``%load_ext evonb`` and ``Evo.warehouse`` set to ``warehouse``
    (restored afterwards), or ``(None, why not)``."""
    try:
        importlib.import_module("evonb.notebook.magics")
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:
        yield None, "evonb.notebook.magics not available yet"
        return
    ip = InteractiveShell.instance()  # the running shell, or a new one (as the tests do)
    ip.extension_manager.load_extension("evonb")
    config = next((c for c in ip.configurables if type(c).__name__ == "Evo"), None)
    if config is None:
        yield None, "%load_ext evonb registered no Evo settings"
        return
    before = config.warehouse
    config.warehouse = str(warehouse)
    try:
        yield ip, ""
    finally:
        config.warehouse = before


def notebook_alter(ctx: Context) -> Iterator[Case | Result]:
    """``%evo alter`` (parse, commit, render the diff) on a warm session vs a trivial job."""
    import evonb

    spark = ctx.spark
    t = evonb.create_table(ctx.path("notebook"), DDL_SCHEMA)
    commit_arrow_files(t, [_ddl_batch(0, 1000)])
    with _magics(ctx.workdir) as (ip, why):
        if ip is None:
            def library(old: str, new: str) -> None:
                d = t.alter(f"ALTER TABLE t RENAME COLUMN {old} TO {new}")
                repr(d)
                d._repr_html_()

            run = _renamer(library, "note")
            label = "t.alter(ddl) + repr(diff) + diff._repr_html_() (library path)"
            note = f"timed the library path: {why}"
        else:
            def magic(old: str, new: str) -> None:
                widget = ip.run_line_magic(
                    "evo", f"alter table notebook rename column {old} to {new}")
                ip.display_formatter.format(widget)

            run = _renamer(magic, "note")
            label = ("%evo alter table notebook rename column ... + the display formatter "
                     "(widget, HTML and text)")
            note = "the magic opens the table by name, commits, and its diff widget is rendered"

        def quiet() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                run()

        yield Case(
            name="notebook_alter",
            evonb=Side(label, quiet),
            baseline=Side("spark.range(1).count()", lambda: spark.range(1).count()),
            absolute_bar=0.1, notes=[note],
        )


WIDE_COLUMNS = {"tiny": 40, "quick": 400, "full": 1_000}
"""Columns of the wide-write benchmark's table, by size."""


def wide_write(ctx: Context) -> Iterator[Case | Result]:
    """An insert of 1,000 rows of a wide table (1,000 int columns at full size) vs Spark
    writing the same DataFrame as Parquet: the per-column cost of a write's planning."""
    import evonb

    spark = ctx.spark
    width = WIDE_COLUMNS.get(ctx.size.name, WIDE_COLUMNS["quick"])
    cols = ", ".join(f"c{i} int" for i in range(width))
    t = evonb.create_table(ctx.path("wide"), f"id bigint not null, {cols}")  # no key: no
    # uniqueness check (its own Spark job), so both sides write the rows only
    rows = spark.sql("select id, " + ", ".join(f"cast(id + {i} as int) c{i}"
                                              for i in range(width)) + " from range(1000)")
    plain = str(ctx.path("wide_plain"))
    yield Case(
        name="wide_write",
        evonb=Side(f"t.write() of 1,000 rows x {width + 1} columns", lambda: t.write(rows)),
        baseline=Side("df.write.parquet (append) of the same rows",
                      lambda: rows.write.mode("append").parquet(plain)),
        notes=["report only: a write's cost that grows with the number of columns "
               "(schema matching, the shaping projection, checks), not with the rows"],
    )


def keyed_insert(ctx: Context) -> Iterator[Case | Result]:
    """An insert into a keyed table (the default ``insert_duplicates = 'error'``: no key twice,
    no null key) of rows an aggregation computes, vs Spark writing the same DataFrame: whether
    the write's checks compute the incoming rows again."""
    import evonb

    spark = ctx.spark
    rows = ctx.size.rows
    t = evonb.create_table(ctx.path("keyed"), "id bigint not null, total bigint, top bigint, "
                           "n bigint", primary_key="id")
    # each run brings new keys, so the table never holds a key twice
    runs = itertools.count()

    def frame(run: int) -> Any:
        return spark.sql(
            f"select id + {run * rows} as id, sum(v) as total, max(v) as top, count(*) as n "
            f"from (select id % {rows} as id, id * 7 % 1000 as v from range({rows * 4})) "
            "group by id")

    plain = str(ctx.path("keyed_plain"))
    yield Case(
        name="keyed_insert",
        evonb=Side(f"t.write() of {rows:,} aggregated rows into a keyed table",
                   lambda: t.write(frame(next(runs)))),
        baseline=Side("df.write.parquet (append) of the same aggregation",
                      lambda: frame(0).write.mode("append").parquet(plain)),
        notes=["report only: the null and uniqueness checks ride on the write (an observed "
               "metric, then the key column of the files written), so the aggregation runs "
               "once on both sides"],
    )


BENCHMARKS: dict[str, Benchmark] = {
    "evolved_read": evolved_read,
    "ddl": ddl,
    "time_travel": time_travel,
    "planning": planning,
    "cow_upsert": cow_upsert,
    "mor_compaction": mor_compaction,
    "mor_read": mor_read,
    "random_upsert": random_upsert,
    "notebook_alter": notebook_alter,
    "first_rows": first_rows,
    "wide_write": wide_write,
    "keyed_insert": keyed_insert,
}

__all__ = ["BENCHMARKS", "Context"]
