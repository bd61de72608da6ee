"""Turning user mistakes into one readable :class:`UsageError` (no Python or Java traceback)."""

from __future__ import annotations

import contextlib
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
    """A Spark SQL error without the JVM stack and the logical plan Spark appends."""
    getter = getattr(exc, "getMessage", None)
    try:
        text = getter() if callable(getter) else str(exc)
    except Exception:  # pragma: no cover - a broken py4j connection
        text = str(exc)
    text = (text or type(exc).__name__).strip("\n")
    if "== SQL ==" not in text:
        match = _PLAN.search(text)
        if match:
            text = text[: match.start()]
        text = text.split("\n\tat ", 1)[0].split("\nJVM stacktrace:", 1)[0]
    return text.strip()


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
        yield
    except UsageError:
        raise
    except EvoError as exc:
        raise UsageError(format_evo_error(exc)) from None
    except _spark_error_types() as exc:
        raise UsageError(format_spark_error(exc)) from None
