"""The ``object_storage`` benchmark group: a DDL commit on a table in a bucket of a loopback S3
server (moto's server mode) against the same DDL on local disk, and the S3 requests each
metadata operation makes.

The ratio shows what the store's round trips cost per commit (loopback: no network latency,
so real stores add their request latency times the counts reported). The request counts are
the portable figure: they do not depend on the server. No bar: it is a report.
``python -m bench.object_storage`` prints the same without the suite's runner.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count
from typing import TYPE_CHECKING, Any

from bench.harness import Case, Result, Side, skipped

if TYPE_CHECKING:  # pragma: no cover
    from bench.suite import Context

MISSING = "boto3 or moto[server] not installed (pip install 'evonb[bench]')"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def s3_server() -> Iterator[str]:
    """A moto S3 server on loopback, with the standard AWS variables pointing at it; yields a
    fresh bucket's name."""
    import boto3
    from moto.server import ThreadedMotoServer

    from evonb.table.fileio import object_store_io

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
           "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    object_store_io.cache_clear()
    try:
        bucket = f"evonb-bench-{uuid.uuid4().hex[:8]}"
        boto3.client("s3").create_bucket(Bucket=bucket)
        yield bucket
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        object_store_io.cache_clear()
        server.stop()


def request_counts(operations: dict[str, Callable[[], Any]]) -> dict[str, Counter[str]]:
    """The S3 requests (by API operation) each of ``operations`` makes."""
    from evonb.table.fileio import object_store_io

    events = object_store_io()._client.meta.events  # type: ignore[attr-defined]
    seen: Counter[str] = Counter()

    def note(model: Any, **_: Any) -> None:
        seen[model.name] += 1

    events.register("before-call.s3", note)
    out = {}
    try:
        for name, op in operations.items():
            seen.clear()
            op()
            out[name] = Counter(seen)
    finally:
        events.unregister("before-call.s3", note)
    return out


def _operations(where: str, n: Iterator[int]) -> dict[str, Callable[[], Any]]:
    import evonb
    from evonb.table.check import check_table

    return {
        "open_table": lambda: evonb.open_table(where),
        "alter (ADD COLUMN)": lambda: evonb.open_table(where).alter(
            f"ALTER TABLE t ADD COLUMN r{next(n)} int"),
        "set_properties": lambda: evonb.open_table(where).set_properties({"k": str(next(n))}),
        "history": lambda: evonb.open_table(where).history(),
        "check": lambda: check_table(where),
    }


def _format(counts: dict[str, Counter[str]]) -> list[str]:
    return [f"{name}: {sum(c.values())} requests ("
            + ", ".join(f"{op} {k}" for op, k in sorted(c.items())) + ")"
            for name, c in counts.items()]


def object_storage(ctx: Context) -> Iterator[Case | Result]:
    """DDL commit latency in a bucket on loopback S3 vs on local disk; requests per operation."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        yield skipped("object_storage", "object_storage.ddl_commit", MISSING)
        return
    import evonb

    with s3_server() as bucket:
        where = f"s3://{bucket}/t"
        remote = evonb.create_table(where, "id bigint not null", primary_key="id")
        local = evonb.create_table(ctx.path("object_storage_local"), "id bigint not null",
                                   primary_key="id")
        n = count()
        counts = request_counts(_operations(where, n))
        ctx.log("\n".join(_format(counts)))
        yield Case(
            "object_storage.ddl_commit",
            evonb=Side("ALTER ADD COLUMN, table in a bucket (loopback S3)",
                       lambda: remote.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")),
            baseline=Side("ALTER ADD COLUMN, table on local disk",
                          lambda: local.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")),
            notes=_format(counts), same_calls=True,
            bar_text="report (no bar): loopback S3 has no network latency",
        )


def run(*, repeat: int = 5, out: Callable[[str], None] = print) -> dict[str, Any]:
    """Standalone: the median DDL commit time in a bucket and on local disk, their ratio, and
    the requests per operation."""
    import statistics
    import tempfile
    import time

    import evonb

    with s3_server() as bucket, tempfile.TemporaryDirectory() as tmp:
        where = f"s3://{bucket}/t"
        remote = evonb.create_table(where, "id bigint not null", primary_key="id")
        local = evonb.create_table(f"{tmp}/t", "id bigint not null", primary_key="id")
        n = count()
        times: dict[str, list[float]] = {"s3": [], "local": []}
        for _ in range(repeat):
            for side, t in (("s3", remote), ("local", local)):
                start = time.perf_counter()
                t.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")
                times[side].append(time.perf_counter() - start)
        medians = {k: statistics.median(v) for k, v in times.items()}
        counts = request_counts(_operations(where, n))
    out(f"DDL commit: loopback S3 {medians['s3'] * 1000:.1f} ms, local disk "
        f"{medians['local'] * 1000:.1f} ms, ratio {medians['s3'] / medians['local']:.2f}x")
    for line in _format(counts):
        out(f"  {line}")
    return {"median_s": medians, "requests": {k: dict(v) for k, v in counts.items()}}


if __name__ == "__main__":
    run()
