"""A failed job's error is raised once its other tasks have ended
(:func:`evonb.spark.task_attempts.collect_settled`): a task still running when the job fails
could otherwise store a file after the write's clean-up listed the files of its instant (the
bucket test of a failing write left one, 1 run in 8 under load)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from evonb.spark.task_attempts import collect_settled, wait_for_tasks

pytestmark = pytest.mark.spark


def _failing_job(spark: Any) -> Any:
    """Two tasks: the first fails at once, the second runs about five seconds (unless it is
    killed)."""

    def task(batches: Any) -> Any:
        import pyarrow as pa
        from pyspark import TaskContext

        rows = sum(b.num_rows for b in batches)
        if TaskContext.get().partitionId() == 0:
            raise ValueError("bad row")
        end = time.monotonic() + 5
        while time.monotonic() < end:  # busy, as a task writing a file is
            sum(range(1000))
        yield pa.RecordBatch.from_pydict({"n": [rows]})

    return spark.range(0, 2, 1, 2).mapInArrow(task, "n long")


def test_a_failed_job_raises_once_its_other_tasks_have_ended(spark: Any) -> None:
    sc = spark.sparkContext
    with pytest.raises(Exception, match="bad row"):
        collect_settled(_failing_job(spark), "evonb-test-settled")
    sc.addJobTag("evonb-test-settled")
    try:
        assert wait_for_tasks(sc, "evonb-test-settled", 0)  # nothing runs any more
    finally:
        sc.removeJobTag("evonb-test-settled")
    assert "evonb-test-settled" not in sc.getJobTags()


def test_a_plain_collect_raises_while_a_task_still_runs(spark: Any) -> None:
    """What the settled collect guards against (the test above can fail)."""
    sc = spark.sparkContext
    sc.addJobTag("evonb-test-plain")
    try:
        with pytest.raises(Exception, match="bad row"):
            _failing_job(spark).collect()
        assert not wait_for_tasks(sc, "evonb-test-plain", 0)  # the second task runs on
        assert wait_for_tasks(sc, "evonb-test-plain", 30)  # until it ends
    finally:
        sc.removeJobTag("evonb-test-plain")


def test_an_rdd_job_raises_once_its_other_tasks_have_ended(spark: Any) -> None:
    """Compaction and clustering tasks (an RDD's job) store merged files too."""
    def run(i: int) -> int:
        if i == 0:
            raise ValueError("bad bin")
        end = time.monotonic() + 5
        while time.monotonic() < end:
            sum(range(1000))
        return i

    sc = spark.sparkContext
    with pytest.raises(Exception, match="bad bin"):
        collect_settled(sc.parallelize([0, 1], 2).map(run), "evonb-test-rdd")
    sc.addJobTag("evonb-test-rdd")
    try:
        assert wait_for_tasks(sc, "evonb-test-rdd", 0)
    finally:
        sc.removeJobTag("evonb-test-rdd")
