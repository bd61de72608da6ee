"""``spark``: the managed session's status and Spark UI link; stop, start and restart it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

import evonb.notebook.html as H
from evonb.notebook.args import split_words
from evonb.spark import session as managed
from evonb.spark.session import spark_log_path

if TYPE_CHECKING:  # pragma: no cover
    from evonb.notebook.context import Context

SPARK_USAGE = ("%evo spark [status | stop | start [--master URL] [--conf key=value ...] | "
               "restart [--master URL] [--conf key=value ...]]")


@dataclass
class SparkStatus:
    """The session as seen from the notebook (``running`` False when there is none)."""

    running: bool
    facts: list[tuple[str, str]] = field(default_factory=list)
    ui_url: str | None = None
    message: str = ""

    @classmethod
    def now(cls, message: str = "") -> SparkStatus:
        if not managed.is_running():
            return cls(False, [("state", "stopped")], None,
                       message or "No Spark session: the next command that needs one starts it.")
        spark = managed.session()
        sc = spark.sparkContext
        tracker = sc.statusTracker()
        facts = [("state", "running"), ("master", sc.master), ("application", sc.appName),
                 ("application id", sc.applicationId), ("Spark version", spark.version),
                 ("default parallelism", str(sc.defaultParallelism)),
                 ("active jobs", str(len(tracker.getActiveJobsIds())))]
        log = spark_log_path()
        if log.is_file() and log.stat().st_size:
            facts.append(("Spark log", str(log)))
        return cls(True, facts, managed.ui_url(), message)

    def _repr_html_(self) -> str:
        rows: list[tuple[str, str]] = list(self.facts)
        raw: frozenset[str] = frozenset()
        if self.ui_url:
            rows.append(("Spark UI", f'<a href="{H.e(self.ui_url)}" target="_blank" '
                                     f'rel="noopener">{H.e(self.ui_url)}</a>'))
            raw = frozenset({"Spark UI"})
        note = H.note_html(self.message) if self.message else ""
        return (f'<div class="evonb-spark" style="{H.FONT}"><b>Spark session</b>{note}'
                f"{H.kv_table(rows, raw=raw)}</div>")

    def __repr__(self) -> str:
        lines = ["Spark session"] + ([self.message] if self.message else [])
        lines += [f"  {k}: {v}" for k, v in self.facts]
        if self.ui_url:
            lines.append(f"  Spark UI: {self.ui_url}")
        return "\n".join(lines)


def start_session() -> None:
    """Start the managed session (its JVM console output going to :func:`spark_log_path`)."""
    if managed.is_running():
        return
    managed.session()  # its JVM console output goes to the Spark log


def _settings(words: list[str]) -> tuple[str | None, dict[str, str]]:
    master: str | None = None
    conf: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        if name in ("--master", "--conf"):
            if not eq:
                if i + 1 >= len(words):
                    raise UsageError(f"{name} needs a value. Usage: {SPARK_USAGE}")
                value = words[i + 1]
                i += 1
            if name == "--master":
                master = value
            else:
                key, sep, val = value.partition("=")
                if not sep or not key:
                    raise UsageError(f"--conf takes key=value, not {value!r}. "
                                     f"Usage: {SPARK_USAGE}")
                conf[key] = val
        else:
            raise UsageError(f"Unexpected {word!r}. Usage: {SPARK_USAGE}")
        i += 1
    return master, conf


def spark(ctx: Context, text: str) -> SparkStatus:
    """Show the session; ``stop``, ``start`` or ``restart`` it (with a new master/settings)."""
    words = split_words(text)
    action = words[0].lower() if words else "status"
    if action == "status":
        if len(words) > 1:
            raise UsageError(f"Usage: {SPARK_USAGE}")
        return SparkStatus.now()
    if action == "stop":
        if len(words) > 1:
            raise UsageError(f"Usage: {SPARK_USAGE}")
        was = managed.is_running()
        managed.stop()
        return SparkStatus.now("Stopped." if was else "Spark was not running.")
    if action in ("start", "restart"):
        master, conf = _settings(words[1:])
        if action == "start" and managed.is_running() and (master or conf):
            raise UsageError("Spark is running: use %evo spark restart to change its settings")
        if action == "restart":
            managed.stop()
        if master or conf:
            managed.configure(master=master, conf=conf)
        start_session()
        return SparkStatus.now("Restarted." if action == "restart" else "Started.")
    raise UsageError(f"Unknown action {action!r}. Usage: {SPARK_USAGE}")
