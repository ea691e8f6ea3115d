"""The caller owns what it is given: editing any returned info (or array) never changes the run.

For every native id, under stacks with errors, records, shaping, a revealed budget and
discrete actions, one run leaves every returned value alone and another clears every list,
adds junk keys to every dict and zeroes every array it gets, on every turn. Both play the
same actions from the same seed: what each step returns (copied before the caller edits
it) must be the same, and so must the records.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from _support import native_env_ids

import turnbudget

STACKS = {
    "errors": {"errors": {"rate": 0.6}},
    "slips": {"errors": {"rate": 1.0, "kinds": ["slip"]}},
    "transients": {"errors": {"rate": 1.0, "kinds": ["transient"]}},
    "full": {
        "budget_mix": [12, 20], "errors": {"rate": 0.5}, "record": True,
        "process_reward": True, "reveal": "final=3",
    },
    "discrete": {"errors": {"rate": 0.5}, "record": True, "discrete_actions": 32},
}  # fmt: skip
TURNS = 24
SEEDS = (0, 1)


def vandalize(value: Any) -> None:
    """Change every mutable thing in ``value``, nested ones included (what a careless caller
    or agent might do to what it was given)."""
    if isinstance(value, dict):
        for item in list(value.values()):
            vandalize(item)
        value["junk"] = ["junk"]
        value.pop("won", None)
    elif isinstance(value, list):
        for item in value:
            vandalize(item)
        value.clear()
        value.append("dance")
    elif isinstance(value, set):
        value.clear()
    elif isinstance(value, np.ndarray) and value.flags.writeable:
        value[...] = 0


def comparable(value: Any) -> Any:
    """A deep copy that compares with ``==`` (arrays as lists)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.tolist())
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    return copy.deepcopy(value)


def choose(info: dict[str, Any], turn: int, discrete: bool) -> Any:
    """A deterministic mix of commands (optimal or not) from what the agent was shown."""
    commands = info.get("action_commands" if discrete else "admissible_actions") or []
    if discrete:
        return turn % max(1, len(commands))
    return sorted(commands)[turn % len(commands)] if commands else "look"


def play(env_id: str, options: dict[str, Any], seed: int, actions: list | None, mutate: bool):
    """Returns (what each call returned, copied at once; the actions played; the records)."""
    env = turnbudget.make(env_id, **options)
    discrete = "discrete_actions" in options
    seen, played = [], []
    obs, info = env.reset(seed=seed)
    seen.append(comparable((obs, info)))
    if mutate:
        vandalize(info)
    for turn in range(TURNS):
        action = choose(seen[-1][-1], turn, discrete) if actions is None else actions[turn]
        played.append(action)
        result = env.step(action)
        seen.append(comparable(result))
        if mutate:
            vandalize(result[4])
            if isinstance(result[0], np.ndarray):
                vandalize(result[0])
        if result[2] or result[3]:
            obs, info = env.reset()
            seen.append(comparable((obs, info)))
            if mutate:
                vandalize(info)
            if actions is None:
                break
    records = None
    if "record" in options:
        records = comparable(env.get_wrapper_attr("records"))
    env.close()
    return seen, played, records


@pytest.mark.parametrize("stack", list(STACKS))
@pytest.mark.parametrize("env_id", native_env_ids())
def test_editing_what_a_step_returns_changes_nothing(env_id, stack):
    options = STACKS[stack]
    for seed in SEEDS:
        clean, actions, clean_records = play(env_id, options, seed, None, mutate=False)
        actions += [actions[-1]] * (TURNS - len(actions))  # (replayed past a reset the same)
        again, _, _ = play(env_id, options, seed, actions, mutate=False)
        edited, _, edited_records = play(env_id, options, seed, actions, mutate=True)
        assert edited == again, (env_id, stack, seed)
        assert edited[: len(clean)] == clean
        if clean_records is not None:
            _, _, again_records = play(env_id, options, seed, actions, mutate=False)
            assert edited_records == again_records


def test_editing_the_admissible_list_cannot_steer_a_slip_or_a_transient():
    """The reported cases: the list in info was the one the next error read."""
    env = turnbudget.make("turnbudget/Maze-Easy-v0", errors={"rate": 1.0, "kinds": ["slip"]})
    _, info = env.reset(seed=0)
    info["admissible_actions"].clear()
    info["admissible_actions"].append("dance")
    obs, _, _, _, info = env.step("dance")
    assert obs.startswith("Your hand slips") and info["injected_error"]["applied"]

    env = turnbudget.make("turnbudget/Maze-Easy-v0", errors={"rate": 1.0, "kinds": ["transient"]})
    _, info = env.reset(seed=0)
    info["admissible_actions"].append("dance")
    _, _, _, _, info = env.step("dance")
    assert info["valid_action"] is False
    info["admissible_actions"].append("sing")
    _, _, _, _, info = env.step("sing")
    assert info["valid_action"] is False


@pytest.mark.parametrize("errors", [None, {"schedule": {1: "transient"}}])
def test_listing_the_command_it_plays_cannot_change_how_it_is_judged(errors):
    """The records kept the caller's own list of admissible commands: a caller that added the
    spelling it then played ('n', another spelling of 'go north') had that command taken for a
    listed one and left unjudged, so the same play was recorded as not optimal."""
    optimal = []
    for append in (False, True):
        env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=2, errors=errors, record=True)
        _, info = env.reset(seed=0)
        assert "go north" in env.unwrapped.optimal_actions()
        if append:
            info["admissible_actions"].append("n")
        env.step("n")
        env.step("look")  # (the records are written when the episode ends)
        steps = [r for r in env.get_wrapper_attr("records") if r["record"] == "step"]
        optimal.append(steps[0]["optimal"])
        env.close()
    assert optimal[0] is True and optimal[1] is True
