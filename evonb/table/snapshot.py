"""Snapshots: which data files are live as of a commit, each bound to its schema version."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evonb.table.key_stats import KeyStats, stats_from_json, stats_to_json
from evonb.table.timeline import CommitRecord


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file listed by a commit: its path relative to the table root, the schema version
    it was written with, the instant that wrote it, its partition folder, rows and bytes.

    ``kind`` is ``"base"`` (a Parquet data file) or ``"log"`` (a merge-on-read log block);
    a log block names the base file of its file group in ``base``.

    ``key_stats`` is the min and max of each record-key column in the file, by field ID, in
    JSON form (:mod:`evonb.table.key_stats`); None when unknown (the file is always scanned
    for keys)."""

    path: str
    version: str
    instant: str
    partition: str = ""
    rows: int = 0
    bytes: int = 0
    kind: str = "base"
    base: str | None = None
    key_stats: KeyStats | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "version": self.version,
            "instant": self.instant,
            "partition": self.partition,
            "rows": self.rows,
            "bytes": self.bytes,
            "kind": self.kind,
        }
        if self.base is not None:
            out["base"] = self.base
        if self.key_stats:
            out["key_stats"] = stats_to_json(self.key_stats)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DataFile:
        return cls(
            path=str(data["path"]),
            version=str(data["version"]),
            instant=str(data["instant"]),
            partition=str(data.get("partition", "")),
            rows=int(data.get("rows", 0)),
            bytes=int(data.get("bytes", 0)),
            kind=str(data.get("kind", "base")),
            base=str(data["base"]) if data.get("base") is not None else None,
            key_stats=stats_from_json(data.get("key_stats")),
        )


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
        meta = commit.metadata
        for path in meta.get("removed", ()):
            live.pop(path, None)
            logs.pop(path, None)
        for entry in meta.get("added", ()):
            f = DataFile.from_dict(entry)
            (logs if f.kind == "log" else live)[f.path] = f
        version = str(meta.get("schema_version", version))
        last = commit.instant
    kept = tuple(f for f in logs.values() if f.base in live)
    return Snapshot(instant=last, schema_version=version, files=tuple(live.values()), logs=kept)
