"""`check_text_env` passes on our games and fails, naming the check, on broken ones."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from _support import native_env_ids

from turnbudget.envs.native.crafting import Crafting
from turnbudget.envs.native.maze import Maze
from turnbudget.utils import check_text_env
from turnbudget.utils.check_text_env import _Context, _rollout
from turnbudget.wrappers import TurnBudget


class OffByOneOracle(Maze):
    def distance_to_goal(self):
        return super().distance_to_goal() + 1


class QuicksandMaze(Maze):
    """Declares that no command can block it, but looking around sinks you."""

    commands_keep_solvable = True

    def _apply(self, command):
        if command == "look":
            self._lost = True
            return "The floor gives way."
        return super()._apply(command)

    def distance_to_goal(self):
        return None if self._lost else super().distance_to_goal()


class ControlCharacterCrash(Maze):
    def _play(self, action):
        if "\x00" in action:
            raise ValueError("unexpected NUL in the command")
        return super()._play(action)


# Every reset anywhere in the process gets a new number: the broken envs below differ between
# two resets with the same seed for certain, whatever other tests did to the global RNG.
_RESETS = itertools.count(1)


class UnseededAdmissibleOrder(Maze):
    """The observation is seeded; the order of info["admissible_actions"] on reset is not."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        actions = info["admissible_actions"]
        shift = next(_RESETS) % len(actions)
        info["admissible_actions"] = actions[shift:] + actions[:shift]
        return obs, info


class UnseededWorld(Maze):
    """The world comes from the global RNG: Gymnasium's own checker notices."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=next(_RESETS), options=options)


class BothFlagsTurnBudget(TurnBudget):
    """Truncates on the last budgeted turn even when the game ended on it."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated or info["turns_left"] == 0, info


def both_flags_maze():
    return BothFlagsTurnBudget(Maze(), turn_budget=30)


class SeedlessMaze(Maze):
    """Every reset makes the same world, whatever its seed (its generator is seeded, as
    Gymnasium's checker asks, but not drawn from)."""

    def _generate(self):
        seeded, self._np_random = self._np_random, np.random.default_rng(0)
        try:
            super()._generate()
        finally:
            self._np_random = seeded


class GlobalRngSetback(Maze):
    """Its setback draws from the global generator, not from the rng it is given."""

    def inject_setback(self, rng):
        return super().inject_setback(np.random.default_rng(next(_RESETS)))


class NanProgress(Maze):
    def _info(self, valid_action=None):
        return {**super()._info(valid_action), "progress": float("nan")}


def test_passes_on_every_native_id_with_every_check():
    """The registry's contract in the default suite, with 2 seeds and short walks
    (tests/envs/test_registry.py runs 20 seeds and long walks in the `slow` one). The
    cross-process check starts two fresh interpreters per call (~1 s): it runs here on the
    first id, and for every id at once in the next test."""
    first, *rest = native_env_ids()
    for env_id in (first, *rest):
        cross = env_id == first
        report = check_text_env(env_id, seeds=(0, 1), steps=10, walks=1, cross_process=cross)
        assert report.skipped == (
            {} if cross else {"cross_process_determinism": "cross_process=False"}
        )
        assert len(report.checks) == (12 if cross else 11) and report.passed is True, env_id
        assert report.setbacks_that_cost > 0, f"{env_id}: setbacks should cost something"


