"""Conflict policies: what may commit after other commits landed since an operation started.

Every write and every DDL commits under the table lock after asking the table's conflict
policy about the commits that completed since it started: those whose completion time is after
that of its base, the commit that had completed last when it started (completion order, see
:mod:`evonb.table.timeline`; not the commits with a later instant). The policy raises
:class:`ConflictError` (naming the commit the operation lost to) or returns the schema version to
record.

The default, :class:`DefaultConflictPolicy`, follows Hudi's RFC-33 for schema changes and
checks file groups like Hudi's optimistic concurrency control:

- Two operations that touch the same file groups conflict: the later one fails. A file group is
  touched when it is rewritten (copy-on-write upserts and deletes, overwrites, compaction) or
  gets log blocks (merge-on-read upserts and deletes). Inserts always create new file groups.
- An overwrite conflicts with any commit that added or removed data since it started.
- A write that started before a schema change may commit after it only if the change was an
  implicit column addition from another write, and only if it did not evolve the schema itself.
- A DDL is validated against the schema it commits on top of (the table re-validates DDL text
  against the latest schema under the lock); a DDL checked against the data (``SET NOT NULL``)
  conflicts with any data commit since that check.
- A rollback of completed commits conflicts with everything that started before it; clean
  commits and rollbacks of failed attempts never conflict.

Whatever the policy, an upsert on a record-key table also fails when a commit since it started
added base files that may hold a key in the range of its incoming keys (by the files' key
statistics, :mod:`evonb.table.key_stats`; a file without them may hold any key): the upsert
did not look in those files, so a key it inserts could exist twice. Table services (compaction,
rewrite) only restate keys that already existed and are not counted.

A table picks another policy with the property ``evonb.conflict.policy``: ``"default"``,
``"strict"`` (any commit since the start conflicts: serial execution) or the name of an entry
point in the group ``evonb.conflict_policies`` that an installed package registers (never a
module path: see :mod:`evonb.table.plugins`). The class the entry point names is built with
``Class.from_table(root, properties)`` when it has that classmethod, else ``Class()``, and must
implement :class:`ConflictPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from evonb.errors import ConflictError, EvoError
from evonb.schema.schema import INITIAL_VERSION
from evonb.table.key_stats import may_hold
from evonb.table.plugins import CONFLICT_POLICIES_GROUP, PluginKind, check_name, load
from evonb.table.snapshot import DataFile
from evonb.table.timeline import CommitRecord

WRITE_ACTIONS = {"insert": "commit", "upsert": "commit", "delete": "commit",
                 "overwrite": "replacecommit"}
"""The timeline action of each write mode on a copy-on-write table (merge-on-read upserts and
deletes are ``deltacommit``)."""

if TYPE_CHECKING:  # pragma: no cover
    from evonb.table.handle import TableHandle
    from evonb.table.key_stats import KeyRange
    from evonb.table.snapshot import DataFile

POLICY_PROPERTY = "evonb.conflict.policy"
DEFAULT_POLICY = "default"
RESTATING_OPERATIONS = frozenset({"compact", "rewrite", "cluster"})
"""Operations whose added files only restate keys that existed before them."""

OperationKind = Literal["write", "ddl", "service"]


@dataclass(frozen=True)
class Operation:
    """What an operation about to commit did, as a conflict policy sees it.

    ``base_instant`` is the commit that had completed last when it started (``None`` on an
    empty timeline), ``base_completion`` that commit's completion time (its position in
    completion order), and ``base_schema_version`` the schema it was prepared against.
    ``schema_version`` is the version it creates (an evolving write or a DDL), else ``None``.
    ``schema_change`` is ``"add_columns"`` (implicit column addition by a write), ``"evolve"``
    (any other change by a write) or ``"ddl"``. ``file_groups`` are the base files it rewrites
    or adds log blocks to. ``reads_data``: its validity depends on the data (e.g. ``SET NOT
    NULL``).
    """

    kind: OperationKind
    operation: str
    action: str
    base_instant: str | None
    base_schema_version: str
    schema_version: str | None = None
    schema_change: str | None = None
    file_groups: frozenset[str] = field(default_factory=frozenset)
    reads_data: bool = False
    instant: str | None = None
    base_completion: str | None = None

    @property
    def evolves(self) -> bool:
        """Whether this operation creates a schema version."""
        return self.schema_version is not None


@runtime_checkable
class ConflictPolicy(Protocol):
    """Decides whether an operation may commit after the commits that landed since it began."""

    def check(self, op: Operation, since: Sequence[CommitRecord]) -> str:
        """Raise :class:`ConflictError` naming the commit ``op`` lost to, or return the schema
        version to record in its commit. ``since`` are the commits that completed after ``op``
        started, in completion order."""
        ...


def _schema_of(record: CommitRecord, current: str) -> str:
    value = record.metadata.get("schema_version")
    return str(value) if value is not None else current


def _touches(record: CommitRecord) -> tuple[set[str], set[str]]:
    """The file groups ``record`` rewrote (removed) and the ones it added log blocks to."""
    meta = record.metadata
    removed = {str(p) for p in meta.get("removed", ())}
    logged = {str(e.get("base")) for e in meta.get("added", ())
              if isinstance(e, Mapping) and e.get("kind") == "log" and e.get("base")}
    return removed, logged


def _changes_data(record: CommitRecord) -> bool:
    meta = record.metadata
    return bool(meta.get("added") or meta.get("removed"))


def _describe(op: Operation) -> str:
    return "DDL" if op.kind == "ddl" else op.operation


def _lost(op: Operation, other: CommitRecord, reason: str) -> ConflictError:
    return ConflictError(
        f"Commit {other.instant} ({other.operation}) conflicts with this {_describe(op)}: "
        f"{reason}",
        winner=other.instant,
        hint="re-read the table and run the operation again",
    )


def _service_conflict(op: Operation, other: CommitRecord) -> str | None:
    """Why a table service (compaction, rewrite) cannot commit after ``other``, or None.

    A rewrite replaces the whole table in one schema: any other commit conflicts. A compaction
    or a clustering only restates the data of its file groups in the schema version it read,
    which stays valid after any schema change: only commits that touched the same file groups
    conflict.
    """
    if op.operation == "rewrite":
        return f"it changed the table while this rewrite ran ({other.operation})"
    name = "clustering" if op.operation == "cluster" else "compaction"
    removed, logged = _touches(other)
    if op.file_groups & removed:
        return (f"it rewrote file groups this {name} also replaces "
                f"(e.g. {sorted(op.file_groups & removed)[0]})")
    if op.file_groups & logged:
        return (f"it added log blocks to file groups this {name} replaces "
                f"(e.g. {sorted(op.file_groups & logged)[0]})")
    return None


class DefaultConflictPolicy:
    """File-group conflicts plus Hudi RFC-33 for schema changes (see the module docstring)."""

    def check(self, op: Operation, since: Sequence[CommitRecord]) -> str:
        current = op.base_schema_version
        for other in since:
            meta = other.metadata
            if other.action == "clean":
                continue
            if other.action == "rollback":
                if meta.get("rolled_back"):
                    raise _lost(op, other, "it rolled back commits this operation started after")
                continue  # clean-up of failed attempts: changes nothing visible
            if op.kind == "service":
                reason = _service_conflict(op, other)
                if reason:
                    raise _lost(op, other, reason)
                continue
            version = _schema_of(other, current)
            if version != current:
                implicit = other.action != "alter" and meta.get("schema_change") == "add_columns"
                if op.kind == "ddl":
                    raise _lost(op, other, f"it changed the schema (to version {version}) "
                                           "after this DDL was validated")
                if op.evolves:
                    raise _lost(op, other, "both change the schema")
                if not implicit:
                    raise _lost(op, other, "the table's schema changed while this "
                                           f"{op.operation} was written")
                current = version
            removed, logged = _touches(other)
            if op.operation == "overwrite" and _changes_data(other):
                raise _lost(op, other, "it wrote to the table while this overwrite ran")
            if op.file_groups & removed:
                raise _lost(op, other, "it rewrote file groups this operation also touches "
                                       f"(e.g. {sorted(op.file_groups & removed)[0]})")
            if op.file_groups & logged:
                raise _lost(op, other, "it added log blocks to file groups this operation "
                                       f"also touches (e.g. {sorted(op.file_groups & logged)[0]})")
            if op.reads_data and _changes_data(other):
                raise _lost(op, other, "it changed the data this DDL was validated against")
        return op.schema_version or current


class StrictConflictPolicy:
    """Serial execution: any commit since the operation started (other than clean and rollbacks
    of failed attempts) makes it fail."""

    def check(self, op: Operation, since: Sequence[CommitRecord]) -> str:
        current = op.base_schema_version
        for other in since:
            if other.action == "clean" or (other.action == "rollback"
                                           and not other.metadata.get("rolled_back")):
                current = _schema_of(other, current)
                continue
            raise _lost(op, other, "it committed after this operation started (strict policy)")
        return op.schema_version or current


PolicyFactory = Callable[[Path, Mapping[str, str]], ConflictPolicy]

_BUILTIN: dict[str, PolicyFactory] = {
    "default": lambda root, props: DefaultConflictPolicy(),
    "rfc33": lambda root, props: DefaultConflictPolicy(),
    "strict": lambda root, props: StrictConflictPolicy(),
}


CONFLICT_POLICIES = PluginKind("conflict policy", POLICY_PROPERTY, CONFLICT_POLICIES_GROUP,
                               frozenset(_BUILTIN), DEFAULT_POLICY)
"""The conflict policies: built-ins and the entry points of group ``evonb.conflict_policies``."""


def check_policy(name: str | None, *, root: Path | None = None) -> str:
    """The key of a conflict policy name, checked without importing anything
    (:class:`~evonb.errors.UnknownPluginError` for a name neither built in nor registered)."""
    return check_name(CONFLICT_POLICIES, name, outside=root)


def policy_from_name(name: str | None, *, root: Path | None = None) -> PolicyFactory:
    """A factory ``(root, properties) -> ConflictPolicy`` for a policy name: ``"default"``,
    ``"strict"`` or the name of a registered entry point (group ``evonb.conflict_policies``).
    A module path is an unknown name: nothing a table names is imported. ``root``: the
    table's folder (a distribution found inside it is not used)."""
    key = check_name(CONFLICT_POLICIES, name, outside=root)
    if key in _BUILTIN:
        return _BUILTIN[key]
    target = load(CONFLICT_POLICIES, key, outside=root)

    def build(root: Path, properties: Mapping[str, str]) -> ConflictPolicy:
        maker = getattr(target, "from_table", None)
        policy = maker(root, properties) if callable(maker) else target()  # type: ignore[operator]
        if not isinstance(policy, ConflictPolicy):
            raise EvoError(f"Conflict policy {key!r} built {policy!r}, which has no check()",
                           hint="fix the class its package registers in "
                                f"{CONFLICT_POLICIES_GROUP!r}")
        return policy

    return build


