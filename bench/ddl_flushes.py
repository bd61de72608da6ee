"""What an ``ADD COLUMN`` costs against delta-rs's ``add_columns``, and how much of it is flushing.

``python -m bench.ddl_flushes [--alters N] [--rounds R]`` times, on fresh tables each round, the
same ``ALTER TABLE t ADD COLUMN c<i> int DEFAULT 1`` on an evonb table as it runs (every file of
the commit flushed to disk before the next step: ``os.fsync`` of each file and of its folder),
the same ALTER with ``os.fsync`` made a no-op in this process (a diagnostic only: what the
flushes cost; a crash could then lose a commit), and delta-rs's ``alter.add_columns`` of one
nullable column, which flushes nothing (``strace -f -e trace=fsync,fdatasync`` of it shows no
call: it creates a temporary file and links it). The three sides alternate ALTER by ALTER, in
rotated order; the first round is a warm-up. It prints the median wall and CPU time (this
process) of each side, the ratios against delta-rs, and how many ``fsync`` calls an evonb
ALTER makes. Nothing is asserted. Needs ``deltalake`` (``pip install 'evonb[bench]'``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SIDES = ("evonb", "evonb, fsync skipped", "delta-rs")


@contextmanager
def counted_fsyncs(skip: bool = False) -> Iterator[list[int]]:
    """``os.fsync`` counted (the list's one number) and, with ``skip``, not done."""
    real = os.fsync
    count = [0]

    def fsync(fd: int) -> None:
        count[0] += 1
        if not skip:
            real(fd)

    os.fsync = fsync
    try:
        yield count
    finally:
        os.fsync = real


def _tables(where: Path, round_: int) -> dict[str, Callable[[int], Any]]:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    from deltalake.schema import Field, PrimitiveType

    import evonb

    durable = evonb.create_table(where / f"evonb-{round_}", "id bigint not null",
                                 primary_key="id")
    unflushed = evonb.create_table(where / f"nosync-{round_}", "id bigint not null",
                                   primary_key="id")
    write_deltalake(str(where / f"delta-{round_}"), pa.table({"id": pa.array([1], pa.int64())}))
    delta = DeltaTable(str(where / f"delta-{round_}"))
    return {
        SIDES[0]: lambda i: durable.alter(f"ALTER TABLE t ADD COLUMN c{i} int DEFAULT 1"),
        SIDES[1]: lambda i: unflushed.alter(f"ALTER TABLE t ADD COLUMN c{i} int DEFAULT 1"),
        SIDES[2]: lambda i: delta.alter.add_columns(
            [Field(f"c{i}", PrimitiveType("integer"), nullable=True)]),
    }


def run(alters: int = 40, rounds: int = 4, out: Callable[[str], None] = print
        ) -> dict[str, dict[str, float]]:
    """Time the three sides; returns ``{side: {"wall": s, "cpu": s, "fsyncs": per ALTER}}``
    (medians over the rounds after the first)."""
    wall: dict[str, list[float]] = {s: [] for s in SIDES}
    cpu: dict[str, list[float]] = {s: [] for s in SIDES}
    syncs: dict[str, list[int]] = {s: [] for s in SIDES}
    where = Path(tempfile.mkdtemp(prefix="evonb-ddl-flushes-"))
    try:
        for r in range(rounds):
            sides = _tables(where, r)
            order = list(SIDES)
            for i in range(alters):
                order = order[1:] + order[:1]  # rotated: none always first
                for side in order:
                    with counted_fsyncs(skip=side == SIDES[1]) as count:
                        t0, c0 = time.perf_counter(), time.process_time()
                        sides[side](i)
                        dt, dc = time.perf_counter() - t0, time.process_time() - c0
                    if r:  # the first round warms up
                        wall[side].append(dt)
                        cpu[side].append(dc)
                        syncs[side].append(count[0])
    finally:
        shutil.rmtree(where, ignore_errors=True)
    result = {s: {"wall": statistics.median(wall[s]), "cpu": statistics.median(cpu[s]),
                  "fsyncs": statistics.median(syncs[s])} for s in SIDES}
    peer = result[SIDES[2]]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    out(f"ADD COLUMN, {alters} per side and round, {rounds - 1} rounds kept "
        f"(load average {load:.1f} at the end)")
    for side in SIDES:
        m = result[side]
        out(f"  {side:22s} wall {m['wall'] * 1000:7.2f} ms ({m['wall'] / peer['wall']:.2f}x "
            f"delta-rs)  CPU {m['cpu'] * 1000:7.2f} ms ({m['cpu'] / peer['cpu']:.2f}x)  "
            f"fsync calls seen in this process: {m['fsyncs']:g}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ddl_flushes",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--alters", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    run(alters=args.alters, rounds=args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
