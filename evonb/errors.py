"""One error hierarchy for everything evonb raises at a user.

Every error names the thing it is about and, where there is one, the fix. Errors carry their
details as attributes (``path``, ``field_id``, ``old``, ``new``, ...) so the notebook layer can
render them without parsing the message.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class EvoError(Exception):
    """Base class of every error evonb raises for a user mistake or a table problem."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message}\nHint: {hint}")


class DDLSyntaxError(EvoError):
    """DDL text that does not parse. Carries the line, column, token and an excerpt with a caret."""

    def __init__(
        self,
        message: str,
        *,
        text: str,
        line: int,
        column: int,
        token: str,
        hint: str | None = None,
    ) -> None:
        self.text = text
        self.line = line
        self.column = column
        self.token = token
        lines = text.splitlines()
        source_line = lines[line - 1] if 0 < line <= len(lines) else ""
        self.excerpt = _excerpt(source_line, column)
        near = _clip(repr(token), 40)
        full = (f"{_clip(message, 300)} at line {line}, column {column} (near {near})\n"
                f"{self.excerpt}")
        super().__init__(full, hint=_clip(hint, 300) if hint else hint)


_LONG_RUN = re.compile(r"\S{61,}")


def _clip(text: str, limit: int) -> str:
    """``text`` with each run of over 60 non-blank characters and then the whole cut down
    (middle parts replaced by ``...``), so a huge statement gives a message of bounded size."""
    text = _LONG_RUN.sub(lambda m: f"{m[0][:30]}...{m[0][-20:]}", text)
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]} ... {text[-(limit - head - 5):]}"


def _excerpt(source_line: str, column: int, width: int = 60) -> str:
    """The part of ``source_line`` around ``column`` (at most ``width`` characters either
    side, cuts marked ``...``) and a caret under the column."""
    start = max(0, column - 1 - width)
    end = column - 1 + width
    shown = source_line[start:end]
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(source_line) else ""
    return f"{prefix}{shown}{suffix}\n{' ' * (len(prefix) + column - 1 - start)}^"


class SchemaEvolutionError(EvoError):
    """A schema change that is not allowed (bad type change, name clash, NOT NULL, ...)."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        field_id: int | None = None,
        old: object = None,
        new: object = None,
        hint: str | None = None,
    ) -> None:
        self.path = path
        self.field_id = field_id
        self.old = old
        self.new = new
        super().__init__(message, hint=hint)


class InvalidDefaultError(SchemaEvolutionError):
    """A default value that does not convert to its column's type."""


class WriteSchemaError(SchemaEvolutionError):
    """Incoming data whose schema cannot be reconciled with the table's."""


class ColumnNotFoundError(EvoError):
    """A path that names no column. Suggests the closest existing name (unless ``hint`` gives
    a better suggestion)."""

    def __init__(self, path: str, candidates: Iterable[str] = (), *, context: str = "",
                 hint: str | None = None) -> None:
        self.path = path
        names = list(candidates)
        close = difflib.get_close_matches(path, names, n=1, cutoff=0.5)
        if not close:
            lowered = {n.lower(): n for n in names}
            close = [
                lowered[m]
                for m in difflib.get_close_matches(path.lower(), list(lowered), n=1, cutoff=0.5)
            ]
        self.suggestion = close[0] if close else None
        where = f" {context}" if context else ""
        if hint is None and self.suggestion:
            hint = f"did you mean {self.suggestion!r}?"
        if hint is None and names:
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            hint = f"existing columns: {shown}"
        super().__init__(f"Column not found{where}: {_clip(repr(path), 200)}", hint=hint)


class CommitNotFoundError(EvoError):
    """An instant, commit or schema version that the table does not have."""

    def __init__(self, ref: object, nearest: Iterable[str] = (), *, what: str = "commit",
                 hint: str | None = None) -> None:
        self.ref = ref
        self.nearest = list(nearest)
        if hint is None and self.nearest:
            hint = f"nearest: {', '.join(self.nearest)}"
        super().__init__(f"No such {what}: {ref!r}", hint=hint)


class ConflictError(EvoError):
    """A commit that lost an optimistic-concurrency race; names the commit it lost to."""

    def __init__(self, message: str, *, winner: str | None = None, hint: str | None = None):
        self.winner = winner
        super().__init__(message, hint=hint or "re-read the table and retry the operation")


class TableNotFoundError(EvoError):
    """A path that holds no evonb table."""


class TableExistsError(EvoError):
    """Creating a table where one already exists."""


