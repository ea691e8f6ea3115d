"""The learner's features built for all its sub-envs at once.

`HistoryFeatures` on every sub-env featurises one observation at a time: about 20
small NumPy calls a step per env, whose fixed cost dominated the training env side
(issue 26). In the learner's vector env each sub-env's stack ends instead in
`TurnInputs`, which plays the action indices as `DiscreteActions` does and hands up
what the features are made from (a `Turn`) in a small info, and one `BatchEncoder`
(inside the vector env of `batched_vec_env`) turns the turns of all sub-envs into the
vectors: one count and one lookup for the text blocks, one array per feature group.
The encoders are `TextEncoder` and `FeatureEncoder`, the ones `TextFeatures`,
`HistoryFeatures` and `PolicyAgent` use (their ``encode`` is ``encode_batch`` of one):
the vectors are those of the per-env stack, bit for bit.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from turnbudget.wrappers.discrete_actions import CommandSlots
from turnbudget.wrappers.history_features import FeatureEncoder, FeatureEpisode, executed_command
from turnbudget.wrappers.text_features import TextEncoder

__all__ = [
    "TRAINING_INFO_KEYS",
    "TURN_KEY",
    "BatchEncoder",
    "Turn",
    "TurnInputs",
    "batched_vec_env",
    "sub_env_seeds",
]

#: The info key under which `TurnInputs` hands up its `Turn`.
TURN_KEY = "turn_inputs"
#: The info keys the learner's sub-envs keep (`TurnInputs`), as plain Python scalars.
TRAINING_INFO_KEYS = ("won", "lost", "turns_used", "turn_budget")
_NO_OBSERVATION = np.zeros(0, dtype=np.float32)
_NO_OBSERVATION.flags.writeable = False


class Turn(NamedTuple):
    """What one sub-env's turn gives the features: the text observation (with the budget
    `RevealBudget` shows), the slot commands, the admissible commands, the budget numbers
    (None on turns the text does not show them), and either the episode's goal (at reset)
    or the command executed (at a step)."""

    text: str
    commands: Sequence[str]
    admissible: Sequence[str]
    turns_left: int | None
    turn_budget: int | None
    goal: str | None = None
    executed: str | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Turn:
        return self  # immutable, and SB3's vector envs deep-copy every info of every step


class _SmallInfo(dict):
    """An info whose values are immutable (or, as Monitor's and SB3's, never changed after):
    SB3's deep copy of it is a shallow one."""

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return dict(self)


