"""Binder runs the tutorials: its files must agree with the package's own metadata."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _binder_requirements() -> dict[str, Requirement]:
    out = {}
    for line in (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            name = canonicalize_name(req.name)
            assert name not in out, f"{req.name} listed twice in binder/requirements.txt"
            out[name] = req
    return out


def test_requirements_match_the_package_dependencies():
    binder = _binder_requirements()
    for line in _pyproject()["project"]["dependencies"]:
        dep = Requirement(line)
        name = canonicalize_name(dep.name)
        assert name in binder, f"binder/requirements.txt lacks {dep.name} (pyproject: {line})"
        assert binder[name].specifier == dep.specifier, (
            f"{dep.name}: binder has {binder[name].specifier}, pyproject has {dep.specifier}")
        assert binder[name].marker == dep.marker and binder[name].extras == dep.extras


def test_binder_brings_jupyterlab():
    assert "jupyterlab" in _binder_requirements()


def test_apt_installs_a_java_runtime_for_spark():
    packages = (BINDER / "apt.txt").read_text(encoding="utf-8").split()
    assert any(re.fullmatch(r"openjdk-(1[7-9]|2\d)-jre(-headless)?|default-jre(-headless)?", p)
               for p in packages), packages


def test_post_build_installs_this_repository():
    post = BINDER / "postBuild"
    text = post.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash")
    assert os.access(post, os.X_OK), "binder/postBuild must be executable"
    assert re.search(r"pip install [^\n]*\s\.\s*$", text, re.MULTILINE), text


def test_runtime_satisfies_requires_python():
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    version = Version(runtime.removeprefix("python-"))
    assert version in SpecifierSet(_pyproject()["project"]["requires-python"])
