"""The PettingZoo front-end of the team worlds: `TextParallelEnv`.

One class owns everything that must behave the same in every team game:
the spaces (a ``Dict`` observation with a printable ``Text`` entry, a
``Text`` action, both cached per agent), seeding, the per-agent ``info``
keys of the single-agent contract (`turnbudget.envs.core`), the rule that a
bad action (not a string, not admissible, or missing) costs that agent its
turn with feedback and never touches the others, and
`TextParallelEnv.check_actions`, which refuses a round that cannot be played
at all (before ``reset``, not a mapping, an agent that is not live) before
any wrapper or the world changes anything. A game module subclasses it with
its world class and docstring, and builds ``env()`` / ``parallel_env()``
with `game_factories`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from turnbudget._checks import brief, check_seed, check_turn_budget
from turnbudget.envs.core import (
    INFO_ADMISSIBLE_ACTIONS,
    INFO_GOAL,
    INFO_LOST,
    INFO_PROGRESS,
    INFO_VALID_ACTION,
    INFO_WON,
    MAX_ACTION_LENGTH,
    MAX_OBSERVATION_LENGTH,
    PRINTABLE,
)
from turnbudget.multiagent.worlds.base import TeamWorld

__all__ = [
    "TEXT_KEY",
    "TextParallelEnv",
    "UnknownAgentError",
    "agent_entry",
    "checked_aec",
    "game_factories",
]

#: The key of the printable text in every observation dict.
TEXT_KEY = "text"


class UnknownAgentError(KeyError, ValueError):
    """An agent the game does not have: a ``KeyError`` (what a lookup raises) and a ``ValueError``.

    Both, as NumPy's ``AxisError`` is both a ``ValueError`` and an ``IndexError``:
    code written against PettingZoo catches the first, the rule "bad input is a
    ``ValueError``" the second.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""  # a KeyError would quote its message


def agent_entry(table: Mapping[str, Any], agent: Any) -> Any:
    """``table[agent]`` for one of the game's agents, else `UnknownAgentError` naming them.

    Example:
        >>> agent_entry({"a": 1}, "a")
        1
        >>> agent_entry({"a": 1}, "b")
        Traceback (most recent call last):
        ...
        turnbudget.multiagent.base.UnknownAgentError: Expect `agent` to be one of ['a'], got 'b'
    """
    try:
        return table[agent]
    except (KeyError, TypeError):  # TypeError: an unhashable agent
        raise UnknownAgentError(
            f"Expect `agent` to be one of {list(table)}, got {brief(agent)}"
        ) from None


