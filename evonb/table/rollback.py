"""Rollback: undo the latest completed commit(s), and clean up failed writes automatically.

``Table.rollback()`` removes the latest data or schema commit, latest in completion order (or,
with ``cascade=True``, every commit that completed from a given one on): its commit file first
(so no reader sees it any more), then its data files and log blocks (never files adopted in
place by a conversion) and any schema version only it created; a ``rollback`` commit records
what was undone. A commit can only be undone while the files the table needs after it are still on
disk (a clean may have removed them).

A write that failed (its instant is requested or inflight, never completed) is rolled back at
the start of the next write or service: every file whose name carries its instant, its staging
folder and any schema version it saved are removed, and its timeline files deleted. Each write
records its host, process id and process start time in its requested plan; an attempt is only
rolled back when its process is gone (same host) or when it is older than the table property
``evonb.rollback.pending.timeout`` (seconds, default 3600), so a write still running in another
process is left alone.

An attempt whose completed file is missing is not always a failed one: the file may have been
lost after the commit (a disk error, a manual removal). :func:`lost_commit` tells the two
apart, and such an attempt is never rolled back (its files belong to the table; ``evonb check
--repair`` restores its completed file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.errors import EvoError, MetadataCorruptError
from evonb.table.commit import CommitMetadata
from evonb.table.commit_shape import commit_defect
from evonb.table.fileio import file_io
from evonb.table.fsutil import (
    atomic_write_json,
    evo_dir,
    files_of_instant,
    read_json,
    staging_dir,
)
from evonb.table.history import Commit
from evonb.table.instants import parse_instant
from evonb.table.names import (
    INFLIGHT,
    REQUESTED,
    SCHEMAS_DIR,
    TIMELINE_DIR,
    parse_timeline_file,
    schema_file,
    timeline_file,
)
from evonb.table.schema_store import SchemaStore
from evonb.table.snapshot import replay
from evonb.table.timeline import (
    ARCHIVE_PROPERTY,
    COMMIT_COPY_KEY,
    COMPLETION_KEY,
    CommitRecord,
    Instant,
    State,
)
from evonb.table.transaction import Transaction
from evonb.table.writers import writer_gone, writer_info

if TYPE_CHECKING:  # pragma: no cover
    from evonb.table.handle import CommitRef, TableHandle

PENDING_TIMEOUT_PROPERTY = "evonb.rollback.pending.timeout"
DEFAULT_PENDING_TIMEOUT = 3600.0
NOT_UNDOABLE = frozenset({"create", "clean", "rollback"})
ADOPTED = "adopted"
"""``DataFile.kind`` of files adopted in place by ``evonb.convert``: never deleted."""


def is_abandoned(instant: str, plan: dict[str, Any], *, timeout: float,
                 now: datetime | None = None) -> bool:
    """Whether a pending attempt may be rolled back: its writer is gone, or it is older than
    ``timeout`` seconds. A negative ``timeout`` (``evonb check --repair --force``) takes every
    pending attempt as abandoned, also one whose instant lies ahead of this clock (instants
    stay increasing when clocks differ, so an attempt can start "in the future")."""
    if timeout < 0 or writer_gone(plan.get("writer")):
        return True
    now = now or datetime.now(UTC)
    try:
        started = parse_instant(instant)
    except (ValueError, EvoError):
        return False
    return (now - started).total_seconds() > timeout


# ------------------------------------------------------------------------------- files
def _remove_paths(root: Path, paths: Sequence[str]) -> int:
    io = file_io()
    n = 0
    for rel in paths:
        p = root / rel
        if io.exists(p):
            io.delete(p)
            n += 1
    return n


def _drop_versions(table: TableHandle, versions: Sequence[str]) -> list[str]:
    stored = set(table.schema_store.versions())
    dropped = []
    for v in versions:
        if v in stored:
            table.drop_version(v)
            dropped.append(v)
    return dropped


# ------------------------------------------------------------------------ lost commits
@dataclass(frozen=True)
class LostCommit:
    """A pending attempt that provably committed: its completed file went missing.

    ``reason`` says what proves it; ``metadata`` is the completed file to restore (with its
    ``completion_time``), or None when it cannot be rebuilt exactly."""

    instant: str
    action: str
    reason: str
    metadata: dict[str, Any] | None


def _json_or_none(path: Path) -> Any:
    try:
        return read_json(path)
    except (OSError, MetadataCorruptError):
        return None


def _rolled_back(folder: Path, completed: Sequence[tuple[str, Mapping[str, Any]]]) -> set[str]:
    """Instants a rollback (completed, or pending: stopped midway) names as undone on
    purpose."""
    out: set[str] = set()
    plans = [m for _, m in completed if m.get("operation") == "rollback"]
    names = file_io().names(folder)
    plans += [_json_or_none(folder / n) for n in names
              if (p := parse_timeline_file(n)) is not None
              and (p.action, p.state) == ("rollback", REQUESTED)]
    for plan in plans:
        if isinstance(plan, dict) and isinstance(plan.get("rolled_back"), list):
            out.update(str(x) for x in plan["rolled_back"])
    return out


def lost_commit(root: Path, instant: str, action: str,
                completed: Sequence[tuple[str, Mapping[str, Any]]]) -> LostCommit | None:
    """Whether the pending attempt ``instant`` (``action``) committed and lost its completed
    file, given the completed commits ``(instant, metadata)`` in completion order; None when
    nothing shows that it committed (or a rollback undid it on purpose).

    Proofs, in order: its inflight record holds the copy of the commit written right after the
    commit point (restored exactly); a completed commit names it as its base
    (``base_instant``: restored from the files its inflight record lists, at the completion
    time that commit recorded for its base); a completed commit is in the schema version it
    made, removes one of its files, or adds a log block to one (not restorable exactly: kept
    and reported). Intact files alone prove nothing: a writer killed just before its commit
    point leaves them too.
    """

    folder = evo_dir(root) / TIMELINE_DIR
    if instant in _rolled_back(folder, completed):
        return None
    inflight = _json_or_none(folder / timeline_file(instant, action, INFLIGHT))
    inflight = inflight if isinstance(inflight, dict) else {}
    copy = inflight.get(COMMIT_COPY_KEY)
    if isinstance(copy, dict) and commit_defect(copy) is None:
        return LostCommit(instant, action, "its inflight record holds the commit it published",
                          dict(copy))
    entries = inflight.get("files")
    entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else None
    files = {p for p in inflight.get("added", ()) if isinstance(p, str)}
    files.update(str(e.get("path")) for e in entries or ())
    for ts, meta in completed:
        if ts == instant:
            continue
        reason = None
        if meta.get("base_instant") == instant:
            completion = meta.get("base_completion")
            reason = f"commit {ts} names it as its base"
            if entries is not None and isinstance(completion, str):
                rebuilt = _rebuilt(root, instant, action, inflight, entries, completion,
                                   completed)
                if commit_defect(rebuilt) is None:
                    return LostCommit(instant, action, reason, rebuilt)
        elif meta.get("schema_version") == instant and meta.get("operation") != "rollback":
            reason = f"commit {ts} is in the schema version it made"
        elif files & set(meta.get("removed", ())):
            reason = f"commit {ts} removes one of its files"
        elif any(e.get("base") in files for e in meta.get("added", ())):
            reason = f"commit {ts} adds a log block to one of its files"
        if reason:
            return LostCommit(instant, action, reason, None)
    return None


def _rebuilt(root: Path, instant: str, action: str, inflight: Mapping[str, Any],
             entries: list[dict[str, Any]], completion: str,
             completed: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The completed file of a lost commit, from its plan and its inflight record."""
    plan = _json_or_none(evo_dir(root) / TIMELINE_DIR / timeline_file(instant, action, REQUESTED))
    plan = plan if isinstance(plan, dict) else {}
    if file_io().exists(evo_dir(root) / SCHEMAS_DIR / schema_file(instant)):
        version = instant  # it evolved the schema
    else:
        before = [m for ts, m in completed if str(m.get(COMPLETION_KEY, ts)) < completion]
        version = str(before[-1].get("schema_version")) if before else instant
    return {"operation": plan.get("operation", action), "schema_version": version,
            "added": entries, "removed": list(inflight.get("removed", ())),
            "rows_written": sum(int(e.get("rows", 0)) for e in entries),
            COMPLETION_KEY: completion, "restored": "rebuilt from the inflight record"}


