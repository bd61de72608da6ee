"""The timeline: one file per state of every action taken on a table.

Files live in ``<root>/.evo/timeline``::

    <instant>.<action>.requested   the plan (JSON, may be {})
    <instant>.<action>.inflight    work under way (JSON, may be {})
    <instant>.<action>             completed: the commit metadata (JSON object)

The completed file is the commit point: it is published exclusively (never overwritten), so of
two writers completing the same instant exactly one wins. Requested and inflight files stay after
completion; right after the commit point the inflight record gets a copy of the commit (key
``commit``), which proves the commit should its completed file ever go missing. An instant with
no completed file is *pending* (in progress, or a failed attempt for rollback to clean up,
unless it provably committed: :func:`evonb.table.rollback.lost_commit`). Names that do not
follow the pattern, and temporary files of atomic writes, are ignored.

**Completion order.** The instant is when an action *started*; commits that overlap in time may
complete in another order. Every completed file records ``completion_time`` (17 digits, like an
instant), assigned by :meth:`Timeline.complete` under the table lock: later than every completion
time on the timeline, never before the commit's own instant. It is written inside the completed
file, so a commit and its place in the order are published together or not at all. Commits
written before completion times existed have none: their completion time is their instant (they
were written under a rule that made commits complete in instant order), and they all come before
the commits that have one. :meth:`Timeline.completed` lists commits in completion order, and
snapshots, time travel, incremental reads and conflict checks all use that order.

**The archive.** So that the folder, and the listing every read makes of it, stay bounded
however long the history, old commits leave it for ``archive/<completion>.archive.json``
(:meth:`Timeline.archive`, run by the writer that completes a commit once twice
``evonb.timeline.archive.keep`` completed files are in the folder). Unlike a checkpoint, the
latest archive is authoritative: it holds the only copy of the commits it archived, every
archive holds those of the one before, and a reader reads it after listing the folder and
reading the files it found (docs/format.md, *The archive*). Archived commits are read like
the others; they cannot be rolled back.

**Checkpoints.** Reading the timeline needs every completed file's content (its completion
time orders it): on object storage, one request per commit. So on a store whose version tokens
are derived from the content (S3's ETag of an object written in one PUT:
:meth:`~evonb.table.fileio.FileIO.content_version`), the writer that completes a commit also
writes a checkpoint once ``evonb.timeline.checkpoint.every`` commits (default
:data:`DEFAULT_CHECKPOINT_EVERY`; ``0``: never) completed after the latest one:
``checkpoints/<completion>.checkpoint.json`` in the timeline folder, written once under a
unique name (``write_if_absent``), holding the bytes of every completed file up to it. A reader
lists the timeline folder as always (one request per 1,000 files on S3) and takes a completed
file's bytes from the latest checkpoint only when they hash to the version token the listing
gives for that file: a checkpoint can never be trusted over a commit file. It is a pure cache:
a commit removed since (a rollback) is not listed and so not used, a commit added since
is read from its file, a checkpoint that does not parse is skipped (``evonb check`` reports
it), and deleting checkpoints changes nothing but the number of requests. Local tables write
none (their version tokens prove nothing about content; reading a local file is cheap). The
commit protocol does not depend on checkpoints.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from enum import Enum
from typing import Any

from evonb.errors import CommitNotFoundError, ConflictError, EvoError, MetadataCorruptError
from evonb.table.commit import CommitMetadata
from evonb.table.config import TableConfig
from evonb.table.fileio import FileInfo, file_io
from evonb.table.fsutil import (
    FileCache,
    atomic_write_bytes,
    atomic_write_json,
    dump_json,
    evo_dir,
    is_temp_name,
    nested_hold,
    parse_json_bytes,
    read_json,
    table_path,
)
from evonb.table.instants import (
    add_millis,
    format_instant,
    instant_from_datetime,
    is_instant,
    new_instant,
    parse_instant,
)
from evonb.table.names import (
    TIMELINE_DIR,
    parse_timeline_file,
    timeline_file,
    timeline_prefix,
)

ACTIONS = frozenset(
    {
        "create",
        "commit",
        "deltacommit",
        "alter",
        "replacecommit",
        "compaction",
        "clean",
        "rollback",
    }
)
"""Actions that may be written. Reading accepts any lower-case action name."""

COMPLETION_KEY = "completion_time"
"""The key of the completion time in a completed file's JSON."""

COMMIT_COPY_KEY = "commit"
"""The key of the copy of the completed commit in an inflight record (written right after the
commit point: :meth:`Timeline.complete`)."""

REQUESTED_ATTEMPTS = 12
"""How often :meth:`Timeline.requested` retries with a later instant after a clash."""

CHECKPOINT_DIR = "checkpoints"
"""The folder of checkpoints, inside the timeline folder (see the module docstring)."""

CHECKPOINT_PROPERTY = "evonb.timeline.checkpoint.every"
"""The table property: write a checkpoint every this many completed commits (``0``: never)."""

DEFAULT_CHECKPOINT_EVERY = 50

CHECKPOINT_FORMAT = 1

CHECKPOINTS_KEPT = 2
"""Checkpoints left in place after a new one is written (a reader may still be reading the one
before)."""

_CHECKPOINT_NAME = re.compile(r"(?P<completion>\d{17})\.checkpoint\.json")