def policy_for(table: TableHandle) -> ConflictPolicy:
    """The conflict policy of ``table`` (table property ``evonb.conflict.policy``)."""
    props = table.raw_config.properties
    return policy_from_name(props.get(POLICY_PROPERTY), root=table.root)(table.root, props)


def commits_since(table: TableHandle, base_instant: str | None, *,
                  base_completion: str | None = None) -> list[CommitRecord]:
    """The commits that completed after the base commit, in completion order (all of them when
    there is no base). ``base_completion`` is the base commit's completion time; without it the
    base instant is looked up (a base commit rolled back meanwhile: every commit that completed
    after its instant, a superset)."""
    if base_completion is not None:
        return [c for c in table.timeline.completed() if c.completion > base_completion]
    if base_instant is None:
        return table.timeline.completed()
    return table.timeline.completed_after(base_instant)


def check(table: TableHandle, op: Operation, since: Sequence[CommitRecord] | None = None) -> str:
    """Under the lock: run ``table``'s policy on the commits that completed since ``op``
    started (``since``, when the caller has listed them already)."""
    if since is None:
        since = commits_since(table, op.base_instant, base_completion=op.base_completion)
    return policy_for(table).check(op, since)


def check_write(table: TableHandle, mode: str, base: CommitRecord | None,
                touched: Sequence[DataFile], *, evolved: bool,
                schema_change: str | None = None, instant: str | None = None,
                key_ranges: Sequence[KeyRange] | None = None,
                seen: Collection[str] = frozenset()) -> str:
    """The conflict check of a write (see :meth:`evonb.spark.writes.WriteJob.run`): ``touched``
    are the base files it rewrites or adds log blocks to; ``key_ranges``, for an upsert that
    wrote rows, the range of its incoming keys, and ``seen``, the base files of the snapshot
    it planned on (:func:`check_new_keys`). Returns the schema version to record (for an
    evolving write, its own new version when ``instant`` is given)."""

    mor = mode in ("upsert", "delete") and table.table_type == "mor"
    op = Operation(
        kind="write",
        operation=mode,
        action="deltacommit" if mor else WRITE_ACTIONS.get(mode, "commit"),
        base_instant=base.instant if base else None,
        base_completion=base.completion if base else None,
        base_schema_version=str(base.metadata.get("schema_version", INITIAL_VERSION))
        if base else INITIAL_VERSION,
        schema_version=(instant or "(new)") if evolved else None,
        schema_change=(schema_change or "evolve") if evolved else None,
        file_groups=frozenset(f.base or f.path if f.kind == "log" else f.path for f in touched),
        instant=instant,
    )
    since = commits_since(table, op.base_instant, base_completion=op.base_completion)
    version = check(table, op, since)
    if mode == "upsert" and key_ranges is not None:
        check_new_keys(table, op, key_ranges, seen, since)
    return version


