"""A data file or log block as a commit lists it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evonb.table.key_stats import KeyStats, stats_from_json, stats_to_json


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


__all__ = ["DataFile"]
