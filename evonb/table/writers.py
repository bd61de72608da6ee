"""Who is writing: every attempt records its host, process id and process start time in its
requested plan, so that recovery rolls back only attempts whose process is gone."""

from __future__ import annotations

import functools
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, from ``/proc``), or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


@functools.lru_cache(maxsize=8)
def _own_start(pid: int) -> str | None:
    """This process's start time, read once per pid (a forked child has its own): it never
    changes, and reading ``/proc`` costs milliseconds on every commit."""
    return _process_start(pid)


def writer_info() -> dict[str, Any]:
    """Who is writing: recorded in the requested plan of every write and service."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "pid_start": _own_start(pid),
            "started": datetime.now(UTC).isoformat(timespec="milliseconds")}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def writer_gone(writer: dict[str, Any] | None) -> bool:
    """Whether the process that recorded ``writer`` is known to be gone (same host only)."""
    if not writer or writer.get("host") != socket.gethostname():
        return False
    try:
        pid = int(writer["pid"])
    except (KeyError, TypeError, ValueError):
        return False
    if not _pid_alive(pid):
        return True
    recorded = writer.get("pid_start")
    return recorded is not None and _process_start(pid) not in (None, recorded)


__all__ = ["writer_gone", "writer_info"]
