"""Shared fixtures: one local SparkSession for the whole test run."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    """The managed evonb SparkSession (local mode), started once and shared by every test."""
    import evonb

    session = evonb.session()
    yield session


@pytest.fixture
def warehouse(tmp_path):
    """A folder for tables of one test."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return path
