"""Process supervision: potential-based reward shaping from the distance to goal."""

from __future__ import annotations

import math
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.core import ActType, ObsType

from turnbudget._checks import MAX_TURN_BUDGET, brief, is_finite
from turnbudget.envs.core import oracle_distance
from turnbudget.wrappers._common import record_args, require_oracle, require_single

__all__ = ["MAX_SCALE", "ProcessReward"]

#: The largest ``scale``: far past any useful shaping (the success reward is 1.0). With it and
#: ``unsolvable_distance`` at most `MAX_TURN_BUDGET`, every potential is a finite float
#: (``scale=1e308`` made Φ = -inf and every shaped reward NaN).
MAX_SCALE = 1_000_000

_POTENTIALS = ("distance", "progress")
_AT_TRUNCATION = ("keep", "zero")


def _check_real(value: Any, name: str, low: float, high: float, low_open: bool = False) -> float:
    ok = is_finite(value) and (low < value if low_open else low <= value) and value <= high
    if not ok:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if math.isinf(high) else ']'}"
        raise ValueError(f"Expect `{name}` to be a number in {interval}, got {brief(value)}")
    return float(value)


def _check_at_most(value: float, name: str, most: float) -> float:
    if value > most:
        raise ValueError(f"Expect `{name}` to be at most {most:,}, got {brief(value)}")
    return value


