"""The benchmark option parsers shared by every ``aidopt bench MODEL``."""

import pytest

from aidopt.bench.common import parse_choice_list, parse_float_list, parse_int_list, parse_sizes


def test_int_lists_take_ranges_scientific_notation_and_skip_blanks():
    assert parse_int_list("0-3,7,") == [0, 1, 2, 3, 7]
    assert parse_int_list("1000, 1e5") == [1000, 100000]


def test_float_lists_skip_blanks():
    assert parse_float_list("1,0.1, 1e-3,") == [1.0, 0.1, 0.001]


def test_sizes_and_bad_items_are_named():
    assert parse_sizes("100000x10,4e5x100") == [(100000, 10), (400000, 100)]
    with pytest.raises(ValueError, match="bad size '100000'"):
        parse_sizes("100000")
    with pytest.raises(ValueError):
        parse_int_list("1,a")


def test_choice_lists_skip_blanks_and_name_unknown_choices():
    assert parse_choice_list("a, b,", ("a", "b", "c"), "method") == ["a", "b"]
    with pytest.raises(SystemExit, match=r"unknown method\(s\): x, y; known: a, b"):
        parse_choice_list("a,x,y", ("a", "b"), "method")