def test_every_native_id_rolls_out_alike_in_two_fresh_processes():
    """The ``cross_process_determinism`` check for every native id at once: the same seeded
    rollouts (the check's own digests) in two fresh interpreters, each with its own
    ``PYTHONHASHSEED``, as in this one."""
    ids = native_env_ids()
    script = (
        "import json, sys, gymnasium as gym, turnbudget\n"
        "from turnbudget.utils.check_text_env import _Context, _rollout\n"
        "print(json.dumps([_rollout(gym.make(i), 0, 10, _Context(i)) for i in sys.argv[1:]]))"
    )
    here = [_rollout(gym.make(i), 0, 10, _Context(i)) for i in ids]
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": os.pathsep.join(sys.path)}
        out = subprocess.run(
            [sys.executable, "-c", script, *ids],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        assert json.loads(out.stdout) == here, f"PYTHONHASHSEED={hash_seed}"


def test_passes_on_an_instance_and_on_a_factory():
    assert "reset_needed" in check_text_env(Maze(), steps=5).skipped
    report = check_text_env(lambda: TurnBudget(Maze(), turn_budget=30), steps=5)
    assert "budget_flags" in report.checks
    assert "cross_process_determinism" in report.skipped  # a lambda does not pickle


@pytest.mark.parametrize(
    "source, check, detail",
    [
        (OffByOneOracle, "oracle_solves", r"distance_to_goal\(\) said"),
        (ControlCharacterCrash, "hostile_input", r"raised ValueError: unexpected NUL"),
        (UnseededAdmissibleOrder, "determinism", r"the same seed gave a different rollout"),
        (UnseededWorld, "gymnasium_checker", r"super\(\)\.reset\(seed=seed\)"),
        (both_flags_maze, "budget_flags", r"terminated and truncated are both True"),
        (QuicksandMaze, "oracle_bellman", r"'look' ended the game, but .* commands_keep_solvable"),
        (SeedlessMaze, "determinism", r"seeds 0 and 1 gave identical rollouts"),
        (GlobalRngSetback, "setbacks", r"inject_setback\(\) did not do the same"),
        (NanProgress, "gymnasium_checker", r"progress must be a finite number .*, got nan"),
    ],
    ids=["oracle-off-by-one", "raises-on-control-char", "unseeded-reset-info",
         "unseeded-reset-world", "turnbudget-sets-both-flags", "falsely-declared-unblockable",
         "reset-ignores-its-seed", "setback-ignores-its-rng", "nan-progress"],
)  # fmt: skip
def test_fails_naming_the_check_on_broken_envs(source, check, detail):
    with pytest.raises(AssertionError, match=rf"^check_text_env\[{check}\] failed .*{detail}") as e:
        check_text_env(source, steps=10)
    if check != "gymnasium_checker":  # Gymnasium's check_env picks its own seeds
        assert "(seed " in str(e.value)


def test_the_message_names_the_seed_and_step():
    with pytest.raises(AssertionError) as error:
        check_text_env(OffByOneOracle, seeds=(4,))
    game = Maze()
    game.reset(seed=4)
    steps = game.distance_to_goal()
    assert f"(seed 4, step {steps}): won in {steps} turns" in str(error.value)


def test_bad_sources_are_clear_errors():
    with pytest.raises(TypeError, match="Expect an env id, an env or a factory"):
        check_text_env(3)
    with pytest.raises(ValueError, match="env_kwargs"):
        check_text_env(Maze, env_kwargs={"difficulty": "hard"})
    with pytest.raises(TypeError, match=r"Expect the factory object to return a gym\.Env"):
        check_text_env(object)


def _no_env() -> gym.Env:
    raise AssertionError("the env was made before the arguments were checked")


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"seeds": []}, ValueError, "`seeds` to be a non-empty sequence"),
        ({"seeds": 5}, ValueError, "`seeds` to be a non-empty sequence"),
        ({"seeds": "012"}, ValueError, "`seeds` to be a non-empty sequence"),
        ({"seeds": [0, -1]}, ValueError, r"`seeds\[i\]` to be an int from 0"),
        ({"seeds": [0.5]}, ValueError, r"`seeds\[i\]`"),
        ({"seeds": [0, 0]}, ValueError, r"`seeds` to hold distinct ints"),
        ({"steps": 0}, ValueError, "`steps` to be a positive int"),
        ({"steps": float("nan")}, ValueError, "`steps` to be a positive int"),
        ({"steps": 10**9}, ValueError, "`steps` to be at most 100,000"),
        ({"walks": -1}, ValueError, "`walks` to be an int >= 0"),
        ({"walks": True}, ValueError, "`walks`"),
        (
            {"oracle": "exactly"},
            ValueError,
            "`oracle` to be one of .auto., .exact., .plan. or None",
        ),
        ({"oracle": ["exact"]}, ValueError, "`oracle` to be one of"),
        ({"cross_process": "no"}, ValueError, "`cross_process` to be True or False"),
        ({"budget_factor": float("nan")}, ValueError, "`budget_factor`"),
        ({"budget_factor": 0}, ValueError, "`budget_factor`"),
        ({"max_step_seconds": 0}, ValueError, "`max_step_seconds`"),
        ({"max_step_seconds": float("inf")}, ValueError, "`max_step_seconds`"),
        ({"hostile_commands": "look"}, ValueError, "`hostile_commands` to be a sequence"),
        ({"hostile_commands": ["look", None]}, ValueError, "`hostile_commands` to be a str"),
        ({"env_kwargs": 5}, TypeError, "`env_kwargs` to be a mapping"),
    ],
)
def test_the_callers_mistakes_are_named_before_any_env_is_made(kwargs, error, says):
    """A bad argument is the caller's error, not an AssertionError that blames the env."""
    with pytest.raises(error, match=says):
        check_text_env(_no_env, **kwargs)


