"""A script that starts evonb's Spark session: the JVM's console lines go to the Spark log, not
to the process's stderr, and the interpreter exits without worker tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evonb.spark.session import temporary_settings

pytestmark = pytest.mark.spark

SCRIPT = """
import evonb
from evonb.spark.session import spark_log_path
s = evonb.session()
rows = s.createDataFrame([(1,), (2,)], 'a int').rdd.map(lambda r: r.a * 10).collect()
print(sorted(rows))
print(spark_log_path())
"""


def test_script_output_is_clean_and_the_jvm_log_goes_to_the_file(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "[10, 20]"
    assert "BrokenPipeError" not in done.stderr and "Traceback" not in done.stderr
    assert "Setting default log level" not in done.stderr  # a JVM console line
    log = Path(out[1])
    assert log.parent == tmp_path
    assert "Setting default log level" in log.read_text()


EARLY_STOP = """
import evonb
from evonb.spark.session import spark_log_path
s = evonb.session()
print(s.conf.get("spark.python.daemon.module"))
df = s.range(0, 2_000_000, 1, 2).selectExpr("id", "cast(id as string) as v")
for _ in range(3):  # the JVM stops reading each Python task after 2 rows
    print(sorted(r.id for r in df.mapInArrow(lambda bs: iter(bs), df.schema).limit(2).collect()))
print(spark_log_path())
"""


def test_python_workers_stopped_early_log_no_traceback(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", EARLY_STOP], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "evonb.spark.worker_daemon"
    assert out[1:4] == ["[0, 1]"] * 3
    assert "Traceback" not in done.stderr
    log = Path(out[4]).read_text()
    assert "Setting default log level" in log  # the JVM's console log is this file
    assert "BrokenPipeError" not in log and "Traceback" not in log, log


def test_temporary_settings_are_undone_after_the_block(spark):
    unset, kept = "spark.sql.parquet.outputTimestampType", "spark.sql.shuffle.partitions"
    assert spark.conf.get(unset, None) is None
    before = spark.conf.get(kept)
    with pytest.raises(ZeroDivisionError), temporary_settings(
            spark, {unset: "INT96", kept: "3"}):
        assert (spark.conf.get(unset), spark.conf.get(kept)) == ("INT96", "3")
        1 / 0  # noqa: B018
    assert spark.conf.get(unset, None) is None  # unset again, not set to Spark's default
    assert spark.conf.get(kept) == before
