"""Rows: what one example carries to a trainer's environment, ``{"env_id", "seed", "T"}``.

A row names a task (a registered id and a reset seed) and the turn budget of
its episodes. Trainers repeat a row for every member of a group (TRL's GRPO
repeats it ``num_generations`` times, verifiers runs ``num_rollouts`` of it), so
every attempt of a group starts from the same state and plays under the same
budget. `task_rows` builds rows with a budget per row: one T, a BudgetMix
drawn per row, or a progressive horizon that grows T over training steps.

Example:
    >>> rows = task_rows(["turnbudget/Maze-Easy-v0"], seeds=2, turn_budget=8)
    >>> rows
    [{'env_id': 'turnbudget/Maze-Easy-v0', 'seed': 0, 'T': 8}, {'env_id': 'turnbudget/Maze-Easy-v0', 'seed': 1, 'T': 8}]
    >>> turn_cap(rows)
    8
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np

from turnbudget._checks import (
    MAX_SEED,
    brief,
    check_positive_int,
    check_seed,
    check_turn_budget,
    is_int,
    is_listlike,
    is_real,
    renamed,
)
from turnbudget.eval.run.plan import derive_seed, task_seeds
from turnbudget.wrappers.sample_turn_budget import BudgetMix, BudgetMixLike

__all__ = [
    "ROW_KEYS",
    "ProgressiveHorizon",
    "check_distinct",
    "check_row",
    "check_rows",
    "task_rows",
    "turn_cap",
]

#: The keys of a row: the registered id, the reset seed and the turn budget T.
ROW_KEYS = ("env_id", "seed", "T")
#: The most env ids rows may be made of (each is made once, to check it).
MAX_ENV_IDS = 10_000


@dataclass(frozen=True)
class ProgressiveHorizon:
    """A progressive-horizon schedule: T grows linearly from ``start`` to ``stop`` over ``steps``.

    ``schedule(step)`` is the budget of the rows a trainer consumes at optimizer
    step ``step`` (0-based); from ``steps`` on it stays at ``stop``.

    Example:
        >>> schedule = ProgressiveHorizon(start=4, stop=16, steps=4)
        >>> [schedule(step) for step in range(6)]
        [4, 7, 10, 13, 16, 16]
    """

    start: int
    stop: int
    steps: int

    def __post_init__(self) -> None:
        check_turn_budget(self.start, "start")
        check_turn_budget(self.stop, "stop")
        check_positive_int(self.steps, "steps")

    def __call__(self, step: int) -> int:
        if not is_int(step) or step < 0:
            raise ValueError(f"Expect `step` to be an int >= 0, got {brief(step)}")
        if step >= self.steps:  # (past the ramp: no division, which overflows past 1e308)
            return self.stop
        fraction = step / self.steps
        return round(self.start + (self.stop - self.start) * fraction)


def task_rows(
    env_ids: str | Sequence[str],
    seeds: int | Iterable[int],
    turn_budget: BudgetMixLike | None = None,
    *,
    schedule: Callable[[int], int] | None = None,
    rows_per_step: int | None = None,
    seed: int = 0,
    budget: BudgetMixLike | None = None,
) -> list[dict[str, Any]]:
    """One row per (task seed, env id), seed-major, each with its turn budget T.

    Give exactly one of ``turn_budget`` and ``schedule``:

    - ``turn_budget=T`` (an int): every row plays under T.
    - ``turn_budget=<a BudgetMix>`` (or anything `BudgetMix.coerce` accepts:
      ``"uniform:5-40"``, ``[8, 16, 32]``, ``{8: 2, 32: 1}``): each row draws
      its own T, from a generator seeded by ``(seed, env_id, task seed)``, so a
      row's T does not depend on the other rows.
    - ``schedule`` (a callable ``step -> T``, e.g. `ProgressiveHorizon`) with
      ``rows_per_step``: row ``i`` gets ``schedule(i // rows_per_step)``. The
      rows only line up with the optimizer steps if the trainer reads them in
      order (TRL: ``GRPOConfig(shuffle_dataset=False)``, and
      `turnbudget.adapters.trl.rows_per_step` for ``rows_per_step``).

    Args:
        env_ids: One registered id or several.
        seeds: The task seeds: a count ``m`` (seeds ``0..m-1``) or a list of distinct seeds,
            each at most 2,147,483,647 (as `turnbudget.eval.evaluate` takes them).
        turn_budget: The budget of every row, or a BudgetMix each row draws from.
        schedule: A progressive horizon: ``step -> T``.
        rows_per_step: Rows the trainer consumes per optimizer step (with ``schedule``).
        seed: Seeds the BudgetMix draws.
        budget: Deprecated: the old name of ``turn_budget`` (warns; removed in the next release).

    Example:
        >>> [row["T"] for row in task_rows("turnbudget/Maze-Easy-v0", seeds=4,
        ...     schedule=ProgressiveHorizon(4, 8, steps=1), rows_per_step=2)]
        [4, 4, 8, 8]
        >>> sorted({row["T"] for row in task_rows("turnbudget/Maze-Easy-v0", 40, [8, 16])})
        [8, 16]
    """
    ids = _check_env_ids(env_ids)
    budget = renamed(turn_budget, budget, "turn_budget", "budget", "task_rows")
    task_list = task_seeds(seeds, "seeds")
    if isinstance(budget, (bool, np.bool_)) or (is_real(budget) and not is_int(budget)):
        raise ValueError(
            f"Expect `turn_budget` to be a positive int T or a BudgetMix, got {brief(budget)}"
        )
    if (budget is None) == (schedule is None):
        raise ValueError(
            "Give exactly one of `turn_budget` (T, or a BudgetMix drawn per row) and `schedule` "
            f"(step -> T), got turn_budget={brief(budget)}, schedule={brief(schedule)}"
        )
    if schedule is not None:
        if not callable(schedule):
            raise ValueError(f"Expect `schedule` to be a callable step -> T, got {brief(schedule)}")
        per_step = check_positive_int(rows_per_step, "rows_per_step")
    elif rows_per_step is not None:
        raise ValueError(
            "`rows_per_step` goes with `schedule`; a fixed budget or a BudgetMix has no steps"
        )
    check_seed(seed, "seed")
    mix = None if is_int(budget) or budget is None else BudgetMix.coerce(budget)
    rows = []
    for task_seed in task_list:
        for env_id in ids:
            if schedule is not None:
                turns = schedule(len(rows) // per_step)
            elif mix is not None:
                turns = mix.sample(np.random.default_rng(derive_seed(seed, env_id, task_seed)))
            else:
                turns = budget
            rows.append({"env_id": env_id, "seed": task_seed, "T": check_turn_budget(turns, "T")})
    return rows


def _check_env_ids(env_ids: Any) -> list[str]:
    """``env_ids`` as a list of distinct ids, each registered and with a `TurnBudget` (made
    once here, so a bad id fails now rather than in the trainer)."""
    if isinstance(env_ids, str):
        ids = [env_ids]
    elif isinstance(env_ids, Iterable) and not isinstance(env_ids, (bytes, Mapping, Set)):
        # ordered (a set's order changes between processes: not one); read no further than
        # the most ids a list may hold (range(10**12) ran out of memory here)
        ids = list(itertools.islice(env_ids, MAX_ENV_IDS + 1))
        if len(ids) > MAX_ENV_IDS:
            raise ValueError(f"Expect at most {MAX_ENV_IDS:,} `env_ids`, got more")
    else:
        raise ValueError(
            f"Expect `env_ids` to be a registered id or a list of them, got {brief(env_ids)}"
        )
    if not ids or not all(isinstance(env_id, str) and env_id for env_id in ids):
        raise ValueError(
            f"Expect `env_ids` to be a registered id or a list of them, got {brief(env_ids)}"
        )
    made = _make_each(ids)
    ids = [made[env_id][0] for env_id in ids]  # (as the records name them)
    if len(set(ids)) != len(ids):
        raise ValueError(
            f"Expect `env_ids` to be distinct ids (of distinct games), got {brief(env_ids)}"
        )
    return ids


def check_row(row: Mapping[str, Any]) -> tuple[str, int, int]:
    """``(env_id, seed, T)`` of a row, checked; a row may carry other keys (a trainer's own).

    Example:
        >>> check_row({"env_id": "turnbudget/Maze-Easy-v0", "seed": 3, "T": 10, "prompt": []})
        ('turnbudget/Maze-Easy-v0', 3, 10)
        >>> check_row({"env_id": "turnbudget/Maze-Easy-v0", "seed": 3})
        Traceback (most recent call last):
        ...
        ValueError: Expect a row with keys 'env_id', 'seed' and 'T', got one without 'T' (keys: env_id, seed)
    """
    if not isinstance(row, Mapping):
        raise ValueError(
            f"Expect a row to be a mapping with keys env_id, seed and T, got {brief(row)}"
        )
    missing = [key for key in ROW_KEYS if key not in row]
    if missing:
        raise ValueError(
            "Expect a row with keys 'env_id', 'seed' and 'T', got one without "
            f"{', '.join(repr(k) for k in missing)} (keys: {_key_names(row)})"
        )
    env_id, seed = row["env_id"], row["seed"]
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"Expect the row's `env_id` to be a registered id, got {brief(env_id)}")
    if not is_int(seed) or not 0 <= seed <= MAX_SEED:
        raise ValueError(
            f"Expect the row's `seed` to be an int >= 0 (at most {MAX_SEED:,}), got {brief(seed)}"
        )
    return env_id, int(seed), check_turn_budget(row["T"], "T")


def _key_names(row: Mapping[Any, Any], shown: int = 10) -> str:
    """The first ``shown`` keys of ``row`` as a message may name them: a plain short name as
    it is, anything else quoted cut (`brief`). (All of them, by ``str``, made a message as long
    as a 1 MB key or a row of 100,000 keys, and an int key of 5,000 digits failed to print.)"""
    names = [
        key if isinstance(key, str) and key.isprintable() and len(key) <= 40 else brief(key)
        for key in itertools.islice(row, shown)
    ]
    more = len(row) - len(names)
    return ", ".join(names) + (f", ... ({more} more)" if more > 0 else "")


def check_rows(
    rows: Iterable[Mapping[str, Any]], *, distinct: bool = False
) -> list[dict[str, Any]]:
    """Each row checked (`check_row`) and cut to ``{env_id, seed, T}``; at least one, and
    every id made once, so that a row no episode could play fails here, not in a trainer.

    With ``distinct``, a row that repeats another (the same ``env_id``, ``seed`` and ``T``) is
    refused: where each row is one task (verifiers' taskset, whose task keys must be unique),
    a repeated row is the same task twice, and its rollouts are asked for by count (``n``).

    Example:
        >>> check_rows([{"env_id": "turnbudget/Maze-Easy-v0", "seed": 3, "T": 10, "prompt": []}])
        [{'env_id': 'turnbudget/Maze-Easy-v0', 'seed': 3, 'T': 10}]
    """
    if not is_listlike(rows):
        raise ValueError(f"Expect `rows` to be a list of rows, got {brief(rows)}")
    checked = [dict(zip(ROW_KEYS, check_row(row), strict=True)) for row in rows]
    if not checked:
        raise ValueError("Expect at least one row, got none")
    made = _make_each(list(dict.fromkeys(row["env_id"] for row in checked)))
    for i, row in enumerate(checked):  # (TextWorld's games take 32-bit seeds: refused at reset)
        row["env_id"], bound = made[row["env_id"]]
        if row["seed"] > bound:
            raise ValueError(
                f"Expect rows[{i}]['seed'] to be at most {bound:,} for {row['env_id']}, got "
                f"{row['seed']:,}"
            )
    if distinct:  # (by the ids the records name: "turnbudget/Maze-Easy" plays its -v0)
        check_distinct(checked)
    return checked


def check_distinct(rows: Iterable[Mapping[str, Any]]) -> None:
    """Refuse a checked row that repeats an earlier one (the same env id, seed and T).

    Example:
        >>> row = {"env_id": "turnbudget/Maze-Easy-v0", "seed": 3, "T": 10}
        >>> check_distinct([row, row])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Expect distinct rows (each is one task), got row 1 repeating row 0: ...
    """
    first: dict[tuple[Any, ...], int] = {}
    for index, row in enumerate(rows):
        key = tuple(row[name] for name in ROW_KEYS)
        if key in first:
            raise ValueError(
                f"Expect distinct rows (each is one task), got row {index} repeating row "
                f"{first[key]}: {brief(dict(zip(ROW_KEYS, key, strict=True)), 200)}; ask for "
                "more rollouts of a row by their count (`n`), not by repeating it"
            )
        first[key] = index


def _make_each(env_ids: Iterable[str]) -> dict[str, tuple[str, int]]:
    """Make each id once (a `GameSession` check): an id no episode could play fails now.
    Returns each id's registered id, as its records name it (``turnbudget/Maze-Easy`` plays
    ``turnbudget/Maze-Easy-v0``), and its largest seed (its game's ``max_seed``, else
    `MAX_SEED`)."""
    from turnbudget.adapters.session import GameSession

    probe = GameSession()
    try:
        return {env_id: (probe.spec_id(env_id), probe.max_seed(env_id)) for env_id in env_ids}
    finally:
        probe.close()


def turn_cap(rows: Iterable[Mapping[str, Any]], slack: int = 0) -> int:
    """The largest T of ``rows`` plus ``slack``: a trainer's own turn cap must be at least this.

    Set TRL's ``GRPOConfig(max_tool_calling_iterations=turn_cap(rows, slack))``: then a
    row's own T, enforced by the game, is what ends its episodes, not the trainer's cap,
    for an episode with at most ``slack`` refused calls. A call refused before it reaches
    the game (an unknown tool, arguments that are not the tool's) spends one of TRL's
    iterations but no turn: with ``slack=0`` one such call left an episode of the largest
    T unfinished a turn short.

    Example:
        >>> rows = [{"env_id": "turnbudget/Maze-Easy-v0", "seed": 0, "T": 6}]
        >>> turn_cap(rows), turn_cap(rows, slack=6)
        (6, 12)
    """
    if not is_listlike(rows):
        raise ValueError(f"Expect `rows` to be a list of rows, got {brief(rows)}")
    if not is_int(slack) or slack < 0:
        raise ValueError(f"Expect `slack` to be an int >= 0 (refused calls), got {brief(slack)}")
    caps = [check_row(row)[2] for row in rows]
    if not caps:
        raise ValueError("Expect at least one row, got none")
    return max(caps) + int(slack)
