"""Publish Iceberg metadata (format version 2) for an evonb table's retained history.

Under ``<table>/metadata/``: one Iceberg snapshot per completed evonb commit that changes the
live data files (its snapshot ID is the commit's instant as a number, its timestamp the commit's
completion time, its schema the commit's schema version), one manifest per snapshot listing
every live data file, a manifest list per snapshot (both Avro, written by pyiceberg's own
writers), ``v<N>.metadata.json`` and ``version-hint.text`` holding ``N``. Schema-only commits add
a schema and move ``current-schema-id``. The data files are not copied: manifests point at them.

Nothing is exported wrong. States Iceberg cannot express exactly (type changes that are no
Iceberg promotion, required columns older files lack) and states no longer retained
(files or schema versions removed by a clean) are skipped; when the latest state is one,
publication stops at the last one exported and says why. Uncompacted
merge-on-read log blocks are refused with :class:`UncompactedLogsError` (an
:class:`IcebergExportError`).

Partition columns are identity partitions of every type evonb partitions by; each file's
partition values come from its own rows (its footer statistics, or the column read), null
included. A file whose rows hold more than one value of a partition column (Spark puts null
and ``''`` in one ``__HIVE_DEFAULT_PARTITION__`` folder) is listed under an unpartitioned spec:
read right, never pruned by partition.

Read and write defaults are published as ``initial-default`` and ``write-default``, which
need Iceberg format version 3: a table whose published schemas have defaults is published in
it (pyiceberg's version 2 writers with its version 3 schemas, the manifest lists' row IDs set
with fastavro), and stays in it.

Every file is written through :func:`evonb.table.fileio.file_io`. pyiceberg is an optional
library (``evonb[iceberg]``), imported when publishing.
"""

from __future__ import annotations

import io
import json
import logging
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

from evonb.errors import CommitNotFoundError, EvoError, MetadataCorruptError
from evonb.iceberg.schema import (
    HIDDEN_FIELD_ID,
    NAME_MAPPING_PROPERTY,
    IcebergExportError,
    UncompactedLogsError,
    has_defaults,
    iceberg_type,
    name_mapping,
    promotable,
    schema_json,
)
from evonb.schema.paths import walk
from evonb.schema.schema import Schema
from evonb.schema.types import WIDE_DECIMALS, Type
from evonb.table.data_file import DataFile
from evonb.table.fileio import file_io, object_store
from evonb.table.fsutil import location_uri, table_path
from evonb.table.instants import parse_instant
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.read_plan import physical_struct, types_after
from evonb.table.retention import check_readable as check_retained
from evonb.table.table import BaseTable, open_table
from evonb.table.timeline import CommitRecord

METADATA_DIR = "metadata"
VERSION_HINT = "version-hint.text"
FORMAT_VERSION = 2
"""The Iceberg format version published, unless a schema has defaults: those need
:data:`FORMAT_VERSION_DEFAULTS` (``initial-default`` and ``write-default``), and a table once
published in it stays in it (Iceberg never goes back a format version)."""
FORMAT_VERSION_DEFAULTS = 3
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncResult:
    """What :func:`sync` published: the metadata version ``N`` and file, the Iceberg snapshot
    ID of each published evonb commit (instant -> snapshot ID, oldest first), whether a new
    version was written, and ``blocked``: why the table's latest state is not exported (the
    column and the way out), None when it is."""

    version: int
    metadata_file: str
    snapshots: dict[str, int]
    written: bool
    blocked: str | None = None


def snapshot_id(instant: str) -> int:
    """The Iceberg snapshot ID of the evonb commit at ``instant`` (its 17 digits)."""
    return int(instant)


def _millis(instant: str) -> int:
    return int(parse_instant(instant).timestamp() * 1000)


def iceberg_location(path: Path) -> str:
    """A path as Iceberg metadata names it: the local path, ``s3://bucket/key`` in S3-compatible
    storage, or ``abfss://container@account.dfs.core.windows.net/path`` in Azure storage (the
    URI Iceberg's engines and pyiceberg open; evonb's internal ``s3:/...`` and ``az:/...``
    spellings name nothing outside evonb)."""
    return location_uri(path, spark=object_store(path) == "az")


