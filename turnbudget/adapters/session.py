"""`GameSession`: one game at a time behind a trainer's door, a row in, text out.

The TRL and verifiers adapters both play through it. It builds each env with
`turnbudget.make` (kept per env id and reused across episodes), resets it from
a row ``{env_id, seed, T}`` (so the T of the row is the `TurnBudget` that ends
the episode), and renders what the agent sees from the evaluator's agent view
(`turnbudget.eval.run.agent_view.agent_info`): the observation, the goal when
the observation does not state it, and the admissible commands. The budget
reaches the text only when ``reveal`` shows it (`RevealBudget` writes it into
the observation); the oracle never does.

How the episode ended is kept apart (`outcome`): ``won``, ``lost`` (the game
ended without a win), ``truncated`` (the row's T ran out) or, while the game
still runs, ``unfinished``. The episode's record (`EpisodeRecord`, from
`RecordStepOutcomes`) is `episode`, once the episode has ended.

Example:
    >>> session = GameSession()
    >>> text = session.start("turnbudget/Maze-Easy-v0", seed=0, turn_budget=2)
    >>> text.splitlines()[-1]
    'Commands: go north, go east, look'
    >>> _ = session.play("look"); session.outcome
    'unfinished'
    >>> session.play("look").splitlines()[-1]
    '[The episode is over: the turn budget is spent.]'
    >>> session.outcome, session.turns_used, session.episode["first_success_turn"]
    ('truncated', 2, None)
    >>> session.play("go east")
    '[The episode is over: the turn budget is spent. Nothing more happens.]'
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from turnbudget._checks import (
    MAX_SEED,
    brief,
    check_turn_budget,
    is_int,
    is_listlike,
    make_failure,
)
from turnbudget.eval.run.agent_view import agent_info, budget_visible, private_copy
from turnbudget.wrappers.reveal_budget import check_reveal

__all__ = ["OUTCOMES", "GameSession", "normalize_reveal"]

#: How an episode can stand: the game won or lost (``terminated``), the row's budget
#: spent (``truncated``), or still running when the trainer stopped asking.
OUTCOMES = ("won", "lost", "truncated", "unfinished")

_ENDED = {
    "won": "[The episode is over: you won.]",
    "lost": "[The episode is over: the game is lost.]",
    "truncated": "[The episode is over: the turn budget is spent.]",
}


def normalize_reveal(reveal: Any) -> str:
    """``reveal`` checked and spelt one way (``"never"``, ``"always"`` or ``"final=k"``), so
    that whether the budget shows is decided once: ``"NEVER"`` hides it, as the env reads it.

    Example:
        >>> normalize_reveal(" NEVER"), normalize_reveal("Final=3")
        ('never', 'final=3')
    """
    name, final_turns, _ = check_reveal(reveal, None, "")
    return f"final={final_turns}" if name == "final" else name


def _command_text(command: Any) -> str:
    """The text of a command: a string as it is; anything else (a tool call's argument may be
    any JSON value) as JSON, never a ``repr`` that could differ between runs."""
    if type(command) is str:
        return command
    if isinstance(command, str):
        return str.__str__(command)
    try:
        return json.dumps(
            command, ensure_ascii=False, sort_keys=True, default=lambda o: f"<{type(o).__name__}>"
        )
    except (TypeError, ValueError, RecursionError):  # mixed keys, a cycle, too deep
        return f"<{type(command).__name__}>"


class GameSession:
    """Plays one episode at a time of any registered id, for a trainer's environment class.

    Args:
        reveal: Budget visibility, as `turnbudget.make` takes it (``"never"``,
            ``"always"``, ``"final=3"``): the budget is in the text only when shown.
        show_commands: End each text with the admissible commands.
        start_call: What starts an episode, as the error of a call before one names it
            (a trainer's class over this session names its own method, e.g. ``"reset()"``).
    """

    def __init__(
        self, *, reveal: str = "never", show_commands: bool = True, start_call: str = "start()"
    ):
        reveal = normalize_reveal(reveal)
        if not isinstance(show_commands, bool):
            raise ValueError(
                f"Expect `show_commands` to be True or False, got {brief(show_commands)}"
            )
        if not isinstance(start_call, str) or not start_call.strip():
            raise ValueError(
                f"Expect `start_call` to be a method's name, such as 'start()', got {brief(start_call)}"
            )
        self._start_call = start_call
        self.reveal = reveal
        self.show_commands = show_commands
        self._show_budget = budget_visible(reveal)
        self._envs: dict[str, Any] = {}
        self._records: list[dict[str, Any]] = []
        self._env: Any = None
        self._outcome: str | None = None  # None: no episode started
        self.turns_used = 0
        self.turn_budget = 0
        self.env_id: str | None = None  # the registered id of the episode's env (its spec's)
        self.first_success_turn: int | None = None
        self.total_reward = 0.0
        self.commands: list[str] = []  # the admissible commands of the agent's current view
        self._busy = threading.Lock()  # (`start` and `play` refuse to overlap)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_busy": None}  # (a lock does not pickle)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _busy=threading.Lock())

    @contextlib.contextmanager
    def _alone(self) -> Iterator[None]:
        """Hold the session for one call; a RuntimeError if another thread holds it (two
        threads playing one session played past the budget and failed inside the recorder)."""
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(
                "This game session is in a call already: it plays one episode, one call at a "
                "time (give each rollout an environment of its own)"
            )
        try:
            yield
        finally:
            self._busy.release()

    def _make(self, env_id: str) -> Any:
        if not isinstance(env_id, str) or not env_id:
            raise ValueError(f"Expect `env_id` to be a registered id, got {brief(env_id)}")
        env = self._envs.get(env_id)
        if env is None:
            import gymnasium as gym

            from turnbudget.wrappers.stack import make

            if ":" in env_id and env_id not in gym.registry:  # gym.make would import `module`
                raise ValueError(
                    f"Cannot make {brief(env_id)} for a row: a row names a registered id, never "
                    "a module to import (`turnbudget list` shows the registered ids)"
                )
            record = {"callback": self._records.append, "record_steps": False}
            try:
                env = make(env_id, reveal=self.reveal, record=record)
            except (gym.error.Error, TypeError, ValueError) as exc:
                detail = make_failure(exc, env_id in gym.registry)
                raise ValueError(
                    f"Cannot make {brief(env_id)} for a row: {detail} (`turnbudget list` shows "
                    "the registered ids)"
                ) from exc
            self._envs[env_id] = env
        return env

    def check(self, env_ids: str | Iterable[str]) -> None:
        """Make each id now (kept for the episodes to come): an unknown id fails here, clearly.
        One id (a str) is one id (its characters were made one by one: "Cannot make 't'")."""
        if isinstance(env_ids, str):
            env_ids = [env_ids]
        elif not is_listlike(env_ids):  # (None was "'NoneType' object is not iterable")
            raise ValueError(
                f"Expect `env_ids` to be a registered id or a list of them, got {brief(env_ids)}"
            )
        for env_id in env_ids:
            self._make(env_id)

    def spec_id(self, env_id: str) -> str:
        """The id ``env_id`` plays, as its records name it (``turnbudget/Maze-Easy``:
        ``turnbudget/Maze-Easy-v0``)."""
        spec = self._make(env_id).spec
        return spec.id if spec is not None else env_id

    def max_seed(self, env_id: str) -> int:
        """The largest seed ``env_id``'s game takes (its ``max_seed``, else `MAX_SEED`)."""
        bound = getattr(self._make(env_id).unwrapped, "max_seed", MAX_SEED)
        return int(bound) if is_int(bound) else MAX_SEED

    def start(self, env_id: str, seed: int, turn_budget: int) -> str:
        """Reset ``env_id`` with ``seed`` under ``turn_budget`` turns; the first text the agent sees.

        A refused start (a ``ValueError``) leaves no episode running, not the previous one.
        """
        with self._alone():
            return self._start(env_id, seed, turn_budget)

    def discard(self) -> None:
        """End the current episode, if any, unplayed (the envs stay made): a call to `play`
        then needs a start, as after a refused one. A trainer's class calls it when it
        refuses a row before it reaches `start`."""
        with self._alone():
            self._discard()

    def _discard(self) -> None:
        # (nothing of the previous episode stays readable: its record, turns and reward)
        self._env, self._outcome = None, None
        self._records.clear()
        self.turns_used, self.turn_budget = 0, 0
        self.first_success_turn, self.total_reward, self.commands = None, 0.0, []

    def _start(self, env_id: str, seed: int, turn_budget: int) -> str:
        self._discard()
        if not is_int(seed) or not 0 <= seed <= MAX_SEED:
            raise ValueError(
                f"Expect `seed` to be an int >= 0 (at most {MAX_SEED:,}), got {brief(seed)}"
            )
        turn_budget = check_turn_budget(turn_budget)
        env = self._make(env_id)
        obs, info = env.reset(seed=int(seed), options={"turn_budget": turn_budget})
        self._env, self._outcome = env, "unfinished"
        self.turn_budget = turn_budget
        # (the id its records name: "turnbudget/Maze-Easy" plays turnbudget/Maze-Easy-v0)
        self.env_id = env.spec.id if env.spec is not None else env_id
        view = agent_info(info, show_budget=self._show_budget)
        goal = str(view.get("goal") or "")
        text = str(obs).strip()
        if goal and goal not in text:
            text = f"Goal: {goal}\n\n{text}"
        return self._render(text, view)

    def play(self, command: str) -> str:
        """Play one turn (a turn is spent whatever the command); the text the agent sees next.

        After the episode has ended nothing is played: the text says it is over.
        """
        with self._alone():
            return self._play(command)

    def _play(self, command: str) -> str:
        if self._outcome is None:
            raise RuntimeError(f"No episode: call {self._start_call} first")
        if self._outcome != "unfinished":
            return f"{_ENDED[self._outcome][:-1]} Nothing more happens.]"
        # (as the game reads it through `evaluate`: the game folds whitespace in ASCII only and
        # refuses a line break, a look-alike space and a command past its limit)
        obs, reward, terminated, truncated, info = self._env.step(_command_text(command))
        self.turns_used += 1
        self.total_reward += float(reward)
        if info.get("won") and self.first_success_turn is None:
            self.first_success_turn = self.turns_used
        if terminated:
            self._outcome = "won" if info.get("won") else "lost"
        elif truncated:
            self._outcome = "truncated"
        text = self._render(str(obs).strip(), agent_info(info, show_budget=self._show_budget))
        if self._outcome != "unfinished":
            text = f"{text}\n{_ENDED[self._outcome]}"
        return text

    def _render(self, text: str, view: dict[str, Any]) -> str:
        self.commands = [str(c) for c in view.get("admissible_actions") or ()]
        if self.show_commands and self.commands and self._outcome == "unfinished":
            text = f"{text}\nCommands: {', '.join(self.commands)}"
        return text

    @property
    def outcome(self) -> str:
        """``won``, ``lost``, ``truncated`` or ``unfinished`` (see `OUTCOMES`)."""
        if self._outcome is None:
            raise RuntimeError(f"No episode: call {self._start_call} first")
        return self._outcome

    @property
    def episode(self) -> dict[str, Any] | None:
        """The ended episode's record (`turnbudget.records.EpisodeRecord`); None while it runs."""
        episodes = [r for r in self._records if r.get("record") == "episode"]
        return private_copy(episodes[-1]) if episodes else None  # the caller's own copy

    def close(self) -> None:
        """Close every env this session made."""
        for env in self._envs.values():
            env.close()
        self._envs.clear()
        self._env, self._outcome = None, None
