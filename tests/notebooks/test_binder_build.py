"""Binder's environment built the way repo2docker builds it, without Docker, and every tutorial
run on its kernel.

repo2docker reads ``binder/``: ``runtime.txt`` picks the Python, ``apt.txt`` lists system
packages, ``requirements.txt`` is installed with pip into a fresh environment, then
``postBuild`` runs in the repository's folder. Here: the repository's tracked files are copied
(what Binder clones), a virtual environment is made with ``runtime.txt``'s Python (this one when
no such interpreter is installed: the test prints which), ``requirements.txt`` and ``postBuild``
run in it, each ``apt.txt`` package is looked up in the Debian archive this machine's apt
knows, and each tutorial executes on a kernel of that environment (its own evonb, pyspark and
JupyterLab, not the test run's).

It takes a few minutes (an environment is installed), so the default run does not collect it
(``tests/notebooks/conftest.py``); ``make test-binder`` runs it, and so does CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.notebooks.conftest import execute_all

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "evonb-binder"



@dataclass(frozen=True)
class BinderEnv:
    python: Path  # the environment's interpreter
    repo: Path  # the copy of the repository postBuild ran in
    kernels: Path  # JUPYTER_PATH entry holding the environment's kernelspec
    log: str


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 1800
         ) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{out[-4000:]}"
    return out


def _tracked_files() -> list[str]:
    """The repository's files as Binder clones them (git's tracked files)."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                          check=True)
    return [p for p in done.stdout.decode().split("\0") if p]


def _runtime_python() -> tuple[str, str]:
    """``runtime.txt``'s interpreter if installed, else this one; and what was chosen."""
    text = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-(\d+)\.(\d+)", text)
    assert match, f"binder/runtime.txt must read python-X.Y, not {text!r}"
    wanted = f"{match.group(1)}.{match.group(2)}"
    found = shutil.which(f"python{wanted}")
    if found:
        return found, f"python{wanted} ({found}), as runtime.txt asks"
    if f"{sys.version_info.major}.{sys.version_info.minor}" == wanted:
        return sys.executable, f"this interpreter, Python {wanted} as runtime.txt asks"
    return sys.executable, (f"this interpreter (Python {sys.version_info.major}."
                            f"{sys.version_info.minor}): python{wanted} is not installed here")


@pytest.fixture(scope="module")
def binder(tmp_path_factory: pytest.TempPathFactory) -> BinderEnv:
    work = tmp_path_factory.mktemp("binder")
    repo = work / "repo"
    for rel in _tracked_files():
        source = ROOT / rel
        if source.is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / rel)
    base, chosen = _runtime_python()
    print(f"binder environment: {chosen}")
    env_dir = work / "env"
    clean = {k: v for k, v in os.environ.items()
             if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV")}
    _run([base, "-m", "venv", str(env_dir)], cwd=work, env=clean)
    python = env_dir / "bin" / "python"
    env = dict(clean, VIRTUAL_ENV=str(env_dir), PATH=f"{env_dir / 'bin'}:{clean['PATH']}")
    log = _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                "-r", str(repo / "binder" / "requirements.txt")], cwd=repo, env=env)
    log += _run(["bash", str(repo / "binder" / "postBuild")], cwd=repo, env=env)
    kernels = work / "kernels"
    _run([str(python), "-m", "ipykernel", "install", "--prefix", str(kernels), "--name",
          KERNEL, "--display-name", "evonb (Binder)"], cwd=repo, env=env)
    return BinderEnv(python, repo, kernels / "share" / "jupyter", log)


def _apt_lists() -> None:
    """Fetch apt's package lists when this machine has none yet (as a fresh image may)."""
    if any(Path("/var/lib/apt/lists").glob("*_Packages*")):
        return
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True, timeout=600)


def test_apt_packages_exist_in_the_debian_archive():
    _apt_lists()
    packages = [line.split("#", 1)[0].strip()
                for line in (BINDER / "apt.txt").read_text(encoding="utf-8").splitlines()]
    packages = [p for p in packages if p]
    assert packages, "binder/apt.txt lists no package"
    for package in packages:
        done = subprocess.run(["apt-cache", "show", "--no-all-versions", package],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0 and f"Package: {package}" in done.stdout, (
            f"{package} (binder/apt.txt) is not in the Debian archive apt knows here: "
            f"{done.stderr.strip()}")


def test_the_environment_has_its_own_evonb_from_the_repository(binder: BinderEnv):
    out = subprocess.run(
        [str(binder.python), "-c",
         "import evonb, pyspark, jupyterlab, ipykernel; print(evonb.__file__); "
         "print(pyspark.__version__)"],
        capture_output=True, text=True, check=True, cwd=binder.repo.parent).stdout.split()
    installed = Path(out[0]).resolve()
    assert binder.python.parent.parent.resolve() in installed.parents, installed
    assert ROOT.resolve() not in installed.parents
    check = subprocess.run([str(binder.python), "-m", "pip", "check"], capture_output=True,
                           text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_kernel_runs_the_environments_python(binder: BinderEnv, tmp_path: Path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("import sys, evonb; print(sys.executable); "
                                              "print(evonb.__file__)"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(binder.kernels))
        NotebookClient(nb, kernel_name=KERNEL, timeout=300,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    executable, module = nb.cells[0].outputs[0].text.split()
    env_dir = binder.python.parent.parent
    assert Path(executable).parent.parent == env_dir
    assert env_dir.resolve() in Path(module).resolve().parents


@pytest.fixture(scope="module")
def executed(binder: BinderEnv, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, tuple[Any, Exception | None]]:
    """Every tutorial run top to bottom on the Binder environment's kernel."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", os.pathsep.join(
            [str(binder.kernels), *filter(None, [os.environ.get("JUPYTER_PATH")])]))
        return execute_all(tmp_path_factory.mktemp("binder-notebooks"), KERNEL, timeout=900,
                           env=env)


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS])
def test_every_tutorial_runs_on_the_binder_kernel(executed, binder: BinderEnv, name: str):
    nb, error = executed[name]
    assert error is None, f"{name} failed on the Binder kernel: {error}"
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"{name} [{cell.id}] did not run"
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{name} [{cell.id}]: {errors}"
        stderr = "".join(o.text for o in cell.outputs
                         if o.output_type == "stream" and o.name == "stderr")
        assert "Traceback" not in stderr and "\tat org.apache" not in stderr, stderr
