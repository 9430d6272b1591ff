"""The one ``KEY=VALUE`` parser: every malformed item is one ConfigError naming the option."""

from __future__ import annotations

import pytest

from pipeline.config.config_files import parse_assignment, yaml_value
from pipeline.config.pairs import parse_pair, parse_pairs
from pipeline.errors import ConfigError


def test_pairs_are_split_stripped_and_converted_in_order():
    assert parse_pairs([" camA = a.csv", "camB=b=c.csv"], "--views") == {
        "camA": "a.csv",
        "camB": "b=c.csv",  # only the first '=' splits
    }
    assert parse_pairs(["camB=2", "camA=-1"], "--offset", int) == {"camB": 2, "camA": -1}
    assert list(parse_pairs(["z=1", "a=2"], "-O")) == ["z", "a"]
    assert parse_pairs(None, "--views") == {}
    assert parse_pairs(["n=100", "up=[0, 1]"], "-O", yaml_value) == {"n": 100, "up": [0, 1]}


@pytest.mark.parametrize(
    ("items", "kwargs", "message"),
    [
        (["unit"], {}, r"^--option 'unit': expected KEY=VALUE \(no '=' in it\)$"),
        (["=mm"], {}, r"^--option '=mm': expected KEY=VALUE; the name before '=' is empty$"),
        ([" = mm"], {}, r"the name before '=' is empty"),
        (["unit="], {}, r"^--option 'unit=': expected KEY=VALUE; the value after '=' is empty$"),
        (["unit=mm", "unit=cm"], {}, r"^--option 'unit=cm': 'unit' is given twice$"),
        (["two words=1"], {"key": "identifier"}, r"'two words' is not a name of letters"),
        (["a.b=1"], {"key": "identifier"}, r"'a.b' is not a name of letters"),
        (["camB=two"], {"value": int}, r"^--option 'camB=two': invalid literal for int"),
    ],
)
def test_each_mistake_is_one_error_naming_the_option_and_the_item(items, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        parse_pairs(items, "--option", **kwargs)


def test_the_form_shown_is_the_callers():
    with pytest.raises(ConfigError, match=r"^--views 'camA': expected NAME=FILE \(no '='"):
        parse_pairs(["camA"], "--views", form="NAME=FILE")
    with pytest.raises(ConfigError, match=r"^--rename 'a=': expected OLD=NEW; the value"):
        parse_pairs(["a="], "--rename", form="OLD=NEW")


def test_an_empty_value_only_where_allowed():
    assert parse_pair("solver.loss=", "--set", key="path", allow_empty=True) == (
        "solver.loss",
        "",
    )
    with pytest.raises(ConfigError, match="value after '=' is empty"):
        parse_pair("solver.loss=", "--set", key="path")


def test_set_assignments_use_the_same_parser():
    assert parse_assignment("solver.n_iterations=20") == {"solver": {"n_iterations": 20}}
    assert parse_assignment("schedule.cron=*/10 * * * *") == {
        "schedule": {"cron": "*/10 * * * *"}  # not YAML: kept as text
    }
    assert parse_assignment("body_plan=") == {"body_plan": None}
    with pytest.raises(ConfigError, match=r"^--set 'solver': expected key.path=value \(no"):
        parse_assignment("solver")
    with pytest.raises(ConfigError, match=r"^--set 'solver..x=1': 'solver..x' is not a dotted"):
        parse_assignment("solver..x=1")
