"""The lock of a table in a bucket is a provider resolved by name like any other: the built-in
lease, ``flock`` refused there by name, and a third provider an installed package registers in
``evonb.lock_providers`` serializing the commits of a table in a bucket."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest

import evonb
from evonb.errors import EvoError
from evonb.table.check import check_table
from evonb.table.fsutil import evo_dir
from evonb.table.lock import LOCK_PROVIDER_PROPERTY, LeaseLock, lock_for_table
from tests.objectstore.conftest import keys
from tests.plugins import LOCKS, install


class MarkerLease(LeaseLock):
    """A provider of its own: a lease on another object, recording what it is asked to do."""

    events: ClassVar[list[str]] = []

    @classmethod
    def from_table(cls, root: os.PathLike[str],
                   properties: Mapping[str, str] | None = None) -> MarkerLease:
        return cls(evo_dir(root) / "marker.lease", 30.0)

    def acquire(self, timeout: float = 60.0) -> None:
        super().acquire(timeout)
        self.events.append("acquire")

    def verify(self) -> None:
        super().verify()
        self.events.append("verify")

    def release(self) -> None:
        self.events.append("release")
        super().release()


def test_built_in_providers_by_name_in_a_bucket(bucket: str) -> None:
    root = Path(f"s3://{bucket}/t")
    assert isinstance(lock_for_table(root), LeaseLock)
    assert isinstance(lock_for_table(root, {LOCK_PROVIDER_PROPERTY: "lease"}), LeaseLock)
    with pytest.raises(EvoError, match="'flock' cannot lock") as refused:
        lock_for_table(root, {LOCK_PROVIDER_PROPERTY: "flock"})
    assert "lease" in (refused.value.hint or "")


def test_flock_by_name_on_local_disk(tmp_path: Path) -> None:
    t = evonb.create_table(str(tmp_path / "t"), "id bigint",
                           properties={LOCK_PROVIDER_PROPERTY: "flock"})
    t.alter("ALTER TABLE t ADD COLUMN x int")
    assert evonb.open_table(str(tmp_path / "t")).schema.column_names == ["id", "x"]
    assert (tmp_path / "t" / ".evo" / "lock").exists()


def test_a_registered_provider_serializes_commits_in_a_bucket(
        bucket: str, s3_client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    install(monkeypatch, tmp_path / "site", "marker-lock", {LOCKS: {
        "marker": f"{__name__}:MarkerLease"}})
    where = f"s3://{bucket}/t"
    t = evonb.create_table(where, "id bigint", properties={LOCK_PROVIDER_PROPERTY: "marker"})
    MarkerLease.events.clear()
    t.alter("ALTER TABLE t ADD COLUMN x int")
    t.alter("ALTER TABLE t ADD COLUMN y int")
    # each commit holds the lock, and checks its hold right before its commit point
    assert MarkerLease.events == ["acquire", "verify", "release"] * 2
    assert evonb.open_table(where).schema.column_names == ["id", "x", "y"]
    stored = keys(s3_client, bucket, "t/.evo/")
    assert not any(k.endswith(("marker.lease", "lock.lease")) for k in stored)  # released
    assert check_table(where).ok
