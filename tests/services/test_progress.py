"""Progress reports of the table services (:mod:`evonb.services.progress`): the callback is
called only when given, :class:`ProgressLog` keeps every event and each stage once."""

from __future__ import annotations

from evonb.services.progress import ProgressEvent, ProgressLog, report


def test_fraction_is_done_over_total_and_one_when_there_is_nothing_to_do():
    assert ProgressEvent(1, 4, "compact").fraction == 0.25
    assert ProgressEvent(4, 4, "compact").fraction == 1.0
    assert ProgressEvent(0, 0, "done").fraction == 1.0


def test_the_log_keeps_every_event_and_each_stage_once_in_order():
    log = ProgressLog()
    for done, total, stage in [(0, 2, "plan"), (0, 2, "compact"), (1, 2, "compact"),
                               (2, 2, "compact"), (2, 2, "done")]:
        report(log, done, total, stage)
    assert [(e.done, e.total, e.stage) for e in log.events] == [
        (0, 2, "plan"), (0, 2, "compact"), (1, 2, "compact"), (2, 2, "compact"),
        (2, 2, "done")]
    assert log.stages == ["plan", "compact", "done"]


def test_report_without_a_callback_does_nothing_and_with_one_passes_the_arguments():
    report(None, 1, 2, "compact")  # no callback: no error
    calls: list[tuple[int, int, str]] = []
    report(lambda *args: calls.append(args), 3, 7, "rewrite")
    assert calls == [(3, 7, "rewrite")]
