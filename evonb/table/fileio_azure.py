"""Tables in Azure Blob Storage and ADLS Gen2:
``abfss://container@account.dfs.core.windows.net/path`` (Spark's scheme; ``abfs://`` and
``...blob.core.windows.net`` hosts too) or ``az://container/path`` (the account from the
configuration).

Inside evonb such a root is kept as ``Path("az:/container@account/path")``: one spelling per
table whatever URI named it, so the account is always known. The process's FileIO
(:func:`evonb.table.fileio.file_io`) sends every path whose first part is ``az:`` to
:class:`AzureFileIO`.

:class:`AzureFileIO` does the metadata operations with ``azure-storage-blob``. Each file's
version token is the MD5 of its content, which the service keeps for a blob written in one
request (so timeline checkpoints work as on S3), else its ETag. ``write_if_absent`` is a
conditional Put Blob (``If-None-Match: *``; the service refuses it with 409 BlobAlreadyExists
when the blob exists, so of two writers exactly one wins). It works on accounts with and
without a hierarchical namespace (ADLS Gen2 accounts answer the Blob API too). Data files and
log blocks are read through ``pyarrow.fs.AzureFileSystem`` (:meth:`AzureFileIO.arrow_filesystem`).

Configuration, read when the first Azure path is used, the way Azure's own tools read it:

- ``AZURE_STORAGE_CONNECTION_STRING``: account, key and endpoint (``UseDevelopmentStorage=true``
  or a ``BlobEndpoint=`` names an emulator such as Azurite);
- else ``AZURE_STORAGE_ACCOUNT_NAME`` (or ``AZURE_STORAGE_ACCOUNT``) with
  ``AZURE_STORAGE_ACCOUNT_KEY`` (or ``AZURE_STORAGE_KEY``), ``AZURE_STORAGE_BLOB_ENDPOINT``
  optionally;
- else the account named by the location and Azure's default credential chain (a managed
  identity, the environment's service principal, the Azure CLI's login), which needs
  ``azure-identity``.

Errors of the service become :class:`~evonb.table.fileio_base.ObjectStoreError` naming the
location and the fix: a missing container, refused credentials, an unreachable endpoint. A
missing blob is :class:`FileNotFoundError`, as on a local disk.

``EVONB_AZURE_MAX_RETRIES`` bounds the retries of a failed request (default 3).

``azure-storage-blob`` is an optional dependency (``pip install 'evonb[azure]'``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar
from urllib.parse import urlparse

from evonb.errors import EvoError
from evonb.table.fileio_base import (
    FileInfo,
    ObjectStoreError,
    ObjectStoreFileIO,
    PathLike,
)

if TYPE_CHECKING:
    import pyarrow.fs as pafs

T = TypeVar("T")

AZURE_SCHEMES = ("az", "abfs", "abfss")
"""The URI schemes of Azure storage evonb accepts (``abfss`` is Spark's, over TLS)."""

_DELETE_BATCH = 256  # the most subrequests the Blob service takes in one batch
RETRIES_ENV = "EVONB_AZURE_MAX_RETRIES"
"""How many times a failed request is retried (default 3, after 1, 4 and 10 seconds)."""
_DEV_ACCOUNT = "devstoreaccount1"
_DEV_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
            "KBHBeksoGMGw==")  # the emulator's documented, public development key
_ACCESS_CODES = {"AuthenticationFailed", "AuthorizationFailure", "AuthorizationPermissionMismatch",
                 "InvalidAuthenticationInfo", "NoAuthenticationInformation"}


@dataclass(frozen=True)
class AzureSettings:
    """Where and as whom to reach the configured account (see the module docstring)."""

    account: str | None
    key: str | None
    endpoint: str | None  # the Blob endpoint URL, account included for path-style emulators


def _connection_string(text: str) -> dict[str, str]:
    parts = (p.partition("=") for p in text.split(";") if p.strip())
    return {k.strip(): v.strip() for k, _, v in parts}