class TurnInputs(gym.Wrapper):
    """End the learner's stack of one sub-env: in place of `DiscreteActions`, `TextFeatures`
    and `HistoryFeatures`, one layer (issue 26) that plays action indices on the text stack
    it wraps as `DiscreteActions` does (the same `CommandSlots`: ``action_masks()`` too),
    returns an empty vector as the observation, and an info that holds only
    `TRAINING_INFO_KEYS` and, under `TURN_KEY`, the `Turn` a `BatchEncoder` makes the
    features from. SB3's vector envs deep-copy every info of every step: the text keys
    cost more to copy than the game's step, and the policy reads none of them.

    Args:
        env: A stack with text observations and actions (and ``admissible_actions`` infos).
        max_actions: The action slots (`DiscreteActions`' ``max_actions``).
    """

    def __init__(self, env: gym.Env, max_actions: int):
        super().__init__(env)
        if not (
            isinstance(env.observation_space, spaces.Text)
            and isinstance(env.action_space, spaces.Text)
        ):
            raise ValueError("TurnInputs wraps a text stack (Text observations and actions)")
        self._slots = CommandSlots(max_actions)
        self.max_actions = self._slots.max_actions
        self.action_space = spaces.Discrete(self.max_actions)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(0,), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return _NO_OBSERVATION, self._hand_up(obs, info, str(info.get("goal", "")), None)

    def step(self, action: Any):
        command = self._slots.command(action)
        played = command if self._slots.commands else ""  # (as HistoryFeatures.step)
        obs, reward, terminated, truncated, info = self.env.step(command)
        if "injected_error" in info:  # (a slip may have replaced it; else no call to ask)
            played = executed_command(played, info)
        info = self._hand_up(obs, info, None, played)
        return _NO_OBSERVATION, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Which indices play an admissible command now (for ``MaskablePPO``)."""
        return self._slots.mask.copy()

    def _hand_up(
        self, obs: str, info: dict[str, Any], goal: str | None, executed: str | None
    ) -> dict[str, Any]:
        admissible = info["admissible_actions"]
        self._slots.update(admissible)
        budget = info["turn_budget"]
        # The budget's numbers only on the turns its text shows (`HistoryFeatures`' rule).
        left, shown_budget = (
            (info.get("turns_left"), budget) if info.get("budget_visible") is True else (None, None)
        )
        # (a literal and tuple.__new__: a dict built from pairs and the NamedTuple's own
        # __new__ cost about as much as the rest of this layer's step)
        turn = tuple.__new__(
            Turn, (obs, self._slots.commands, admissible, left, shown_budget, goal, executed)
        )
        return _SmallInfo(
            {
                "won": info["won"],
                "lost": info["lost"],
                "turns_used": info["turns_used"],
                "turn_budget": budget,  # the `TRAINING_INFO_KEYS`
                TURN_KEY: turn,
            }
        )


class BatchEncoder:
    """The features of `HistoryFeatures` (after `TextFeatures`' blocks) for ``n_envs``
    sub-envs, from their `Turn` s, a batch at a time.

    Args:
        encoding: `HistoryFeatures.spec_dict` of the per-env stack (what `PolicyAgent`
            rebuilds the same features from).
        n_envs: The sub-envs.
    """

    def __init__(self, encoding: Mapping[str, Any], n_envs: int):
        spec = encoding["text_features"]
        self.history = FeatureEncoder(
            encoding["max_actions"],
            encoding["history"],
            encoding["command_dim"],
            encoding["budget"],
        )
        self.text = TextEncoder(
            ngrams=spec["ngrams"],
            include_goal=spec["include_goal"],
            include_admissible=spec["include_admissible"],
            block_dim=spec["dim"],
            bag_dim=self.history.memory_dim,  # one pass over the lines for both
        )
        size = self.text.space.shape[0] + self.history.size()
        #: The vectors' space (`HistoryFeatures.observation_space`).
        self.space = spaces.Box(-np.inf, np.inf, shape=(size,), dtype=np.float32)
        # each sub-env's goal block as the bytes of its float32s (a batch's are one join)
        self._goals: list[bytes] = [b""] * n_envs
        self._episodes: list[FeatureEpisode | None] = [None] * n_envs

    def encode(self, envs: Iterable[int], turns: Sequence[Turn]) -> np.ndarray:
        """The vectors (rows) of these sub-envs' turns: a turn with a goal starts an episode,
        one without plays on the sub-env's episode with its executed command. The turns are
        taken in order: a sub-env may come twice, its episode's last turn then its reset's."""
        envs = list(envs)
        if len(envs) != len(turns):
            raise ValueError(f"Expect one turn per sub-env, got {len(turns)} for {len(envs)}")
        if not envs:
            return np.zeros((0, self.space.shape[0]), dtype=np.float32)
        # The turns' fields, a tuple each (one transposition: a field read by name costs more).
        texts, commands, admissible, turns_left, budgets, goals, executed = zip(*turns)
        episodes, goal_rows = [], []
        sub_episodes, goals_of = self._episodes, self._goals  # (read per row)
        for env, goal, command in zip(envs, goals, executed):
            episode = sub_episodes[env]
            if goal is not None:
                if self.text.include_goal:
                    goals_of[env] = self.text.hash(goal).tobytes()
                episode = sub_episodes[env] = self.history.episode(goal)
            elif episode is None:
                raise ValueError(f"Sub-env {env} played a turn before its first reset")
            else:
                episode.record(command)  # (record makes it a str)
            episodes.append(episode)
            goal_rows.append(goals_of[env])
        goal_block = (
            np.frombuffer(b"".join(goal_rows), dtype=np.float32).reshape(len(envs), -1)
            if self.text.include_goal
            else goal_rows  # (unused)
        )
        base, bags, words = self.text.encode_batch_with_bags(texts, goal_block, admissible)
        extra = self.history.encode_batch(
            episodes, texts, commands, turns_left, budgets, (bags, words)
        )
        return np.concatenate([base, extra], axis=1)


def sub_env_seeds(seed: int, n_envs: int) -> list[int]:
    """The first-reset seeds of a learner's ``n_envs`` sub-envs, from its run's ``seed``: one
    stream of tasks and budgets per (seed, sub-env). SB3's own, ``seed + i``, gave sub-env i of
    the run seeded s the streams of sub-env i - 1 of the run seeded s + 1: training seeds
    0..4 of 16 envs shared 15 of their 16 streams, and intervals over training seeds took
    them for independent runs.

    Example:
        >>> a, b = sub_env_seeds(0, 16), sub_env_seeds(1, 16)
        >>> len(set(a) | set(b)), a == sub_env_seeds(0, 16)
        (32, True)
    """
    state = np.random.SeedSequence([int(seed), 0x5EED]).generate_state(n_envs, dtype=np.uint64)
    return [int(word) for word in state]


def _turns(infos: Iterable[dict[str, Any]]) -> list[Turn]:
    return [info.pop(TURN_KEY) for info in infos]


def _indices(actions: Any) -> Any:
    """A learner's actions for its sub-envs: a 1-D integer array as Python ints (what
    `TurnInputs` reads at once), anything else as it is."""
    if isinstance(actions, np.ndarray) and actions.ndim == 1 and actions.dtype.kind in "iu":
        return actions.tolist()
    return actions


def _ignoring_ctrl_c(env_fn: Callable[[], gym.Env]) -> Callable[[], gym.Env]:
    """``env_fn`` run in a sub-env's process that ignores SIGINT: a terminal's Ctrl-C reaches
    every process of its group, the sub-envs died at once, and the trainer's close of them
    raised EOFError over its KeyboardInterrupt (a traceback and exit 1, where the command
    line says one line and exits 130). The trainer closes them."""

    def make() -> gym.Env:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return env_fn()

    return make


def batched_vec_env(
    env_fns: Sequence[Callable[[], gym.Env]], encoder: BatchEncoder, processes: bool = False
) -> Any:
    """An SB3 VecEnv of the `TurnInputs` stacks ``env_fns`` make, in this process or each in
    its own (``processes``): its observations are ``encoder``'s vectors (``terminal_observation``
    too), and the `Turn` s leave the infos. Needs SB3."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnvWrapper

    class TurnSubprocVecEnv(SubprocVecEnv):
        def seed(self, seed: int | None = None) -> list[int]:
            self._seeds = sub_env_seeds(super().seed(seed)[0], self.num_envs)
            return self._seeds

    class TurnVecEnv(DummyVecEnv):
        """A DummyVecEnv without its copies of every step's observations (empty vectors here,
        never written: its buffer is returned as it is) and infos (`TurnInputs` makes new ones
        every step). The actions are played as Python ints and the rewards and dones gathered
        in lists, made arrays once a step (a NumPy item costs more than a list's)."""

        def seed(self, seed: int | None = None) -> list[int]:
            self._seeds = sub_env_seeds(super().seed(seed)[0], self.num_envs)
            return self._seeds

        def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            rewards, dones, infos = [], [], []
            for i, (env, action) in enumerate(zip(self.envs, _indices(self.actions), strict=True)):
                _, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
                info["TimeLimit.truncated"] = truncated and not terminated
                if done:
                    info["terminal_observation"] = _NO_OBSERVATION
                    _, self.reset_infos[i] = env.reset()
                infos.append(info)
                rewards.append(reward)
                dones.append(done)
            self.buf_infos = infos
            return (
                self.buf_obs[None],
                np.array(rewards, dtype=self.buf_rews.dtype),
                np.array(dones, dtype=self.buf_dones.dtype),
                list(infos),
            )

    class BatchedFeatures(VecEnvWrapper):
        def reset(self) -> np.ndarray:
            self.venv.reset()
            return encoder.encode(range(self.num_envs), _turns(self.venv.reset_infos))

        def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            _, rewards, dones, infos = self.venv.step_wait()
            n, done = self.num_envs, np.flatnonzero(dones)
            # One batch: every sub-env's turn, then the turns of those that reset (in
            # reset_infos), whose rows replace their last turns' in the observations.
            turns = _turns(infos) + _turns(self.venv.reset_infos[env] for env in done)
            rows = encoder.encode([*range(n), *done], turns)
            obs = rows[:n]
            if len(done):
                for env in done:
                    infos[env]["terminal_observation"] = obs[env].copy()
                obs[done] = rows[n:]
            return obs, rewards, dones, infos

    if processes:
        venv = TurnSubprocVecEnv([_ignoring_ctrl_c(fn) for fn in env_fns], start_method="fork")
    else:
        venv = TurnVecEnv(env_fns)
    return BatchedFeatures(venv, observation_space=encoder.space)
