"""Merge-on-read tables: upserts and deletes as log blocks, merged with the base files on read.

A *file group* is a base file and the log blocks written beside it. An upsert or delete on a
merge-on-read table finds the base file of every incoming key and appends one log block per file
group and task (see :mod:`evonb.spark.avro_log`); rows whose keys are in no base file go to new
base files. A snapshot read merges each file group by record key: a delete marker removes what
came before it, and among the rest the row with the larger precombine value wins (nulls lose; on
a tie the later instant wins: the rule of :mod:`evonb.table.precombine`, compiled by
:mod:`evonb.spark.precombine`). Base files and log blocks are each read with the schema version
they were written with and projected by field ID onto the query schema before the merge, so an
update to a column dropped since is ignored and a column added later reads its default where a
block does not have it. The log records of a file group are resolved per key first. Blocks
that carry the base row position of each record (and list the base rows they replace) are
merged by position: the base scan drops those rows with a bitmap filter and the winning records
are added, with no join (read by Spark's own reader when one commit wrote all of a group's
blocks, see :func:`position_winners`). Other groups (older blocks, blocks of several schema
versions) are merged by key: the resolved records are joined to the base rows (broadcast when
the logs are small), so base files are not shuffled either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import lru_cache, reduce
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from evonb.errors import EvoError
from evonb.schema.schema import Schema
from evonb.schema.types import StructType
from evonb.spark import position_source
from evonb.spark.arrow_collect import key_list, to_arrow
from evonb.spark.avro_fast import read_header_sync
from evonb.spark.avro_log import (
    BASE,
    BASE_ROWS_KEY,
    DEL,
    DELETED,
    DROP_KEY,
    GROUP,
    LOG_FORMAT_PROPERTY,
    OVER,
    POS,
    POSITIONS_PROPERTY,
    VALID,
    avro_supported,
    block_avro_schema,
    block_header,
    block_struct,
    decode_positions,
    read_log_blocks,
    read_resolved_groups,
    write_log_blocks,
)
from evonb.spark.block_scan import (
    JVM_READ_PROPERTY,
    jvm_blocks_available,
    jvm_readable,
    scan_blocks,
)
from evonb.spark.columns import spark_read_type, to_column
from evonb.spark.handles import SparkTableHandle, WriteJobHandle
from evonb.spark.literals import long_array
from evonb.spark.mor_driver import (
    BASE_PRE,
    driver_lookup_limits,
    key_query,
    takes_driver_path,
    write_delta_here,
)
from evonb.spark.precombine import beats, first_per_key
from evonb.spark.reader import read_files
from evonb.table.file_checks import file_error
from evonb.table.fileio import file_io, is_object_path
from evonb.table.fsutil import remove_data_files
from evonb.table.key_stats import no_key_in_two
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.lru import LRU
from evonb.table.precombine import ordering, precombine_key
from evonb.table.read_plan import Via, plan_group, read_paths, referenced_columns
from evonb.table.snapshot import DataFile, Snapshot

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

ORDER = "__evo_order"
SEQ = "__evo_seq"
BROADCAST_LOG_BYTES = 64 * 1024 * 1024
POSITION_MAX_ROWS = 64 * 1024 * 1024
"""Base rows one read merges by position at most (their bitmap, a bit a row, is a literal in
the query plan); the groups beyond are merged by key."""
FILE = "_evo_file"
DEFAULT_LOG_FORMAT = "avro"
AVRO_CODEC_PROPERTY = "evonb.mor.avro.codec"
DEFAULT_AVRO_CODEC = "null"


def log_format(table: SparkTableHandle) -> str:
    """The log format of new blocks: the ``evonb.mor.log_format`` property (``avro``, the
    default, or ``parquet``)."""
    fmt = (table.raw_config.property(LOG_FORMAT_PROPERTY, DEFAULT_LOG_FORMAT) or "").strip().lower()
    if fmt not in ("avro", "parquet"):
        raise EvoError(f"Table property {LOG_FORMAT_PROPERTY}={fmt!r} is not a log format",
                       hint="use avro or parquet")
    return fmt


def file_groups(snap: Snapshot) -> dict[str, list[DataFile]]:
    """The live log blocks of each base file that has any, oldest first."""
    out: dict[str, list[DataFile]] = {}
    for log in sorted(snap.logs, key=lambda f: (f.instant, f.path)):
        out.setdefault(str(log.base), []).append(log)
    return out


def subset(snap: Snapshot, bases: Sequence[DataFile]) -> Snapshot:
    """The part of ``snap`` made of ``bases`` and their log blocks."""
    keep = {f.path for f in bases}
    return replace(snap, files=tuple(bases),
                   logs=tuple(f for f in snap.logs if f.base in keep))


def since(snap: Snapshot, instants: Collection[str]) -> Snapshot:
    """The file groups of ``snap`` with data written by the commits ``instants`` (an
    incremental read): base files they wrote, and base files with a log block they wrote
    (whole). A file only holds rows of commits that completed no later than the one that wrote
    it, so these groups hold every row the commits wrote that is still live."""
    wanted = set(instants)
    touched = {f.base for f in snap.logs if f.instant in wanted}
    return subset(snap, [f for f in snap.files if f.instant in wanted or f.path in touched])


# ------------------------------------------------------------------------------- reading
def _merge_columns(table: SparkTableHandle, query: Schema) -> tuple[Schema, list[str], str | None,
                                                          list[str]]:
    """``query`` extended with the key and precombine columns it lacks; their names, and the
    names of the added columns (to drop after the merge)."""
    config = table.raw_config
    wanted = [*config.primary_key_ids]
    if config.precombine_id is not None:
        wanted.append(config.precombine_id)
    fields = list(query.fields)
    extra = []
    latest = table.schema
    for fid in wanted:
        if not (query.has_id(fid) and query.parent_of(fid) == -1):
            name = f"__evo_k{fid}"
            fields.append(latest.field_by_id(fid).replace(name=name))
            extra.append(name)
    ext = Schema(fields=tuple(fields), version_id=query.version_id,
                 max_column_id=query.max_column_id) if extra else query
    keys = [ext.field_by_id(i).name for i in config.primary_key_ids]
    pre = ext.field_by_id(config.precombine_id).name if config.precombine_id is not None else None
    return ext, keys, pre, extra


def read_logs(table: SparkTableHandle, logs: Sequence[DataFile], query: Schema,
              via: Via | None = None, *, group: bool = False) -> DataFrame:
    """Log records projected onto ``query`` by field ID (``via``: see
    :func:`~evonb.table.read_plan.type_paths`), with ``_evo_commit_time`` and
    ``_evo_deleted`` (one read per schema version of the blocks); ``group``: and
    :data:`~evonb.spark.avro_log.GROUP`, the name of each record's base file."""
    from pyspark.sql import functions as F

    by_version: dict[str, list[DataFile]] = {}
    for f in logs:
        by_version.setdefault(f.version, []).append(f)
    frames = []
    for version, files in sorted(by_version.items()):
        schema, layout = table.version(version)
        raw = read_log_blocks(table.spark, table.root, files,
                              table.physical_query(schema, layout), group=group)
        plan = plan_group(query, schema, layout, (), via=via)
        cols = [to_column(e).alias(name) for name, e in plan.columns]
        frames.append(raw.select(*cols, F.col(META_COMMIT_TIME),
                                 F.col(DELETED).cast("boolean").alias(DELETED),
                                 *([F.col(GROUP)] if group else [])))
    return reduce(lambda a, b: a.unionByName(b), frames)


