"""``after_change``: functions registered by the layers above the format run after every
change of a table; one that raises is logged and does not stop the others."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from evonb.table import after_change


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(after_change, "_REGISTERED", {})
    return after_change._REGISTERED


def test_every_registered_function_runs_and_a_name_registered_again_replaces(registry):
    seen = []
    after_change.register("a", lambda t: seen.append(("a", t.root)))
    after_change.register("b", lambda t: seen.append(("b", t.root)))
    after_change.register("a", lambda t: seen.append(("a2", t.root)))
    after_change.table_changed(SimpleNamespace(root="/t"))
    assert seen == [("a2", "/t"), ("b", "/t")]


def test_a_failing_function_is_logged_and_the_others_still_run(registry, caplog):
    seen = []

    def boom(table):
        raise RuntimeError("broken hook")

    after_change.register("boom", boom)
    after_change.register("next", lambda t: seen.append(t.root))
    with caplog.at_level(logging.ERROR, logger=after_change.__name__):
        after_change.table_changed(SimpleNamespace(root="/t"))
    assert seen == ["/t"]
    assert "boom after a change of /t failed" in caplog.text
