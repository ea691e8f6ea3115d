"""The shared argument checks and the module:attr loader (turnbudget._checks)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import turnbudget._checks as checks
from turnbudget._checks import (
    check_positive_int,
    check_probability,
    is_int,
    is_real,
    is_whole,
    load_object,
    normalize_weights,
)


def test_positive_int_accepts_python_and_numpy_ints_and_refuses_bools():
    assert check_positive_int(3, "n") == 3 and type(check_positive_int(np.int64(4), "n")) is int
    for bad in (0, -1, True, False, 2.0, "3", None):
        with pytest.raises(ValueError, match=r"Expect `n` to be a positive int, got "):
            check_positive_int(bad, "n")
    with pytest.raises(ValueError, match=r"Expect every turn in `schedule` to be a positive int"):
        check_positive_int(0, "schedule", subject="every turn in `schedule`")
    assert is_int(np.int32(1)) and not is_int(True) and not is_int(1.0)
    assert is_whole(3.0) and is_whole(np.int8(2)) and not is_whole(2.5) and not is_whole(True)
    assert not is_whole(math.inf) and not is_whole(math.nan)
    assert is_real(np.float32(0.5)) and is_real(1) and not is_real(False) and not is_real("1")


def test_probability_and_weights():
    assert check_probability(0, "rate") == 0.0 and check_probability(1.0, "rate") == 1.0
    for bad in (-0.1, 1.5, True, "0.5", math.nan):
        with pytest.raises(ValueError, match="Expect `rate` to be a number in"):
            check_probability(bad, "rate")
    assert normalize_weights(None, 4, per="kind") == (0.25,) * 4
    assert normalize_weights([1, 3], 2, per="value") == (0.25, 0.75)
    for bad, match in (
        ([1], "one weight per kind"),
        ([1, -1], "finite number >= 0"),
        ([1, math.inf], "finite number >= 0"),
        ([True, 1], "finite number >= 0"),
        ([0, 0], "positive sum"),
    ):
        with pytest.raises(ValueError, match=match):
            normalize_weights(bad, 2, per="kind")


def test_load_object():
    assert load_object("math:sqrt") is math.sqrt
    assert load_object("pathlib:Path.cwd") == Path.cwd
    for bad in ("math", "math:", ":sqrt", 3):
        with pytest.raises(ValueError, match="'module:attr'"):
            load_object(bad, what="game")  # type: ignore[arg-type]
    with pytest.raises(ImportError, match="no_such_module_xyz"):
        load_object("no_such_module_xyz:f")
    with pytest.raises(AttributeError, match="'math' has no attribute 'nope'"):
        load_object("math:nope")


def test_checks_is_a_leaf_module():
    tree = ast.parse(Path(checks.__file__).read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not any(name and name.startswith("turnbudget") for name in imported), imported


@pytest.mark.parametrize(
    "value", [np.timedelta64(5), np.timedelta64(5, "s"), np.datetime64(5, "s")]
)
def test_numpy_time_types_are_no_numbers(value):
    # (NumPy registers np.timedelta64 as a signed integer: numbers.Integral took it, so
    # turn_budget=np.timedelta64(5) was taken and a seed of one overflowed comparing with 2**64)
    assert not is_int(value) and not is_real(value) and not is_whole(value)
    with pytest.raises(ValueError, match=r"Expect `n` to be a positive int, got "):
        check_positive_int(value, "n")
    with pytest.raises(ValueError, match=r"Expect `seed` to be an int from 0 to "):
        checks.check_seed(value)
    with pytest.raises(ValueError, match=r"Expect `rate` to be a number in \[0, 1\]"):
        check_probability(value, "rate")


def test_python_and_numpy_ints_of_every_width_are_ints():
    values = [7, *(t(7) for t in (np.int8, np.int16, np.int32, np.int64)),
              *(t(7) for t in (np.uint8, np.uint16, np.uint32, np.uint64))]  # fmt: skip
    for value in values:
        assert is_int(value) and is_real(value) and is_whole(value), repr(value)
        assert check_positive_int(value, "n") == 7 and checks.check_seed(value) == 7
    assert checks.check_seed(np.uint64(2**64 - 1)) == checks.MAX_SEED


def test_a_negative_zero_probability_is_zero():
    """-0.0 kept its sign: ``oracle:-0.0`` was labelled oracle-eps-0 and was another agent
    than ``oracle:0``, so its run could not be resumed by the other."""
    import math

    from turnbudget.agents import make_agent
    from turnbudget.eval.run.plan import _agent_repr

    assert math.copysign(1.0, check_probability(-0.0, "rate")) == 1.0
    zero, negative = make_agent("oracle:0"), make_agent("oracle:-0.0")
    assert negative.name == zero.name and _agent_repr(negative) == _agent_repr(zero)