ARCHIVE_DIR = "archive"
"""The folder of archives, inside the timeline folder (see the module docstring)."""

ARCHIVE_PROPERTY = "evonb.timeline.archive.keep"
"""The table property: once twice this many completed commits have files in the timeline
folder, the oldest are archived down to this many (``0``: never)."""

DEFAULT_ARCHIVE_KEEP = 100

ARCHIVES_KEPT = 2
"""Archives left in place after a new one is written (a reader may still be reading the one
before; every archive holds all the commits of the ones before it)."""

_ARCHIVE_NAME = re.compile(r"(?P<completion>\d{17})\.archive\.json")


def checkpoint_name(completion: str) -> str:
    """The file name of the checkpoint that ends at the commit completed at ``completion``."""
    return f"{completion}.checkpoint.json"


def is_checkpoint_name(name: str) -> bool:
    """Whether ``name`` is a checkpoint's file name."""
    return _CHECKPOINT_NAME.fullmatch(name) is not None


def archive_name(completion: str) -> str:
    """The file name of the archive that ends at the commit completed at ``completion``."""
    return f"{completion}.archive.json"


def is_archive_name(name: str) -> bool:
    """Whether ``name`` is an archive's file name."""
    return _ARCHIVE_NAME.fullmatch(name) is not None


def parse_checkpoint(data: Any, where: str, kind: str = "checkpoint") -> dict[str, str]:
    """The entries of a checkpoint's (or an archive's: ``kind``) JSON: the content of each
    completed file by its name; :class:`MetadataCorruptError` naming ``where`` if it is not
    one."""
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise MetadataCorruptError(where, f"not a{'n' if kind[0] in 'aeiou' else ''} {kind} "
                                          f"of format {CHECKPOINT_FORMAT}")
    commits = data.get("commits")
    if not isinstance(commits, list):
        raise MetadataCorruptError(where, f"a {kind}'s 'commits' must be a list")
    out: dict[str, str] = {}
    for entry in commits:
        parsed = (parse_timeline_file(entry["file"])
                  if isinstance(entry, dict) and isinstance(entry.get("file"), str) else None)
        if (parsed is None or parsed.state != State.COMPLETED.value
                or not isinstance(entry.get("content"), str)):
            raise MetadataCorruptError(where, f"a {kind} entry is malformed: {entry!r:.200}")
        out[entry["file"]] = entry["content"]
    return out


class State(Enum):
    """The state of an instant; completed is the commit point."""

    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


@dataclass(frozen=True)
class Instant:
    """One file on the timeline: an action at a timestamp, in a state."""

    timestamp: str
    action: str
    state: State

    @property
    def file_name(self) -> str:
        return timeline_file(self.timestamp, self.action, self.state.value)

    @property
    def sort_key(self) -> tuple[str, int, str]:
        return (self.timestamp, self.state.rank, self.action)

    def with_state(self, state: State) -> Instant:
        return Instant(self.timestamp, self.action, state)

    def __str__(self) -> str:
        return f"{self.timestamp} {self.action} ({self.state.value})"


@dataclass(frozen=True)
class CommitRecord:
    """A completed instant and its commit metadata (:class:`CommitMetadata`: typed, frozen,
    validated; a mapping given here is checked and converted)."""

    instant: str
    action: str
    metadata: CommitMetadata = field(default_factory=dict, hash=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, CommitMetadata):
            object.__setattr__(self, "metadata", CommitMetadata.parse(
                dict(self.metadata), where=f"commit {self.instant}", require_schema=False))

    @property
    def operation(self) -> str:
        """The user-level operation (``"upsert"``, ``"add column"``, ...); the action if unset."""
        return str(self.metadata.get("operation", self.action))

    @property
    def schema_version(self) -> str:
        """The schema version the commit was written with (``KeyError`` if not recorded)."""
        return str(self.metadata["schema_version"])

    @property
    def completion(self) -> str:
        """When the commit completed (``completion_time``): its position in completion order.

        Commits written before completion times were recorded complete at their instant."""
        value = self.metadata.get(COMPLETION_KEY)  # checked when read (commit_defect)
        return value if isinstance(value, str) and len(value) == 17 else self.instant

    @property
    def has_completion(self) -> bool:
        """Whether the commit records its completion time (commits of older versions do not)."""
        return COMPLETION_KEY in self.metadata

    @property
    def order(self) -> tuple[str, str]:
        """The sort key of completion order (the instant only breaks ties of damaged tables)."""
        return (self.completion, self.instant)

    @property
    def time(self) -> datetime:
        """The instant as a UTC datetime."""
        return parse_instant(self.instant)

    @property
    def completed_at(self) -> datetime:
        """The completion time as a UTC datetime."""
        return parse_instant(self.completion)

    def __str__(self) -> str:
        text = f"{self.instant} {self.action}"
        if self.operation != self.action:
            text += f" [{self.operation}]"
        if "schema_version" in self.metadata:
            text += f" schema={self.metadata['schema_version']}"
        return text


InstantRef = str | Instant | CommitRecord


def _timestamp(ref: InstantRef) -> str:
    if isinstance(ref, Instant):
        return ref.timestamp
    if isinstance(ref, CommitRecord):
        return ref.instant
    return ref


