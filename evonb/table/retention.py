"""What a clean left readable: time travel to a commit whose data files a clean removed is
refused with :class:`CommitCleanedError`, naming the earliest commit still readable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evonb.errors import CommitNotFoundError, EvoError
from evonb.table.timeline import CommitRecord

if TYPE_CHECKING:  # pragma: no cover
    from evonb.table.table import BaseTable


class CommitCleanedError(CommitNotFoundError):
    """Time travel to a commit whose data files a clean removed (the commit itself exists)."""

    def __init__(self, ref: str, *, earliest_retained: str, clean_instant: str) -> None:
        self.ref = ref
        self.nearest = [earliest_retained]
        self.earliest_retained = earliest_retained
        self.clean_instant = clean_instant
        EvoError.__init__(
            self,
            f"Commit {ref} exists, but its data was cleaned: the clean at {clean_instant} kept "
            f"only the commits from {earliest_retained} on",
            hint=f"time travel to {earliest_retained} or later; keep more history with "
            "clean(retain_commits=...) or retain_hours=...",
        )



def _latest_window(commits: Sequence[CommitRecord]) -> tuple[str, CommitRecord] | None:
    """The clean whose retention window starts latest in completion order, with the completion
    time of its earliest retained commit (recorded by cleans since completion order exists;
    for older cleans that commit's own, or its instant when it is gone)."""
    completion = {c.instant: c.completion for c in commits}
    best: tuple[str, CommitRecord] | None = None
    for c in commits:
        first = c.metadata.get("earliest_retained") if c.action == "clean" else None
        if not first:
            continue
        recorded = c.metadata.get("earliest_retained_completion")
        start = recorded if isinstance(recorded, str) else completion.get(str(first), str(first))
        if best is None or start > best[0]:
            best = (start, c)
    return best


def earliest_readable(table: BaseTable) -> tuple[str, str] | None:
    """``(earliest retained instant, clean instant)`` of the cleans so far, or None."""
    found = _latest_window(table.timeline.completed())
    return (str(found[1].metadata["earliest_retained"]), found[1].instant) if found else None


def check_readable(table: BaseTable, instant: str | None) -> None:
    """Raise :class:`CommitCleanedError` when a clean removed the data of the commit
    ``instant`` (it completed before the earliest commit a clean retained)."""
    if instant is None:
        return
    commits = table.timeline.completed()
    found = _latest_window(commits)
    if found is None:
        return
    mine = next((c.completion for c in commits if c.instant == instant), instant)
    if mine < found[0]:
        raise CommitCleanedError(instant, earliest_retained=str(
            found[1].metadata["earliest_retained"]), clean_instant=found[1].instant)


__all__ = ["CommitCleanedError", "check_readable", "earliest_readable"]
