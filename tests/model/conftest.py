"""Fixtures of the model tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from tests.model import machine
from tests.model.machine import TableMachine


@pytest.fixture
def state(spark: SparkSession) -> Iterator[TableMachine]:
    """The model's machine on the shared session, for a fixed list of steps (a regression
    case, a fixed history); its table removed afterwards."""
    machine.use_spark(spark)
    m = TableMachine()
    yield m
    m.teardown()
