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

from evonb.table.fileio import file_io
from evonb.table.fsutil import retry_note


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


__all__ = ["is_retry", "note_if_retried"]
