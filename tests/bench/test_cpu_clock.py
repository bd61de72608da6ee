"""The CPU clock of Spark cases counts the work the local Spark JVM does, not only Python's."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.cpu import local_spark_cpu_clock, tree_cpu_seconds

BURN = """
import os, time
pid = os.fork()
if pid == 0:  # the grandchild burns 0.4 s of CPU, then exits
    end = time.process_time() + 0.4
    while time.process_time() < end:
        pass
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(30)
"""


def test_tree_cpu_counts_a_process_and_its_children():
    proc = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        deadline = time.monotonic() + 20
        used = tree_cpu_seconds(proc.pid)
        while used < 0.4 and time.monotonic() < deadline:
            time.sleep(0.05)
            used = tree_cpu_seconds(proc.pid)
        # the grandchild's 0.4 s, live or reaped, and not much more (the parent mostly sleeps)
        assert 0.4 <= used < 1.5, used
    finally:
        proc.kill()
        proc.wait()


def test_local_spark_clock_counts_the_jvm(spark):
    clock = local_spark_cpu_clock(spark)
    assert clock is not None

    def job(n):  # a new DataFrame each time: Spark may answer a DataFrame collected before
        return spark.range(0, n, numPartitions=2).selectExpr("sum(hash(id)) as s")

    job(200_000_001).collect()  # warm: the plan's code compiled once
    cpu0, mine0 = clock(), time.process_time()
    job(200_000_000).collect()  # about 1.5 s of the JVM's CPU here
    spark_cpu, python_cpu = clock() - cpu0, time.process_time() - mine0
    # the hashing runs in the JVM: the clock sees it, this process's own time does not
    assert spark_cpu > 0.3
    assert spark_cpu > 5 * python_cpu, (spark_cpu, python_cpu)
