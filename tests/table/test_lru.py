"""``LRU``: a bounded mapping that drops the least recently used entry first."""

from __future__ import annotations

from evonb.table.lru import LRU


def test_the_least_recently_set_entry_goes_first():
    cache: LRU[str, int] = LRU(2)
    cache["a"] = 1
    cache["b"] = 2
    cache["c"] = 3
    assert list(cache) == ["b", "c"]


def test_a_get_that_finds_an_entry_makes_it_the_most_recent():
    cache: LRU[str, int] = LRU(2)
    cache["a"] = 1
    cache["b"] = 2
    assert cache.get("a") == 1
    cache["c"] = 3
    assert list(cache) == ["a", "c"]
    assert cache.get("b") is None and cache.get("b", -1) == -1


def test_setting_an_existing_key_replaces_and_refreshes_it():
    cache: LRU[str, int] = LRU(2)
    cache["a"] = 1
    cache["b"] = 2
    cache["a"] = 10
    cache["c"] = 3
    assert dict(cache) == {"a": 10, "c": 3}
