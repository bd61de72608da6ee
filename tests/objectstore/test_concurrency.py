"""Four processes commit DDL and property changes to one table in a bucket at once: the lease
lock (conditional create) lets one commit at a time; every change lands exactly once."""

from __future__ import annotations

import multiprocessing
import time

import evonb
from evonb.errors import ConflictError
from evonb.table.check import check_table
from tests.objectstore.conftest import keys

WRITERS = 4
EACH = 2


def _writer(where: str, n: int) -> None:
    """Add EACH columns and set EACH properties, retrying after a conflict."""
    t = evonb.open_table(where)
    for i in range(EACH):
        for change in (lambda i=i: t.alter(f"ALTER TABLE t ADD COLUMN w{n}_{i} int"),
                       lambda i=i: t.set_properties({f"writer.{n}.{i}": str(i)})):
            while True:
                try:
                    change()
                    break
                except ConflictError:  # the loser of a race retries
                    time.sleep(0.05)


def run_writers(where: str) -> None:
    """Create the table at ``where``, run the WRITERS processes at once, and check that every
    change landed exactly once and ``check`` is clean."""
    evonb.create_table(where, "id bigint not null", primary_key="id")
    with multiprocessing.get_context("spawn").Pool(WRITERS) as pool:
        pool.starmap(_writer, [(where, n) for n in range(WRITERS)], chunksize=1)
    t = evonb.open_table(where)
    history = t.history()
    instants = [c.instant for c in history]
    assert len(instants) == len(set(instants)) == 1 + WRITERS * EACH
    assert sorted(c.operation for c in history)[:-1] == ["alter"] * (WRITERS * EACH)
    expected = sorted(f"w{n}_{i}" for n in range(WRITERS) for i in range(EACH))
    assert sorted(t.schema.column_names[1:]) == expected
    assert {k: v for k, v in t.properties.items() if k.startswith("writer.")} == {
        f"writer.{n}.{i}": str(i) for n in range(WRITERS) for i in range(EACH)}
    report = check_table(where)
    assert report.ok, report.problems


def assert_released_and_complete(stored: list[str]) -> None:
    """The names under ``t/.evo/``: no lease left, no attempt without its completed file."""
    assert "t/.evo/lock.lease" not in stored  # every writer released its lease
    assert not [k for k in stored if k.endswith((".requested", ".inflight"))
                and k.removesuffix(".requested").removesuffix(".inflight") not in stored]


def test_four_processes_commit_ddl_and_properties_at_once(bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    run_writers(f"s3://{bucket}/t")
    assert_released_and_complete(keys(s3_client, bucket, "t/.evo/"))
