"""PySpark's Python worker daemon, without a traceback when the JVM stops reading a worker early.

When a query stops consuming a Python task's output before its end (``limit`` over a read
that decodes log blocks in Python workers, a cancelled or failed task), the JVM closes the
worker's connection; the worker's next write fails with ``BrokenPipeError`` (or the connection
is reset), and ``pyspark.daemon`` prints the traceback to the JVM's console log, once per
worker. Nothing is wrong: the JVM has what it needs. This module runs ``pyspark.daemon``
unchanged except that such a worker ends quietly (and is not reused, as before).

Local sessions use it through ``spark.python.daemon.module`` (see
:data:`evonb.spark.session.LOCAL_DEFAULTS`). It imports nothing but PySpark's daemon: the daemon
forks workers, so it must start no threads (pyarrow and pandas do) before forking.
"""

from __future__ import annotations

import socket

from pyspark import daemon

_pyspark_worker = daemon.worker


def worker(sock: socket.socket, authenticated: bool) -> int:
    """``pyspark.daemon.worker``; a connection the JVM closed first ends the worker (exit
    code 1: not reused) instead of raising."""
    try:
        return _pyspark_worker(sock, authenticated)
    except (BrokenPipeError, ConnectionResetError):
        return 1


daemon.worker = worker  # the daemon's manager calls worker() by its module-level name

if __name__ == "__main__":
    daemon.manager()
