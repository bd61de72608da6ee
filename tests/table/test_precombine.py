"""The precombine rule as data: its order of roles, and the rule bound to a caller's columns."""

from __future__ import annotations

from evonb.table.precombine import RULE, Role, SortKey, ordering, precombine_key


def test_the_rule_orders_live_then_precombine_then_commit_then_sequence():
    assert [t.role for t in RULE] == [Role.LIVE, Role.PRECOMBINE, Role.COMMIT, Role.SEQUENCE]
    assert all(t.descending and not t.nulls_first for t in RULE)


def test_ordering_binds_the_given_columns_in_rule_order_and_leaves_out_the_others():
    assert ordering(sequence="seq", precombine="ts", live="alive") == (
        SortKey("alive"), SortKey("ts"), SortKey("seq"))
    assert ordering() == ()


def test_precombine_key_is_the_larger_value_first_with_nulls_last():
    assert precombine_key("ts") == SortKey("ts", descending=True, nulls_first=False)
    assert precombine_key(None) is None
