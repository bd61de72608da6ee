"""``BaseTable``: an evonb table's format on disk, without an engine (no Spark).

DDL changes metadata only. Writes evolve the schema by name. Reads merge every file's schema
version into the query schema by field ID. Every change is one commit on the timeline.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlparse

from evonb.arguments import check_mapping, check_text, column_names
from evonb.errors import (
    CommitNotFoundError,
    ConflictError,
    DataValidationError,
    EvoError,
    MetadataCorruptError,
    SchemaEvolutionError,
    TableExistsError,
    TableLocationError,
    TableNotFoundError,
)
from evonb.schema.diffing import SchemaDiff, diff
from evonb.schema.evolution import SchemaUpdate
from evonb.schema.lineage import Lineage, lineage, version_name
from evonb.schema.nesting import check_nesting
from evonb.schema.schema import INITIAL_VERSION, Schema
from evonb.schema.types import Type, with_children
from evonb.sql import SetProperties, UnsetProperties, ddl_to_update
from evonb.sql.apply import property_changes
from evonb.sql.parser import parse_with_sources
from evonb.table.after_change import table_changed
from evonb.table.commit import CommitMetadata
from evonb.table.config import TableConfig
from evonb.table.conflicts import Operation, check
from evonb.table.fileio import file_io, is_object_path, object_key
from evonb.table.fsutil import (
    FileCache,
    atomic_write_json,
    evo_dir,
    location_uri,
    nested_hold,
    read_json,
    table_path,
)
from evonb.table.handle import CommitRef
from evonb.table.history import ColumnHistory, ColumnVersion, Commit, History, SchemaVersions
from evonb.table.instants import is_instant
from evonb.table.layout import (
    META_COMMIT_TIME,
    RESERVED,
    Layout,
    derive_layout,
    named_members,
)
from evonb.table.lock import lock_for_table
from evonb.table.lru import LRU
from evonb.table.names import SCHEMAS_DIR, layout_file
from evonb.table.partition_folders import check_partition_names
from evonb.table.preview import preview_alter
from evonb.table.properties import (
    changed_config,
    check_plugins,
    check_properties,
    property_values,
    setting,
)
from evonb.table.read_plan import physical_struct
from evonb.table.refs import expand_ref, history_index, is_latest, version_ordinal
from evonb.table.revert import REVERT, RevertPreview, plan_revert, revert_layout
from evonb.table.rollback import rollback_failed
from evonb.table.schema_store import SchemaStore
from evonb.table.snapshot import DataFile, Snapshot, replay
from evonb.table.timeline import CommitRecord, Timeline
from evonb.table.transaction import Transaction
from evonb.table.write_schema import reconcile

if TYPE_CHECKING:  # pragma: no cover

    from evonb.table.preview import AlterPreview

WriteMode = Literal["insert", "upsert", "delete", "overwrite"]
WRITE_MODES = ("insert", "upsert", "delete", "overwrite")
TableMaker = Callable[[Path, TableConfig], "BaseTable"]
"""Makes the table object of a folder: :class:`BaseTable`, or a class of a higher layer
(``evonb.api.Table``), so that one object reads the timeline once."""

PROP_ADD_COLUMNS = "evonb.write.add_columns"
PROP_FILL_MISSING = "evonb.write.fill_missing"
SNAPSHOTS_KEPT = 64
"""Snapshots an open table keeps (the most recently read first): reading one again skips
replaying the timeline."""


def _layout_file(root: Path, version: str) -> Path:
    return evo_dir(root) / SCHEMAS_DIR / layout_file(version)


def _read_layout(root: Path, version: str, schema: Schema) -> Layout:
    """The layout file of a schema version; any defect (a column of ``schema`` without a
    physical name included) raises ``MetadataCorruptError`` naming the file."""
    path = _layout_file(root, version)
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise MetadataCorruptError(
            str(path), f"the layout of schema version {version} is missing") from None
    if not isinstance(data, dict):
        raise MetadataCorruptError(str(path), "a layout must be a JSON object")
    try:
        layout = Layout.from_dict(data)
        if not all(isinstance(v, str) and v for v in layout.physical.values()):
            raise ValueError("physical names must be non-empty strings")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MetadataCorruptError(str(path), f"not a valid layout: {exc}") from None
    missing = [fid for fid, *_ in named_members(schema) if fid not in layout.physical]
    if missing:
        raise MetadataCorruptError(
            str(path), f"no physical name for field ID {missing[0]} of schema version {version}")
    return layout


def _as_schema(schema: str | Schema) -> Schema:
    if isinstance(schema, Schema):
        return schema.with_version(INITIAL_VERSION)
    if isinstance(schema, str):
        return Schema.from_ddl(schema)
    raise EvoError(
        f"Cannot make a schema from {type(schema).__name__}",
        hint="pass column DDL text, a Spark StructType or an evonb Schema",
    )


def with_write_defaults(t: Type) -> Type:
    """``t`` with each field's read default replaced by its write default (for new rows)."""
    if t.is_primitive:
        return t
    return with_children(t, tuple(
        c.replace(default=c.write_default, type=with_write_defaults(c.type))
        for c in t.children()
    ))


