"""The storage interface's base: :class:`FileIO` (the operations evonb performs on a table's
files), :class:`FileInfo`, and :func:`is_object_path`. See :mod:`evonb.table.fileio` for the
protocol and the implementations."""

from __future__ import annotations

import io
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar

from evonb.errors import EvoError

if TYPE_CHECKING:
    import pyarrow.fs as pafs

PathLike = str | os.PathLike[str]


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

    @contextmanager
    def folder_syncs_batched(self) -> Iterator[None]:
        """Inside, in this thread, files written are each flushed as ever, but the folders
        they were created in are flushed once each at the end of the block (if it ends
        without an error) instead of after every file: for files nothing refers to until all
        of them are written (a schema version and its layout, before the commit that names
        them). Stores without folders to flush do nothing."""
        yield

    def list_where(self, folder: PathLike, keep: Callable[[str], bool]) -> list[FileInfo]:
        """:meth:`list` of the files whose name ``keep`` accepts: a store that looks sizes up
        one by one (a local disk) looks up only theirs."""
        return [f for f in self.list(folder) if keep(f.name)]

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

    def arrow_location(self, path: PathLike) -> tuple[pafs.FileSystem, str]:
        """The pyarrow file system holding ``path`` and the path in its terms (for datasets)."""
        return self.arrow_filesystem(), os.fspath(path)

    def open_data(self, path: PathLike) -> pafs.NativeFile:
        """A seekable native stream over a data file or log block (see
        :meth:`arrow_filesystem`)."""
        fs, where = self.arrow_location(path)
        return fs.open_input_file(where)

    @abstractmethod
    def move(self, src: PathLike, dst: PathLike) -> None:
        """Place ``src`` at ``dst`` (replacing it) and remove ``src``; for files no commit names
        yet, so it need not be atomic."""

    def content_version(self, path: PathLike, data: bytes) -> Hashable | None:
        """The version token a file at ``path`` holding exactly ``data`` has, where the store
        derives it from the content alone (so a copy of a file's bytes can be proved to be
        the file's by its listing); None where it does not (the default: local versions are
        inode and modification time)."""
        return None

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


class ObjectStoreError(EvoError):
    """The object store refused or failed an operation (bucket or container missing,
    credentials refused, endpoint unreachable); names the location."""

    def __init__(self, message: str, *, location: str, hint: str | None = None) -> None:
        self.location = location
        super().__init__(message, hint=hint)


class ObjectStoreFileIO(FileIO):
    """What the FileIOs of object stores share: whole-object reads as streams, and reads of
    data files through the store's pyarrow file system with its errors as
    :class:`ObjectStoreError`."""

    arrow_hint: ClassVar[str] = "check the credentials and the location"
    """The fix an :class:`ObjectStoreError` of a data file read suggests."""

    @abstractmethod
    def location(self, path: PathLike) -> str:
        """``path`` as users name it (a URI with the store's scheme)."""

    def exists(self, path: PathLike) -> bool:
        try:
            self.info(path)
        except (FileNotFoundError, IsADirectoryError):
            return False
        return True

    def open_read(self, path: PathLike) -> BinaryIO:
        return io.BytesIO(self.read(path))

    def open_data(self, path: PathLike) -> pafs.NativeFile:
        fs, in_fs = self.arrow_location(path)
        try:
            return fs.open_input_file(in_fs)
        except FileNotFoundError:
            raise
        except OSError as exc:
            where = self.location(path)
            raise ObjectStoreError(f"Cannot read {where}: {exc}", location=where,
                                   hint=self.arrow_hint) from None


def object_store(path: PathLike) -> str | None:
    """The object store holding ``path`` (a table root or a path below one), by its first part:
    ``"s3"`` for ``s3:``/``s3a:`` (``Path("s3://bucket/key")`` is ``s3:/bucket/key``), ``"az"``
    for ``az:`` (Azure, see :mod:`evonb.table.fileio_azure`); None for a local path."""
    s = os.fspath(path)
    if s.startswith(("s3:/", "s3a:/")):
        return "s3"
    if s.startswith("az:/"):
        return "az"
    return None


def object_key(path: PathLike) -> str | None:
    """The key of ``path`` in its bucket or container (``s3://bucket/a/b``: ``a/b``; Azure's
    ``az://container@account/a/b`` alike), or None for a local path."""
    if object_store(path) is None:
        return None
    rest = os.fspath(path).split(":", 1)[1].lstrip("/")
    return rest.partition("/")[2].strip("/")


def is_object_path(path: PathLike) -> bool:
    """Whether ``path`` (a table root or a path below one) names object storage (see
    :func:`object_store`)."""
    return object_store(path) is not None


__all__ = ["FileIO", "FileInfo", "ObjectStoreError", "ObjectStoreFileIO", "PathLike",
           "is_object_path", "object_key", "object_store"]
