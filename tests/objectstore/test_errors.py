"""Failures of the store give clear evonb errors and leave the table as it was: refused
credentials, a missing bucket, the server going away in the middle of a commit."""

from __future__ import annotations

import moto.settings
import pytest

import evonb
from evonb.errors import EvoError
from evonb.table.check import check_table
from evonb.table.fileio import object_store_io
from evonb.table.fileio_s3 import ObjectStoreError
from tests.objectstore.conftest import keys


def test_refused_credentials(bucket: str, s3_client, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    where = f"s3://{bucket}/t"
    evonb.create_table(where, "id bigint")
    before = keys(s3_client, bucket)
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # keys are checked
    object_store_io.cache_clear()
    with pytest.raises(ObjectStoreError, match="refused the credentials") as refused:
        evonb.open_table(where).alter("ALTER TABLE t ADD COLUMN x int")
    assert "AWS_ACCESS_KEY_ID" in (refused.value.hint or "")
    assert refused.value.location == where + "/.evo/table.json"
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", float("inf"))
    assert keys(s3_client, bucket) == before
    assert evonb.open_table(where).schema.column_names == ["id"]


def test_missing_bucket(s3_env) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ObjectStoreError, match="bucket 'no-such-bucket' does not exist"):
        evonb.create_table("s3://no-such-bucket/t", "id bigint")
    with pytest.raises(EvoError, match="no-such-bucket"):
        evonb.open_table("s3a://no-such-bucket/t")


def test_server_down_in_the_middle_of_a_commit(bucket: str, s3_client, s3_env) -> None:  # type: ignore[no-untyped-def]
    where = f"s3://{bucket}/t"
    evonb.create_table(where, "id bigint", properties={"evonb.lock.lease": "1"})
    t = evonb.open_table(where)
    committed = [c.instant for c in t.history()]

    def stop(params, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if params.get("Key", "").endswith(".schema.json"):
            s3_env.stop()

    client = object_store_io()._client
    client.meta.events.register("before-parameter-build.s3.PutObject", stop)
    try:
        with pytest.raises(ObjectStoreError, match="unreachable") as down:
            t.alter("ALTER TABLE t ADD COLUMN x int")
    finally:
        client.meta.events.unregister("before-parameter-build.s3.PutObject", stop)
        s3_env.start()
    assert s3_env.endpoint.split("//")[1] in str(down.value)
    again = evonb.open_table(where)
    assert again.schema.column_names == ["id"]
    assert [c.instant for c in again.history()] == committed
    report = check_table(where)
    assert report.ok, report.problems
    # The lease of the failed commit could not be released: the next writer breaks it once it
    # expires (evonb.lock.lease seconds), then commits.
    assert "t/.evo/lock.lease" in keys(s3_client, bucket)
    again.alter("ALTER TABLE t ADD COLUMN x int")
    assert evonb.open_table(where).schema.column_names == ["id", "x"]
    assert check_table(where).ok
