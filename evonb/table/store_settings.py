"""The object-store settings of a process, carried to Spark's tasks.

Spark reaches a bucket or container through evonb's Python workers wherever no Hadoop
connector is installed (reads: :mod:`evonb.arrow.spark_source`; writes:
:mod:`evonb.spark.object_writer`). A task applies the settings of the process that planned the
job (the ``AWS_*`` and ``AZURE_*`` variables evonb reads, ``docs/cluster.md``) before it opens a
file, so executors need no configuration of their own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from evonb.table.fileio import object_store_io

SETTINGS_PREFIXES = ("AWS_", "AZURE_STORAGE_", "AZURE_CLIENT_", "AZURE_TENANT_",
                     "EVONB_AZURE_")
"""Environment variables of the object-store settings evonb reads (``docs/cluster.md``)."""


def store_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The object-store settings of this process, to apply in the tasks."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k.startswith(SETTINGS_PREFIXES)}


def apply_store_settings(settings: Mapping[str, str]) -> None:
    """Make this (task) process use ``settings`` for object storage: the variables it had and
    ``settings`` lacks are removed, and the cached store clients are made anew on a change."""
    changed = False
    for key in [k for k in os.environ if k.startswith(SETTINGS_PREFIXES)]:
        if key not in settings:
            del os.environ[key]
            changed = True
    for key, value in settings.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
            changed = True
    if changed:
        object_store_io.cache_clear()


__all__ = ["SETTINGS_PREFIXES", "apply_store_settings", "store_settings"]