def resolve_logs(logs: DataFrame, keys: Sequence[str], precombine: str | None) -> DataFrame:
    """One row per key of the log records: the winner among the records after the key's last
    delete (``__evo_valid``; false when a delete is the last word) by the precombine rule, the
    instant ordering the commits, and ``__evo_del``, the instant of that delete (null when
    none)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    refs = [F.col(f"`{k}`") for k in keys]
    logs = logs.withColumn(ORDER, F.col(META_COMMIT_TIME))
    last_delete = F.max(F.when(F.col(DELETED), F.col(ORDER))).over(Window.partitionBy(*refs))
    logs = logs.withColumn(DEL, last_delete)
    logs = logs.withColumn(VALID, F.col(DEL).isNull() | (F.col(ORDER) > F.col(DEL)))
    rule = ordering(live=VALID, precombine=precombine or None, commit=ORDER)
    return first_per_key(logs, keys, rule).drop(ORDER, DELETED)


def resolved_logs(table: SparkTableHandle, logs: Sequence[DataFile], query: Schema,
                  keys: Sequence[str], precombine: str | None,
                  via: Via | None = None) -> DataFrame:
    """The log records resolved per key and file group (see :func:`resolve_logs`), projected
    onto ``query``, each with :data:`~evonb.spark.avro_log.GROUP`, its group's base file name
    (a key deleted in one group and inserted again into another has records in both).

    When every block has the same schema version (no DDL since the last compaction, the usual
    case), each file group is read and resolved by one task, without a shuffle; otherwise the
    blocks are read per version, projected, and resolved by key with window functions
    (merges by position take :func:`position_winners` instead)."""
    from pyspark.sql import functions as F

    versions = {f.version for f in logs}
    if len(versions) != 1:
        return resolve_logs(read_logs(table, logs, query, via, group=True), [*keys, GROUP],
                            precombine)
    schema, layout = table.version(versions.pop())
    config = table.raw_config
    wanted = [*config.primary_key_ids, *([config.precombine_id]
                                         if config.precombine_id is not None else [])]
    if not all(schema.has_id(i) for i in wanted):  # pragma: no cover - keys are never dropped
        return resolve_logs(read_logs(table, logs, query, via, group=True), [*keys, GROUP],
                            precombine)
    groups = list(file_groups(Snapshot(None, schema.version_id, (), tuple(logs))).values())
    raw = read_resolved_groups(
        table.spark, table.root, groups, table.physical_query(schema, layout),
        [layout.name(i) for i in config.primary_key_ids],
        layout.name(config.precombine_id) if config.precombine_id is not None else None,
        group=True)
    group = plan_group(query, schema, layout, (), via=via)
    return raw.select(*[to_column(e).alias(name) for name, e in group.columns],
                      F.col(META_COMMIT_TIME), F.col(DEL), F.col(VALID), F.col(GROUP))


def merge(base: DataFrame, resolved: DataFrame, keys: Sequence[str], precombine: str | None,
          *, broadcast: bool = False) -> DataFrame:
    """Merge base rows (with ``_evo_commit_time``) with the resolved log records of their file
    groups (:func:`resolved_logs`), by key.

    A delete after the base row removes it; else the log winner replaces the base row unless
    the base row's precombine value comes first (nulls lose; a tie goes to the log, which is
    later: :func:`evonb.spark.precombine.beats`). Base rows are joined to the resolved records
    (broadcast when ``broadcast``: no shuffle of the base files), since every logged key is in
    the base file of its group.
    """
    from pyspark.sql import functions as F

    cols = list(base.columns)
    renamed = resolved.select(*[F.col(f"`{c}`").alias(f"__evo_l_{i}")
                                for i, c in enumerate(cols)], F.col(DEL), F.col(VALID))
    right = F.broadcast(renamed) if broadcast else renamed
    index = {c: i for i, c in enumerate(cols)}
    cond = [F.col(f"`{k}`") == F.col(f"__evo_l_{index[k]}") for k in keys]
    joined = base.join(right, cond, "left")
    matched = F.col(f"__evo_l_{index[keys[0]]}").isNotNull()
    log_wins = (beats(F.col(f"__evo_l_{index[precombine]}"), F.col(f"`{precombine}`"),
                      precombine_key(precombine)) if precombine else F.lit(True))
    deleted = F.col(DEL).isNotNull()
    take_log = matched & (deleted | log_wins)
    keep = ~(matched & deleted & ~F.col(VALID))
    return joined.filter(keep).select(*[
        F.when(take_log, F.col(f"__evo_l_{i}")).otherwise(F.col(f"`{c}`")).alias(c)
        for i, c in enumerate(cols)])


def _listed_rows(path: str) -> tuple[str | None, str | None, Any, str] | None:
    """The base file, base row count and dropped positions a log block's header lists, and
    its Avro codec (``null`` for Parquet blocks); None when it lists no positions. Blocks are
    never changed once written, so the answer is kept per path, size and version
    (:func:`_header_listing`; :class:`~evonb.table.fileio.FileInfo`): reads of the same
    snapshot do not reopen every block."""
    info = file_io().info(path)
    return _header_listing(path, info.size, info.version)


@lru_cache(maxsize=4096)
def _header_listing(path: str, size: int, version: Hashable
                    ) -> tuple[str | None, str | None, Any, str] | None:
    """:func:`_listed_rows` of the block at ``path`` as it is at ``size`` and ``version``.
    An Avro block must end with its sync marker: a cut-off one raises
    :class:`~evonb.errors.CorruptFileError` (a reader could miss its last records)."""
    header = block_header(path)
    if path.endswith(".avro"):
        with file_io().open_read(path) as fh:
            fh.seek(max(0, size - 16))
            if fh.read(16) != read_header_sync(path)[1]:
                raise file_error(path, "its last Avro block is cut off")
    return ((header.get("evonb.base"), header.get(BASE_ROWS_KEY),
             decode_positions(header[DROP_KEY]), header.get("avro.codec") or "null")
            if DROP_KEY in header else None)


def position_drops(table: SparkTableHandle, snap: Snapshot) -> dict[str, Any]:
    """The file groups of ``snap`` that can be merged by position, each with the positions of
    the base rows its log blocks replace or delete (a sorted numpy array).

    A group qualifies when every block of the snapshot has the same schema version and each of
    its blocks lists its dropped positions in its header, for this base file with this many
    rows (blocks written before positions, or with ``evonb.mor.log.positions=false``, make
    their group fall back to the merge by key)."""
    import numpy as np

    if len({f.version for f in snap.logs}) != 1:
        return {}
    files = {f.path: f for f in snap.files}
    out: dict[str, Any] = {}
    for base, logs in file_groups(snap).items():
        f = files.get(base)
        if f is None:
            continue
        parts = []
        for log in logs:
            try:
                listed = _listed_rows(str(table.root / log.path))
            except (OSError, ValueError):  # pragma: no cover - the merge by key reports it
                parts = None
                break
            if listed is None or listed[0] != base or listed[1] != str(f.rows):
                parts = None
                break
            parts.append(listed[2])
        if parts is not None:
            out[base] = (parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))
                         if parts else np.zeros(0, np.int64))
    return out


_BY_NAME = -1
_NO_FILE = -(2**31 - 1)
"""The mark of an empty slot: far enough below zero that no word index reaches the bitmap
(at most :data:`POSITION_MAX_ROWS` / 64 words)."""


def _file_key(size: int, mtime_ms: int) -> int:
    """A number per file from its size and modification time (milliseconds), as the base scan
    computes it from ``_metadata`` (:func:`_kept_rows`)."""
    return size * 1_000_003 + mtime_ms


def _size_slots(keys: Sequence[int]) -> int:
    """The smallest modulus (at least the number of distinct ``keys``) under which the
    distinct keys fall in distinct slots, or 0 when none up to 64 times their number does."""
    distinct = sorted(set(keys))
    for m in range(max(1, len(distinct)), 64 * max(1, len(distinct)) + 1):
        if len({v % m for v in distinct}) == len(distinct):
            return m
    return 0


def file_keys(root: Path, files: Sequence[DataFile]) -> list[int]:
    """Each file's :func:`_file_key`, from the file system."""
    keys = []
    for f in files:
        st = os.stat(root / f.path)
        keys.append(_file_key(st.st_size, st.st_mtime_ns // 1_000_000))
    return keys


def _kept_rows(spark: SparkSession, files: Sequence[DataFile], drops: dict[str, Any],
               keys: Sequence[int]) -> Column:
    """A filter of Spark's built-in expressions over a base scan (``_metadata``), for sessions
    without evonb's Parquet source (:mod:`evonb.spark.position_source`), that drops the rows
    at ``drops`` of each file: a bitmap per file (64 rows per word) in one compact array literal
    (:func:`~evonb.spark.literals.long_array`), indexed by the file's offset and the row's
    position (``_metadata.row_index``).

    The offset is found without a search: each file has a number from its size and
    modification time (``keys``, :func:`file_keys`), and an array literal indexed by that
    number modulo a modulus under which every file's number falls in its own slot holds the
    offset (a few arithmetic operations and an array read per row; no string per row). Files
    whose numbers coincide are looked up by name in a map literal. The caller checks that the
    numbers did not change while Spark listed the files (:func:`_merge_by_position`)."""
    import json
    from collections import Counter

    import numpy as np
    from pyspark.sql import functions as F

    count = Counter(keys)
    modulus = _size_slots(keys)
    words, slots, by_name, at = [], {}, {}, 0
    for f, key in zip(files, keys, strict=True):
        bits = position_source.bitmap(f.rows, drops[f.path])
        words.append(bits.view(np.int64))
        if modulus and count[key] == 1:
            slots[key % modulus] = (key, at)
        else:
            if modulus:
                slots[key % modulus] = (key, None)  # shared by several files: by name
            by_name[f.path.rsplit("/", 1)[-1]] = at
        at += len(bits)

    # The slot table: the offset of the file whose key falls in the slot, or a mark for
    # files found by name, or for an empty slot.
    table = [slots[i][1] if i in slots and slots[i][1] is not None
             else _BY_NAME if i in slots else _NO_FILE for i in range(modulus)]
    bitmap = long_array(spark, np.concatenate(words))
    row = F.col("_metadata.row_index")
    # A file whose size and time Spark lists otherwise than planned: fail rather than drop
    # its rows.
    changed = F.raise_error(F.lit(
        "evonb: a base file's size or modification time differs from when this "
        "merge-on-read read was planned; read the table again"))
    if modulus:
        meta = F.col("_metadata")
        key = (meta["file_size"] * F.lit(1_000_003)
               + F.unix_millis(meta["file_modification_time"]))
        offset = F.element_at(long_array(spark, table),
                              (F.pmod(key, F.lit(modulus)) + 1).cast("int"))
    if modulus and not by_name:
        # The usual case, without a branch per row: an empty slot's mark puts the word's
        # index out of the bitmap, where try_element_at gives null, and the null fails.
        word = F.try_element_at(bitmap, (offset + F.shiftright(row, 6) + 1).cast("int"))
        return F.coalesce(F.getbit(word, (row % 64).cast("int")) == 0,
                          changed.cast("boolean"))
    named = F.from_json(F.lit(json.dumps(by_name)), "map<string,bigint>")[
        F.col("_metadata.file_name")]
    if modulus:
        offset = (F.when(offset == _BY_NAME, named).when(offset == _NO_FILE, changed)
                  .otherwise(offset))
    else:
        offset = named
    word = F.element_at(bitmap, (offset + F.shiftright(row, 6) + 1).cast("int"))
    return F.getbit(word, (row % 64).cast("int")) == 0


def read_snapshot(table: SparkTableHandle, snap: Snapshot, query: Schema, *, meta: bool = False,
                  read_optimized: bool = False, positions: bool = True) -> DataFrame:
    """``snap`` as one DataFrame in ``query``'s schema: base files merged with their log blocks
    (``read_optimized``: base files only). File groups without logs are read as they are.

    File groups whose blocks carry positions (:func:`position_drops`) are merged by position:
    their base scan drops the rows the blocks replace or delete, and the winning log records
    are added; the others are merged by key (:func:`merge`). ``positions=False`` merges every
    group by key (both give the same rows).

    A table in object storage is read by Spark tasks with the JVM-free reader, one file
    group per task (:meth:`~evonb.spark.table.SparkTable.read_object_files`)."""
    if is_object_path(table.root):
        return table.read_object_files(snap.files, query, meta=meta,
                                       logs=() if read_optimized else snap.logs, snapshot=snap)
    from pyspark.sql import functions as F

    spark = table.spark
    via = read_paths(table.version, query, snap.schema_version)  # values through each type
    if read_optimized or not snap.logs:
        return read_files(spark, table.root, snap.files, query, table.version, meta=meta,
                          via=via)
    grouped = {f.base for f in snap.logs}
    plain = [f for f in snap.files if f.path not in grouped]
    drops = position_drops(table, snap) if positions else {}
    room = POSITION_MAX_ROWS  # the bitmap literal of one read: at most 8 MiB
    for f in snap.files:
        if f.path in drops:
            room -= f.rows
            if room < 0:
                del drops[f.path]  # merged by key
    by_pos = [f for f in snap.files if f.path in drops]
    by_key = [f for f in snap.files if f.path in grouped and f.path not in drops]
    ext, keys, pre, extra = _merge_columns(table, query)
    frames = []
    if plain:
        frames.append(read_files(spark, table.root, plain, query, table.version, meta=meta,
                                 via=via))
    if by_pos:
        frames.extend(_merge_by_position(table, snap, by_pos, drops, query, meta, via))
    if by_key:
        part = subset(snap, by_key)
        # merged per key and file group: a key deleted in one group and inserted again into
        # another has a base row in each (the later one live)
        base = read_files(spark, table.root, by_key, ext, table.version, meta=True, via=via,
                          with_file=True)
        base = base.withColumn(GROUP, F.element_at(F.split(F.col(FILE), "/"), -1)).drop(FILE)
        resolved = resolved_logs(table, part.logs, ext, keys, pre, via)
        if not meta:
            base, resolved = base.drop(META_COMMIT_TIME), resolved.drop(META_COMMIT_TIME)
        small = sum(f.bytes for f in part.logs) <= BROADCAST_LOG_BYTES
        merged = merge(base, resolved, [*keys, GROUP], pre, broadcast=small).drop(GROUP)
        frames.append(merged.drop(*extra) if extra else merged)
    return reduce(lambda a, b: a.unionByName(b), frames)


def _merge_by_position(table: SparkTableHandle, snap: Snapshot, bases: Sequence[DataFile],
                       drops: dict[str, Any], query: Schema, meta: bool,
                       via: Via | None = None) -> list[DataFrame]:
    """The base rows of ``bases`` the logs leave, and the log records that replace base rows
    (or bring back deleted keys): no join."""
    spark = table.spark
    part = subset(snap, bases)
    keys = file_keys(table.root, bases)
    names = [Path(f.path).name for f in bases]
    in_reader = (table.raw_config.bool_property(position_source.PROPERTY, True)
                 and len(set(names)) == len(names) and position_source.available(spark))
    plan_key = _position_plan_key(table, bases, part.logs, keys, query, meta, in_reader, via)
    found = _POSITION_PLANS.get(plan_key) if plan_key is not None else None
    if found is not None:
        return list(found)
    if in_reader:
        # Dropped inside the Parquet reader, which fails on a row past a file's planned rows.
        kept = read_files(spark, table.root, bases, query, table.version, meta=meta, via=via,
                          positions=position_source.encode([
                              (n, f.rows, drops[f.path])
                              for n, f in zip(names, bases, strict=True)]))
    else:
        kept = read_files(spark, table.root, bases, query, table.version, meta=meta, via=via,
                          row_filter=_kept_rows(spark, bases, drops, keys))
    # Spark listed the files (sizes, times) inside read_files: unchanged before and after
    # means it saw the numbers the filter was built with.
    if file_keys(table.root, bases) != keys:
        raise EvoError(f"A base file of table {table.root.name!r} changed while a "
                       "merge-on-read read was being planned",
                       hint="base files are never modified in place; read the table again")
    frames = [kept, position_winners(table, part.logs, query, meta, via)]
    if plan_key is not None:
        _POSITION_PLANS[plan_key] = tuple(frames)
    return frames


_POSITION_PLANS: LRU[tuple, tuple[DataFrame, ...]] = LRU(8)
"""The last plans of merges by position, by a key that names every input
(:func:`_position_plan_key`): base files and log blocks never change once written, so the same
key gives the same DataFrames, and reading an unchanged table again skips building the bitmap
literal, the analysis of its filter and the log reader (about 0.1 s for the benchmark's 50 file
groups)."""


def _position_plan_key(table: SparkTableHandle, bases: Sequence[DataFile], logs: Sequence[DataFile],
                       keys: Sequence[int], query: Schema, meta: bool, in_reader: bool,
                       via: Via | None = None) -> tuple[Any, ...] | None:
    """What a merge by position's plan depends on: the session (and its time zone, which the
    log reader's timestamps carry), the base files as Spark lists them (path, size, time), the
    log blocks (path, size, time), the query schema (and ``via``), whether commit times are
    read, whether the table lets Spark's reader read its blocks (``evonb.mor.read.jvm``) and
    whether rows are dropped in evonb's Parquet source (``in_reader``); ``None`` when the
    schema cannot be a key."""
    spark = table.spark
    try:
        hash(query)
    except TypeError:  # pragma: no cover - schemas are frozen dataclasses
        return None
    return (id(spark), spark.sparkContext.applicationId,
            spark.conf.get("spark.sql.session.timeZone"), str(table.root),
            tuple(f.path for f in bases), tuple(keys),
            tuple(f.path for f in logs), tuple(file_keys(table.root, logs)), query, meta,
            tuple(sorted(via.items())) if via else None,
            table.raw_config.bool_property(JVM_READ_PROPERTY, True), in_reader)


def position_winners(table: SparkTableHandle, logs: Sequence[DataFile], query: Schema, meta: bool,
                     via: Via | None = None) -> DataFrame:
    """The log records a merge by position adds, in ``query`` (with ``_evo_commit_time`` when
    ``meta``): per key and base position, the winner that follows a delete or beats its base
    row. Blocks of one schema version.

    A file group whose blocks were all written by one commit holds each key (and base
    position) once, so its winners are simply its records that beat their base rows and are
    not deletes: Spark's own reader reads them inside the JVM (:mod:`evonb.spark.block_scan`)
    when it can. The blocks of other groups are resolved per key by Python workers, which send
    only the winners, with only the columns the query reads, to the JVM."""
    from pyspark.sql import functions as F

    versions = {f.version for f in logs}
    if len(versions) != 1:  # pragma: no cover - position_drops never plans it
        raise ValueError("position merges need blocks of one schema version")
    schema, layout = table.version(versions.pop())
    config = table.raw_config
    group = plan_group(query, schema, layout, (), via=via)
    needed = sorted(set().union(*(referenced_columns(e) for _, e in group.columns)))
    if not needed:
        needed = [layout.name(config.primary_key_ids[0])]
    physical = table.physical_query(schema, layout)
    columns = [*needed, *([META_COMMIT_TIME] if meta else [])]
    groups = list(file_groups(Snapshot(None, schema.version_id, (), tuple(logs))).values())
    in_jvm = [g for g in groups if len({f.instant for f in g}) == 1
              and all(_jvm_codec(str(table.root / f.path)) for f in g)]
    if in_jvm and not _jvm_blocks(table, physical, needed):
        in_jvm = []
    frames = []
    by_format: dict[str, list[str]] = {}
    for g in in_jvm:
        for f in g:
            by_format.setdefault(PurePosixPath(f.path).suffix.lstrip("."), []).append(
                str(table.root / f.path))
    struct = block_struct(physical)
    wanted = set(columns) | {OVER, DELETED}
    read = StructType(tuple(f for f in struct.fields if f.name in wanted))
    for fmt, paths in sorted(by_format.items()):
        records = scan_blocks(table.spark, paths, fmt, read,
                              block_avro_schema(physical) if fmt == "avro" else None)
        beats = F.coalesce(F.col(OVER), F.lit(False)) & ~F.coalesce(F.col(DELETED), F.lit(False))
        frames.append(records.filter(beats).select(*[F.col(f"`{c}`") for c in columns]))
    chosen = {id(g) for g in in_jvm}
    rest = [g for g in groups if id(g) not in chosen]
    if rest or not frames:
        frames.append(read_resolved_groups(
            table.spark, table.root, rest, physical,
            [layout.name(i) for i in config.primary_key_ids] + [POS],
            layout.name(config.precombine_id) if config.precombine_id is not None else None,
            winners_of=columns))
    raw = reduce(lambda a, b: a.unionByName(b), frames)
    return raw.select(*[to_column(e).alias(name) for name, e in group.columns],
                      *([F.col(META_COMMIT_TIME)] if meta else []))


JVM_AVRO_CODECS = frozenset({"null", "deflate", "snappy", "bzip2", "xz", "zstandard"})
"""The Avro codecs Spark's reader decodes (fastavro also writes ``lz4``, which it does not)."""


def _jvm_codec(path: str) -> bool:
    """Whether Spark's reader decodes the block at ``path`` (listed in a merge by position)."""
    listed = _listed_rows(path)
    return listed is not None and listed[3] in JVM_AVRO_CODECS


def _jvm_blocks(table: SparkTableHandle, physical: Schema, needed: Sequence[str]) -> bool:
    """Whether log blocks of ``physical`` can be read by Spark's reader for the columns
    ``needed``: the table allows it (``evonb.mor.read.jvm``), the session's Spark can, and
    each column reads exactly there."""
    if not table.raw_config.bool_property(JVM_READ_PROPERTY, True):
        return False
    by_name = {f.name: f for f in physical.fields}
    return (all(jvm_readable(by_name[n]) for n in needed)
            and jvm_blocks_available(table.spark))


# ------------------------------------------------------------------------------- writing
def stale_matches(table: SparkTableHandle, snap: Snapshot, found: pa.Table, keys: Sequence[str],
                  key_ids: Sequence[int]) -> set[tuple[tuple[Any, ...], str]]:
    """Of ``found``, the base rows (key columns ``keys``, base file :data:`BASE`) of keys an
    upsert found in more than one file group, those it must not write a log record for.

    A base row stays in its file when a log block deletes its key; inserted again, the key
    gets a row in another base file. An upsert of it must then go to the one group where it
    is live, or the deleted row comes back beside the live one. So a pair is stale when its
    key is not live in its group (read merged with its log blocks); a key live in no group
    keeps the pair of its newest base file (written once, live again), and a key live in
    several (duplicates an insert was allowed to make) keeps them all.

    The groups are read at once: in this process by the JVM-free reader where the table has
    one (:meth:`~evonb.spark.handles.SparkTableHandle.group_rows_reader`), else in one Spark
    job."""
    schema = table.version(snap.schema_version)[0]
    query = Schema(fields=tuple(schema.field_by_id(i) for i in key_ids),
                   version_id=snap.schema_version, max_column_id=schema.max_column_id)
    key_types = found.select(list(keys)).schema
    pairs = list(zip(zip(*(key_list(found.column(k)) for k in keys), strict=True),
                     found.column(BASE).to_pylist(), strict=True))
    # each base as a path in the table or as the file's URL (Spark's): its file, found once
    by_path = {f.path: f for f in snap.files}
    file_of = {name: by_path.get(name) or next(f for p, f in by_path.items()
                                               if name.endswith("/" + p))
               for name in {b for _, b in pairs}}
    live = {(key, base) for base, key in _live_keys(
        table, snap, query, file_of, keys, key_types, {key for key, _ in pairs})}
    by_key: dict[tuple[Any, ...], list[str]] = {}
    for key, base in pairs:
        by_key.setdefault(key, []).append(base)
    stale: set[tuple[tuple[Any, ...], str]] = set()
    for key, bases in by_key.items():
        keep = {b for b in bases if (key, b) in live} or {
            max(bases, key=lambda b: (file_of[b].instant, b))}
        stale.update((key, b) for b in bases if b not in keep)
    return stale


def _live_keys(table: SparkTableHandle, snap: Snapshot, query: Schema,
               file_of: dict[str, DataFile], keys: Sequence[str], key_types: pa.Schema,
               asked: Collection[tuple[Any, ...]]) -> list[tuple[str, tuple[Any, ...]]]:
    """Each (base name, key) live in the file groups of ``file_of`` (base file by name) in
    ``snap``: ``query`` holds the key columns, ``keys`` their names in ``key_types``; keys
    other than those ``asked`` may be left out."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    # a single key: only the rows of the keys asked about are kept (a group may hold millions);
    # a date or timestamp key is asked about as the number key_list gives for it
    wanted = (pa.array(sorted({k[0] for k in asked}), key_types.field(0).type)
              if len(keys) == 1 else None)

    def typed(rows: pa.Table) -> tuple[pa.Table, pa.Array | None]:
        """The key columns of ``rows`` (the first ones) named and typed as ``key_types``,
        and which rows to keep (None: all)."""
        out = pa.Table.from_arrays(rows.columns[:len(keys)], schema=pa.schema(
            [pa.field(k, f.type) for k, f in zip(keys, rows.schema, strict=False)]
        )).cast(key_types)
        return out, None if wanted is None else pc.is_in(out.column(0), value_set=wanted)

    def listed(rows: pa.Table) -> list[tuple[Any, ...]]:
        return list(zip(*(key_list(rows.column(k)) for k in keys), strict=True))

    names = sorted(file_of)
    read = table.group_rows_reader(query, snapshot=snap)
    if read is not None:  # in this process, several groups at once
        groups = file_groups(snap)
        reader = read

        def one(base: str) -> list[tuple[str, tuple[Any, ...]]]:
            f = file_of[base]
            rows, keep = typed(reader(f, groups.get(f.path, [])))
            return [(base, key) for key in listed(rows if keep is None else rows.filter(keep))]

        workers = max(1, min(LIVE_KEY_THREADS, len(names)))
        if workers == 1:
            return [p for base in names for p in one(base)]
        with ThreadPoolExecutor(max_workers=workers,
                                thread_name_prefix="evonb-live-keys") as pool:
            return [p for found in pool.map(one, names) for p in found]
    # one Spark job: each group's merged read, its base named by its index in ``names``
    frames = [read_snapshot(table, subset(snap, [file_of[base]]), query)
              .select(*[F.col(f"`{f.name}`") for f in query.fields],
                      F.lit(i).alias(_GROUP_INDEX))
              for i, base in enumerate(names)]
    collected = to_arrow(reduce(lambda a, b: a.unionByName(b), frames))
    rows, keep = typed(collected)
    index = collected.column(_GROUP_INDEX)
    if keep is not None:
        rows, index = rows.filter(keep), index.filter(keep)
    return [(names[i], key) for i, key in zip(index.to_pylist(), listed(rows), strict=True)]


LIVE_KEY_THREADS = 4
"""File groups read at once in this process when an upsert looks for where a key found in
several groups is live (:func:`stale_matches`)."""

_GROUP_INDEX = "__evo_group"


def write_delta(job: WriteJobHandle, incoming: DataFrame, snapshot: Snapshot, target: Schema,
                layout: Layout, instant: str, *, write_options: dict[str, Any] | None = None
                ) -> tuple[list[DataFile], list[DataFile]]:
    """An upsert or delete on a merge-on-read table: log blocks for keys found in base files,
    new base files for new keys (upserts). Returns the files written and the base files whose
    groups got log blocks (for the conflict check)."""
    from pyspark.sql import functions as F

    table, config, spark = job.table, job.config, job.spark
    keys = [layout.name(i) for i in config.primary_key_ids]
    physical = table.physical_query(target, layout)
    if any(f.name == DELETED for f in physical.fields):
        raise EvoError(f"Column name {DELETED!r} is reserved in merge-on-read tables",
                       hint="rename the column")
    bases = snapshot.files
    # Only base files whose key statistics overlap the incoming keys can hold them (a log
    # block only ever holds keys of its base file).
    candidates = job.key_candidates(bases) if bases else []
    pre_id = config.precombine_id
    with_pre = pre_id is not None and pre_id not in config.primary_key_ids
    keys_read = key_query(config, target, layout)
    fmt = log_format(table)
    if fmt == "avro" and not avro_supported(physical):
        fmt = "parquet"  # Avro cannot hold maps with non-string keys
    codec = config.property(AVRO_CODEC_PROPERTY, DEFAULT_AVRO_CODEC) or "null"
    positions = config.bool_property(POSITIONS_PROPERTY, True)
    read = (table.stored_rows_reader(keys_read, snapshot=snapshot) if takes_driver_path(
        driver_lookup_limits(config), job.incoming_rows, candidates,
        [target.field_by_id(i).type for i in config.primary_key_ids]) else None)
    if read is not None:
        return _write_delta_in_driver(job, read, incoming, snapshot, candidates, target,
                                      layout, physical, keys_read, instant, fmt=fmt,
                                      codec=codec, positions=positions,
                                      write_options=write_options)
    incoming = job.rows_frame(incoming)
    if job.mode == "upsert":
        # the incoming rows of a key: the largest precombine value, on a tie the latest
        rule = ordering(precombine=layout.name(pre_id) if pre_id is not None else None,
                        sequence=SEQ)
        incoming = first_per_key(incoming.withColumn(SEQ, F.monotonically_increasing_id()),
                                 keys, rule).drop(SEQ)
    else:
        incoming = incoming.dropDuplicates(keys)
    written: list[DataFile] = []
    kept: list[DataFrame] = []  # persisted for this write
    try:
        logs: list[DataFile] = []
        fresh = incoming
        if candidates:
            # The key scan also reads each base row's position and precombine value, so a log
            # record can say which base row it replaces and whether it beats it.
            existing = job.read_stored(candidates, keys_read, with_file=True,
                                       with_position=True)
            in_range = job.key_filter(layout)
            if in_range is not None:
                existing = existing.filter(in_range)
            # An inner join, so Spark may broadcast the incoming rows and stream the stored
            # keys without shuffling them (a left join from the incoming rows could only
            # broadcast the stored side); the incoming keys found nowhere are the rest.
            incoming = incoming.persist()
            kept.append(incoming)
            located = existing.join(incoming, keys, "inner").persist()
            kept.append(located)
            key_types = {i: target.field_by_id(i).type for i in config.primary_key_ids}
            if job.mode == "upsert" and not no_key_in_two(candidates, key_types,
                                                          table.version):
                located = _live_matches_only(table, snapshot, located, keys,
                                             config.primary_key_ids, kept)
            present = set(located.columns)
            types = {f.name: f.dataType for f in spark_read_type(physical.struct).fields}
            if job.mode == "delete" or pre_id is None:
                over = F.lit(True)
            elif with_pre:  # incoming rows without the precombine column hold nulls
                incoming_pre = (F.col(f"`{layout.name(pre_id)}`")
                                if layout.name(pre_id) in present else F.lit(None))
                over = beats(incoming_pre, F.col(BASE_PRE), precombine_key(BASE_PRE))
            else:
                over = F.lit(True)  # the precombine column is a key: always a tie
            block = located.select(
                *[F.col(f"`{f.name}`") if f.name in present
                  else F.lit(None).cast(types[f.name]).alias(f.name) for f in physical.fields],
                F.lit(instant).alias(META_COMMIT_TIME),
                (F.col(POS) if positions else F.lit(None).cast("bigint")).alias(POS),
                over.alias(OVER),
                F.lit(job.mode == "delete").alias(DELETED),
                F.col(FILE).alias(BASE),
            )
            tasks = max(1, min(len(candidates), spark.sparkContext.defaultParallelism))
            logs = write_log_blocks(block, root=table.root, instant=instant, physical=physical,
                                    fmt=fmt, tasks=tasks, codec=codec,
                                    base_rows={f.path: f.rows for f in bases})
            logs = [f for f in logs if f.rows > 0]
            written.extend(logs)
            fresh = incoming.join(located.select(*[F.col(f"`{k}`") for k in keys]), keys,
                                  "left_anti")
        if job.mode == "upsert":
            written.extend(_new_bases(job, fresh, target, layout, instant, write_options))
    except BaseException:
        remove_data_files(table.root, written)
        raise
    finally:
        for df in kept:
            df.unpersist()
    return written, _touched(bases, written)


def _new_bases(job: WriteJobHandle, fresh: DataFrame, target: Schema, layout: Layout, instant: str,
               write_options: dict[str, Any] | None) -> list[DataFile]:
    """The upserted rows whose keys no base file holds, written as new base files."""
    partition_cols = tuple(layout.name(i) for i in job.config.partition_ids)
    cores = job.spark.sparkContext.defaultParallelism
    new_bases = job.write_data(fresh, instant=instant, version=target.version_id,
                               partition_columns=partition_cols, max_files=cores,
                               key_columns=job.key_columns(target, layout),
                               **(write_options or {}))
    remove_data_files(job.table.root, [f for f in new_bases if f.rows == 0])
    return [f for f in new_bases if f.rows > 0]


def _touched(bases: Sequence[DataFile], written: Sequence[DataFile]) -> list[DataFile]:
    """The base files whose groups got one of the log blocks ``written``."""
    by_path = {f.path: f for f in bases}
    touched = sorted({f.base for f in written if f.kind == "log"})
    return [by_path[p] for p in touched if p in by_path]


def _live_matches_only(table: SparkTableHandle, snap: Snapshot, located: DataFrame,
                       keys: Sequence[str], key_ids: Sequence[int], kept: list[DataFrame]
                       ) -> DataFrame:
    """``located`` (the stored rows of the incoming keys, with their base file :data:`FILE`)
    without the rows of keys found in several file groups that are not live in theirs
    (:func:`stale_matches`): a job finds such keys, and only when there are any are their
    groups read."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    cols = [F.col(f"`{k}`") for k in keys]
    several = (located.groupBy(*cols).agg(F.countDistinct(FILE).alias(_GROUPS))
               .filter(F.col(_GROUPS) > 1).select(*cols))
    found = to_arrow(located.join(several, list(keys)).select(*cols, F.col(FILE).alias(BASE)))
    if not found.num_rows:
        return located
    stale = stale_matches(table, snap, found, keys, key_ids)
    if not stale:
        return located
    drop = pa.table({**{k: pa.array([key[i] for key, _ in stale], found.schema.field(k).type)
                        for i, k in enumerate(keys)},
                     FILE: pa.array([base for _, base in stale], pa.string())})
    types = {f.name: f.dataType for f in located.schema.fields}
    rows = table.spark.createDataFrame(drop).select(
        *[F.col(f"`{c}`").cast(types[c]).alias(c) for c in [*keys, FILE]])
    out = located.join(F.broadcast(rows), [*keys, FILE], "left_anti").persist()
    kept.append(out)
    return out


_GROUPS = "__evo_groups"


def _write_delta_in_driver(job: WriteJobHandle, read: Callable[[DataFile], pa.Table],
                           incoming: DataFrame, snapshot: Snapshot,
                           candidates: Sequence[DataFile], target: Schema, layout: Layout,
                           physical: Schema, keys_read: Schema, instant: str, *, fmt: str,
                           codec: str, positions: bool,
                           write_options: dict[str, Any] | None
                           ) -> tuple[list[DataFile], list[DataFile]]:
    """:func:`write_delta` for a small delta, looked up and written by the driver
    (:mod:`evonb.spark.mor_driver`)."""
    config = job.config
    pre_id = config.precombine_id
    bases = snapshot.files
    keys = [layout.name(i) for i in config.primary_key_ids]
    written: list[DataFile] = []

    def stale(found: pa.Table) -> set[tuple[tuple[Any, ...], str]]:
        return stale_matches(job.table, snapshot, found, keys, config.primary_key_ids)

    try:
        delta = write_delta_here(
            job.table.root, read, incoming, job.collected, mode=job.mode, keys=keys,
            precombine=layout.name(pre_id) if pre_id is not None else None,
            key_query=keys_read, physical=physical, candidates=candidates, bases=bases,
            instant=instant, fmt=fmt, codec=codec, positions=positions,
            uploads=driver_lookup_limits(config).uploads, stale=stale)
        written.extend(delta.logs)
        if job.key_lookup is not None:
            job.key_lookup = dict(job.key_lookup, driver=True)
        if delta.fresh is not None:
            written.extend(_new_bases(job, delta.fresh, target, layout, instant,
                                      write_options))
    except BaseException:
        remove_data_files(job.table.root, written)
        raise
    return written, _touched(bases, written)


__all__ = [
    "file_groups",
    "log_format",
    "merge",
    "position_drops",
    "position_winners",
    "read_logs",
    "read_snapshot",
    "resolve_logs",
    "resolved_logs",
    "since",
    "stale_matches",
    "subset",
    "write_delta",
]
