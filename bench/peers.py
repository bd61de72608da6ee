"""The peers side by side: one workload on evonb, pyiceberg and delta-rs in the same run.

The workload (``size.rows`` rows): create a table, write every row, apply the 11 schema changes
of ``evolved_read`` (where the peer can), upsert 1% of the keys drawn at random, read the whole
table, and read it as of the first write. evonb runs it once and is read by both of its
readers (Spark's ``t.read().toArrow()`` and the JVM-free ``t.to_arrow()``), and once more on
a merge-on-read table (only its upsert and its full read timed, reported against the peers'
upsert and read); pyiceberg
(``SqlCatalog`` on sqlite, pyarrow writes) and delta-rs (``deltalake``) run the same steps.

Each round runs the whole workload on fresh tables of every system, rotating which system goes
first; warm-up rounds are discarded and each step keeps its median, like the other benchmarks.
The reads come last in a round, once every system's table is built, so that each starts from
the same state of this process: the JVM-free readers first (their order rotated each round),
then Spark's; before each read the garbage is collected, and each result is reduced to its
fingerprint and dropped before the next read starts. (Reading each system's tables right after
its own writes, keeping every result for the end, made each read pay for what the step before
it left: the 5M-row results already held, and a JVM still busy after Spark's read.) Every
system's full read and read as of the first write are checked to return the same rows (count
and an order-independent checksum of the values); a difference fails the benchmark, since a
comparison of different results means nothing.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import resource
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.harness import Result, skipped
from bench.suite import (
    BASE_COLUMNS,
    EVOLUTION,
    Context,
    _apply,
    _ddl,
    _slice,
    has_pyiceberg,
    iceberg_catalog,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

UPSERT_FRACTION = 0.01
DEFAULTS: dict[str, Any] = {"region": "eu", "score": 0, "flag": False}
"""The DEFAULT of each column ``EVOLUTION`` adds (rows written before read it)."""
ARROW_TYPES = {"bigint": "int64", "int": "int32", "float": "float32", "double": "float64",
               "string": "string", "boolean": "bool"}


class PeerMismatch(AssertionError):
    """The systems' reads returned different rows: the comparison would be meaningless."""


# ------------------------------------------------------------------------------- the steps
def alter_step(i: int) -> str:
    return f"alter.{i:02d}"


STEPS: dict[str, str] = {
    "create": "create the table (6 columns, key id)",
    "write": "write every row (one append)",
    **{alter_step(i): ddl for i, (ddl, _) in enumerate(EVOLUTION, start=1)},
    "upsert": f"upsert {UPSERT_FRACTION:.0%} of the keys drawn at random (new values)",
    "upsert_mor": "the same upsert into a merge-on-read table (log blocks; evonb only), "
                  "against the peers' upsert",
    "read": "full-scan read into a pyarrow Table (latest schema)",
    "read_as_of_first": "read as of the first write (its schema) into a pyarrow Table",
}
"""Every timed step, in workload order, and what it does."""


@dataclass
class Peer:
    """One system's run of the workload: times per step, and what it cannot do (and why)."""

    name: str
    times: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)  # this process's CPU s
    sys: dict[str, list[float]] = field(default_factory=dict)  # of it, in the kernel
    unsupported: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # logical (evonb) name -> its column
    no_default: dict[str, Any] = field(default_factory=dict)  # column -> DEFAULT read as null
    prints: dict[str, tuple[int, int]] = field(default_factory=dict)  # read step -> fingerprint

    def record(self, step: str, seconds: float, cpu: float | None = None,
               sys: float | None = None) -> None:
        self.times.setdefault(step, []).append(seconds)
        if cpu is not None:
            self.cpu.setdefault(step, []).append(cpu)
        if sys is not None:
            self.sys.setdefault(step, []).append(sys)

    def clear(self) -> None:
        self.times.clear()
        self.cpu.clear()
        self.sys.clear()


@dataclass(frozen=True)
class Read:
    """One read step of one reader, run in the round's read phase (:func:`read_phase`)."""

    reader: Peer
    step: str  # "read" or "read_as_of_first"
    run: Callable[[], pa.Table]
    in_process: bool = True  # its CPU time is this process's (not Spark's JVM)


