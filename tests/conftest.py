"""Shared fixtures: one local SparkSession for the whole test run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Every Spark JVM of the test run (the shared sessions, and those of kernels and child processes,
# which inherit the variable) compiles with the JIT's quick compiler only. Test data is small:
# the optimizing compiler's threads compete with the tests for the two cores and pay back little.
# Side by side, one run after the other, the non-heavy integration and services tests (172, two
# processes) took 251 s against 315 s and 329 s with the default JIT; four object-storage and
# merge-on-read test files (26 tests) 295 s against 354 s; six tutorial kernels at once 79 s
# against 131 s. The benchmarks (`python -m bench`) keep the default. SPARK_SUBMIT_OPTS set by
# the user wins.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")


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


def _inside_table(path: object) -> bool:
    """Whether ``path`` is in a table's folder (some folder above it holds ``.evo``)."""
    try:
        p = Path(os.fsdecode(path)).absolute()  # type: ignore[arg-type]
    except TypeError:
        return False
    return any(part == ".evo" for part in p.parts) or any(
        (folder / ".evo").is_dir() for folder in p.parents)


@pytest.fixture(scope="session", autouse=True)
def _no_rename_in_tables():
    """Under ``EVONB_FILE_IO=local-no-rename``, a rename or hard link of a file in a table's
    folder fails the test: the commit protocol must need neither (``evonb.table.fileio``)."""
    if os.environ.get("EVONB_FILE_IO", "").strip().lower() != "local-no-rename":
        yield
        return
    import shutil

    def forbid(name, real):
        def guarded(src, dst, *args, **kwargs):
            if _inside_table(src) or _inside_table(dst):
                raise AssertionError(f"{name}({src!r}, {dst!r}) in a table folder under "
                                     "EVONB_FILE_IO=local-no-rename")
            return real(src, dst, *args, **kwargs)
        return guarded

    patched = {(os, "rename"), (os, "replace"), (os, "link"), (shutil, "move"),
               (Path, "rename"), (Path, "replace"), (Path, "hardlink_to")}
    saved = {(obj, attr): getattr(obj, attr) for obj, attr in patched}
    for (obj, attr), real in saved.items():
        setattr(obj, attr, forbid(f"{getattr(obj, '__name__', obj)}.{attr}", real))
    try:
        yield
    finally:
        for (obj, attr), real in saved.items():
            setattr(obj, attr, real)


# Test modules that take most of the run's time: real servers, kernels and a browser, and the long
# differential and regression runs. Marked ``heavy``: `make test` leaves them out to stay under
# 20 minutes on 2 cores, and CI runs them next with `make test-heavy`.
HEAVY = (
    "tests/objectstore/",
    "tests/browser/",
    "tests/notebooks/test_tutorials.py",
    "tests/notebooks/test_fresh_kernel.py",
    "tests/notebook/test_engine.py",
    "tests/notebook/test_data_diff_engines.py",
    "tests/integration/test_mor_positions.py",
    "tests/integration/test_mor_driver.py",
    "tests/integration/test_cow_driver.py",
    "tests/integration/test_mor_jvm_blocks.py",
    "tests/integration/test_mistakes.py",
    "tests/integration/test_deep_nesting.py",
    "tests/model/test_model_regressions.py",
    "tests/model/test_write_evolution_model.py",
    "tests/spark/test_session.py",
)


def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`HEAVY` ``heavy``; a listed path that no longer exists is an
    error, so that a renamed module cannot drop out of the list unnoticed."""
    root = Path(config.rootpath)
    missing = [p for p in HEAVY if not (root / p).exists()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py HEAVY names missing paths: {missing}")
    for item in items:
        if not Path(item.path).is_relative_to(root):
            continue
        where = Path(item.path).relative_to(root).as_posix()
        if any(where == p or (p.endswith("/") and where.startswith(p)) for p in HEAVY):
            item.add_marker(pytest.mark.heavy)
