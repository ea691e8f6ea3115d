"""`check_group_seeding` passes on every registered native id and fails, naming the property,
on envs broken the ways LLM-RL environments break (global RNG, ignored seed, flags at the cap,
a reset that keeps state)."""

from __future__ import annotations

import random
import re

import gymnasium as gym
import numpy as np
import pytest

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.envs.native.maze import Maze
from turnbudget.utils import CHECKS, GroupSeedingReport, SeedableEnv, check_group_seeding
from turnbudget.wrappers import TurnBudget

FAST = {"seeds": (0, 1), "group_size": 2, "steps": 3}


def native_ids() -> list[str]:
    """Every registered native id: the difficulties and the free ``-v0`` ids."""
    return sorted(
        env_id
        for env_id, spec in gym.registry.items()
        if env_id.startswith("turnbudget/")
        and str(spec.kwargs.get("game_entry_point", "")).startswith("turnbudget.envs.native")
    )


def test_passes_on_every_registered_native_id():
    ids = native_ids()
    assert len(ids) >= 20
    for env_id in ids:
        report = check_group_seeding(env_id, **FAST)
        assert report.passed is True, str(report)
        assert report.checks == dict.fromkeys(CHECKS, "passed"), env_id


# -- broken envs: each breaks one property the way real LLM-RL envs do ----------------------


class GlobalRNGMaze(Maze):
    """Draws part of its start from Python's global RNG (two draws never agree: 2**-53)."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        info["weather"] = random.random()
        return obs, info


class SeedsGlobalRNGMaze(Maze):
    """Seeds the global RNGs at reset (as GEM's and TextArena's games do) and draws at step."""

    def reset(self, *, seed=None, options=None):
        random.seed(seed)
        np.random.seed(seed)
        return super().reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return f"{obs} (wind {np.random.randint(10)})", reward, terminated, truncated, info


class IgnoredSeedMaze(Maze):
    """Plays one fixed world whatever the seed."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=0, options=options)


class CollapsedDone(TurnBudget):
    """One ``done`` copied into both flags: the cap sets terminated and truncated."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, truncated, info


class DoneOnly(TurnBudget):
    """One ``done`` reported as terminated: the cap looks like the game's end."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, False, info


class KeepsTurnsOnReset(TurnBudget):
    """A reset in the middle of an episode keeps the turns already used."""

    def reset(self, *, seed=None, options=None):
        kept = self.turns_used if 0 < self.turns_used < self.turn_budget else 0
        obs, info = super().reset(seed=seed, options=options)
        self.turns_used = kept
        return obs, self._add_budget_info(info)


def budgeted(game: type[Maze], wrapper: type[TurnBudget] = TurnBudget):
    def make():
        return wrapper(game(), turn_budget=12)

    make.__name__ = f"{wrapper.__name__}({game.__name__})"
    return make


@pytest.mark.parametrize(
    "source, failed, detail",
    [
        (budgeted(GlobalRNGMaze), {"same_start", "own_rng", "leaves_global_rng"},
         r"attempt 2 of 2 with seed 0 \(on a fresh instance\) differs from attempt 1 at the "
         r"reset: info\['weather'\]"),
        (budgeted(SeedsGlobalRNGMaze), {"own_rng", "leaves_global_rng"},
         r"reset\(\) \(seed 0\) changed Python's `random` and NumPy's `np.random`"),
        (budgeted(IgnoredSeedMaze), {"seeds_differ"},
         r"seeds \[0, 1\] all gave the same episode: the seed does not choose the task"),
        (budgeted(Maze, CollapsedDone), {"cap_truncates"},
         r"seed 0, turn 12 of 12 \(at the turn cap\): terminated and truncated are both True"),
        (budgeted(Maze, DoneOnly), {"cap_truncates"},
         r"the turn cap 12 ended the episode with terminated=True, truncated=False"),
        (budgeted(Maze, KeepsTurnsOnReset), {"clean_reset"},
         r"reset\(seed=0\) after 1 turn of an episode with seed 0 gave a different episode than "
         r"a fresh reset: the reset: info\['turns_left'\] 12 vs 11 \(the reset kept state\)"),
    ],
    ids=["global-rng", "seeds-global-rng", "ignored-seed", "both-flags-at-cap",
         "cap-terminates", "reset-keeps-state"],
)  # fmt: skip
def test_fails_naming_the_property_on_broken_envs(source, failed, detail):
    report = check_group_seeding(source, **FAST)
    assert report.passed is False
    assert {f.check for f in report.failures} == failed, str(report)
    assert {c for c, outcome in report.checks.items() if outcome == "failed"} == failed
    assert set(report.checks) == set(CHECKS)
    messages = "\n".join(map(str, report.failures))
    assert all(
        str(f).startswith(f"check_group_seeding[{f.check}] failed for ") for f in report.failures
    )
    assert re.search(detail, messages), messages
    with pytest.raises(AssertionError, match=r"^check_group_seeding\["):
        report.raise_if_failed()


