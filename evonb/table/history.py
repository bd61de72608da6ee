"""Commits as the user sees them: ``Table.history()`` and ``Table.column_history()``."""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from evonb.table.instants import parse_instant
from evonb.table.timeline import CommitRecord

if TYPE_CHECKING:  # pragma: no cover
    from evonb.schema.schema import Schema


@dataclass(frozen=True)
class Commit:
    """One completed commit: instant, action, operation, schema version, files and rows."""

    instant: str
    action: str
    operation: str
    schema_version: str
    files_added: int = 0
    files_removed: int = 0
    rows_written: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)
    schema_name: str = field(default="", compare=False)
    """The readable name of the schema version (``v3``: its ordinal) when known."""

    @classmethod
    def from_record(cls, record: CommitRecord, *, schema_name: str = "") -> Commit:
        meta = record.metadata
        return cls(
            instant=record.instant,
            action=record.action,
            operation=str(meta.get("operation", record.action)),
            schema_version=str(meta.get("schema_version", "")),
            files_added=len(meta.added),
            files_removed=len(meta.removed),
            rows_written=int(meta.get("rows_written", 0)),
            metadata=meta,
            schema_name=schema_name,
        )

    @property
    def schema_label(self) -> str:
        """The schema version as listed: ``v3 (20261122101500000)``, or its id alone when its
        name is not known."""
        if self.schema_name:
            return f"{self.schema_name} ({self.schema_version})"
        return self.schema_version

    @property
    def time(self) -> str:
        """The commit time (its instant: when it started), ISO formatted (UTC)."""
        return parse_instant(self.instant).isoformat(sep=" ", timespec="milliseconds")

    @property
    def completed(self) -> str:
        """When the commit completed, ISO formatted (UTC): a date-time that names this commit
        in time travel (the last commit completed at or before it)."""
        return parse_instant(self.completion_time).isoformat(sep=" ", timespec="milliseconds")

    @property
    def completion_time(self) -> str:
        """When the commit completed (its position in completion order, 17 digits like an
        instant); the instant for commits written before completion times were recorded."""
        value = self.metadata.get("completion_time")
        return value if isinstance(value, str) else self.instant

    @property
    def effect(self) -> str:
        """What the commit did, in a few words: files added and removed and rows written; for
        a clean, what it deleted and the first commit it kept readable; for a rollback, the
        commits it undid and what it deleted."""
        meta = self.metadata
        if self.action not in DELETING_ACTIONS:
            return f"+{self.files_added}/-{self.files_removed} files, {self.rows_written} rows"
        if self.action == "clean":
            return (f"deleted {_count(meta.get('cleaned_files'), 'file')} and "
                    f"{_count(meta.get('cleaned_versions'), 'schema version')}; commits from "
                    f"{meta.get('earliest_retained', '?')} on stay readable")
        undone = [str(i) for i in meta.get("rolled_back", ())]
        return (f"rolled back {', '.join(undone) or 'nothing'}; deleted "
                f"{_count(meta.get('files_deleted'), 'file')} and "
                f"{_count(meta.get('versions_deleted'), 'schema version')}")

    def __str__(self) -> str:
        return f"{self.instant} {self.operation:<10} schema {self.schema_version} {self.effect}"


DELETING_ACTIONS = ("clean", "rollback")
"""Actions whose commits add and remove no live file but delete files: their
:attr:`Commit.effect` says what they deleted."""


def _count(items: Any, noun: str) -> str:
    """``items`` (a list recorded in a commit, or a count) as "N nouns"."""
    n = items if isinstance(items, int) else len(items) if isinstance(items, list | tuple) else 0
    return f"{n} {noun}{'' if n == 1 else 's'}"


_COLUMNS = ("instant", "time", "action", "operation", "schema_version", "schema_name",
            "files_added", "files_removed", "rows_written")