def restore_lost(table: TableHandle) -> list[LostCommit]:
    """Restore the completed file of every lost commit whose metadata is known (under the
    table lock); returns those restored."""

    done = []
    with table.locked():
        completed = [(r.instant, r.metadata) for r in table.timeline.completed()]
        for inst in table.timeline.pending():
            lost = lost_commit(table.root, inst.timestamp, inst.action, completed)
            if lost is None or lost.metadata is None:
                continue
            path = table.timeline.path / f"{inst.timestamp}.{inst.action}"
            try:
                atomic_write_json(path, lost.metadata, exclusive=True)
            except FileExistsError:
                continue
            done.append(lost)
    table.invalidate()
    return done


def _highest_column_id(table: TableHandle, versions: Sequence[str]) -> int:
    """The largest field ID given so far: that of the latest schema, or of a schema version
    about to be dropped (IDs only grow from version to version)."""
    stored = set(table.schema_store.versions())
    return max([table.schema.max_column_id,
                *(table.schema_store.load(v).max_column_id for v in versions if v in stored)])


def _keep_column_ids(txn: Transaction, restored: str, highest: int | None) -> str:
    """The schema version to record after a rollback: ``restored``, or when its
    ``max_column_id`` is below ``highest`` (the rollback undid an added column), a copy of it
    saved as the version of the rollback's instant with ``max_column_id`` raised, so that no
    ID is given again (``docs/format.md``: IDs are never reused)."""
    schema, layout = txn.table.version(restored)
    if highest is None or schema.max_column_id >= highest:
        return restored
    txn.save_version(schema.replace(version_id=txn.instant, max_column_id=highest), layout)
    return txn.instant


