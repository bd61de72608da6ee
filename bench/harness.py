"""The timing harness: interleaved runs of two sides, medians, ratios, bars, and the report.

Each benchmark yields one or more :class:`Case` objects. A case holds two callables, the evonb
side and its baseline, each optionally preceded by an untimed ``prepare`` step (for work that
must be redone before every run, such as laying down a delta to compact). The harness runs the
two sides alternately (evonb then baseline, then baseline then evonb, ...) so that drift in the
machine's state falls on both, discards the warm-up rounds, and keeps the median of the rest.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Thunk = Callable[[], Any]
Clock = Callable[[], float]
"""CPU seconds used so far (by this process, or by it and the Spark JVM)."""


@dataclass
class Side:
    """One side of a comparison: what is timed, and what is redone untimed before each run."""

    label: str
    run: Thunk
    prepare: Thunk | None = None


@dataclass
class Case:
    """A comparison of evonb against a baseline, with the bar it must meet.

    ``bar`` is the largest passing ratio evonb/baseline. ``absolute_bar`` (seconds), when set,
    is checked against evonb's median instead (the ratio is still reported). ``check``, when
    set, decides PASS/MISS from the measurements and notes (e.g. rows skipped), and ``bar_text``
    says what it checks. ``after`` runs once after timing (untimed) and may add notes.
    """

    name: str
    evonb: Side
    baseline: Side
    bar: float | None = None
    absolute_bar: float | None = None
    bar_text: str | None = None
    check: Callable[[Result], bool] | None = None
    after: Callable[[Result], None] | None = None
    notes: list[str] = field(default_factory=list)
    inner: tuple[int, int] = (1, 1)
    same_calls: bool = False  # both sides make as many calls per sample (state that grows)
    cpu: bool = False
    """Both sides run in this process (no Spark job): record each sample's CPU time of this
    process (every thread), which load from other work disturbs far less than wall time.
    Other cases record the CPU time of this process and the local Spark JVM with its Python
    workers, where the suite has such a clock (:mod:`bench.cpu`)."""
    cpu_samples: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))


@dataclass
class Result:
    """The outcome of one case (also what the JSON file holds, one object per case)."""

    benchmark: str
    name: str
    status: str  # PASS, MISS, INFO, SKIP or ERROR
    evonb_label: str = ""
    baseline_label: str = ""
    evonb_median_s: float | None = None
    baseline_median_s: float | None = None
    ratio: float | None = None
    bar: str = ""
    evonb_samples_s: list[float] = field(default_factory=list)
    baseline_samples_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    calls_per_sample: list[int] = field(default_factory=list)
    evonb_cpu_samples_s: list[float] = field(default_factory=list)
    baseline_cpu_samples_s: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


MIN_SAMPLE_S = 0.2
"""Calls faster than this are repeated back to back within one sample (see :func:`measure`)."""
MAX_INNER = 50


def _timed(side: Side, inner: int = 1, clock: Clock = time.process_time
           ) -> tuple[float, float]:
    """Seconds per call of ``side``, averaged over ``inner`` back-to-back calls (each after its
    untimed ``prepare``): wall time, and CPU time by ``clock`` (read outside the timed span)."""
    total = used = 0.0
    gc.collect()
    for _ in range(inner):
        if side.prepare is not None:
            side.prepare()
        cpu_start = clock()
        start = time.perf_counter()
        side.run()
        total += time.perf_counter() - start
        used += clock() - cpu_start
    return total / inner, used / inner


def _inner(seconds: float) -> int:
    if seconds >= MIN_SAMPLE_S:
        return 1
    return max(1, min(MAX_INNER, math.ceil(MIN_SAMPLE_S / max(seconds, 1e-6))))


def measure(case: Case, *, repeat: int, warmup: int, clock: Clock | None = None
            ) -> tuple[list[float], list[float]]:
    """Run both sides ``warmup + repeat`` times, alternating which goes first; the kept samples.

    A side whose first call takes under :data:`MIN_SAMPLE_S` is called several times back to
    back per sample (so timer and scheduler noise average out); a sample is the mean per call.
    Each sample's CPU time goes to ``case.cpu_samples``: by this process's clock for a
    ``cpu`` case, by ``clock`` for others (none recorded without one).
    """
    cpu_clock = time.process_time if case.cpu else clock
    timing_clock = cpu_clock or time.process_time  # its samples are kept only with a clock
    inner = {id(case.evonb): 0, id(case.baseline): 0}
    cpu: dict[int, list[float]] = {id(case.evonb): [], id(case.baseline): []}

    def sample(side: Side) -> float:
        if inner[id(side)] == 0:
            wall, used = _timed(side, clock=timing_clock)
            if wall >= MIN_SAMPLE_S:
                inner[id(side)] = 1
                cpu[id(side)].append(used)
                return wall
            inner[id(side)] = _inner(min(wall, _timed(side)[0]))
        if case.same_calls and all(inner.values()):
            k = max(inner.values())
            inner.update(dict.fromkeys(inner, k))
        wall, used = _timed(side, inner[id(side)], clock=timing_clock)
        cpu[id(side)].append(used)
        return wall

    evo: list[float] = []
    base: list[float] = []
    for i in range(warmup + repeat):
        if i % 2 == 0:
            e = sample(case.evonb)
            b = sample(case.baseline)
        else:
            b = sample(case.baseline)
            e = sample(case.evonb)
        if i >= warmup:
            evo.append(e)
            base.append(b)
    case.inner = (inner[id(case.evonb)], inner[id(case.baseline)])
    if cpu_clock is not None:
        case.cpu_samples = (cpu[id(case.evonb)][warmup:], cpu[id(case.baseline)][warmup:])
    return evo, base


def bar_text(case: Case) -> str:
    if case.bar_text:
        return case.bar_text
    if case.absolute_bar is not None:
        return f"evonb < {case.absolute_bar:g}s"
    if case.bar is not None:
        return f"<= {case.bar:g}x"
    return "report only"


def evaluate(benchmark: str, case: Case, *, repeat: int, warmup: int,
             profiler: Callable[[Side], dict[str, Any]] | None = None,
             clock: Clock | None = None) -> Result:
    """Time a case and judge it against its bar; with ``profiler``, profile one more
    (untimed) run of each side; ``clock`` measures the CPU time of cases that are not
    ``cpu`` (see :func:`measure`). The bar is judged on wall time."""
    evo, base = measure(case, repeat=repeat, warmup=warmup, clock=clock)
    e, b = statistics.median(evo), statistics.median(base)
    result = Result(
        benchmark=benchmark, name=case.name, status="INFO",
        evonb_label=case.evonb.label, baseline_label=case.baseline.label,
        evonb_median_s=e, baseline_median_s=b, ratio=(e / b) if b > 0 else None,
        bar=bar_text(case), evonb_samples_s=evo, baseline_samples_s=base,
        notes=list(case.notes), calls_per_sample=list(case.inner),
    )
    if case.inner != (1, 1):
        result.notes.append(f"calls per sample (mean): evonb {case.inner[0]}, baseline "
                            f"{case.inner[1]}")
    if all(case.cpu_samples):
        result.evonb_cpu_samples_s, result.baseline_cpu_samples_s = map(list, case.cpu_samples)
        ce, cb = map(statistics.median, case.cpu_samples)
        whose = ("this process (every thread)" if case.cpu
                 else "this process and the Spark JVM with its Python workers")
        result.notes.append(f"CPU time of {whose}, median per call: evonb {fmt_s(ce)}, "
                            f"baseline {fmt_s(cb)}, ratio {ce / cb:.2f}x"
                            if cb > 0 else "CPU time of the baseline: none measured")
    if case.after is not None:
        case.after(result)
    if profiler is not None:
        result.metrics["profile"] = {"evonb": profiler(case.evonb),
                                     "baseline": profiler(case.baseline)}
    if case.check is not None:
        ok = case.check(result)
    elif case.absolute_bar is not None:
        ok = e < case.absolute_bar
    elif case.bar is not None and result.ratio is not None:
        ok = result.ratio <= case.bar
    else:
        ok = None
    if ok is not None:
        result.status = "PASS" if ok else "MISS"
        if not ok and case.check is None and case.absolute_bar is None and case.bar:
            over = (result.ratio or 0) / case.bar - 1
            result.notes.append(f"missed the bar by {over:.0%} ({result.ratio:.2f}x vs "
                                f"{case.bar:g}x)")
    return result


def skipped(benchmark: str, name: str, reason: str, bar: str = "") -> Result:
    return Result(benchmark=benchmark, name=name, status="SKIP", bar=bar,
                  notes=[f"skipped: {reason}"])


# ------------------------------------------------------------------------------------ report
def fmt_s(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0.01:
        return f"{value * 1000:.2f}ms"
    if value < 1:
        return f"{value * 1000:.0f}ms"
    return f"{value:.2f}s"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


HEADER = f"{'benchmark':<34} {'evonb':>9} {'baseline':>9} {'ratio':>7}  {'bar':<26} status"


def format_result(r: Result) -> str:
    from bench.util import format_profile

    line = (f"{r.name:<34} {fmt_s(r.evonb_median_s):>9} {fmt_s(r.baseline_median_s):>9} "
            f"{fmt_ratio(r.ratio):>7}  {r.bar:<26} {r.status}")
    lines = [line]
    if r.status != "SKIP" and (r.evonb_label or r.baseline_label):
        lines.append(f"    evonb: {r.evonb_label}  |  baseline: {r.baseline_label}")
    lines.extend(f"    {n}" for n in r.notes)
    for side, prof in r.metrics.get("profile", {}).items():
        lines.extend(f"    {line}" for line in format_profile(side, prof))
    return "\n".join(lines)


def environment(spark: Any | None) -> dict[str, Any]:
    """What the figures depend on: cores, versions, the date."""
    env: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "system": platform.system(),
        "load_average": _loadavg(),
    }
    try:
        import pyspark

        env["pyspark"] = pyspark.__version__
    except ImportError:  # pragma: no cover
        env["pyspark"] = None
    try:
        import pyiceberg

        env["pyiceberg"] = pyiceberg.__version__
    except ImportError:
        env["pyiceberg"] = None
    if spark is not None:
        env["spark_master"] = spark.sparkContext.master
        env["spark_default_parallelism"] = spark.sparkContext.defaultParallelism
    return env


def _loadavg() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (other work on the machine skews the figures)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every system
        return None


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    os.replace(tmp, path)