class _Output:
    """A pyiceberg ``OutputFile`` that buffers and writes through evonb's ``file_io()``."""

    def __init__(self, target: Path, *, hold: bool = False) -> None:
        self.location = iceberg_location(target)
        self._target = target
        self._data = b""
        self._hold = hold  # keep the bytes only; the caller writes them

    def __len__(self) -> int:
        return len(self._data)

    def exists(self) -> bool:
        return file_io().exists(self._target)

    def create(self, overwrite: bool = False) -> io.BytesIO:
        return _Stream(self)

    def _publish(self, data: bytes) -> None:
        self._data = data
        if not self._hold:
            file_io().write(self._target, data)


class _Stream(io.BytesIO):
    def __init__(self, owner: _Output) -> None:
        super().__init__()
        self._owner = owner

    def close(self) -> None:
        if not self.closed:
            self._owner._publish(self.getvalue())
        super().close()


@dataclass
class _Published:
    """A published Iceberg snapshot under construction."""

    commit: CommitRecord
    snapshot_id: int
    sequence: int
    schema_version: str
    files: dict[str, tuple[DataFile, int]]  # path -> file, the snapshot that added it
    added: tuple[DataFile, ...]
    removed: tuple[DataFile, ...]


class Versions:
    """Schema versions, their layouts and Iceberg schema IDs (in order of first use)."""

    def __init__(self, table: BaseTable) -> None:
        self.table = table
        self.loaded: dict[str, tuple[Schema, Layout]] = {}
        self.ids: dict[str, int] = {}
        self._checked: set[tuple[str, str]] = set()

    def get(self, version: str) -> tuple[Schema, Layout]:
        if version not in self.loaded:
            self.loaded[version] = self.table.version(version)
        return self.loaded[version]

    def schema_id(self, version: str) -> int:
        self.get(version)
        return self.ids.setdefault(version, len(self.ids))

    def check_readable(self, file_version: str, version: str) -> None:
        """:class:`IcebergExportError` unless Iceberg reads files of ``file_version`` as
        ``version`` exactly (same or promoted types, and so is every type a value passes
        through in between: ``string`` to ``decimal(5,2)`` and back reads ``" 12 "`` as
        ``"12.00"``; a column the files lack is optional or has a read default)."""
        if (file_version, version) in self._checked:
            return
        old, old_layout = self.get(file_version)
        new, new_layout = self.get(version)
        for info in walk(new.fields):
            f = info.field
            column = ".".join(info.path)
            if old.has_id(f.id):
                before = old.field_by_id(f.id).type
                if before.is_primitive != f.type.is_primitive or (
                        not f.type.is_primitive and type(before) is not type(f.type)):
                    reason = f"its type changed from {before} to {f.type}"
                elif f.type.is_primitive and not promotable(
                        iceberg_type(before, column), iceberg_type(f.type, column)):
                    reason = (f"its type changed from {before} to {f.type}, which is not an "
                              "Iceberg type promotion")
                elif f.type.is_primitive and (step := _unpromoted_step(
                        before, new_layout.history(f.id, f.type),
                        old_layout.history(f.id, before), column)) is not None:
                    reason = (f"its values went from {step[0]} to {step[1]} in between, "
                              "which is not an Iceberg type promotion")
                else:
                    continue
            elif f.default is not None:
                continue  # Iceberg format version 3 carries it as the initial-default
            elif not f.nullable:
                reason = "it is required but files written before it existed lack it"
            else:
                continue
            raise IcebergExportError(
                f"Column {column!r} (field ID {f.id}) of schema version {version} cannot be "
                f"exported to Iceberg: {reason}; live files were written with schema version "
                f"{file_version}",
                hint="rewrite the table's data files in the current schema (t.rewrite()), "
                "then sync again")
        self._checked.add((file_version, version))


def _unpromoted_step(stored: Type, path: tuple[Type, ...] | None,
                     own: tuple[Type, ...] | None, column: str) -> tuple[Type, Type] | None:
    """The first type change a value stored as ``stored`` goes through on its way along the
    column's type history ``path`` (``own``: the history its file's version knew) that is
    not an Iceberg promotion; None when every one is (or no history is known)."""
    if path is None:
        return None
    chain = (stored, *types_after(path, own, stored))
    for a, b in pairwise(chain):
        if a != b and not promotable(iceberg_type(a, column), iceberg_type(b, column)):
            return a, b
    return None


