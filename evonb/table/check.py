"""Verifying a table on disk, and repairing what a crash leaves behind.

:func:`check_table` reads a table's metadata and files without Spark and reports every problem
with the file it concerns:

- ``corrupt-metadata``: a metadata file that does not parse or has the wrong shape;
- ``timeline``: an ill-formed timeline (a file name that is not an instant, one instant used by
  two actions, a commit removing a file no earlier commit added, a completion order that is not
  well formed: two commits with one completion time, a commit completing before it started or
  before its base, a commit without a completion time after commits that have one);
- ``missing-file``: a data file or log block of the latest snapshot that is gone;
- ``corrupt-file``: a data file or log block of the latest snapshot whose size is not the one
  its commit recorded, or whose Parquet footer or Avro header does not read (with ``deep``:
  whose row groups or Avro blocks do not read, or hold another number of rows);
- ``lost-commit``: a pending attempt that provably committed (its completed file went
  missing): its files are kept, and repair restores the completed file when its metadata is
  known (:func:`evonb.table.rollback.lost_commit`);
- ``missing-schema``: a schema version (or its layout) that a live file or the latest commit
  needs and that is gone;
- ``failed-attempt``: a pending instant whose writer is gone (or that is older than the table
  property ``evonb.rollback.pending.timeout``), with the files it left;
- ``orphan-file``, ``orphan-staging``, ``orphan-schema``: data files, staging folders and schema
  versions that no commit references and no pending attempt owns.

Attempts still in progress, temporary files of atomic writes, and the note of a retried
Spark task that a write left because it stopped before its sweep (``retry-note``:
:mod:`evonb.spark.task_attempts`) are reported as notes, not problems; repair removes such a
note. :func:`repair_table` restores lost commits, rolls back failed attempts (with
:func:`evonb.table.rollback.rollback_failed`), removes orphans under the table lock, and checks
again. Repair never removes anything while a completed commit is unreadable: it could not tell
which files are live.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evonb.errors import (
    EvoError,
    MetadataCorruptError,
    TableNotFoundError,
)
from evonb.table.commit_shape import commit_defect
from evonb.table.config import TableConfig
from evonb.table.file_checks import file_defect, file_error
from evonb.table.fileio import file_io
from evonb.table.fsutil import (
    data_tree,
    evo_dir,
    is_temp_name,
    location_uri,
    read_json,
    table_path,
)
from evonb.table.names import (
    COMPLETED,
    CONFIG_REL,
    EVO_DIR,
    ICEBERG_ENABLED_PROPERTY,
    ICEBERG_STATUS_FILE,
    INFLIGHT,
    REQUESTED,
    RETRIES_DIR,
    SCHEMA,
    SCHEMAS_DIR,
    STAGING_DIR,
    TEMP_SUFFIX,
    TIMELINE_DIR,
    TIMELINE_REL,
    layout_file,
    parse_data_file,
    parse_log_block,
    parse_log_block_temp,
    parse_schema_file,
    parse_timeline_file,
    schema_file,
    schemas_rel,
    timeline_file,
    timeline_rel,
)
from evonb.table.rollback import (
    DEFAULT_PENDING_TIMEOUT,
    PENDING_TIMEOUT_PROPERTY,
    is_abandoned,
    lost_commit,
    restore_lost,
    rollback_failed,
)
from evonb.table.schema_store import SchemaStore
from evonb.table.table import BaseTable, _read_layout
from evonb.table.timeline import (
    ARCHIVE_DIR,
    CHECKPOINT_DIR,
    is_archive_name,
    is_checkpoint_name,
    parse_checkpoint,
)


# --------------------------------------------------------------------------------- report
@dataclass(frozen=True)
class Problem:
    """One finding: its ``kind``, the file it concerns (relative to the table root), a message,
    and whether ``--repair`` fixes it."""

    kind: str
    path: str
    message: str
    repairable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "message": self.message,
                "repairable": self.repairable}


@dataclass
class CheckReport:
    """The result of checking (and perhaps repairing) one table."""

    table: str
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    found_before_repair: list[Problem] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No problems (notes do not count)."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "table": self.table,
            "ok": self.ok,
            "problems": [p.to_dict() for p in self.problems],
            "notes": [p.to_dict() for p in self.notes],
            "stats": self.stats,
        }
        if self.repaired or self.found_before_repair:
            out["repaired"] = self.repaired
            out["found_before_repair"] = [p.to_dict() for p in self.found_before_repair]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def render(self) -> str:
        """The report as readable text."""
        s = self.stats
        lines = [f"evonb check {self.table}"]
        if s:
            lines.append(
                f"  {s.get('commits', 0)} commits"
                + (f", {s['archived']} archived" if s.get("archived") else "")
                + f" (latest {s.get('latest_commit') or '-'}, "
                f"schema version {s.get('schema_version') or '-'}), "
                f"{s.get('live_files', 0)} live files, {s.get('schema_versions', 0)} schema "
                f"versions, {s.get('pending', 0)} pending attempts")
        if self.found_before_repair:
            n = len(self.found_before_repair)
            lines.append(f"  found {n} problem{'' if n == 1 else 's'} before repair:")
            lines.extend(f"    {p.kind}: {p.path}: {p.message}" for p in self.found_before_repair)
        if self.repaired:
            lines.append(f"  repaired ({len(self.repaired)}):")
            lines.extend(f"    {r}" for r in self.repaired)
        width = max((len(p.kind) for p in (*self.problems, *self.notes)), default=0)
        for p in self.problems:
            lines.append(f"  PROBLEM  {p.kind:<{width}}  {p.path}: {p.message}")
        for p in self.notes:
            lines.append(f"  note     {p.kind:<{width}}  {p.path}: {p.message}")
        if self.ok:
            lines.append("OK: no problems")
        else:
            fixable = sum(p.repairable for p in self.problems)
            more = (f" ({fixable} repairable: run with --repair)" if fixable and not self.repaired
                    else "")
            n = len(self.problems)
            lines.append(f"{n} problem{'' if n == 1 else 's'}{more}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------- scans
@dataclass
class _Files:
    """Data files and leftovers found on disk (relative paths), keyed by the writing instant."""

    data: dict[str, str] = field(default_factory=dict)  # path -> instant
    staging: dict[str, str] = field(default_factory=dict)  # folder -> instant
    temp: list[str] = field(default_factory=list)
    retries: dict[str, str] = field(default_factory=dict)  # retry note -> instant


def _scan_files(root: Path) -> _Files:
    found = _Files()
    io = file_io()
    for rel, f in data_tree(root):
        named = parse_data_file(f.name) or parse_log_block(f.name)
        instant = named.instant if named is not None else parse_log_block_temp(f.name)
        if instant is not None:
            found.data[rel] = instant
    staging = root / EVO_DIR / STAGING_DIR
    for name in sorted({*io.folders(staging), *io.names(staging)}):
        found.staging[f"{EVO_DIR}/{STAGING_DIR}/{name}"] = name
    for rel, f in io.walk(root / EVO_DIR):  # one walk of .evo: temp files and retry notes
        if is_temp_name(f.name) and f.name.endswith(TEMP_SUFFIX):
            found.temp.append(f"{EVO_DIR}/{rel}")
        elif rel == f"{RETRIES_DIR}/{f.name}":
            found.retries[f"{EVO_DIR}/{rel}"] = f.name
    return found


@dataclass
class _Timeline:
    completed: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    pending: dict[str, tuple[str, str, dict[str, Any] | None]] = field(default_factory=dict)
    unreadable: bool = False
    instants: set[str] = field(default_factory=set)
    archived: set[str] = field(default_factory=set)


def _scan_timeline(root: Path, problems: list[Problem]) -> _Timeline:
    """Completed commits (instant, action, metadata) and pending attempts (instant -> action,
    furthest state's file, plan or None when unreadable)."""
    tl = _Timeline()
    folder = evo_dir(root) / TIMELINE_DIR
    names = sorted(file_io().names(folder))
    if not names:
        problems.append(Problem("timeline", TIMELINE_REL,
                                "the timeline folder is missing or empty"))
        tl.unreadable = True
        return tl
    states: dict[str, dict[str, set[str]]] = {}
    for name in names:
        if is_temp_name(name):
            continue
        parsed = parse_timeline_file(name)
        if parsed is None:
            problems.append(Problem("timeline", timeline_rel(name),
                                    "not a timeline file name (<instant>.<action>[.<state>])"))
            continue
        states.setdefault(parsed.instant, {}).setdefault(parsed.action, set()).add(parsed.state)
    for ts, actions in sorted(states.items()):
        tl.instants.add(ts)
        if len(actions) > 1:
            problems.append(Problem(
                "timeline", timeline_rel(f"{ts}.*"),
                f"instant {ts} is used by more than one action: {', '.join(sorted(actions))}"))
        action, have = sorted(actions.items(), key=lambda kv: COMPLETED not in kv[1])[0]
        if COMPLETED in have:
            rel = timeline_rel(timeline_file(ts, action))
            try:
                data = read_json(root / rel)
            except FileNotFoundError:  # rolled back since the listing
                continue
            except MetadataCorruptError as exc:
                problems.append(Problem("corrupt-metadata", rel, _reason(exc)))
                tl.unreadable = True
                continue
            defect = commit_defect(data)
            if defect:
                problems.append(Problem("corrupt-metadata", rel, defect))
                tl.unreadable = True
                continue
            tl.completed.append((ts, action, data))
            continue
        state = INFLIGHT if INFLIGHT in have else REQUESTED
        rel = timeline_rel(timeline_file(ts, action, state))
        plan: dict[str, Any] | None
        try:
            raw = read_json(root / timeline_rel(timeline_file(ts, action, REQUESTED)))
            plan = raw if isinstance(raw, dict) else None
        except (FileNotFoundError, MetadataCorruptError):
            plan = None
        tl.pending[ts] = (action, rel, plan)
    _scan_archive(root, tl, problems)
    tl.completed.sort(key=lambda c: (_completion(c), c[0]))
    return tl


def _scan_archive(root: Path, tl: _Timeline, problems: list[Problem]) -> None:
    """Add the commits only the latest archive holds (listed after the timeline folder, as
    readers do: :meth:`evonb.table.timeline.Timeline.archive`). It holds the only copy of
    them, so an unreadable one makes the timeline unreadable."""
    folder = evo_dir(root) / TIMELINE_DIR / ARCHIVE_DIR
    for _ in range(3):  # replaced by a newer one between the listing and the read: again
        names = sorted(n for n in file_io().names(folder) if is_archive_name(n))
        if not names:
            return
        rel = timeline_rel(f"{ARCHIVE_DIR}/{names[-1]}")
        try:
            entries = parse_checkpoint(read_json(root / rel), str(root / rel), kind="archive")
        except FileNotFoundError:
            continue
        except MetadataCorruptError as exc:
            problems.append(Problem(
                "corrupt-metadata", rel, f"{_reason(exc)}; it holds the only copy of the "
                                         "commits it archived: restore it from a backup"))
            tl.unreadable = True
            return
        break
    else:
        return
    listed = {timeline_file(ts, action) for ts, action, _ in tl.completed}
    for file, text in entries.items():
        parsed = parse_timeline_file(file)
        if parsed is None or file in listed:  # also in the folder: taken from there
            continue
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        defect = commit_defect(data) if isinstance(data, dict) else "not a JSON object"
        if defect:
            problems.append(Problem("corrupt-metadata", rel, f"its copy of {file}: {defect}"))
            tl.unreadable = True
            continue
        tl.instants.add(parsed.instant)
        tl.archived.add(parsed.instant)
        tl.completed.append((parsed.instant, parsed.action, data))


def _completion(commit: tuple[str, str, dict[str, Any]]) -> str:
    """A completed commit's completion time (its instant for commits written before
    completion times were recorded)."""
    value = commit[2].get("completion_time")
    return value if isinstance(value, str) else commit[0]


def _check_completion_order(tl: _Timeline, report: CheckReport) -> None:
    """The completion order is well formed: completion times unique, none before the commit's
    instant or at or before its base's, and once commits record one every later commit does."""
    seen: dict[str, str] = {}
    first_recorded: str | None = None
    for ts, action, meta in tl.completed:
        rel = timeline_rel(timeline_file(ts, action))
        done = _completion((ts, action, meta))
        if done in seen:
            report.problems.append(Problem(
                "timeline", rel, f"completion time {done} is also that of commit {seen[done]}: "
                                 "the completion order is ambiguous"))
        seen.setdefault(done, ts)
        if "completion_time" in meta:
            first_recorded = first_recorded or done
            if done < ts:
                report.problems.append(Problem(
                    "timeline", rel, f"completion time {done} is before the commit's instant"))
        elif first_recorded is not None:
            report.problems.append(Problem(
                "timeline", rel, f"records no completion time, but its instant {ts} is after "
                                 f"the completion time {first_recorded} of an earlier commit "
                                 "that records one (written by an older evonb?)"))
        base = meta.get("base_completion")
        if isinstance(base, str) and base >= done:
            report.problems.append(Problem(
                "timeline", rel, f"completes at {done}, not after its base commit (completed "
                                 f"at {base})"))


def _reason(exc: MetadataCorruptError) -> str:
    prefix = f"Corrupt table metadata in {exc.path}: "
    return exc.message[len(prefix):] if exc.message.startswith(prefix) else exc.message


def _scan_schemas(root: Path) -> tuple[set[str], set[str], list[str]]:
    """Stored schema versions, stored layouts, and unexpected file names in the folder."""
    folder = evo_dir(root) / SCHEMAS_DIR
    schemas: set[str] = set()
    layouts: set[str] = set()
    odd: list[str] = []
    for name in file_io().names(folder):
        if is_temp_name(name):
            continue
        parsed = parse_schema_file(name)
        if parsed is None:
            odd.append(schemas_rel(name))
        elif parsed.kind == SCHEMA:
            schemas.add(parsed.version)
        else:
            layouts.add(parsed.version)
    return schemas, layouts, odd


# ---------------------------------------------------------------------------------- check
def _pending_timeout(root: Path, properties: Mapping[str, str]) -> float:

    try:
        return float(properties.get(PENDING_TIMEOUT_PROPERTY, DEFAULT_PENDING_TIMEOUT))
    except ValueError:
        return DEFAULT_PENDING_TIMEOUT


def check_table(path: str | os.PathLike[str], *, deep: bool = False) -> CheckReport:
    """Check the table at ``path`` (see the module docstring); no Spark is started.

    Every live data file and log block must exist, have the size its commit recorded and a
    readable Parquet footer or Avro header; ``deep`` also reads every row group and every
    Avro block."""

    root = table_path(path)
    report = CheckReport(table=location_uri(root))
    problems = report.problems
    try:
        config = TableConfig.load(root)
    except TableNotFoundError as exc:
        problems.append(Problem("not-a-table", CONFIG_REL, exc.message))
        return report
    except MetadataCorruptError as exc:
        problems.append(Problem("corrupt-metadata", CONFIG_REL, _reason(exc)))
        return report
    except EvoError as exc:
        problems.append(Problem("corrupt-metadata", CONFIG_REL, exc.message))
        return report
    # Files first, then the timeline: a file of an attempt that starts in between is then
    # attributed to its (pending) instant, never mistaken for an orphan.
    files = _scan_files(root)
    schemas, layouts, odd = _scan_schemas(root)
    tl = _scan_timeline(root, problems)
    _check_attempts(root, config.properties, tl, files, report)
    report.stats = {"commits": len(tl.completed), "archived": len(tl.archived),
                    "pending": len(tl.pending),
                    "schema_versions": len(schemas), "live_files": 0,
                    "latest_commit": tl.completed[-1][0] if tl.completed else None,
                    "schema_version": tl.completed[-1][2]["schema_version"]
                    if tl.completed else None}
    _check_completion_order(tl, report)
    _check_checkpoints(root, tl, report)
    _check_iceberg(root, config, report)
    for rel in odd:
        report.notes.append(Problem("unexpected-file", rel, "not a schema or layout file name"))
    if not tl.completed and not tl.unreadable:
        problems.append(Problem("timeline", TIMELINE_REL,
                                "no completed commit: the table's creation did not finish"))
    if tl.unreadable:
        report.notes.append(Problem(
            "skipped", TIMELINE_REL,
            "file and orphan checks skipped: a completed commit is unreadable"))
        return report
    live_versions = _check_snapshot(root, tl, schemas, layouts, report, deep=deep)
    _check_schemas(root, tl, schemas, layouts, live_versions, report)
    _check_orphans(tl, files, report)
    return report


def _check_checkpoints(root: Path, tl: _Timeline, report: CheckReport) -> None:
    """Notes on timeline checkpoints that readers ignore: unreadable ones, and ones whose copy
    of a completed file differs from the file (readers prove every copy against the store's
    version token, so neither changes a read: a checkpoint is a cache)."""
    folder = evo_dir(root) / TIMELINE_DIR / CHECKPOINT_DIR
    commits = {timeline_file(ts, action): data for ts, action, data in tl.completed}
    fix = "ignored by readers (a cache): delete it"
    for name in sorted(file_io().names(folder)):
        rel = timeline_rel(f"{CHECKPOINT_DIR}/{name}")
        if is_temp_name(name):
            continue
        if not is_checkpoint_name(name):
            report.notes.append(Problem("checkpoint", rel, f"not a checkpoint file name; {fix}"))
            continue
        try:
            entries = parse_checkpoint(read_json(root / rel), str(root / rel))
        except FileNotFoundError:  # replaced by a newer one since the listing
            continue
        except MetadataCorruptError as exc:
            report.notes.append(Problem("checkpoint", rel, f"{_reason(exc)}; {fix}"))
            continue
        for file, content in sorted(entries.items()):
            if file not in commits:  # rolled back or archived since: not used
                continue
            try:
                same = json.loads(content) == commits[file]
            except ValueError:
                same = False
            if not same:
                report.notes.append(Problem(
                    "checkpoint", rel, f"its copy of {file} differs from the commit file; {fix}"))


def _check_iceberg(root: Path, config: TableConfig, report: CheckReport) -> None:
    """With ``evonb.iceberg.enabled``: the record a failed or stopped automatic Iceberg
    publication left (``.evo/iceberg.json``; :mod:`evonb.iceberg.publish`). A failure is a
    problem, a latest state Iceberg cannot express a note."""
    if not config.bool_property(ICEBERG_ENABLED_PROPERTY):
        return
    rel = f"{EVO_DIR}/{ICEBERG_STATUS_FILE}"
    try:
        status = read_json(root / rel)
    except FileNotFoundError:
        return
    except MetadataCorruptError as exc:
        report.problems.append(Problem("iceberg", rel, _reason(exc)))
        return
    status = status if isinstance(status, dict) else {}
    when = f" at commit {status.get('commit')}" if status.get("commit") else ""
    reason = status.get("reason", "no reason recorded")
    if status.get("state") == "blocked":
        report.notes.append(Problem(
            "iceberg-blocked", rel, f"Iceberg metadata stops before the latest state{when}: "
                                    f"{reason}"))
    else:
        report.problems.append(Problem(
            "iceberg", rel, f"publishing Iceberg metadata failed{when}: {reason}; run "
                            "`python -m evonb iceberg sync <table>` to publish it"))


def _check_attempts(root: Path, properties: Mapping[str, str], tl: _Timeline, files: _Files,
                    report: CheckReport) -> None:

    timeout = _pending_timeout(root, properties)
    completed = [(ts, meta) for ts, _, meta in tl.completed]
    for ts, (action, rel, plan) in sorted(tl.pending.items()):
        owned = sum(1 for inst in files.data.values() if inst == ts)
        writer = (plan or {}).get("writer") or {}
        who = (f"pid {writer.get('pid')} on {writer.get('host')}" if writer
               else "an unknown writer")
        what = f"{action} ({(plan or {}).get('operation', action)})"
        lost = None if tl.unreadable else lost_commit(root, ts, action, completed)
        if lost is not None:
            fix = ("repair restores its completed file" if lost.metadata is not None else
                   "its completed file cannot be rebuilt exactly: restore "
                   f"{timeline_rel(timeline_file(ts, action))} from a backup")
            report.problems.append(Problem(
                "lost-commit", timeline_rel(timeline_file(ts, action)),
                f"the completed file of {what} is missing, but the commit happened "
                f"({lost.reason}); its {owned} data files are kept, never rolled back; {fix}",
                repairable=lost.metadata is not None))
            continue
        if plan is None:
            report.problems.append(Problem(
                "corrupt-metadata", timeline_rel(timeline_file(ts, action, REQUESTED)),
                "the plan of a pending attempt is missing or unreadable; "
                "`evonb check --repair --force` rolls the attempt back", repairable=True))
            continue
        if is_abandoned(ts, plan, timeout=timeout):
            report.problems.append(Problem(
                "failed-attempt", rel,
                f"failed {what} by {who} (gone), {owned} data files left; repair rolls it back",
                repairable=True))
        else:
            report.notes.append(Problem(
                "in-progress", rel,
                f"{what} by {who} is in progress (or failed less than {timeout:g}s ago on "
                f"another host), {owned} data files so far"))


def _check_snapshot(root: Path, tl: _Timeline, schemas: set[str], layouts: set[str],
                    report: CheckReport, *, deep: bool = False) -> set[str]:
    """Replay the timeline: live files must exist and read (:func:`file_defect`); commits may
    only remove added files. Returns the schema versions the latest snapshot needs."""
    live: dict[str, dict[str, Any]] = {}
    logs: dict[str, dict[str, Any]] = {}
    ever: set[str] = set()
    added_by: dict[str, str] = {}
    for ts, action, meta in tl.completed:
        for p in meta.get("removed", []):
            if p not in ever:
                report.problems.append(Problem(
                    "timeline", timeline_rel(timeline_file(ts, action)),
                    f"removes {p}, which no earlier commit added"))
            live.pop(p, None)
            logs.pop(p, None)
        for entry in meta.get("added", []):
            ever.add(entry["path"])
            added_by[entry["path"]] = f"{ts} ({meta.get('operation', action)})"
            (logs if entry.get("kind") == "log" else live)[entry["path"]] = entry
    kept_logs = {p: e for p, e in logs.items() if e.get("base") in live}
    report.stats["live_files"] = len(live) + len(kept_logs)
    for p, entry in sorted({**live, **kept_logs}.items()):
        what = "log block" if entry.get("kind") == "log" else "data file"
        if not file_io().exists(root / p):
            report.problems.append(Problem(
                "missing-file", p,
                f"{what} of the latest snapshot (written by commit {added_by[p]}) is missing"))
            continue
        defect = file_defect(root / p, entry, deep=deep)
        if defect:
            report.problems.append(Problem(
                "corrupt-file", p,
                f"{what} of the latest snapshot (written by commit {added_by[p]}): {defect}"))
    needed = {e["version"] for e in (*live.values(), *kept_logs.values())}
    needed.add(tl.completed[-1][2]["schema_version"])
    for v in sorted(needed):
        if v not in schemas:
            report.problems.append(Problem(
                "missing-schema", schemas_rel(schema_file(v)),
                f"schema version {v}, needed by the latest snapshot, is missing"))
        if v not in layouts:
            report.problems.append(Problem(
                "missing-schema", schemas_rel(layout_file(v)),
                f"the layout of schema version {v}, needed by the latest snapshot, is missing"))
    return needed


def _check_schemas(root: Path, tl: _Timeline, schemas: set[str], layouts: set[str],
                   needed: set[str], report: CheckReport) -> None:

    store = SchemaStore(root)
    referenced = set(needed)
    for _, _, meta in tl.completed:
        referenced.add(meta["schema_version"])
        for key in ("base_version", "compacted_version"):
            if isinstance(meta.get(key), str):
                referenced.add(meta[key])
        referenced.update(e["version"] for e in meta.get("added", []))
    for v in sorted(schemas | layouts):
        if v in tl.pending:
            continue  # saved by an attempt in progress (or failed: rollback drops it)
        if v not in referenced:
            for name, present in ((schema_file(v), v in schemas), (layout_file(v), v in layouts)):
                if present:
                    report.problems.append(Problem(
                        "orphan-schema", schemas_rel(name),
                        f"schema version {v} is referenced by no commit; repair removes it",
                        repairable=True))
            continue
        schema = None
        if v in schemas:
            try:
                schema = store.load(v)
            except MetadataCorruptError as exc:
                report.problems.append(Problem(
                    "corrupt-metadata", schemas_rel(schema_file(v)), _reason(exc)))
            except EvoError as exc:
                report.problems.append(Problem(
                    "corrupt-metadata", schemas_rel(schema_file(v)), exc.message))
        if v in layouts and schema is not None:
            try:
                _read_layout(root, v, schema)
            except MetadataCorruptError as exc:
                report.problems.append(Problem(
                    "corrupt-metadata", schemas_rel(layout_file(v)), _reason(exc)))
        if v in schemas and v not in layouts and v not in needed:
            report.problems.append(Problem(
                "missing-schema", schemas_rel(layout_file(v)),
                f"schema version {v} has no layout file"))


def _check_orphans(tl: _Timeline, files: _Files, report: CheckReport) -> None:
    referenced: set[str] = set()
    for _, _, meta in tl.completed:
        referenced.update(e["path"] for e in meta.get("added", []))
    for rel, inst in sorted(files.data.items()):
        if rel in referenced or inst in tl.pending:
            continue
        why = ("its commit does not list it" if any(ts == inst for ts, _, _ in tl.completed)
               else f"instant {inst} is not on the timeline")
        report.problems.append(Problem(
            "orphan-file", rel, f"no commit references this data file ({why}); "
            "repair removes it", repairable=True))
    for rel, inst in sorted(files.staging.items()):
        if inst in tl.pending:
            continue
        report.problems.append(Problem(
            "orphan-staging", rel, "staging folder of no pending attempt; repair removes it",
            repairable=True))
    for rel, inst in sorted(files.retries.items()):
        if inst not in tl.pending:
            report.notes.append(Problem(
                "retry-note", rel, "a write with a retried Spark task stopped before removing "
                "its dead attempts' files (any are reported as orphans); repair removes it"))
    for rel in files.temp:
        report.notes.append(Problem(
            "temp-file", rel, "temporary file of an unfinished metadata write (ignored by "
                              "readers); repair removes it when no attempt is in progress"))


# --------------------------------------------------------------------------------- repair
def repair_table(path: str | os.PathLike[str], *, force: bool = False,
                 deep: bool = False) -> CheckReport:
    """Check, restore lost commits, roll back failed attempts, remove orphans, and check
    again (``deep``: see :func:`check_table`).

    A commit whose completed file went missing is restored when that is provable
    (:func:`evonb.table.rollback.lost_commit`), never rolled back. ``force`` rolls back
    every pending attempt, also those that may still be running (use it only when no writer is
    running, e.g. after a crash on another host); a lost commit is kept even then.
    """

    root = table_path(path)
    before = check_table(root, deep=deep)
    if any(p.kind in ("not-a-table",) for p in before.problems) or (
            any(p.path == CONFIG_REL for p in before.problems)):
        return before
    config = TableConfig.load(root)
    if force:
        config = config.with_properties({PENDING_TIMEOUT_PROPERTY: "-1"})
    table = BaseTable(root, config)
    repaired: list[str] = []
    unreadable = any(p.kind == "skipped" for p in before.notes)
    if not unreadable:
        repaired.extend(f"restored commit {c.instant} ({c.action}): {c.reason}"
                        for c in restore_lost(table))
        rolled = rollback_failed(table)
        repaired.extend(f"rolled back failed attempt {ts}" for ts in rolled)
        with table.locked():
            repaired.extend(_remove_orphans(root))
    after = check_table(root, deep=deep)
    after.repaired = repaired
    after.found_before_repair = list(before.problems)
    if unreadable:
        after.notes.append(Problem("skipped", TIMELINE_REL,
                                   "repair skipped: a completed commit is unreadable"))
    return after


def _remove_orphans(root: Path) -> list[str]:
    """Under the lock: remove orphan data files, staging folders and schema versions, and
    temporary files when no attempt is pending. Returns what was removed."""
    report = check_table(root)
    if any(p.kind == "skipped" for p in report.notes):
        return []
    done: list[str] = []
    for p in report.problems:
        target = root / p.path
        if p.kind in ("orphan-file", "orphan-schema"):
            file_io().delete(target)
            done.append(f"removed {p.path}")
        elif p.kind == "orphan-staging":
            file_io().delete_folder(target)
            done.append(f"removed {p.path}/")
    for p in report.notes:
        if p.kind == "retry-note":  # its instant is not pending (check_table)
            file_io().delete(root / p.path)
            done.append(f"removed {p.path}")
    if not report.stats.get("pending"):
        for p in report.notes:
            if p.kind == "temp-file":
                file_io().delete(root / p.path)
                done.append(f"removed {p.path}")
    return done


__all__ = [
    "CheckReport",
    "Problem",
    "check_table",
    "commit_defect",
    "file_defect",
    "file_error",
    "repair_table",
]
