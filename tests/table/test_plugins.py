"""Plug-ins by name: built-ins, entry points registered by installed packages, and names that
are neither (nothing named by a table is imported unless a package registered it)."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from evonb.errors import EvoError, UnknownPluginError
from evonb.table import plugins
from evonb.table.plugins import PluginKind, check_name, known_names, load, plugin_key

GROUP = "evonb.test_plugins"
KIND = PluginKind("test plug-in", "evonb.test.plugin", GROUP, frozenset({"builtin"}), "builtin")


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    eps = [EntryPoint("Ordered", "collections:OrderedDict", GROUP),
           EntryPoint("not-callable", "math:pi", GROUP),
           EntryPoint("missing", "evonb_no_such_module:Thing", GROUP),
           EntryPoint("other", "collections:Counter", "another.group")]
    monkeypatch.setattr(plugins, "entry_points",
                        lambda group: [ep for ep in eps if ep.group == group])


def test_names_are_trimmed_lower_cased_and_default():
    assert plugin_key("  Strict ", "default") == "strict"
    assert plugin_key(None, "default") == plugin_key("", "default") == "default"
    assert check_name(KIND, None) == "builtin"
    assert check_name(KIND, " ORDERED ") == "ordered"
    assert known_names(KIND) == ["builtin", "missing", "not-callable", "ordered"]


def test_an_unknown_name_or_a_module_path_is_refused_without_importing():
    with pytest.raises(UnknownPluginError) as err:
        check_name(KIND, "os:system")
    assert err.value.known == ["builtin", "missing", "not-callable", "ordered"]
    assert "modules are never loaded" in str(err.value.hint)
    with pytest.raises(UnknownPluginError):
        load(KIND, "other")  # registered in another group only


def test_load_imports_a_registered_entry_point_and_checks_it():
    from collections import OrderedDict

    assert load(KIND, "Ordered") is OrderedDict
    with pytest.raises(EvoError, match="is not a class or callable"):
        load(KIND, "not-callable")
    with pytest.raises(EvoError, match="Cannot load test plug-in 'missing'"):
        load(KIND, "missing")
