"""Tables in Azure storage, on Azurite (Microsoft's emulator of the Blob service) on loopback:
the same results as on local disk, the conditional create enforced by the server, convert and the
JVM-free reader, four processes committing at once, and clear errors that leave the table as
it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ResourceExistsError

import evonb
from bench.azurite import ACCOUNT, Azurite
from evonb.errors import EvoError
from evonb.table.check import check_table
from evonb.table.fileio import file_io, object_store_io
from evonb.table.fileio_azure import AzureFileIO
from evonb.table.fileio_base import ObjectStoreError
from evonb.table.timeline import CHECKPOINT_PROPERTY
from tests.objectstore.conftest import abfss, blob_names
from tests.objectstore.test_checkpoints import _view
from tests.objectstore.test_concurrency import assert_released_and_complete, run_writers
from tests.objectstore.test_convert import PARTS, convert_evolve_and_read, parquet_bytes
from tests.objectstore.test_metadata import DDL, _story, exercise_file_io


def test_alter_history_diff_check_and_clean_plan_match_local_disk(
        container: Any, tmp_path: Path) -> None:
    name = container.container_name
    local = _story(str(tmp_path / "t"))
    remote = _story(abfss(name, "warehouse/t"))
    assert remote == local
    assert local["operations"][0] == "create" and len(local["operations"]) == len(DDL) + 1
    stored = blob_names(container)
    assert "warehouse/t/.evo/table.json" in stored
    assert not any(k.endswith(".tmp") or "lock" in k for k in stored)  # the lease is released
    # az:// (the account from the configuration) names the same table
    t = evonb.open_table(f"az://{name}/warehouse/t")
    assert str(t.root) == f"az:/{name}@{ACCOUNT}/warehouse/t"
    assert t.to_arrow().schema.names == ["country", "id", "age", "info", "full_name"]
    assert [c.instant for c in t.history()] == [
        c.instant for c in evonb.open_table(abfss(name, "warehouse/t")).history()]


def test_conditional_create_is_enforced_by_the_server(container: Any) -> None:
    """The commit protocol relies on it: the server must refuse a second create."""
    container.upload_blob("x", b"1", overwrite=False)
    with pytest.raises(ResourceExistsError, match="BlobAlreadyExists"):
        container.upload_blob("x", b"2", overwrite=False)  # the test fails if it is accepted
    assert container.download_blob("x").readall() == b"1"
    io = file_io()
    where = Path(f"az:/{container.container_name}@{ACCOUNT}/y")
    io.write_if_absent(where, b"first")
    with pytest.raises(FileExistsError):
        io.write_if_absent(where, b"second")
    assert io.read(where) == b"first"


def test_file_io_operations(container: Any) -> None:
    assert isinstance(object_store_io("az"), AzureFileIO)
    exercise_file_io(Path(f"az:/{container.container_name}@{ACCOUNT}/d"))
    assert blob_names(container) == []


def test_convert_rename_drop_and_read_with_arrow(container: Any) -> None:
    name = container.container_name
    for i, part in enumerate(PARTS):
        container.upload_blob(f"events/part-{i}.parquet", parquet_bytes(part))
    uploaded = blob_names(container)
    assert uploaded == ["events/part-0.parquet", "events/part-1.parquet"]
    convert_evolve_and_read(abfss(name, "events"), f"az://{name}/events")
    # the data files are the user's, read in place: none was rewritten
    assert [k for k in blob_names(container) if not k.startswith("events/.evo/")] == uploaded


def test_four_processes_commit_ddl_and_properties_at_once(container: Any) -> None:
    run_writers(abfss(container.container_name, "t"))
    assert_released_and_complete(blob_names(container, "t/.evo/"))


def test_refused_credentials(container: Any, azurite: Azurite,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    where = abfss(container.container_name, "t")
    evonb.create_table(where, "id bigint")
    before = blob_names(container)
    wrong = "d3Jvbmcta2V5LW9mLXRoZS1yaWdodC1sZW5ndGgtZm9yLWF6dXJlLXNoYXJlZC1rZXk="
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string(wrong))
    object_store_io.cache_clear()
    with pytest.raises(ObjectStoreError, match="refused the credentials") as refused:
        evonb.open_table(where).alter("ALTER TABLE t ADD COLUMN x int")
    assert "AZURE_STORAGE_CONNECTION_STRING" in (refused.value.hint or "")
    assert refused.value.location.endswith("/t/.evo/table.json")
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string())
    object_store_io.cache_clear()
    assert blob_names(container) == before
    assert evonb.open_table(where).schema.column_names == ["id"]


def test_missing_container_and_incomplete_locations(azure_env: Azurite) -> None:
    with pytest.raises(ObjectStoreError, match="container 'no-such-container' does not exist"):
        evonb.create_table(abfss("no-such-container", "t"), "id bigint")
    with pytest.raises(EvoError, match="no-such-container"):
        evonb.open_table("az://no-such-container/t")
    with pytest.raises(EvoError, match="names no storage account") as no_account:
        evonb.create_table("abfss://c1/t", "id bigint")
    assert "abfss://<container>@<account>" in (no_account.value.hint or "")
    with pytest.raises(EvoError, match="names no container"):
        evonb.create_table(f"abfss://@{ACCOUNT}.dfs.core.windows.net/t", "id bigint")


def test_server_down_in_the_middle_of_a_commit(container: Any, azurite: Azurite,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    where = abfss(container.container_name, "t")
    evonb.create_table(where, "id bigint", properties={"evonb.lock.lease": "1"})
    t = evonb.open_table(where)
    committed = [c.instant for c in t.history()]
    writes = {m: getattr(AzureFileIO, m) for m in ("write", "write_if_absent")}

    def stopping(method: str) -> Any:
        def write(self: AzureFileIO, path: Any, data: bytes) -> None:
            if str(path).endswith(".schema.json"):
                azurite.stop()  # the server goes away for real, before this write reaches it
            writes[method](self, path, data)
        return write

    for method in writes:
        monkeypatch.setattr(AzureFileIO, method, stopping(method))
    try:
        with pytest.raises(ObjectStoreError, match="unreachable") as down:
            t.alter("ALTER TABLE t ADD COLUMN x int")
    finally:
        for method, original in writes.items():
            monkeypatch.setattr(AzureFileIO, method, original)
        azurite.start()
    assert f"127.0.0.1:{azurite.port}" in str(down.value)
    again = evonb.open_table(where)
    assert again.schema.column_names == ["id"]
    assert [c.instant for c in again.history()] == committed
    report = check_table(where)
    assert report.ok, report.problems
    # The lease of the failed commit could not be released: the next writer breaks it once it
    # expires (evonb.lock.lease seconds), then commits.
    assert "t/.evo/lock.lease" in blob_names(container)
    again.alter("ALTER TABLE t ADD COLUMN x int")
    assert evonb.open_table(where).schema.column_names == ["id", "x"]
    assert check_table(where).ok


def test_spark_reads_an_azure_table_and_its_jvm_session_is_refused_by_name(
        spark, container: Any) -> None:  # type: ignore[no-untyped-def]
    t = evonb.create_table(abfss(container.container_name, "t"), "id bigint")
    assert t.read().columns == ["id"] and t.read().count() == 0
    with pytest.raises(EvoError, match="run this on the table in object storage at az://"
                       ) as refused:
        t.spark  # noqa: B018  (the session of JVM-side work, which needs a connector)
    assert "to_arrow" in (refused.value.hint or "")
    from evonb.table.fsutil import location_uri

    assert location_uri(t.root, spark=True) == abfss(container.container_name, "t")


def test_timeline_checkpoints_bound_the_reads_of_an_open(
        container: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blob version tokens are content MD5s, so checkpoints work as on S3: a fresh open of a
    31-commit table reads a few blobs, not one per commit, and reads the same without them."""
    where = abfss(container.container_name, "t")
    t = evonb.create_table(where, "id bigint not null, v string", primary_key="id",
                           properties={CHECKPOINT_PROPERTY: "5"})
    for i in range(30):
        t.alter(f"ALTER TABLE t ADD COLUMN c{i} int")
    checkpoints = blob_names(container, "t/.evo/timeline/checkpoints/")
    assert len(checkpoints) == 2  # the latest and the one before it are kept
    reads: list[str] = []
    read = AzureFileIO.read

    def counted(self: AzureFileIO, path: Any) -> bytes:
        reads.append(str(path))
        return read(self, path)

    monkeypatch.setattr(AzureFileIO, "read", counted)

    def cold_open() -> tuple[dict[str, object], int]:
        object_store_io.cache_clear()  # a new process: nothing read yet
        reads.clear()
        seen = _view(where)
        return seen, len(reads)

    with_them, few = cold_open()
    for name in checkpoints:
        container.delete_blob(name)
    without, many = cold_open()
    assert without == with_them
    assert len(with_them["history"]) == 31  # type: ignore[arg-type]
    print(f"blob reads of a cold open: {few} with checkpoints, {many} without")
    assert few < 12 and many >= 31, (few, many)
    assert check_table(where).ok


def test_a_bad_retry_setting_is_named(container: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVONB_AZURE_MAX_RETRIES", "three")
    object_store_io.cache_clear()
    with pytest.raises(EvoError, match="EVONB_AZURE_MAX_RETRIES='three'") as refused:
        evonb.create_table(abfss(container.container_name, "t"), "id bigint")
    assert "whole number" in (refused.value.hint or "")
    assert blob_names(container) == []
