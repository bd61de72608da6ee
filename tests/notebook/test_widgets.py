"""The widgets: schema diff, timeline and progress bar, live and as their HTML/text fallbacks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from evonb.notebook import JobProgress, SchemaDiffWidget, TimelineWidget
from evonb.schema import Schema, SchemaUpdate, diff
from evonb.schema.diffing import KINDS

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def every_kind():
    """A diff with one change of every kind."""
    before = Schema.from_ddl(
        "id bigint not null, name string, loc struct<lat:double,lon:double>, score int, "
        "note string comment 'old', flag boolean")
    after = (SchemaUpdate(before)
             .add_column("loc.alt", "double", after="lat")
             .drop_column("flag")
             .rename_column("name", "full_name")
             .update_column_type("score", "bigint")
             .move_first("note")
             .set_nullable("id", True)
             .set_default("score", 0)
             .set_comment("note", "new")
             .apply(version_id="20261122101500000"))
    change = diff(before, after)
    assert change.kinds == list(KINDS)
    return change


def _field_ids(html: str) -> list[int]:
    return [int(m) for m in re.findall(r'data-field-id="(\d+)"', html)]


def test_diff_widget_shows_both_trees_with_ids_and_every_kind(every_kind):
    widget = SchemaDiffWidget(every_kind, title="ALTER TABLE t")
    html = widget.fallback_html()
    for kind in KINDS:
        assert f"evonb-kind-{kind}" in html
    before_ids = {i.field.id for i in every_kind.before._infos}
    after_ids = {i.field.id for i in every_kind.after._infos}
    assert set(_field_ids(widget._before.value)) == before_ids
    assert set(_field_ids(widget._after.value)) == after_ids
    assert "renamed (was name)" in widget._after.value
    assert "retyped (was int)" in widget._after.value
    assert 'data-kinds="dropped"' in widget._before.value
    assert 'data-kinds="added"' in widget._after.value
    text = widget.fallback_text()
    assert text.startswith("ALTER TABLE t\nSchemaDiff")
    assert "renamed  2: name -> full_name" in text


def test_only_changed_fields_hides_the_others_but_keeps_parents(every_kind):
    widget = SchemaDiffWidget(every_kind)
    lon = every_kind.after.find_id("loc.lon")
    loc = every_kind.after.find_id("loc")
    alt = every_kind.after.find_id("loc.alt")
    assert lon in _field_ids(widget._after.value)
    widget.only_changed.value = True
    shown = _field_ids(widget._after.value)
    assert lon not in shown
    assert loc in shown and alt in shown


def test_widgets_carry_html_and_text_for_frontends_without_widgets(every_kind):
    bundle = SchemaDiffWidget(every_kind)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", WIDGET_MIME}
    assert "SchemaDiff" in bundle["text/plain"]
    assert 'class="evonb-diff"' in bundle["text/html"]


def test_empty_diff_says_so():
    s = Schema.from_ddl("a int")
    widget = SchemaDiffWidget(diff(s, s))
    assert "no changes" in widget.fallback_html()


# ------------------------------------------------------------------------------ timeline
@pytest.mark.spark
def test_timeline_selection_shows_schema_change_and_data_then(trips, spark):
    trips.alter("ALTER TABLE trips RENAME COLUMN rider TO passenger")
    trips.write(spark.createDataFrame([(4, "dave", 15.0, "rome", 2)],
                                      "trip_id bigint, passenger string, fare double, "
                                      "city string, ts bigint"), mode="upsert")
    history = trips.history()
    widget = TimelineWidget(trips, preview_rows=10)
    assert widget.selected.instant == history[-1].instant  # the latest, first in the list
    assert [v for _, v in widget.selector.options] == [c.instant for c in reversed(history)]

    created, written, altered = history[0], history[1], history[2]
    widget.select(created.instant)
    assert "created with this schema" in widget._change.value
    assert "0 rows" in repr(widget.preview(created, "commit")) or \
        len(widget.preview(created, "commit").rows) == 0

    widget.select(written.instant)
    assert ">rider<" in widget._schema.value
    assert "No schema change" in widget._change.value
    assert "<th>rider</th>" in widget._preview.value
    widget.mode.value = "latest"
    assert "<th>passenger</th>" in widget._preview.value
    assert "dave" not in widget._preview.value  # data as of then, in today's schema

    widget.select(altered.instant)
    assert "renamed" in widget._change.value
    fallback = widget.fallback_html()
    assert all(c.instant in fallback for c in history)
    assert "History of trips" in widget.fallback_text()


@pytest.mark.spark
def test_timeline_says_what_a_rollback_deleted(trips, spark):
    trips.write(spark.createDataFrame([(4, "dave", 15.0, "rome", 2)],
                                      "trip_id bigint, rider string, fare double, "
                                      "city string, ts bigint"), mode="upsert")
    undone = trips.history()[-1].instant
    rolled = trips.rollback()
    widget = TimelineWidget(trips)
    label = {v: text for text, v in widget.selector.options}[rolled.instant]
    assert label.endswith(f"· rollback · schema v0 ({rolled.schema_version}) · rolled back "
                          f"{undone}; deleted 1 file and 0 schema versions")
    widget.select(rolled.instant)
    assert f"rolled back {undone}; deleted 1 file" in widget._details.value
    assert "rows written" not in widget._details.value
    written = trips.history()[1]
    widget.select(written.instant)  # a data commit keeps its files and rows
    assert written.files_added >= 1 and written.rows_written == 3
    assert "rows written" in widget._details.value
    assert f"+{written.files_added} / -0" in widget._details.value


@pytest.mark.spark
def test_timeline_preview_errors_stay_inside_the_widget(trips, monkeypatch):
    widget = TimelineWidget(trips, engine="spark")

    def broken(*args: Any, **kwargs: Any) -> Any:
        from evonb.errors import EvoError

        raise EvoError("cannot read this commit", hint="it was cleaned")

    monkeypatch.setattr(trips, "read", broken)
    widget.mode.value = "latest"
    assert "cannot read this commit" in widget._preview.value
    assert "it was cleaned" in widget._preview.value


# ------------------------------------------------------------------------------ progress
@pytest.mark.spark
def test_progress_is_fed_by_the_status_tracker(spark):
    sc = spark.sparkContext
    before = sc.getLocalProperty("spark.jobGroup.id")
    with JobProgress(spark, "summing", interval=0.05, show=False) as progress:
        spark.range(0, 200_000, numPartitions=4).selectExpr("sum(id)").collect()
        progress.report(1, 2, "stage one")
    assert progress.job_ids
    last = progress.samples[-1]
    assert last.total >= 4 and last.done == last.total and last.jobs == len(progress.job_ids)
    assert progress.widget.bar.value == 1.0
    assert progress.widget.bar.bar_style == "success"
    assert progress.widget.label.value.startswith("summing: done in ")
    assert sc.getLocalProperty("spark.jobGroup.id") == before
    assert "<progress" in progress.widget.fallback_html()


@pytest.mark.spark
def test_progress_reports_failure_and_stage_units(spark):
    with pytest.raises(ZeroDivisionError), JobProgress(spark, "failing", show=False) as p:
        p.report(1, 4, "rewrite")
        p.poll()
        assert "rewrite 1/4" in p.widget.label.value
        assert p.widget.bar.value == pytest.approx(0.25)
        raise ZeroDivisionError
    assert p.widget.bar.bar_style == "danger"
    assert "failed after" in p.widget.label.value