def test_a_reset_that_keeps_state_breaks_a_group_played_on_one_instance():
    """K attempts on one pooled instance are resets in mid-episode: the group breaks too."""
    report = check_group_seeding(budgeted(Maze, KeepsTurnsOnReset), group_size=3, steps=3)
    assert {f.check for f in report.failures} == {"same_start", "clean_reset"}
    assert "attempt 3 of 3 with seed 0 (on the same instance) differs" in str(report)
    # Given one instance, every attempt runs on it (and nothing is fresh to compare with).
    report = check_group_seeding(KeepsTurnsOnReset(Maze(), turn_budget=12), steps=3)
    assert {"same_start", "clean_reset"} <= {f.check for f in report.failures}
    assert "attempt 2 of 4 with seed 0 (on the same instance)" in str(report)


def test_leaves_the_global_rngs_as_they_were():
    random.seed(5)
    np.random.seed(5)
    expected = (random.random(), np.random.random())
    random.seed(5)
    np.random.seed(5)
    report = check_group_seeding(budgeted(SeedsGlobalRNGMaze), **FAST)
    assert not report.passed
    assert (random.random(), np.random.random()) == expected


# -- other shapes of env -------------------------------------------------------------------


class GemLikeGame:
    """A third-party env that is not a gymnasium.Env: reset(seed) and a 5-tuple step (GEM's shape)."""

    def __init__(self, max_turns: int = 5):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.rng = np.random.default_rng(seed)
        self.secret = int(self.rng.integers(100))
        self.turn = 0
        return "Guess a number in \\boxed{}.", {}

    def step(self, action):
        self.turn += 1
        won = action == f"\\boxed{{{self.secret}}}"
        hint = f"noise {int(self.rng.integers(3))}"
        return hint, float(won), won, self.turn >= self.max_turns and not won, {}


class FourTuple(GemLikeGame):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, info


def test_a_third_party_env_with_gymnasiums_two_calls():
    assert isinstance(GemLikeGame(), SeedableEnv)
    report = check_group_seeding(GemLikeGame, idle_actions=["\\boxed{-1}"], turn_cap=5)
    assert report.passed, str(report)
    # Without a cap nothing says where the episode should end: that check is skipped.
    report = check_group_seeding(GemLikeGame(), actions=["\\boxed{1}", "\\boxed{2}"])
    assert report.passed and report.checks["cap_truncates"] == "skipped"
    assert "pass turn_cap" in report.skipped["cap_truncates"]


def test_a_step_of_the_wrong_shape_fails_with_the_fix():
    report = check_group_seeding(FourTuple, turn_cap=5)
    assert report.checks["same_start"] == "failed"
    assert (
        "step() returned 4 values; expect (observation, reward, terminated, truncated, info)"
        in (str(report.failures[0]))
    )


