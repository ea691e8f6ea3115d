"""turnbudget's games in GEM (``gem-llm``): a ``gem.Env`` per id, registered with ``gem.register``.

GEM's trainers and example scripts make their envs with ``gem.make(id)``; after
`register_all`, every ``turnbudget/<Name>`` id is there as ``turnbudget:<Name>``
(GEM's ``<family>:<Name>`` convention), keyword arguments passed on to
``gymnasium.make``::

    from turnbudget.adapters.gem import register_all
    import gem

    register_all()
    env = gem.make("turnbudget:Maze-Easy-v0", turn_budget=20)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("I'll try \\\\boxed{go north}")

Behind the ``gem`` extra (``pip install -e '.[gem]' in the turnbudget checkout``: gem-llm 0.1); importing
this module imports GEM, whose own import calls ``logging.basicConfig(level=INFO)``.

What the games keep that GEM's own games lose (`turnbudget.utils.check_group_seeding`
tells them apart):

- The env's randomness is its own: ``reset(seed)`` seeds the game, never Python's and
  NumPy's global RNG (GEM's base ``reset`` seeds both; these envs do not call it), so
  K attempts with one seed start in the same state whatever else the trainer draws.
- ``terminated`` apart from ``truncated``: the `TurnBudget` truncates at T, and an
  episode won on its last turn is terminated, never both.
- The budget per env: ``gem.make(id, turn_budget=T)`` (or a ``budget_mix=``).

Actions: like GEM's games, the command is read from the last ``\\boxed{...}`` of the
reply (``boxed=True``), and the reset observation says so; a reply without one is
played whole, and a reply that is not a command is a turn spent with feedback.
``info["parsed_action"]`` carries the command played (GEM's observation wrappers show it
in the history).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

import gymnasium as gym
import numpy as np

try:
    import gem
    from gem.envs.registration import ENV_REGISTRY
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "turnbudget.adapters.gem needs GEM: pip install -e '.[gem]' in the turnbudget checkout (gem-llm 0.1)"
    ) from error

import turnbudget  # noqa: F401 - registers the turnbudget ids
from turnbudget._checks import brief, check_bool, check_seed
from turnbudget.registration import NAMESPACE

__all__ = ["BOXED_INSTRUCTION", "GemEnv", "gem_id", "register_all"]

#: Added to the reset observation when actions are read from ``\\boxed{...}``.
BOXED_INSTRUCTION = "Reply with one command inside \\boxed{}, for example \\boxed{look}."
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def gem_id(env_id: str) -> str:
    """GEM's id for a turnbudget id: ``turnbudget/Maze-Easy-v0`` -> ``turnbudget:Maze-Easy-v0``.

    Example:
        >>> gem_id("turnbudget/Maze-Easy-v0")
        'turnbudget:Maze-Easy-v0'
    """
    prefix = f"{NAMESPACE}/"
    if not isinstance(env_id, str) or not env_id.startswith(prefix):
        raise ValueError(
            f"Expect a turnbudget id ({prefix}<Name>) as `env_id`, got {brief(env_id)}"
        )
    return f"{NAMESPACE}:{env_id[len(prefix) :]}"


def register_all() -> list[str]:
    """Register every ``turnbudget/`` id with GEM as ``turnbudget:<Name>``; return GEM's ids.

    Calling it again registers nothing new (GEM refuses a second registration of an id).
    """
    ids = []
    for env_id in sorted(i for i in gym.registry if i.startswith(f"{NAMESPACE}/")):
        name = gem_id(env_id)
        if name not in ENV_REGISTRY:
            gem.register(name, _IdEntryPoint(env_id))
        ids.append(name)
    return ids


@dataclasses.dataclass(frozen=True)
class _IdEntryPoint:
    """GEM's entry point of one name: it makes that id's `GemEnv` and no other. (As a
    registered kwarg, the id was one ``gem.make`` let its caller's kwargs replace, so a
    name played another id's game.)"""

    turnbudget_id: str

    def __call__(self, **kwargs: Any) -> GemEnv:
        asked = kwargs.pop("turnbudget_id", self.turnbudget_id)
        if not (isinstance(asked, str) and asked == self.turnbudget_id):
            name = gem_id(self.turnbudget_id)
            raise ValueError(
                f"Expect no `turnbudget_id` other than {self.turnbudget_id!r} for {name}, got "
                f"{brief(asked)}: gem.make that id's own name instead"
            )
        return GemEnv(self.turnbudget_id, **kwargs)


class GemEnv(gem.Env):
    """A turnbudget id as a ``gem.Env``: ``reset(seed)`` -> (obs, info), ``step`` -> 5 values.

    Args:
        turnbudget_id: The turnbudget id, e.g. ``"turnbudget/Maze-Easy-v0"`` (GEM's own
            ``env_id``, set by ``gem.make``, is ``"turnbudget:Maze-Easy-v0"``).
        seed: The seed of the first reset, when that reset is given none (GEM's
            ``make_vec`` passes ``seed=`` to every env it makes); later resets without a
            seed continue the env's own RNG, as in Gymnasium (after ``reset(seed=s)``
            too: they never replay this seed).
        boxed: Read the command from the last ``\\boxed{...}`` of the action, and say so
            in the reset observation (GEM's convention); False: the action is the command.
        **make_kwargs: Passed to ``gymnasium.make`` (``turn_budget``, ``budget_mix``,
            ``reveal``...); an unknown one is refused there, by name.
    """

    def __init__(
        self,
        turnbudget_id: str,
        seed: int | None = None,
        boxed: bool = True,
        **make_kwargs: Any,
    ):
        super().__init__()
        # (gym.make imported the module of "os:Name", played CartPole's numbers as text, and
        # repeated a 1 MB id whole in its message)
        if not (
            isinstance(turnbudget_id, str)
            and turnbudget_id.startswith(f"{NAMESPACE}/")
            and turnbudget_id in gym.registry
        ):
            raise ValueError(
                f"Expect `turnbudget_id` to be a registered turnbudget id ({NAMESPACE}/<Name>, "
                f"`turnbudget list` shows them), got {brief(turnbudget_id)}"
            )
        if seed is not None:  # (as reset checks it: NumPy's message names no argument)
            seed = check_seed(seed)
        self.boxed = check_bool(boxed, "boxed")
        self.env = gym.make(turnbudget_id, **make_kwargs)
        self.turnbudget_id = turnbudget_id
        self._make_kwargs = make_kwargs
        self._first_seed = seed
        self._actions_rng = np.random.default_rng(seed)
        self._actions: list[str] = []  # the admissible commands, the env's own copy

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode fully determined by ``seed`` (the global RNG is left alone)."""
        if seed is None:
            seed = self._first_seed
        self._first_seed = None  # (used up by the first reset, seeded or not)
        obs, info = self.env.reset(seed=seed)
        if seed is not None:
            self._actions_rng = np.random.default_rng(seed)
        self._actions = [str(a) for a in info.get("admissible_actions") or ()]
        return (f"{obs}\n\n{BOXED_INSTRUCTION}" if self.boxed else obs), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Play the command in ``action``; ``terminated`` and ``truncated`` as the game gives them."""
        command = self.parse(action)
        obs, reward, terminated, truncated, info = self.env.step(command)
        assert "parsed_action" not in info, "info['parsed_action'] is the adapter's"
        info["parsed_action"] = command
        self._actions = [str(a) for a in info.get("admissible_actions") or ()]
        return obs, float(reward), bool(terminated), bool(truncated), info

    def parse(self, action: str) -> str:
        """The command in a reply: the last ``\\boxed{...}`` when ``boxed``, else the reply."""
        if self.boxed and isinstance(action, str):
            found = _BOXED.findall(action)
            if found:
                return found[-1].strip()
        return action

    def sample_random_action(self) -> str:
        """An admissible command (boxed when ``boxed``), drawn from the env's own generator."""
        actions = self._actions or ["look"]  # (a caller that edits the info changes nothing)
        command = actions[int(self._actions_rng.integers(len(actions)))]
        return f"\\boxed{{{command}}}" if self.boxed else command

    def spawn(self, same_state: bool = False, **kwargs: Any) -> GemEnv:
        """A new env of the same id and settings (``kwargs`` override them: a ``turn_budget``
        or a ``budget_mix`` replaces the budget it was made with); ``same_state``: a copy that
        continues from this one's state."""
        if same_state:
            if kwargs:
                raise ValueError("Expect no keyword arguments with same_state=True (a copy)")
            return copy.deepcopy(self)
        made = dict(self._make_kwargs)
        if "turn_budget" in kwargs or "budget_mix" in kwargs:  # (one replaces the other: they
            made.pop("turn_budget", None)  # are refused together)
            made.pop("budget_mix", None)
        options = {"boxed": self.boxed, **made, **kwargs}
        return GemEnv(self.turnbudget_id, **options)

    def close(self) -> None:
        """Close the game."""
        self.env.close()
