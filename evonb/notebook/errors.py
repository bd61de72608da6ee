"""Turning user mistakes into one readable :class:`UsageError` (no Python or Java traceback)."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator

from IPython.core.error import UsageError

from evonb.errors import DDLSyntaxError, EvoError

_PLAN = re.compile(r";\s*\n\s*['\w]")


def format_evo_error(exc: EvoError) -> str:
    """The error's message, its hint and any notes (DDL errors keep their caret excerpt)."""
    text = str(exc).strip("\n")
    notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
    if notes:
        text += "\n" + "\n".join(notes)
    if isinstance(exc, DDLSyntaxError) and exc.excerpt not in text:
        text += "\n" + exc.excerpt
    return text


def format_spark_error(exc: BaseException) -> str:
    """A Spark error without the JVM stack and the logical plan Spark appends (a SQL excerpt
    with carets, when Spark gives one, is kept)."""
    text = str(exc).split("\nJVM stacktrace:", 1)[0].split("\n\tat ", 1)[0].strip("\n")
    if "== SQL" not in text:
        match = _PLAN.search(text)
        if match:
            text = text[: match.start()]
    return text.strip() or type(exc).__name__


@contextlib.contextmanager
def quiet_spark_logs() -> Iterator[None]:
    """Keep PySpark from logging a user's SQL error as a JSON record with the JVM stack."""
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


def _spark_error_types() -> tuple[type[BaseException], ...]:
    try:
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover
        return ()
    return (PySparkException,)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Re-raise evonb errors and Spark SQL errors as :class:`UsageError`."""
    try:
        with quiet_spark_logs():
            yield
    except UsageError:
        raise
    except EvoError as exc:
        raise UsageError(format_evo_error(exc)) from None
    except _spark_error_types() as exc:
        raise UsageError(format_spark_error(exc)) from None
