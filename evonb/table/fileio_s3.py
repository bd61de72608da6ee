"""Tables in S3-compatible object storage: ``s3://bucket/path`` (``s3a://``, Spark's scheme,
names the same store).

Inside evonb a table root is a :class:`~pathlib.Path`; an object-store root keeps its scheme as
its first part (``Path("s3:/bucket/path")``: ``pathlib`` folds the double slash), and the
process's FileIO (:func:`evonb.table.fileio.file_io`) sends every path whose first part is
``s3:`` or ``s3a:`` to :class:`S3FileIO`.

:class:`S3FileIO` does the metadata operations with boto3, which gives what the commit protocol
needs: the ETag as each file's version token, and ``write_if_absent`` as a conditional PUT
(``If-None-Match: *``; the store refuses it with 412 PreconditionFailed when the object exists,
so of two writers exactly one wins). Data files and log blocks are read through
``pyarrow.fs.S3FileSystem`` (:meth:`S3FileIO.arrow_filesystem`).

Configuration is the usual one, read when the first object-store path is used: the endpoint
from ``AWS_ENDPOINT_URL`` (S3-compatible servers; unset: AWS itself), credentials from
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (``AWS_SESSION_TOKEN``) or else the default
credential chain (profile, instance or container role), the region from ``AWS_REGION`` (or
``AWS_DEFAULT_REGION``, default ``us-east-1``). ``AWS_MAX_ATTEMPTS`` bounds botocore's retries.

Errors of the store become evonb errors naming the location and the fix
(:class:`ObjectStoreError`): a missing bucket, refused credentials, an unreachable endpoint.
A missing object is :class:`FileNotFoundError`, as on a local disk.

boto3 is an optional dependency (``pip install 'evonb[s3]'``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar
from urllib.parse import urlparse

from evonb.errors import EvoError
from evonb.table.fileio_base import (
    FileInfo,
    ObjectStoreError,
    ObjectStoreFileIO,
    PathLike,
    is_object_path,
)

if TYPE_CHECKING:
    import pyarrow.fs as pafs

T = TypeVar("T")

OBJECT_STORE_SCHEMES = ("s3", "s3a")
"""The URI schemes of the S3 store (``s3a`` is Hadoop's and Spark's name for it)."""

# Codes with which S3 says the credentials are wrong or lack a permission.
_ACCESS_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                 "InvalidToken", "403", "Forbidden", "AuthorizationHeaderMalformed"}
_MISSING_CODES = {"NoSuchKey", "404", "NotFound"}
_DELETE_BATCH = 1000


def split(path: PathLike) -> tuple[str, str]:
    """``(bucket, key)`` of an object-store path (``s3:/b/k``, ``s3://b/k`` or ``s3a://b/k``)."""
    s = os.fspath(path)
    rest = s.split(":", 1)[1].lstrip("/")
    bucket, _, key = rest.partition("/")
    return bucket, key.strip("/")


def uri(path: PathLike, scheme: str = "s3") -> str:
    """The URI of an object-store path: ``s3://bucket/key`` (``scheme="s3a"`` for Spark)."""
    bucket, key = split(path)
    return f"{scheme}://{bucket}/{key}" if key else f"{scheme}://{bucket}"


def _endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


class S3FileIO(ObjectStoreFileIO):
    """The FileIO of S3-compatible object storage (see the module docstring)."""

    name = "s3"
    arrow_hint = "check the credentials, the bucket and AWS_ENDPOINT_URL"

    def location(self, path: PathLike) -> str:
        return uri(path)

    @cached_property
    def _client(self) -> Any:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise EvoError("Tables in S3 need boto3, which is not installed",
                           hint="pip install 'evonb[s3]'") from None
        session = boto3.session.Session()
        return session.client(
            "s3", endpoint_url=_endpoint(), region_name=_region(),
            config=Config(connect_timeout=5, read_timeout=30,
                          s3={"addressing_style": "path"} if _endpoint() else None))

    @cached_property
    def _arrow(self) -> pafs.S3FileSystem:
        import pyarrow.fs

        kwargs: dict[str, Any] = {"region": _region()}
        endpoint = _endpoint()
        if endpoint:
            parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
            kwargs["endpoint_override"] = parsed.netloc
            kwargs["scheme"] = parsed.scheme or "https"
        key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
        if key and secret:  # else pyarrow uses the default credential chain
            kwargs.update(access_key=key, secret_key=secret,
                          session_token=os.environ.get("AWS_SESSION_TOKEN"))
        return pyarrow.fs.S3FileSystem(**kwargs)

    # ------------------------------------------------------------------ errors
    def _fail(self, exc: Exception, path: PathLike, what: str) -> NoReturn:
        """Raise the evonb error (or FileNotFoundError/FileExistsError) for a boto3 failure."""
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            NoCredentialsError,
            PartialCredentialsError,
        )

        where = uri(path)
        bucket = split(path)[0]
        if isinstance(exc, ClientError):
            err = exc.response.get("Error", {})
            code = str(err.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in _MISSING_CODES:
                raise FileNotFoundError(2, "no such object", where) from None
            if code == "PreconditionFailed" or status == 412:
                raise FileExistsError(17, "the object exists", where) from None
            if code == "NoSuchBucket":
                raise ObjectStoreError(
                    f"Cannot {what} {where}: the bucket {bucket!r} does not exist",
                    location=where,
                    hint="create the bucket first, or check the location and AWS_ENDPOINT_URL",
                ) from None
            if code in _ACCESS_CODES or status == 403:
                raise ObjectStoreError(
                    f"Cannot {what} {where}: the object store refused the credentials ({code})",
                    location=where,
                    hint="check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the instance's "
                         "role) and the bucket's permissions",
                ) from None
            raise ObjectStoreError(
                f"Cannot {what} {where}: the object store answered {code or status}: "
                f"{err.get('Message', '')}".rstrip(": "), location=where,
                hint="check the location, the bucket and AWS_ENDPOINT_URL") from None
        if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
            raise ObjectStoreError(
                f"Cannot {what} {where}: no credentials for the object store", location=where,
                hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or an "
                     "instance role") from None
        if isinstance(exc, BotoCoreError):  # no connection, timeouts
            raise ObjectStoreError(
                f"Cannot {what} {where}: the object store is unreachable "
                f"({_endpoint() or 'AWS S3'}): {exc}", location=where,
                hint="check the network and AWS_ENDPOINT_URL, then run the operation again; "
                     "`evonb check` shows whether an attempt was left behind") from None
        raise exc

    def _call(self, path: PathLike, what: str, fn: Callable[[], T]) -> T:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn()
        except (ClientError, BotoCoreError) as exc:
            self._fail(exc, path, what)

    # ------------------------------------------------------------------ operations
    def read(self, path: PathLike) -> bytes:
        bucket, key = split(path)

        def get() -> bytes:
            return self._client.get_object(Bucket=bucket, Key=key)["Body"].read()  # type: ignore[no-any-return]

        return self._call(path, "read", get)

    def write(self, path: PathLike, data: bytes) -> None:
        bucket, key = split(path)
        self._call(path, "write", lambda: self._client.put_object(
            Bucket=bucket, Key=key, Body=data))

    def write_if_absent(self, path: PathLike, data: bytes) -> None:
        bucket, key = split(path)
        self._call(path, "create", lambda: self._client.put_object(
            Bucket=bucket, Key=key, Body=data, IfNoneMatch="*"))

    def _pages(self, folder: PathLike) -> Iterator[dict[str, Any]]:
        bucket, key = split(folder)
        prefix = f"{key}/" if key else ""
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix, Delimiter="/")
        yield from self._call(folder, "list", lambda: list(pages))

    def list(self, folder: PathLike) -> list[FileInfo]:
        out = []
        for page in self._pages(folder):
            for obj in page.get("Contents", ()):
                name = obj["Key"].rsplit("/", 1)[-1]
                if name:
                    out.append(FileInfo(name, int(obj["Size"]), (obj["ETag"], int(obj["Size"]))))
        return out

    def folders(self, folder: PathLike) -> list[str]:
        return [p["Prefix"].rstrip("/").rsplit("/", 1)[-1]
                for page in self._pages(folder) for p in page.get("CommonPrefixes", ())]

    def is_folder(self, folder: PathLike) -> bool:
        bucket, key = split(folder)
        prefix = f"{key}/" if key else ""
        got = self._call(folder, "list", lambda: self._client.list_objects_v2(
            Bucket=bucket, Prefix=prefix, MaxKeys=1))
        return bool(got.get("KeyCount", 0))

    def info(self, path: PathLike) -> FileInfo:
        bucket, key = split(path)
        if not key:
            raise IsADirectoryError(21, "a bucket, not a file", uri(path))
        head = self._call(path, "look up", lambda: self._client.head_object(
            Bucket=bucket, Key=key))
        size = int(head["ContentLength"])
        return FileInfo(key.rsplit("/", 1)[-1], size, (head["ETag"], size))

    def content_version(self, path: PathLike, data: bytes) -> tuple[str, int]:
        """The ETag and size of an object written in one PUT: the ETag is the MD5 of its bytes
        (objects uploaded in parts, or encrypted with SSE-KMS, have other ETags: they then never
        match, which costs requests, never correctness)."""
        return f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"', len(data)

    def delete(self, path: PathLike) -> None:
        bucket, key = split(path)
        self._call(path, "delete", lambda: self._client.delete_object(Bucket=bucket, Key=key))

    def delete_folder(self, folder: PathLike) -> None:
        bucket, key = split(folder)
        prefix = f"{key}/" if key else ""
        pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                       Prefix=prefix)
        keys = [o["Key"] for page in self._call(folder, "list", lambda: list(pages))
                for o in page.get("Contents", ())]
        for i in range(0, len(keys), _DELETE_BATCH):
            batch = [{"Key": k} for k in keys[i:i + _DELETE_BATCH]]
            self._call(folder, "delete", lambda b=batch: self._client.delete_objects(  # type: ignore[misc]
                Bucket=bucket, Delete={"Objects": b, "Quiet": True}))

    def arrow_filesystem(self) -> pafs.FileSystem:
        return self._arrow

    def arrow_location(self, path: PathLike) -> tuple[pafs.FileSystem, str]:
        bucket, key = split(path)
        return self._arrow, f"{bucket}/{key}"

    def move(self, src: PathLike, dst: PathLike) -> None:
        sb, sk = split(src)
        db, dk = split(dst)
        self._call(dst, "copy to", lambda: self._client.copy_object(
            Bucket=db, Key=dk, CopySource={"Bucket": sb, "Key": sk}))
        self.delete(src)


__all__ = ["OBJECT_STORE_SCHEMES", "ObjectStoreError", "S3FileIO", "is_object_path", "split",
           "uri"]
