"""Rows ``{env_id, seed, T}``: a budget per row (one T, a BudgetMix drawn per row, or a
progressive horizon over training steps), checked, with the trainer's turn cap read off them."""

from __future__ import annotations

import pytest

from turnbudget.adapters.rows import (
    ProgressiveHorizon,
    check_row,
    check_rows,
    task_rows,
    turn_cap,
)

ENV = "turnbudget/Maze-Easy-v0"
IDS = [ENV, "turnbudget/KeyQuest-Easy-v0"]


def test_rows_are_seed_major_with_one_budget():
    rows = task_rows(IDS, seeds=[4, 7], turn_budget=12)
    assert [(r["seed"], r["env_id"]) for r in rows] == [
        (4, IDS[0]),
        (4, IDS[1]),
        (7, IDS[0]),
        (7, IDS[1]),
    ]
    assert {r["T"] for r in rows} == {12}
    assert turn_cap(rows) == 12


def test_a_budget_mix_draws_each_rows_t_from_the_row_alone():
    rows = task_rows(IDS, seeds=30, turn_budget="uniform:5-40", seed=3)
    assert rows == task_rows(IDS, seeds=30, turn_budget="uniform:5-40", seed=3)  # reproducible
    assert len({r["T"] for r in rows}) > 5 and all(5 <= r["T"] <= 40 for r in rows)
    # A row's T depends on (seed, env id, task seed), not on which other rows were built.
    alone = task_rows([IDS[1]], seeds=[17], turn_budget="uniform:5-40", seed=3)
    assert alone == [r for r in rows if r["env_id"] == IDS[1] and r["seed"] == 17]
    assert rows != task_rows(IDS, seeds=30, turn_budget="uniform:5-40", seed=4)
    assert {r["T"] for r in task_rows(ENV, 40, {8: 1, 32: 1})} == {8, 32}


def test_a_progressive_horizon_grows_t_with_the_step_the_rows_are_read_at():
    schedule = ProgressiveHorizon(start=4, stop=10, steps=3)
    rows = task_rows(IDS, seeds=5, schedule=schedule, rows_per_step=4)
    assert [r["T"] for r in rows] == [4, 4, 4, 4, 6, 6, 6, 6, 8, 8]
    assert turn_cap(rows) == 8
    assert [schedule(step) for step in (0, 3, 99)] == [4, 10, 10]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "Give exactly one of `turn_budget`"),
        (
            {"turn_budget": 5, "schedule": ProgressiveHorizon(2, 4, 2)},
            "Give exactly one of `turn_budget`",
        ),
        ({"turn_budget": 5, "rows_per_step": 2}, "`rows_per_step` goes with `schedule`"),
        ({"schedule": ProgressiveHorizon(2, 4, 2)}, "Expect `rows_per_step` to be a positive int"),
        ({"schedule": 7, "rows_per_step": 1}, "Expect `schedule` to be a callable"),
        ({"schedule": lambda step: 0, "rows_per_step": 1}, "Expect `T` to be a positive int"),
        ({"turn_budget": 0}, "Expect `T` to be a positive int"),
        ({"turn_budget": "sometimes"}, "Cannot parse budget mix"),
        ({"turn_budget": 5, "seed": 1.5}, "Expect `seed` to be an int"),
    ],
)
def test_bad_budgets_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        task_rows(ENV, seeds=2, **kwargs)


