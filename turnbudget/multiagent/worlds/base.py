"""The world half of a multi-agent text game: roles, rules and oracle, no PettingZoo.

A `TeamWorld` is what the single-agent `TextGame` is without its Gymnasium
front-end, for several roles acting at once: it is generated from a NumPy
``Generator``, takes one command per role per round, and answers oracle
questions. `turnbudget.multiagent.base.TextParallelEnv` puts a PettingZoo
front-end on it. Command normalisation and display sanitising are the native
engine's (imported, not copied), so a command means the same thing in a
single-agent game and in a team game.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from turnbudget._checks import brief
from turnbudget.envs.native.base import normalize_command, sanitize_for_display

__all__ = ["TeamOracle", "TeamWorld"]

# Commands longer than this are never admissible (the native engine's limit).
MAX_PARSED_LENGTH = 200


@runtime_checkable
class TeamOracle(Protocol):
    """`turnbudget.envs.core.Oracle` for teams: the same questions, asked per agent.

    In a cooperative game the answers are the team's (``distance_to_goal`` is
    the joint plan's length whatever the agent); in a competitive one they
    are the agent's best response to the game's fixed opponent policy.
    """

    def optimal_actions(self, agent: str) -> list[str]:
        """Every admissible command of ``agent`` that starts a shortest plan to success."""
        ...

    def distance_to_goal(self, agent: str | None = None) -> int | None:
        """Rounds of that plan (0 once won, None when ``agent`` can no longer succeed)."""
        ...

    def joint_plan(self, agent: str | None = None) -> list[dict[str, str]]:
        """One such plan, as one ``{agent: command}`` dict per round."""
        ...

    def inject_setback(self, agent: str, rng: np.random.Generator) -> str:
        """Apply a recoverable perturbation aimed at ``agent``; return its narration."""
        ...


class TeamWorld:
    """Base class of the team worlds: roles, a seeded generation, one round at a time.

    Subclasses set ``roles`` and ``configs`` (a config per difficulty, in
    ``self.config``) and implement:

    - ``_try_generate(config, rng)``: draw a world from ``rng`` only and say
      whether it meets the config (`generate` draws until one does);
      ``_setup(...)`` builds a world from a layout and starts it with
      `_start_layout` (``from_layout`` builds one by hand through `_laid_out`);
    - ``goal(role)``, ``describe(role)``: the texts a role perceives;
    - ``_admissible(role)``: canonical commands admissible now, and
      ``_admissible_key(role)``, the state they depend on (`admissible`
      remembers them per key, for the layout);
    - ``parse(role, command)``: map a raw command to a canonical one, or
      None when it is not admissible (default: `normalize_command` then a
      lookup in ``admissible(role)``);
    - ``play_round(commands)``: apply one canonical command (or None for an
      invalid one) per role, simultaneously; return each role's feedback;
    - ``won(role)``, ``lost(role)``, ``over``, ``progress(role)``;
    - the oracle: ``distance_to_goal(role)``, ``optimal_actions(role)``,
      ``joint_plan(role)`` and ``inject_setback(role, rng)``.
    """

    roles: ClassVar[tuple[str, ...]] = ()
    difficulties: ClassVar[tuple[str, ...]] = ("easy", "medium", "hard")
    configs: ClassVar[Mapping[str, Any]] = {}
    #: Worlds `generate` draws before it gives up (the configs always succeed far sooner).
    generation_tries: ClassVar[int] = 300

    # State that rounds and setbacks mutate in place. Everything else is rebound
    # when it changes, or is a per-world table (maps, memos keyed by state), so
    # copies share it.
    _mutable: ClassVar[tuple[str, ...]] = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> TeamWorld:
        """A cheap, independent copy for look-ahead (an oracle check, a slip's solvability)."""
        clone = copy.copy(self)
        memo[id(self)] = clone
        for name in self._mutable:
            if hasattr(self, name):
                setattr(clone, name, copy.deepcopy(getattr(self, name), memo))
        return clone

    def __init__(self, difficulty: str = "easy"):
        if not isinstance(difficulty, str) or difficulty.lower() not in self.difficulties:
            raise ValueError(
                f"Expect `difficulty` to be one of {self.difficulties}, got {brief(difficulty)}"
            )
        self.difficulty = difficulty.lower()
        self.config = self.configs.get(self.difficulty)
        self.generated = False

    # -- worlds -----------------------------------------------------------------------

    def generate(self, rng: np.random.Generator) -> None:
        """Build a new world from ``rng`` only: draw until one meets the difficulty's config."""
        for _ in range(self.generation_tries):
            if self._try_generate(self.config, rng):
                break
        else:  # pragma: no cover - the configurations always succeed quickly
            name = type(self).__name__.removesuffix("World")
            raise RuntimeError(f"could not generate a {self.difficulty} {name}")
        self.generated = True

    @classmethod
    def _laid_out(cls, difficulty: str, *layout: Any) -> Any:
        """A world built by hand from ``layout`` (``_setup``'s arguments), for ``from_layout``."""
        world = cls(difficulty)
        world._setup(*layout)
        world.generated = True
        return world

    def _start_layout(self) -> None:
        """Forget what was remembered of the previous layout (``_setup`` calls it first)."""
        self._admissible_memo: dict[Any, list[str]] = {}  # never mutate a cached list

    # -- commands ---------------------------------------------------------------------

    def admissible(self, role: str) -> list[str]:
        """The canonical commands of ``role`` admissible now (remembered per state)."""
        key = self._admissible_key(role)
        cached = self._admissible_memo.get(key)
        if cached is None:
            cached = self._admissible_memo[key] = self._admissible(role)
        return cached

    def parse(self, role: str, command: str) -> str | None:
        """The canonical form of ``command`` for ``role``, or None when it is not admissible."""
        admissible = self.admissible(role)
        if command in admissible:
            return command
        canonical = normalize_command(command)
        return canonical if canonical in admissible else None

    def explain_invalid(self, role: str, command: Any) -> str:
        """Feedback for a command that is not admissible (or not a string at all)."""
        if not isinstance(command, str):
            return f"Expect a text command, got {type(command).__name__}; nothing happens."
        if len(command) > MAX_PARSED_LENGTH:
            return f"That command is too long ({len(command)} characters); nothing happens."
        if not command.strip():
            return "You need to type a command, such as `look`."
        return f'You can\'t do that: "{sanitize_for_display(command)}".'

    def step(self, actions: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
        """Parse each role's raw action and play one round: role -> (feedback, valid)."""
        parsed = {
            role: (self.parse(role, actions[role]) if isinstance(actions.get(role), str) else None)
            for role in self.roles
        }
        feedback = self.play_round(parsed)
        results = {
            role: (
                feedback[role] if parsed[role] is not None
                else self.explain_invalid(role, actions.get(role)),
                parsed[role] is not None,
            )
            for role in self.roles
        }  # fmt: skip
        if self.over:  # (told whatever its last command was: an invalid one's text hid it)
            # (a paragraph of its own: a transient error's narration replaces the first)
            results = {
                role: ("\n\n".join(filter(None, (text, self.ending(role)))), valid)
                for role, (text, valid) in results.items()
            }
        return results

    # -- to implement -------------------------------------------------------------------

    def _try_generate(self, config: Any, rng: np.random.Generator) -> bool:
        raise NotImplementedError

    def _setup(self, *layout: Any) -> None:
        raise NotImplementedError

    def goal(self, role: str) -> str:
        raise NotImplementedError

    def describe(self, role: str) -> str:
        raise NotImplementedError

    def _admissible_key(self, role: str) -> Any:
        raise NotImplementedError

    def _admissible(self, role: str) -> list[str]:
        raise NotImplementedError

    def play_round(self, commands: Mapping[str, str | None]) -> dict[str, str]:
        raise NotImplementedError

    def won(self, role: str) -> bool:
        raise NotImplementedError

    def ending(self, role: str) -> str:
        """What ``role`` is told when the game ends, after its last command's feedback
        (nothing when that feedback already says it)."""
        return ""

    def lost(self, role: str) -> bool:
        raise NotImplementedError

    @property
    def over(self) -> bool:
        raise NotImplementedError

    def progress(self, role: str) -> float:
        raise NotImplementedError

    def distance_to_goal(self, role: str | None = None) -> int | None:
        raise NotImplementedError

    def optimal_actions(self, role: str) -> list[str]:
        raise NotImplementedError

    def joint_plan(self, role: str | None = None) -> list[dict[str, str]]:
        raise NotImplementedError

    def inject_setback(self, role: str, rng: np.random.Generator) -> str:
        raise NotImplementedError
