"""``bench.latency``: the proxy passes a real server's bytes unchanged and makes each request
wait at least its delay each way (what ``object_storage.mor_upsert_blocks_latency`` relies on)."""

from __future__ import annotations

import os
import time

import boto3

from bench.latency import latency_proxy
from bench.object_storage import s3_server


def test_the_proxy_delays_requests_and_changes_no_byte() -> None:
    with s3_server() as bucket:
        direct = os.environ["AWS_ENDPOINT_URL"]
        host, port = direct.split("//")[1].split(":")
        body = bytes(range(256)) * 4096  # 1 MiB, several reads of the proxy
        with latency_proxy(host, int(port), 0.05) as slow:
            client = boto3.client("s3", endpoint_url=slow)
            client.put_object(Bucket=bucket, Key="k", Body=body)
            start = time.perf_counter()
            got = client.get_object(Bucket=bucket, Key="k")["Body"].read()
            took = time.perf_counter() - start
        assert got == body
        assert took >= 0.1  # 50 ms on the request and 50 ms on the response, at least
        direct_client = boto3.client("s3", endpoint_url=direct)
        assert direct_client.get_object(Bucket=bucket, Key="k")["Body"].read() == body
