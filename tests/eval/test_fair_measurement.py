"""Fair blame, independent attempts with paired agents, and a hidden budget that stays hidden."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

import turnbudget
from turnbudget.agents import BUDGET_KEYS, EXECUTED_KEY, OracleAgent, RandomAgent
from turnbudget.eval.run.evaluate import evaluate

MEDIUM = ["turnbudget/Maze-Medium-v0", "turnbudget/KeyQuest-Medium-v0"]
ALL_KINDS = {"rate": 0.3, "kinds": ["slip", "transient", "setback"]}


def _steps_by_episode(steps: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in steps:
        out[s["episode_id"]].append(s)
    return out


def test_optimal_for_what_it_saw_agent_has_no_self_inflicted_errors():
    result = evaluate(
        MEDIUM, OracleAgent(0.0), ks=[1], ts=[96], n=2, tasks=15, errors=ALL_KINDS, n_bootstrap=0
    )
    kinds = {s["injected_error"]["kind"] for s in result.steps if s["injected_error"]}
    assert kinds == {"slip", "transient", "setback"}
    assert sum(s["injection_increased"] for s in result.steps) > 50
    assert all(s["optimal"] for s in result.steps)
    assert not any(s["error_self"] for s in result.steps)
    assert not any(s["wasted"] for s in result.steps)
    assert sum(e["n_errors_self"] for e in result.episodes) == 0
    # A setback fired before an optimal command: the command ran in the changed state, and its
    # effect is recorded apart from the setback's.
    setbacks = [s for s in result.steps if (s["injected_error"] or {}).get("kind") == "setback"]
    assert any(s["distance_injected"] > s["distance_before"] for s in setbacks)
    for s in setbacks:
        assert s["command_effect"] == s["distance_after"] - s["distance_injected"]
    for s in result.steps:
        if (s["injected_error"] or {}).get("kind") in ("slip", "transient"):
            assert s["command_effect"] is None  # the agent's command never ran


NATIVE_EASY = [
    f"turnbudget/{game}-Easy-v0" for game in ("Maze", "KeyQuest", "Shop", "Sokoban", "Crafting")
]


@pytest.mark.parametrize("env_id", NATIVE_EASY)
def test_setbacks_never_make_an_optimal_command_invalid(env_id):
    """A setback fires before the command runs: the command is judged on the state the agent
    saw, so an agent optimal for what it saw has no invalid, wasted or self-inflicted step."""
    result = evaluate(
        env_id, OracleAgent(0.0), ks=[1], ts=[60], n=1, tasks=30,
        errors={"rate": 0.3, "kinds": ["setback"]}, n_bootstrap=0,
    )  # fmt: skip
    setbacks = [s for s in result.steps if s["injected_error"]]
    assert len(setbacks) > 50
    assert sum(e["n_invalid"] for e in result.episodes) == 0
    assert all(s["valid_action"] and s["optimal"] for s in result.steps)
    assert not any(s["wasted"] or s["error_self"] for s in result.steps)


class Waster:
    """Alternates a useless but valid command, an invalid one and the oracle's."""

    needs_oracle = True

    def reset(self, seed: int) -> None:
        self.turn = 0

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        self.turn += 1
        return ("look", "xyzzy", info["oracle_actions"][0])[self.turn % 3]


def test_wasted_and_invalid_turns_are_counted_apart_from_errors():
    result = evaluate(
        "turnbudget/Maze-Medium-v0", Waster(), ks=[1], ts=[30], n=1, tasks=3, n_bootstrap=0
    )
    looks = [s for s in result.steps if s["action"] == "look"]
    junk = [s for s in result.steps if s["action"] == "xyzzy"]
    assert looks and all(s["wasted"] and not s["error_self"] for s in looks)
    assert junk and all(not s["wasted"] and not s["valid_action"] for s in junk)
    episode = result.episodes[0]
    assert episode["n_wasted"] > 0 and episode["n_invalid"] > 0 and episode["n_errors_self"] == 0
    a = result.summary["analysis"]["turnbudget/Maze-Medium-v0"]
    assert a["wasted"] == sum(s["wasted"] for s in result.steps)
    assert a["invalid"] == len(junk)


def test_after_error_only_follows_a_distance_increase():
    env = turnbudget.make(
        "turnbudget/Maze-Medium-v0",
        turn_budget=4,
        errors={"schedule": {2: "transient"}},
        record=True,
    )
    env.reset(seed=0)
    for _ in range(4):
        env.step(env.unwrapped.optimal_actions()[0])
    steps = [r for r in env.records if r.get("record") == "step"]
    assert steps[1]["injected_error"]["kind"] == "transient"
    assert not steps[1]["injection_increased"]
    assert steps[2]["phase"] == "on_track"


def _fired(steps: list[dict[str, Any]]) -> list[str | None]:
    return [(s["injected_error"] or {}).get("kind") for s in sorted(steps, key=lambda s: s["turn"])]


