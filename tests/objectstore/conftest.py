"""A real S3 protocol server on loopback (moto's server mode) for the object-storage tests:
one per test session on a free port, a fresh bucket per test."""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import boto3
import pytest
from moto.server import ThreadedMotoServer

from bench.azurite import ACCOUNT, Azurite
from evonb.table.fileio import object_store_io

T = TypeVar("T")

ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
       "AWS_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class S3Server:
    """The loopback server; :meth:`stop` and :meth:`start` again keep its buckets (moto keeps
    its state in the process)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._server: ThreadedMotoServer | None = None

    def start(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = S3Server()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """The standard AWS variables pointing at the loopback server; evonb's S3 client is made
    anew from them."""
    for k, v in {**ENV, "AWS_ENDPOINT_URL": s3_server.endpoint}.items():
        monkeypatch.setenv(k, v)
    object_store_io.cache_clear()
    yield s3_server
    object_store_io.cache_clear()


@pytest.fixture
def s3_client(s3_env: S3Server):  # type: ignore[no-untyped-def]
    return boto3.client("s3", endpoint_url=s3_env.endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture
def bucket(s3_client) -> str:  # type: ignore[no-untyped-def]
    """A fresh, empty bucket."""
    name = f"evonb-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """Azurite's Blob service on loopback, one per test session."""
    server = Azurite(tmp_path_factory.mktemp("azurite"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def azure_env(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[Azurite]:
    """``AZURE_STORAGE_CONNECTION_STRING`` pointing at the emulator (and no other Azure
    setting); evonb's Azure client is made anew from it."""
    for k in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_ACCOUNT_KEY",
              "AZURE_STORAGE_KEY", "AZURE_STORAGE_BLOB_ENDPOINT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string())
    monkeypatch.setenv("EVONB_AZURE_MAX_RETRIES", "0")
    object_store_io.cache_clear()
    yield azurite
    object_store_io.cache_clear()


@pytest.fixture
def container(azure_env: Azurite):  # type: ignore[no-untyped-def]
    """A fresh, empty container, as the SDK's ContainerClient (its name: ``.container_name``)."""
    from azure.storage.blob import BlobServiceClient

    service = BlobServiceClient.from_connection_string(azure_env.connection_string())
    return service.create_container(f"evonb-{uuid.uuid4().hex[:12]}")


def abfss(container_name: str, path: str) -> str:
    """The ``abfss://`` URI of ``path`` in the emulator's account."""
    return f"abfss://{container_name}@{ACCOUNT}.dfs.core.windows.net/{path}"


def blob_names(client, prefix: str = "") -> list[str]:  # type: ignore[no-untyped-def]
    """Every blob name in a container under ``prefix``."""
    return sorted(client.list_blob_names(name_starts_with=prefix or None))


def keys(client, bucket: str, prefix: str = "") -> list[str]:  # type: ignore[no-untyped-def]
    """Every key in ``bucket`` under ``prefix``."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for p in pages for o in p.get("Contents", ()))




def count_requests(op: Callable[[], T]) -> tuple[T, Counter[str]]:
    """``op()`` and the S3 requests evonb's client made for it, by API operation."""
    events = object_store_io()._client.meta.events  # type: ignore[attr-defined]
    seen: Counter[str] = Counter()

    def note(model: Any, **_: Any) -> None:
        seen[model.name] += 1

    events.register("before-call.s3", note)
    try:
        return op(), seen
    finally:
        events.unregister("before-call.s3", note)


_REQUEST_LINE = re.compile(r'"([A-Z]+) (/[^ ?"]*)')


class _RequestLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.requests: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = _REQUEST_LINE.search(record.getMessage())
        if found:
            self.requests.append((found.group(1), found.group(2)))


@contextlib.contextmanager
def server_requests() -> Iterator[list[tuple[str, str]]]:
    """The requests the loopback S3 server answers meanwhile, from every process (the driver,
    Spark's Python workers, pyarrow's file system), as (method, path) in the order answered:
    the server's own request log, not a client's."""
    log = logging.getLogger("werkzeug")
    handler = _RequestLog()
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield handler.requests
    finally:
        log.setLevel(level)
        log.removeHandler(handler)


__all__ = ["ENV", "S3Server", "abfss", "blob_names", "count_requests", "keys",
           "server_requests"]
