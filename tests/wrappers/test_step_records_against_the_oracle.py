"""RecordStepOutcomes' step and episode records, derived again from the oracle at every step.

Each step is replayed on a copy of the game taken before it, and every judged field is
recomputed from the definitions in the docstring of `RecordStepOutcomes`, then compared with
what it recorded.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from _wrapper_stub import LineWorld

from turnbudget.eval.analysis import budget_counts
from turnbudget.wrappers import InjectErrors, RecordStepOutcomes, TurnBudget

NATIVE = [
    f"turnbudget/{game}-{level}-v0"
    for game in ("Maze", "KeyQuest", "Crafting", "Shop", "Sokoban")
    for level in ("Easy", "Medium", "Hard")
]
TS = (1, 5, 12, 100)


def _fresh(game):
    return copy.deepcopy(game)


def _distance(game) -> int | None:
    d = game.distance_to_goal()
    return None if d is None else int(d)


def _command(rng, game, info, epsilon: float) -> str:
    """An ε-oracle's command (sometimes upper-cased), a listed one, or one off the list."""
    if rng.random() >= epsilon and (best := _fresh(game).optimal_actions()):
        command = best[rng.integers(len(best))]
        return command.upper() if rng.random() < 0.2 else command
    if rng.random() < 0.15:
        return ["xyzzy", "", "look", "GO NORTH", "n", "inventory"][rng.integers(6)]
    listed = info["admissible_actions"]
    return listed[rng.integers(len(listed))] if listed else "look"


def _expected_step(game, inject, turn, command, seen, info, after) -> dict:
    """One step's fields from the game as it was before the step (``game``, a copy)."""
    before = _distance(game)
    best = game.optimal_actions()
    spelt = game.canonical_command(command)
    optimal = command in best or (spelt is not None and spelt in best)
    event = info.get("injected_error")
    kind = event["kind"] if event and event["applied"] else None
    replay, injected = _fresh(game), before
    if kind == "setback":
        replay.inject_setback(inject.turn_rng(turn))
        injected = _distance(replay)
        ran_valid = replay.step(command)[4]["valid_action"]
        valid = command in seen or spelt is not None or ran_valid
    elif kind in ("slip", "transient"):
        replay.step(event["replaced_action"] if kind == "slip" else "")
        valid = command in seen or spelt is not None
    else:
        valid = replay.step(command)[4]["valid_action"]
    assert _distance(replay) == after, "the replay on a copy reached another distance"
    executed = kind not in ("slip", "transient")
    raised = executed and injected is not None and (after is None or after > injected)
    effect = after - injected if executed and None not in (injected, after) else None
    increased = kind is not None and _increases(before, after if kind == "slip" else injected)
    return {
        "valid_action": valid, "optimal": optimal, "distance_before": before,
        "distance_after": after, "distance_injected": injected,
        "injection_increased": increased, "command_effect": effect,
        "wasted": executed and valid and not optimal and effect == 0,
        "error_self": raised and not optimal,
        # opened by the command: the agent's error, or one no raising injection covers
        "_command_opened": raised and (not optimal or not increased),
        "_setback": kind == "setback",
    }  # fmt: skip


def _increases(before, after) -> bool:
    return before is not None and (after is None or after > before)


def _play(env_id: str, seed: int, epsilon: float) -> tuple[list[dict], list[dict], dict]:
    inject = InjectErrors(gym.make(env_id, turn_budget=12), rate=0.35)
    env = RecordStepOutcomes(inject, budget_counts=TS)
    game, rng = env.unwrapped, np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    expected, open_errors, last_opened, done = [], [], False, False
    while not done:
        turn, copy, seen = len(expected) + 1, _fresh(game), info["admissible_actions"]
        command = _command(rng, game, info, epsilon)
        _, reward, terminated, truncated, info = env.step(command)
        done = terminated or truncated
        step = _expected_step(copy, inject, turn, command, seen, info, _distance(_fresh(game)))
        step["phase"] = (
            "after_error" if last_opened else "recovering" if open_errors else "on_track"
        )
        setback, command_opened, opened = step.pop("_setback"), step.pop("_command_opened"), []
        if step["injection_increased"]:  # (a setback's can be undone by the same turn's command)
            opened.append((turn if setback else turn + 1, step["distance_before"]))
        if command_opened:
            opened.append((turn + 1, step["distance_injected"]))
        open_errors += opened
        after, recoveries = step["distance_after"], []
        if after is not None:
            for start, target in list(open_errors):
                if turn >= start and after <= target:
                    recoveries.append(turn - start + 1)
                    open_errors.remove((start, target))
        last_opened = bool(opened)
        step.update(
            turn=turn, action=command, errors_opened=len(opened), recoveries=recoveries,
            won=bool(info["won"]), terminated=terminated, truncated=truncated,
            reward=float(reward),
        )  # fmt: skip
        expected.append(step)
    records = env.records
    return expected, records[:-1], {**records[-1], "_open": len(open_errors)}


