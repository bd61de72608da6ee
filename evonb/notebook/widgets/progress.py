"""A progress bar for long Spark jobs, fed by the status tracker polled in a thread."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import ipywidgets as W

import evonb.notebook.html as H
from evonb.notebook.widgets.base import FallbackMixin

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Sample:
    """One look at the jobs of the block: tasks done, running and in all, and the job count."""

    done: int
    active: int
    total: int
    jobs: int
    elapsed: float


class ProgressBar(FallbackMixin, W.HBox):
    """A bar and a label; renders as an HTML ``<progress>`` or text without a widget frontend."""

    def __init__(self, description: str) -> None:
        self.description_text = description
        self.bar = W.FloatProgress(value=0.0, min=0.0, max=1.0, bar_style="info",
                                   layout=W.Layout(width="320px"))
        self.label = W.Label(f"{description}: starting")
        super().__init__(children=[self.bar, self.label])
        self.add_class("evonb-progress")

    def fallback_html(self) -> str:
        return (f'<div style="{H.FONT}"><progress value="{self.bar.value:.3f}" max="1" '
                f'style="width: 320px;"></progress> {H.e(self.label.value)}</div>')

    def fallback_text(self) -> str:
        return self.label.value


class JobProgress:
    """``with JobProgress(spark, "compacting trips"):`` shows a bar while the block's Spark
    jobs run. The block's jobs are tagged with a job group; a thread polls
    ``spark.sparkContext.statusTracker()`` for their stages' task counts."""

    def __init__(self, spark: SparkSession, description: str, *, interval: float = 0.25,
                 show: bool = True) -> None:
        self.spark = spark
        self.description = description
        self.interval = interval
        self.show = show
        self.group = f"evonb-{uuid.uuid4().hex[:12]}"
        self.samples: list[Sample] = []
        self.job_ids: set[int] = set()
        self.widget = ProgressBar(description)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle: Any = None
        self._started = 0.0
        self._saved: dict[str, str | None] = {}
        self.stage: tuple[int, int, str] | None = None
        self._shown = 0.0

    def __enter__(self) -> JobProgress:
        sc = self.spark.sparkContext
        for key in ("spark.jobGroup.id", "spark.job.description"):
            self._saved[key] = sc.getLocalProperty(key)
        sc.setJobGroup(self.group, self.description)
        self._started = time.monotonic()
        if self.show:
            from IPython.display import display

            self._handle = display(self.widget, display_id=True)
        self._thread = threading.Thread(target=self._run, name="evonb-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        sample = self.poll()
        sc = self.spark.sparkContext
        for key, value in self._saved.items():
            sc.setLocalProperty(key, value)  # type: ignore[arg-type]
        took = f"{sample.elapsed:.1f} s"
        jobs = f"{sample.jobs} Spark job{'s' if sample.jobs != 1 else ''}"
        if kind is None:
            self.widget.bar.value = 1.0
            self.widget.bar.bar_style = "success"
            self.widget.label.value = f"{self.description}: done in {took} ({jobs})"
        else:
            self.widget.bar.bar_style = "danger"
            self.widget.label.value = f"{self.description}: failed after {took} ({jobs})"
        if self._handle is not None:
            self._handle.update(self.widget)

    def report(self, done: int, total: int, stage: str) -> None:
        """A service's own progress (``progress(done, total, stage)`` callback): the bar then
        moves by the service's units, each filled in by its Spark tasks."""
        self.stage = (done, total, stage)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # the session may stop under us; the block reports errors
                return

    def poll(self) -> Sample:
        """Read the tracker once and update the bar."""
        tracker = self.spark.sparkContext.statusTracker()
        self.job_ids.update(tracker.getJobIdsForGroup(self.group))
        active_jobs = set(tracker.getActiveJobsIds())
        done = active = total = 0
        run_done = run_total = 0  # tasks of the jobs still running
        for job_id in sorted(self.job_ids):
            info = tracker.getJobInfo(job_id)
            for stage_id in (info.stageIds if info else ()):
                stage = tracker.getStageInfo(stage_id)
                finished = job_id not in active_jobs
                if stage is not None and not (finished and stage.numCompletedTasks == 0):
                    # (a finished job's stages that ran no task were skipped: not counted)
                    done += stage.numCompletedTasks
                    active += stage.numActiveTasks
                    total += stage.numTasks
                    if job_id in active_jobs:
                        run_done += stage.numCompletedTasks
                        run_total += stage.numTasks
        sample = Sample(done, active, total, len(self.job_ids),
                        time.monotonic() - self._started)
        self.samples.append(sample)
        prefix = self.description
        if self.stage is not None and self.stage[1]:
            units, count, name = self.stage
            running = run_done / run_total if run_total else 0.0
            fraction = (units + running) / count
            prefix += f" · {name} {units}/{count}"
        else:
            fraction = done / total if total else 0.0
        self._shown = max(self._shown, min(1.0, fraction))
        self.widget.bar.value = self._shown
        self.widget.label.value = (
            f"{prefix}: {done}/{total} tasks ({active} running) · "
            f"{sample.jobs} job{'s' if sample.jobs != 1 else ''} · {sample.elapsed:.1f} s")
        return sample
