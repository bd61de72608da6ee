"""Turning user mistakes into one readable :class:`UsageError` (no Python or Java traceback)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from urllib.parse import unquote, urlparse

from IPython.core.error import UsageError

from evonb.errors import DDLSyntaxError, EvoError
from evonb.spark.session import quiet_spark_logs
from evonb.table.file_checks import file_error

_PLAN = re.compile(r";\s*\n\s*['\w]")
_EVONB_CAUSE = re.compile(r"[\w.$]+(?:Exception|Error): (evonb: [^\n]+)")
"""An exception line of the JVM whose message is one of evonb's own checks: evonb's Spark
readers (:mod:`evonb.spark.jvm`) start theirs with ``evonb:``."""

_FILE_ERROR = re.compile(r"evonb\.errors\.(?:CorruptFileError|DataFileMissingError|DataFileError)"
                         r": ([^\n]+(?:\nHint: [^\n]+)?)")
"""A data file or log block that failed to read in a Python task (:func:`file_error`)."""
_SPARK_FILE = re.compile(r"\[(?:FAILED_READ_FILE[.\w]*|PATH_NOT_FOUND)\] (?:Encountered error "
                         r"while reading file|Path does not exist:) (\S.*?)\.\s+SQLSTATE")
_CAUSED_BY = re.compile(r"Caused by: [\w.$]+: ([^\n]+)")


def file_cause(exc: BaseException) -> str | None:
    """What a read that failed on a data file or log block says, as evonb's error for that
    file (naming it and ``evonb check``), or None when ``exc`` is not about a file."""
    text = str(exc)
    match = _FILE_ERROR.search(text)
    if match:
        return match.group(1).strip()
    match = _SPARK_FILE.search(text)
    if match is None:
        return None
    url = match.group(1)
    path = unquote(urlparse(url).path) if url.startswith("file:") else url
    cause = _CAUSED_BY.search(text)
    return str(file_error(path, cause.group(1).strip() if cause else "Spark cannot read it"))


def format_evo_error(exc: EvoError) -> str:
    """The error's message, its hint and any notes (DDL errors keep their caret excerpt)."""
    text = str(exc).strip("\n")
    notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
    if notes:
        text += "\n" + "\n".join(notes)
    if isinstance(exc, DDLSyntaxError) and exc.excerpt not in text:
        text += "\n" + exc.excerpt
    return text


def evonb_cause(exc: BaseException) -> str | None:
    """The message of an evonb check that failed inside Spark's JVM and reached Python as
    ``exc`` (a failed task: Spark's ``FAILED_READ_FILE``, or py4j's ``Py4JJavaError`` around
    the aborted job), or None when no such check is in it."""
    match = _EVONB_CAUSE.search(str(exc))
    return match.group(1).strip() if match else None


def format_spark_error(exc: BaseException) -> str:
    """A Spark error without the JVM stack and the logical plan Spark appends (a SQL excerpt
    with carets, when Spark gives one, is kept). A read that failed on a damaged or missing
    data file, with no evonb check in its cause, is evonb's message for that file
    (:func:`file_cause`). A failed evonb check
    inside the JVM (:func:`evonb_cause`) is what the message says: alone for a job py4j
    reports as aborted, after Spark's own first lines otherwise."""
    cause = evonb_cause(exc)
    broken = file_cause(exc) if cause is None else None
    if broken is not None:
        return broken
    if cause is not None and _is_java_error(exc):
        return cause
    text = str(exc).split("\nJVM stacktrace:", 1)[0].split("\n\tat ", 1)[0].strip("\n")
    if "== SQL" not in text:
        match = _PLAN.search(text)
        if match:
            text = text[: match.start()]
    text = text.strip()
    if cause is not None and cause not in text:
        text = f"{text}\n{cause}".strip()
    return text or type(exc).__name__


def _is_java_error(exc: BaseException) -> bool:
    """Whether ``exc`` is py4j's wrapper of a JVM exception (a job that failed in a task)."""
    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, Py4JJavaError)


def _spark_error_types() -> tuple[type[BaseException], ...]:
    try:
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover
        return ()
    return (PySparkException,)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Re-raise evonb errors, Spark SQL errors and evonb checks that failed inside Spark's JVM
    (:func:`evonb_cause`) as :class:`UsageError`; other errors are bugs and keep their
    traceback."""
    try:
        with quiet_spark_logs():
            yield
    except UsageError:
        raise
    except EvoError as exc:
        raise UsageError(format_evo_error(exc)) from None
    except _spark_error_types() as exc:
        raise UsageError(format_spark_error(exc)) from None
    except Exception as exc:
        if not (_is_java_error(exc) and (evonb_cause(exc) or file_cause(exc))):
            raise
        raise UsageError(format_spark_error(exc)) from None
