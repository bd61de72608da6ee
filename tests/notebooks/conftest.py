"""Executing the tutorial notebooks on real kernels (all at once: each starts its own Spark)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BINDER_BUILD_ENV = "EVONB_BINDER_BUILD"
# Building Binder's environment takes minutes: only `make test-binder` (and so CI) collects it.
collect_ignore = [] if os.environ.get(BINDER_BUILD_ENV) == "1" else ["test_binder_build.py"]


def execute_all(work: Path, kernel: str, *, timeout: int = 600,
                env: dict[str, str] | None = None) -> dict[str, tuple[Any, Exception | None]]:
    """``{file name: (executed notebook, error or None)}`` for every tutorial notebook, run top
    to bottom (all at once) on fresh ``kernel`` kernels, in ``work`` with ``work/tmp`` as
    their temporary folder."""
    import nbformat
    from nbclient import NotebookClient

    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ if env is None else env, TMPDIR=str(tmp))

    async def run(path: Path) -> tuple[Any, Exception | None]:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, kernel_name=kernel, timeout=timeout,
                                resources={"metadata": {"path": str(work)}})
        try:
            await client.async_execute(env=env)
        except Exception as exc:  # reported by the tests, with the failing cell
            return nb, exc
        return nb, None

    async def run_all() -> list[tuple[Any, Exception | None]]:
        return await asyncio.gather(*(run(p) for p in NOTEBOOKS))

    return dict(zip([p.name for p in NOTEBOOKS], asyncio.run(run_all()), strict=True))


@pytest.fixture(scope="session")
def executed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Exception | None]]:
    """Every tutorial notebook run on a fresh ``python3`` kernel (:func:`execute_all`)."""
    return execute_all(tmp_path_factory.mktemp("notebooks"), "python3")