_EPOCH = date(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
_UNSET = object()

UNPARTITIONED_SPEC_ID = 1
"""The spec of data files that hold more than one value of a partition column (Spark writes
null and ``''`` of a string column to the same ``__HIVE_DEFAULT_PARTITION__`` folder): Iceberg
lists them unpartitioned, so readers scan them for every filter and still read them right."""

# The Python type a footer statistic (or a value read) has for each Iceberg partition type.
_PY_TYPES: dict[str, type] = {"int": int, "long": int, "boolean": bool, "float": float,
                              "double": float, "string": str, "binary": bytes, "date": date,
                              "timestamp": datetime, "timestamptz": datetime}


def _manifest_value(kind: str, value: Any) -> Any:
    """``value`` (a Python value of Iceberg type ``kind``) as Iceberg manifests hold it:
    days for dates, microseconds for timestamps (naive ``timestamptz`` values are UTC, as
    INT96 files store them), a Decimal of the type's scale."""
    if value is None:
        return None
    if kind == "date":
        return (value - _EPOCH).days
    if kind == "timestamptz":
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return (aware - _EPOCH_UTC) // _MICRO
    if kind == "timestamp":
        naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return (naive - _EPOCH_UTC.replace(tzinfo=None)) // _MICRO
    if kind.startswith("decimal("):
        scale = int(kind[8:-1].split(",")[1])
        return Decimal(value).quantize(Decimal(1).scaleb(-scale), context=WIDE_DECIMALS)
    return value


def _expected(kind: str, value: Any) -> bool:
    """Whether ``value`` has the Python type of Iceberg type ``kind`` (bool is no int)."""
    want: type = Decimal if kind.startswith("decimal(") else _PY_TYPES[kind]
    return type(value) is want or (want is datetime and isinstance(value, datetime))


def _from_footer(footer: Any, column: int, kind: str) -> Any:
    """The one value of leaf ``column`` in every row of the file, from the footer's statistics
    (None: every row is null); ``_UNSET`` when the statistics cannot tell exactly (they are
    missing, disagree, or are of floating point values, whose zeros compare equal)."""
    nulls, seen = 0, []
    for i in range(footer.num_row_groups):
        stats = footer.row_group(i).column(column).statistics
        if stats is None or not stats.has_null_count:
            return _UNSET
        nulls += stats.null_count
        if stats.null_count < footer.row_group(i).num_rows:
            if not stats.has_min_max:
                return _UNSET
            try:
                seen += [stats.min, stats.max]
            except OverflowError:  # a date past year 9999: read from the data instead
                return _UNSET
    if nulls == footer.num_rows:
        return None
    if nulls or kind in ("float", "double") or any(v != seen[0] for v in seen) or not all(
            _expected(kind, v) for v in seen):
        return _UNSET
    return seen[0]


def _from_data(table: BaseTable, f: DataFile, physical: str, kind: str) -> Any:
    """The one value of column ``physical`` in every row of ``f``, read from the file;
    ``_UNSET`` when the rows hold more than one (floating point values compared bit by bit)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with file_io().open_data(table.root / f.path) as fh:
        col = pq.ParquetFile(fh, coerce_int96_timestamp_unit="us").read(
            columns=[physical]).column(0).combine_chunks()
    if len(col) == 0:
        return _UNSET
    if pa.types.is_floating(col.type):
        bits = pa.int32() if col.type == pa.float32() else pa.int64()
        if len(pc.unique(col.view(bits))) != 1:
            return _UNSET
    values = pc.unique(col)
    if len(values) != 1:
        return _UNSET
    try:
        return values[0].as_py()
    except OverflowError:  # a date past year 9999: the file is listed unpartitioned
        return _UNSET


def partition_values(table: BaseTable, f: DataFile, versions: Versions, footer: Any
                     ) -> tuple[Any, ...] | None:
    """The identity partition values of data file ``f``, as Iceberg manifests hold them, taken
    from the file's own rows (evonb reads partition columns from the files, not from folder
    names): the footer's statistics where they state one value exactly, else the column read.
    None when a partition column holds more than one value in the file (it is then listed
    unpartitioned, :data:`UNPARTITIONED_SPEC_ID`)."""
    schema, file_layout = versions.get(f.version)
    leaves = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
    out: list[Any] = []
    for fid in table.config.partition_ids:
        physical = file_layout.physical.get(fid)
        kind = iceberg_type(schema.field_by_id(fid).type, schema.path_of(fid))
        assert isinstance(kind, str)  # partition columns are top-level primitives
        if physical not in leaves:
            return None  # written before the column existed: every row null, read as such
        value = _UNSET if footer.num_rows == 0 else _from_footer(footer, leaves[physical], kind)
        if value is _UNSET:
            value = _from_data(table, f, physical, kind)
        if value is _UNSET or (value is not None and not _expected(kind, value)):
            return None
        out.append(_manifest_value(kind, value))
    return tuple(out)


@dataclass
class Plan:
    """The snapshots to publish, the current schema version (the schema of the last
    expressible state), and why the latest state is not exported (None when it is)."""

    snapshots: list[_Published]
    current: str
    blocked: IcebergExportError | None


def plan_publication(table: BaseTable, versions: Versions) -> Plan:
    """Replay the timeline; every state Iceberg can express exactly (its live files readable
    in its schema) is kept, a data change of one is a snapshot; states that cannot be
    expressed are skipped, so publication resumes once a rewrite makes the table expressible
    again."""
    live: dict[str, DataFile] = {}
    logs: dict[str, DataFile] = {}
    published: dict[str, tuple[DataFile, int]] = {}
    out: list[_Published] = []
    version = current = ""
    uncompacted: CommitRecord | None = None
    blocked: IcebergExportError | None = None
    retained: dict[str, bool] = {}
    in_window = False
    for commit in table.timeline.completed():
        meta = commit.metadata
        for path in meta.removed:
            live.pop(path, None)
            logs.pop(path, None)
        for f in meta.added:
            (logs if f.kind == "log" else live)[f.path] = f
        version = meta.schema_version or version
        if any(f.base in live for f in logs.values()):
            uncompacted = commit
            continue
        uncompacted = None
        try:
            if not in_window:  # the window only ever opens (retention is by completion order)
                check_retained(table, commit.instant)
                in_window = True
            # every state, schema-only ones too: the current schema must read the live files
            versions.check_readable(version, version)
            for f in live.values():
                versions.check_readable(f.version, version)
            gone = [p for p in live if not retained.setdefault(
                p, file_io().exists(table.root / p))]
            if gone:
                raise IcebergExportError(
                    f"The state after commit {commit.instant} is no longer retained: its data "
                    f"file {gone[0]} was removed (by a clean)")
        except (CommitNotFoundError, MetadataCorruptError) as exc:
            blocked = IcebergExportError(  # cleaned: evonb's time travel refuses it too
                f"The state after commit {commit.instant} is no longer retained: {exc.message}")
            continue
        except IcebergExportError as exc:
            blocked = exc
            continue
        blocked, current = None, version
        if live.keys() == published.keys():
            continue  # no data change: a schema-only commit, a clean, ...
        sid, seq = snapshot_id(commit.instant), 0  # the sequence number is given by sync
        added = tuple(f for p, f in live.items() if p not in published)
        removed = tuple(e[0] for p, e in published.items() if p not in live)
        published = {p: published.get(p, (f, sid)) for p, f in live.items()}
        out.append(_Published(commit, sid, seq, version, dict(published), added, removed))
    if uncompacted is not None:
        raise UncompactedLogsError(
            f"The merge-on-read table {table.name} has log blocks not yet compacted (last "
            f"commit {uncompacted.instant}): Iceberg metadata cannot express them",
            hint="compact the table (its Iceberg view advances at each compaction), then "
            "sync again")
    if not current:
        raise blocked or IcebergExportError(f"The table {table.name} has no schema version")
    return Plan(out, current, blocked)


def _file_stats(f: DataFile, versions: Versions, footer: Any) -> dict[str, Any]:
    """Per column value and null counts and lower/upper bounds (by field ID) of data file
    ``f``, from its Parquet footer, computed by pyiceberg's own statistics code against the
    file's physical schema (its schema version with physical names, its own types). Empty when
    the footer's statistics cannot be read that way (a reader then scans the file: never
    wrong)."""
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.schema import Schema as IceSchema

    schema, layout = versions.get(f.version)
    physical = schema_json(Schema(fields=physical_struct(schema, layout).fields))
    physical["fields"].append({"id": HIDDEN_FIELD_ID, "name": META_COMMIT_TIME,
                               "required": False, "type": "string"})
    try:
        ice = IceSchema.model_validate(physical)
        stats = data_file_statistics_from_parquet_metadata(
            footer, compute_statistics_plan(ice, {}), parquet_path_to_id_mapping(ice))
        out = stats.to_serialized_dict()
    except (ValueError, KeyError, TypeError, NotImplementedError, OverflowError) as exc:
        # OverflowError: a date past year 9999, which Python's dates do not hold
        logger.info("no column statistics for %s: %s", f.path, exc)
        return {}
    if out.pop("record_count") != f.rows:
        return {}
    for key in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                "lower_bounds", "upper_bounds"):
        out[key].pop(HIDDEN_FIELD_ID, None)
    return out


def _spec_json(table: BaseTable, schema: Schema) -> dict[str, Any]:
    """The identity partition spec (ID 0) of the table's partition columns."""
    return {"spec-id": 0, "fields": [
        {"source-id": fid, "field-id": 1000 + i, "name": schema.path_of(fid),
         "transform": "identity"}
        for i, fid in enumerate(table.config.partition_ids)]}