def settings() -> AzureSettings:
    """The configured account, key and endpoint (from the environment, read on each call)."""
    env = os.environ
    conn = env.get("AZURE_STORAGE_CONNECTION_STRING")
    if conn:
        got = _connection_string(conn)
        if got.get("UseDevelopmentStorage", "").lower() == "true":
            return AzureSettings(_DEV_ACCOUNT, _DEV_KEY, f"http://127.0.0.1:10000/{_DEV_ACCOUNT}")
        account = got.get("AccountName")
        endpoint = got.get("BlobEndpoint")
        if not endpoint and account:
            protocol = got.get("DefaultEndpointsProtocol", "https")
            suffix = got.get("EndpointSuffix", "core.windows.net")
            endpoint = f"{protocol}://{account}.blob.{suffix}"
        return AzureSettings(account, got.get("AccountKey"), endpoint)
    account = env.get("AZURE_STORAGE_ACCOUNT_NAME") or env.get("AZURE_STORAGE_ACCOUNT")
    key = env.get("AZURE_STORAGE_ACCOUNT_KEY") or env.get("AZURE_STORAGE_KEY")
    return AzureSettings(account, key, env.get("AZURE_STORAGE_BLOB_ENDPOINT"))


def parse_location(root: str) -> str:
    """The internal spelling ``az:/container@account/path`` of an Azure URI
    (:class:`EvoError` naming what is missing)."""
    parsed = urlparse(root)
    container, at, host = parsed.netloc.partition("@")
    if at:  # abfss://container@account.dfs.core.windows.net/path, az://container@account/path
        account = host.split(".", 1)[0]
    elif parsed.scheme == "az":  # az://container/path: the configured account
        account = settings().account or ""
    else:
        raise EvoError(f"The table location {root!r} names no storage account",
                       hint="write abfss://<container>@<account>.dfs.core.windows.net/<path>")
    if not container:
        raise EvoError(f"The table location {root!r} names no container",
                       hint="write abfss://<container>@<account>.dfs.core.windows.net/<path> "
                            "or az://<container>/<path>")
    if not account:
        raise EvoError(f"The table location {root!r} names no storage account",
                       hint="name it in the location (abfss://<container>@<account>.dfs.core."
                            "windows.net/<path>) or set AZURE_STORAGE_ACCOUNT_NAME or "
                            "AZURE_STORAGE_CONNECTION_STRING")
    return f"az:/{container}@{account}{parsed.path}".rstrip("/")


def split(path: PathLike) -> tuple[str, str, str]:
    """``(account, container, key)`` of an internal Azure path (``az:/container@account/key``)."""
    rest = os.fspath(path).split(":", 1)[1].lstrip("/")
    head, _, key = rest.partition("/")
    container, _, account = head.partition("@")
    return account, container, key.strip("/")


def uri(path: PathLike, *, spark: bool = False) -> str:
    """``az://container@account/key`` of an internal Azure path (which :func:`parse_location`
    reads back), or the ``abfss://`` URI Spark's ABFS connector takes (``spark=True``)."""
    account, container, key = split(path)
    if spark:
        out = f"abfss://{container}@{account}.dfs.core.windows.net/{key}"
    else:
        out = f"az://{container}@{account}/{key}"
    return out.rstrip("/")


def _retries() -> int:
    """:data:`RETRIES_ENV` (default 3); an :class:`EvoError` naming it when it is not a count."""
    text = os.environ.get(RETRIES_ENV, "3").strip()
    if not text.isdigit():
        raise EvoError(f"{RETRIES_ENV}={text!r} is not a number of retries",
                       hint=f"set {RETRIES_ENV} to a whole number such as 3, or unset it")
    return int(text)


def _version(props: Any) -> tuple[str, str, int]:
    """A blob's version token from its listing or properties: the MD5 of its content where the
    service keeps one (a blob written in one request), else its ETag; with its size."""
    md5 = props.content_settings.content_md5 if props.content_settings else None
    if md5:
        return "md5", bytes(md5).hex(), int(props.size)
    return "etag", str(props.etag), int(props.size)


