"""Every on-disk name of an evonb table: built and parsed here, and nowhere else.

::

    <root>/.evo/table.json                                 the table config
    <root>/.evo/lock                                       the table lock (file provider)
    <root>/.evo/timeline/<instant>.<action>.requested      the plan of an action
    <root>/.evo/timeline/<instant>.<action>.inflight       work under way
    <root>/.evo/timeline/<instant>.<action>                completed: the commit
    <root>/.evo/schemas/<version>.schema.json              a schema version
    <root>/.evo/schemas/<version>.layout.json              its physical layout
    <root>/.evo/staging/<instant>/                         files a write is staging
    <root>/[<partition>/]<file-id>_<task>_<instant>.parquet              a data (base) file
    <root>/[<partition>/].<base-stem>.log.<instant>_<task>.<avro|parquet>  a log block
    <root>/[<partition>/].<log block name>.<attempt>.tmp                 a log block being written
    <folder>/.<target name>.<random>.tmp                   an atomic write under way

An instant (and a schema version id) is 17 digits. Parsers take a file name (or a path: its
last part) and return None for a name that does not follow the pattern.
"""

from __future__ import annotations

import functools
import re
import uuid
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import NamedTuple

EVO_DIR = ".evo"
"""The metadata folder under a table's root."""
CONFIG_FILE = "table.json"
LOCK_FILE = "lock"
TIMELINE_DIR = "timeline"
SCHEMAS_DIR = "schemas"
STAGING_DIR = "staging"
RETRIES_DIR = "retries"
"""``.evo/retries``: notes of writes whose Spark tasks were retried (object storage)."""
ICEBERG_ENABLED_PROPERTY = "evonb.iceberg.enabled"
"""The table property of automatic Iceberg publication (:mod:`evonb.iceberg.publish`)."""
ICEBERG_STATUS_FILE = "iceberg.json"
"""Under ``.evo``: why the last automatic Iceberg publication failed or stopped (absent when
it succeeded)."""
TEMP_SUFFIX = ".tmp"

INSTANT_PATTERN = r"[0-9]{17}"
INSTANT = re.compile(INSTANT_PATTERN)
"""17 digits: the shape of an instant and of a schema version id."""


def _last(name: str) -> str:
    return name.rstrip("/").rpartition("/")[2]


# --------------------------------------------------------------------------- metadata paths
def evo_rel(*parts: str) -> str:
    """A path under the metadata folder, relative to the table root (``.evo/<parts>``)."""
    return "/".join((EVO_DIR, *parts))


def timeline_rel(name: str) -> str:
    """``.evo/timeline/<name>``, relative to the table root."""
    return evo_rel(TIMELINE_DIR, name)


def schemas_rel(name: str) -> str:
    """``.evo/schemas/<name>``, relative to the table root."""
    return evo_rel(SCHEMAS_DIR, name)


CONFIG_REL = evo_rel(CONFIG_FILE)
TIMELINE_REL = evo_rel(TIMELINE_DIR)


# -------------------------------------------------------------------------------- temporary
def is_temp_name(name: str) -> bool:
    """Whether ``name`` is a temporary file left by (or in the middle of) an atomic write."""
    return name.startswith(".") or name.endswith(TEMP_SUFFIX)


def temp_prefix(target_name: str) -> str:
    """The start of the temporary file names of an atomic write of ``target_name``."""
    return f".{target_name}."


# --------------------------------------------------------------------------------- timeline
REQUESTED = "requested"
INFLIGHT = "inflight"
COMPLETED = "completed"
_PENDING_STATES = (REQUESTED, INFLIGHT)

_TIMELINE = re.compile(rf"(?P<instant>{INSTANT_PATTERN})\.(?P<action>[a-z][a-z0-9_]*)"
                       rf"(?:\.(?P<state>{REQUESTED}|{INFLIGHT}))?")


@dataclass(frozen=True)
class TimelineName:
    """A timeline file name: an action at an instant, in a state (``requested``, ``inflight``
    or ``completed``)."""

    instant: str
    action: str
    state: str


def timeline_file(instant: str, action: str, state: str = COMPLETED) -> str:
    """``<instant>.<action>`` (completed) or ``<instant>.<action>.<state>``."""
    return f"{instant}.{action}" if state == COMPLETED else f"{instant}.{action}.{state}"


@functools.lru_cache(maxsize=1 << 16)
def parse_timeline_file(name: str) -> TimelineName | None:
    """The instant, action and state of a timeline file name, or None (cached: the timeline is
    listed and parsed on every commit, and its names never change meaning)."""
    m = _TIMELINE.fullmatch(_last(name))
    if m is None:
        return None
    state = m["state"]
    if state is None and m["action"] in _PENDING_STATES:
        return None  # "<instant>.requested" names no action
    return TimelineName(m["instant"], m["action"], state or COMPLETED)


def timeline_prefix(instant: str) -> str:
    """The start of every timeline file name of ``instant``."""
    return f"{instant}."


# ---------------------------------------------------------------------------------- schemas
SCHEMA = "schema"
LAYOUT = "layout"
SCHEMA_SUFFIX = f".{SCHEMA}.json"
LAYOUT_SUFFIX = f".{LAYOUT}.json"
_SCHEMA = re.compile(rf"(?P<version>{INSTANT_PATTERN})\.(?P<kind>{SCHEMA}|{LAYOUT})\.json")


@dataclass(frozen=True)
class SchemaName:
    """A file of the schemas folder: a version id and its kind (``schema`` or ``layout``)."""

    version: str
    kind: str


def schema_file(version: str) -> str:
    """``<version>.schema.json``: a schema version."""
    return f"{version}{SCHEMA_SUFFIX}"