_UNPARTITIONED = {"spec-id": UNPARTITIONED_SPEC_ID, "fields": []}


def _facts(w: _Writing, path: str, f: DataFile) -> tuple[dict[str, Any], Any]:
    """The footer statistics and partition values (None: unpartitioned) of a data file, read
    once per sync."""
    import pyarrow.parquet as pq

    if path not in w.stats:
        with file_io().open_data(w.table.root / f.path) as fh:
            footer = pq.read_metadata(fh)
        w.stats[path] = _file_stats(f, w.versions, footer)
        w.values[path] = (partition_values(w.table, f, w.versions, footer)
                          if w.spec["fields"] else ())
    return w.stats[path], w.values[path]


@dataclass
class _Writing:
    """What writing the manifests of one sync needs."""

    table: BaseTable
    versions: Versions
    folder: Path
    tag: str  # unique per sync: file names never clash with another sync's
    values: dict[str, tuple[Any, ...] | None]  # path -> partition values (None: unpartitioned)
    spec: dict[str, Any]
    sequences: dict[int, int]  # snapshot ID -> sequence number
    stats: dict[str, dict[str, Any]]  # path -> footer statistics, read once per sync
    unpartitioned: bool = False  # a manifest of the unpartitioned spec was written
    fmt: int = FORMAT_VERSION  # the Iceberg format version published


