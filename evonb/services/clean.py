"""Clean: remove data files no commit in the retention window needs, and prune schema history.

The *retention window* is the latest commits by number (``retain_commits``, counted in
completion order) and/or by age (``retain_hours``, by completion time): every commit from the
earliest of those on, in completion order. The latest commit is always in it, and a commit in it
stays readable by time travel. A data file or log block may go when it is live in no snapshot
of a commit in the window (files adopted in place by ``evonb.convert`` are never deleted).
Schema versions follow their own policy (``keep_schema_versions``: the newest N are kept), but a
version is never removed while a live file or log block of the window, or a commit in the window,
uses it. :func:`plan_clean` decides all of this as a pure function of the commits.

Time travel to a commit before the window then raises :class:`CommitCleanedError` (a
:class:`~evonb.errors.CommitNotFoundError`): the commit is on the timeline, its data is gone.
Defaults come from the table properties ``evonb.clean.retain_commits`` (10),
``evonb.clean.retain_hours`` (unset) and ``evonb.clean.keep_schema_versions`` (unset: keep all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from evonb.arguments import finite_number, whole_number
from evonb.errors import EvoError
from evonb.table.commit import CommitMetadata
from evonb.table.fileio import file_io
from evonb.table.history import Commit
from evonb.table.instants import parse_instant
from evonb.table.snapshot import DataFile, replay
from evonb.table.timeline import CommitRecord
from evonb.table.transaction import Transaction

if TYPE_CHECKING:  # pragma: no cover
    from evonb.spark.table import SparkTable

RETAIN_COMMITS_PROPERTY = "evonb.clean.retain_commits"
RETAIN_HOURS_PROPERTY = "evonb.clean.retain_hours"
KEEP_VERSIONS_PROPERTY = "evonb.clean.keep_schema_versions"
DEFAULT_RETAIN_COMMITS = 10


@dataclass(frozen=True)
class CleanPlan:
    """What a clean removes: data files and log blocks (paths), and schema versions."""

    earliest_retained: str
    retained: tuple[str, ...]
    files: tuple[str, ...]
    versions: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.files or self.versions)


def _window(commits: Sequence[CommitRecord], retain_commits: int | None,
            retain_hours: float | None, now: datetime) -> int:
    """The position (in ``commits``, which are in completion order) of the earliest commit of
    the retention window."""
    countable = [i for i, c in enumerate(commits) if c.action != "clean"] or list(
        range(len(commits)))
    keep = {countable[-1]}
    if retain_commits is not None:
        keep.update(countable[-retain_commits:])
    if retain_hours is not None:
        try:
            cutoff = now - timedelta(hours=retain_hours)
        except OverflowError:  # further back than any date: every commit is in the window
            cutoff = datetime.min.replace(tzinfo=UTC)
        keep.update(i for i in countable if parse_instant(commits[i].completion) >= cutoff)
    return min(keep)


def plan_clean(
    commits: Sequence[CommitRecord],
    stored_versions: Sequence[str],
    *,
    retain_commits: int | None = None,
    retain_hours: float | None = None,
    keep_schema_versions: int | None = None,
    now: datetime | None = None,
) -> CleanPlan:
    """Which files and schema versions may go (pure: no I/O).

    ``commits`` are the completed commits in completion order; ``stored_versions`` the schema
    versions on disk. A file may go if it is live in no snapshot of a retained commit; a
    version if the ``keep_schema_versions`` newest (in the completion order of the commits that
    made them) do not include it and no retained commit or file of a retained snapshot uses it.
    """
    if not commits:
        return CleanPlan("", (), (), ())
    if retain_commits is not None and retain_commits < 1:
        raise EvoError("retain_commits must be at least 1")
    if keep_schema_versions is not None and keep_schema_versions < 1:
        raise EvoError("keep_schema_versions must be at least 1")
    first = _window(commits, retain_commits, retain_hours, now or datetime.now(UTC))
    earliest = commits[first].instant
    before = list(commits[:first + 1])
    retained = list(commits[first:])
    at_start = replay(before, str(before[0].metadata.get("schema_version", "")))
    needed_files: dict[str, DataFile] = {f.path: f for f in (*at_start.files, *at_start.logs)}
    for c in retained:
        for f in c.metadata.added:
            needed_files[f.path] = f
    ever = {f.path for c in commits for f in c.metadata.added
            if f.kind != "adopted"}  # files adopted in place are never deleted
    gone = {str(p) for c in commits if c.action == "clean"
            for p in c.metadata.get("cleaned_files", ())}
    files = sorted(ever - gone - set(needed_files))
    needed_versions = {f.version for f in needed_files.values()}
    for c in retained:
        for key in ("schema_version", "base_version"):
            if c.metadata.get(key) is not None:
                needed_versions.add(str(c.metadata[key]))
    made: dict[str, int] = {}
    for i, c in enumerate(commits):
        v = c.metadata.get("schema_version")
        if v is not None:
            made.setdefault(str(v), i)
    stored = sorted(stored_versions, key=lambda v: (made.get(v, -1), v))
    if keep_schema_versions is None:
        versions: list[str] = []
    else:
        policy = set(stored[-keep_schema_versions:])
        versions = [v for v in stored if v not in policy and v not in needed_versions]
    return CleanPlan(earliest, tuple(c.instant for c in retained), tuple(files), tuple(versions))


def _setting(table: SparkTable, given: Any, name: str, kind: type) -> Any:
    if given is not None:
        return given
    raw = table.raw_config.property(name)
    return kind(raw) if raw not in (None, "") else None


def clean(table: SparkTable, *, retain_commits: int | None = None,
          retain_hours: float | None = None,
          keep_schema_versions: int | None = None) -> Commit | None:
    """Clean ``table`` (see the module docstring). Returns the ``clean`` commit, or None when
    there was nothing to remove."""
    if retain_commits is not None:
        retain_commits = whole_number("retain_commits", retain_commits, minimum=1)
    if retain_hours is not None:
        retain_hours = finite_number("retain_hours", retain_hours, minimum=0)
    if keep_schema_versions is not None:
        keep_schema_versions = whole_number("keep_schema_versions", keep_schema_versions,
                                            minimum=1)
    retain_commits = _setting(table, retain_commits, RETAIN_COMMITS_PROPERTY, int)
    retain_hours = _setting(table, retain_hours, RETAIN_HOURS_PROPERTY, float)
    keep_schema_versions = _setting(table, keep_schema_versions, KEEP_VERSIONS_PROPERTY, int)
    if retain_commits is None and retain_hours is None:
        retain_commits = DEFAULT_RETAIN_COMMITS
    txn = Transaction(table, "clean")  # failed attempts rolled back first
    with table.locked():
        commits = table.timeline.completed()
        plan = plan_clean(commits, table.schema_store.versions(), retain_commits=retain_commits,
                          retain_hours=retain_hours, keep_schema_versions=keep_schema_versions)
        if not plan:
            return None
        txn.plan.update({"operation": "clean", "earliest_retained": plan.earliest_retained,
                         "files": list(plan.files), "versions": list(plan.versions)})
        with txn:  # under the table lock already
            last = commits[-1]
            record = txn.complete(CommitMetadata.of(
                "clean", last.schema_version,
                earliest_retained=plan.earliest_retained,
                earliest_retained_completion=table.timeline.get(
                    plan.earliest_retained).completion,
                retain_commits=retain_commits, retain_hours=retain_hours,
                keep_schema_versions=keep_schema_versions,
                cleaned_files=list(plan.files), cleaned_versions=list(plan.versions)))
        io = file_io()
        for path in plan.files:
            io.delete(table.root / path)
        for version in plan.versions:
            table.drop_version(version)
    table.invalidate()
    return Commit.from_record(record)


__all__ = [
    "CleanPlan",
    "clean",
    "plan_clean",
]
