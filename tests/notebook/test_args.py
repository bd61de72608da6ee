"""Parsing subcommand arguments: positionals, clauses, options, commit references."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.errors import CommitNotFoundError
from evonb.notebook.args import literal, parse_args, positive_int, resolve_ref


def test_positionals_clauses_and_options():
    args = parse_args("trips as of '2026-11-22 10:15' schema latest --limit 5 --to df",
                      usage="u", clauses=("as of", "schema"),
                      options={"limit": positive_int, "to": str})
    assert args.positional == ["trips"]
    assert args.clauses == {"as of": "2026-11-22 10:15", "schema": "latest"}
    assert args.options == {"limit": 5, "to": "df"}


def test_clause_words_are_case_insensitive_and_options_take_equals():
    args = parse_args("t AS OF 20261122101500000 --limit=3", usage="u", clauses=("as of",),
                      options={"limit": positive_int})
    assert args.clauses["as of"] == "20261122101500000"
    assert args.options["limit"] == 3


@pytest.mark.parametrize("text, message", [
    ("t --limt 3", "did you mean --limit"),
    ("t --limit", "needs a value"),
    ("t --limit -2", "Bad value for --limit"),
    ("t as of", "'as of' needs a value"),
    ("t as of a as of b", "given twice"),
    ("t extra", "Unexpected words: 'extra'"),
    ("t 'unclosed", "Cannot read the arguments"),
])
def test_mistakes_are_usage_errors(text, message):
    with pytest.raises(UsageError, match=message):
        parse_args(text, usage="u", clauses=("as of",), options={"limit": positive_int},
                   max_positional=1)


def test_any_options_reads_literals_and_flags():
    args = parse_args("t --retain-commits 2 --upgrade-schema false --on-cast-error null --cascade",
                      usage="u", any_options=True, flags=("cascade",))
    assert args.options == {"retain_commits": 2, "upgrade_schema": False,
                            "on_cast_error": "null", "cascade": True}


def test_flag_rejects_a_value():
    with pytest.raises(UsageError, match="takes no value"):
        parse_args("t --cascade=1", usage="u", flags=("cascade",))


def test_literal():
    assert literal("3") == 3
    assert literal("2.5") == 2.5
    assert literal("True") is True
    assert literal("text") == "text"


def test_resolve_ref_by_position(warehouse):
    t = evonb.create_table(warehouse / "t", "a int")
    t.alter("ALTER TABLE t ADD COLUMN b int")
    first, last = (c.instant for c in t.history())
    assert resolve_ref(t, "@0") == first
    assert resolve_ref(t, "@-1") == last
    assert resolve_ref(t, f" {first} ") == first
    assert resolve_ref(t, "LATEST") == "latest"  # kept for the library ("today's schema")
    assert resolve_ref(t, "2026-11-22 10:15") == "2026-11-22 10:15"
    with pytest.raises(CommitNotFoundError, match="has 2 commits"):
        resolve_ref(t, "@5")