def _manifest_files(w: _Writing, snap: _Published) -> list[Any]:
    """Write the manifests of ``snap`` (every live file: those with partition values under
    spec 0, any others under the unpartitioned spec) and return their ManifestFiles."""
    from pyiceberg.manifest import (
        DataFile as IceDataFile,
    )
    from pyiceberg.manifest import (
        DataFileContent,
        FileFormat,
        ManifestEntry,
        ManifestEntryStatus,
    )
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema as IceSchema
    from pyiceberg.typedef import Record

    if not snap.files:
        return []
    schema, _ = w.versions.get(snap.schema_version)
    ice_schema = IceSchema.model_validate(
        schema_json(schema, w.versions.schema_id(snap.schema_version),
                    defaults=w.fmt == FORMAT_VERSION_DEFAULTS))
    by_spec: dict[int, list[tuple[str, DataFile, int]]] = {}
    for path, (f, added_by) in sorted(snap.files.items()):
        _, values = _facts(w, path, f)
        spec_id = 0 if values is not None else UNPARTITIONED_SPEC_ID
        by_spec.setdefault(spec_id, []).append((path, f, added_by))
    out = []
    for spec_id, files in sorted(by_spec.items()):
        spec = w.spec if spec_id == 0 else _UNPARTITIONED
        w.unpartitioned |= spec_id == UNPARTITIONED_SPEC_ID
        output = _Output(w.folder / f"{snap.snapshot_id}-{w.tag}-m{spec_id}.avro")
        writer = _manifest_writer(w.fmt, PartitionSpec.model_validate(spec), ice_schema,
                                  output, snap.snapshot_id)
        with writer:
            for path, f, added_by in files:
                seq = w.sequences[added_by]
                stats, values = _facts(w, path, f)
                data_file = IceDataFile.from_args(
                    content=DataFileContent.DATA, file_path=iceberg_location(w.table.root / path),
                    file_format=FileFormat.PARQUET, partition=Record(*(values or ())),
                    record_count=f.rows, **stats, file_size_in_bytes=f.bytes)
                data_file.spec_id = spec_id
                if added_by == snap.snapshot_id:
                    writer.add(ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED, snapshot_id=snap.snapshot_id,
                        data_file=data_file))
                else:
                    writer.existing(ManifestEntry.from_args(
                        status=ManifestEntryStatus.EXISTING, snapshot_id=added_by,
                        sequence_number=seq, file_sequence_number=seq, data_file=data_file))
        out.append(writer.to_manifest_file())
    return out


