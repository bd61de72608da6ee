"""The shape of a completed commit's metadata, checked wherever a commit is read (timeline,
rollback, ``evonb check``): a commit that does not have it is reported as corrupt, never
replayed into a wrong snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evonb.table.names import INSTANT

FILE_KINDS = ("base", "log", "adopted")
"""``kind`` of a file entry: a Parquet data file, a merge-on-read log block, or a Parquet file
adopted in place by a conversion (never deleted by rollback or clean)."""


def commit_defect(data: Any, *, require_schema: bool = True) -> str | None:
    """What is wrong with the shape of a completed commit's metadata, or ``None``.

    Checked: a JSON object with a ``schema_version`` instant (only when present unless
    ``require_schema``), ``added`` a list of file entries
    (relative ``path``, ``version`` and ``instant`` instants, known ``kind``, integer ``rows``
    and ``bytes``), ``removed`` a list of relative paths.
    """
    if not isinstance(data, dict):
        return f"commit metadata must be a JSON object, not {type(data).__name__}"
    version = data.get("schema_version")
    if version is None and not require_schema:
        pass
    elif not isinstance(version, str) or not INSTANT.fullmatch(version):
        return f"schema_version must be a 17-digit instant, not {version!r}"
    added = data.get("added", [])
    if not isinstance(added, list):
        return "added must be a list of file entries"
    for i, entry in enumerate(added):
        if not isinstance(entry, dict):
            return f"added[{i}] must be an object"
        path = entry.get("path")
        if not _relative(path):
            return f"added[{i}].path must be a relative path inside the table, not {path!r}"
        for key in ("version", "instant"):
            value = entry.get(key)
            if not isinstance(value, str) or not INSTANT.fullmatch(value):
                return f"added[{i}].{key} must be a 17-digit instant, not {value!r}"
        for key in ("rows", "bytes"):
            value = entry.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                return f"added[{i}].{key} must be a non-negative integer, not {value!r}"
        kind = entry.get("kind", "base")
        if kind not in FILE_KINDS:
            return f"added[{i}].kind must be one of {', '.join(FILE_KINDS)}, not {kind!r}"
        if kind == "log" and not _relative(entry.get("base")):
            return f"added[{i}] is a log block without a base file"
    removed = data.get("removed", [])
    if not isinstance(removed, list) or not all(_relative(p) for p in removed):
        return "removed must be a list of relative paths"
    for key in ("completion_time", "base_completion"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not INSTANT.fullmatch(value)):
            return f"{key} must be a 17-digit instant, not {value!r}"
    return None


def _relative(path: Any) -> bool:
    if not isinstance(path, str) or not path or path.startswith("/"):
        return False
    return ".." not in Path(path).parts


__all__ = ["FILE_KINDS", "commit_defect"]
