"""Progress of long table services: a callback ``progress(done, total, stage)``.

Compaction and rewrite call it once per stage and once per batch of file groups, so the notebook
layer can drive a progress bar. :class:`ProgressLog` records the calls (for tests and logs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, stage)``: ``done`` of ``total`` units of ``stage`` are finished."""


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """One progress report."""

    done: int
    total: int
    stage: str

    @property
    def fraction(self) -> float:
        """``done / total`` (1.0 when there is nothing to do)."""
        return self.done / self.total if self.total else 1.0


@dataclass
class ProgressLog:
    """A progress callback that keeps every event: ``t.compact(progress=log)``."""

    events: list[ProgressEvent] = field(default_factory=list)

    def __call__(self, done: int, total: int, stage: str) -> None:
        self.events.append(ProgressEvent(done, total, stage))

    @property
    def stages(self) -> list[str]:
        """The stages reported, in order, each once."""
        out: list[str] = []
        for e in self.events:
            if e.stage not in out:
                out.append(e.stage)
        return out


def report(progress: ProgressCallback | None, done: int, total: int, stage: str) -> None:
    """Call ``progress`` if there is one."""
    if progress is not None:
        progress(done, total, stage)


__all__ = ["ProgressCallback", "ProgressEvent", "ProgressLog", "report"]
