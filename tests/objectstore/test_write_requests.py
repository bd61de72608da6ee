"""The requests of a write into a table in a bucket, counted on evonb's S3 client: a write looks
at the table's config once (``BaseTable.config_held``: the properties in force when it
starts, inline services included), never at a schema version it has read before (written once,
never changed: ``SchemaStore.load``), and lists the timeline a bounded number of times."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import evonb
from evonb.spark.cow_driver import DEFAULT_REWRITE_INCOMING
from evonb.spark.mor_driver import DEFAULT_DRIVER_INCOMING
from evonb.spark.writes import WriteJob
from evonb.table.fileio import object_store_io

pytestmark = pytest.mark.spark


def _requests(op: Any) -> list[tuple[str, str]]:
    """``op()``'s S3 requests as (operation, key or prefix)."""
    events = object_store_io()._client.meta.events  # type: ignore[attr-defined]
    calls: list[tuple[str, str]] = []

    def note(model: Any, params: Any, **_: Any) -> None:
        calls.append((model.name, params.get("Key") or params.get("Prefix") or ""))

    events.register("before-parameter-build.s3", note)
    try:
        op()
    finally:
        events.unregister("before-parameter-build.s3", note)
    return calls


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_an_upsert_looks_at_the_config_once_and_at_no_schema_version(
        spark: Any, bucket: str, table_type: str) -> None:
    where = f"s3://{bucket}/t"
    t = evonb.create_table(where, "id bigint not null, ts bigint, v string", primary_key="id",
                           precombine="ts", table_type=table_type,
                           properties={"evonb.write.target.file.bytes": "0",
                                       # inline services read their settings too
                                       "evonb.clustering.inline.every": "50"})
    t.write(spark.range(0, 400, 1, 4).selectExpr("id", "0L ts", "concat('v', id) v"))
    t.alter("ALTER TABLE t RENAME COLUMN v TO label")
    t.write(spark.sql("select 1L id, 1L ts, 'a' label"), mode="upsert")  # reads the versions

    calls = _requests(lambda: t.write(
        spark.sql("select id * 100 + 7 id, 2L ts, 'b' label from range(4)"), mode="upsert"))
    config = [c for c in calls if c[1] == "t/.evo/table.json"]
    # before: 12 HEADs and 2 GETs of the config, 4 (cow) or 7 (mor) HEADs of schema versions
    assert config == [("HeadObject", "t/.evo/table.json")], config
    assert not [c for c in calls if c[1].startswith("t/.evo/schemas/")]
    lists = Counter(k for op, k in calls if op == "ListObjectsV2")
    # Before the instant, the write's base and its failed attempts share one listing; after
    # it, one for the plan; under the lock, one (conflict and schema checks, the completion
    # time, archiving); pending attempts are listed afresh each time they are looked for.
    assert lists["t/.evo/timeline/"] <= 7, lists  # was 9
    assert lists["t/.evo/timeline/archive/"] <= 4, lists  # was 6
    got = sorted((r["id"], r["label"]) for r in evonb.open_table(where).read().collect())
    assert got[:3] == [(0, "v0"), (1, "a"), (2, "v2")] and (307, "b") in got and len(got) == 400


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_small_upsert_in_a_bucket_takes_the_driver_path(
        spark: Any, bucket: str, table_type: str) -> None:
    """A small upsert into a table in a bucket is rewritten (copy-on-write) or looked up
    (merge-on-read) by the driver, as on local disk: its readers read the files of the
    write's own snapshot, so they list the timeline no more than Spark's path does."""
    where = f"s3://{bucket}/d{table_type}"
    t = evonb.create_table(where, "id bigint not null, v string", primary_key="id",
                           table_type=table_type)
    t.write(spark.sql("select id, 'a' v from range(10)"))
    job = WriteJob(t, spark.sql("select 3L id, 'b' v"), "upsert")  # type: ignore[arg-type]
    assert job._collect_rows() == (DEFAULT_REWRITE_INCOMING if table_type == "cow"
                                   else DEFAULT_DRIVER_INCOMING)
    calls = _requests(job.run)
    assert job.collected is not None
    assert evonb.open_table(where).timeline.last_completed().metadata["key_lookup"][
        "driver"] is True
    lists = Counter(k for op, k in calls if op == "ListObjectsV2")
    assert lists[f"d{table_type}/.evo/timeline/"] <= 7, lists
    assert sorted(r["v"] for r in evonb.open_table(where).read().collect()) == ["a"] * 9 + ["b"]
