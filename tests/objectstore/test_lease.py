"""The lease lock of tables in object storage: one holder at a time, a stale lease is broken
once, and a holder whose lease was broken cannot commit."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evonb.errors import ConflictError
from evonb.table.fileio import file_io
from evonb.table.lock import LeaseLock, lock_for_table
from tests.objectstore.conftest import keys


def test_default_lock_of_a_bucket_table_is_a_lease(bucket: str, tmp_path: Path) -> None:
    assert isinstance(lock_for_table(f"s3://{bucket}/t"), LeaseLock)
    assert not isinstance(lock_for_table(tmp_path), LeaseLock)


def test_one_holder_at_a_time(bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    path = f"s3:/{bucket}/t/.evo/lock.lease"
    a, b = LeaseLock(path), LeaseLock(path)
    a.acquire(1)
    with pytest.raises(ConflictError, match="locked by another writer"):
        b.acquire(0.2)
    a.verify()
    a.release()
    b.acquire(1)
    assert keys(s3_client, bucket) == ["t/.evo/lock.lease"]
    b.release()
    assert keys(s3_client, bucket) == []


def test_a_stale_lease_is_broken_and_its_holder_cannot_commit(bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    path = f"s3:/{bucket}/t/.evo/lock.lease"
    stalled = LeaseLock(path, seconds=0.2)
    stalled.acquire(1)
    body = json.loads(file_io().read(path))
    assert body["pid"] > 0 and body["expires"] > 0
    time.sleep(0.3)  # past its expiry
    other = LeaseLock(path)
    other.acquire(2)  # breaks the stale lease
    with pytest.raises(ConflictError, match="expired and was taken"):
        stalled.verify()
    stalled.release()  # not its lease any more: leaves the other's alone
    other.verify()
    assert f"t/.evo/lock.lease.broken-{body['token']}" in keys(s3_client, bucket)
    other.release()
    assert "t/.evo/lock.lease" not in keys(s3_client, bucket)