# --------------------------------------------------------------------- failed attempts
def _plan_of(table: TableHandle, inst: Instant) -> dict[str, Any]:
    try:
        plan = table.timeline.read(inst.with_state(State.REQUESTED))
    except (FileNotFoundError, EvoError):
        return {}
    return plan if isinstance(plan, dict) else {}


def _undo_attempt(table: TableHandle, inst: Instant, plan: dict[str, Any]) -> list[str]:
    """Remove what a failed attempt left behind; the paths removed (relative)."""

    root = table.root
    removed = []
    if inst.action == "rollback":
        # A rollback that stopped midway: finish removing what it planned to remove.
        _remove_paths(root, plan.get("files", ()))
        _drop_versions(table, plan.get("versions", ()))
        removed.extend(plan.get("files", ()))
    removed.extend(_remove_files_of(root, inst.timestamp))
    file_io().delete_folder(staging_dir(root, inst.timestamp))
    referenced = {r.metadata.get("schema_version") for r in table.timeline.completed()}
    if inst.timestamp not in referenced:
        _drop_versions(table, [inst.timestamp])
    table.timeline.abort(inst.timestamp)
    # A task of the killed writer may still have placed a log block since the look above;
    # one placed from here on finds the attempt gone and removes its block itself
    # (evonb.table.timeline.instant_on_timeline).
    removed.extend(_remove_files_of(root, inst.timestamp))
    return removed