def test_an_end_before_the_cap_is_inconclusive_not_a_failure():
    report = check_group_seeding(GemLikeGame, idle_actions=["\\boxed{-1}"], turn_cap=9)
    assert report.checks["cap_truncates"] == "failed"  # the game truncates at 5, not 9
    assert "truncated on turn 5, before the turn cap 9" in str(report)

    class EndsOnAnyGuess(GemLikeGame):
        def step(self, action):
            obs, reward, _, _, info = super().step(action)
            return obs, reward, True, False, info

    report = check_group_seeding(GemLikeGame, idle_actions=["\\boxed{-1}"], turn_cap=3)
    assert "still running after 3 step() calls, the turn cap" in str(report)  # cap not enforced

    report = check_group_seeding("turnbudget/Maze-Easy-v0", env_kwargs={"turn_budget": 10**6})
    assert "the turn cap 1000000 is over 10,000 turns" in report.skipped["cap_truncates"]

    report = check_group_seeding(EndsOnAnyGuess, turn_cap=5)
    assert report.passed and report.checks["cap_truncates"] == "skipped"
    assert "pass idle_actions" in report.skipped["cap_truncates"]


def test_a_remote_env_skips_the_global_rng_checks():
    class Remote(GemLikeGame):
        remote = True

    report = check_group_seeding(Remote, turn_cap=5, idle_actions=["\\boxed{-1}"])
    assert report.passed
    assert report.skipped.keys() == {"own_rng", "leaves_global_rng"}


def test_the_report_is_a_bool_and_prints():
    report = check_group_seeding("turnbudget/Maze-Easy-v0", **FAST)
    assert isinstance(report, GroupSeedingReport) and report.passed is True
    assert report.failures == []
    assert str(report).splitlines()[0] == "check_group_seeding on turnbudget/Maze-Easy-v0: passed"
    report.raise_if_failed()


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="Expect an env id, an env with reset"):
        check_group_seeding(3)
    with pytest.raises(ValueError, match="Expect `env_kwargs` only with an env id"):
        check_group_seeding(Maze, env_kwargs={"difficulty": "hard"})
    with pytest.raises(ValueError, match="Expect `group_size` to be at least 2"):
        check_group_seeding(Maze, group_size=1)
    for seeds in [(), (0, -1), (0, 1.5), (True,)]:
        with pytest.raises(ValueError, match="Expect `seeds` to be one or more ints >= 0"):
            check_group_seeding(Maze, seeds=seeds)
    with pytest.raises(ValueError, match="Expect `turn_cap` to be a positive int, got 0"):
        check_group_seeding(Maze, turn_cap=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"group_size": 10**9}, ValueError, "`group_size` to be at most 1,024"),
        ({"steps": 10**9}, ValueError, "`steps` to be at most 100,000"),
        ({"seeds": 5}, ValueError, "`seeds` to be one or more ints"),
        ({"seeds": "01"}, ValueError, "`seeds` to be one or more ints"),
        ({"actions": []}, ValueError, "`actions` to be a non-empty sequence"),
        ({"actions": "look"}, ValueError, "`actions` to be a non-empty sequence"),
        ({"idle_actions": "look"}, ValueError, "`idle_actions` to be a sequence"),
        ({"env_kwargs": 5}, TypeError, "`env_kwargs` to be a mapping"),
    ],
)
def test_hang_prone_and_malformed_arguments_are_refused_up_front(kwargs, error, says):
    """Refused before any env is made (10**9 attempts used to run until killed)."""

    def no_env():
        raise AssertionError("an env was made before the arguments were checked")

    source = "turnbudget/Maze-Easy-v0" if "env_kwargs" in kwargs else no_env
    with pytest.raises(error, match=says):
        check_group_seeding(source, **kwargs)


def test_a_factory_that_makes_no_env_is_a_type_error():
    with pytest.raises(TypeError, match="Expect the factory object to return an env"):
        check_group_seeding(object)