def _point(ref: InstantRef | datetime | date) -> str:
    """A timestamp from an instant, a record, a datetime or ISO text."""
    if isinstance(ref, (Instant, CommitRecord)):
        return _timestamp(ref)
    if isinstance(ref, str) and is_instant(ref):
        return ref
    return instant_from_datetime(ref)


def instant_on_timeline(root: str | os.PathLike[str], instant: str) -> bool:
    """Whether the timeline of the table at ``root`` still has a file of ``instant`` (requested,
    inflight or completed): False once a rollback has aborted the attempt. Spark tasks that
    write into the table folder ask it after placing a file, so that a task outliving its
    killed driver does not leave a file behind the rollback of its attempt."""
    prefix = timeline_prefix(instant)
    return any(n.startswith(prefix) for n in file_io().names(evo_dir(root) / TIMELINE_DIR))


def _is_completed_name(name: str) -> bool:
    """Whether a timeline file name is a completed commit's."""
    parsed = parse_timeline_file(name)
    return parsed is not None and parsed.state == State.COMPLETED.value


def _instants_of(names: Iterable[str]) -> list[Instant]:
    """The instants of timeline file names (others ignored), sorted by timestamp."""
    out: list[Instant] = []
    for name in names:
        if is_temp_name(name):
            continue
        parsed = parse_timeline_file(name)
        if parsed is not None:
            out.append(Instant(parsed.instant, parsed.action, State(parsed.state)))
    out.sort(key=lambda i: i.sort_key)
    return out