def create_table(
    path: str | Path,
    schema: str | Schema,
    *,
    primary_key: str | Sequence[str] | None = None,
    precombine: str | None = None,
    partition_by: str | Sequence[str] | None = (),
    table_type: str = "cow",
    properties: dict[str, Any] | None = None,
    name: str | None = None,
    exist_ok: bool = False,
    make: TableMaker | None = None,
) -> BaseTable:
    """Create an evonb table at ``path`` and return it.

    ``schema`` is column DDL text (``"id bigint not null, name string"``), a Spark ``StructType``
    or an evonb :class:`Schema`. ``primary_key`` and ``precombine`` enable upserts and deletes
    (the row with the larger precombine value wins). ``table_type`` is ``"cow"``
    (copy-on-write) or ``"mor"`` (merge-on-read).
    """
    root = table_path(path)
    if TableConfig.exists(root):
        if exist_ok:
            return open_table(root, make=make)
        raise TableExistsError(
            f"A table already exists at {root}",
            hint="open it with evonb.open_table(), or pass exist_ok=True",
        )
    initial = _as_schema(schema)
    check_reserved(initial.column_names)
    check_nesting(initial.fields)
    keys = column_names(primary_key, "primary_key", "primary_key='id'")
    parts = column_names(partition_by, "partition_by", "partition_by=['day']")
    properties = check_mapping(properties, "properties",
                               "properties={'evonb.write.target.file.bytes': '67108864'}")
    if precombine is not None:
        check_text(precombine, "precombine", "precombine='ts'")
    if name is not None:
        check_text(name, "name", "name='orders'")
    config = TableConfig(
        name=name or root.name,
        table_type=table_type,  # type: ignore[arg-type]
        primary_key=keys or None,
        precombine=precombine,
        partition_by=parts,
        properties=property_values(properties),
    )
    config = config.resolve_ids(initial)
    check_key_columns(initial, config)
    check_properties(config.properties)  # known names and their values, Parquet options
    check_plugins(config.properties, root=root)  # lock provider, conflict policy: known names
    layout = derive_layout(initial)
    check_partition_names([layout.name(i) for i in config.partition_ids], object_key(root))
    _make_root(root)
    config.save(root, exclusive=True)
    table = (make or BaseTable)(root, config)
    with Transaction(table, "create", recover=False) as txn:
        txn.save_version(initial, layout)
        txn.complete(CommitMetadata.of("create", INITIAL_VERSION))
    return table


def _make_root(root: Path) -> None:
    """Create the table folder (and its parents), or raise :class:`TableLocationError` leaving
    nothing behind when it cannot be created or written. In object storage, where folders are
    name prefixes, only the write is probed."""
    if is_object_path(root):
        probe = root / f".evonb-probe-{os.getpid()}"
        file_io().write(probe, b"probe")  # a missing bucket or refused credentials: an EvoError
        file_io().delete(probe)
        return
    top = next((p for p in reversed((root, *root.parents)) if not p.exists()), None)
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".evonb-probe-{os.getpid()}"
        file_io().write(probe, b"probe")
        file_io().delete(probe)
    except OSError as exc:
        for made in (root, *root.parents) if top is not None else ():
            with contextlib.suppress(OSError):
                made.rmdir()  # only the folders made here, and only while empty
            if made == top:
                break
        raise TableLocationError(
            f"Cannot create a table at {root}: {exc.strerror or exc}", path=str(root),
            hint="choose a folder you can create and write (LOCATION '<path>' or the "
                 "warehouse)") from None


def check_key_columns(schema: Schema, config: TableConfig) -> None:
    """Record key, partition and precombine columns must be top-level columns of a primitive
    type (every write, merge and read of the key finds them by their top-level name)."""
    roles = [*(("record key", i) for i in config.primary_key_ids),
             *(("partition", i) for i in config.partition_ids),
             *((("precombine", config.precombine_id),) if config.precombine_id is not None
               else ())]
    for role, fid in roles:
        f = schema.field_by_id(fid)
        path = schema.path_of(fid)
        parent = schema.parent_of(fid)
        if parent != -1:
            raise SchemaEvolutionError(
                f"The {role} column must be a top-level column: {path!r} is inside "
                f"{schema.path_of(parent)!r}",
                path=path, field_id=fid,
                hint=f"choose a top-level column as the {role} column, or add one that holds "
                     f"the value (e.g. `{f.name}` beside `{schema.path_of(parent)}`)")
        if f.type.is_nested:
            raise SchemaEvolutionError(
                f"The {role} column must be of a primitive type: {path!r} is {f.type}",
                path=path, field_id=fid,
                hint=f"choose a column of a number, string, date or timestamp type as the "
                     f"{role} column")


def open_table(path: str | Path, *, make: TableMaker | None = None) -> BaseTable:
    """Open the evonb table at ``path`` (``make``: the class, or factory, of the object to
    return; :class:`BaseTable` by default)."""
    root = table_path(path)
    config = TableConfig.load(root)
    table = (make or BaseTable)(root, config)
    if table.timeline.last_completed() is None:
        raise TableNotFoundError(
            f"The table at {root} has no completed commit (its creation did not finish)",
            hint="remove the folder and create the table again",
        )
    return table


