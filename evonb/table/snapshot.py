"""Snapshots: which data files are live as of a commit, each bound to its schema version."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evonb.table.data_file import DataFile
from evonb.table.timeline import CommitRecord


@dataclass(frozen=True)
class Snapshot:
    """The table as of ``instant``: the live base files, the schema version in force, and the
    live log blocks of merge-on-read tables (each beside a live base file)."""

    instant: str | None
    schema_version: str
    files: tuple[DataFile, ...]
    logs: tuple[DataFile, ...] = ()

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    def by_version(self) -> dict[str, tuple[DataFile, ...]]:
        """Live files grouped by the schema version they were written with."""
        groups: dict[str, list[DataFile]] = {}
        for f in self.files:
            groups.setdefault(f.version, []).append(f)
        return {v: tuple(fs) for v, fs in sorted(groups.items())}


def replay(commits: Iterable[CommitRecord], initial_version: str) -> Snapshot:
    """Apply the added/removed file lists of ``commits`` (in order) to an empty table.

    Log blocks whose base file is no longer live (replaced or overwritten) are dropped."""
    live: dict[str, DataFile] = {}
    logs: dict[str, DataFile] = {}
    version = initial_version
    last: str | None = None
    for commit in commits:
        meta = commit.metadata  # typed and checked when read (CommitMetadata)
        for path in meta.removed:
            live.pop(path, None)
            logs.pop(path, None)
        for f in meta.added:
            (logs if f.kind == "log" else live)[f.path] = f
        version = meta.schema_version or version
        last = commit.instant
    kept = tuple(f for f in logs.values() if f.base in live)
    return Snapshot(instant=last, schema_version=version, files=tuple(live.values()), logs=kept)