@pytest.mark.parametrize("env_id", NATIVE)
def test_every_step_field_is_what_the_oracle_says(env_id):
    for seed, epsilon in ((0, 1.0), (1, 0.3), (2, 0.1)):
        expected, steps, episode = _play(env_id, seed, epsilon)
        assert len(steps) == len(expected)
        for want, got in zip(expected, steps):
            assert {k: got[k] for k in want} == want, f"seed {seed}, turn {want['turn']}"
        won = [s["turn"] for s in expected if s["won"]]
        recovered = [t for s in expected for t in s["recoveries"]]
        on_track = [s["optimal"] for s in expected if s["phase"] == "on_track"]
        after_error = [s["optimal"] for s in expected if s["phase"] == "after_error"]
        assert sum(s["errors_opened"] for s in expected) == len(recovered) + episode["_open"]
        totals = {
            "first_success_turn": won[0] if won else None, "turns_used": len(expected),
            "initial_distance": expected[0]["distance_before"],
            "final_distance": expected[-1]["distance_after"],
            "n_errors_self": sum(s["error_self"] for s in expected),
            "n_errors_injected_increasing": sum(s["injection_increased"] for s in expected),
            "n_wasted": sum(s["wasted"] for s in expected),
            "n_invalid": sum(not s["valid_action"] for s in expected),
            "n_recovered": len(recovered), "n_unrecovered": episode["_open"],
            "turns_to_recover": recovered,
            "n_optimal_steps": sum(s["optimal"] for s in expected),
            "n_steps_on_track": len(on_track), "n_optimal_on_track": sum(on_track),
            "n_steps_after_error": len(after_error), "n_optimal_after_error": sum(after_error),
        }  # fmt: skip
        assert {k: episode[k] for k in totals} == totals
        assert episode["budget_counts"] == budget_counts(steps, TS)


class _Turnabout(LineWorld):
    """A setback that leaves the distance as it was: it swaps what ``forward`` and ``back``
    do, so the ``forward`` the agent chose (optimal in the state it saw) takes a step back."""

    swapped = False

    def reset(self, *, seed=None, options=None):
        self.swapped = False
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.swapped and action in ("forward", "back"):
            action = "back" if action == "forward" else "forward"
        return super().step(action)

    def optimal_actions(self):
        return ["back"] if self.swapped and not self.won else super().optimal_actions()

    def inject_setback(self, rng):
        self.swapped = True
        return "The corridor turns around."


def test_a_setback_that_keeps_the_distance_but_turns_the_command_back_opens_an_error():
    """The distance rose on turn 2 (a setback left it as it was, then the agent's command,
    optimal for what it saw, went back): no error was opened, turn 3 was "on_track" and
    its return to the old distance was no recovery (Sokoban-Easy-v0, seed 131, turn 1)."""
    game = TurnBudget(_Turnabout(length=30), turn_budget=4)
    env = RecordStepOutcomes(InjectErrors(game, schedule={2: "setback"}))
    env.reset(seed=0)
    for command in ("forward", "forward", "back", "back"):
        env.step(command)
    *steps, episode = env.records
    second, third = steps[1], steps[2]
    assert second["distance_injected"] == second["distance_before"]
    assert second["distance_after"] == second["distance_before"] + 1
    assert (second["optimal"], second["error_self"], second["injection_increased"]) == (
        True, False, False,
    )  # fmt: skip
    assert second["errors_opened"] == 1
    assert (third["phase"], third["recoveries"]) == ("after_error", [1])
    assert (episode["n_recovered"], episode["n_unrecovered"], episode["n_errors_self"]) == (
        1, 0, 0,
    )  # fmt: skip


def test_steps_from_a_state_no_plan_can_win_from_are_not_judged():
    """A race player whose rival took the last copy plays on with no optimal command and no
    distance: each of its steps was judged, all "not optimal" (an oracle read 0.24)."""
    from turnbudget.envs.native.maze import Maze

    class Doomed(Maze):
        """After "look" nothing can win, yet the game goes on (as for a race player)."""

        doomed = False

        def _apply(self, command):
            self.doomed = self.doomed or command == "look"
            return super()._apply(command)

        def optimal_actions(self):
            return [] if self.doomed else super().optimal_actions()

        def distance_to_goal(self):
            return None if self.doomed else super().distance_to_goal()

    env = RecordStepOutcomes(TurnBudget(Doomed(), turn_budget=4))
    env.reset(seed=0)
    for _ in range(4):  # (to the budget's end: the records are delivered then)
        env.step("look")
    steps = [r for r in env.records if r["record"] == "step"]
    assert [s["optimal"] for s in steps] == [False, None, None, None]
    episode = env.records[-1]
    assert episode["n_steps_judged"] == 1 and episode["optimal_step_rate"] == 0.0
