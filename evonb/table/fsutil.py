"""Crash-safe file writes and strict JSON reads for table metadata.

Every access goes through the process's :class:`~evonb.table.fileio.FileIO`, whose whole-file
writes let a reader see either nothing or the whole file. Temporary files (of the local FileIO)
are named ``.<target name>.<random>.tmp``: they start with a dot and end with ``.tmp``, and
readers of metadata folders ignore such names.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar, cast
from urllib.parse import unquote, urlparse

from evonb.errors import EvoError, InvalidArgumentError, MetadataCorruptError
from evonb.table.fileio import FileInfo, file_io, fsync_dir, is_object_path, object_store
from evonb.table.fileio_azure import AZURE_SCHEMES, parse_location
from evonb.table.fileio_azure import uri as azure_uri
from evonb.table.fileio_s3 import uri as s3_uri
from evonb.table.names import (
    EVO_DIR,
    RETRIES_DIR,
    STAGING_DIR,
    is_temp_name,
    parse_data_file,
    parse_log_block,
    parse_log_block_temp,
)

T = TypeVar("T")

def table_path(root: str | os.PathLike[str]) -> Path:
    """A table root as a :class:`Path`: a local path (``file:`` URIs accepted), or a location
    in S3-compatible object storage, ``s3://bucket/path`` or ``s3a://bucket/path`` (the same
    store), kept as ``Path("s3:/bucket/path")``, or in Azure storage,
    ``abfss://container@account.dfs.core.windows.net/path`` (``abfs://``) or
    ``az://container/path``, kept as ``Path("az:/container@account/path")``: the first part
    names the store, and :func:`~evonb.table.fileio.file_io` sends such paths to the object
    store's FileIO.

    Other URI schemes raise :class:`EvoError` naming the scheme, and what is neither text nor
    a path an :class:`~evonb.errors.InvalidArgumentError`.
    """
    if not isinstance(root, str | os.PathLike):
        raise InvalidArgumentError(
            f"A table's path must be text or a path, not {type(root).__name__}", name="path",
            value=root, hint="pass e.g. 'warehouse/orders' or 's3://bucket/orders'")
    if isinstance(root, str) and (root.startswith("file:") or "://" in root):
        parsed = urlparse(root)
        if parsed.scheme == "file":
            return Path(unquote(parsed.path))
        if parsed.scheme in ("s3", "s3a"):
            if not parsed.netloc:
                raise EvoError(f"The table location {root!r} names no bucket",
                               hint="write s3://<bucket>/<path>")
            return Path(f"s3:/{parsed.netloc}{parsed.path}".rstrip("/"))
        if parsed.scheme in AZURE_SCHEMES:
            return Path(parse_location(root))
        raise EvoError(
            f"Unsupported table location {root!r}: evonb does not serve {parsed.scheme}:// "
            "locations",
            hint="use a local or mounted path, a file: URI, S3-compatible object storage "
                 "(s3:// or s3a://; set AWS_ENDPOINT_URL for other S3 servers) or Azure "
                 "storage (abfss:// or az://)",
        )
    if isinstance(root, Path) and is_object_path(root) and root.parts[0] == "s3a:":
        return Path("s3:", *root.parts[1:])
    if isinstance(root, Path) and root.parts and root.parts[0].rstrip(":") in AZURE_SCHEMES:
        # Path("abfss://c@a.dfs.core.windows.net/t") is abfss:/c@a.dfs.core.windows.net/t; the
        # internal spelling az:/c@a/t parses back to itself
        return Path(parse_location(root.parts[0] + "//" + "/".join(root.parts[1:])))
    return Path(root)


def location_uri(root: str | os.PathLike[str], *, spark: bool = False) -> str:
    """A table path as users and engines name it: ``s3://bucket/path`` for S3 (``s3a://`` with
    ``spark=True``, the scheme of Spark's S3 connector), ``az://container@account/path`` for
    Azure (``abfss://container@account.dfs.core.windows.net/path`` with ``spark=True``), else
    the local path."""
    if object_store(root) == "az":
        return azure_uri(root, spark=spark)
    if is_object_path(root):
        return s3_uri(root, "s3a" if spark else "s3")
    return os.fspath(root)


def evo_dir(root: str | os.PathLike[str]) -> Path:
    """``<root>/.evo``."""
    return table_path(root) / EVO_DIR


def retry_note(root: str | os.PathLike[str], instant: str) -> Path:
    """``<root>/.evo/retries/<instant>``: an empty file a retried Spark task of the attempt
    ``instant`` stores before its files (object storage only), so that the driver knows a dead
    attempt may have left files of that instant behind (``Transaction.tasks_place_files``)."""
    return evo_dir(root) / RETRIES_DIR / instant


def remove_data_files(root: str | os.PathLike[str], files: Iterable[Any]) -> None:
    """Delete data files and log blocks (``DataFile``s: of a failed or aborted attempt)."""
    io = file_io()
    for f in files:
        io.delete(Path(root) / f.path)


def data_tree(root: Path) -> Iterator[tuple[str, FileInfo]]:
    """Every file of the table outside ``.evo`` (relative path with ``/``, info)."""
    io = file_io()
    for f in sorted(io.list(root), key=lambda f: f.name):
        yield f.name, f
    for d in sorted(io.folders(root)):
        if d != EVO_DIR:
            for rel, f in io.walk(root / d):
                yield f"{d}/{rel}", f


def files_of_instant(root: Path, instant: str) -> list[Path]:
    """Every data file and log block (finished or half-written) named with ``instant``."""
    out = []
    for rel, f in data_tree(root):
        named = parse_data_file(f.name) or parse_log_block(f.name)
        written = named.instant if named is not None else parse_log_block_temp(f.name)
        if written == instant:
            out.append(root / rel)
    return out


def staging_dir(root: str | os.PathLike[str], instant: str) -> Path:
    """Where the write of ``instant`` stages its files."""
    return evo_dir(root) / STAGING_DIR / instant


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, exclusive: bool = False
) -> None:
    """Write ``data`` to ``path`` so readers never see a partial file, through the process's
    :class:`~evonb.table.fileio.FileIO`: ``write`` (create or replace) or, with
    ``exclusive=True``, ``write_if_absent``, which never overwrites: if ``path`` exists,
    :class:`FileExistsError` is raised and the file is left untouched."""
    io = file_io()
    if exclusive:
        io.write_if_absent(path, data)
    else:
        io.write(path, data)


_COMPACT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dump_json(obj: Any) -> bytes:
    """The canonical metadata encoding: UTF-8, non-ASCII kept, keys sorted; an object's members
    one per line, and a member that is a list of objects (a commit's files, a schema's
    fields) one element per line; the rest compact. Everything goes through the C encoder:
    an indented encoding is done in pure Python, four times slower on a commit of 10,000
    files, and a third larger."""
    return (_lines(obj) + "\n").encode("utf-8")


def _lines(obj: Any) -> str:
    if not isinstance(obj, dict) or not obj or not all(isinstance(k, str) for k in obj):
        return _COMPACT.encode(obj)
    members = []
    for key in sorted(obj):
        value = obj[key]
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            text = "[\n" + ",\n".join(map(_COMPACT.encode, value)) + "\n]"
        else:
            text = _COMPACT.encode(value)
        members.append(f"{_COMPACT.encode(key)}:{text}")
    return "{\n" + ",\n".join(members) + "\n}"


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, exclusive: bool = False) -> None:
    """:func:`atomic_write_bytes` of ``obj`` as canonical JSON (see :func:`dump_json`)."""
    atomic_write_bytes(path, dump_json(obj), exclusive=exclusive)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON metadata file.

    A missing file raises :class:`FileNotFoundError`; an empty, truncated, unparsable or
    non-UTF-8 file raises :class:`MetadataCorruptError` naming it.
    """
    return parse_json_bytes(file_io().read(path), str(path))


def parse_json_bytes(raw: bytes, where: str) -> Any:
    """Parse JSON bytes read from ``where``; any defect raises :class:`MetadataCorruptError`."""
    if not raw.strip():
        raise MetadataCorruptError(where, "the file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MetadataCorruptError(where, f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        kind = "truncated JSON" if exc.pos >= len(text.rstrip()) else "unparsable JSON"
        raise MetadataCorruptError(
            where, f"{kind}: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise MetadataCorruptError(where, f"unparsable JSON: {exc}") from None

_RAISE: Any = object()


@contextmanager
def nested_hold(state: threading.local, forget: Callable[[], None]) -> Iterator[None]:
    """One level of something held per thread in ``state`` (its ``depth`` attribute): levels
    nest, and when the outermost one ends ``forget()`` drops what was held."""
    state.depth = getattr(state, "depth", 0) + 1
    try:
        yield
    finally:
        state.depth -= 1
        if not state.depth:
            forget()


class FileCache(Generic[T]):
    """Parsed contents of files, read again only when a file changed.

    Each value is kept with its file's identity and version (inode, size, modification time),
    taken before the file was read. :meth:`get` stats the file and returns the kept value when
    nothing changed, else parses the file again. Metadata files are replaced atomically, so any
    change to one changes its stamp. Entries are keyed by the file's path unless a ``key`` is
    given. Thread-safe.
    """

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[Hashable, T]] = {}
        self._lock = threading.Lock()

    def get(self, path: str | os.PathLike[str], parse: Callable[[Path], T], *,
            key: Hashable | None = None, unreadable: Any = _RAISE) -> T:
        """The value of the file at ``path``, parsed by ``parse(path)`` unless the file is
        unchanged since it was last parsed. A file that cannot be looked at (missing:
        :class:`FileNotFoundError`) forgets its value and raises, or returns ``unreadable``
        when given; an error from ``parse`` keeps nothing."""
        p = Path(path)
        key = p if key is None else key
        try:
            stamp = file_stamp(p)
        except OSError:
            self.discard(key)
            if unreadable is not _RAISE:
                return cast(T, unreadable)
            raise
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        value = parse(p)
        with self._lock:
            self._entries[key] = (stamp, value)
        return value

    def kept(self, key: Hashable) -> T | None:
        """The value kept under ``key``, without looking at its file (for files written once
        and never changed), or None."""
        with self._lock:
            hit = self._entries.get(key)
        return None if hit is None else hit[1]

    def remember(self, key: Hashable, value: T) -> None:
        """Keep ``value`` under ``key`` without its file's version (no look at the file):
        :meth:`kept` returns it, :meth:`get` reads the file again."""
        with self._lock:
            self._entries[key] = (None, value)

    def put(self, path: str | os.PathLike[str], value: T, *, key: Hashable | None = None) -> None:
        """Keep ``value`` as the content of the file at ``path`` as it is now (just written)."""
        p = Path(path)
        key = p if key is None else key
        try:
            stamp = file_stamp(p)
        except OSError:
            self.discard(key)
            return
        with self._lock:
            self._entries[key] = (stamp, value)

    def discard(self, key: Hashable) -> None:
        """Forget the value kept under ``key`` (a path unless keyed otherwise)."""
        with self._lock:
            self._entries.pop(key, None)

    def retain(self, keys: Iterable[Hashable]) -> None:
        """Forget every value not kept under one of ``keys``."""
        live = set(keys)
        with self._lock:
            for stale in [k for k in self._entries if k not in live]:
                del self._entries[stale]


def file_stamp(path: str | os.PathLike[str]) -> Hashable:
    """A file's version token (:attr:`~evonb.table.fileio.FileInfo.version`): it changes
    whenever the file does. Locally: inode, size and modification time (nanoseconds)."""
    return file_io().info(path).version


__all__ = [
    "EVO_DIR",
    "FileCache",
    "atomic_write_bytes",
    "atomic_write_json",
    "dump_json",
    "evo_dir",
    "file_stamp",
    "files_of_instant",
    "fsync_dir",
    "is_temp_name",
    "location_uri",
    "nested_hold",
    "parse_json_bytes",
    "read_json",
    "table_path",
]
