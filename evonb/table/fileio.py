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

The implementation is chosen by the environment variable ``EVONB_FILE_IO`` (default ``local``),
never by anything a table stores: a name that is neither built in nor registered by an installed
package under the entry point group ``evonb.file_io`` is an error.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar

from evonb.errors import EvoError
from evonb.table.names import TEMP_SUFFIX, temp_prefix
from evonb.table.plugins import PluginKind, check_name, load

if TYPE_CHECKING:
    import pyarrow.fs as pafs

FILE_IO_ENV = "EVONB_FILE_IO"
FILE_IO_GROUP = "evonb.file_io"

PathLike = str | os.PathLike[str]

# errno values with which os.link says the file system has no hard links.
_NO_LINK_ERRNOS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS}


@dataclass(frozen=True)
class FileInfo:
    """A file as a listing sees it: its name (last path part), size in bytes, and a version token
    that differs whenever the file's content may have changed."""

    name: str
    size: int
    version: Hashable


class FileIO(ABC):
    """The operations evonb performs on table files (see the module docstring)."""

    name: ClassVar[str]

    @abstractmethod
    def read(self, path: PathLike) -> bytes:
        """The whole file (:class:`FileNotFoundError` if there is none)."""

    @abstractmethod
    def write(self, path: PathLike, data: bytes) -> None:
        """Create or replace the file with ``data``; readers never see a part of it."""

    @abstractmethod
    def write_if_absent(self, path: PathLike, data: bytes) -> None:
        """Create the file with ``data``; :class:`FileExistsError` (file untouched) if it exists."""

    @abstractmethod
    def list(self, folder: PathLike) -> list[FileInfo]:
        """The files directly in ``folder`` (no sub-folders); empty if the folder is missing."""

    def names(self, folder: PathLike) -> list[str]:
        """The names of the files directly in ``folder`` (:meth:`list` without sizes, which
        some stores give for free and others must look up one by one)."""
        return [f.name for f in self.list(folder)]

    @abstractmethod
    def folders(self, folder: PathLike) -> list[str]:
        """The names of the sub-folders directly in ``folder``; empty if it is missing."""

    @abstractmethod
    def info(self, path: PathLike) -> FileInfo:
        """Size and version of one file (:class:`FileNotFoundError` if there is none,
        :class:`IsADirectoryError` for a folder)."""

    @abstractmethod
    def delete(self, path: PathLike) -> None:
        """Remove a file; a missing file is not an error."""

    @abstractmethod
    def delete_folder(self, folder: PathLike) -> None:
        """Remove a folder and everything below it; a missing folder is not an error."""

    @abstractmethod
    def open_read(self, path: PathLike) -> BinaryIO:
        """A seekable binary stream over the file (for footers and blocks of large files)."""

    @abstractmethod
    def arrow_filesystem(self) -> pafs.FileSystem:
        """The same store as a pyarrow file system, for bulk reads of data files and log
        blocks (Parquet footers and row groups, Avro blocks): these are written once and never
        rewritten, so their readers need no lock."""

    def open_data(self, path: PathLike) -> pafs.NativeFile:
        """A seekable native stream over a data file or log block (see
        :meth:`arrow_filesystem`)."""
        return self.arrow_filesystem().open_input_file(os.fspath(path))

    @abstractmethod
    def move(self, src: PathLike, dst: PathLike) -> None:
        """Place ``src`` at ``dst`` (replacing it) and remove ``src``; for files no commit names
        yet, so it need not be atomic."""

    def size(self, path: PathLike) -> int:
        """The file's size in bytes."""
        return self.info(path).size

    def exists(self, path: PathLike) -> bool:
        """Whether the file exists."""
        try:
            self.info(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return False
        return True

    def is_folder(self, folder: PathLike) -> bool:
        """Whether ``folder`` exists as a folder (on object stores, where folders are name
        prefixes, while something is in it)."""
        return bool(self.list(folder) or self.folders(folder))

    def walk(self, folder: PathLike) -> Iterator[tuple[str, FileInfo]]:
        """Every file below ``folder``, as (path relative to ``folder`` with ``/``, info)."""
        base = Path(folder)
        stack = [""]
        while stack:
            rel = stack.pop()
            here = base / rel if rel else base
            for f in sorted(self.list(here), key=lambda f: f.name):
                yield (f"{rel}/{f.name}" if rel else f.name), f
            stack.extend(sorted((f"{rel}/{d}" if rel else d) for d in self.folders(here))[::-1])


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
            fsync_dir(parent)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)

    def list(self, folder: PathLike) -> list[FileInfo]:
        out: list[FileInfo] = []
        try:
            with os.scandir(folder) as entries:
                for e in entries:
                    try:
                        if not e.is_file(follow_symlinks=False):
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
        # Imported here: the table layer reads no data otherwise, and pyarrow is heavy.
        import pyarrow.fs

        return pyarrow.fs.LocalFileSystem()

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
        fsync_dir(target.parent)

    def move(self, src: PathLike, dst: PathLike) -> None:
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        self.delete(src)


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


def file_io() -> FileIO:
    """The FileIO of this process: the one ``EVONB_FILE_IO`` names (default ``local``)."""
    return _file_io_for(os.environ.get(FILE_IO_ENV))


@cache
def _file_io_for(setting: str | None) -> FileIO:
    return _file_io_named(check_name(FILE_IOS, setting))


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
]