def check_new_keys(table: TableHandle, op: Operation, ranges: Sequence[KeyRange],
                   seen: Collection[str], since: Sequence[CommitRecord]) -> None:
    """Under the lock: fail an upsert (``ranges``: its incoming keys' range on each key column;
    empty when no column has one) if a commit since it started added a base file that may hold
    one of its keys and that was not in the snapshot it planned on (``seen``: a commit can
    complete after the upsert took its base and before it read its snapshot). The upsert did
    not look in that file, so a key it inserts could then exist twice. ``since``: the commits
    that completed since it started."""

    for other in since:
        if other.action in ("clean", "rollback") or other.operation in RESTATING_OPERATIONS:
            continue
        for added in other.metadata.added:
            if added.kind != "base":
                continue
            if added.path not in seen and may_hold(added, ranges, table.version):
                raise _lost(op, other, f"it added rows (file {added.path}) whose keys may be "
                                       "among the keys this upsert writes, and this upsert did "
                                       "not look for them there, so a key could exist twice")


def check_service(table: TableHandle, operation: str, action: str, base: CommitRecord | None,
                  file_groups: Sequence[str], *, instant: str | None = None,
                  schema_version: str | None = None) -> str:
    """The conflict check of a table service (``compact`` or ``rewrite``) replacing the base
    files ``file_groups``, through the table's policy. Returns the schema version to record."""

    op = Operation(
        kind="service",
        operation=operation,
        action=action,
        base_instant=base.instant if base else None,
        base_completion=base.completion if base else None,
        base_schema_version=str(base.metadata.get("schema_version", INITIAL_VERSION))
        if base else INITIAL_VERSION,
        schema_version=schema_version,
        schema_change="ddl" if schema_version else None,
        file_groups=frozenset(file_groups),
        instant=instant,
    )
    return check(table, op)


__all__ = [
    "CONFLICT_POLICIES",
    "POLICY_PROPERTY",
    "RESTATING_OPERATIONS",
    "ConflictPolicy",
    "DefaultConflictPolicy",
    "Operation",
    "StrictConflictPolicy",
    "check",
    "check_new_keys",
    "check_policy",
    "check_service",
    "check_write",
    "commits_since",
    "policy_for",
    "policy_from_name",
]
