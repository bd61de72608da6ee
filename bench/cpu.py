"""CPU time of a local Spark session: this Python process, the Spark JVM and its children.

A wall-clock sample on a busy machine mostly measures the wait for a core; the CPU time the
work used is disturbed far less. In local mode every Spark task runs in one JVM started by
this process, and the Python workers Spark starts for UDFs and Arrow conversions are its
children, so the CPU time of that process tree is the CPU time of the work. Read from
``/proc`` (Linux); elsewhere, or for a session whose executors run on other machines, there
is no such clock and the harness records only this process's CPU time where it can.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return out


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) used by ``pid``, its reaped children and its live
    descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        fields = _stat_fields(p)
        if fields is None:
            continue
        # After the name: state is field 3 of stat, so utime (14) .. cstime (17) sit at 11..14.
        total += sum(int(v) for v in fields[11:15])
        todo.extend(_children(p))
    return total / tick


def local_spark_cpu_clock(spark: SparkSession) -> Callable[[], float] | None:
    """A clock of the CPU seconds used by this process and ``spark``'s local JVM (with its
    Python workers), or None where it cannot be read (not local mode, no ``/proc``)."""
    master = spark.sparkContext.master or ""
    if not master.startswith("local") or not (PROC / "self" / "stat").exists():
        return None
    try:
        jvm = spark.sparkContext._jvm
        jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
    except Exception:  # a py4j or JVM failure: no clock, not a failed run
        return None
    if jvm_pid == os.getpid() or _stat_fields(jvm_pid) is None:
        return None

    def clock() -> float:
        return time.process_time() + tree_cpu_seconds(jvm_pid)

    return clock


__all__ = ["local_spark_cpu_clock", "tree_cpu_seconds"]
