"""The writer lock: FileLock across processes and pluggable providers."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import ClassVar

import pytest

from evonb.errors import ConflictError, EvoError, UnknownPluginError
from evonb.table.lock import (
    LOCK_PROVIDER_PROPERTY,
    FileLock,
    LockProvider,
    NoOpLock,
    lock_for_table,
    lock_provider_from_name,
    locked,
)
from tests.plugins import LOCKS, install


def _hold_lock(root: str, ready, release, done) -> None:  # type: ignore[no-untyped-def]
    lock = FileLock.for_table(root)
    lock.acquire(5)
    ready.set()
    release.wait(60)
    lock.release()
    done.set()


def test_file_lock_excludes_another_process(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, release, done = ctx.Event(), ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold_lock, args=(str(tmp_path), ready, release, done))
    child.start()
    try:
        assert ready.wait(60), "child never took the lock"
        lock = FileLock.for_table(tmp_path)
        start = time.monotonic()
        with pytest.raises(ConflictError, match="locked by another writer") as info:
            lock.acquire(0.2)
        assert time.monotonic() - start >= 0.19
        assert f"pid {child.pid}" in str(info.value)
        assert not lock.held
        release.set()
        assert done.wait(60)
        lock.acquire(0.2)
        assert lock.held
        lock.release()
        assert not lock.held
    finally:
        release.set()
        child.join(60)
    assert child.exitcode == 0


def test_file_lock_excludes_second_object_in_process(tmp_path: Path) -> None:
    path = tmp_path / ".evo" / "lock"
    first, second = FileLock(path), FileLock(path)
    with locked(first, 1) as held:
        assert held is first and first.held
        with pytest.raises(ConflictError):
            second.acquire(0)
        with pytest.raises(RuntimeError, match="re-entrant"):
            first.acquire(0)
    assert not first.held
    with second:
        assert second.held
    second.release()  # releasing twice is harmless
    assert path.exists()


def test_provider_names(tmp_path: Path) -> None:
    assert isinstance(lock_for_table(tmp_path), FileLock)
    assert isinstance(lock_for_table(tmp_path, {LOCK_PROVIDER_PROPERTY: "file"}), FileLock)
    noop = lock_for_table(tmp_path, {LOCK_PROVIDER_PROPERTY: "noop"})
    assert isinstance(noop, NoOpLock) and isinstance(noop, LockProvider)
    with locked(noop, 0):
        pass
    lock = lock_provider_from_name(None)(tmp_path, {})
    assert isinstance(lock, FileLock)
    assert lock.path == tmp_path / ".evo" / "lock"


class RecordingLock:
    """A custom provider, registered by a test distribution's entry point."""

    events: ClassVar[list[str]] = []

    def __init__(self, root: os.PathLike[str]) -> None:
        self.root = root

    def acquire(self, timeout: float) -> None:
        self.events.append(f"acquire {timeout}")

    def release(self) -> None:
        self.events.append("release")


class ConfiguredLock(RecordingLock):
    @classmethod
    def from_table(cls, root: os.PathLike[str], properties: dict[str, str]) -> ConfiguredLock:
        lock = cls(root)
        lock.events.append(f"configured {properties.get('x')}")
        return lock


def test_custom_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, tmp_path / "site", "locks-for-tests", {LOCKS: {
        "recording": f"{__name__}:RecordingLock", "configured": f"{__name__}:ConfiguredLock"}})
    table = tmp_path / "table"  # the distribution is outside the table's folder
    RecordingLock.events.clear()
    lock = lock_for_table(table, {LOCK_PROVIDER_PROPERTY: "recording"})
    assert isinstance(lock, RecordingLock)
    with locked(lock, 3):
        pass
    assert RecordingLock.events == ["acquire 3", "release"]
    RecordingLock.events.clear()
    lock = lock_for_table(table, {LOCK_PROVIDER_PROPERTY: "Configured", "x": "y"})
    assert isinstance(lock, ConfiguredLock)
    assert RecordingLock.events == ["configured y"]
    with pytest.raises(UnknownPluginError):  # a distribution inside the table's folder
        lock_for_table(tmp_path, {LOCK_PROVIDER_PROPERTY: "recording"})


@pytest.mark.parametrize(
    "name", ["nosuchprovider", "no_such_module_xyz:Lock", f"{__name__}:RecordingLock",
             f"{__name__}.RecordingLock", "os:sep"]
)
def test_bad_provider_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(UnknownPluginError) as info:
        lock_for_table(tmp_path, {LOCK_PROVIDER_PROPERTY: name})
    assert info.value.property == LOCK_PROVIDER_PROPERTY and info.value.value == name
    assert "file" in info.value.known and "noop" in info.value.known
    assert f"{LOCK_PROVIDER_PROPERTY}={name!r}" in str(info.value)


def test_a_registered_provider_that_cannot_load(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, tmp_path / "site", "broken-locks", {LOCKS: {
        "gone": "no_such_module_xyz:Lock", "missing": f"{__name__}:Missing"}})
    for name in ("gone", "missing"):
        with pytest.raises(EvoError, match=f"Cannot load lock provider '{name}'"):
            lock_for_table(tmp_path / "table", {LOCK_PROVIDER_PROPERTY: name})
