"""Helpers shared by the concurrency, crash-safety and stress tests."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from evonb.table.timeline import CommitRecord

ROOT = Path(__file__).resolve().parents[2]


def metadata_digest(table_root: str | os.PathLike[str]) -> dict[str, str]:
    """A hash of every file under ``.evo`` except the lock file (relative path -> sha256)."""
    evo = Path(table_root) / ".evo"
    out = {}
    for path in sorted(evo.rglob("*")):
        if path.is_file() and path.relative_to(evo).as_posix() != "lock":
            out[path.relative_to(evo).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def data_files(table_root: str | os.PathLike[str]) -> set[str]:
    """Every file outside ``.evo`` (relative paths)."""
    root = Path(table_root)
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and ".evo" not in p.relative_to(root).parts}


def record(instant: str, action: str = "commit", **metadata: object) -> CommitRecord:
    """A completed commit for policy tests."""
    body = {"schema_version": "00000000000000000", "added": [], "removed": [], **metadata}
    return CommitRecord(instant, action, body)


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child Python process that imports this repository."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.update(extra)
    return env


def gateway_env(spark) -> dict[str, str]:
    """Environment variables that let a child process attach to ``spark``'s JVM."""
    params = spark.sparkContext._gateway.gateway_parameters
    return {"PYSPARK_GATEWAY_PORT": str(params.port), "PYSPARK_GATEWAY_SECRET": params.auth_token}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m evonb ARGS`` in a child process."""
    return subprocess.run([sys.executable, "-m", "evonb", *args], capture_output=True,
                          text=True, env=child_env(), timeout=120, check=False)