class Timeline:
    """The timeline of the table at ``root`` (see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = table_path(root)
        self.path = evo_dir(root) / TIMELINE_DIR
        self.checkpoints = self.path / CHECKPOINT_DIR
        self.archives = self.path / ARCHIVE_DIR
        self.io = file_io()
        # Completed files by name: the version token of the listing they were read under, the
        # parsed record and the bytes; and the last checkpoint read (name, version, entries).
        self._records: dict[str, tuple[Hashable, CommitRecord, bytes]] = {}
        self._checkpoint: tuple[str, Hashable, dict[str, str]] | None = None
        # The last archive read: name, version token, and its commits by file name.
        self._archive: tuple[str, Hashable, dict[str, tuple[CommitRecord, bytes]]] | None = None
        self._cache_lock = threading.Lock()
        self.settings: Callable[[], TableConfig] | None = None
        """Where the table's config comes from, when a table owns this timeline (its cached
        config, held for the span of one operation: ``BaseTable.config_held``); else the
        config file is read when a setting is needed."""
        self._held = threading.local()  # the listing reused in :meth:`listing_held`
        self._config_file: FileCache[TableConfig] = FileCache()  # for the count properties

    def __repr__(self) -> str:
        return f"Timeline({str(self.root)!r})"

    # ------------------------------------------------------------------ listing
    def _scan(self) -> list[Instant]:
        return _instants_of(self.io.names(self.path))

    def instants(self, states: Iterable[State] | None = None) -> list[Instant]:
        """Every instant file (optionally only those in ``states``), sorted by timestamp."""
        found = self._scan()
        if states is None:
            return found
        wanted = set(states)
        return [i for i in found if i.state in wanted]

    def latest_timestamp(self) -> str | None:
        """The greatest timestamp on the timeline, in any state."""
        found = [p.instant for p in map(parse_timeline_file, self.io.names(self.path))
                 if p is not None]  # temporary names do not parse
        return max(found, default=None)

    def completed(self) -> list[CommitRecord]:
        """Every completed commit, in completion order (see the module docstring).

        The folder is listed on every call; parsed metadata is kept by file name and the
        version token the listing gives, so repeated calls read nothing else. Files not read
        yet come from the latest checkpoint where it holds them unchanged (see the module
        docstring), else from the files themselves.
        """
        return self._completed(self._listing())[0]

    def _listing(self) -> dict[str, FileInfo]:
        held = self._held
        if getattr(held, "depth", 0):
            if getattr(held, "listing", None) is None:
                held.listing = self._list_now()
            return held.listing
        return self._list_now()

    def _list_now(self) -> dict[str, FileInfo]:
        # Only completed files are read from a listing: only theirs are looked up (on a local
        # disk, one stat each; requested and inflight files are two in three of a folder).
        return {f.name: f for f in self.io.list_where(self.path, _is_completed_name)}

    @contextmanager
    def listing_held(self) -> Iterator[None]:
        """Inside, in this thread, the completed commits (:meth:`completed` and what builds on
        it) come from one listing of the folder, made at the first read and made again after
        this timeline completes or removes a commit, or after :meth:`forget_listing`. For the
        span of a commit under the table lock, where no other writer completes or removes a
        commit: the schema check, the conflict check and the completion time then cost one
        listing (one request on object storage) instead of one each. Only completed files are
        read from it (requested and inflight files, which writers add without the lock, are
        always listed afresh).

        Held before the lock (a DDL reads its base schema and base commit from one listing),
        the listing is forgotten when the lock is taken (``BaseTable.locked``), so what is
        checked under the lock is always listed under it."""
        with nested_hold(self._held, self._changed):
            yield

    def _changed(self) -> None:
        """This timeline completed, removed or archived a commit: a held listing is out of
        date."""
        self._held.listing = None
        self._held.archive = None
        self._held.memo = None

    def forget_listing(self) -> None:
        """Drop the listing :meth:`listing_held` holds in this thread: the next read lists
        the folder again (taking the table lock calls it)."""
        self._changed()

    def _published(self, inst: Instant, data: bytes) -> None:
        """This timeline just published the completed file of ``inst`` with ``data``. On a
        store whose version tokens come from the content (S3), a held listing gets the file
        and the parsed-record cache its record, under the version a listing will give: the
        checkpoint that may follow, and the reads after it under the lock, neither list the
        folder again nor read back the file just written. Elsewhere the listing is dropped."""
        path = self.path / inst.file_name
        version = self.io.content_version(path, data)
        held = self._held
        kept = data
        if version is None:  # local disk: the token is the file's stat, taken now (under the
            try:             # lock no one else writes a completed file)
                version = self.io.info(path).version
            except OSError:
                held.listing = None
                return
            kept = b""  # as _read_record keeps it: these tokens prove nothing about content
        record = self._parse_record(inst, parse_json_bytes(data, str(path)))
        with self._cache_lock:
            self._records[inst.file_name] = (version, record, kept)
        if getattr(held, "listing", None) is not None:
            held.listing = {**held.listing, inst.file_name: FileInfo(inst.file_name, len(data),
                                                                     version)}

    def _completed(self, listed: Mapping[str, FileInfo]
                   ) -> tuple[list[CommitRecord], dict[str, str]]:
        """The completed commits of a listing of the timeline folder and of the latest
        archive (listed after it: see :meth:`archive`), in completion order, and the file name
        of each by instant. Inside :meth:`listing_held`, the same listing and archive give the
        result worked out the first time (a copy)."""
        held = self._held
        memo = getattr(held, "memo", None)
        if (memo is not None and getattr(held, "depth", 0) and memo[0] is listed
                and memo[1] is getattr(held, "archive", None)):
            return list(memo[2]), dict(memo[3])
        done = []
        for name in listed:
            parsed = parse_timeline_file(name)
            if parsed is not None and parsed.state == State.COMPLETED.value:
                done.append(Instant(parsed.instant, parsed.action, State.COMPLETED))
        records: list[CommitRecord] = []
        files: dict[str, str] = {}
        with self._cache_lock:
            unread = [i for i in done if not self._fresh(i.file_name, listed)]
            if len(unread) > 1:
                self._from_checkpoint(unread, listed)
            for inst in done:
                name = inst.file_name
                version = listed[name].version
                hit = self._records.get(name)
                if hit is None or hit[0] != version:
                    try:
                        hit = (version, *self._read_record(inst))
                    except FileNotFoundError:  # removed since the listing: archived, or
                        continue               # rolled back
                    self._records[name] = hit
                records.append(hit[1])
                files[inst.timestamp] = name
            live = {i.file_name for i in done}
            for stale in [k for k in self._records if k not in live]:
                del self._records[stale]
        # After the files are read: a file gone by then was archived before it was deleted,
        # so the archive listed now holds it (or it was rolled back, and no archive does).
        read = set(files.values())
        for name, (record, _) in self._archived().items():
            if name not in read:  # its files are gone (or going) from the folder
                records.append(record)
                files.setdefault(record.instant, name)
        records.sort(key=lambda r: r.order)
        if getattr(held, "depth", 0) and listed is getattr(held, "listing", None):
            held.memo = (listed, getattr(held, "archive", None), list(records), dict(files))
        return records, files

    def _fresh(self, name: str, listed: Mapping[str, FileInfo]) -> bool:
        hit = self._records.get(name)
        return hit is not None and hit[0] == listed[name].version

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_names(self) -> list[str]:
        """The checkpoints' file names, oldest first."""
        return sorted(n for n in self.io.names(self.checkpoints) if is_checkpoint_name(n))

    def _from_checkpoint(self, unread: list[Instant], listed: Mapping[str, FileInfo]) -> None:
        """Fill the cache with the commits of ``unread`` whose content the latest readable
        checkpoint holds, each proved to be the listed file's by the store's version token
        (:meth:`~evonb.table.fileio.FileIO.content_version`); call under the cache lock."""
        entries = self._latest_checkpoint()
        for inst in unread:
            text = entries.get(inst.file_name)
            if text is None:
                continue
            path = self.path / inst.file_name
            raw = text.encode("utf-8")
            version = listed[inst.file_name].version
            if self.io.content_version(path, raw) != version:
                continue  # not the listed file's content: the file is read instead
            try:
                record = self._parse_record(inst, parse_json_bytes(raw, str(path)))
            except EvoError:
                continue
            self._records[inst.file_name] = (version, record, raw)

    def _latest_checkpoint(self) -> dict[str, str]:
        """The entries of the newest checkpoint that parses (the one before is tried when the
        newest fails); empty if there is none, or the store cannot prove entries anyway."""
        if self.io.content_version(self.checkpoints, b"") is None:
            return {}
        listed = {f.name: f for f in self.io.list(self.checkpoints) if is_checkpoint_name(f.name)}
        for name in sorted(listed, reverse=True)[:CHECKPOINTS_KEPT]:
            version = listed[name].version
            if self._checkpoint is not None and self._checkpoint[:2] == (name, version):
                return self._checkpoint[2]
            try:
                entries = parse_checkpoint(read_json(self.checkpoints / name),
                                           str(self.checkpoints / name))
            except (OSError, EvoError):  # unreadable or removed: ignored (check reports it)
                continue
            self._checkpoint = (name, version, entries)
            return entries
        return {}

    def _count_property(self, name: str, default: int) -> int:
        """A whole-number table property, at least 0; ``default`` when the table's config
        cannot be read or the value is not a whole number."""
        path = TableConfig.path(self.root)
        try:
            if self.settings is not None:
                config = self.settings()
            elif self.io.content_version(path, b"") is None:  # a local disk: a stat is cheaper
                config = self._config_file.get(path, lambda _: TableConfig.load(self.root))
            else:  # an object store: asking for the version costs a request, as the read does
                config = TableConfig.load(self.root)
            value = config.int_property(name, default)
        except (OSError, EvoError):
            return default
        return max(value, 0)

    def checkpoint_every(self) -> int:
        """The table's checkpoint interval (:data:`CHECKPOINT_PROPERTY`)."""
        return self._count_property(CHECKPOINT_PROPERTY, DEFAULT_CHECKPOINT_EVERY)

    def write_checkpoint(self, *, every: int | None = None) -> str | None:
        """Write a checkpoint of every completed commit if at least ``every`` (default: the
        table's :data:`CHECKPOINT_PROPERTY`) completed after the latest one, on a store whose
        version tokens prove content (:meth:`~evonb.table.fileio.FileIO.content_version`:
        elsewhere readers could not use it); its file name, or None when none was written.
        Older checkpoints but :data:`CHECKPOINTS_KEPT` - 1 are removed."""
        if self.io.content_version(self.checkpoints, b"") is None:
            return None
        every = self.checkpoint_every() if every is None else every
        if every <= 0:
            return None
        names = self.checkpoint_names()
        match = _CHECKPOINT_NAME.fullmatch(names[-1]) if names else None
        last = match["completion"] if match else ""
        records, files = self._completed(self._listing())
        if not records or sum(r.completion > last for r in records) < every:
            return None
        with self._cache_lock:
            commits = [{"file": files[r.instant],
                        "content": self._records[files[r.instant]][2].decode("utf-8")}
                       for r in records if self._records.get(files[r.instant], (0, 0, b""))[2]]
        name = checkpoint_name(records[-1].completion)
        body = {"format": CHECKPOINT_FORMAT, "completion": records[-1].completion,
                "commits": commits}
        try:
            self.io.write_if_absent(self.checkpoints / name,
                                    json.dumps(body, separators=(",", ":")).encode())
        except FileExistsError:
            return None
        for old in names[: max(len(names) - (CHECKPOINTS_KEPT - 1), 0)]:
            self.io.delete(self.checkpoints / old)
        return name

    # ------------------------------------------------------------------ archives
    def _archived(self) -> dict[str, tuple[CommitRecord, bytes]]:
        """The commits of the latest archive by file name, with their bytes; empty if the
        table has none. Inside :meth:`listing_held` the archive folder is listed once. The
        latest archive holds every commit ever archived, so an unreadable one is an error
        (never a silent fall back to an older one, which would miss commits)."""
        held = self._held
        if getattr(held, "depth", 0) and getattr(held, "archive", None) is not None:
            return held.archive  # type: ignore[no-any-return]
        for _ in range(3):  # replaced and removed between the listing and the read: again
            listed = {f.name: f for f in self.io.list(self.archives) if is_archive_name(f.name)}
            if not listed:
                found: dict[str, tuple[CommitRecord, bytes]] = {}
                break
            name = max(listed)
            cached = self._archive
            if cached is not None and cached[:2] == (name, listed[name].version):
                found = cached[2]
                break
            try:
                found = self._read_archive(name)
            except FileNotFoundError:
                continue
            self._archive = (name, listed[name].version, found)
            break
        else:
            raise MetadataCorruptError(str(self.archives), "the latest archive keeps "
                                       "vanishing between listing and reading it")
        if getattr(held, "depth", 0):
            held.archive = found
        return found

    def _read_archive(self, name: str) -> dict[str, tuple[CommitRecord, bytes]]:
        """The commits of one archive (:class:`MetadataCorruptError` naming it if it does
        not parse: it holds the only copy of the commits it archived)."""
        path = self.archives / name
        try:
            entries = parse_checkpoint(parse_json_bytes(self.io.read(path), str(path)),
                                       str(path), kind="archive")
        except MetadataCorruptError as exc:  # the reason, and what repair cannot do
            reason = exc.message.removeprefix(f"Corrupt table metadata in {exc.path}: ")
            raise MetadataCorruptError(
                str(path), f"{reason}; it holds the only copy of the commits it archived, "
                           "which no repair can rebuild: restore this file from a backup of "
                           "the table") from None
        out = {}
        for file, text in entries.items():
            parsed = parse_timeline_file(file)
            assert parsed is not None  # checked by parse_checkpoint
            raw = text.encode("utf-8")
            inst = Instant(parsed.instant, parsed.action, State.COMPLETED)
            out[file] = (self._parse_record(inst, parse_json_bytes(raw, f"{path}: {file}")), raw)
        return out

    def archived_instants(self) -> set[str]:
        """The instants of commits held by the latest archive only (their files have left
        the timeline folder): they are read as ever, but cannot be rolled back."""
        listed = self._listing()
        _, files = self._completed(listed)
        return {ts for ts, name in files.items() if name not in listed}

    def archive_keep(self) -> int:
        """The table's :data:`ARCHIVE_PROPERTY`."""
        return self._count_property(ARCHIVE_PROPERTY, DEFAULT_ARCHIVE_KEEP)

    def archive(self, *, keep: int | None = None) -> str | None:
        """Archive old commits (call under the table lock): once at least twice ``keep``
        (default: the table's :data:`ARCHIVE_PROPERTY`) completed commits have files in the
        timeline folder, move all but the latest ``keep`` of them into a new archive, never
        one later than the oldest pending instant. Returns the archive's file name, or None
        when none was written.

        The archive holds the bytes of every commit of the archive before it and of the
        commits archived now, and is written once under a unique name (``write_if_absent``)
        *before* any file is removed: a reader lists the folder, reads the commits it found,
        then lists the archives, so a commit file gone from under it is in the archive it
        lists. Then each archived commit's requested and inflight files are removed, its
        completed file last (a listing never sees a pending attempt where a commit was); a
        crash midway leaves commits in both places, which readers take once and the next
        archiving removes. Archives but the latest :data:`ARCHIVES_KEPT` are removed."""
        keep = self.archive_keep() if keep is None else keep
        if keep <= 0:
            return None
        listed = self._listing()  # completed files only (:meth:`_list_now`)
        if len(listed) < 2 * keep:
            return None  # too few to archive: known from the listing, nothing read
        records, files = self._completed(listed)
        active = [r for r in records if files[r.instant] in listed]
        if len(active) < 2 * keep:
            return None
        names = set(self.io.names(self.path))  # afresh: attempts start without the lock
        floor = min((i.timestamp for i in self._pending_of(names)), default=None)
        batch = []
        for r in active[: len(active) - keep]:
            if floor is not None and r.instant >= floor:
                break
            batch.append(r)
        if not batch:
            return None
        content = {name: raw for name, (_, raw) in self._archived().items()}
        if all(files[r.instant] in content for r in batch):  # an archiving cut short: its
            name = max(n for n in self.io.names(self.archives) if is_archive_name(n))
        else:                                                # archive, files still here
            for r in batch:
                file = files[r.instant]
                with self._cache_lock:
                    raw = self._records.get(file, (None, None, b""))[2]
                content[file] = raw or self.io.read(self.path / file)
            order_of = {files[r.instant]: r.order for r in records}
            order = sorted(content, key=lambda n: order_of.get(n, ("", n)))
            name = archive_name(batch[-1].completion)
            body = {"format": CHECKPOINT_FORMAT, "completion": batch[-1].completion,
                    "commits": [{"file": n, "content": content[n].decode("utf-8")}
                                for n in order]}
            try:
                self.io.write_if_absent(self.archives / name,
                                        json.dumps(body, separators=(",", ":")).encode())
            except FileExistsError:
                return None
            self._changed()
        self._remove_archived([n for n in content if n in names], names)
        older = sorted(n for n in self.io.names(self.archives) if is_archive_name(n) and n < name)
        for old in older[: max(len(older) - (ARCHIVES_KEPT - 1), 0)]:
            self.io.delete(self.archives / old)
        self._changed()
        return name

    def _remove_archived(self, gone: list[str], names: set[str]) -> None:
        """Remove the timeline files (of ``names``) of the archived commits ``gone`` (their
        completed file names): every requested and inflight file first, the completed files
        last."""
        for state in (State.REQUESTED, State.INFLIGHT):
            for n in gone:
                pending = f"{n}.{state.value}"
                if pending in names:
                    self.io.delete(self.path / pending)
        for n in gone:
            self.io.delete(self.path / n)
        with self._cache_lock:
            for n in gone:
                self._records.pop(n, None)

    def _read_record(self, inst: Instant) -> tuple[CommitRecord, bytes]:
        """A completed file's record, and its bytes where checkpoints can use them (on a store
        whose version tokens prove content; else empty)."""
        path = self.path / inst.file_name
        if self.io.content_version(path, b"") is None:
            return self._parse_record(inst, read_json(path)), b""
        raw = self.io.read(path)
        return self._parse_record(inst, parse_json_bytes(raw, str(path))), raw

    def _parse_record(self, inst: Instant, data: Any) -> CommitRecord:
        # Never a silently wrong read, nor an error from deep inside a replay.
        meta = CommitMetadata.parse(data, where=str(self.path / inst.file_name),
                                    require_schema=False)
        return CommitRecord(inst.timestamp, inst.action, meta)

    def pending(self) -> list[Instant]:
        """Requested or inflight instants without a completed file (furthest state of each)."""
        return self._pending_of(self.io.names(self.path))

    @staticmethod
    def _pending_of(names: Iterable[str]) -> list[Instant]:
        best: dict[str, Instant] = {}
        done: set[str] = set()
        for inst in _instants_of(names):
            if inst.state is State.COMPLETED:
                done.add(inst.timestamp)
            elif inst.timestamp not in best or inst.state.rank > best[inst.timestamp].state.rank:
                best[inst.timestamp] = inst
        return [i for ts, i in sorted(best.items()) if ts not in done]

    def last_completed(self) -> CommitRecord | None:
        """The commit that completed last, or None on an empty timeline."""
        done = self.completed()
        return done[-1] if done else None

    def is_completed(self, instant: InstantRef) -> bool:
        ts = _timestamp(instant)
        return (any(i.timestamp == ts and i.state is State.COMPLETED for i in self._scan())
                or any(r.instant == ts for r, _ in self._archived().values()))

    # ------------------------------------------------------------------ lookups
    @staticmethod
    def _nearest(records: list[CommitRecord], ts: str, n: int = 3) -> list[str]:
        keys = sorted(r.instant for r in records)
        pos = bisect.bisect_left(keys, ts)
        return keys[max(0, pos - n) : pos] + [k for k in keys[pos : pos + n] if k != ts]

    def get(self, instant: InstantRef) -> CommitRecord:
        """The completed commit at ``instant``; :class:`CommitNotFoundError` names the nearest."""
        ts = _timestamp(instant)
        records = self.completed()
        for r in records:
            if r.instant == ts:
                return r
        raise CommitNotFoundError(ts, self._nearest(records, ts), what="commit")

    def completion_of(self, ref: InstantRef | datetime | date,
                      records: list[CommitRecord] | None = None) -> str:
        """A point in completion order: the completion time of the commit ``ref`` names (a
        record, or the instant of a completed commit), else ``ref`` read as a point in time (a
        datetime, ISO text, or an instant no completed commit has)."""
        if isinstance(ref, CommitRecord):
            return ref.completion
        ts = _point(ref)
        if isinstance(ref, (str, Instant)) and is_instant(_timestamp(ref)):
            for r in records if records is not None else self.completed():
                if r.instant == ts:
                    return r.completion
        return ts

    def completed_after(self, ref: InstantRef | datetime | date) -> list[CommitRecord]:
        """Commits that completed after ``ref`` (see :meth:`completion_of`), in completion
        order. For the instant of a commit no longer on the timeline this is every commit that
        completed after that instant: a superset, as conflict checks need."""
        records = self.completed()
        point = self.completion_of(ref, records)
        return [r for r in records if r.completion > point]

    def completed_between(
        self, start: InstantRef | datetime | date, end: InstantRef | datetime | date
    ) -> list[CommitRecord]:
        """Commits that completed after ``start`` and at or before ``end`` (start exclusive,
        end inclusive; each resolved by :meth:`completion_of`), in completion order."""
        records = self.completed()
        lo, hi = self.completion_of(start, records), self.completion_of(end, records)
        return [r for r in records if lo < r.completion <= hi]

    def latest_at_or_before(self, instant: InstantRef | datetime | date) -> CommitRecord:
        """The last commit completed at or before ``instant`` (a commit's instant: that commit;
        a datetime or ISO text: completion time at or before it); :class:`CommitNotFoundError`
        if the table has none that early."""
        records = self.completed()
        point = self.completion_of(instant, records)
        found = [r for r in records if r.completion <= point]
        if not found:
            raise CommitNotFoundError(_point(instant), self._nearest(records, ""),
                                      what="commit at or before")
        return found[-1]

    def next_completion(self, after: str | None = None) -> str:
        """The completion time a commit completing now gets (call under the table lock): the
        current time, bumped past the last completion time on the timeline (and ``after``)."""
        floor = max((r.completion for r in self.completed()), default=None)
        if after is not None and (floor is None or after > floor):
            floor = after
        now = format_instant(datetime.now(UTC))
        return now if floor is None or now > floor else add_millis(floor, 1)

    def read(self, instant: Instant) -> Any:
        """The JSON content of one instant file (a plan, inflight data or commit metadata)."""
        return read_json(self.path / instant.file_name)

    # ------------------------------------------------------------------ writing
    def _check_action(self, action: str) -> None:
        if action not in ACTIONS:
            raise ValueError(
                f"unknown timeline action {action!r}; expected one of {sorted(ACTIONS)}"
            )

    def _files_at(self, ts: str) -> list[Instant]:
        prefix = timeline_prefix(ts)
        return _instants_of(n for n in self.io.names(self.path) if n.startswith(prefix))

    def _resolve(self, instant: InstantRef) -> Instant:
        """The requested/inflight instant for ``instant`` (a timestamp or an Instant)."""
        if isinstance(instant, Instant):
            return instant
        ts = _timestamp(instant)
        at = self._files_at(ts)
        if not at:
            raise CommitNotFoundError(ts, [i.timestamp for i in self.pending()][-3:],
                                      what="pending instant")
        return at[-1]

    def requested(
        self, action: str, *, plan: dict[str, Any] | None = None, instant: str | None = None
    ) -> Instant:
        """Start an action: write ``<instant>.<action>.requested`` and return its instant.

        Without ``instant``, a fresh one later than every instant on the timeline is picked; on a
        clash with another writer, a later one is tried (up to :data:`REQUESTED_ATTEMPTS` times).
        A given ``instant`` that is taken raises :class:`ConflictError`. A timestamp is used by
        one action only: if two writers publish the same timestamp under different actions, a
        writer that sees the other's file withdraws its own (both may withdraw; neither keeps a
        duplicate).
        """
        self._check_action(action)
        if instant is not None and not is_instant(instant):
            raise ValueError(f"not an instant: {instant!r}")
        body = dict(plan or {})
        for attempt in range(REQUESTED_ATTEMPTS):
            ts = instant or new_instant(after=self.latest_timestamp())
            inst = Instant(ts, action, State.REQUESTED)
            target = self.path / inst.file_name
            try:
                atomic_write_json(target, body, exclusive=True)
            except FileExistsError:
                clash = True
            else:
                others = [i for i in self._files_at(ts) if i.action != action]
                clash = bool(others)
                if clash:
                    self.io.delete(target)
                else:
                    return inst
            if instant is not None:
                raise ConflictError(f"Instant {ts} is already used on the timeline", winner=ts)
            time.sleep(random.uniform(0, 0.002) * (attempt + 1))
        raise ConflictError(
            f"Could not reserve a new instant for {action!r} after {REQUESTED_ATTEMPTS} attempts"
        )

    def _require_requested(self, inst: Instant) -> None:
        if not self.io.exists(self.path / inst.with_state(State.REQUESTED).file_name):
            raise ConflictError(
                f"Instant {inst.timestamp} ({inst.action}) has no requested file: it was rolled "
                "back or never started"
            )

    def inflight(self, instant: InstantRef, data: dict[str, Any] | None = None) -> Instant:
        """Mark a requested instant as in progress (writes its ``.inflight`` file)."""
        inst = self._resolve(instant)
        self._require_requested(inst)
        done = inst.with_state(State.INFLIGHT)
        try:
            atomic_write_json(self.path / done.file_name, dict(data or {}), exclusive=True)
        except FileExistsError:
            raise ConflictError(f"Instant {inst.timestamp} is already inflight") from None
        return done

    def complete(self, instant: InstantRef, metadata: Mapping[str, Any], *,
                 after: str | None = None) -> CommitRecord:
        """Commit: publish the completed file exclusively (the commit point).

        Call under the table lock: the completed file records ``completion_time``, later than
        every completion time on the timeline and than ``after`` (a rollback passes the
        completion time of the commits it removed), and never before the commit's instant.
        Raises :class:`ConflictError` when the instant is already completed or was rolled back.
        """
        inst = self._resolve(instant)
        self._require_requested(inst)
        done = inst.with_state(State.COMPLETED)
        completion = max(self.next_completion(after), inst.timestamp)
        if isinstance(metadata, CommitMetadata):  # checked when built: not parsed again
            meta = metadata.completed_at(completion)
        else:  # checked as readers check it
            body = {**metadata, COMPLETION_KEY: completion}
            meta = CommitMetadata.from_json(body, where=f"commit {inst.timestamp}",
                                            require_schema=False)
        data = dump_json(meta.to_json())
        try:
            atomic_write_bytes(self.path / done.file_name, data, exclusive=True)
        except FileExistsError:
            self._changed()
            raise ConflictError(
                f"Instant {inst.timestamp} ({inst.action}) is already completed",
                winner=inst.timestamp,
            ) from None
        self._published(done, data)
        self._keep_copy(inst, meta.to_json())
        with suppress(OSError, EvoError):  # the commit has happened regardless
            self.archive()
        with suppress(OSError, EvoError):  # a cache: the commit has happened regardless
            self.write_checkpoint()
        return CommitRecord(inst.timestamp, inst.action, meta)

    def _keep_copy(self, inst: Instant, body: dict[str, Any]) -> None:
        """After the commit point: a copy of the commit (key ``commit``) in the attempt's
        inflight record, if it has one. Should the completed file ever go missing, the copy
        proves that the attempt committed: its files are kept, never rolled back, and
        ``evonb check --repair`` restores the completed file from it. Best effort: the commit
        has happened whatever this write does."""
        path = self.path / inst.with_state(State.INFLIGHT).file_name
        try:
            data = read_json(path)
            if isinstance(data, dict):
                atomic_write_json(path, {**data, COMMIT_COPY_KEY: body})
        except (OSError, MetadataCorruptError):
            pass

    def abort(self, instant: InstantRef) -> None:
        """Remove the requested and inflight files of an uncompleted instant.

        Raises :class:`ConflictError` if it is completed (use :meth:`remove_completed`).
        """
        ts = _timestamp(instant)
        files = self._files_at(ts)
        if any(i.state is State.COMPLETED for i in files):
            raise ConflictError(f"Instant {ts} is completed; it cannot be aborted")
        for inst in sorted(files, key=lambda i: -i.state.rank):
            self.io.delete(self.path / inst.file_name)

    def remove_completed(self, instant: InstantRef) -> None:
        """Remove every file of ``instant``: completed first, then inflight, then requested
        (a crash midway leaves a pending instant for rollback, never a half-removed commit)."""
        ts = _timestamp(instant)
        files = self._files_at(ts)
        if not files:
            raise CommitNotFoundError(ts, self._nearest(self.completed(), ts), what="commit")
        self._changed()
        for inst in sorted(files, key=lambda i: -i.state.rank):
            self.io.delete(self.path / inst.file_name)
        self._changed()
        with self._cache_lock:
            for inst in files:
                self._records.pop(inst.file_name, None)


__all__ = [
    "ACTIONS",
    "CHECKPOINT_DIR",
    "CHECKPOINT_PROPERTY",
    "COMMIT_COPY_KEY",
    "COMPLETION_KEY",
    "DEFAULT_CHECKPOINT_EVERY",
    "CommitRecord",
    "Instant",
    "InstantRef",
    "State",
    "Timeline",
    "checkpoint_name",
    "is_checkpoint_name",
    "parse_checkpoint",
]