class MetadataCorruptError(EvoError):
    """A metadata file that is truncated, unparsable or inconsistent; names the file."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__(
            f"Corrupt table metadata in {path}: {reason}",
            hint="run `evonb check --repair <table>` or restore the file",
        )


class DataFileError(EvoError):
    """A data file or log block of a table that cannot be read; names the file and suggests
    ``python -m evonb check``. ``path`` is the file, ``table`` the table's folder (or None)."""

    def __init__(self, path: str, reason: str, *, table: str | None = None) -> None:
        self.path = path
        self.reason = reason
        self.table = table
        super().__init__(
            f"Cannot read {path}: {reason}",
            hint=f"run `python -m evonb check {table or '<table>'}` to list every damaged file "
                 "(restore them from a backup, or roll back the commits that wrote them)",
        )


class CorruptFileError(DataFileError):
    """A data file or log block that is truncated or not a valid Parquet/Avro file."""


class DataFileMissingError(DataFileError):
    """A data file or log block that a commit lists and that is gone."""


class DataValidationError(EvoError):
    """Data that does not satisfy a requested change (e.g. nulls under SET NOT NULL)."""

    def __init__(self, message: str, *, count: int = 0, examples: Iterable[object] = (),
                 hint: str | None = None) -> None:
        self.count = count
        self.examples = list(examples)
        super().__init__(message, hint=hint)


class UnsupportedTableError(EvoError):
    """A table layout evonb cannot adopt (e.g. a merge-on-read Hudi table)."""


class InvalidArgumentError(EvoError):
    """A value of the wrong kind or out of range for an argument or option; names the argument
    (``name``) and what it accepts."""

    def __init__(self, message: str, *, name: str, value: object = None,
                 hint: str | None = None) -> None:
        self.name = name
        self.value = value
        super().__init__(message, hint=hint)


class TableLocationError(EvoError):
    """A table location that cannot be created or written; names the path."""

    def __init__(self, message: str, *, path: str, hint: str | None = None) -> None:
        self.path = path
        super().__init__(message, hint=hint)


class UnsupportedStatementError(EvoError):
    """A SQL statement evonb does not run (e.g. an INSERT on an evonb table through Spark SQL);
    names the statement and the table and says what to use instead."""

    def __init__(self, message: str, *, statement: str, table: str | None = None,
                 hint: str | None = None) -> None:
        self.statement = statement
        self.table = table
        super().__init__(message, hint=hint)


class SQLStatementError(EvoError):
    """A SQL statement that changes an evonb table (INSERT, UPDATE, DELETE, MERGE, DROP) and
    cannot run: a syntax error, an unknown column, a value of the wrong type, a MERGE that
    matches a row twice. Carries the ``statement``; nothing was written."""

    def __init__(self, message: str, *, statement: str, hint: str | None = None) -> None:
        self.statement = statement
        super().__init__(message, hint=hint)


class UnknownPluginError(EvoError):
    """A lock provider, conflict policy or file IO named by a table property (or environment
    variable) that is neither built into evonb nor registered by an installed package. Carries
    the ``property``, its ``value`` and the ``known`` names; nothing named by the value is
    imported."""

    def __init__(self, prop: str, value: str, known: Iterable[str], *, what: str,
                 group: str, source: str = "Table property") -> None:
        self.property = prop
        self.value = value
        self.known = sorted(known)
        names = ", ".join(self.known)
        hint = (f"use one of {names}, or install the package that registers {value!r} "
                f"(entry point group {group!r})")
        if ":" in value or "/" in value:
            hint = (f"modules are never loaded from a table property: use one of {names}, or "
                    f"a {what} an installed package registers under the entry point group "
                    f"{group!r}")
        super().__init__(f"{source} {prop}={value!r} names no known {what} "
                         f"(known: {names})", hint=hint)


class TableNameError(EvoError):
    """A table name that is not a folder inside the warehouse (a path, ``..``, an empty part,
    or a link out of the warehouse); carries the ``name``."""

    def __init__(self, name: str, reason: str, *, hint: str | None = None) -> None:
        self.name = name
        super().__init__(
            f"Table name {name!r} {reason}",
            hint=hint or "a table name is one word or dotted words (each a folder in the "
                         "warehouse); to put a table anywhere else, give its path with "
                         "LOCATION '...' in CREATE TABLE",
        )


__all__ = [
    "ColumnNotFoundError",
    "CommitNotFoundError",
    "ConflictError",
    "CorruptFileError",
    "DDLSyntaxError",
    "DataFileError",
    "DataFileMissingError",
    "DataValidationError",
    "EvoError",
    "InvalidArgumentError",
    "InvalidDefaultError",
    "MetadataCorruptError",
    "SQLStatementError",
    "SchemaEvolutionError",
    "TableExistsError",
    "TableLocationError",
    "TableNameError",
    "TableNotFoundError",
    "UnknownPluginError",
    "UnsupportedStatementError",
    "UnsupportedTableError",
    "WriteSchemaError",
]
