"""Commit references: the one reader of the text that names a commit.

The Python API and the ``%evo`` magics take the same references:

- an instant (``"20261122101500000"``): that commit;
- a date-time (``"2026-11-22 10:15"``, ISO text, a ``datetime`` or ``date``): the last commit
  that completed at or before it;
- a position in the history, ``"@N"``: ``@0`` the first commit to complete, ``@-1`` the latest;
- ``"latest"``: the last commit to complete.

A schema version is named by its id (the 17-digit instant of the commit that made it) or by its
ordinal, ``"vN"`` (:func:`version_ordinal`): ``v0`` the table's first schema, then one more per
schema version, in the order the versions were made.

:func:`expand_ref` turns the positional forms into the instant they name and leaves every other
reference as it is (stripped), so a schema version id stays a version id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evonb.errors import CommitNotFoundError
from evonb.table.timeline import CommitRecord

LATEST = "latest"

_INDEX_REF = re.compile(r"@(-?\d+)\Z")
_VERSION_REF = re.compile(r"[vV](\d+)\Z")


def is_latest(ref: object) -> bool:
    """Whether ``ref`` is the word ``latest`` (any case, spaces around ignored)."""
    return isinstance(ref, str) and ref.strip().lower() == LATEST


def history_index(ref: object) -> int | None:
    """N of a ``"@N"`` reference, else None."""
    if not isinstance(ref, str):
        return None
    match = _INDEX_REF.match(ref.strip())
    return int(match.group(1)) if match else None


def version_ordinal(ref: object) -> int | None:
    """N of a ``"vN"`` schema version name (``v0`` the first version), else None."""
    if not isinstance(ref, str):
        return None
    match = _VERSION_REF.match(ref.strip())
    return int(match.group(1)) if match else None


def expand_ref(ref: object, commits: Sequence[CommitRecord], *, table_name: str = "",
               keep_latest: bool = False) -> object:
    """``ref`` with ``@N`` (and, unless ``keep_latest``, ``latest``) replaced by the instant of
    the commit it names among ``commits`` (completed, in completion order); other text is
    stripped, other values are returned as they are. A position outside the history raises
    :class:`CommitNotFoundError` saying how many commits there are."""
    if not isinstance(ref, str):
        return ref
    text = ref.strip()
    if is_latest(text):
        if keep_latest:
            return LATEST
        if not commits:
            raise CommitNotFoundError(text, what="commit")
        return commits[-1].instant
    index = history_index(text)
    if index is None:
        return text
    try:
        return commits[index].instant
    except IndexError:
        owner = f"table {table_name!r}" if table_name else "the table"
        last = f"@0 .. @{len(commits) - 1}, or @-1 for the latest" if commits else "none"
        raise CommitNotFoundError(
            text, what="commit position",
            hint=f"{owner} has {len(commits)} commits ({last})",
        ) from None


__all__ = ["LATEST", "expand_ref", "history_index", "is_latest", "version_ordinal"]