class TextParallelEnv(ParallelEnv[str, dict[str, str], str]):
    """A PettingZoo ``ParallelEnv`` over a `TeamWorld`: all agents act each round.

    Observations are ``{"text": str}``; actions are free-form text. The
    oracle of the world is exposed on the env (``distance_to_goal``,
    ``optimal_actions``, ``joint_plan``, ``inject_setback``), as the
    single-agent games expose theirs on the unwrapped env.
    """

    world_class: ClassVar[type[TeamWorld]]
    metadata: ClassVar[dict[str, Any]] = {
        "name": "team_text_game",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": True,
        "render_fps": 1,
    }

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"Expect `render_mode` to be one of {self.metadata['render_modes']}, got {brief(render_mode)}"
            )
        self.world = self.world_class(difficulty)
        self.difficulty = self.world.difficulty
        self.render_mode = render_mode
        self.possible_agents = list(self.world.roles)
        self.agents: list[str] = []
        text = spaces.Text(max_length=MAX_OBSERVATION_LENGTH, min_length=0, charset=PRINTABLE)
        # Built once: PettingZoo requires the same space object on every call.
        self._observation_spaces = {a: spaces.Dict({TEXT_KEY: text}) for a in self.possible_agents}
        self._action_spaces = {
            a: spaces.Text(max_length=MAX_ACTION_LENGTH, min_length=0, charset=PRINTABLE)
            for a in self.possible_agents
        }
        self._np_random: np.random.Generator | None = None
        self._last_text: dict[str, str] = {}
        self.rounds = 0
        self._reset_pending = True  # until a reset succeeds, step() raises ResetNeeded

    def observation_space(self, agent: str) -> spaces.Space:
        return agent_entry(self._observation_spaces, agent)

    def action_space(self, agent: str) -> spaces.Space:
        return agent_entry(self._action_spaces, agent)

    # -- PettingZoo API -------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
        if seed is not None:  # (bool, float or negative: one clear error, as every env's)
            seed = check_seed(seed)
        self.begin_reset()
        # Gymnasium's rule: a seed restarts the stream, no seed continues it.
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        self.world.generate(self._np_random)
        self.agents = self.possible_agents[:]
        self.rounds = 0
        observations, infos = {}, {}
        for agent in self.agents:
            goal = self.world.goal(agent)
            observations[agent] = self._observe(agent, f"{goal}\n\n{self.world.describe(agent)}")
            infos[agent] = {**self.agent_info(agent), INFO_GOAL: goal}
        self._reset_pending = False
        if self.render_mode == "human":  # (PettingZoo's "human": shown as it is played)
            self.render()
        return observations, infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        actions = self.check_actions(actions)
        if not self.agents:
            return {}, {}, {}, {}, {}
        results = self.world.step({a: actions.get(a) for a in self.agents})
        self.rounds += 1
        over = self.world.over
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent in self.agents:
            feedback, valid = results[agent]
            text = feedback if over else f"{feedback}\n\n{self.world.describe(agent)}"
            observations[agent] = self._observe(agent, text)
            rewards[agent] = 1.0 if over and self.world.won(agent) else 0.0
            terminations[agent] = over
            truncations[agent] = False
            infos[agent] = self.agent_info(agent, valid)
        if over:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def check_actions(self, actions: Any, agents: Sequence[str] | None = None) -> dict[str, Any]:
        """Refuse a round that cannot be played, before anything changes; else the round's
        commands, each ``str`` subclass as its plain text (its own ``==`` could match anything).

        Every team wrapper calls it before it touches its own state, so a
        refused ``step`` leaves the game, the error schedules, the budget and
        the records as they were. A bad *command* (not a string, not
        admissible) or a missing one is not refused: it costs that agent its turn.

        Args:
            actions: The round's ``{agent: command}``.
            agents: The caller's live agents (default: this env's): a wrapper
                can end the episode before the game does.

        Raises:
            ResetNeeded: Before the first ``reset``, or after a refused one.
            TypeError: ``actions`` is not a mapping.
            ValueError: ``actions`` names an agent that is not live (while one is).
        """
        if self._reset_pending:
            raise ResetNeeded(
                "The last reset() was refused (see the error it raised): call reset() again"
                if self.world.generated
                else "Call reset() before step()"
            )
        if not isinstance(actions, Mapping):
            raise TypeError(
                f"Expect the actions to be a dict {{agent: command}}, got {type(actions).__name__}"
            )
        live = self.agents if agents is None else agents
        unknown = set(actions) - set(live)
        if live and unknown:
            named = sorted(map(brief, unknown))  # (a key may be anything hashable: quoted, cut)
            more = f" and {len(named) - 3:,} more" if len(named) > 3 else ""
            raise ValueError(
                f"Expect actions only for live agents {list(live)}, got {', '.join(named[:3])}"
                f"{more}"
            )
        return {
            agent: str.__str__(command)
            if isinstance(command, str) and type(command) is not str
            else command
            for agent, command in actions.items()
        }

    def begin_reset(self) -> None:
        """Mark a reset under way: ``step`` raises ``ResetNeeded`` until one succeeds.

        Every team wrapper calls it before its ``reset`` changes anything, so
        a reset refused on the way in (a bad option) leaves no half-reset stack.
        """
        self._reset_pending = True

    def render(self) -> str | None:
        text = "\n\n".join(f"[{a}]\n{t}" for a, t in self._last_text.items())
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text)
        return None

    def close(self) -> None:
        """Nothing to release: the worlds are pure Python."""

    # -- oracle -----------------------------------------------------------------------------

    def distance_to_goal(self, agent: str | None = None) -> int | None:
        """Rounds of the shortest plan to success (for ``agent``, in games where it matters)."""
        return self.world.distance_to_goal(self.known_agent(agent, optional=True))

    def optimal_actions(self, agent: str) -> list[str]:
        """Every admissible command of ``agent`` that starts a shortest plan this round."""
        return self.world.optimal_actions(self.known_agent(agent))

    def joint_plan(self, agent: str | None = None) -> list[dict[str, str]]:
        """One shortest plan from now, as one ``{agent: command}`` dict per round."""
        return self.world.joint_plan(self.known_agent(agent, optional=True))

    def inject_setback(self, agent: str, rng: np.random.Generator) -> str:
        """Apply a recoverable perturbation aimed at ``agent`` and return its narration."""
        return self.world.inject_setback(self.known_agent(agent), rng)

    def known_agent(self, agent: Any, *, optional: bool = False) -> Any:
        """``agent`` if it is one of the game's (or None, where ``optional``), else
        `UnknownAgentError` naming them: the worlds took any other name for one of theirs
        (Vault's setback for "nobody" was the operator's) or failed on it
        ("tuple.index(x): x not in tuple")."""
        if not (optional and agent is None):
            agent_entry(self._action_spaces, agent)
        return agent

    # -- helpers ----------------------------------------------------------------------------

    def _observe(self, agent: str, text: str) -> dict[str, str]:
        text = text[:MAX_OBSERVATION_LENGTH]
        self._last_text[agent] = text
        return {TEXT_KEY: text}

    def agent_info(self, agent: str, valid: bool | None = None) -> dict[str, Any]:
        """``agent``'s info keys of the single-agent contract, now."""
        self.known_agent(agent)
        world = self.world
        info: dict[str, Any] = {
            INFO_ADMISSIBLE_ACTIONS: [] if world.over else list(world.admissible(agent)),
            INFO_WON: world.won(agent),
            INFO_LOST: world.lost(agent),
            INFO_PROGRESS: 1.0 if world.won(agent) else world.progress(agent),
        }
        if valid is not None:
            info[INFO_VALID_ACTION] = valid
        return info