def test_seeds_may_be_a_range_or_an_array():
    report = check_text_env(Maze, seeds=range(2), steps=3, cross_process=False)
    assert report.passed
    assert check_text_env(Maze, seeds=np.arange(2), steps=3, cross_process=False).passed


def test_a_correct_env_under_a_short_time_limit_passes_the_hostile_inputs():
    """Gymnasium's TimeLimit of 30 steps ended the game on the 30th of 33 hostile commands,
    and the env was blamed for it."""
    report = check_text_env(gym.wrappers.TimeLimit(Maze(), 30), steps=10, cross_process=False)
    assert "hostile_input" in report.checks


def test_an_id_registered_outside_turnbudget_rolls_out_in_a_fresh_process(tmp_path, monkeypatch):
    """The fresh process imported only turnbudget: "Namespace my not found", a false alarm."""
    (tmp_path / "my_maze_module.py").write_text(
        "from turnbudget.envs.native.maze import Maze\n\nclass MyMaze(Maze):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    gym.register("auditns/MyMaze-v0", entry_point="my_maze_module:MyMaze", max_episode_steps=60)
    try:
        report = check_text_env("auditns/MyMaze-v0", steps=10)
        assert "cross_process_determinism" in report.checks
    finally:
        del gym.registry["auditns/MyMaze-v0"]


class OnePlanCrafting(Crafting):
    """An oracle that follows one plan: of the commands that shorten it, only the first."""

    def optimal_actions(self):
        return super().optimal_actions()[:1]


class DeclaredOnePlanCrafting(OnePlanCrafting):
    oracle_is_plan = True


def test_an_env_that_declares_its_oracle_a_plan_is_checked_as_one_by_default():
    """TextWorld's oracle is its quest's plan: under the default ``oracle="exact"`` every
    TextWorld id failed ``oracle_bellman`` unless the caller knew to pass ``oracle="plan"``."""
    with pytest.raises(AssertionError, match=r"^check_text_env\[oracle_bellman\] failed"):
        check_text_env(OnePlanCrafting, steps=25, cross_process=False)
    report = check_text_env(DeclaredOnePlanCrafting, steps=25, cross_process=False)
    assert report.skipped["oracle_bellman"] == "oracle='plan'"
    assert "oracle_solves" in report.checks
    with pytest.raises(AssertionError, match=r"^check_text_env\[oracle_bellman\] failed"):
        check_text_env(DeclaredOnePlanCrafting, steps=25, cross_process=False, oracle="exact")