def _manifest_writer(fmt: int, spec: Any, schema: Any, output: _Output, snapshot_id: int
                     ) -> Any:
    """pyiceberg's manifest writer of format version ``fmt``: its own for 2; for 3, its
    version 2 writer with its version 3 file schema (pyiceberg reads version 3 manifests but
    does not offer a writer yet; the data file fields version 3 adds are optional)."""
    from pyiceberg.manifest import ManifestWriterV2, write_manifest

    if fmt == FORMAT_VERSION:
        return write_manifest(fmt, spec, schema, output, snapshot_id,  # type: ignore[arg-type]
                              "deflate")

    class _WriterV3(ManifestWriterV2):
        @property
        def version(self) -> Any:
            return FORMAT_VERSION_DEFAULTS

    return _WriterV3(spec, schema, output, snapshot_id, "deflate")  # type: ignore[arg-type]


def _manifest_list(w: _Writing, snap: _Published, parent: int | None,
                   first_row_id: int | None) -> tuple[str, int]:
    """Write the manifest list of ``snap``; returns its location and, for format version 3,
    the number of row IDs its data manifests take from ``first_row_id`` on (Iceberg's row
    lineage: each data manifest's ``first_row_id`` is the next free one)."""
    from pyiceberg.manifest import ManifestListWriterV2, write_manifest_list

    manifests = _manifest_files(w, snap)
    target = w.folder / f"snap-{snap.snapshot_id}-{snap.sequence}-{w.tag}.avro"
    if w.fmt == FORMAT_VERSION:
        output = _Output(target)
        with write_manifest_list(FORMAT_VERSION, output, snap.snapshot_id, parent,  # type: ignore[arg-type]
                                 snap.sequence, "deflate") as writer:
            writer.add_manifests(manifests)
        return output.location, 0

    class _ListWriterV3(ManifestListWriterV2):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self._format_version = FORMAT_VERSION_DEFAULTS  # type: ignore[assignment]
            self._meta["format-version"] = str(FORMAT_VERSION_DEFAULTS)

    held = _Output(target, hold=True)
    with _ListWriterV3(held, snap.snapshot_id, parent, snap.sequence, "deflate") as writer:
        writer.add_manifests(manifests)
    data, taken = _with_first_row_ids(held._data, first_row_id or 0)
    file_io().write(target, data)
    return iceberg_location(target), taken


def _with_first_row_ids(avro: bytes, first_row_id: int) -> tuple[bytes, int]:
    """The manifest list ``avro`` with ``first_row_id`` set on every data manifest (pyiceberg
    leaves it null), in order from ``first_row_id``; and the number of row IDs taken."""
    import fastavro

    stream = io.BytesIO(avro)  # the bytes pyiceberg wrote, in memory
    reader = fastavro.reader(stream)
    schema = reader.writer_schema
    meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    records = list(reader)
    next_id = first_row_id
    for record in records:
        if record.get("content", 0) == 0 and record.get("first_row_id") is None:
            record["first_row_id"] = next_id
            next_id += (record.get("added_rows_count") or 0) + (
                record.get("existing_rows_count") or 0)
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec="deflate", metadata=meta)
    return out.getvalue(), next_id - first_row_id


def _summary(snap: _Published) -> dict[str, str]:
    if snap.added and snap.removed:
        operation = "overwrite"
    elif snap.removed:
        operation = "delete"
    else:
        operation = "append"
    files = [e[0] for e in snap.files.values()]
    return {
        "operation": operation,
        "added-data-files": str(len(snap.added)),
        "deleted-data-files": str(len(snap.removed)),
        "added-records": str(sum(f.rows for f in snap.added)),
        "deleted-records": str(sum(f.rows for f in snap.removed)),
        "added-files-size": str(sum(f.bytes for f in snap.added)),
        "removed-files-size": str(sum(f.bytes for f in snap.removed)),
        "total-data-files": str(len(files)),
        "total-records": str(sum(f.rows for f in files)),
        "total-files-size": str(sum(f.bytes for f in files)),
        "total-delete-files": "0",
        "total-position-deletes": "0",
        "total-equality-deletes": "0",
        "evonb.instant": snap.commit.instant,
        "evonb.operation": snap.commit.operation,
    }


