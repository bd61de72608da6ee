"""Commit metadata as a typed, frozen record that validates itself.

A completed timeline file holds one JSON object. :class:`CommitMetadata` is that object parsed
and checked (:func:`evonb.table.commit_shape.commit_defect`): the fields every commit has are
typed attributes (``operation``, ``schema_version``, ``added`` as :class:`DataFile` records,
``removed``, ``completion_time``, ``base_completion``) and what an operation adds of its own
(``rows_written``, ``changes``, ``cleaned_files``, ...) is in ``details``. It is built in one
place for writers (:meth:`CommitMetadata.of`) and parsed in one place for readers
(:meth:`CommitMetadata.parse`); a record that does not validate is never written, and a file
that does not validate is never replayed.

The record is also a read-only mapping of its JSON form (``meta["schema_version"]``,
``meta.get("rows_written")``), so code that reads commits as JSON objects and the JSON on disk
stay one and the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from evonb.errors import EvoError, MetadataCorruptError
from evonb.table.commit_shape import commit_defect
from evonb.table.data_file import DataFile

# The keys of the typed fields; everything else is a detail of the operation.
_TYPED = ("operation", "schema_version", "added", "removed", "completion_time",
          "base_completion")


@dataclass(frozen=True, eq=False)
class CommitMetadata(Mapping[str, Any]):
    """One commit's metadata (see the module docstring). Equal to any mapping with the same
    JSON form."""

    operation: str | None
    schema_version: str | None
    added: tuple[DataFile, ...] = ()
    removed: tuple[str, ...] = ()
    completion_time: str | None = None
    base_completion: str | None = None
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    _json: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), repr=False)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(cls, operation: str, schema_version: str, *, added: Iterable[DataFile] = (),
           removed: Iterable[str] = (), **details: Any) -> CommitMetadata:
        """A new commit's metadata, checked: :class:`EvoError` if it would not validate (a
        bug in the writer, found before the commit point)."""
        body: dict[str, Any] = {"operation": operation, "schema_version": schema_version,
                                **details,
                                "added": [f.to_dict() for f in added], "removed": list(removed)}
        return cls.from_json(body, where=f"the {operation!r} commit being written")

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str,
                  require_schema: bool = True) -> CommitMetadata:
        """Metadata built by a writer from a JSON-shaped mapping; :class:`EvoError` if it does
        not validate (``require_schema``: as in :meth:`parse`)."""
        body = dict(data)
        defect = commit_defect(body, require_schema=require_schema)
        if defect:
            raise EvoError(f"evonb built invalid commit metadata for {where}: {defect}",
                           hint="this is a bug in evonb; the table is unchanged")
        return cls._make(body)

    @classmethod
    def parse(cls, data: Any, *, where: str, require_schema: bool = True) -> CommitMetadata:
        """Metadata read from the file ``where``; :class:`MetadataCorruptError` naming the file
        and the defect when it does not validate. ``require_schema=False`` accepts a commit
        without ``schema_version`` (written by a version that did not record it)."""
        defect = commit_defect(data, require_schema=require_schema)
        if defect:
            raise MetadataCorruptError(where, defect)
        return cls._make(data)

    @classmethod
    def _make(cls, body: dict[str, Any]) -> CommitMetadata:
        version = body.get("schema_version")
        return cls(
            operation=str(body["operation"]) if body.get("operation") is not None else None,
            schema_version=str(version) if version is not None else None,
            added=tuple(DataFile.from_dict(e) for e in body.get("added", ())),
            removed=tuple(str(p) for p in body.get("removed", ())),
            completion_time=body.get("completion_time"),
            base_completion=body.get("base_completion"),
            details=MappingProxyType({k: v for k, v in body.items() if k not in _TYPED}),
            _json=MappingProxyType(body),
        )

    def with_changes(self, **changes: Any) -> CommitMetadata:
        """A copy with JSON keys set (``None`` removes a key), validated again."""
        body = dict(self._json)
        for key, value in changes.items():
            if value is None:
                body.pop(key, None)
            else:
                body[key] = value
        return CommitMetadata.parse(body, where="commit metadata", require_schema=False)

    def completed_at(self, completion: str) -> CommitMetadata:
        """This record with its ``completion_time`` (an instant the timeline assigns at the
        commit point), without checking the rest again."""
        body = {**self._json, "completion_time": completion}
        return dataclasses.replace(self, completion_time=completion,
                                   _json=MappingProxyType(body))

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to the completed timeline file (a fresh dict)."""
        return dict(self._json)

    # ------------------------------------------------------------- read-only mapping
    def __getitem__(self, key: str) -> Any:
        return self._json[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._json)

    def __len__(self) -> int:
        return len(self._json)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._json) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"CommitMetadata({dict(self._json)!r})"


__all__ = ["CommitMetadata"]
