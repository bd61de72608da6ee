"""The reference-model test (:mod:`tests.model.machine`) with each history's table in a bucket
of moto's S3 server on loopback: random DDL, writes and services, committed through the
object-store FileIO and written by Spark's Python workers, compared with the model after every
step and at every commit, through Spark, the JVM-free reader and pyiceberg.

``EVONB_MODEL_BUCKET_HISTORIES`` sets how many histories run (2 by default, in ``make test-heavy``);
the seed is printed, and ``EVONB_MODEL_SEED=<seed>`` replays a run, as in
``tests/model/test_model_histories.py``."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.model import machine
from tests.model.test_model_histories import play
from tests.objectstore.conftest import S3Server


@pytest.fixture
def bucket_tables(s3_env: S3Server, s3_client: Any) -> Iterator[None]:
    """Each history's table in a fresh bucket, emptied and removed after it."""

    def make() -> tuple[str, Callable[[], None]]:
        name = f"evonb-model-{uuid.uuid4().hex[:10]}"
        s3_client.create_bucket(Bucket=name)

        def remove() -> None:
            pages = s3_client.get_paginator("list_objects_v2").paginate(Bucket=name)
            for page in pages:
                found = [{"Key": o["Key"]} for o in page.get("Contents", ())]
                if found:
                    s3_client.delete_objects(Bucket=name, Delete={"Objects": found})
            s3_client.delete_bucket(Bucket=name)

        return f"s3://{name}/t", remove

    machine.use_location(make, {"s3.endpoint": s3_env.endpoint, "s3.region": "us-east-1",
                                "s3.access-key-id": "testing",
                                "s3.secret-access-key": "testing"})
    yield
    machine.use_location(None)


@pytest.mark.model
@pytest.mark.spark
def test_random_histories_in_a_bucket_match_the_model(spark: Any, bucket_tables: None) -> None:
    play(spark, int(os.environ.get("EVONB_MODEL_BUCKET_HISTORIES") or 2),
         "model test in a bucket")
