"""The managed SparkSession: created lazily with the settings evonb needs, shared by all.

``session()`` returns the active session if one exists (settings evonb needs are applied to
it), or starts a local one. ``configure()`` sets the master and extra configuration for the
next start; ``stop()`` stops it. The notebook layer's ``Evo.spark_master`` and
``Evo.spark_conf`` traits call ``configure``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import site
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.spark.jvm import with_jar

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

_lock = threading.RLock()
_master: str = os.environ.get("EVONB_SPARK_MASTER", "local[*]")
_extra_conf: dict[str, str] = {}

# SQL settings evonb relies on; applied to any session evonb uses (they are runtime settings).
REQUIRED_SQL_CONF = {
    # Files are read by their stable physical column names, so pushdown is always correct.
    "spark.sql.parquet.fieldId.read.enabled": "false",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    # The timeline knows every file: never start a listing job for many paths.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    "spark.sql.parquet.mergeSchema": "false",
}

# Start-up defaults for a local session (a user's configure() wins).
LOCAL_DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "4g",
    "spark.sql.adaptive.enabled": "true",
    # Spark's filters reach the reader of tables in object storage (evonb.arrow.spark_source)
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.ui.enabled": "true",
    "spark.ui.port": "4050",
    "spark.port.maxRetries": "64",
    # The throughput collector: a local session runs batch queries on a few cores, where G1's
    # concurrent work and write barriers cost more than its shorter pauses give (a full-scan
    # read: 5% less CPU; a merge-on-read read, which decodes Avro into objects: 12% less).
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC -Dlog4j.configurationFile="
    + str(Path(__file__).with_name("log4j2.properties")),
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # Python workers (log blocks, compaction in tasks) talk to the JVM over a Unix domain
    # socket: over loopback TCP each small exchange can wait out a delayed ACK (about 40 ms a
    # Python task here).
    "spark.python.unix.domain.socket.enabled": "true",
    # PySpark's worker daemon, except that a worker whose output the JVM stopped reading early
    # (a limit, a cancelled task) ends quietly instead of logging a BrokenPipeError traceback.
    "spark.python.daemon.module": "evonb.spark.worker_daemon",
}


def configure(master: str | None = None, conf: dict[str, Any] | None = None) -> None:
    """Set the master URL and extra settings used when the session is next started."""
    global _master
    with _lock:
        if master:
            _master = master
        if conf:
            _extra_conf.update({str(k): str(v) for k, v in conf.items()})


def session() -> SparkSession:
    """The shared SparkSession, started on first use (local mode unless configured)."""
    from pyspark.sql import SparkSession

    with _lock:
        active = SparkSession.getActiveSession()
        if active is None:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            if _master.startswith("local"):
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = SparkSession.builder.appName("evonb").master(_master)

            settings = with_workers_path(with_jar({**LOCAL_DEFAULTS, **REQUIRED_SQL_CONF,
                                                   **_extra_conf}))
            for key, value in settings.items():
                builder = builder.config(key, value)
            logging.getLogger("py4j").setLevel(logging.WARNING)
            with jvm_output_to_log():
                active = builder.getOrCreate()
            active.sparkContext.setLogLevel("ERROR")
            atexit.unregister(_stop_at_exit)
            atexit.register(_stop_at_exit)
        for key, value in REQUIRED_SQL_CONF.items():
            if active.conf.get(key, None) != value:
                active.conf.set(key, value)
        return active


WORKERS_PATH = "spark.executorEnv.PYTHONPATH"


def with_workers_path(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with the folder evonb is imported from added to the Python workers'
    ``PYTHONPATH`` (:data:`WORKERS_PATH`, after any the user gave), unless it is a site
    folder every interpreter searches.

    The workers start as ``python -m evonb.spark.worker_daemon``: evonb imported only through
    the driver's ``sys.path`` (a script next to a source checkout, ``sys.path.insert``, an
    editable install that moved) would leave every Python task of the session failing with
    "No module named evonb"."""
    folder = str(Path(__file__).resolve().parents[2])
    searched = {str(Path(p).resolve()) for p in (*site.getsitepackages(),
                                                 site.getusersitepackages())}
    if folder in searched:
        return settings
    given = [p for p in settings.get(WORKERS_PATH, "").split(os.pathsep) if p]
    if folder not in given:
        settings = {**settings, WORKERS_PATH: os.pathsep.join([*given, folder])}
    return settings


def spark_log_path() -> Path:
    """Where the console output of the Spark JVM this process starts goes."""
    return Path(tempfile.gettempdir()) / f"evonb-spark-{os.getpid()}.log"


@contextlib.contextmanager
def jvm_output_to_log() -> Iterator[Path]:
    """Point this process's stdout and stderr at :func:`spark_log_path` while the JVM starts,
    so the JVM (which inherits them) writes its console log there, not into a notebook's
    output or a script's terminal."""
    path = spark_log_path()
    sys.stdout.flush()
    sys.stderr.flush()
    with open(path, "ab") as log:
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield path
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


@contextlib.contextmanager
def quiet_spark_logs() -> Iterator[None]:
    """Keep PySpark from logging a user's SQL error as a JSON record with the JVM stack (its
    query-context loggers write one to stderr when the error is raised, whoever catches it):
    evonb turns such errors into one error of its own, which says it all."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pragma: no cover
        yield
        return
    loggers = [PySparkLogger.getLogger(name)
               for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _stop_at_exit() -> None:
    """Stop the session before the interpreter exits, so its Python worker daemon ends
    quietly (left running, its workers print ``BrokenPipeError`` tracebacks at exit)."""
    with contextlib.suppress(Exception):
        stop()


def is_running() -> bool:
    """Whether a SparkSession is active (without starting one, and without importing
    pyspark's SQL modules when nothing has imported them: then no session can exist)."""
    if "pyspark.sql" not in sys.modules:
        return False
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover
        return False
    return SparkSession.getActiveSession() is not None


@contextlib.contextmanager
def temporary_settings(spark: SparkSession, values: Mapping[str, str]) -> Iterator[None]:
    """Runtime settings ``values`` on ``spark`` within the block; after it, each is as it was
    (unset again if it was not set, so Spark's or evonb's default for it applies)."""
    before = {key: spark.conf.get(key, None) for key in values}
    try:
        for key, value in values.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def setting(key: str) -> str | None:
    """Spark setting ``key`` as the running session has it or, with none running, as the next
    start would set it (:func:`configure`'s settings, then evonb's defaults); None if neither
    sets it. Starts no Spark."""
    if is_running():
        return session().conf.get(key, None)
    with _lock:
        return _extra_conf.get(key, LOCAL_DEFAULTS.get(key))


def stop() -> None:
    """Stop the shared session (the next ``session()`` starts a new one)."""
    from pyspark.sql import SparkSession

    with _lock:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()


def ui_url() -> str | None:
    """The Spark UI address of the running session, if any."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    return active.sparkContext.uiWebUrl if active is not None else None
