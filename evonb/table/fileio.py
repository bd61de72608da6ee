"""One storage interface: every access evonb makes to a table's own files goes through a FileIO.

The commit protocol needs these operations and nothing else:

- :meth:`FileIO.read` a whole file;
- :meth:`FileIO.write` a file whole (create or replace; a reader sees the old content or the new,
  never a part);
- :meth:`FileIO.write_if_absent` (create only; of two writers exactly one wins, the other gets
  :class:`FileExistsError`): the commit point;
- :meth:`FileIO.list` a folder's files with their sizes, :meth:`FileIO.info` (size and a version
  token that changes whenever the file does), :meth:`FileIO.exists`;
- :meth:`FileIO.delete` a file, :meth:`FileIO.delete_folder` a folder and all below it.

No rename and no hard link is needed for correctness: this is what lets a table live on object
storage, where neither exists. Two helpers are conveniences built from those operations:
:meth:`FileIO.move` places a file that no commit names yet (a rename where the store has one,
else copy and delete: nobody reads the file before its commit completes, so the move need not be
atomic), and :meth:`FileIO.walk` lists a whole tree.

Implementations:

- ``local`` (:class:`LocalFileIO`, the default): a local or mounted file system. Whole-file
  writes go to a temporary file published by ``os.replace``; ``write_if_absent`` publishes it with
  ``os.link``, which never overwrites (``O_EXCL`` where the file system has no hard links).
- ``local-no-rename`` (:class:`NoRenameFileIO`): the same folders, but the operations of an object
  store only: never a rename, never a link. A whole-file write rewrites the file in place under an
  exclusive ``flock`` and readers read under a shared one, so readers still see whole files;
  ``write_if_absent`` is ``O_EXCL``. The test suite runs the table, services and concurrency tests
  over it (``EVONB_FILE_IO=local-no-rename``) to prove the protocol needs no rename.

- ``s3`` (:class:`evonb.table.fileio_s3.S3FileIO`): S3-compatible object storage, and ``azure``
  (:class:`evonb.table.fileio_azure.AzureFileIO`): Azure Blob Storage and ADLS Gen2. They are
  not chosen by ``EVONB_FILE_IO`` but by the location: the process's FileIO sends every path in
  object storage (first part ``s3:``/``s3a:`` or ``az:``, see :func:`object_store`) to its
  store's FileIO, and all other paths to the implementation below.

The implementation for local paths is chosen by the environment variable ``EVONB_FILE_IO``
(default ``local``), never by anything a table stores: a name that is neither built in nor
registered by an installed package under the entry point group ``evonb.file_io`` is an error.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from evonb.errors import EvoError
from evonb.table.fileio_azure import AzureFileIO  # azure-storage-blob: loaded on first use
from evonb.table.fileio_base import (
    FileInfo,
    FileIO,
    PathLike,
    is_object_path,
    object_key,
    object_store,
)
from evonb.table.fileio_s3 import S3FileIO  # boto3, optional, is loaded on first use
from evonb.table.names import TEMP_SUFFIX, temp_prefix
from evonb.table.plugins import PluginKind, check_name, load

if TYPE_CHECKING:
    import pyarrow.fs as pafs

FILE_IO_ENV = "EVONB_FILE_IO"
FILE_IO_GROUP = "evonb.file_io"

# errno values with which os.link says the file system has no hard links.
_NO_LINK_ERRNOS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS}


class LocalFileIO(FileIO):
    """A local or mounted file system (see the module docstring)."""

    name = "local"

    def read(self, path: PathLike) -> bytes:
        return Path(path).read_bytes()

    def write(self, path: PathLike, data: bytes) -> None:
        self._publish(Path(path), data, exclusive=False)

    def write_if_absent(self, path: PathLike, data: bytes) -> None:
        self._publish(Path(path), data, exclusive=True)

    def _publish(self, target: Path, data: bytes, *, exclusive: bool) -> None:
        parent = target.parent
        parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target.name), suffix=TEMP_SUFFIX,
                                   dir=parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if exclusive:
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    raise
                except OSError as exc:  # no hard links on this file system
                    if exc.errno not in _NO_LINK_ERRNOS:
                        raise
                    _create_exclusive(target, data)
            else:
                os.replace(tmp, target)
            _sync_folder(parent)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)

    @contextmanager
    def folder_syncs_batched(self) -> Iterator[None]:
        outer = getattr(_BATCH, "folders", None)
        if outer is not None:  # nested: the outermost block flushes
            yield
            return
        _BATCH.folders = folders = {}
        try:
            yield
        finally:
            _BATCH.folders = None
        for folder in folders:  # reached only when the block ended without an error
            fsync_dir(folder)

    def list(self, folder: PathLike) -> list[FileInfo]:
        return self.list_where(folder, _every)

    def list_where(self, folder: PathLike, keep: Callable[[str], bool]) -> list[FileInfo]:
        out: list[FileInfo] = []
        try:
            with os.scandir(folder) as entries:
                for e in entries:
                    try:
                        if not keep(e.name) or not e.is_file(follow_symlinks=False):
                            continue
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    out.append(FileInfo(e.name, st.st_size, _stamp(st)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return out

    def names(self, folder: PathLike) -> list[str]:
        try:
            with os.scandir(folder) as entries:  # the entry types come with the listing
                return [e.name for e in entries if e.is_file(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def folders(self, folder: PathLike) -> list[str]:
        try:
            with os.scandir(folder) as entries:
                return [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def info(self, path: PathLike) -> FileInfo:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "a folder, not a file", str(path))
        return FileInfo(os.path.basename(os.fspath(path)), st.st_size, _stamp(st))

    def is_folder(self, folder: PathLike) -> bool:
        return os.path.isdir(folder)

    def delete(self, path: PathLike) -> None:
        with suppress(FileNotFoundError):
            os.unlink(path)

    def delete_folder(self, folder: PathLike) -> None:
        shutil.rmtree(folder, ignore_errors=True)

    def open_read(self, path: PathLike) -> BinaryIO:
        return open(path, "rb")

    def arrow_filesystem(self) -> pafs.FileSystem:
        """The local file system, its files read through memory maps: data files and log
        blocks are never changed once written, and a mapped read decodes the page cache's
        bytes in place where a plain read copies each column chunk into memory first (the
        JVM-free full read of 5,000,000 rows took about 5% less time, reads alternated)."""
        # Imported here: the table layer reads no data otherwise, and pyarrow is heavy.
        import pyarrow.fs

        return pyarrow.fs.LocalFileSystem(use_mmap=True)

    def move(self, src: PathLike, dst: PathLike) -> None:
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)


class NoRenameFileIO(LocalFileIO):
    """Local folders with the operations of an object store only: no rename, no link (see the
    module docstring). Readers of a file being written wait for its writer's ``flock``."""

    name = "local-no-rename"

    # How long a reader waits for the writer of a just-created, still empty file.
    EMPTY_WAIT_S = 2.0

    def read(self, path: PathLike) -> bytes:
        deadline = time.monotonic() + self.EMPTY_WAIT_S
        while True:
            with open(path, "rb") as fh:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
                try:
                    data = fh.read()
                finally:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            # Created (O_EXCL) but not yet locked by its writer: no file evonb writes is empty.
            if data or time.monotonic() > deadline:
                return data
            time.sleep(0.002)

    def write(self, path: PathLike, data: bytes) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._write_locked(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644), target, data)

    def write_if_absent(self, path: PathLike, data: bytes) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            self._write_locked(fd, target, data)
        except BaseException:
            self.delete(target)
            raise

    @staticmethod
    def _write_locked(fd: int, target: Path, data: bytes) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            before = os.fstat(fd).st_mtime_ns
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            # A version that always changes, even within one tick of the file system's clock.
            now = max(time.time_ns(), before + 1)
            os.utime(fd, ns=(now, now))
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        _sync_folder(target.parent)

    def move(self, src: PathLike, dst: PathLike) -> None:
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        self.delete(src)