def published_metadata(folder: Path) -> tuple[int, dict[str, Any]] | None:
    """The latest published metadata version and its JSON, or None."""
    io_ = file_io()
    try:
        n = int(io_.read(folder / VERSION_HINT).decode("utf-8").strip())
        return n, json.loads(io_.read(folder / f"v{n}.metadata.json"))
    except FileNotFoundError:
        return None
    except (ValueError, json.JSONDecodeError) as exc:
        raise EvoError(f"The Iceberg metadata under {folder} is unreadable: {exc}",
                       hint=f"remove {folder} and sync again (the data is not affected)"
                       ) from None


_VOLATILE = ("last-updated-ms", "metadata-log", "table-uuid")


def _reusable(manifest_list: str) -> bool:
    """Whether a published manifest list can be listed again: it exists and is named as
    :func:`iceberg_location` names it. Earlier releases named object-store files with evonb's
    internal spelling (``s3:/bucket/...``), which no reader opens: such a snapshot's manifests
    and list are written anew."""
    path = table_path(manifest_list)
    return iceberg_location(path) == manifest_list and file_io().exists(path)


def sync(table: BaseTable | str | os.PathLike[str]) -> SyncResult:
    """Publish Iceberg metadata for the table's retained history under ``<table>/metadata/``
    (a new ``v<N>.metadata.json`` and ``version-hint.text``; nothing new when the published
    metadata already says the same). States Iceberg cannot express exactly are skipped: when
    the latest is one, publication stops at the last expressible state and
    :attr:`SyncResult.blocked` says why. :class:`IcebergExportError` for a merge-on-read table
    with log blocks not yet compacted."""
    from pyiceberg.table.metadata import TableMetadataUtil

    t = table if isinstance(table, BaseTable) else open_table(table)
    folder = t.root / METADATA_DIR
    versions = Versions(t)
    plan = plan_publication(t, versions)
    snaps, current = plan.snapshots, plan.current
    blocked = str(plan.blocked) if plan.blocked else None
    previous = published_metadata(folder)
    prev_specs = previous[1].get("partition-specs") or [] if previous else []
    prior_snaps = {s["snapshot-id"]: s for s in (previous[1].get("snapshots") or [])
                   } if previous else {}
    # Sequence numbers never go back: a snapshot published before keeps its number, a new one
    # gets the next after every number published so far.
    last_seq = previous[1].get("last-sequence-number", 0) if previous else 0
    before = 0  # the parent's sequence number
    for snap in snaps:
        old = prior_snaps.get(snap.snapshot_id)
        if old is not None and old.get("sequence-number", 0) > before:
            snap.sequence = old["sequence-number"]
        else:
            last_seq += 1
            snap.sequence = last_seq
        before = snap.sequence
    prev_fmt = previous[1].get("format-version", FORMAT_VERSION) if previous else FORMAT_VERSION
    fmt = FORMAT_VERSION_DEFAULTS if prev_fmt == FORMAT_VERSION_DEFAULTS or any(
        has_defaults(versions.get(v)[0]) for v in {current, *(s.schema_version for s in snaps)}
    ) else FORMAT_VERSION
    v3 = fmt == FORMAT_VERSION_DEFAULTS
    # Row IDs (format version 3) never go back either.
    next_row_id = previous[1].get("next-row-id", 0) if previous and v3 else 0
    w = _Writing(t, versions, folder, uuid.uuid4().hex[:12], {},
                 _spec_json(t, versions.get(current)[0]),
                 {s.snapshot_id: s.sequence for s in snaps}, {}, fmt=fmt)
    snapshots: list[dict[str, Any]] = []
    parent: int | None = None
    for snap in snaps:
        old = prior_snaps.get(snap.snapshot_id)
        manifest_list = None
        if (old is not None and old.get("parent-snapshot-id") == parent
                and prev_fmt == fmt
                and old.get("sequence-number") == snap.sequence
                and old.get("schema-id") == versions.schema_id(snap.schema_version)
                and _reusable(old["manifest-list"])):
            manifest_list = old["manifest-list"]
            rows = (old.get("first-row-id"), old.get("added-rows")) if v3 else (None, None)
        if manifest_list is None:
            manifest_list, taken = _manifest_list(w, snap, parent, next_row_id)
            rows = (next_row_id, taken) if v3 else (None, None)
            next_row_id += taken
        entry: dict[str, Any] = {
            "snapshot-id": snap.snapshot_id,
            "sequence-number": snap.sequence,
            "timestamp-ms": _millis(snap.commit.completion),
            "manifest-list": manifest_list,
            "summary": _summary(snap),
            "schema-id": versions.schema_id(snap.schema_version),
        }
        if v3:
            entry["first-row-id"], entry["added-rows"] = rows
        if parent is not None:
            entry["parent-snapshot-id"] = parent
        snapshots.append(entry)
        parent = snap.snapshot_id
    current_id = versions.schema_id(current)
    used = sorted(versions.ids.items(), key=lambda kv: kv[1])
    last_column_id = max(versions.get(v)[0].max_column_id for v, _ in used)
    mapping = name_mapping(versions.loaded[v] for v in sorted(versions.loaded))
    body: dict[str, Any] = {
        "format-version": fmt,
        "table-uuid": previous[1]["table-uuid"] if previous else str(uuid.uuid4()),
        "location": iceberg_location(t.root),
        "last-sequence-number": max([last_seq, *(s.sequence for s in snaps)]),
        "last-updated-ms": 0,
        "last-column-id": last_column_id,
        "current-schema-id": current_id,
        "schemas": [schema_json(versions.get(v)[0], i, defaults=v3) for v, i in used],
        "default-spec-id": 0,
        "partition-specs": [w.spec, *([_UNPARTITIONED] if w.spec["fields"] and (
            w.unpartitioned or any(spec.get("spec-id") == UNPARTITIONED_SPEC_ID
                                   for spec in prev_specs)) else [])],
        "last-partition-id": 999 + len(w.spec["fields"]),
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {NAME_MAPPING_PROPERTY: json.dumps(mapping, separators=(",", ":")),
                       "evonb.table": t.name},
        "current-snapshot-id": parent,
        "refs": {"main": {"snapshot-id": parent, "type": "branch"}} if parent else {},
        "snapshots": snapshots,
        "snapshot-log": [{"timestamp-ms": s["timestamp-ms"], "snapshot-id": s["snapshot-id"]}
                         for s in snapshots],
        "metadata-log": [],
    }
    if v3:
        body["next-row-id"] = next_row_id
    ids = {s.commit.instant: s.snapshot_id for s in snaps}
    if previous is not None:
        n_prev, prev = previous
        same = all(prev.get(k) == v for k, v in body.items() if k not in _VOLATILE)
        if same:
            return SyncResult(n_prev, iceberg_location(folder / f"v{n_prev}.metadata.json"),
                              ids, False, blocked)
        body["metadata-log"] = [*prev.get("metadata-log", []), {
            "timestamp-ms": prev.get("last-updated-ms", 0),
            "metadata-file": iceberg_location(folder / f"v{n_prev}.metadata.json")}]
    last_ms = snapshots[-1]["timestamp-ms"] if snapshots else 0
    prev_ms = previous[1].get("last-updated-ms", 0) if previous else 0
    body["last-updated-ms"] = max(last_ms, prev_ms, _millis(t.timeline.completed()[-1].completion))
    text = json.dumps(body, indent=1)
    TableMetadataUtil.parse_raw(text)  # the reader's own check of what is about to be published
    n = previous[0] + 1 if previous else 1
    target = folder / f"v{n}.metadata.json"
    try:
        file_io().write_if_absent(target, text.encode("utf-8"))
    except FileExistsError:
        raise EvoError(f"Another sync published {target} at the same time",
                       hint="run the sync again") from None
    file_io().write(folder / VERSION_HINT, f"{n}\n".encode())
    return SyncResult(n, iceberg_location(target), ids, True, blocked)


__all__ = ["METADATA_DIR", "UNPARTITIONED_SPEC_ID", "VERSION_HINT", "Plan", "SyncResult",
           "Versions", "iceberg_location", "partition_values", "plan_publication",
           "published_metadata", "snapshot_id", "sync"]