@dataclass(frozen=True)
class History(Sequence[Commit]):
    """The commits of a table, in the order they completed. Renders as a table in notebooks
    and terminals."""

    commits: tuple[Commit, ...]
    table_name: str = ""

    @overload
    def __getitem__(self, index: int) -> Commit: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Commit]: ...
    def __getitem__(self, index: int | slice) -> Commit | Sequence[Commit]:
        return self.commits[index]

    def __len__(self) -> int:
        return len(self.commits)

    def __iter__(self) -> Iterator[Commit]:
        return iter(self.commits)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per commit (the columns of the rendered table)."""
        return [{c: getattr(commit, c) for c in _COLUMNS} for commit in self.commits]

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=list(_COLUMNS))

    def __repr__(self) -> str:
        head = f"History of {self.table_name or 'table'}: {len(self.commits)} commits"
        return "\n".join([head, *(f"  {c.instant} {c.operation:<10} schema {c.schema_label} "
                                   f"{c.effect}" for c in self.commits)])

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in _COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in _COLUMNS) + "</tr>"
            for r in self.rows()
        )
        title = html.escape(self.table_name or "table")
        return (f"<div class='evonb-history'><b>History of {title}</b> "
                f"({len(self.commits)} commits)<table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table></div>")


@dataclass(frozen=True)
class ColumnVersion:
    """A column ID as it was in one schema version."""

    version_id: str
    path: str
    type: str
    nullable: bool
    default: Any
    write_default: Any
    comment: str | None
    change: str

    def __str__(self) -> str:
        return (f"{self.version_id} {self.change:<9} {self.path}: "
                f"{'optional' if self.nullable else 'required'} {self.type}")


@dataclass(frozen=True)
class ColumnHistory(Sequence[ColumnVersion]):
    """The life of one column ID through the schema versions that had it."""

    field_id: int
    versions: tuple[ColumnVersion, ...]

    @overload
    def __getitem__(self, index: int) -> ColumnVersion: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ColumnVersion]: ...
    def __getitem__(self, index: int | slice) -> ColumnVersion | Sequence[ColumnVersion]:
        return self.versions[index]

    def __len__(self) -> int:
        return len(self.versions)

    def __iter__(self) -> Iterator[ColumnVersion]:
        return iter(self.versions)

    def __repr__(self) -> str:
        return "\n".join([f"Column id {self.field_id}:", *(f"  {v}" for v in self.versions)])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(v.version_id)}</td><td>{html.escape(v.change)}</td>"
            f"<td>{html.escape(v.path)}</td><td>{html.escape(v.type)}</td>"
            f"<td>{'optional' if v.nullable else 'required'}</td></tr>"
            for v in self.versions
        )
        return (f"<div class='evonb-column-history'><b>Column id {self.field_id}</b><table>"
                "<thead><tr><th>version</th><th>change</th><th>path</th><th>type</th>"
                f"<th>null</th></tr></thead><tbody>{rows}</tbody></table></div>")


class SchemaVersions(list["Schema"]):
    """The schema versions of a table, oldest first (a list of :class:`Schema`), with the
    readable name of each (``names``: ``v0``, ``v1``, ... by the order they were made; a
    version a clean removed keeps its number). Renders as one line per version."""

    def __init__(self, schemas: Sequence[Schema], names: Sequence[str], table_name: str = ""
                 ) -> None:
        super().__init__(schemas)
        self.names = tuple(names)
        self.table_name = table_name

    def named(self, name: str) -> Schema:
        """The version called ``name`` (``"v2"``)."""
        for n, schema in zip(self.names, self, strict=True):
            if n == name.strip().lower():
                return schema
        raise KeyError(name)

    def __repr__(self) -> str:
        head = f"Schema versions of {self.table_name or 'table'}: {len(self)}"
        return "\n".join([head, *(f"  {n} {s.version_id}: {s.struct.simple_string()}"
                                   for n, s in zip(self.names, self, strict=True))])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(n)}</td><td><code>{html.escape(s.version_id)}</code></td>"
            f"<td>{len(s.fields)}</td><td><code>{html.escape(s.struct.simple_string())}</code>"
            "</td></tr>" for n, s in zip(self.names, self, strict=True))
        title = html.escape(self.table_name or "table")
        return (f"<div class='evonb-schema-versions'><b>Schema versions of {title}</b>"
                "<table><thead><tr><th>name</th><th>version</th><th>columns</th>"
                f"<th>schema</th></tr></thead><tbody>{rows}</tbody></table></div>")