def layout_file(version: str) -> str:
    """``<version>.layout.json``: the physical layout of a schema version."""
    return f"{version}{LAYOUT_SUFFIX}"


def parse_schema_file(name: str) -> SchemaName | None:
    """The version and kind of a schema or layout file name, or None."""
    m = _SCHEMA.fullmatch(_last(name))
    return None if m is None else SchemaName(m["version"], m["kind"])


# ------------------------------------------------------------------------------- data files
DATA_SUFFIX = ".parquet"
FILE_ID_LENGTH = 20
_DATA = re.compile(rf"(?P<file_id>.+)_(?P<task>[0-9]+)_(?P<instant>{INSTANT_PATTERN})\.parquet")


@dataclass(frozen=True)
class DataFileName:
    """A data file name: a random file id, the task that wrote it and the writing instant."""

    file_id: str
    task: int
    instant: str


def new_file_id() -> str:
    """A fresh random file id (20 hex digits)."""
    return uuid.uuid4().hex[:FILE_ID_LENGTH]


def data_file_name(instant: str, task: int, file_id: str | None = None) -> str:
    """``<file-id>_<task>_<instant>.parquet`` (a fresh file id unless given)."""
    return f"{file_id or new_file_id()}_{task}_{instant}{DATA_SUFFIX}"


def parse_data_file(name: str) -> DataFileName | None:
    """The file id, task and instant of a data file name, or None."""
    m = _DATA.fullmatch(_last(name))
    return None if m is None else DataFileName(m["file_id"], int(m["task"]), m["instant"])


def named_with_instant(path: str, instant: str) -> bool:
    """Whether the data file at ``path`` carries ``instant`` in its name (evonb wrote it in
    that commit; files adopted by a conversion keep the names they had)."""
    return path.endswith(f"_{instant}{DATA_SUFFIX}")


def partition_path(partition: str, name: str) -> str:
    """The relative path of a file ``name`` in ``partition`` (``""``: the table root)."""
    return f"{partition}/{name}" if partition else name


# ------------------------------------------------------------------------------- log blocks
LOG_FORMATS = ("avro", "parquet")
_LOG = re.compile(rf"\.(?P<stem>.+)\.log\.(?P<instant>{INSTANT_PATTERN})_(?P<task>[0-9]+)"
                  r"\.(?P<fmt>avro|parquet)")
_HALF_LOG = re.compile(rf"\..+\.log\.(?P<instant>{INSTANT_PATTERN})_.*\.tmp")


class LogBlockName(NamedTuple):
    """A log block name: the stem of its base file, the writing instant, task and format."""

    base_stem: str
    instant: str
    task: int
    fmt: str


def log_block_name(base_stem: str, instant: str, task: int, fmt: str) -> str:
    """``.<base-stem>.log.<instant>_<task>.<fmt>``."""
    return f".{base_stem}.log.{instant}_{task}.{fmt}"


def log_block_path(base: str, instant: str, task: int, fmt: str) -> str:
    """The relative path of the log block of the base file ``base`` (a relative path) written
    by ``instant`` in ``task``: next to its base file."""
    p = PurePosixPath(base)
    name = log_block_name(p.stem, instant, task, fmt)
    return str(p.parent / name) if str(p.parent) not in ("", ".") else name


def parse_log_block(name: str) -> LogBlockName | None:
    """``(base stem, instant, task, format)`` of a log block name, or None."""
    m = _LOG.fullmatch(_last(name))
    if m is None:
        return None
    return LogBlockName(m["stem"], m["instant"], int(m["task"]), m["fmt"])


def log_block_temp(path: str, attempt: int) -> str:
    """Where attempt ``attempt`` of a task writes the log block at ``path`` before publishing
    it."""
    return f"{path}.{attempt}{TEMP_SUFFIX}"


def parse_log_block_temp(name: str) -> str | None:
    """The instant of a half-written log block (:func:`log_block_temp`), or None."""
    m = _HALF_LOG.fullmatch(_last(name))
    return None if m is None else m["instant"]


# ---------------------------------------------------------------------------------- staging
_PART = re.compile(r"part-(\d+)")


def staged_part_name(index: int) -> str:
    """The name of the ``index``-th file evonb stages itself (compaction)."""
    return f"part-{index:05d}{DATA_SUFFIX}"


def staged_task(name: str) -> int:
    """The task that wrote a staged file (Spark's ``part-<task>-...``; 0 if it does not say)."""
    m = _PART.match(_last(name))
    return int(m.group(1)) if m else 0


__all__ = [
    "COMPLETED",
    "CONFIG_FILE",
    "CONFIG_REL",
    "DATA_SUFFIX",
    "EVO_DIR",
    "INFLIGHT",
    "INSTANT",
    "INSTANT_PATTERN",
    "LAYOUT",
    "LAYOUT_SUFFIX",
    "LOCK_FILE",
    "LOG_FORMATS",
    "REQUESTED",
    "RETRIES_DIR",
    "SCHEMA",
    "SCHEMAS_DIR",
    "SCHEMA_SUFFIX",
    "STAGING_DIR",
    "TEMP_SUFFIX",
    "TIMELINE_DIR",
    "TIMELINE_REL",
    "DataFileName",
    "LogBlockName",
    "SchemaName",
    "TimelineName",
    "data_file_name",
    "evo_rel",
    "is_temp_name",
    "layout_file",
    "log_block_name",
    "log_block_path",
    "log_block_temp",
    "named_with_instant",
    "new_file_id",
    "parse_data_file",
    "parse_log_block",
    "parse_log_block_temp",
    "parse_schema_file",
    "parse_timeline_file",
    "partition_path",
    "schema_file",
    "schemas_rel",
    "staged_part_name",
    "staged_task",
    "temp_prefix",
    "timeline_file",
    "timeline_prefix",
    "timeline_rel",
]