def test_bad_ids_seeds_and_schedules_are_clear_errors():
    with pytest.raises(ValueError, match="Expect `env_ids` to be a registered id"):
        task_rows([], seeds=2, turn_budget=5)
    with pytest.raises(ValueError, match="Expect `env_ids` to be a registered id"):
        task_rows([ENV, 3], seeds=2, turn_budget=5)
    # (the messages named `tasks`, evaluate's argument, not this function's `seeds`)
    with pytest.raises(ValueError, match="Expect `seeds` to be a positive int"):
        task_rows(ENV, seeds=0, turn_budget=5)
    with pytest.raises(ValueError, match=r"Expect `seeds` to be distinct non-negative seeds"):
        task_rows(ENV, seeds=[2**40], turn_budget=5)
    with pytest.raises(ValueError, match="Expect `steps` to be a positive int"):
        ProgressiveHorizon(4, 8, steps=0)
    with pytest.raises(ValueError, match="Expect `step` to be an int >= 0"):
        ProgressiveHorizon(4, 8, steps=2)(-1)
    # past the ramp, however far (a step past 1e308 overflowed the division)
    assert ProgressiveHorizon(4, 8, steps=2)(10**400) == 8


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("maze", "Expect a row to be a mapping"),
        ({"env_id": ENV, "T": 3}, "got one without 'seed'"),
        ({"env_id": "", "seed": 0, "T": 3}, "Expect the row's `env_id` to be a registered id"),
        ({"env_id": ENV, "seed": -1, "T": 3}, r"Expect the row's `seed` to be an int >= 0"),
        ({"env_id": ENV, "seed": True, "T": 3}, r"Expect the row's `seed` to be an int >= 0"),
        ({"env_id": ENV, "seed": 0, "T": 2**40}, "Expect `T` to be at most"),
    ],
)
def test_bad_rows_are_clear_errors(row, message):
    with pytest.raises(ValueError, match=message):
        check_row(row)


def test_distinct_rows_refuse_a_repeated_task_and_name_both_rows():
    """Where each row is one task (verifiers' taskset, `evaluate_rows`), a repeated row made
    two tasks of one key and ran 2n rollouts of it; a trainer's dataset may repeat rows."""
    row = {"env_id": ENV, "seed": 3, "T": 6}
    rows = [row, {**row, "T": 7}, {**row, "prompt": "extra keys are not the task"}]
    assert check_rows(rows) == [row, {**row, "T": 7}, row]  # (a dataset's rows, as they are)
    with pytest.raises(ValueError, match=r"Expect distinct rows .* row 2 repeating row 0: .*`n`"):
        check_rows(rows, distinct=True)
    assert check_rows(rows[:2], distinct=True) == rows[:2]  # (another T is another task)


def test_turn_cap_needs_rows():
    with pytest.raises(ValueError, match="Expect at least one row"):
        turn_cap([])


def test_the_old_budget_keyword_still_works_and_warns():
    """``task_rows(budget=)`` is ``turn_budget=``'s old name (issue 25: one name per idea)."""
    with pytest.warns(DeprecationWarning, match=r"task_rows\(budget=\) is deprecated"):
        assert task_rows(ENV, seeds=2, budget=7) == task_rows(ENV, seeds=2, turn_budget=7)
    with pytest.raises(TypeError, match="pass `turn_budget`"):
        task_rows(ENV, seeds=2, turn_budget=7, budget=7)


def test_the_turn_cap_leaves_room_for_refused_calls():
    """A call refused before the game (an unknown tool, arguments that are not the tool's)
    spends one of the trainer's iterations but no turn: ``slack`` is room for them."""
    rows = task_rows("turnbudget/Maze-Easy-v0", seeds=2, turn_budget=5)
    assert turn_cap(rows) == 5 and turn_cap(rows, slack=5) == 10
    for slack in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="slack"):
            turn_cap(rows, slack=slack)


def test_a_seed_past_what_the_game_takes_is_refused_with_the_rows():
    """TextWorld's games take 32-bit seeds: a row of seed 2**40 was accepted, then refused at
    reset, inside the trainer (TRL stopped mid-run; verifiers failed every rollout)."""
    row = {"env_id": "turnbudget/CoinCollector-Easy-v0", "seed": 2**40, "T": 5}
    with pytest.raises(ValueError, match=r"rows\[1\]\['seed'\] to be at most 4,294,967,295"):
        check_rows([{**row, "seed": 2**32 - 1}, row])
    maze = {"env_id": "turnbudget/Maze-Easy-v0", "seed": 2**40, "T": 5}
    assert check_rows([maze]) == [maze]
