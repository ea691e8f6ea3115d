from __future__ import annotations

import asyncio
import pickle

import gymnasium as gym
import numpy as np
import pytest

import turnbudget  # noqa: F401  (registers the envs)
from turnbudget.agents import (
    ORACLE_KEY,
    Agent,
    AsyncBatch,
    BatchAgent,
    OracleAgent,
    RandomAgent,
    make_agent,
)

ENV_IDS = ["turnbudget/KeyQuest-Medium-v0", "turnbudget/Maze-Medium-v0"]


def play(env: gym.Env, agent, seed: int, agent_seed: int) -> tuple[list[str], dict]:
    obs, info = env.reset(seed=seed)
    agent.reset(agent_seed)
    actions = []
    while True:
        if getattr(agent, "needs_oracle", False):
            info[ORACLE_KEY] = env.unwrapped.optimal_actions()
        action = agent.act(obs, info)
        actions.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return actions, info


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_with_epsilon_zero_solves_in_the_optimal_number_of_turns(env_id):
    env = gym.make(env_id)
    for seed in range(5):
        env.reset(seed=seed)
        optimal = env.unwrapped.distance_to_goal()
        actions, info = play(env, OracleAgent(0.0), seed, agent_seed=seed)
        assert info["won"] and len(actions) == optimal


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_random_agent_picks_admissible_actions_and_is_seeded(env_id):
    env = gym.make(env_id, turn_budget=30)
    a1, _ = play(env, RandomAgent(), seed=1, agent_seed=5)
    a2, _ = play(env, RandomAgent(), seed=1, agent_seed=5)
    a3, _ = play(env, RandomAgent(), seed=1, agent_seed=6)
    assert a1 == a2 and a1 != a3
    obs, info = env.reset(seed=1)
    agent = RandomAgent()
    agent.reset(0)
    for _ in range(20):
        action = agent.act(obs, info)
        assert action in info["admissible_actions"]
        obs, _, term, trunc, info = env.step(action)
        assert info["valid_action"]
        if term or trunc:
            break


def test_noisy_oracle_is_seeded_and_explores_at_rate_epsilon():
    agent = OracleAgent(0.3)
    info = {"admissible_actions": ["a", "b", "c", "d"], ORACLE_KEY: ["a"]}
    agent.reset(11)
    picks = [agent.act("", info) for _ in range(4000)]
    agent.reset(11)
    assert picks == [agent.act("", info) for _ in range(4000)]
    non_optimal = sum(p != "a" for p in picks) / len(picks)
    assert non_optimal == pytest.approx(0.3 * 3 / 4, abs=0.03)


def test_oracle_agent_errors_without_oracle_info_and_checks_epsilon():
    agent = OracleAgent(0.1)
    agent.reset(0)
    with pytest.raises(KeyError, match="oracle_actions"):
        agent.act("", {"admissible_actions": ["a"]})
    for bad in (-0.1, 1.5, "x", True):
        with pytest.raises(ValueError, match="epsilon"):
            OracleAgent(bad)


def test_agents_follow_the_protocol_and_pickle():
    for agent in (RandomAgent(), OracleAgent(0.2)):
        assert isinstance(agent, Agent)
        clone = pickle.loads(pickle.dumps(agent))
        assert repr(clone) == repr(agent)
    assert RandomAgent().needs_oracle is False and OracleAgent().needs_oracle is True


def test_make_agent_specs():
    assert repr(make_agent("random")) == "RandomAgent()"
    assert make_agent("oracle").epsilon == 0.0
    assert make_agent("oracle:0.25").epsilon == 0.25
    for bad in ("smart", "oracle:abc", "random:1"):
        with pytest.raises(ValueError):
            make_agent(bad)


class EchoAsync:
    """An async agent that answers with its seed and turn count, on one event loop."""

    needs_oracle = False

    async def reset_async(self, seed: int) -> None:
        self.seed, self.turn = seed, 0
        self.loop = asyncio.get_running_loop()

    async def act_async(self, observation, info) -> str:
        assert asyncio.get_running_loop() is self.loop, (
            "an async client would be bound to a dead loop"
        )
        self.turn += 1
        return f"{self.seed}:{self.turn}"


