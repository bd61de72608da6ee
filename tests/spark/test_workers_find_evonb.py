"""Python workers find evonb when the driver imports it only through ``sys.path``.

A session evonb starts runs its Python workers as ``python -m evonb.spark.worker_daemon``. A
driver that imports evonb from a source checkout by ``sys.path`` alone (a script beside it,
``sys.path.insert``, an editable install whose folder moved) left every Python task failing:
first "No module named evonb", then a Java ``NullPointerException``. The session now gives the
workers the folder evonb came from (``spark.executorEnv.PYTHONPATH``).

The test needs an interpreter where evonb is not installed: a child Python started with ``-S``
(no site folders, so no installed or editable evonb) and, on ``PYTHONPATH``, a folder linking
every entry of the site folders but evonb's. Its Spark workers start the same way.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from evonb.spark.session import WORKERS_PATH, with_workers_path

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
DRIVER = """
import sys
sys.path.insert(0, {repo!r})
from evonb.spark.session import session
spark = session()
print("workers path:", spark.sparkContext.getConf().get({key!r}))
print("sum:", spark.sparkContext.parallelize(range(10), 2).map(lambda x: x * 2).sum())
"""


def _site_without_evonb(folder: Path) -> Path:
    """A folder linking every entry of this interpreter's site folders but evonb's."""
    folder.mkdir()
    for root in map(Path, site.getsitepackages()):
        for entry in root.iterdir():
            name = entry.name.lower()
            if name.startswith(("evonb", "__editable__")) or (folder / entry.name).exists():
                continue
            (folder / entry.name).symlink_to(entry)
    return folder


def test_workers_of_a_session_import_evonb_from_the_drivers_folder(tmp_path: Path) -> None:
    packages = _site_without_evonb(tmp_path / "site")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(packages), "PYSPARK_PYTHON": str(python),
           "PYSPARK_DRIVER_PYTHON": str(python)}
    env.pop("PYTHONSTARTUP", None)
    hidden = subprocess.run([str(python), "-c", "import evonb"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert "No module named 'evonb'" in hidden.stderr  # the child cannot import it by itself
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(repo=str(REPO), key=WORKERS_PATH))
    done = subprocess.run([str(python), str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"workers path: {REPO}" in done.stdout
    assert "sum: 90" in done.stdout


def test_workers_path_is_left_alone_for_an_installed_evonb(monkeypatch) -> None:
    folder = str(REPO)
    given = {WORKERS_PATH: "/opt/udfs", "spark.app.name": "x"}
    assert with_workers_path(given) == {**given, WORKERS_PATH: f"/opt/udfs{os.pathsep}{folder}"}
    assert with_workers_path({WORKERS_PATH: folder}) == {WORKERS_PATH: folder}
    monkeypatch.setattr(site, "getsitepackages", lambda: [folder])
    assert with_workers_path(given) == given
