"""Writer locks: one writer at a time commits to a table.

The default provider, :class:`FileLock`, takes ``fcntl.flock`` on ``<root>/.evo/lock``. It
excludes other processes on the same machine (and on network file systems that honour flock),
and other :class:`FileLock` objects in the same process too. It is **not** re-entrant: acquiring
the same object twice raises ``RuntimeError``, and a second object for the same table in the same
thread waits like any other writer (and so deadlocks until its timeout).

For tables in object storage, which has no ``flock``, the default is :class:`LeaseLock`: a
lease object created with the store's conditional create.

The table property ``evonb.lock.provider`` names the provider: ``"file"`` (the default:
``flock`` locally, a lease in object storage), ``"flock"`` (``flock`` only: an error for a
table in object storage), ``"lease"``, ``"noop"`` (no locking: single-writer setups and tests
only), or the name of an entry point in the group ``evonb.lock_providers`` that an installed
package registers (never a module path: see :mod:`evonb.table.plugins`). Built-in or not,
every provider is resolved by name through :func:`lock_provider_from_name` and used only
through :class:`LockProvider`. The class an entry point names is built with
``Class.from_table(root, properties)`` when it has such a classmethod, else ``Class(root)``,
and must implement :class:`LockProvider`.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from evonb.errors import ConflictError, EvoError
from evonb.table.fileio import file_io, is_object_path
from evonb.table.fsutil import evo_dir, table_path
from evonb.table.names import LOCK_FILE
from evonb.table.plugins import LOCK_PROVIDERS_GROUP, PluginKind, check_name, load

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_PROVIDER_PROPERTY = "evonb.lock.provider"
LOCK_TIMEOUT_PROPERTY = "evonb.lock.timeout"
DEFAULT_PROVIDER = "file"
DEFAULT_TIMEOUT = 60.0
LEASE_PROPERTY = "evonb.lock.lease"
DEFAULT_LEASE = 60.0
LEASE_FILE = "lock.lease"


@runtime_checkable
class LockProvider(Protocol):
    """A mutual-exclusion lock for one table's writers.

    ``acquire`` and ``release`` are required. A provider whose hold can lapse while its holder
    still runs (a lease with an expiry) also defines ``verify()``, which the writer calls right
    before its commit point and which raises :class:`ConflictError` if the hold has lapsed
    (the commit is then not made). A provider that renews its hold does so itself (for
    instance from a thread, with a conditional write on the version it holds); renewal is not
    part of the interface.
    """

    def acquire(self, timeout: float) -> None:
        """Block up to ``timeout`` seconds (``math.inf``: forever; ``0``: one try).

        Raises :class:`ConflictError` if the lock is still held by someone else.
        """
        ...

    def release(self) -> None:
        """Release the lock (a no-op when it is not held)."""
        ...


L = TypeVar("L", bound=LockProvider)


@contextmanager
def locked(lock: L, timeout: float = DEFAULT_TIMEOUT) -> Iterator[L]:
    """``with locked(lock, timeout):`` holds ``lock`` for the block."""
    lock.acquire(timeout)
    try:
        yield lock
    finally:
        lock.release()


class FileLock:
    """An exclusive ``flock`` on a lock file (see the module docstring for its semantics)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @classmethod
    def for_table(
        cls, root: str | os.PathLike[str], properties: Mapping[str, str] | None = None
    ) -> FileLock:
        """The lock of the table at ``root`` (``<root>/.evo/lock``)."""
        return cls(evo_dir(root) / LOCK_FILE)

    from_table = for_table

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        if fcntl is None:  # pragma: no cover
            raise EvoError("FileLock needs fcntl (a POSIX system)",
                           hint=f"set {LOCK_PROVIDER_PROPERTY} to another provider")
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this FileLock (not re-entrant)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(timeout, 0.0)
        delay = 0.005
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    now = time.monotonic()
                    if now >= deadline:
                        holder = _holder(fd)
                        raise ConflictError(
                            f"table is locked by another writer ({self.path}"
                            f"{', held by ' + holder if holder else ''}); "
                            f"gave up after {timeout:g}s",
                            hint="wait for the other writer to finish, or raise the timeout",
                        ) from None
                    time.sleep(min(delay, deadline - now))
                    delay = min(delay * 2, 0.1)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        _write_holder(fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire(DEFAULT_TIMEOUT)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"FileLock({str(self.path)!r}, held={self.held})"


def _write_holder(fd: int) -> None:
    """Record who holds the lock, for the message another writer gets (best effort)."""
    info = f"pid {os.getpid()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, info.encode(), 0)
    except OSError:
        pass


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""


class LeaseLock:
    """A lease on ``<root>/.evo/lock.lease``, for stores without ``flock`` (object storage):
    the default lock of a table in a bucket (provider ``lease``; ``file`` means this there).

    Acquiring creates the lease object with the store's conditional create
    (:meth:`~evonb.table.fileio.FileIO.write_if_absent`: of two writers exactly one succeeds);
    it records the owner (host, pid, a random token) and an expiry ``evonb.lock.lease``
    seconds ahead (default 60). Releasing deletes it, if it is still this owner's. A lease past
    its expiry (by the breaker's clock) belongs to a writer that died or stalled: a waiting
    writer breaks it by first creating ``lock.lease.broken-<token>`` conditionally, so of
    several breakers of one lease exactly one deletes it. Before its commit point a holder
    checks that its lease is still its own (:meth:`verify`, called by
    :meth:`~evonb.table.transaction.Transaction.complete`) and fails with
    :class:`ConflictError` if it was broken.

    Limits: a holder paused past its expiry between :meth:`verify` and publishing its commit
    can still commit beside the writer that broke its lease; hosts' clocks must agree to well
    within the lease; the broken-lease markers stay (one small object per broken lease).
    """

    def __init__(self, path: str | os.PathLike[str], seconds: float = DEFAULT_LEASE) -> None:
        self.path = Path(path)
        self.seconds = seconds
        self._token: str | None = None

    @classmethod
    def for_table(
        cls, root: str | os.PathLike[str], properties: Mapping[str, str] | None = None
    ) -> LeaseLock:
        """The lease of the table at ``root``."""
        raw = (properties or {}).get(LEASE_PROPERTY)
        try:
            seconds = float(raw) if raw else DEFAULT_LEASE
        except ValueError:
            raise EvoError(f"{LEASE_PROPERTY} must be a number of seconds, not {raw!r}",
                           hint=f"ALTER TABLE ... SET TBLPROPERTIES ('{LEASE_PROPERTY}'='60')"
                           ) from None
        return cls(evo_dir(root) / LEASE_FILE, seconds)

    from_table = for_table

    @property
    def held(self) -> bool:
        """Whether this object holds the lease."""
        return self._token is not None

    def acquire(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        if self._token is not None:
            raise RuntimeError(f"{self.path} is already held by this LeaseLock (not re-entrant)")
        io = file_io()
        token = uuid.uuid4().hex
        deadline = time.monotonic() + max(timeout, 0.0)
        delay = 0.01
        while True:
            body = {"host": socket.gethostname(), "pid": os.getpid(), "token": token,
                    "expires": time.time() + self.seconds}
            try:
                io.write_if_absent(self.path, json.dumps(body).encode())
                self._token = token
                return
            except FileExistsError:
                pass
            holder = self._read()
            if holder is not None and float(holder.get("expires", 0)) < time.time():
                self._break(holder)
                continue
            now = time.monotonic()
            if now >= deadline:
                who = (f", held by pid {holder.get('pid')} on {holder.get('host')}"
                       if holder else "")
                raise ConflictError(
                    f"table is locked by another writer ({self.path}{who}); "
                    f"gave up after {timeout:g}s",
                    hint="wait for the other writer to finish, or raise the timeout")
            time.sleep(min(delay, max(deadline - now, 0.0)))
            delay = min(delay * 2, 0.2)

    def _read(self) -> dict[str, object] | None:
        try:
            data = json.loads(file_io().read(self.path))
        except FileNotFoundError:
            return None
        except ValueError:  # unreadable: treat as expired, so it can be broken
            return {"token": "unreadable", "expires": 0}
        return data if isinstance(data, dict) else {"token": "unreadable", "expires": 0}

    def _break(self, stale: Mapping[str, object]) -> None:
        marker = self.path.with_name(f"{self.path.name}.broken-{stale.get('token')}")
        try:
            file_io().write_if_absent(marker, json.dumps(dict(stale)).encode())
        except FileExistsError:
            return  # another writer broke this lease
        current = self._read()
        if current is not None and current.get("token") == stale.get("token"):
            file_io().delete(self.path)

    def verify(self) -> None:
        """Raise :class:`ConflictError` unless this object still holds the lease (it was broken
        while this writer was stalled past its expiry)."""
        current = self._read()
        if self._token is None or current is None or current.get("token") != self._token:
            raise ConflictError(
                f"this writer's lease on the table lock ({self.path}) expired and was taken "
                "by another writer; the commit was not made",
                hint=f"run the operation again (or raise {LEASE_PROPERTY})")

    def release(self) -> None:
        token, self._token = self._token, None
        if token is None:
            return
        current = self._read()
        if current is not None and current.get("token") == token:
            file_io().delete(self.path)

    def __repr__(self) -> str:
        return f"LeaseLock({str(self.path)!r}, held={self.held})"


class NoOpLock:
    """A lock that locks nothing (for single-writer setups and tests)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = root

    def acquire(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        return None

    def release(self) -> None:
        return None


LockFactory = Callable[[Path, Mapping[str, str]], LockProvider]

def _default_lock(root: Path, props: Mapping[str, str]) -> LockProvider:
    """``file``: flock on a local table, a lease in object storage (no flock there)."""
    if is_object_path(root):
        return LeaseLock.for_table(root, props)
    return FileLock.for_table(root, props)


def _flock(root: Path, props: Mapping[str, str]) -> LockProvider:
    """``flock``: flock on a local table only."""
    if is_object_path(root):
        raise EvoError(f"The lock provider 'flock' cannot lock the table at {root}: object "
                       "storage has no flock",
                       hint=f"use {LOCK_PROVIDER_PROPERTY}='lease' (or 'file', which means the "
                            "lease there), or a provider with conditional writes")
    return FileLock.for_table(root, props)


_BUILTIN: dict[str, LockFactory] = {
    "file": _default_lock,
    "flock": _flock,
    "lease": lambda root, props: LeaseLock.for_table(root, props),
    "noop": lambda root, props: NoOpLock(root),
}


LOCK_PROVIDERS = PluginKind("lock provider", LOCK_PROVIDER_PROPERTY, LOCK_PROVIDERS_GROUP,
                            frozenset(_BUILTIN), DEFAULT_PROVIDER)
"""The lock providers: built-ins and the entry points of group ``evonb.lock_providers``."""


def check_lock_provider(name: str | None, *, root: Path | None = None) -> str:
    """The key of a lock provider name, checked without importing anything
    (:class:`~evonb.errors.UnknownPluginError` for a name neither built in nor registered)."""
    return check_name(LOCK_PROVIDERS, name, outside=root)


def lock_provider_from_name(name: str | None, *, root: Path | None = None) -> LockFactory:
    """A factory ``(root, properties) -> LockProvider`` for a provider name.

    ``name`` is ``"file"``, ``"noop"`` or the name of a registered entry point (group
    ``evonb.lock_providers``); ``None`` or an empty name is ``"file"``. A module path is an
    unknown name: nothing a table names is imported. ``root``: the table's folder (a
    distribution found inside it is not used).
    """
    key = check_name(LOCK_PROVIDERS, name, outside=root)
    if key in _BUILTIN:
        return _BUILTIN[key]
    target = load(LOCK_PROVIDERS, key, outside=root)

    def build(root: Path, properties: Mapping[str, str]) -> LockProvider:
        maker = getattr(target, "from_table", None)
        lock = maker(root, properties) if callable(maker) else target(root)  # type: ignore[operator]
        if not isinstance(lock, LockProvider):
            raise EvoError(f"Lock provider {key!r} built {lock!r}, which has no acquire/release",
                           hint=f"fix the class its package registers in {LOCK_PROVIDERS_GROUP!r}")
        return lock

    return build


def lock_for_table(
    root: str | os.PathLike[str], properties: Mapping[str, str] | None = None
) -> LockProvider:
    """The lock named by ``properties[evonb.lock.provider]`` for the table at ``root``."""
    props = properties or {}
    path = table_path(root)
    factory = lock_provider_from_name(props.get(LOCK_PROVIDER_PROPERTY), root=path)
    return factory(path, props)


__all__ = [
    "DEFAULT_TIMEOUT",
    "LOCK_PROVIDERS",
    "LOCK_PROVIDER_PROPERTY",
    "LOCK_TIMEOUT_PROPERTY",
    "FileLock",
    "LeaseLock",
    "LockFactory",
    "LockProvider",
    "NoOpLock",
    "check_lock_provider",
    "lock_for_table",
    "lock_provider_from_name",
    "locked",
]
