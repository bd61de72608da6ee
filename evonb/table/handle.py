"""What the table's helper modules read of a table: the :class:`TableHandle` protocol.

:class:`~evonb.table.table.BaseTable` delegates conflict checks (``conflicts``), alter previews
(``preview``), reverts (``revert``), rollbacks (``rollback``) and commits (``transaction``) to
modules that take the table as an argument. They name what they use of it with this protocol
instead of the class, so none of them refers back to ``table`` (not even in a type hint) and
the modules of the package form no cycle. ``BaseTable`` has every member listed here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import date, datetime
from pathlib import Path
from typing import Protocol

from evonb.schema.evolution import SchemaUpdate
from evonb.schema.schema import Schema
from evonb.table.config import TableConfig
from evonb.table.history import Commit, SchemaVersions
from evonb.table.layout import Layout
from evonb.table.schema_store import SchemaStore
from evonb.table.timeline import CommitRecord, Timeline

CommitRef = str | Commit | CommitRecord | datetime | date
"""A commit as users name it: an instant, a :class:`Commit`, a timeline record, or a date-time
(the last commit completed at or before it)."""


class TableHandle(Protocol):
    """A table as its conflict checks, previews, reverts, rollbacks and commits use it."""

    root: Path
    """The table's folder."""
    timeline: Timeline
    schema_store: SchemaStore

    @property
    def name(self) -> str: ...

    @property
    def table_type(self) -> str:
        """``cow`` or ``mor``."""
        ...

    @property
    def raw_config(self) -> TableConfig:
        """The configuration as stored (key and partition columns by field ID)."""
        ...

    @property
    def schema(self) -> Schema:
        """The latest schema."""
        ...

    @property
    def primary_key(self) -> tuple[str, ...]: ...

    @property
    def partition_by(self) -> tuple[str, ...]: ...

    @property
    def precombine(self) -> str | None: ...

    def version(self, version_id: str) -> tuple[Schema, Layout]:
        """A schema version and its physical layout."""
        ...

    def schemas(self) -> SchemaVersions:
        """Every schema version the timeline refers to, oldest first."""
        ...

    def version_name(self, version_id: str) -> str:
        """The name (``v0``, ``v1``, ...) of a schema version."""
        ...

    def resolve_schema(self, ref: Schema | str | CommitRef) -> Schema:
        """The schema a reference names (a version, a commit, ``latest``)."""
        ...

    def commit(self, ref: CommitRef) -> CommitRecord:
        """The completed commit ``ref`` names."""
        ...

    def check_protected(self, update: SchemaUpdate) -> None:
        """Refuse a schema change to the key, partition or precombine columns."""
        ...

    def save_version(self, schema: Schema, layout: Layout) -> None:
        """Store a schema version and its layout."""
        ...

    def drop_version(self, version: str) -> None:
        """Remove a schema version no commit uses."""
        ...

    def invalidate(self) -> None:
        """Forget the snapshots read so far."""
        ...

    def locked(self) -> AbstractContextManager[None]:
        """Hold the table's commit lock."""
        ...

    def verify_lock(self) -> None:
        """Raise if the lock held by :meth:`locked` was lost meanwhile."""
        ...

    def recover_failed(self) -> list[str]:
        """Roll back the failed attempts of processes that are gone; their instants."""
        ...