class AzureFileIO(ObjectStoreFileIO):
    """The FileIO of Azure Blob Storage and ADLS Gen2 (see the module docstring)."""

    name = "azure"
    arrow_hint = "check the credentials, the container and the endpoint"

    def __init__(self) -> None:
        self._clients: dict[str, Any] = {}

    def location(self, path: PathLike) -> str:
        return uri(path)

    @cached_property
    def _settings(self) -> AzureSettings:
        return settings()

    def _endpoint(self, account: str) -> str:
        s = self._settings
        if s.endpoint and (s.account in (None, account)):
            return s.endpoint.rstrip("/")
        return f"https://{account}.blob.core.windows.net"

    def _credential(self, account: str) -> Any:
        s = self._settings
        if s.key and s.account == account:
            return {"account_name": account, "account_key": s.key}
        try:
            from azure.identity import DefaultAzureCredential
        except ImportError:
            raise EvoError(
                f"No credentials for the Azure storage account {account!r}",
                hint="set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME and "
                     "AZURE_STORAGE_ACCOUNT_KEY, or pip install azure-identity for managed "
                     "identities and the Azure CLI's login") from None
        return DefaultAzureCredential()

    def _service(self, account: str) -> Any:
        if account not in self._clients:
            try:
                from azure.storage.blob import BlobServiceClient, ExponentialRetry
            except ImportError:
                raise EvoError("Tables in Azure storage need azure-storage-blob, which is not "
                               "installed", hint="pip install 'evonb[azure]'") from None
            self._clients[account] = BlobServiceClient(
                self._endpoint(account), credential=self._credential(account),
                retry_policy=ExponentialRetry(initial_backoff=1, increment_base=3,
                                              retry_total=_retries()),
                connection_timeout=5, read_timeout=30)
        return self._clients[account]

    def _container(self, path: PathLike) -> tuple[Any, str]:
        account, container, key = split(path)
        return self._service(account).get_container_client(container), key

    # ------------------------------------------------------------------ errors
    def _fail(self, exc: Exception, path: PathLike, what: str) -> NoReturn:
        from azure.core.exceptions import (
            ClientAuthenticationError,
            HttpResponseError,
            ResourceExistsError,
            ResourceModifiedError,
            ResourceNotFoundError,
            ServiceRequestError,
            ServiceResponseError,
        )

        where = uri(path)
        account, container, _ = split(path)
        code = str(getattr(exc, "error_code", "") or "")
        if isinstance(exc, ResourceNotFoundError):
            if code == "ContainerNotFound":
                raise ObjectStoreError(
                    f"Cannot {what} {where}: the container {container!r} does not exist in the "
                    f"storage account {account!r}", location=where,
                    hint="create the container first, or check the location") from None
            raise FileNotFoundError(2, "no such blob", where) from None
        if isinstance(exc, (ResourceExistsError, ResourceModifiedError)) and (
                code in ("BlobAlreadyExists", "ConditionNotMet", "")):
            raise FileExistsError(17, "the blob exists", where) from None
        if isinstance(exc, ClientAuthenticationError) or code in _ACCESS_CODES or (
                isinstance(exc, HttpResponseError) and exc.status_code == 403):
            raise ObjectStoreError(
                f"Cannot {what} {where}: the storage account refused the credentials"
                + (f" ({code})" if code else ""), location=where,
                hint="check AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_KEY (or "
                     "the identity's role on the container)") from None
        if isinstance(exc, (ServiceRequestError, ServiceResponseError)):
            raise ObjectStoreError(
                f"Cannot {what} {where}: the storage account is unreachable "
                f"({self._endpoint(account)}): {exc}", location=where,
                hint="check the network and the endpoint, then run the operation again; "
                     "`evonb check` shows whether an attempt was left behind") from None
        if isinstance(exc, HttpResponseError):
            raise ObjectStoreError(
                f"Cannot {what} {where}: the storage account answered "
                f"{code or exc.status_code}", location=where,
                hint="check the location, the container and the endpoint") from None
        raise exc

    def _call(self, path: PathLike, what: str, fn: Callable[[], T]) -> T:
        from azure.core.exceptions import AzureError

        try:
            return fn()
        except AzureError as exc:
            self._fail(exc, path, what)

    # ------------------------------------------------------------------ operations
    def read(self, path: PathLike) -> bytes:
        client, key = self._container(path)
        return self._call(path, "read",  # type: ignore[no-any-return]
                          lambda: client.download_blob(key).readall())

    def write(self, path: PathLike, data: bytes) -> None:
        client, key = self._container(path)
        self._call(path, "write", lambda: client.upload_blob(key, data, overwrite=True))

    def write_if_absent(self, path: PathLike, data: bytes) -> None:
        client, key = self._container(path)
        # overwrite=False sends If-None-Match: * (the service's conditional create)
        self._call(path, "create", lambda: client.upload_blob(key, data, overwrite=False))

    def _entries(self, folder: PathLike) -> list[Any]:
        client, key = self._container(folder)
        prefix = f"{key}/" if key else ""
        return self._call(folder, "list", lambda: list(
            client.walk_blobs(name_starts_with=prefix or None, delimiter="/")))

    def list(self, folder: PathLike) -> list[FileInfo]:
        out = []
        for entry in self._entries(folder):
            if entry.name.endswith("/"):  # a prefix: a sub-folder
                continue
            name = entry.name.rsplit("/", 1)[-1]
            out.append(FileInfo(name, int(entry.size), _version(entry)))
        return out

    def folders(self, folder: PathLike) -> list[str]:
        return [e.name.rstrip("/").rsplit("/", 1)[-1] for e in self._entries(folder)
                if e.name.endswith("/")]

    def is_folder(self, folder: PathLike) -> bool:
        client, key = self._container(folder)
        prefix = f"{key}/" if key else None

        def first() -> bool:
            for _ in client.list_blob_names(name_starts_with=prefix, results_per_page=1):
                return True
            return False

        return self._call(folder, "list", first)

    def info(self, path: PathLike) -> FileInfo:
        client, key = self._container(path)
        if not key:
            raise IsADirectoryError(21, "a container, not a file", uri(path))
        props = self._call(path, "look up",
                           lambda: client.get_blob_client(key).get_blob_properties())
        return FileInfo(key.rsplit("/", 1)[-1], int(props.size), _version(props))

    def content_version(self, path: PathLike, data: bytes) -> tuple[str, str, int]:
        """The version token of a blob written in one Put Blob: the service stores the MD5 of
        its bytes as its Content-MD5 (blobs uploaded in blocks have none: their token is the
        ETag, which then never matches, costing requests, never correctness)."""
        return "md5", hashlib.md5(data, usedforsecurity=False).hexdigest(), len(data)

    def delete(self, path: PathLike) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        client, key = self._container(path)

        def delete() -> None:
            try:
                client.delete_blob(key)
            except ResourceNotFoundError as exc:  # a missing blob is not an error
                if getattr(exc, "error_code", "") == "ContainerNotFound":
                    raise

        self._call(path, "delete", delete)

    def delete_folder(self, folder: PathLike) -> None:
        client, key = self._container(folder)
        prefix = f"{key}/" if key else None
        names = self._call(folder, "list",
                           lambda: list(client.list_blob_names(name_starts_with=prefix)))
        for i in range(0, len(names), _DELETE_BATCH):  # one batch request per 256 blobs
            batch = names[i:i + _DELETE_BATCH]
            answers = self._call(folder, "delete", lambda b=batch: list(  # type: ignore[misc]
                client.delete_blobs(*b, raise_on_any_failure=False)))
            refused = [a.status_code for a in answers if a.status_code not in (200, 202, 404)]
            if refused:
                raise ObjectStoreError(
                    f"Cannot delete {uri(folder)}: the storage account refused "
                    f"{len(refused)} of {len(batch)} deletes (HTTP {refused[0]})",
                    location=uri(folder),
                    hint="check the credentials' permissions on the container, then run the "
                         "operation again")

    @cached_property
    def _arrow(self) -> pafs.FileSystem:
        import pyarrow.fs

        s = self._settings
        if not s.account:
            raise EvoError("The JVM-free reader needs the Azure storage account configured",
                           hint="set AZURE_STORAGE_CONNECTION_STRING or "
                                "AZURE_STORAGE_ACCOUNT_NAME")
        kwargs: dict[str, Any] = {"account_name": s.account}
        if s.key:
            kwargs["account_key"] = s.key
        if s.endpoint:
            parsed = urlparse(s.endpoint)
            kwargs.update(blob_storage_authority=parsed.netloc,
                          dfs_storage_authority=parsed.netloc,
                          blob_storage_scheme=parsed.scheme, dfs_storage_scheme=parsed.scheme)
        return pyarrow.fs.AzureFileSystem(**kwargs)

    def arrow_filesystem(self) -> pafs.FileSystem:
        return self._arrow

    def arrow_location(self, path: PathLike) -> tuple[pafs.FileSystem, str]:
        account, container, key = split(path)
        if self._settings.account not in (None, account):
            raise EvoError(
                f"The JVM-free reader cannot read {uri(path)}: it reads the configured storage "
                f"account {self._settings.account!r} only",
                hint="configure that account (AZURE_STORAGE_ACCOUNT_NAME) in this process")
        return self._arrow, f"{container}/{key}"

    def move(self, src: PathLike, dst: PathLike) -> None:
        self.write(dst, self.read(src))
        self.delete(src)


__all__ = ["AZURE_SCHEMES", "RETRIES_ENV", "AzureFileIO", "AzureSettings", "parse_location",
           "settings", "split", "uri"]