def _remove_files_of(root: Path, instant: str) -> list[str]:
    """Delete the files named with ``instant`` (:func:`files_of_instant`); their paths."""
    paths = files_of_instant(root, instant)
    io = file_io()
    for p in paths:
        io.delete(p)
    return [p.relative_to(root).as_posix() for p in paths]


def rollback_failed(table: TableHandle) -> list[str]:
    """Roll back every failed attempt (pending, and abandoned: see :func:`is_abandoned`);
    records one ``rollback`` commit when there was any. Returns their instants."""
    timeout = table.raw_config.float_property(PENDING_TIMEOUT_PROPERTY, DEFAULT_PENDING_TIMEOUT)
    candidates = [i for i in table.timeline.pending()
                  if is_abandoned(i.timestamp, _plan_of(table, i), timeout=timeout)]
    if not candidates:
        return []
    done: list[str] = []
    paths: list[str] = []
    undone: list[str] = []  # completed commits removed by a rollback that stopped midway
    after: str | None = None
    highest: int | None = None  # the largest field ID an interrupted rollback had seen
    with table.locked():
        still = {i.timestamp for i in table.timeline.pending()}
        completed = [(r.instant, r.metadata) for r in table.timeline.completed()]
        for inst in candidates:
            if inst.timestamp not in still:
                continue
            if lost_commit(table.root, inst.timestamp, inst.action, completed) is not None:
                continue  # it committed: its files belong to the table (evonb check)
            plan = _plan_of(table, inst)
            if inst.action == "rollback":
                undone.extend(str(x) for x in plan.get("rolled_back", ()))
                floor = plan.get("after")
                if isinstance(floor, str) and (after is None or floor > after):
                    after = floor
                planned = plan.get("max_column_id")
                if isinstance(planned, int) and (highest is None or planned > highest):
                    highest = planned
            paths.extend(_undo_attempt(table, inst, plan))
            done.append(inst.timestamp)
        if done:
            meta: dict[str, Any] = {"operation": "rollback", "failed": done,
                                    "files_deleted": paths}
            if undone:
                meta["rolled_back"] = undone
            _record(table, meta, after=after, highest=highest)
    table.invalidate()
    return done


def _record(table: TableHandle, metadata: dict[str, Any], *, after: str | None = None,
            highest: int | None = None) -> CommitRecord:
    """A completed rollback commit (call under the lock), completing after ``after`` too; its
    schema keeps ``max_column_id`` at ``highest`` at least (:func:`_keep_column_ids`)."""
    last = table.timeline.last_completed()
    version = last.schema_version if last else table.schema.version_id
    with Transaction(table, "rollback", plan=metadata, recover=False) as txn:
        details = {k: v for k, v in metadata.items() if k != "operation"}
        return txn.complete(CommitMetadata.of(
            str(metadata["operation"]), _keep_column_ids(txn, version, highest), **details),
            after=after)


