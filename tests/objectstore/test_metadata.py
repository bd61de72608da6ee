"""A table in a bucket behaves as the same table on local disk: create, every kind of ALTER,
properties, history, schemas, diff, check and clean's planning give the same results."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import evonb
from evonb.errors import EvoError
from evonb.services.clean import plan_clean
from evonb.table.check import check_table
from evonb.table.fileio import file_io
from tests.objectstore.conftest import keys

DDL = [
    "ALTER TABLE t ADD COLUMN age int",
    "ALTER TABLE t ADD COLUMN info struct<a: int, b: string>",
    "ALTER TABLE t RENAME COLUMN name TO full_name",
    "ALTER TABLE t RENAME COLUMN info.a TO alpha",
    "ALTER TABLE t ALTER COLUMN age TYPE bigint",
    "ALTER TABLE t ADD COLUMN country string DEFAULT 'NL'",
    "ALTER TABLE t ALTER COLUMN age COMMENT 'years'",
    "ALTER TABLE t ALTER COLUMN country FIRST",
    "ALTER TABLE t ADD COLUMN info.c double",
    "ALTER TABLE t DROP COLUMN info.b",
    "ALTER TABLE t DROP COLUMN full_name",
    "ALTER TABLE t ADD COLUMN full_name string",
]


def _instants(text: str) -> str:
    """Text with instants (17 digits) and times masked: they differ between two runs."""
    text = re.sub(r"\d{17}", "<instant>", text)
    return re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?", "<time>", text)


def _story(where: str) -> dict[str, object]:
    t = evonb.create_table(where, "id bigint not null, name string", primary_key="id",
                           properties={"owner": "team-a"})
    for ddl in DDL:
        t.alter(ddl)
    t.set_properties({"owner": "team-b", "evonb.clean.retain_commits": "3"})
    t = evonb.open_table(where)
    history = t.history()
    plan = plan_clean(t.timeline.completed(), t.version_ids(), retain_commits=3,
                      keep_schema_versions=2)
    report = check_table(where)
    return {
        "schema": _instants(str(t.schema)),
        "schemas": len(t.version_ids()),
        "history": _instants(str(history)),
        "operations": [c.operation for c in history],
        "diff": _instants(str(t.diff("@1", "latest"))),
        "properties": {k: v for k, v in t.properties.items()},
        "check": (report.ok, [p.kind for p in report.problems],
                  _instants(repr(sorted(report.stats.items())))),
        "clean": (len(plan.retained), plan.files, len(plan.versions)),
    }


def test_alter_history_diff_check_and_clean_plan_match_local_disk(
        bucket: str, s3_client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    local = _story(str(tmp_path / "t"))
    remote = _story(f"s3://{bucket}/warehouse/t")
    assert remote == local
    assert local["operations"][0] == "create" and len(local["operations"]) == len(DDL) + 1
    assert local["check"][0] is True and local["clean"][2] > 0
    stored = keys(s3_client, bucket)
    assert "warehouse/t/.evo/table.json" in stored
    assert not any(k.endswith(".tmp") or "lock" in k for k in stored)  # the lease is released
    # s3a:// names the same table; the JVM-free reader sees the final schema, no rows
    t = evonb.open_table(f"s3a://{bucket}/warehouse/t")
    assert t.to_arrow().schema.names == ["country", "id", "age", "info", "full_name"]
    assert t.to_arrow().num_rows == 0


def test_conditional_create_is_enforced_by_the_server(bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """The commit protocol relies on it: the server must refuse a second create."""
    s3_client.put_object(Bucket=bucket, Key="x", Body=b"1", IfNoneMatch="*")
    with pytest.raises(s3_client.exceptions.ClientError) as refused:
        s3_client.put_object(Bucket=bucket, Key="x", Body=b"2", IfNoneMatch="*")
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed", (
        "the S3 server accepted a second conditional create: these tests prove nothing on it")
    io = file_io()
    io.write_if_absent(f"s3:/{bucket}/y", b"first")
    with pytest.raises(FileExistsError):
        io.write_if_absent(f"s3:/{bucket}/y", b"second")
    assert io.read(f"s3:/{bucket}/y") == b"first"
    assert s3_client.get_object(Bucket=bucket, Key="x")["Body"].read() == b"1"


def exercise_file_io(root: Path) -> None:
    """Every FileIO operation on an empty folder of an object store, which it leaves empty."""
    io = file_io()
    io.write(root / "a.json", b"1")
    before = io.info(root / "a.json").version
    io.write(root / "a.json", b"22")
    assert io.info(root / "a.json").version != before and io.size(root / "a.json") == 2
    io.write(root / "sub" / "b", b"b")
    assert sorted(f.name for f in io.list(root)) == ["a.json"] and io.names(root) == ["a.json"]
    assert io.folders(root) == ["sub"] and io.is_folder(root) and not io.is_folder(root / "x")
    assert [rel for rel, _ in io.walk(root)] == ["a.json", "sub/b"]
    with pytest.raises(FileNotFoundError):
        io.read(root / "missing")
    with pytest.raises(FileNotFoundError):
        io.info(root / "missing")
    io.delete(root / "missing")  # a missing file is not an error
    assert not io.exists(root / "missing") and io.exists(root / "sub" / "b")
    io.move(root / "sub" / "b", root / "c")
    assert io.read(root / "c") == b"b" and not io.exists(root / "sub" / "b")
    assert io.open_read(root / "c").read() == b"b" and io.open_data(root / "c").read() == b"b"
    io.delete_folder(root)
    assert io.list(root) == [] and not io.is_folder(root)


def test_file_io_operations(bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    exercise_file_io(Path(f"s3://{bucket}/d"))  # pathlib folds it to s3:/bucket/d
    assert keys(s3_client, bucket) == []


@pytest.mark.parametrize("where", ["gs://b/t", "hdfs://n/t", "wasbs://c@a.blob.core.windows.net/t"])
def test_other_schemes_are_refused_by_name(where: str) -> None:
    scheme = where.split(":")[0]
    with pytest.raises(EvoError, match=f"{scheme}://") as refused:
        evonb.create_table(where, "id bigint")
    assert "s3://" in (refused.value.hint or "") and "abfss://" in (refused.value.hint or "")


def test_spark_reads_and_writes_a_bucket_table_and_refuses_services_by_name(
        spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    t = evonb.create_table(f"s3://{bucket}/t", "id bigint")
    assert t.read().columns == ["id"] and t.read().count() == 0
    t.write(spark.range(3))  # evonb's Python workers write the files
    assert sorted(r.id for r in t.read().collect()) == [0, 1, 2]
    with pytest.raises(EvoError, match=f"run this on the table in object storage at "
                                       f"s3://{bucket}/t") as refused:
        t.spark  # noqa: B018  (what SQL writes and services run on)
    assert "to_arrow" in (refused.value.hint or "") and "write(df)" in (refused.value.hint or "")
    assert [c.operation for c in t.history()] == ["create", "insert"]