def _schedules(result: Any) -> dict[tuple[int, int], list[str | None]]:
    by_episode = _steps_by_episode(result.steps)
    rep = {e["episode_id"]: (e["seed"], e["rep"]) for e in result.episodes}
    return {rep[eid]: _fired(steps) for eid, steps in by_episode.items()}


def test_repeats_are_independent_and_agents_are_paired():
    kwargs = dict(ks=[1], ts=[40], n=4, tasks=4, errors=0.3, n_bootstrap=0)
    random_run = evaluate("turnbudget/Maze-Medium-v0", RandomAgent(), **kwargs)
    oracle_run = evaluate("turnbudget/Maze-Medium-v0", OracleAgent(0.3), **kwargs)
    shared = evaluate("turnbudget/Maze-Medium-v0", RandomAgent(), error_draws="shared", **kwargs)
    a, b, s = _schedules(random_run), _schedules(oracle_run), _schedules(shared)
    for task in range(4):
        per_repeat = [tuple(a[(task, r)]) for r in range(4)]
        assert len(set(per_repeat)) == 4  # each attempt draws its own errors
        assert len({tuple(s[(task, r)]) for r in range(4)}) == 1  # the explicit shared option
        for r in range(4):  # same (task, repeat): the same fired/kind sequence for both agents
            n = min(len(a[(task, r)]), len(b[(task, r)]))
            assert a[(task, r)][:n] == b[(task, r)][:n] and n > 5


class TurnsLeftReader:
    """Reads info["turns_left"] without declaring budget_aware: hurries when it sees few turns."""

    needs_oracle = True
    name = "reader"

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._random = RandomAgent()

    def reset(self, seed: int) -> None:
        self._random.reset(seed)
        self.turn = 0

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        self.seen |= set(info) & set(BUDGET_KEYS)
        if self.turn:
            assert EXECUTED_KEY in info
        self.turn += 1
        if info.get("turns_left", 10**6) > 20:
            return self._random.act(observation, info)
        return info["oracle_actions"][0]


def test_hidden_budget_reaches_no_agent_and_truncate_equals_rerun():
    agent = TurnsLeftReader()
    result = evaluate(
        "turnbudget/Maze-Medium-v0", agent, ks=[1], ts=[12, 24], n=2, tasks=4, mode="both",
        n_bootstrap=0, workers=1,
    )  # fmt: skip
    assert agent.seen == set()
    grids = result.summary["groups"]["turnbudget/Maze-Medium-v0"]
    assert grids["truncate"]["mean"] == grids["rerun"]["mean"]
    assert grids["gap"]["max_abs"] == 0.0
    # Revealed, the same agent sees its budget (and then truncate and rerun may differ).
    seeing = TurnsLeftReader()
    evaluate(
        "turnbudget/Maze-Medium-v0", seeing, ks=[1], ts=[12], n=1, tasks=1, reveal="always",
        n_bootstrap=0,
    )  # fmt: skip
    assert seeing.seen == {"turn_budget", "turns_used", "turns_left"}
    # The env's own info is unchanged for RL users.
    env = turnbudget.make("turnbudget/Maze-Medium-v0")
    assert {"turn_budget", "turns_used", "turns_left"} <= set(env.reset(seed=0)[1])


def test_pass_at_k_with_errors_matches_k_independent_attempts():
    """Pass@8 from n = 8 repeats agrees with direct simulation of batches of 8 fresh attempts."""
    env_id, t, k, tasks = "turnbudget/Maze-Medium-v0", 32, 8, 20
    result = evaluate(
        env_id, OracleAgent(0.3), ks=[1, k], ts=[t], n=k, tasks=tasks, errors=0.2, n_bootstrap=400
    )
    grid = result.summary["groups"][env_id]["truncate"]
    estimate, low, high = grid["mean"][1][0], grid["low"][1][0], grid["high"][1][0]

    env = turnbudget.make(env_id, errors=0.2)
    agent = OracleAgent(0.3)
    batches = 6
    rng = np.random.default_rng(12345)
    hits = 0
    for task in range(tasks):
        for _ in range(batches):
            won_any = False
            for _ in range(k):  # K attempts, each with fresh errors and a fresh agent seed
                _, info = env.reset(seed=task, options={"repeat": int(rng.integers(10**6, 10**9))})
                agent.reset(int(rng.integers(2**31)))
                for _ in range(t):
                    info = {**info, "oracle_actions": env.unwrapped.optimal_actions()}
                    _, _, terminated, truncated, info = env.step(agent.act("", info))
                    if terminated or truncated:
                        break
                won_any |= bool(info["won"])
            hits += won_any
    simulated = hits / (tasks * batches)
    assert low <= simulated <= high, (simulated, estimate, low, high)
    assert abs(simulated - estimate) < 0.12

    shared = evaluate(
        env_id, OracleAgent(0.3), ks=[1, k], ts=[t], n=k, tasks=tasks, errors=0.2,
        error_draws="shared", n_bootstrap=0,
    )  # fmt: skip
    biased = shared.summary["groups"][env_id]["truncate"]["mean"][1][0]
    assert biased < estimate  # one schedule for all attempts correlates them: Pass@8 biased low
