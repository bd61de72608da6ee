"""Iceberg metadata published for tables in a bucket (moto's S3 server) and in an Azure container
(Azurite), read by pyiceberg, an independent reader, at every published commit.

Every location the metadata holds (the table's, the metadata log's, the manifest lists', the
manifests', the data files') is a URI Iceberg's readers open: ``s3://bucket/key`` or
``abfss://container@account.dfs.core.windows.net/path``. Earlier, they were evonb's internal
spelling (``s3:/bucket/key``), which no reader could open; a table published that way is
published anew by the next sync."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

import evonb
from bench.azurite import ACCOUNT, KEY
from evonb.iceberg import sync
from evonb.table.check import check_table
from evonb.table.fileio import file_io
from evonb.table.fsutil import table_path
from tests.objectstore.conftest import S3Server, abfss

pytestmark = pytest.mark.spark

SYNC_MODULE = importlib.import_module("evonb.iceberg.sync")  # evonb.iceberg.sync is the function


def _history(spark: Any, where: str) -> Any:
    """A partitioned table with writes, a rename, a drop and a re-add, and a widening, its
    Iceberg metadata published after every commit."""
    t = evonb.create_table(where, "id bigint not null, day int, name string, score float, n int",
                           primary_key="id", partition_by="day",
                           properties={"evonb.iceberg.enabled": "true"})
    t.write(spark.sql("select id, cast(id % 2 as int) day, concat('n', id) name, "
                      "cast(id / 2 as float) score, cast(id * 10 as int) n from range(6)"))
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    t.alter("ALTER TABLE t DROP COLUMN score")
    t.alter("ALTER TABLE t ADD COLUMN score string")  # never the dropped values
    t.alter("ALTER TABLE t ALTER COLUMN n TYPE bigint")
    t.write(spark.sql("select 2L id, 0 day, 'two' label, 's' score, 7L n"), mode="upsert")
    return t


def _locations(t: Any, metadata_file: str) -> list[str]:
    """The locations the published ``metadata_file`` holds: the table's, the earlier metadata
    files' and the snapshots' manifest lists (the manifests and data files are met by
    :func:`_same_as_evonb`)."""
    body = json.loads(file_io().read(table_path(metadata_file)))
    return [body["location"], *(m["metadata-file"] for m in body["metadata-log"]),
            *(s["manifest-list"] for s in body["snapshots"])]


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def _same_as_evonb(t: Any, metadata_file: str, properties: dict[str, str], prefix: str) -> int:
    """pyiceberg reads every published snapshot as evonb reads its commit; every location it
    met starts with ``prefix``. Returns the snapshots compared."""
    ice = StaticTable.from_metadata(metadata_file, properties=properties)
    assert ice.metadata.location == prefix
    compared = 0
    by_id = {int(c.instant): c.instant for c in t.history()}
    for snap in ice.metadata.snapshots:
        assert snap.manifest_list.startswith(prefix + "/metadata/")
        for manifest in snap.manifests(ice.io):
            assert manifest.manifest_path.startswith(prefix + "/metadata/")
        scan = ice.scan(snapshot_id=snap.snapshot_id)
        for task in scan.plan_files():
            assert task.file.file_path.startswith(prefix + "/")
        got = scan.to_arrow()
        expected = t.to_arrow(as_of=by_id[snap.snapshot_id])
        assert got.column_names == expected.column_names
        assert _rows(got) == _rows(expected)
        compared += 1
    latest = ice.scan().to_arrow()
    assert latest.column_names == ["id", "day", "label", "n", "score"]
    assert _rows(latest) == _rows(t.to_arrow())
    assert [r["score"] for r in _rows(latest)] == [None, None, "s", None, None, None]
    assert [r["n"] for r in _rows(latest)] == [0, 10, 7, 30, 40, 50]
    return compared


def _s3_properties(server: S3Server) -> dict[str, str]:
    return {"s3.endpoint": server.endpoint, "s3.region": "us-east-1",
            "s3.access-key-id": "testing", "s3.secret-access-key": "testing"}


def test_pyiceberg_reads_a_table_in_a_bucket(spark: Any, bucket: str, s3_env: S3Server) -> None:
    t = _history(spark, f"s3://{bucket}/lake/t")
    result = sync(t)  # already published after every commit: nothing new
    assert not result.written
    prefix = f"s3://{bucket}/lake/t"
    assert result.metadata_file == f"{prefix}/metadata/v{result.version}.metadata.json"
    assert all(loc.startswith(prefix) for loc in _locations(t, result.metadata_file))
    assert t.iceberg_status().metadata_file == result.metadata_file
    report = check_table(prefix)  # the report names the table as the user does
    assert report.ok and report.table == prefix
    compared = _same_as_evonb(t, result.metadata_file, _s3_properties(s3_env), prefix)
    assert compared == len(result.snapshots) == 2  # the two writes; DDL adds schemas only


def test_metadata_named_the_old_way_is_published_anew(
        spark: Any, bucket: str, s3_env: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Metadata written with the internal spelling (as earlier releases did) is replaced by the
    next sync: no manifest list of it is kept."""
    where = f"s3://{bucket}/t"
    t = evonb.create_table(where, "id bigint not null, name string", primary_key="id")
    t.write(spark.sql("select id, concat('n', id) name from range(4)"))
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    with monkeypatch.context() as m:
        m.setattr(SYNC_MODULE, "iceberg_location", str)
        old = sync(t)
    assert old.metadata_file == f"s3:/{bucket}/t/metadata/v1.metadata.json"
    assert all(loc.startswith(f"s3:/{bucket}/t") for loc in _locations(t, old.metadata_file))
    new = sync(t)
    assert new.written and new.version == 2
    body = json.loads(file_io().read(table_path(new.metadata_file)))
    assert [s["manifest-list"] for s in body["snapshots"]] != [
        s["manifest-list"] for s in json.loads(file_io().read(table_path(old.metadata_file)))[
            "snapshots"]]
    assert all(loc.startswith(f"s3://{bucket}/t") for loc in _locations(t, new.metadata_file)
               if "v1.metadata" not in loc)
    ice = StaticTable.from_metadata(new.metadata_file, properties=_s3_properties(s3_env))
    assert _rows(ice.scan().to_arrow()) == [
        {"id": i, "label": f"n{i}"} for i in range(4)]


def test_pyiceberg_reads_a_table_in_an_azure_container(spark: Any, container: Any,
                                                       azure_env: Any) -> None:
    """pyiceberg opens ``abfss://`` locations with adlfs (its fsspec file system for Azure)."""
    t = _history(spark, abfss(container.container_name, "lake/t"))
    result = sync(t)
    prefix = abfss(container.container_name, "lake/t")
    assert result.metadata_file.startswith(prefix + "/metadata/v")
    assert all(loc.startswith(prefix) for loc in _locations(t, result.metadata_file))
    props = {"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
             "adls.connection-string": azure_env.connection_string(),
             "adls.account-name": ACCOUNT, "adls.account-key": KEY}
    assert _same_as_evonb(t, result.metadata_file, props, prefix) == 2
