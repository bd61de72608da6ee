"""Log blocks of a small merge-on-read delta, written by the driver into a bucket: stored by
``evonb.mor.driver_lookup.uploads`` threads at once (their requests overlap), the same table
as when stored one after another; a block that cannot be stored fails the write and leaves no
block of it behind."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

import evonb
from evonb.errors import EvoError
from evonb.table.check import check_table
from evonb.table.fileio import object_store_io
from tests.objectstore.conftest import keys

pytestmark = pytest.mark.spark

GROUPS = 12


def _table(spark: Any, where: str, uploads: int) -> Any:
    """A merge-on-read table of ``GROUPS`` file groups (one base file per task)."""
    t = evonb.create_table(where, "id bigint not null, ts bigint, v string", primary_key="id",
                           precombine="ts", table_type="mor", properties={
                               "evonb.write.target.file.bytes": "0",
                               "evonb.mor.driver_lookup.uploads": str(uploads)})
    t.write(spark.range(0, GROUPS * 100, 1, GROUPS).selectExpr(
        "id", "1L ts", "concat('v', id) v"))
    assert len(t.snapshot().files) == GROUPS
    return t


def _upsert(spark: Any) -> Any:
    """Keys in every file group, one new key."""
    return spark.sql(f"select id * 100 + 7 id, 2L ts, 'new' v from range({GROUPS}) "
                     "union all select 99999L, 2L, 'fresh'")


class _Puts:
    """The threads that store log blocks (boto3's own event hook on evonb's client)."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        if "/.evo/" not in params.get("Key", "") and ".log." in params.get("Key", ""):
            with self.lock:
                self.threads.append(threading.current_thread().name)


def _rows(t: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in t.read().collect())


def test_blocks_stored_at_once_make_the_same_table(spark: Any, bucket: str, s3_client: Any
                                                   ) -> None:
    events = object_store_io()._client.meta.events
    tables = {}
    for uploads in (1, 8):
        t = _table(spark, f"s3://{bucket}/u{uploads}", uploads)
        puts = _Puts()
        events.register("before-parameter-build.s3.PutObject", puts)
        try:
            t.write(_upsert(spark), mode="upsert")
        finally:
            events.unregister("before-parameter-build.s3.PutObject", puts)
        last = t.timeline.last_completed()
        assert (last.metadata.get("key_lookup") or {}).get("driver")  # the driver wrote them
        blocks = [f for f in t.snapshot().logs if f.instant == last.instant]
        assert len(blocks) == GROUPS == len(puts.threads)
        assert {f"u{uploads}/{f.path}" for f in blocks} <= set(keys(s3_client, bucket))
        if uploads == 1:
            assert set(puts.threads) == {threading.current_thread().name}
        else:
            assert all(name.startswith("evonb-block") for name in puts.threads)
        assert check_table(f"s3://{bucket}/u{uploads}").ok
        tables[uploads] = t
    expected = sorted([(i, 1, f"v{i}") for i in range(GROUPS * 100) if i % 100 != 7]
                      + [(g * 100 + 7, 2, "new") for g in range(GROUPS)] + [(99999, 2, "fresh")])
    assert _rows(tables[1]) == _rows(tables[8]) == expected
    assert tables[8].to_arrow().num_rows == len(expected)


def test_a_block_that_cannot_be_stored_fails_the_write_and_leaves_none(
        spark: Any, bucket: str, s3_client: Any) -> None:
    where = f"s3://{bucket}/t"
    t = _table(spark, where, 8)
    before = sorted(keys(s3_client, bucket))
    committed = [c.instant for c in t.history()]
    seen = []

    def fail_third(params: dict[str, Any], **_: Any) -> None:
        if ".log." in params.get("Key", ""):
            seen.append(params["Key"])
            if len(seen) == 3:
                raise EndpointConnectionError(endpoint_url="http://the-store")

    events = object_store_io()._client.meta.events
    events.register("before-parameter-build.s3.PutObject", fail_third)
    try:
        with pytest.raises(EvoError, match=r"Cannot write s3://.*\.log\..*unreachable"):
            t.write(_upsert(spark), mode="upsert")
    finally:
        events.unregister("before-parameter-build.s3.PutObject", fail_third)
    assert len(seen) >= 3
    again = evonb.open_table(where)
    assert [c.instant for c in again.history()] == committed
    left = [k for k in keys(s3_client, bucket) if k not in before and "/.evo/" not in k]
    assert left == []  # every block stored before or beside the failed one is removed
    assert check_table(where).ok
    again.write(_upsert(spark), mode="upsert")  # and the write goes through on a retry
    assert [r for r in _rows(again) if r[0] == 99999] == [(99999, 2, "fresh")]
