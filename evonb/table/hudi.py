"""Adopting an Apache Hudi copy-on-write table in place (the seed design of Hudi RFC-33, "old
schema data compatibility": the table's latest Avro schema becomes the first id-schema, every
live file is bound to it, and reads and writes then follow the normal rules).

What is read, and nothing is written under ``.hoodie/``:

- ``.hoodie/hoodie.properties`` (Java properties): table type, version, name, record key,
  precombine and partition fields, base file format, the create schema;
- the active timeline of completed instants: table version 6 keeps JSON files in ``.hoodie/``
  (``<instant>.commit``), table version 8 keeps Avro files in ``.hoodie/timeline/``
  (``<requested>_<completed>.commit``), read with fastavro;
- base file names ``<fileId>_<writeToken>_<instantTime>.parquet`` and their Parquet footers.

The live file slice of a file group is the base file of the latest completed commit that wrote
it (files of pending or failed writes and of replaced file groups are not live; files older than
the active timeline belong to archived commits and count as committed, as in Hudi). Hudi's
``_hoodie_*`` meta columns stay in the files but out of the schema unless asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evonb.errors import SchemaEvolutionError, UnsupportedTableError
from evonb.schema.avro_convert import schema_from_avro
from evonb.schema.schema import ROOT_ID, Schema
from evonb.table.convert import (
    PROP_SOURCE,
    AdoptedFile,
    AdoptionPlan,
    Footer,
    adopted_layout,
    check_readable,
    file_only_names,
    read_footer,
    relax_missing,
)
from evonb.table.fileio import file_io

HUDI_DIR = ".hoodie"
PROPERTIES_FILE = "hoodie.properties"
SUPPORTED_VERSIONS = (6, 8)
META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
    "_hoodie_operation",
)
"""Hudi's meta columns, in the order Hudi writes them."""

WRITE_ACTIONS = frozenset({"commit", "replacecommit"})
MOR_ACTIONS = frozenset({"deltacommit", "compaction", "logcompaction"})

_COMPLETED = re.compile(r"(\d{14,17})(?:_(\d{14,17}))?\.([a-z]+)")
_PENDING = re.compile(r"(\d{14,17})\.(?:([a-z]+)\.)?(requested|inflight)")
_BASE_FILE = re.compile(r"(?P<fid>[^_]+)_(?P<token>[^_]+)_(?P<ts>\d{14,17})\.parquet")
_LOG_FILE = re.compile(r"\.(?P<fid>.+)_(?P<ts>\d{14,17})\.log\.\d+(?:_.*)?")
_AVRO_MAGIC = b"Obj\x01"


