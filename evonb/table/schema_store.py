"""The schema history: one file per schema version, ``<root>/.evo/schemas/<version>.schema.json``.

A version id is the instant of the commit that created the schema, so the schema in force at an
instant is the greatest version id at or before it. Files are written exclusively and never
changed; saving the same schema again is a no-op.
"""

from __future__ import annotations

import bisect
import os
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evonb.errors import CommitNotFoundError, EvoError, MetadataCorruptError, SchemaEvolutionError
from evonb.schema.schema import Schema
from evonb.table.fileio import file_io
from evonb.table.fsutil import (
    FileCache,
    atomic_write_bytes,
    dump_json,
    evo_dir,
    is_temp_name,
    read_json,
    table_path,
)
from evonb.table.instants import instant_from_datetime, is_instant
from evonb.table.names import INSTANT, SCHEMA, SCHEMAS_DIR, parse_schema_file, schema_file

if TYPE_CHECKING:  # pragma: no cover
    from evonb.schema.schema import Schema


class SchemaStore:
    """The schema versions of the table at ``root``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = table_path(root)
        self.path = evo_dir(root) / SCHEMAS_DIR
        self.io = file_io()
        self._cache: FileCache[Schema] = FileCache()

    def __repr__(self) -> str:
        return f"SchemaStore({str(self.root)!r})"

    def file_of(self, version_id: str) -> Path:
        """The file of a version (it may not exist)."""
        if not isinstance(version_id, str) or not INSTANT.fullmatch(version_id):
            raise CommitNotFoundError(version_id, self._nearest(str(version_id)),
                                      what="schema version")
        return self.path / schema_file(version_id)

    def versions(self) -> list[str]:
        """Every stored version id, oldest first."""
        out = []
        for name in self.io.names(self.path):
            if is_temp_name(name):
                continue
            parsed = parse_schema_file(name)
            if parsed is not None and parsed.kind == SCHEMA:
                out.append(parsed.version)
        return sorted(out)

    def __contains__(self, version_id: object) -> bool:
        return isinstance(version_id, str) and version_id in self.versions()

    def _nearest(self, version_id: str, n: int = 3) -> list[str]:
        keys = self.versions()
        pos = bisect.bisect_left(keys, version_id)
        return keys[max(0, pos - n) : pos] + [k for k in keys[pos : pos + n] if k != version_id]

    def save(self, schema: Schema) -> Path:
        """Store ``schema`` under its ``version_id`` and return the file.

        An identical schema already stored under that id is a no-op; a different one raises
        :class:`EvoError` (a version id names exactly one schema).
        """
        path = self.file_of(schema.version_id)
        data = dump_json(schema.to_dict())
        try:
            atomic_write_bytes(path, data, exclusive=True)
        except FileExistsError:
            existing = self.load(schema.version_id)
            if existing.to_dict() != schema.to_dict():
                raise EvoError(
                    f"Schema version {schema.version_id} already exists with different content",
                    hint="a new schema needs a new version id (the instant of its commit)",
                ) from None
        else:  # the file holds this schema, and always will: not read back
            self._cache.remember(schema.version_id, schema)
        return path

    def load(self, version_id: str) -> Schema:
        """The schema of ``version_id``, read once per store: a version's file is created once
        and never changed (:meth:`save`), so a version read before is returned without looking
        at its file again (a request on object storage). A version removed by this store
        (:meth:`delete`) is forgotten; one that another process removes (a rollback of its
        commit, a clean of versions no commit reads) is only asked for through a commit that
        is gone with it. :func:`~evonb.table.check.check_table` reads through a store of its
        own, so it sees every file as it is.

        Missing: :class:`CommitNotFoundError` naming the nearest versions. Unreadable or invalid:
        :class:`MetadataCorruptError` naming the file.
        """
        path = self.file_of(version_id)
        kept = self._cache.kept(version_id)
        if kept is not None:
            return kept
        try:
            return self._cache.get(path, lambda p: self._read(p, version_id), key=version_id)
        except FileNotFoundError:
            raise CommitNotFoundError(
                version_id, self._nearest(version_id), what="schema version"
            ) from None

    def _read(self, path: Path, version_id: str) -> Schema:

        try:
            data = read_json(path)
        except FileNotFoundError:
            raise CommitNotFoundError(
                version_id, self._nearest(version_id), what="schema version"
            ) from None
        if not isinstance(data, dict):
            raise MetadataCorruptError(str(path), "a schema must be a JSON object")
        try:
            schema = Schema.from_dict(data)
        except SchemaEvolutionError as exc:
            raise MetadataCorruptError(str(path), exc.message) from None
        except (EvoError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MetadataCorruptError(str(path), f"not a valid schema: {exc!r}") from None
        if schema.version_id != version_id:
            raise MetadataCorruptError(
                str(path), f"the file holds schema version {schema.version_id}"
            )
        return schema

    def latest(self) -> Schema:
        """The newest schema version; :class:`CommitNotFoundError` if none is stored."""
        versions = self.versions()
        if not versions:
            raise CommitNotFoundError("latest", what="schema version")
        return self.load(versions[-1])

    def delete(self, version_id: str) -> None:
        """Remove a version (rollback of the commit that created it)."""
        path = self.file_of(version_id)
        self._cache.discard(version_id)
        if not self.io.exists(path):
            raise CommitNotFoundError(
                version_id, self._nearest(version_id), what="schema version"
            )
        self.io.delete(path)

    def version_at(self, instant: str | datetime | date) -> str:
        """The version in force at ``instant``: the greatest version id at or before it."""
        ts = instant if isinstance(instant, str) and is_instant(instant) else (
            instant_from_datetime(instant)
        )
        keys = self.versions()
        pos = bisect.bisect_right(keys, ts)
        if pos == 0:
            raise CommitNotFoundError(ts, keys[:3], what="schema version at or before")
        return keys[pos - 1]

    def at(self, instant: str | datetime | date) -> Schema:
        """The schema in force at ``instant``."""
        return self.load(self.version_at(instant))


__all__ = ["SchemaStore"]