SETTLE_S = 3.0
"""The pause before a round's reads: a JVM still collecting after Spark's writes settles."""
READ_PASSES = 3
"""Times each JVM-free read runs in a round's read phase (the order rotated on each pass): a
read's wall time varies most with what the kernel does to give it memory (see
:func:`_timed_step`), so each round gives each reader several samples."""


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _timed_step(peer: Peer, step: str, fn: Callable[[], Any], *, cpu: bool = True) -> Any:
    """Time one step: wall time, and (``cpu``: steps that run in this process, as every
    schema change and every read but Spark's do) the CPU time of this process (every thread:
    pyarrow's, the readers' thread pools, delta-rs's), which a loaded machine disturbs far
    less, with the part of it spent in the kernel. That part is mostly the kernel giving the
    read fresh memory, and it varies from one read to the next far more than the readers'
    own work: on a virtual machine whose memory the host backs on first touch, one 5M-row
    read took 0.03 s of it and the next of the same rows 0.86 s."""
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    out = fn()
    after = resource.getrusage(resource.RUSAGE_SELF)
    kernel = after.ru_stime - before.ru_stime
    peer.record(step, time.perf_counter() - start,
                after.ru_utime - before.ru_utime + kernel if cpu else None,
                kernel if cpu else None)
    return out


# ------------------------------------------------------------------------------- the data
def _upsert_arrow(rows: int, columns: dict[str, tuple[str, str]], seed: int) -> pa.Table:
    """1% of the keys drawn at random (sorted), with new values in the final schema; every
    value is exact in float32 so systems that could not widen ``amount`` store the same."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(rows, size=max(1, int(rows * UPSERT_FRACTION)), replace=False))
    values: dict[str, Any] = {
        "id": ids.astype(np.int64),
        "account_id": ids.astype(np.int32),
        "amount": (ids % 1000).astype(np.float64) + 0.5,
        "qty": np.full(len(ids), 99, np.int64),
        "category": pa.array([f"u{i % 50}" for i in ids.tolist()]),
        "zone": pa.array(["z-up"] * len(ids)),
        "score": np.full(len(ids), 7, np.int64),
        "flag": np.ones(len(ids), bool),
    }
    assert set(values) == set(columns), sorted(columns)
    return pa.table({n: pa.array(values[n]).cast(ARROW_TYPES[t])
                     for n, (t, _) in columns.items()})


def fingerprint(table: pa.Table, peer: Peer, columns: dict[str, tuple[str, str]]
                ) -> tuple[int, int]:
    """Row count and an order-independent checksum of ``table``'s values in evonb's columns
    (``columns``: logical name -> type): each column found under the peer's name for it, cast
    to evonb's type, nulls of added columns the peer reads as null replaced by their DEFAULT."""
    import pandas as pd
    import pyarrow as pa

    arrays = {}
    for name, (typ, _) in columns.items():
        col = table.column(peer.names.get(name, name)).cast(ARROW_TYPES[typ])
        if name in peer.no_default:
            col = col.fill_null(pa.scalar(peer.no_default[name], ARROW_TYPES[typ]))
        arrays[name] = col
    frame = pa.table(arrays).to_pandas()
    hashes = pd.util.hash_pandas_object(frame, index=False)
    return table.num_rows, int(hashes.sum()) & (2**64 - 1)