# --------------------------------------------------------------------------- properties
def read_properties(path: Path) -> dict[str, str]:
    """A Java ``.properties`` file: comments, ``=``/``:``/space separators, escapes and
    continuation lines."""
    text = file_io().read(path).decode("latin-1")
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_property(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _continues(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _split_property(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        ch = line[j]
        if ch == "\\":
            j += 2
            continue
        if ch in "=: \t\f":
            break
        j += 1
    key, rest = line[:j], line[j:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    j = 0
    while j < len(text):
        ch = text[j]
        if ch != "\\" or j + 1 >= len(text):
            out.append(ch)
            j += 1
            continue
        nxt = text[j + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[j + 2:j + 6]):
            out.append(chr(int(text[j + 2:j + 6], 16)))
            j += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        j += 2
    return "".join(out)


# ----------------------------------------------------------------------------- timeline
@dataclass(frozen=True)
class HudiInstant:
    """A completed instant: requested and completion times, action and metadata file."""

    requested: str
    completed: str
    action: str
    file: Path


@dataclass(frozen=True)
class BaseFile:
    """A Hudi base file: partition path, file group ID, instant time and path from the root."""

    partition: str
    file_id: str
    instant: str
    path: str


class HudiTable:
    """A Hudi table's properties, active timeline and files, read without changing anything."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.meta = root / HUDI_DIR
        props_file = self.meta / PROPERTIES_FILE
        if not file_io().exists(props_file):
            raise UnsupportedTableError(
                f"{root} has a {HUDI_DIR} folder without {PROPERTIES_FILE}: not a complete Hudi "
                "table",
                hint="restore hoodie.properties (Hudi keeps hoodie.properties.backup) first",
            )
        self.props = read_properties(props_file)
        self.name = self.props.get("hoodie.table.name") or root.name
        self.version = self._table_version()
        self.timeline_dir = (self.meta / self.props.get("hoodie.timeline.path", "timeline")
                             if self.version >= 8 else self.meta)
        self.completed: list[HudiInstant] = []
        self.pending: list[tuple[str, str]] = []
        self._scan_timeline()

    def _table_version(self) -> int:
        raw = self.props.get("hoodie.table.version")
        try:
            version = int(raw) if raw is not None else -1
        except ValueError:
            version = -1
        if version not in SUPPORTED_VERSIONS:
            shown = "no hoodie.table.version" if raw is None else f"table version {raw}"
            raise UnsupportedTableError(
                f"Hudi table {self.root} has {shown}; evonb adopts Hudi table versions "
                f"{' and '.join(map(str, SUPPORTED_VERSIONS))}",
                hint="upgrade (or downgrade) the table with Hudi to table version 6 (Hudi 0.14/"
                "0.15) or 8 (Hudi 1.0) first, e.g. by writing to it with that release",
            )
        return version

    def _scan_timeline(self) -> None:
        io = file_io()
        if not io.is_folder(self.timeline_dir):
            raise UnsupportedTableError(f"Hudi table {self.root} has no timeline folder "
                                        f"{self.timeline_dir.relative_to(self.root)}")
        for p in sorted(self.timeline_dir / n for n in io.names(self.timeline_dir)):
            m = _COMPLETED.fullmatch(p.name)
            if m:
                req, done, action = m.groups()
                self.completed.append(HudiInstant(req, done or req, action, p))
                continue
            m = _PENDING.fullmatch(p.name)
            if m:
                self.pending.append((m.group(1), m.group(2) or "commit"))
        self.completed.sort(key=lambda i: (i.completed, i.requested))

    # ------------------------------------------------------------------------ checks
    def check_supported(self) -> None:
        """Refuse what cannot be adopted without rewriting: MOR, other base formats, ..."""
        kind = self.props.get("hoodie.table.type", "COPY_ON_WRITE").upper()
        mor_actions = sorted({i.action for i in self.completed if i.action in MOR_ACTIONS}
                             | {a for _, a in self.pending if a in MOR_ACTIONS})
        if kind == "MERGE_ON_READ" or mor_actions:
            why = ("hoodie.table.type=MERGE_ON_READ" if kind == "MERGE_ON_READ"
                   else f"its timeline has {', '.join(mor_actions)} instants")
            raise UnsupportedTableError(
                f"Hudi table {self.root} is merge-on-read ({why}); evonb adopts copy-on-write "
                "tables only, because merging Hudi log files needs Hudi",
                hint="compact it in Hudi first (all log files merged into base files), or "
                "read it with Hudi and write it into a new evonb table",
            )
        if kind != "COPY_ON_WRITE":
            raise UnsupportedTableError(f"Hudi table {self.root} has unknown type {kind!r}")
        fmt = self.props.get("hoodie.table.base.file.format", "PARQUET").upper()
        if fmt != "PARQUET":
            raise UnsupportedTableError(
                f"Hudi table {self.root} stores {fmt} base files; evonb adopts Parquet only",
                hint="rewrite the table with hoodie.table.base.file.format=PARQUET in Hudi")
        if self.props.get("hoodie.bootstrap.base.path"):
            raise UnsupportedTableError(
                f"Hudi table {self.root} is a bootstrapped table (its data lives in "
                "hoodie.bootstrap.base.path)",
                hint="convert the bootstrap source folder itself, or rewrite the table in Hudi")
        schema_dir = self.meta / ".schema"
        if file_io().list(schema_dir) or file_io().folders(schema_dir):
            raise UnsupportedTableError(
                f"Hudi table {self.root} uses Hudi's schema-on-read evolution (.hoodie/.schema "
                "is not empty): older files may name columns differently",
                hint="rewrite the table in Hudi (e.g. insert_overwrite_table) so every file has "
                "the latest schema, then convert",
            )
        if not [i for i in self.completed if i.action in WRITE_ACTIONS]:
            raise UnsupportedTableError(f"Hudi table {self.root} has no completed commit: "
                                        "nothing to adopt",
                                        hint="for a new table use evonb.create_table()")

    # ---------------------------------------------------------------------- metadata
    def metadata(self, instant: HudiInstant) -> dict[str, Any]:
        """The commit metadata of an instant (JSON or Avro); ``{}`` for an empty file."""
        raw = file_io().read(instant.file)
        if not raw.strip():
            return {}
        if raw.startswith(_AVRO_MAGIC):
            import io

            import fastavro

            try:
                records = list(fastavro.reader(io.BytesIO(raw)))
            except Exception as exc:  # fastavro raises several kinds for a bad file
                raise UnsupportedTableError(
                    f"Cannot read Hudi commit metadata {instant.file.name}: {exc}") from None
            return dict(records[0]) if records else {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise UnsupportedTableError(
                f"Cannot read Hudi commit metadata {instant.file.name}: {exc}") from None
        return data if isinstance(data, dict) else {}

    def writes(self) -> list[tuple[HudiInstant, dict[str, Any]]]:
        """Completed commits and replace commits with their metadata, in completion order."""
        return [(i, self.metadata(i)) for i in self.completed if i.action in WRITE_ACTIONS]

    # ------------------------------------------------------------------------- files
    def base_files(self) -> list[BaseFile]:
        """Every Hudi base file under the root (``.hoodie`` and hidden folders skipped).

        Raises for log files (a merge-on-read table).
        """
        out: list[BaseFile] = []
        for rel_text, _ in sorted(file_io().walk(self.root)):
            rel = Path(rel_text)
            p = self.root / rel
            if any(part.startswith((".", "_")) for part in rel.parts[:-1]):
                continue
            if _LOG_FILE.fullmatch(p.name):
                raise UnsupportedTableError(
                    f"Hudi table {self.root} has log files ({rel.as_posix()}): it is "
                    "merge-on-read data that evonb cannot read without Hudi",
                    hint="compact it in Hudi first (all log files merged into base files)",
                )
            m = _BASE_FILE.fullmatch(p.name)
            if m is None:
                continue
            partition = "" if rel.parent == Path(".") else rel.parent.as_posix()
            out.append(BaseFile(partition, m.group("fid"), m.group("ts"), rel.as_posix()))
        return out

    def live_files(self, writes: list[tuple[HudiInstant, dict[str, Any]]]) -> list[BaseFile]:
        """The live slice of every file group (see the module docstring)."""
        committed = {i.requested for i, _ in writes}
        pending = {ts for ts, _ in self.pending} - committed
        first = min(committed)
        replaced: set[tuple[str, str]] = set()
        listed: dict[tuple[str, str], tuple[str, str]] = {}
        for inst, meta in writes:
            for partition, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                replaced.update((partition, fid) for fid in ids or ())
            for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
                for stat in stats or ():
                    fid, path = stat.get("fileId"), stat.get("path")
                    if not fid or not path:
                        continue
                    key = (partition, fid)
                    if key not in listed or listed[key][0] <= inst.requested:
                        listed[key] = (inst.requested, path)
        latest: dict[tuple[str, str], BaseFile] = {}
        for f in self.base_files():
            ok = f.instant in committed or (f.instant < first and f.instant not in pending)
            key = (f.partition, f.file_id)
            if ok and (key not in latest or latest[key].instant < f.instant):
                latest[key] = f
        for key, (_, path) in listed.items():
            if key in replaced:
                continue
            found = latest.get(key)
            if found is None or found.instant < _instant_of(path):
                raise UnsupportedTableError(
                    f"Hudi table {self.root}: file {path} written by a completed commit is "
                    "missing",
                    hint="the table is damaged; repair it in Hudi before converting",
                )
        return [f for key, f in sorted(latest.items()) if key not in replaced]

    # ------------------------------------------------------------------------ schema
    def latest_schema(self, writes: list[tuple[HudiInstant, dict[str, Any]]],
                      live: list[Footer]) -> tuple[dict[str, Any], str]:
        """The latest Avro schema and where it came from."""
        for inst, meta in reversed(writes):
            extra = meta.get("extraMetadata") or {}
            if extra.get("latest_schema"):
                raise UnsupportedTableError(
                    f"Hudi table {self.root} uses Hudi's schema-on-read evolution (commit "
                    f"{inst.requested} records an internal schema)",
                    hint="rewrite the table in Hudi so every file has the latest schema, "
                    "then convert",
                )
            if extra.get("schema"):
                return _parse_avro(extra["schema"], f"commit {inst.requested}"), (
                    f"commit {inst.requested}")
        create = self.props.get("hoodie.table.create.schema")
        if create:
            return _parse_avro(create, PROPERTIES_FILE), "hoodie.table.create.schema"
        import pyarrow.parquet as pq

        for footer in reversed(live):
            meta = pq.read_metadata(footer.path).metadata or {}
            if meta.get(b"parquet.avro.schema"):
                return _parse_avro(meta[b"parquet.avro.schema"].decode(), footer.path.name), (
                    f"footer of {footer.path.name}")
        raise UnsupportedTableError(f"Hudi table {self.root} records no Avro schema",
                                    hint="write to it once with Hudi so a commit records it")


def _instant_of(path: str) -> str:
    m = _BASE_FILE.fullmatch(Path(path).name)
    return m.group("ts") if m else ""


def _parse_avro(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UnsupportedTableError(f"The Avro schema in {where} does not parse: {exc}") from None
    if not isinstance(data, dict) or data.get("type") != "record":
        raise UnsupportedTableError(f"The Avro schema in {where} is not a record")
    return data


def _list(value: str | None) -> tuple[str, ...]:
    """A comma-separated Hudi field list; ``field:TYPE`` (custom key generators) keeps the field."""
    if not value:
        return ()
    return tuple(p.split(":", 1)[0].strip() for p in value.split(",") if p.strip())


# --------------------------------------------------------------------------------- plan
def plan_hudi(root: Path, *, name: str | None = None,
              primary_key: tuple[str, ...] | None = None, precombine: str | None = None,
              keep_meta_columns: bool = False) -> AdoptionPlan:
    """The adoption plan of the Hudi copy-on-write table at ``root`` (nothing is written)."""

    hudi = HudiTable(root)
    hudi.check_supported()
    writes = hudi.writes()
    live = hudi.live_files(writes)
    if not live:
        raise UnsupportedTableError(f"Hudi table {root} has no live base file: nothing to adopt",
                                    hint="for an empty table use evonb.create_table()")
    footers = [read_footer(root / f.path) for f in live]
    avro, schema_source = hudi.latest_schema(writes, footers)
    in_files = {f.name for ft in footers for f in ft.fields}
    user_fields = [f for f in avro.get("fields", []) if f.get("name") not in META_COLUMNS]
    meta_kept = [m for m in META_COLUMNS if keep_meta_columns and m in in_files]
    fields = [{"name": m, "type": ["null", "string"], "default": None} for m in meta_kept]
    try:
        schema = schema_from_avro({**avro, "fields": fields + user_fields})
    except SchemaEvolutionError as exc:
        raise UnsupportedTableError(
            f"Hudi table {root}: the Avro schema ({schema_source}) has no evonb equivalent: "
            f"{exc.message}",
            hint=exc.hint,
        ) from None
    fields = schema.fields
    for ft in footers:
        check_readable(fields, ft.fields, f"file {ft.path.relative_to(root).as_posix()}")
        fields = relax_missing(fields, ft.fields)
    schema = Schema(fields, schema.version_id, schema.max_column_id)
    top = {f.name for f in schema.fields}
    extra: dict[int, set[str]] = {}
    for ft in footers:
        file_only_names(schema.fields, ft.fields, ROOT_ID, extra)
    partition_fields = _list(_partition_fields(hudi.props))
    carried = tuple(p for p in partition_fields if p in top)
    for p in carried:
        lacking = [ft.path.relative_to(root).as_posix() for ft in footers
                   if p not in {f.name for f in ft.fields}]
        if lacking:
            raise UnsupportedTableError(
                f"Hudi table {root}: partition column {p!r} is not stored in {lacking[0]} "
                "(hoodie.datasource.write.drop.partition.columns=true?)",
                hint="evonb reads columns from the files; rewrite the table in Hudi with the "
                "partition columns kept",
            )
    keys = primary_key if primary_key is not None else _list(
        hudi.props.get("hoodie.table.recordkey.fields"))
    if precombine is None:
        ordering = _list(hudi.props.get("hoodie.table.precombine.field")
                         or hudi.props.get("hoodie.table.ordering.fields"))
        # Hudi 0.x stores a default ("ts") even for tables without such a column
        precombine = ordering[0] if ordering and ordering[0] in top else None
    adopted = tuple(
        AdoptedFile(path=f.path, partition=f.partition, rows=ft.rows, bytes=ft.bytes)
        for f, ft in zip(live, footers, strict=True)
    )
    source = {
        "format": "hudi",
        "table_name": hudi.name,
        "table_version": hudi.version,
        "table_type": "COPY_ON_WRITE",
        "schema_from": schema_source,
        "record_key": list(_list(hudi.props.get("hoodie.table.recordkey.fields"))),
        "partition_fields": list(partition_fields),
        "meta_columns": "kept" if meta_kept else "hidden",
        "instants": sorted({f.instant for f in live}),
        "latest_instant": writes[-1][0].requested,
        "file_groups": len(live),
    }
    return AdoptionPlan(
        schema=schema,
        layout=adopted_layout(schema, {k: sorted(v) for k, v in extra.items()}),
        files=adopted,
        name=name or hudi.name,
        primary_key=keys,
        precombine=precombine,
        partition_by=carried,
        properties={PROP_SOURCE: "hudi", "evonb.adopted.hudi.table-version": str(hudi.version)},
        source=source,
    )


def _partition_fields(props: Mapping[str, str]) -> str | None:
    """The partition fields; older tables only have the write config spelling."""
    return (props.get("hoodie.table.partition.fields")
            or props.get("hoodie.datasource.write.partitionpath.field"))


__all__ = ["META_COLUMNS", "SUPPORTED_VERSIONS", "HudiTable", "plan_hudi", "read_properties"]