# ------------------------------------------------------------------- completed commits
def rollback(table: TableHandle, instant: CommitRef | None = None, *,
             cascade: bool = False) -> Commit:
    """Undo the data or schema commit that completed last, or ``instant`` (which must be the
    last such commit to complete unless ``cascade=True``, which undoes the ones that completed
    after it too). Returns the ``rollback`` commit."""
    txn = Transaction(table, "rollback")  # failed attempts rolled back first
    with table.locked():
        completed = table.timeline.completed()
        undoable = [c for c in completed if c.action not in NOT_UNDOABLE]
        if not undoable:
            raise EvoError(f"Table {table.name!r} has no commit to roll back",
                           hint="creation, clean and rollback commits cannot be undone")
        if instant is None:
            targets = [undoable[-1]]
        else:
            rec = table.commit(instant)
            if rec.action in NOT_UNDOABLE:
                raise EvoError(f"Commit {rec.instant} ({rec.action}) cannot be rolled back",
                               hint="only data, schema and service commits can be undone")
            later = [c for c in undoable if c.order > rec.order]
            if later and not cascade:
                names = ", ".join(f"{c.instant} ({c.operation})" for c in later)
                raise EvoError(
                    f"Cannot roll back {rec.instant} ({rec.operation}): later commits depend "
                    f"on it: {names}",
                    hint="roll those back first, or pass cascade=True to undo them too",
                )
            targets = [*reversed(later), rec]
        gone = {c.instant for c in targets}
        archived = sorted(gone & table.timeline.archived_instants())
        if archived:
            raise EvoError(
                f"Cannot roll back {targets[-1].instant}: commit {archived[-1]} is archived "
                "(its timeline files were moved into the timeline's archive)",
                hint=f"an archived commit cannot be undone: the table property "
                     f"{ARCHIVE_PROPERTY} sets how many recent commits stay undoable; an "
                     "older schema comes back with a new commit: revert_schema(...)")
        remaining = [c for c in completed if c.instant not in gone]
        restored = _restored_version(remaining)
        _check_restorable(table, remaining, targets, restored)
        files = [f.path for c in targets for f in c.metadata.added
                 if f.kind != ADOPTED]  # files adopted in place are not ours
        versions = [c.instant for c in targets if c.metadata.get("schema_version") == c.instant]
        highest = _highest_column_id(table, versions)
        # The rollback completes after the commits it removes, even once they are gone: a
        # writer that started on top of one of them sees it among the commits since its start.
        after = max(c.completion for c in completed)
        txn.plan.update({"operation": "rollback", "rolled_back": [c.instant for c in targets],
                         "files": files, "versions": versions, "after": after,
                         "max_column_id": highest})
        with txn:  # under the table lock already
            txn.roll_forward()  # interrupted from here, recovery finishes it from the plan
            for c in targets:  # the commit files first: from here no reader sees the commits
                table.timeline.remove_completed(c.instant)
            deleted = _remove_paths(table.root, files)
            dropped = _drop_versions(table, versions)
            restored = _keep_column_ids(txn, restored, highest)
            record = txn.complete(CommitMetadata.of(
                "rollback", restored,
                rolled_back=[c.instant for c in targets],
                rolled_back_operations=[c.operation for c in targets],
                files_deleted=deleted, versions_deleted=dropped), after=after)
    return Commit.from_record(record)


def _restored_version(remaining: list[CommitRecord]) -> str:
    """The schema version in force after a rollback: that of the last data or schema commit
    left (clean and rollback commits only repeat the version of their time)."""
    for c in reversed(remaining):
        if c.action not in ("clean", "rollback") and "schema_version" in c.metadata:
            return c.schema_version
    return remaining[0].schema_version


def _check_restorable(table: TableHandle, remaining: list[CommitRecord],
                      targets: list[CommitRecord], restored: str) -> None:
    """The table after the rollback must be readable: its files and schema still exist."""

    snap = replay(remaining, restored)
    io = file_io()
    missing = [f.path for f in (*snap.files, *snap.logs) if not io.exists(table.root / f.path)]
    stored = set(SchemaStore(table.root).versions())
    needed = {restored, *(f.version for f in (*snap.files, *snap.logs))}
    lost = sorted(v for v in needed if v not in stored)
    if missing or lost:
        what = (f"{len(missing)} data files it needs are gone (e.g. {missing[0]})" if missing
                else f"schema version {lost[0]} it needs was pruned")
        raise EvoError(f"Cannot roll back {targets[-1].instant}: the table before it cannot "
                       f"be restored, {what} (a clean removed them)",
                       hint="roll back fewer commits, or keep more commits when cleaning")


__all__ = [
    "DEFAULT_PENDING_TIMEOUT",
    "PENDING_TIMEOUT_PROPERTY",
    "LostCommit",
    "files_of_instant",
    "is_abandoned",
    "lost_commit",
    "restore_lost",
    "rollback",
    "rollback_failed",
    "writer_gone",
    "writer_info",
]