# ---------------------------------------------------------------------------------- evonb
def run_evonb(ctx: Context, peer: Peer, round_no: int, upsert: pa.Table,
              readers: dict[str, Peer]) -> list[Read]:
    """The workload on evonb up to its reads, which it returns for ``readers`` (Spark and
    Arrow)."""
    import evonb

    spark, size = ctx.spark, ctx.size
    columns = dict(BASE_COLUMNS)
    path = ctx.path(f"evonb_{round_no}")
    sec, t = _timed(lambda: evonb.create_table(path, _ddl(columns), primary_key="id"))
    peer.record("create", sec)
    data = _slice(spark, columns, 0, size.rows, size.slice_partitions)
    sec, first = _timed(lambda: t.write(data))
    peer.record("write", sec)
    for i, (ddl, op) in enumerate(EVOLUTION, start=1):
        _timed_step(peer, alter_step(i), lambda ddl=ddl: t.alter(f"ALTER TABLE {t.name} {ddl}"))
        columns = _apply(columns, op)
    source = spark.createDataFrame(upsert)
    sec, _ = _timed(lambda: t.write(source, mode="upsert"))
    peer.record("upsert", sec)
    arrow, spark = readers["arrow"], readers["spark"]  # Spark's CPU is the JVM's: not counted
    return [Read(arrow, "read", lambda: t.to_arrow()),
            Read(arrow, "read_as_of_first", lambda: t.to_arrow(as_of=first.instant)),
            Read(spark, "read", lambda: t.read().toArrow(), in_process=False),
            Read(spark, "read_as_of_first", lambda: t.read(as_of=first.instant).toArrow(),
                 in_process=False)]


def run_evonb_mor(ctx: Context, peer: Peer, round_no: int, upsert: pa.Table,
                  reader: Peer) -> list[Read]:
    """The same table as :func:`run_evonb` but merge-on-read, built untimed (its write and
    changes are the copy-on-write table's); only its upsert (``upsert_mor``) is timed, and
    its full read is one more JVM-free read (``reader``) of the round."""
    import evonb

    spark, size = ctx.spark, ctx.size
    columns = dict(BASE_COLUMNS)
    t = evonb.create_table(ctx.path(f"evonb_mor_{round_no}"), _ddl(columns), primary_key="id",
                           table_type="mor")
    t.write(_slice(spark, columns, 0, size.rows, size.slice_partitions))
    for ddl, _ in EVOLUTION:
        t.alter(f"ALTER TABLE {t.name} {ddl}")
    source = spark.createDataFrame(upsert)
    sec, _ = _timed(lambda: t.write(source, mode="upsert"))
    peer.record("upsert_mor", sec)
    return [Read(reader, "read", lambda: t.to_arrow())]



# ------------------------------------------------------------------------------ pyiceberg
def _ice_type(name: str) -> Any:
    from bench.suite import _iceberg_type

    return _iceberg_type(name)


ICEBERG_UPSERT = ("pyiceberg upserts with overwrite(rows, overwrite_filter=id IN keys): delete "
                  "then append in one transaction. Table.upsert (pyiceberg 0.12) fails after "
                  "schema changes that no snapshot followed: it scans the matched rows in the "
                  "last snapshot's schema and cannot cast them to the new one")


def run_pyiceberg(ctx: Context, peer: Peer, round_no: int, base: pa.Table,
                  upsert: pa.Table) -> list[Read]:
    """The workload on pyiceberg: ``update_schema`` for every change (added columns with
    ``default_value``), the upsert as ``overwrite`` with the filter ``id IN (keys)`` (see
    :data:`ICEBERG_UPSERT`); its reads (``scan().to_arrow()``, ``scan(snapshot_id=...)``)
    are returned."""
    from bench.suite import _iceberg_schema

    catalog = iceberg_catalog(ctx)
    name = f"bench.peers_{round_no}"
    with contextlib.suppress(Exception):
        catalog.drop_table(name)
    columns = dict(BASE_COLUMNS)
    sec, ice = _timed(lambda: catalog.create_table(name, schema=_iceberg_schema(columns),
                                                   properties={"format-version": "2"}))
    peer.record("create", sec)
    data = base.cast(ice.schema().as_arrow())
    sec, _ = _timed(lambda: ice.append(data))
    peer.record("write", sec)
    first = ice.current_snapshot().snapshot_id

    def change(op: tuple[Any, ...]) -> None:
        with ice.update_schema() as u:
            kind = op[0]
            if kind == "rename":
                u.rename_column(op[1], op[2])
            elif kind == "add":
                u.add_column(op[1], _ice_type(op[2]), default_value=DEFAULTS[op[1]])
            elif kind == "type":
                u.update_column(op[1], _ice_type(op[2]))
            elif kind == "drop":
                u.delete_column(op[1])

    for i, (_, op) in enumerate(EVOLUTION, start=1):
        _timed_step(peer, alter_step(i), lambda op=op: change(op))
    from pyiceberg.expressions import In

    source = upsert.cast(ice.schema().as_arrow())
    keys = In("id", source.column("id").to_pylist())
    sec, _ = _timed(lambda: ice.overwrite(source, overwrite_filter=keys))
    peer.record("upsert", sec)
    return [Read(peer, "read", lambda: ice.scan().to_arrow()),
            Read(peer, "read_as_of_first", lambda: ice.scan(snapshot_id=first).to_arrow())]