class BaseTable:
    """An evonb table's format: its config, timeline, schema versions and layouts, DDL and
    properties, snapshots and history, and the commit lock. It has no engine: reads, writes
    and services are added by :class:`evonb.spark.table.SparkTable` and :class:`evonb.api.Table`
    (what :func:`evonb.create_table` and :func:`evonb.open_table` return)."""

    def __init__(self, root: Path, config: TableConfig) -> None:
        self.root = root
        self._config_file: FileCache[TableConfig] = FileCache()
        self._config_hold = threading.local()  # the config of :meth:`config_held`
        self._config = config
        self.timeline = Timeline(root)
        self.timeline.settings = lambda: self._config
        self.schema_store = SchemaStore(root)
        self._layouts: dict[str, Layout] = {}
        # Snapshots by (commits replayed, last instant, its completion): the latest ones
        # read, so time travel over a long history keeps a bounded number.
        self._snapshots: LRU[tuple, Snapshot] = LRU(SNAPSHOTS_KEPT)
        self._held_lock: object | None = None  # the commit lock, while :meth:`locked` holds it

    # ---------------------------------------------------------------- basics
    @property
    def _config(self) -> TableConfig:
        """The table's config, reread when its file changed since it was read (a property
        set by another process or another ``Table`` object of the same table); the last one
        read while the file cannot be looked at. Inside :meth:`config_held`, the one looked
        at first."""
        hold = self._config_hold
        held = getattr(hold, "config", None)
        if held is not None:
            return held
        self._config_value = self._config_file.get(
            TableConfig.path(self.root), lambda _: TableConfig.load(self.root),
            unreadable=self._config_value)
        if getattr(hold, "depth", 0):
            hold.config = self._config_value
        return self._config_value

    @_config.setter
    def _config(self, config: TableConfig) -> None:
        self._config_value = config
        self._config_file.put(TableConfig.path(self.root), config)
        if getattr(self._config_hold, "depth", 0):
            self._config_hold.config = config

    @contextlib.contextmanager
    def config_held(self) -> Iterator[None]:
        """Inside, in this thread, the config is looked at once: the first read checks its
        file (a request on object storage) and every later one returns that config, as
        properties are documented to work (an operation uses the values set before it
        started; :meth:`set_properties`). For one operation that reads its settings many
        times (a write: 13 looks at the config file of a table in a bucket before this).
        A property this object sets inside is seen at once."""
        hold = self._config_hold
        with nested_hold(hold, lambda: setattr(hold, "config", None)):
            yield

    @property
    def name(self) -> str:
        return self._config.name

    @property
    def path(self) -> str:
        """Where the table lives, as users name it (``s3://bucket/t`` for a table in a
        bucket: :func:`~evonb.table.fsutil.location_uri`)."""
        return location_uri(self.root)

    @property
    def table_type(self) -> str:
        return self._config.table_type

    @property
    def raw_config(self) -> TableConfig:
        """The table's configuration as stored: key and partition columns by field ID."""
        return self._config

    def invalidate(self) -> None:
        """Forget the snapshots read so far (after a commit changed the timeline)."""
        self._snapshots.clear()

    @property
    def cached_snapshots(self) -> int:
        """How many snapshots this object keeps to skip replaying the timeline."""
        return len(self._snapshots)

    @property
    def config(self) -> TableConfig:
        """The table's configuration, with key columns named as in the latest schema."""
        return self._config.resolve_names(self.schema)

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(self.schema.path_of(i) for i in self._config.primary_key_ids)

    @property
    def partition_by(self) -> tuple[str, ...]:
        return tuple(self.schema.path_of(i) for i in self._config.partition_ids)

    @property
    def precombine(self) -> str | None:
        fid = self._config.precombine_id
        return self.schema.path_of(fid) if fid is not None else None

    def __repr__(self) -> str:
        return (f"Table({self.name!r}, path={self.path!r}, type={self.table_type}, "
                f"schema={self.schema.struct.simple_string()!r})")

    def _repr_html_(self) -> str:
        last = self.timeline.last_completed()
        return (f"<div class='evonb-table'><b>{html.escape(self.name)}</b> "
                f"({self.table_type}) at <code>{html.escape(self.path)}</code>, "
                f"last commit {html.escape(last.instant if last else '-')}"
                f"{self.schema._repr_html_()}</div>")

    # --------------------------------------------------------------- schemas
    def save_version(self, schema: Schema, layout: Layout) -> None:
        """Store a schema version and its layout (before the commit that uses it: their
        folder is flushed once, after both are written)."""
        with file_io().folder_syncs_batched():
            atomic_write_json(_layout_file(self.root, schema.version_id), layout.to_dict())
            self.schema_store.save(schema)
        self._layouts[schema.version_id] = layout

    def drop_version(self, version: str) -> None:
        """Remove a schema version no commit uses (an aborted or rolled-back one)."""
        with contextlib.suppress(FileNotFoundError, CommitNotFoundError):  # never written
            self.schema_store.delete(version)
        file_io().delete(_layout_file(self.root, version))
        self._layouts.pop(version, None)

    def version(self, version_id: str) -> tuple[Schema, Layout]:
        """A schema version and its physical layout."""
        schema = self.schema_store.load(version_id)
        layout = self._layouts.get(version_id)
        if layout is None:
            layout = _read_layout(self.root, version_id, schema)
            self._layouts[version_id] = layout
        return schema, layout

    @property
    def schema(self) -> Schema:
        """The latest schema."""
        last = self.timeline.last_completed()
        if last is not None and "schema_version" not in last.metadata:
            raise MetadataCorruptError(str(self.timeline.path / f"{last.instant}.{last.action}"),
                                       "the commit records no schema_version")
        return self.schema_store.load(last.schema_version if last else INITIAL_VERSION)

    def schemas(self) -> SchemaVersions:
        """Every schema version the timeline refers to, oldest first (in the completion order
        of the commits that made them: a DDL validated again on top of a concurrent one has
        the older version id but comes after it), as a list that also holds their names
        (``v0``, ``v1``, ...) and lists them by name and id."""
        stored = set(self.schema_store.versions())  # a clean may have pruned old versions
        names = version_names(self.version_ids())
        kept = [v for v in names if v in stored]
        return SchemaVersions([self.schema_store.load(v) for v in kept],
                              [names[v] for v in kept], table_name=self.name)

    def version_ids(self) -> list[str]:
        """The id of every schema version the timeline refers to, oldest first (as
        :meth:`schemas`, those a clean removed included): the position of a version in
        this list is its ordinal, ``v0`` the first (:meth:`version_name`)."""
        return _version_order(self.timeline.completed())

    def version_name(self, version_id: str) -> str:
        """The readable name of a schema version: ``v3`` for the fourth version made; the
        id itself for a version the timeline does not refer to."""
        names = version_names(self.version_ids())
        return names.get(version_id, version_id)

    def resolve_version(self, ref: str) -> str:
        """The id of the schema version ``ref`` names: ``vN`` (its ordinal) or a version id;
        :class:`CommitNotFoundError` naming the known range for an unknown ``vN``."""
        ordinal = version_ordinal(ref)
        if ordinal is None:
            return ref.strip()
        versions = self.version_ids()
        if ordinal < len(versions):
            return versions[ordinal]
        known = f"v0 .. v{len(versions) - 1}" if versions else "none"
        raise CommitNotFoundError(
            ref.strip(), what="schema version",
            hint=f"table {self.name!r} has {len(versions)} schema version"
                 f"{'' if len(versions) == 1 else 's'} ({known})")

    def schema_at(self, ref: CommitRef) -> Schema:
        """The schema in force at a commit (any reference :meth:`commit` takes)."""
        return self.schema_store.load(self.commit(ref).schema_version)

    def resolve_schema(self, ref: Schema | str | CommitRef) -> Schema:
        """A schema named by a Schema, ``"latest"``, a version id, a version name (``"v3"``,
        see :meth:`resolve_version`) or a commit: the one resolver of the schema arguments of
        reads and diffs."""
        if isinstance(ref, Schema):
            return ref
        if is_latest(ref):
            return self.schema
        if version_ordinal(ref) is not None:
            version = self.resolve_version(str(ref))
            if version not in self.schema_store.versions():
                raise CommitNotFoundError(
                    ref, what="schema version",
                    hint=f"{str(ref).strip()} ({version}) was removed by a clean")
            return self.schema_store.load(version)
        if isinstance(ref, str) and is_instant(ref) and ref in self.schema_store.versions():
            return self.schema_store.load(ref)
        return self.schema_at(ref)

    def diff(self, a: Schema | str | CommitRef, b: Schema | str | CommitRef = "latest"
             ) -> SchemaDiff:
        """What changed between two schema versions or the schemas of two commits: each of
        ``a`` and ``b`` is a :class:`Schema`, a schema version id or name (``"v3"``), or a
        commit reference as :meth:`commit` takes it (``"@0"``, ``"latest"``, an instant, a
        date-time)."""
        return diff(self.resolve_schema(a), self.resolve_schema(b))

    def column_history(self, path: str | tuple[str, ...]) -> ColumnHistory:
        """The life of one column ID (found by its current path, or its last path if dropped)."""
        versions = self.schemas()
        field_id = None
        for schema in reversed(versions):
            if schema.has(path):
                field_id = schema.find_id(path)
                break
        if field_id is None:
            self.schema.find(path)  # raises ColumnNotFoundError with a suggestion
            raise AssertionError("unreachable")  # pragma: no cover
        out: list[ColumnVersion] = []
        previous: ColumnVersion | None = None
        for schema in versions:
            if not schema.has_id(field_id):
                if previous is not None and previous.change != "dropped":
                    previous = ColumnVersion(schema.version_id, previous.path, previous.type,
                                             previous.nullable, None, None, None, "dropped")
                    out.append(previous)
                continue
            f = schema.field_by_id(field_id)
            entry = ColumnVersion(schema.version_id, schema.path_of(field_id), str(f.type),
                                  f.nullable, f.default, f.write_default, f.comment, "")
            change = _describe_change(previous, entry)
            if change:
                entry = ColumnVersion(*[*vars_of(entry)[:-1], change])
                out.append(entry)
            previous = entry
        return ColumnHistory(field_id, tuple(out))

    def lineage(self) -> Lineage:
        """The life of every column ever (by field ID, nested fields under their parent)
        through the schema versions ``v0``, ``v1``, ...: when each was born, renamed,
        retyped, moved, given a default, made required or optional, documented, dropped
        (:mod:`evonb.schema.lineage`). Shows as text and as an HTML grid."""
        records = self.timeline.completed()
        moved: dict[str, list[int]] = {}
        for r in records:
            ids = [c.get("field_id") for c in r.metadata.get("changes", ())
                   if isinstance(c, dict) and c.get("kind") == "moved"]
            moved.setdefault(str(r.metadata.get("schema_version")), []).extend(
                i for i in ids if isinstance(i, int))
        schemas = self.schemas()
        return lineage(schemas, names=schemas.names, moved=moved,
                       complete=bool(schemas) and schemas.names[0] == "v0",
                       table_name=self.name)

    # -------------------------------------------------------------- timeline
    def history(self) -> History:
        """Every completed commit, in the order they completed."""
        records = self.timeline.completed()
        names = version_names(_version_order(records))
        return History(tuple(
            Commit.from_record(r, schema_name=names.get(str(r.metadata.get("schema_version")),
                                                        ""))
            for r in records), table_name=self.name)

    def commit(self, ref: CommitRef) -> CommitRecord:
        """The completed commit that ``ref`` names: an instant (exact), a :class:`Commit`, a
        date-time (the last commit that completed at or before it), ``"@N"`` (the N-th commit
        of the history, ``@-1`` the latest) or ``"latest"`` (:mod:`evonb.table.refs`)."""
        if isinstance(ref, str):
            ref = ref.strip()
            if is_latest(ref) or history_index(ref) is not None:
                ref = str(expand_ref(ref, self.timeline.completed(), table_name=self.name))
        if isinstance(ref, Commit | CommitRecord):
            return self.timeline.get(ref.instant)
        if isinstance(ref, str) and is_instant(ref):
            return self.timeline.get(ref)
        if isinstance(ref, str | datetime | date):
            try:
                return self.timeline.latest_at_or_before(ref)
            except CommitNotFoundError:
                raise
            except (ValueError, EvoError) as exc:
                raise CommitNotFoundError(
                    ref, [c.instant for c in self.timeline.completed()[-3:]],
                ) from exc
        raise CommitNotFoundError(ref, what="commit (give an instant, a Commit or a date-time)")

    def snapshot(self, as_of: CommitRef | None = None) -> Snapshot:
        """The live files and schema version as of a commit (default: the latest): the state
        right after that commit completed, i.e. the replay of every commit that completed up to
        and including it, in completion order. A date-time names the last commit that completed
        at or before it."""
        commits = self.timeline.completed()
        if as_of is not None:
            target = self.commit(as_of)
            commits = [c for c in commits if c.order <= target.order]
        key = (len(commits), commits[-1].instant, commits[-1].completion) if commits else None
        cached = self._snapshots.get(key)
        if cached is not None:
            return cached
        snap = replay(commits, INITIAL_VERSION)
        self._snapshots[key] = snap
        return snap

    # ------------------------------------------------------------------- DDL
    def alter(self, ddl: str) -> SchemaDiff:
        """Run ``ALTER TABLE`` statements (one new schema version); returns the diff.

        The statements change this table whatever table name they give (``ALTER TABLE t
        ...`` is the usual placeholder; ``%evo alter`` and the command line look the name up
        instead); statements naming two different tables are refused. No data file is
        touched. ``SET NOT NULL`` is checked against the data first.
        ``SET TBLPROPERTIES`` / ``UNSET TBLPROPERTIES`` statements change table properties
        (:meth:`set_properties`): they are checked before anything is committed and saved
        after the schema change.
        """

        parsed = parse_with_sources(ddl, alter_only=True)
        statements = [st for st, _ in parsed]
        # The base schema and the transaction's base commit come from one listing of the
        # timeline (taking the lock lists it again for the checks under it).
        with self.timeline.listing_held():
            update = ddl_to_update(self.schema, parsed, allow_set_not_null=True)
            to_set, to_unset, if_exists = property_changes(statements)
            properties = bool(to_set or to_unset)
            if properties:
                changed_config(self._config, to_set, to_unset, if_exists=if_exists,
                               root=self.root)
            if all(isinstance(st, SetProperties | UnsetProperties) for st in statements):
                changes = update.preview()
            else:
                changes = self.commit_schema_update(update, ddl=ddl)
        if properties:
            self.set_properties(to_set, unset=to_unset, if_exists=if_exists)
        return changes

    @property
    def properties(self) -> Mapping[str, str]:
        """The table properties (read-only; see :meth:`set_properties`)."""
        return self._config.properties

    def set_properties(self, values: Mapping[str, Any] | None = None, *,
                       unset: Iterable[str] = (), if_exists: bool = True) -> Mapping[str, str]:
        """Set table properties (text, numbers or booleans, stored as text: booleans
        ``true``/``false``; None is refused, ``unset`` removes) and remove those named in
        ``unset``; returns the properties now.

        Every change is checked first (:mod:`evonb.table.properties`): the value of a
        property evonb reads must parse and lie in range, an unknown ``evonb.*`` name is
        refused with the closest known one, and the record key, precombine, lock provider and
        adoption source cannot change. The config is reread and saved atomically under the
        table lock, so concurrent changes of other properties are kept. Operations that start
        afterwards use the new values; a property change is not a commit (it is not undone
        by rollback or time travel). ``SQL``: ``ALTER TABLE t SET TBLPROPERTIES (...)``.
        """
        with self.locked():
            fresh = TableConfig.load(self.root)
            new = changed_config(fresh, values, tuple(unset), if_exists=if_exists,
                                 root=self.root)
            new.save(self.root)
            self._config = new  # still under the lock: the saved file is this config
        table_changed(self)
        return new.properties

    def preview_alter(self, ddl: str) -> AlterPreview:
        """The diff ``alter(ddl)`` would make and its ``cost``, without committing: a type
        change metadata cannot express is ``"needs a rewrite"`` (see :meth:`rewrite`), with
        those changes in ``rewrites``, instead of an error."""

        return preview_alter(self, ddl)

    def preview_revert(self, to: Schema | str | CommitRef) -> RevertPreview:
        """The diff :meth:`revert_schema` would make, without committing (refused as it would
        be: see there)."""

        return plan_revert(self, to)

    def revert_schema(self, to: Schema | str | CommitRef) -> RevertPreview:
        """Make the fields of an older schema version current again, with their field IDs (as
        Iceberg's set-current-schema); returns the diff.

        ``to`` names the version: ``"v1"``, a version id, or a commit (an instant, ``"@N"``, a
        date-time: the schema in force then). The revert is one new schema version, committed
        as an ``alter`` whose operation is ``revert``: columns added since disappear, columns
        dropped since come back with the values of the files written before their drop (rows
        written while they were gone read their default, or null; a column that was NOT NULL
        comes back nullable), and ``max_column_id`` never decreases. No data file is touched.

        Refused (:class:`SchemaEvolutionError`) when a record key, precombine or partition
        column would change, when a column was widened since (it cannot be narrowed again), and
        when the schema already has the version's fields; an unknown ``to`` raises
        :class:`CommitNotFoundError`. A column made NOT NULL again is checked against the data
        first. :meth:`preview_revert` shows the diff without committing.
        """

        plan = plan_revert(self, to)
        base = plan.before
        txn = Transaction(self, "alter", plan={"operation": REVERT, "revert_to": plan.target})
        base_commit = txn.base
        self.validate_data(base, plan)
        checked = {c.field_id for c in plan.by_kind("nullability") if c.new is False}
        with txn, txn.locked():
            latest = self.schema
            if latest.version_id != base.version_id:
                # Serialized by the lock: the revert made again on the schema committed since.
                plan = plan_revert(self, plan.target, base=latest)
                base = latest
                tighten = {c.field_id for c in plan.by_kind("nullability") if c.new is False}
                if not tighten <= checked:
                    raise ConflictError(
                        f"The schema changed while the revert was prepared (it is version "
                        f"{latest.version_id} now), and against it the revert makes a column "
                        "NOT NULL unchecked",
                        winner=latest.version_id)
                if not tighten:
                    base_commit = self.timeline.last_completed()
            new = plan.after.with_version(txn.instant)
            check(self, Operation(
                kind="ddl", operation=REVERT, action="alter",
                base_instant=base_commit.instant if base_commit else None,
                base_completion=base_commit.completion if base_commit else None,
                base_schema_version=base.version_id, schema_version=new.version_id,
                schema_change="ddl", reads_data=plan.sets_not_null, instant=txn.instant,
            ))
            txn.save_version(new, revert_layout(self, base, new, plan.target))
            txn.complete(CommitMetadata.of(
                REVERT, new.version_id, base_version=base.version_id, revert_to=plan.target,
                changes=[c.to_dict() for c in plan.changes]))
        return dataclasses.replace(plan, after=new, committed=True)

    @contextlib.contextmanager
    def update_schema(self) -> Iterator[SchemaUpdate]:
        """``with t.update_schema() as u: u.add_column(...)``: commits on a clean exit only.

        ``u.preview()`` shows the diff without committing.
        """
        update = SchemaUpdate(self.schema, allow_set_not_null=True)
        yield update
        self.commit_schema_update(update)

    def check_protected(self, update: SchemaUpdate) -> None:
        """Refuse an update that drops or retypes a key, partition or precombine column."""
        protected = self._config.protected_ids  # one look (a request on object storage)
        for op in update.operations:
            if op.field_id in protected and op.kind in ("drop", "retype"):
                verb = "dropped" if op.kind == "drop" else "retyped"
                raise SchemaEvolutionError(
                    f"Key column {op.path!r} cannot be {verb}: it is a record key, precombine "
                    "or partition column",
                    path=op.path, field_id=op.field_id,
                    hint="renaming it works; to change keys, create a new table and copy",
                )

    def validate_data(self, base: Schema, changes: SchemaDiff) -> None:
        """Check the data against ``changes`` before they commit: a column made NOT NULL
        must hold no null (counted by :meth:`count_nulls`)."""
        targets = [c for c in changes.by_kind("nullability") if c.new is False]
        if not targets:
            return
        counts = self.count_nulls(base, [c.field_id for c in targets])
        for c, count in zip(targets, counts, strict=True):
            if count:
                raise DataValidationError(
                    f"Cannot SET NOT NULL on {c.old_path!r}: {count} rows hold null",
                    count=count,
                    hint="fill the nulls with an upsert first, or keep the column nullable",
                )

    def count_nulls(self, schema: Schema, field_ids: Sequence[int]) -> list[int]:
        """For each field ID, the rows holding a null there: data is read by an engine, so
        a table without one cannot check (``evonb.open_table`` gives one with Spark)."""
        raise EvoError("Checking the data for SET NOT NULL needs Spark",
                       hint="open the table with evonb.open_table()")

    def commit_schema_update(self, update: SchemaUpdate, *, ddl: str | None = None
                             ) -> SchemaDiff:
        """Commit ``update`` (built on an earlier schema: validated again under the lock
        against the schema committed meanwhile, :class:`ConflictError` if it no longer
        applies). :meth:`alter` and :meth:`update_schema` call it."""

        self.check_protected(update)
        base = update.base
        proposed = update.apply()
        check_reserved(proposed.column_names)
        changes = diff(base, proposed, moved=update.moved_ids)
        if not changes:
            return changes
        plan: dict[str, Any] = {"operation": "alter"}
        if ddl:
            plan["ddl"] = ddl
        txn = Transaction(self, "alter", plan=plan)  # failed attempts rolled back first
        base_commit = txn.base
        self.validate_data(base, changes)
        with txn, txn.locked():
            latest = self.schema
            if latest.version_id != base.version_id:
                # Serialized by the lock: validate against the schema committed meanwhile.
                base, proposed, changes = self._rebase_ddl(ddl, base, latest, changes)
                if not changes:
                    return changes  # nothing left to commit: the attempt is aborted
                base_commit = self.timeline.last_completed() if not _sets_not_null(
                    changes) else base_commit
            new = proposed.with_version(txn.instant)
            check(self, Operation(
                kind="ddl", operation="alter", action="alter",
                base_instant=base_commit.instant if base_commit else None,
                base_completion=base_commit.completion if base_commit else None,
                base_schema_version=base.version_id, schema_version=new.version_id,
                schema_change="ddl", reads_data=_sets_not_null(changes),
                instant=txn.instant,
            ))
            _, base_layout = self.version(base.version_id)
            txn.save_version(new, derive_layout(new, (base, base_layout)))
            txn.complete(CommitMetadata.of(
                "alter", new.version_id, base_version=base.version_id,
                changes=[c.to_dict() for c in changes.changes], **({"ddl": ddl} if ddl else {})))
        # The changes found above: ``new`` is ``proposed`` under the commit's version id.
        return dataclasses.replace(changes, after=new)

    def _rebase_ddl(self, ddl: str | None, base: Schema, latest: Schema, changes: SchemaDiff
                    ) -> tuple[Schema, Schema, SchemaDiff]:
        """Under the lock, after another commit changed the schema since ``base``: the DDL
        validated again against ``latest`` (``ConflictError`` when it no longer applies)."""

        winner = next((c for c in self.timeline.completed()
                       if c.metadata.get("schema_version") == latest.version_id), None)
        who = f"commit {winner.instant} ({winner.operation})" if winner else "another commit"
        if ddl is None:
            raise ConflictError(
                f"The schema changed while this change was prepared: {who} made version "
                f"{latest.version_id} (this change was made against {base.version_id})",
                winner=winner.instant if winner else latest.version_id,
                hint="re-read the table's schema and make the change again",
            )
        try:
            update = ddl_to_update(latest, ddl, allow_set_not_null=True)
            self.check_protected(update)
            proposed = update.apply()
        except EvoError as exc:
            raise ConflictError(
                f"The DDL no longer applies: {who} changed the schema to version "
                f"{latest.version_id} while it was prepared, and against that schema: "
                f"{exc.message}",
                winner=winner.instant if winner else latest.version_id,
            ) from exc
        rebased = diff(latest, proposed, moved=update.moved_ids)
        if _sets_not_null(rebased) and not _sets_not_null(changes):
            raise ConflictError(
                f"The DDL no longer applies unchanged: {who} changed the schema to version "
                f"{latest.version_id}, and against it the DDL sets NOT NULL unchecked",
                winner=winner.instant if winner else latest.version_id,
            )
        return latest, proposed, rebased

    def recover_failed(self) -> list[str]:
        """Roll back the failed attempts of processes that are gone (every commit starts so,
        see :class:`~evonb.table.transaction.Transaction`); their instants."""
        return rollback_failed(self)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the table's commit lock (``evonb.lock.timeout`` seconds at most to get it).
        A timeline listing held from before (:meth:`Timeline.listing_held`) is forgotten once
        the lock is taken: what is read under the lock is listed under it."""
        config = self._config
        lock = lock_for_table(self.root, config.properties)
        timeout = config.float_property("evonb.lock.timeout", 60.0)
        lock.acquire(timeout)
        self.timeline.forget_listing()
        self._held_lock = lock
        try:
            yield
        finally:
            self._held_lock = None
            lock.release()

    def verify_lock(self) -> None:
        """Before a commit point: raise :class:`~evonb.errors.ConflictError` if the lock held
        by :meth:`locked` was lost meanwhile (a lease that expired and was broken)."""
        verify = getattr(self._held_lock, "verify", None)
        if callable(verify):
            verify()

    def incremental_commits(self, start: CommitRef, end: CommitRef | None = None
                            ) -> list[CommitRecord]:
        """The commits an incremental read from ``start`` to ``end`` covers: those that
        completed after ``start`` and up to ``end`` (default: the latest), in completion
        order."""
        commits = self.timeline.completed()
        if isinstance(start, str) and start == INITIAL_VERSION:
            lo: tuple[str, str] | None = None
        else:
            lo = self.commit(start).order
        hi = self.commit(end).order if end is not None else None
        return [c for c in commits if (lo is None or c.order > lo)
                and (hi is None or c.order <= hi)]

    def reconcile_write(self, base: Schema, incoming: Schema) -> SchemaUpdate:
        """The schema change a write of ``incoming`` makes to ``base``, by the write properties
        (one look at the config: in object storage each look is a request)."""
        config = self._config
        protected = config.protected_ids
        return reconcile(
            base, incoming,
            add_columns=config.bool_property(PROP_ADD_COLUMNS, True),
            fill_missing=config.bool_property(PROP_FILL_MISSING, True),
            protected_ids=protected,
            widen=setting(config, "evonb.write.type_widening", "auto") == "auto",
        )

    def physical_query(self, schema: Schema, layout: Layout) -> Schema:
        """``schema`` with physical names (for rewriting files in that layout)."""
        return Schema(fields=physical_struct(schema, layout).fields,
                      version_id=schema.version_id, max_column_id=schema.max_column_id)

    def locate_files(self, urls: Sequence[str], files: Sequence[DataFile]) -> list[DataFile]:
        """Map Spark's ``_metadata.file_path`` values back to data files."""
        by_path = {str((self.root / f.path).resolve()): f for f in files}
        out = []
        for url in urls:
            local = unquote(urlparse(url).path) if url.startswith("file:") else url
            f = by_path.get(str(Path(local).resolve()))
            if f is not None:
                out.append(f)
        return out

    def drop(self) -> None:
        """Delete the table: its data files and metadata."""
        file_io().delete_folder(self.root)


