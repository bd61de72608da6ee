"""``Transaction``: the one way a change is committed to a table's timeline.

Every commit, whether DDL, write, compaction, rewrite, clean, rollback, create or convert,
runs the same steps::

    txn = Transaction(table, "commit", plan={"operation": "upsert"})  # recovers failed attempts
    with txn:                                   # requested: the attempt is on the timeline
        files = ...                             # written under unique names
        txn.stage(added=files, removed=paths)   # inflight: what it wrote, with sizes
        with txn.locked():                      # the table lock
            ...                                 # the conflict check against txn.base
            txn.save_version(schema, layout)    # a schema version, if the commit makes one
            txn.complete(metadata)              # the commit point

If the block raises before :meth:`complete`, the attempt is aborted: the files it wrote are
removed, its schema version is dropped and its timeline files are deleted. A block that ends
without completing (nothing to commit after all) is aborted in the same way. If it raises
after the commit point, the change stays committed. A rollback that has begun removing
commits calls :meth:`roll_forward` first: if it is interrupted, recovery finishes it instead.
Either way, the table's cached snapshots are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any

from evonb.errors import EvoError
from evonb.table.after_change import table_changed
from evonb.table.commit import CommitMetadata
from evonb.table.fileio import file_io, is_object_path
from evonb.table.fsutil import files_of_instant, remove_data_files, retry_note
from evonb.table.snapshot import DataFile
from evonb.table.timeline import CommitRecord, Instant
from evonb.table.writers import writer_info

if TYPE_CHECKING:  # pragma: no cover
    from evonb.schema.schema import Schema
    from evonb.table.handle import TableHandle
    from evonb.table.layout import Layout


class Transaction:
    """One attempt to commit ``action`` (``commit``, ``deltacommit``, ``replacecommit``,
    ``compaction``, ``alter``, ``clean``, ``rollback``, ``create``) to ``table``.

    ``plan`` goes into the requested file, with the writer's host and process. ``recover``
    first rolls back the failed attempts of dead processes. ``base`` is the last completed
    commit when the transaction was made: the conflict check compares what completed since.
    """

    def __init__(self, table: TableHandle, action: str, *, plan: Mapping[str, Any] | None = None,
                 recover: bool = True) -> None:
        if recover:  # a rollback it records takes the lock: the timeline is listed again
            table.recover_failed()
        self.table = table
        self.action = action
        self.plan: dict[str, Any] = {**(plan or {}), "writer": writer_info()}
        self.base: CommitRecord | None = table.timeline.last_completed()
        self.record: CommitRecord | None = None
        self._inst: Instant | None = None
        self._written: list[DataFile] = []
        self._version: str | None = None
        self._forward = False
        self._sweep = False

    # ------------------------------------------------------------------- the steps
    def __enter__(self) -> Transaction:
        self._inst = self.table.timeline.requested(self.action, plan=self.plan)
        return self

    @property
    def instant(self) -> str:
        """The attempt's instant: its files and schema version are named with it."""
        return self._started().timestamp

    def wrote(self, files: Iterable[DataFile]) -> None:
        """Note files this attempt wrote: removed if it aborts."""
        self._written.extend(files)

    def tasks_place_files(self) -> None:
        """Spark tasks of this attempt write its data files: in object storage they place
        them in the store themselves, which the driver does not know of when a job fails,
        so :meth:`abort` then also removes every file named with the attempt's instant,
        after its timeline files are gone; a task placing a file later finds the attempt gone
        (:func:`~evonb.table.timeline.instant_on_timeline`) and removes it itself. A task
        attempt other than its task's first (a retry, a speculative copy) first stores a note
        (:func:`~evonb.table.fsutil.retry_note`), since its earlier attempt may have stored
        files and died before removing them: after the commit point, if the note is there,
        every file named with the instant that the commit does not list is removed, then the
        note (one request more per commit when no task was retried). On local disk nothing
        more is needed (Spark's tasks write into a staging folder the failed job removes)."""
        self._sweep = is_object_path(self.table.root)

    def stage(self, added: Sequence[DataFile], removed: Sequence[str]) -> None:
        """Record what the attempt wrote (paths and sizes) and replaces, before the commit
        point: recovery and ``evonb check`` read it."""
        known = {f.path for f in self._written}
        self.wrote(f for f in added if f.path not in known)
        self.table.timeline.inflight(self._started(), {
            "added": [f.path for f in added], "files": [f.to_dict() for f in added],
            "removed": list(removed)})

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The table lock, held for the conflict check and the commit point; meanwhile the
        timeline's completed commits come from one listing (:meth:`Timeline.listing_held`)."""
        with self.table.locked(), self.table.timeline.listing_held():
            yield

    def roll_forward(self) -> None:
        """From here on, an interrupted attempt is finished by recovery from its plan, not
        undone (a rollback that has begun removing the commits it undoes)."""
        self._forward = True

    def save_version(self, schema: Schema, layout: Layout) -> None:
        """Store the schema version the commit makes (dropped if the attempt aborts, a part
        of it written before an error included)."""
        self._version = schema.version_id
        self.table.save_version(schema, layout)

    def complete(self, metadata: CommitMetadata | Mapping[str, Any], *,
                 after: str | None = None) -> CommitRecord:
        """The commit point: publish the completed commit with ``metadata`` (completing
        after ``after`` too, for a rollback). Hold :meth:`locked` unless nothing can race.
        Metadata that is not a :class:`CommitMetadata` is checked like one first."""
        inst = self._started()
        if not isinstance(metadata, CommitMetadata):
            metadata = CommitMetadata.from_json(metadata, where=f"commit {inst.timestamp}")
        self.table.verify_lock()
        self.record = self.table.timeline.complete(inst, metadata, after=after)
        return self.record

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if self._inst is not None and not self._forward and not self._committed():
                self.abort()
        finally:
            self.table.invalidate()
        if self._sweep and self.record is not None:
            self._sweep_retried(self.record)
        if exc_type is None and self.record is not None:
            self.table.timeline.forget_listing()  # the lock is released: others may commit
            table_changed(self.table)  # e.g. Iceberg metadata (evonb.table.after_change)

    # ------------------------------------------------------------------- helpers
    def abort(self) -> None:
        """Undo the attempt: its files, its schema version and its timeline files."""
        inst = self._started()
        remove_data_files(self.table.root, self._written)
        if self._version is not None:
            self.table.drop_version(self._version)
        self.table.timeline.abort(inst)
        if self._sweep:
            io = file_io()
            for path in files_of_instant(self.table.root, inst.timestamp):
                io.delete(path)
            with suppress(OSError, EvoError):
                io.delete(retry_note(self.table.root, inst.timestamp))

    def _sweep_retried(self, record: CommitRecord) -> None:
        """After the commit point: the files of dead task attempts, if a task was retried
        (:meth:`tasks_place_files`). The commit stands whatever happens here: a file this
        cannot remove stays an orphan that ``evonb check`` reports and repair removes."""
        root = self.table.root
        note = retry_note(root, record.instant)
        io = file_io()
        with suppress(OSError, EvoError):
            if not io.exists(note):
                return
            listed = {f.path for f in record.metadata.added}
            prefix = str(root).rstrip("/") + "/"
            for path in files_of_instant(root, record.instant):
                if str(path).removeprefix(prefix) not in listed:
                    io.delete(path)
            io.delete(note)

    def _committed(self) -> bool:
        return self.record is not None or self.table.timeline.is_completed(self._started())

    def _started(self) -> Instant:
        if self._inst is None:
            raise EvoError("The transaction has not begun", hint="use it in a with block")
        return self._inst


__all__ = ["Transaction"]