class ProcessReward(
    gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs
):
    """Add a potential-based shaping reward F = γ·Φ(s') − Φ(s) to the env's reward.

    Potentials:

    - ``"distance"`` (default): Φ(s) = −scale · ``distance_to_goal()`` (the
      oracle); a state where the task is unsolvable gets
      Φ = −scale · ``unsolvable_distance``.
    - ``"progress"``: Φ(s) = scale · ``info["progress"]`` (the env's 0..1
      progress: subgoals a player can see, such as doors opened or boxes on
      targets; no oracle needed, none used). It is as dense as the game's
      subgoals: on Maze, which has none, it rewards reaching the goal only.

    Guarantee (Ng, Harada & Russell, 1999): shaping of this form leaves the set
    of optimal policies unchanged, provided ``gamma`` equals the learner's
    discount and Φ = 0 wherever the learner stops its returns. Φ(s') is always
    0 when the step terminated. At truncation (the budget ran out) it depends
    on how the learner treats a cut episode, set by ``potential_at_truncation``:

    - ``"keep"`` (default): Φ(s') is kept. Right for learners that bootstrap
      at truncation (target r + γV(s')), as SB3's PPO and DQN do with
      ``TimeLimit.truncated``: the cut state is then an ordinary state, so the
      optimal policy is unchanged. For a learner that does not bootstrap, the
      shaped return of a cut episode keeps γ^T·Φ(s_T), which rewards ending
      the budget near the goal: the optimal policy can change.
    - ``"zero"``: Φ(s') = 0 at truncation, as at termination. Right for
      learners that optimize the budget-capped return without bootstrapping
      (Monte Carlo returns, REINFORCE or GRPO over whole episodes): the shaping
      then telescopes to −Φ(s_0), a constant, so the optimal policy for the
      capped return is unchanged. A bootstrapping learner would instead see a
      spurious drop of Φ at the cut.

    Errors, injected or not, cost exactly the potential they lose. A step after
    the episode's end shapes nothing (shaping 0, the oracle not asked).

    ``info["process_reward"]`` carries ``{"env_reward", "shaping", "potential"}``.

    Args:
        env: The env to wrap (with the oracle for the distance potential).
        gamma: The learner's discount, in (0, 1].
        potential: ``"distance"`` or ``"progress"``.
        scale: Multiplies Φ (> 0, at most `MAX_SCALE`); keep shaping small next to the 1.0
            success reward.
        unsolvable_distance: The distance used for Φ where ``distance_to_goal()`` is None
            (at most `MAX_TURN_BUDGET`).
        potential_at_truncation: ``"keep"`` or ``"zero"`` (see above).

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = ProcessReward(gym.make("turnbudget/Maze-Easy-v0"), gamma=1.0, scale=0.1)
        >>> _ = env.reset(seed=0)
        >>> best = env.unwrapped.optimal_actions()[0]
        >>> _, reward, _, _, info = env.step(best)
        >>> round(reward, 3), round(info["process_reward"]["shaping"], 3)
        (0.1, 0.1)
        >>> _, reward, _, _, _ = env.step("look")
        >>> round(reward, 3)
        0.0
    """

    #: Why it must sit outside a `TurnBudget` (which refuses it underneath).
    outside_turn_budget = (
        "its potential at truncation applies when it sees the budget end an episode"
    )

    def __init__(
        self,
        env: gym.Env[ObsType, ActType],
        gamma: float = 0.99,
        potential: str = "distance",
        scale: float = 0.1,
        unsolvable_distance: float = 100.0,
        potential_at_truncation: str = "keep",
    ):
        record_args(
            self,
            gamma=gamma,
            potential=potential,
            scale=scale,
            unsolvable_distance=unsolvable_distance,
            potential_at_truncation=potential_at_truncation,
        )
        gym.Wrapper.__init__(self, env)
        self.gamma = _check_real(gamma, "gamma", 0.0, 1.0, low_open=True)
        if potential not in _POTENTIALS:
            raise ValueError(
                f"Expect `potential` to be one of {_POTENTIALS}, got {brief(potential)}"
            )
        self.potential = potential
        self.scale = _check_at_most(
            _check_real(scale, "scale", 0.0, math.inf, low_open=True), "scale", MAX_SCALE
        )
        self.unsolvable_distance = _check_at_most(
            _check_real(unsolvable_distance, "unsolvable_distance", 0.0, math.inf),
            "unsolvable_distance",
            MAX_TURN_BUDGET,
        )
        if potential == "distance":
            require_oracle(
                env, ("distance_to_goal",), "ProcessReward", " (use potential='progress')"
            )
        if potential_at_truncation not in _AT_TRUNCATION:
            raise ValueError(
                f"Expect `potential_at_truncation` to be one of {_AT_TRUNCATION}, "
                f"got {brief(potential_at_truncation)}"
            )
        self.potential_at_truncation = potential_at_truncation
        require_single(env, ProcessReward)
        self._phi = 0.0
        self._over = False  # the episode has ended: no more shaping

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._phi = self._potential(info)
        self._over = False
        return obs, info

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._over:  # a step after the end: nothing to shape
            phi, shaping = self._phi, 0.0
        else:
            stops = terminated or (truncated and self.potential_at_truncation == "zero")
            phi = 0.0 if stops else self._potential(info)
            shaping = self.gamma * phi - self._phi
            self._phi = phi
            self._over = terminated or truncated
        assert "process_reward" not in info, "info['process_reward'] set twice"
        info["process_reward"] = {"env_reward": float(reward), "shaping": shaping, "potential": phi}
        return obs, float(reward) + shaping, terminated, truncated, info

    def _potential(self, info: dict[str, Any]) -> float:
        if self.potential == "progress":
            progress = info.get("progress", 0.0)
            if isinstance(progress, np.ndarray) and progress.shape in ((), (1,)):
                progress = progress.item()  # (under a ProcessReward over NumericInfo's arrays)
            # (a custom game's NaN was a NaN reward, its "0.5" taken as 0.5)
            if not is_finite(progress):
                raise ValueError(
                    f"Expect info['progress'] of {type(self.env.unwrapped).__name__} to be a "
                    f"finite number (its 0..1 progress), got {brief(progress)}"
                )
            return self.scale * float(progress)
        distance = oracle_distance(self.env.unwrapped)  # (an int >= 0 or None, else ValueError)
        return -self.scale * (self.unsolvable_distance if distance is None else float(distance))