class _CheckedAEC(parallel_to_aec_wrapper):
    """PettingZoo's AEC form of a parallel team env (``parallel_to_aec``), which refuses a bad
    action at the step of the agent who gave it, before anything is stored.

    PettingZoo's wrapper stores each agent's action until the round's last agent and steps
    the parallel env then: an index a discrete stack refuses was raised at the last agent's
    step, naming neither the agent nor its action, and stayed stored, so every later step
    raised it again until a reset. And an action for an agent that is done deleted its entry
    before asserting it was None: a bare ``AssertionError``, then a ``KeyError`` on every
    step. Here a done agent's action must be None (``ValueError`` otherwise), and a live
    agent's passes the parallel stack's ``check_agent_action`` first. ``observe`` of an agent
    the game does not have is an `UnknownAgentError` naming its agents, as the spaces are."""

    def observe(self, agent: Any) -> Any:
        # (PettingZoo's looked it up bare: KeyError('nobody'), or "unhashable type: 'list'")
        return agent_entry(self._observations, agent)

    def step(self, action: Any) -> None:
        raw = self.env.unwrapped
        if getattr(raw, "_reset_pending", False):  # (the round's first step was buffered, and
            raw.check_actions({})  # played on the refused episode's world: ResetNeeded here)
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            if action is not None:
                raise ValueError(
                    f"Agent {agent!r} is done (terminated or truncated): step it with None, "
                    f"as PettingZoo's AEC API asks, got {brief(action)}"
                )
        else:
            check = getattr(self.env, "check_agent_action", None)
            if check is not None:
                check(agent, action)
        super().step(action)


class _OrderEnforcing(OrderEnforcingWrapper):
    """PettingZoo's ordering checks, for which a refused reset is no reset: PettingZoo's
    counted a reset before it ran, so after a refused first one its checks let a step
    through, which failed inside PettingZoo (``'_CheckedAEC' object has no attribute
    'agents'``) instead of raising its own "reset() needs to be called"."""

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        had_reset = self._has_reset
        try:
            super().reset(seed=seed, options=options)
        except BaseException:
            self._has_reset = had_reset
            raise

    def __str__(self) -> str:  # (as PettingZoo's own wrapper shows itself: the env it wraps)
        return str(self.env)


def checked_aec(env: ParallelEnv) -> AECEnv:
    """The AEC form of the parallel team env ``env`` (PettingZoo's ``parallel_to_aec``, wrapped
    in its ordering checks as PettingZoo's own conversion is), whose ``step`` refuses a bad
    action at the step of the agent who gave it (`_CheckedAEC`)."""
    return _OrderEnforcing(_CheckedAEC(env))


def game_factories(
    raw_env: type[TextParallelEnv], default_budgets: Mapping[str, int]
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``env()`` and ``parallel_env()`` for a game: the raw env under a `TeamTurnBudget`.

    ``parallel_env(difficulty, turn_budget=None, render_mode=None, max_cycles=None)``
    returns the parallel env with the difficulty's default team budget (or
    ``turn_budget``); ``max_cycles`` is PettingZoo's name for the same number of
    rounds (for code written against ``pettingzoo`` games; give one of the two).
    ``env(...)`` is its AEC form by PettingZoo's own ``parallel_to_aec`` (`checked_aec`).
    """
    from turnbudget.multiagent.wrappers.team_turn_budget import TeamTurnBudget

    def parallel_env(
        difficulty: str = "easy",
        turn_budget: int | None = None,
        render_mode: str | None = None,
        max_cycles: int | None = None,
    ) -> TeamTurnBudget:
        if max_cycles is not None:
            if turn_budget is not None:
                raise ValueError(
                    f"Got turn_budget={brief(turn_budget)} and max_cycles={brief(max_cycles)}: "
                    "pass one (max_cycles is PettingZoo's name for the team budget)"
                )
            turn_budget = check_turn_budget(max_cycles, "max_cycles")
        game = raw_env(difficulty=difficulty, render_mode=render_mode)
        budget = default_budgets[game.difficulty] if turn_budget is None else turn_budget
        return TeamTurnBudget(game, turn_budget=budget)

    def env(
        difficulty: str = "easy",
        turn_budget: int | None = None,
        render_mode: str | None = None,
        max_cycles: int | None = None,
    ) -> Any:
        return checked_aec(parallel_env(difficulty, turn_budget, render_mode, max_cycles))

    name = raw_env.metadata["name"]
    parallel_env.__doc__ = (
        f"The {name} game as a PettingZoo ParallelEnv with its default team budget."
    )
    env.__doc__ = f"The {name} game as a PettingZoo AECEnv (`checked_aec` of `parallel_env`)."
    return env, parallel_env