def test_holds_one_fresh_instance_at_a_time_and_closes_every_one():
    """A served or otherwise bounded env (an OpenEnv server's sessions) allows only a few
    instances at once: the checks close each fresh instance before making the next."""
    live: set[int] = set()
    most = made = 0

    class Counted(gym.Wrapper):
        def __init__(self):
            nonlocal most, made
            super().__init__(gym.make("turnbudget/Maze-Easy-v0"))
            made += 1
            live.add(id(self))
            most = max(most, len(live))

        def close(self):
            live.discard(id(self))
            super().close()

    report = check_group_seeding(Counted, group_size=4, steps=3)
    assert report.passed, str(report)
    assert made > 4 and most == 1 and not live


def test_an_object_in_info_is_compared_by_what_it_holds_not_its_address():
    """json.dumps(default=repr) wrote each fresh object's memory address: a well-seeded env
    that put an object in its info failed same_start, and own_rng and clean_reset with it."""
    import random as random_module

    class Item:
        def __init__(self, name):
            self.name = name

    class Env:
        def reset(self, seed=None):
            self.rng = random_module.Random(seed)
            self.t = 0
            self.item = Item("key")
            return f"start {self.rng.randint(0, 100)}", {"item": self.item}

        def step(self, action):
            self.t += 1
            return "x", 0.0, False, self.t >= 3, {"item": self.item}

    report = check_group_seeding(Env, actions=["a"], turn_cap=3, group_size=2, steps=2)
    assert report.passed, report


def test_an_object_in_info_that_refers_back_to_itself_is_compared_once():
    """Its attributes were followed for ever: a tree whose nodes name their parent failed
    every check with RecursionError. A difference below it is still found."""
    import random as random_module

    class Node:
        def __init__(self, name, parent=None):
            self.name, self.parent, self.children = name, parent, []
            if parent is not None:
                parent.children.append(self)

    class Env:
        def __init__(self, drift=False):
            self.drift, self.made = drift, 0

        def reset(self, seed=None):
            self.rng, self.t = random_module.Random(seed), 0
            self.made += 1  # (a drifting env: its second reset's tree differs from its first)
            self.root = Node("root")
            Node(f"room {self.rng.randint(0, 100)} {self.made if self.drift else ''}", self.root)
            return "start", {"room": self.root}

        def step(self, action):
            self.t += 1
            return "x", 0.0, False, self.t >= 3, {"room": self.root}

    settings = dict(actions=["a"], turn_cap=3, group_size=2, steps=2)
    report = check_group_seeding(Env, **settings)
    assert report.passed, report
    drifting = check_group_seeding(lambda: Env(drift=True), **settings)
    assert drifting.checks["clean_reset"] == "failed", drifting
    assert "RecursionError" not in str(drifting) and "room" in str(drifting)


def test_an_info_nested_past_python_s_stack_is_still_compared():
    """Every line holding one read "<values nested too deeply to compare>", the observation
    with it: an env that ignored its seed passed same_start, own_rng and clean_reset."""
    import random as random_module

    class Node:
        def __init__(self, before, value=0):
            self.before, self.value = before, value

    def history(rng):
        chain = None
        for _ in range(2000):  # (deeper than the interpreter's recursion limit)
            chain = Node(chain, rng.randint(0, 9))
        return chain

    class Unseeded:
        def reset(self, seed=None):
            rng = random_module.Random()  # (its seed ignored)
            return f"room {rng.random()}", {"history": history(rng)}

        def step(self, action):
            return self.reset()[0], 0.0, False, False, self.reset()[1]

    class Seeded:
        def reset(self, seed=None):
            self.chain, self.t = history(random_module.Random(seed)), 0
            return "room", {"history": self.chain}

        def step(self, action):
            self.t += 1
            return "room", 0.0, False, self.t >= 3, {"history": self.chain}

    settings = dict(actions=["a"], group_size=2, steps=2)
    assert check_group_seeding(Unseeded, **settings).checks["same_start"] == "failed"
    report = check_group_seeding(Seeded, turn_cap=3, **settings)
    assert report.passed and report.checks["seeds_differ"] == "passed", report