def _every(name: str) -> bool:
    return True


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _create_exclusive(target: Path, data: bytes) -> None:
    """Exclusive create for file systems without hard links (``O_EXCL``)."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(target)
        raise


_BATCH = threading.local()  # the folders to flush at the end of folder_syncs_batched


def _sync_folder(path: Path) -> None:
    """Flush ``path`` now, or at the end of the enclosing ``folder_syncs_batched`` block."""
    folders = getattr(_BATCH, "folders", None)
    if folders is None:
        fsync_dir(path)
    else:
        folders[path] = None


def fsync_dir(path: PathLike) -> None:
    """Flush a folder's entries to disk, so a file just created in it survives a crash.

    A no-op where folders cannot be opened for syncing.
    """
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        with suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


_BUILTIN: dict[str, type[FileIO]] = {c.name: c for c in (LocalFileIO, NoRenameFileIO)}

FILE_IOS = PluginKind("file IO", FILE_IO_ENV, FILE_IO_GROUP, frozenset(_BUILTIN), "local",
                      source="Environment variable")
"""The FileIO implementations: built-ins and the entry points of group ``evonb.file_io``."""


@cache
def _file_io_named(key: str) -> FileIO:
    if key in _BUILTIN:
        return _BUILTIN[key]()
    made = load(FILE_IOS, key)()  # type: ignore[operator]
    if not isinstance(made, FileIO):
        raise EvoError(f"The file IO {key!r} built {made!r}, which is not a FileIO",
                       hint=f"fix the class its package registers in {FILE_IO_GROUP!r}")
    return made


@cache
def _object_store_io(store: str) -> FileIO:
    return AzureFileIO() if store == "az" else S3FileIO()


def object_store_io(store: str = "s3") -> FileIO:
    """The FileIO of an object store, made once per process (``object_store_io.cache_clear()``
    makes them anew, from the configuration as it is then): ``"s3"``, S3-compatible storage
    (:mod:`evonb.table.fileio_s3`); ``"az"``, Azure Blob Storage and ADLS Gen2
    (:mod:`evonb.table.fileio_azure`). See :func:`object_store`."""
    return _object_store_io(store)


object_store_io.cache_clear = _object_store_io.cache_clear  # type: ignore[attr-defined]


def _store_io(path: PathLike) -> FileIO | None:
    store = object_store(path)
    return None if store is None else _object_store_io(store)


class _Routing(FileIO):
    """Mixed into the process's FileIO class: paths in object storage (see
    :func:`object_store`) go to that store's FileIO (:func:`object_store_io`), all others to
    the FileIO itself."""

    def read(self, path: PathLike) -> bytes:
        store = _store_io(path)
        return store.read(path) if store else super().read(path)

    def write(self, path: PathLike, data: bytes) -> None:
        store = _store_io(path)
        return store.write(path, data) if store else super().write(path, data)

    def write_if_absent(self, path: PathLike, data: bytes) -> None:
        store = _store_io(path)
        return store.write_if_absent(path, data) if store else super().write_if_absent(path, data)

    def list(self, folder: PathLike) -> list[FileInfo]:
        store = _store_io(folder)
        return store.list(folder) if store else super().list(folder)

    def names(self, folder: PathLike) -> list[str]:
        store = _store_io(folder)
        return store.names(folder) if store else super().names(folder)

    def list_where(self, folder: PathLike, keep: Callable[[str], bool]) -> list[FileInfo]:
        store = _store_io(folder)
        return store.list_where(folder, keep) if store else super().list_where(folder, keep)

    def folders(self, folder: PathLike) -> list[str]:
        store = _store_io(folder)
        return store.folders(folder) if store else super().folders(folder)

    def info(self, path: PathLike) -> FileInfo:
        store = _store_io(path)
        return store.info(path) if store else super().info(path)

    def exists(self, path: PathLike) -> bool:
        store = _store_io(path)
        return store.exists(path) if store else super().exists(path)

    def content_version(self, path: PathLike, data: bytes) -> Hashable | None:
        store = _store_io(path)
        return store.content_version(path, data) if store else super().content_version(path, data)

    def is_folder(self, folder: PathLike) -> bool:
        store = _store_io(folder)
        return store.is_folder(folder) if store else super().is_folder(folder)

    def delete(self, path: PathLike) -> None:
        store = _store_io(path)
        return store.delete(path) if store else super().delete(path)

    def delete_folder(self, folder: PathLike) -> None:
        store = _store_io(folder)
        return store.delete_folder(folder) if store else super().delete_folder(folder)

    def open_read(self, path: PathLike) -> BinaryIO:
        store = _store_io(path)
        return store.open_read(path) if store else super().open_read(path)

    def arrow_location(self, path: PathLike) -> tuple[pafs.FileSystem, str]:
        store = _store_io(path)
        return store.arrow_location(path) if store else super().arrow_location(path)

    def open_data(self, path: PathLike) -> pafs.NativeFile:
        store = _store_io(path)
        return store.open_data(path) if store else super().open_data(path)

    def move(self, src: PathLike, dst: PathLike) -> None:
        if object_store(src) != object_store(dst):
            raise EvoError(f"Cannot move {src} to {dst}: they are in different stores",
                           hint="copy the file instead")
        store = _store_io(src)
        return store.move(src, dst) if store else super().move(src, dst)


def file_io() -> FileIO:
    """The FileIO of this process: the one ``EVONB_FILE_IO`` names (default ``local``) for
    local paths; paths in object storage (``s3:``/``s3a:``, ``az:``) go to
    :func:`object_store_io`."""
    return _file_io_for(os.environ.get(FILE_IO_ENV))


@cache
def _file_io_for(setting: str | None) -> FileIO:
    made = _file_io_named(check_name(FILE_IOS, setting))
    cls = made.__class__
    routed = type(cls.__name__, (_Routing, cls), {"__module__": cls.__module__,
                                                  "__qualname__": cls.__qualname__})
    out = object.__new__(routed)
    out.__dict__.update(made.__dict__)
    return out


__all__ = [
    "FILE_IOS",
    "FILE_IO_ENV",
    "FILE_IO_GROUP",
    "FileIO",
    "FileInfo",
    "LocalFileIO",
    "NoRenameFileIO",
    "file_io",
    "fsync_dir",
    "is_object_path",
    "object_key",
    "object_store",
    "object_store_io",
]
