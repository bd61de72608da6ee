"""What a Spark task storing files in object storage tells the driver about its attempt.

Spark runs a failed task again (``spark.task.maxFailures``) and, with ``spark.speculation``,
runs a second copy of a slow task; either has an attempt number above 0. A task that stores
files straight in a bucket under unique names can die after storing some of them (a lost
executor, a killed Python worker) before its own clean-up runs, and its next attempt stores
new files. So a task that is not its task's first attempt stores a note first
(:func:`~evonb.table.fsutil.retry_note`), and after the commit point the driver removes every
file named with the attempt that the commit does not list
(:meth:`~evonb.table.transaction.Transaction.tasks_place_files`).

A stage that Spark runs again after a lost shuffle numbers its tasks' attempts from 0 again,
and PySpark does not tell a task its stage's attempt. Such a rerun follows a task failing to
read its input: data-file and merge tasks store nothing before they have read all of it, and a
log block's name is the same in every attempt of its task (the rerun replaces it).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from evonb.table.fileio import file_io
from evonb.table.fsutil import retry_note

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD, SparkContext
    from pyspark.sql import DataFrame

SETTLE_SECONDS = 30.0
"""How long a failed job's driver waits, at most, for the job's other running tasks to end."""


def is_retry() -> bool:
    """Whether the running Spark task is not its task's first attempt: a retry or a
    speculative copy (False outside a Spark task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx is not None and ctx.attemptNumber() > 0


def note_if_retried(root: str | os.PathLike[str], instant: str) -> None:
    """Before a task stores its files for the attempt ``instant`` of the table at ``root``:
    the note that an earlier attempt of this task may have left files behind."""
    if is_retry():
        file_io().write(retry_note(root, instant), b"")


def collect_settled(data: DataFrame | RDD[Any], tag: str) -> list[Any]:
    """``data.collect()`` (a DataFrame's or an RDD's) as a job tagged ``tag``. When the job
    fails, the tasks still running are killed, but a task's Python worker may yet store a
    file until it ends: the error is raised only once no task of the job runs (at most
    :data:`SETTLE_SECONDS`), so that the write's clean-up, which lists the files named with
    its instant, sees all of them."""
    sc = data.sparkSession.sparkContext if hasattr(data, "sparkSession") else data.context
    sc.addJobTag(tag)
    try:
        return data.collect()
    except BaseException:
        wait_for_tasks(sc, tag, SETTLE_SECONDS)
        raise
    finally:
        sc.removeJobTag(tag)


def wait_for_tasks(sc: SparkContext, tag: str, seconds: float) -> bool:
    """Wait until no task of the jobs tagged ``tag`` runs, at most ``seconds``; whether none
    does."""
    tracker = sc.statusTracker()
    jobs = sc._jsc.sc().statusTracker()  # type: ignore[attr-defined] # by tag: JVM side only
    deadline = time.monotonic() + seconds
    while True:
        stages = [s for j in jobs.getJobIdsForTag(tag)
                  if (job := tracker.getJobInfo(j)) is not None for s in job.stageIds]
        if not any((stage := tracker.getStageInfo(s)) is not None and stage.numActiveTasks > 0
                   for s in stages):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


__all__ = ["collect_settled", "is_retry", "note_if_retried", "wait_for_tasks"]
