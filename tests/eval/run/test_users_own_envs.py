"""`evaluate` on an env of the user's own: without an oracle it measures outcomes (Pass@(K,T)
needs only success), and what it cannot play is named, not a crash deep inside."""

from __future__ import annotations

import string

import gymnasium as gym
import pytest
from gymnasium import spaces

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.envs.native.maze import Maze
from turnbudget.eval import evaluate, probe


class Corridor(gym.Env):
    """Walk east to the end of a corridor of 3 to 7 cells; no oracle."""

    def __init__(self):
        self.observation_space = spaces.Text(512, min_length=0, charset=string.printable)
        self.action_space = spaces.Text(512, min_length=0, charset=string.printable)

    def _info(self, valid=None):
        info = {"admissible_actions": [] if self.over else ["east", "west"], "won": self.over,
                "lost": False, "progress": self.pos / self.length}  # fmt: skip
        if valid is not None:
            info["valid_action"] = valid
        return info

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.length, self.pos, self.over = int(self.np_random.integers(3, 8)), 0, False
        return f"A corridor of {self.length}.", {**self._info(), "goal": "Reach the east end."}

    def step(self, action):
        valid = action.strip() in ("east", "west")
        if valid:
            self.pos = max(0, self.pos + (1 if action.strip() == "east" else -1))
        self.over = self.pos == self.length
        return f"At {self.pos}.", float(self.over), self.over, False, self._info(valid)


class ListObservations(Corridor):
    def reset(self, *, seed=None, options=None):
        observation, info = super().reset(seed=seed, options=options)
        return [observation], info


class ListMaze(Maze):
    def reset(self, *, seed=None, options=None):
        observation, info = super().reset(seed=seed, options=options)
        return [observation], info


class EastAgent:
    def reset(self, seed):
        pass

    def act(self, observation, info):
        return "east"


@pytest.fixture
def ids():
    made = {"users/Corridor-v0": Corridor, "users/ListObs-v0": ListObservations,
            "users/ListMaze-v0": ListMaze}  # fmt: skip
    for env_id, cls in made.items():
        gym.register(env_id, entry_point=cls, max_episode_steps=40)
    yield list(made)
    for env_id in made:
        del gym.registry[env_id]


def test_an_env_without_an_oracle_is_evaluated_on_its_outcomes(ids):
    """Every such env was refused: "RecordStepOutcomes needs the oracle ... (pass
    oracle=False)", an argument evaluate does not have."""
    result = evaluate(ids[0], EastAgent(), ks=[1], ts=[3, 8], tasks=4, n=1, n_bootstrap=0)
    lengths = [Corridor().reset(seed=s)[0] for s in range(4)]
    assert result.summary["groups"][ids[0]]["truncate"]["mean"] == [[0.0, 1.0]], lengths
    analysis = result.summary["analysis"][ids[0]]
    assert analysis["optimal_step_rate"] is None and analysis["success_rate"] == 1.0


def test_an_agent_that_needs_the_oracle_is_refused_on_an_env_without_one(ids):
    with pytest.raises(ValueError, match=r"needs the oracle .* the env has none"):
        evaluate(ids[0], OracleAgent(), ks=[1], ts=[8], tasks=2, n=1)


def test_an_env_whose_observations_are_no_text_is_named(ids, tmp_path):
    """Agents and wrappers read text: a list went to the agent, or failed deep inside."""
    with pytest.raises(ValueError, match="failed to run"):
        evaluate(ids[1], RandomAgent(), ks=[1], ts=[8], tasks=2, n=1, retries=0, out=tmp_path)
    assert (
        "'users/ListObs-v0' to give str observations" in (tmp_path / "episodes.jsonl").read_text()
    )
    with pytest.raises(TypeError, match=r"'users/ListMaze-v0' to give str observations"):
        probe(ids[2], RandomAgent(), tasks=1, baseline_repeats=1)