def check_reserved(names: Sequence[str], *, writing: bool = False) -> None:
    """Refuse a top-level column named like evonb's hidden column (``_evo_commit_time``, the
    instant that wrote each row, in every data file): data and metadata would both claim it."""
    for name in names:
        if name.lower() in RESERVED:
            raise SchemaEvolutionError(
                f"Column name {name!r} is reserved: every data file holds evonb's hidden "
                f"column {META_COMMIT_TIME} (the instant that wrote each row)",
                path=name,
                hint=(f"drop it before writing: df.drop({name!r}) (a read with "
                      "meta_columns=True adds it)") if writing else "choose another name")


def _sets_not_null(changes: SchemaDiff) -> bool:
    """Whether ``changes`` make a column NOT NULL (a DDL validated against the data)."""
    return any(c.new is False for c in changes.by_kind("nullability"))


def _version_order(records: Sequence[CommitRecord]) -> list[str]:
    """The schema versions ``records`` refer to, each once, in the order they first appear."""
    versions: dict[str, None] = {}
    for record in records:
        v = record.metadata.get("schema_version")
        if v is not None:
            versions.setdefault(str(v), None)
    return list(versions)


def version_names(version_ids: Sequence[str]) -> dict[str, str]:
    """``{version id: "vN"}``: the readable name of each version, by its position."""
    return {v: version_name(i) for i, v in enumerate(version_ids)}


def vars_of(v: ColumnVersion) -> list[Any]:
    return [v.version_id, v.path, v.type, v.nullable, v.default, v.write_default, v.comment,
            v.change]


def _describe_change(prev: ColumnVersion | None, cur: ColumnVersion) -> str:
    if prev is None or prev.change == "dropped":
        return "added"
    parts = []
    if prev.path != cur.path:
        parts.append("renamed")
    if prev.type != cur.type:
        parts.append("retyped")
    if prev.nullable != cur.nullable:
        parts.append("nullability")
    if prev.default != cur.default or prev.write_default != cur.write_default:
        parts.append("default")
    if prev.comment != cur.comment:
        parts.append("comment")
    return ",".join(parts)


__all__ = ["BaseTable", "CommitRef", "TableMaker", "create_table", "open_table"]