# ------------------------------------------------------------------------------- delta-rs
DELTA_NO_RENAME = ("delta-rs has no rename: Delta renames need column mapping, and deltalake's "
                   "TableAlterer offers no rename_column (add_columns only)")
DELTA_NO_DROP = ("delta-rs has no drop: Delta drops need column mapping, and deltalake's "
                 "TableAlterer offers no drop_column")
DELTA_NO_TYPE = ("delta-rs has no type change: widening needs Delta's typeWidening table "
                 "feature, which deltalake does not implement (only a rewrite of every file)")
DELTA_NO_DEFAULT = ("delta-rs adds the column, but rows written before read null, not the "
                    "DEFAULT (Delta has no default for existing rows)")


def _delta_supports(op: str) -> str | None:
    """Why deltalake cannot do a change of kind ``op``, or None when it can."""
    from deltalake.table import TableAlterer

    if op == "rename" and not hasattr(TableAlterer, "rename_column"):
        return DELTA_NO_RENAME
    if op == "drop" and not hasattr(TableAlterer, "drop_column"):
        return DELTA_NO_DROP
    if op == "type" and not hasattr(TableAlterer, "change_column_type"):
        return DELTA_NO_TYPE
    return None


def run_delta(ctx: Context, peer: Peer, round_no: int, base: pa.Table,
              upsert: pa.Table) -> list[Read]:
    """The workload on delta-rs: ``DeltaTable.create``, ``write_deltalake`` (append),
    ``alter.add_columns`` for added columns, ``merge`` on ``id`` for the upsert; its reads
    (``to_pyarrow_table()``, ``DeltaTable(path, version=...)`` for the old one) are
    returned."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    from deltalake.schema import Field as DeltaField
    from deltalake.schema import PrimitiveType

    path = str(ctx.path(f"delta_{round_no}"))
    peer.unsupported.clear()
    peer.no_default.clear()
    columns = dict(BASE_COLUMNS)
    schema = pa.schema([pa.field(n, ARROW_TYPES[t]) for n, (t, _) in columns.items()])
    sec, dt = _timed(lambda: DeltaTable.create(path, schema=schema))
    peer.record("create", sec)
    sec, _ = _timed(lambda: write_deltalake(dt, base.cast(schema), mode="append"))
    peer.record("write", sec)
    dt.update_incremental()
    first = dt.version()
    delta_types = {"bigint": "long", "int": "integer", "float": "float", "double": "double",
                   "string": "string", "boolean": "boolean"}
    peer.names = {n: n for n in columns}
    for i, (_, op) in enumerate(EVOLUTION, start=1):
        step = alter_step(i)
        columns = _apply(columns, op)
        why = _delta_supports(op[0])
        if why is not None:
            peer.unsupported[step] = why
            if op[0] == "rename":  # the data stays under the old name
                peer.names[op[2]] = peer.names.pop(op[1])
                if op[1] in peer.no_default:
                    peer.no_default[op[2]] = peer.no_default.pop(op[1])
            elif op[0] == "drop":
                peer.names.pop(op[1])
            continue
        assert op[0] == "add", op
        new = DeltaField(op[1], PrimitiveType(delta_types[op[2]]), nullable=True)
        _timed_step(peer, step, lambda new=new: dt.alter.add_columns([new]))
        peer.names[op[1]] = op[1]
        peer.no_default[op[1]] = DEFAULTS[op[1]]
        peer.unsupported.setdefault(f"{step} (DEFAULT)", DELTA_NO_DEFAULT)
    target = pa.schema(dt.schema().to_arrow())
    source = pa.table({peer.names[n]: upsert.column(n) for n in columns})
    source = source.cast(pa.schema([target.field(n) for n in source.column_names]))
    cols = source.column_names
    sec, _ = _timed(lambda: (
        dt.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({c: f"s.`{c}`" for c in cols if c != "id"})
        .when_not_matched_insert({c: f"s.`{c}`" for c in cols}).execute()))
    peer.record("upsert", sec)
    return [Read(peer, "read", lambda: dt.to_pyarrow_table()),
            Read(peer, "read_as_of_first",
                 lambda: DeltaTable(path, version=first).to_pyarrow_table())]


# ------------------------------------------------------------------------------- the reads
def read_phase(reads: list[Read], round_no: int, final_columns: dict[str, tuple[str, str]],
               passes: int = READ_PASSES) -> None:
    """Every read of a round, each from the same state of this process: the JVM-free
    readers first, ``passes`` times, their order rotated with ``round_no`` and again on each
    pass, then Spark's once; the garbage is collected before each, and its result is reduced
    to its fingerprint (``reader.prints``, not timed; every pass must give the same) and
    dropped before the next starts."""
    gc.collect()
    time.sleep(SETTLE_S)
    local = [r for r in reads if r.in_process]
    readers = sorted({r.reader.name for r in local})
    ordered: list[Read] = []
    for n in range(passes):
        shift = (round_no + n) % max(1, len(readers))
        order = readers[shift:] + readers[:shift]
        ordered += [r for step in ("read", "read_as_of_first") for name in order
                    for r in local if r.reader.name == name and r.step == step]
    ordered += [r for r in reads if not r.in_process]
    seen: set[tuple[str, str]] = set()
    for read in ordered:
        gc.collect()
        out = _timed_step(read.reader, read.step, read.run, cpu=read.in_process)
        if read.step == "read":
            got = fingerprint(out, read.reader, final_columns)
        else:  # the first write predates every change: no renames, no defaults
            got = fingerprint(out, Peer(read.reader.name), BASE_COLUMNS)
        del out
        key = (read.reader.name, read.step)
        if key in seen and read.reader.prints[read.step] != got:
            raise PeerMismatch(f"{read.reader.name}'s {read.step} returned different rows "
                               f"from one pass to the next: {read.reader.prints[read.step]} "
                               f"and {got}")
        seen.add(key)
        read.reader.prints[read.step] = got


# ------------------------------------------------------------------------------- the report
def _median(peer: Peer, step: str) -> float | None:
    samples = peer.times.get(step)
    return statistics.median(samples) if samples else None


def _step_result(step: str, name: str, evo: Peer, others: list[Peer], *, barred: bool,
                 label: str, against: str | None = None) -> Result:
    """One step: evonb's median against the faster peer that can do it (its ``against`` step,
    by default the same), and every peer's ratio (or why it cannot do the step) in the
    notes."""
    e = _median(evo, step)
    theirs = against or step
    vs: dict[str, float] = {}
    notes = []
    for p in others:
        m = _median(p, theirs)
        why = p.unsupported.get(theirs)
        if m is None or why:
            notes.append(f"{p.name}: not supported - {why or 'step not run'}")
            continue
        vs[p.name] = m
        notes.append(f"{p.name}: {m:.4f}s, evonb / {p.name} = {e / m:.2f}x" if e else
                     f"{p.name}: {m:.4f}s")
        extra = p.unsupported.get(f"{theirs} (DEFAULT)")
        if extra:
            notes.append(f"{p.name}: {extra}")
    fastest = min(vs, key=vs.__getitem__) if vs else None
    b = vs[fastest] if fastest else None
    ratio = e / b if (e is not None and b) else None
    status = "INFO"
    if barred and ratio is not None:
        status = "PASS" if ratio <= 1.0 else "MISS"
    if ratio is not None and len(vs) > 1:
        notes.insert(0, f"evonb / faster peer ({fastest}) = {ratio:.2f}x")
    sides = [(evo, step), *((o, theirs) for o in others)]  # each system and its step
    cpu = {p.name: statistics.median(p.cpu[s]) for p, s in sides if p.cpu.get(s)}
    if evo.name in cpu and len(cpu) > 1:
        e_cpu = cpu[evo.name]
        notes.append("CPU s of the process (all threads): " + ", ".join(
            f"{n} {c:.4f}" + (f" (evonb / {n} = {e_cpu / c:.2f}x)" if n != evo.name and c
                              else "") for n, c in cpu.items()))
    kernel = {p.name: statistics.median(p.sys[s]) for p, s in sides if p.sys.get(s)}
    if step.startswith("read") and evo.name in kernel and len(kernel) > 1:
        spread = {p.name: (min(p.sys[s]), max(p.sys[s])) for p, s in sides if p.sys.get(s)}
        notes.append("of it in the kernel (median, least to most): " + ", ".join(
            f"{n} {k:.4f} ({spread[n][0]:.3f} to {spread[n][1]:.3f})"
            for n, k in kernel.items()))
    return Result(
        benchmark="peers", name=name, status=status,
        evonb_label=label if evo.name == "evonb" else f"{evo.name}: {label}",
        baseline_label=f"faster peer: {fastest or '-'}",
        evonb_median_s=e, baseline_median_s=b, ratio=ratio,
        bar="<= 1x the faster peer" if barred else "report only",
        evonb_samples_s=list(evo.times.get(step, ())),
        baseline_samples_s=list(next(p for p in others if p.name == fastest).times[theirs]
                                if fastest else ()),
        notes=notes, metrics={"step": step, "medians_s": {evo.name: e, **vs},
                              "cpu_medians_s": cpu,
                              "kernel_medians_s": kernel,
                              "cpu_samples_s": {p.name: list(p.cpu[s]) for p, s in sides
                                                if p.cpu.get(s)},
                              "unsupported": {p.name: p.unsupported.get(theirs)
                                              for p in others if p.unsupported.get(theirs)}},
    )


def check_same(systems: list[Peer]) -> dict[str, dict[str, tuple[int, int]]]:
    """The fingerprints of every system's two reads (``Peer.prints``, the last round's), by
    step and system; raises :class:`PeerMismatch` if any differ."""
    prints: dict[str, dict[str, tuple[int, int]]] = {"read": {}, "read_as_of_first": {}}
    for p in systems:
        for step, by in prints.items():
            assert step in p.prints, (p.name, step)
            by[p.name] = p.prints[step]
    for step, by in prints.items():
        if len(set(by.values())) != 1:
            raise PeerMismatch(f"the systems' {step} returned different rows (rows, checksum): "
                               f"{by}")
    return prints


def has_deltalake() -> bool:
    return importlib.util.find_spec("deltalake") is not None


def peers(ctx: Context) -> Iterator[Result]:
    """One workload (create, write, 11 schema changes, 1% random upsert, reads, time travel)
    on evonb, pyiceberg and delta-rs; evonb / peer per step."""
    missing = [n for n, ok in (("pyiceberg", has_pyiceberg()), ("deltalake", has_deltalake()))
               if not ok]
    if missing:
        yield skipped("peers", "peers", f"{' and '.join(missing)} not installed "
                      "(pip install 'evonb[bench]')")
        return
    spark, size = ctx.spark, ctx.size
    rounds = ctx.warmup + ctx.repeat
    final_columns = dict(BASE_COLUMNS)
    for _, op in EVOLUTION:
        final_columns = _apply(final_columns, op)
    base = _slice(spark, BASE_COLUMNS, 0, size.rows, size.slice_partitions).toArrow()
    upsert = _upsert_arrow(size.rows, final_columns, seed=7)
    evo = Peer("evonb")
    readers = {"spark": Peer("evonb (Spark)"), "arrow": Peer("evonb (to_arrow)")}
    mor = Peer("evonb merge-on-read (to_arrow)")
    ice, delta = Peer("pyiceberg"), Peer("deltalake")
    runs: list[tuple[Peer, Callable[[int], list[Read]]]] = [
        (evo, lambda r: run_evonb(ctx, evo, r, upsert, readers)
         + run_evonb_mor(ctx, evo, r, upsert, mor)),
        (ice, lambda r: run_pyiceberg(ctx, ice, r, base, upsert)),
        (delta, lambda r: run_delta(ctx, delta, r, base, upsert)),
    ]
    for r in range(rounds):
        order = runs[r % len(runs):] + runs[:r % len(runs)]
        reads: list[Read] = []
        for peer, run in order:
            reads += run(r)
            ctx.log(f"    round {r + 1}/{rounds}: {peer.name} written and changed")
        read_phase(reads, r, final_columns)
        del reads
        ctx.log(f"    round {r + 1}/{rounds}: every system read")
        if r < ctx.warmup:  # warm-up rounds are not kept
            for p in (evo, *readers.values(), mor, ice, delta):
                p.clear()
        if r + 1 < rounds:  # the last round's tables are the ones checked below
            for folder in (f"evonb_{r}", f"evonb_mor_{r}", f"delta_{r}"):
                shutil.rmtree(ctx.workdir / folder, ignore_errors=True)
    prints = check_same([*readers.values(), ice, delta])
    if prints["read"][ice.name] != mor.prints.get("read"):
        raise PeerMismatch(f"evonb's merge-on-read table read {mor.prints.get('read')}, the "
                           f"others {prints['read'][ice.name]} (rows, checksum)")
    peers_ = [ice, delta]
    for step, label in STEPS.items():
        if step.startswith("read"):
            rows, checksum = prints[step][ice.name]
            for key, reader in readers.items():
                res = _step_result(step, f"peers.{step}.{key}", reader, peers_,
                                   barred=key == "arrow", label=label)
                res.notes.append(f"same rows on every system: {rows:,} rows, checksum "
                                 f"{checksum:#018x}")
                yield res
            if step == "read":  # report only: the bar is the workload's copy-on-write table
                res = _step_result(step, "peers.read.arrow_mor", mor, peers_, barred=False,
                                   label=f"{label}, merge-on-read table after the upsert "
                                         "(each file group merged with its log block)")
                res.notes.append(f"same rows as every system's read: {rows:,} rows")
                yield res
        else:
            res = _step_result(step, f"peers.{step}", evo, peers_,
                               barred=step.startswith("alter."), label=label,
                               against="upsert" if step == "upsert_mor" else None)
            if step == "upsert":
                res.notes += [ICEBERG_UPSERT, "deltalake: DeltaTable.merge on id "
                              "(when_matched_update, when_not_matched_insert)",
                              "evonb: t.write(df, mode='upsert') on primary key id"]
            if step == "upsert_mor":
                res.notes.append("evonb: the same t.write(df, mode='upsert') into a table made "
                                 "with table_type='mor' (same write and changes, untimed)")
            yield res
    alters = [s for s in STEPS if s.startswith("alter.")]
    evo_all, ice_all = Peer("evonb"), Peer("pyiceberg")
    for i in range(ctx.repeat):
        evo_all.record("alter.all", sum(evo.times[s][i] for s in alters),
                       sum(evo.cpu[s][i] for s in alters))
        ice_all.record("alter.all", sum(ice.times[s][i] for s in alters),
                       sum(ice.cpu[s][i] for s in alters))
    total = _step_result("alter.all", "peers.alter.all", evo_all, [ice_all], barred=True,
                         label=f"all {len(alters)} schema changes")
    done = sum(1 for s in alters if s not in delta.unsupported)
    total.notes.append(f"deltalake: not supported - it can do {done} of the {len(alters)} "
                       "(the added columns, without their DEFAULT for existing rows)")
    total.notes.append(f"{size.rows:,} rows written, {upsert.num_rows:,} keys upserted "
                       f"({UPSERT_FRACTION:.0%} at random); {ctx.repeat} kept round(s) after "
                       f"{ctx.warmup} warm-up, system order rotated each round; each JVM-free read "
                       f"{READ_PASSES} times a round, Spark's once")
    yield total