def test_async_batch_runs_agents_per_episode_concurrently():
    batch = AsyncBatch(EchoAsync, max_batch_size=4)
    assert isinstance(batch, BatchAgent)
    batch.reset_episode("x", 1)
    batch.reset_episode("y", 2)
    assert batch.act_batch(["x", "y"], ["", ""], [{}, {}]) == ["1:1", "2:1"]
    assert batch.act_batch(["y"], [""], [{}]) == ["2:2"]
    batch.end_episode("x")
    clone = pickle.loads(pickle.dumps(batch))  # the loop stays behind; the copy opens its own
    clone.reset_episode("z", 3)
    assert clone.act_batch(["z"], [""], [{}]) == ["3:1"]
    batch.close()
    clone.close()
    with pytest.raises(ValueError, match="max_batch_size"):
        AsyncBatch(EchoAsync, max_batch_size=0)


@pytest.mark.parametrize("commands", ["go north", [7], ("go north", None), {"go north": 1}])
def test_the_oracle_agent_refuses_oracle_actions_that_are_no_commands(commands):
    """A str was played a letter at a time (' '), an int returned as the command (7)."""
    agent = OracleAgent(0.0)
    agent.reset(0)
    info = {"admissible_actions": ["go north", "look"], "oracle_actions": commands}
    with pytest.raises(TypeError, match=r"info\['oracle_actions'\]"):
        agent.act("", info)


@pytest.mark.parametrize("seed", [True, None, 1.5, "3", -1, 2**64])
@pytest.mark.parametrize(
    "make",
    ["random", "oracle:0.5", "control:undo", "control:pingpong", "control:recovery-positive"],
)
def test_a_baseline_agent_refuses_a_seed_it_cannot_replay(make, seed):
    """reset(True) was reset(1), reset(None) a draw from the OS (no replay), and 1.5, "3" and
    -1 raw NumPy errors."""
    from turnbudget.agents import make_agent

    agent = make_agent(make)
    with pytest.raises(ValueError, match="Expect `seed` to be an int"):
        agent.reset(seed)
    agent.reset(np.int64(3))  # (a NumPy int is a seed)


def test_two_epsilons_a_repr_rounded_alike_are_two_runs(tmp_path):
    """``{epsilon:g}`` wrote 0.3333333 and 0.33333349 as 0.333333: the second agent resumed
    the first's run (nothing played), its records called the first's."""
    from turnbudget.agents.controls import LookOracle, RecoveryControl
    from turnbudget.eval import evaluate

    for make in (OracleAgent, lambda e: LookOracle("last", epsilon=e),
                 lambda e: RecoveryControl(on_track=e, after_error=0.9)):  # fmt: skip
        assert repr(make(0.3333333)) != repr(make(0.33333349))
    assert repr(OracleAgent(0.3)) == "OracleAgent(epsilon=0.3)"  # (short where exact)
    assert (
        repr(OracleAgent(0)) == "OracleAgent(epsilon=0)"
        and OracleAgent(0.1).name == "oracle-eps0.1"
    )
    out = tmp_path / "run"
    evaluate("turnbudget/Maze-Easy-v0", OracleAgent(0.3333333), ks=[1], ts=[5], tasks=1, out=out)
    with pytest.raises(ValueError, match="different configuration"):
        evaluate("turnbudget/Maze-Easy-v0", OracleAgent(0.33333349), ks=[1], ts=[5], tasks=1,
                 out=out)  # fmt: skip


@pytest.mark.parametrize(
    "spec, says",
    [("a." * 2000 + "b:A", "nested too deep"), ("/" + "a/" * 3000 + "x.py:A", "cannot be read"),
     ("~nouser-xyz/x.py:A", "cannot be read"), ("/tmp/a\x00.py:A", "cannot be read"),
     ("turnbudget:" + "agents." * 20000 + "OracleAgent", "has no attribute")],
)  # fmt: skip
def test_a_spec_no_file_system_or_import_can_take_is_one_short_error(spec, says):
    """RecursionError, OSError ("File name too long"), RuntimeError ("Could not determine
    home directory") and a bare "embedded null byte", each quoting the spec whole."""
    from turnbudget.agents import make_agent

    with pytest.raises(ValueError, match=says) as caught:
        make_agent(spec)
    assert len(str(caught.value)) < 1500
