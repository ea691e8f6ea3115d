"""The games through TRL's door: ``GRPOTrainer(environment_factory=GameEnvironment, ...)``.

TRL's multi-turn GRPO (``environment_factory``, TRL >= 1.16 with transformers
>= 5.2) builds one environment per rollout, calls ``reset(**row)`` with the
dataset row, appends the text it returns to the row's prompt, exposes every
public method as a tool the model may call, and scores the finished rollout
with ``get_reward()``. `GameEnvironment` is that class for every registered
id: one tool (``command``: one game command per call), a reset that reads the
row's ``{env_id, seed, T}``, and a reward per outcome.

- **Groups share their start.** GRPO repeats a row for every member of its
  group, so every member resets the same id with the same seed and the same T.
  `trl_dataset` turns `turnbudget.adapters.rows.task_rows` into TRL's dataset.
- **T is the row's.** The game's `TurnBudget` is set from the row's T and
  ends the episode after T commands (later calls change nothing). TRL's own cap
  (``max_tool_calling_iterations``) must not end it first: set it to
  `turnbudget.adapters.rows.turn_cap` of the rows.
- **Truncated is not lost.** `get_reward` scores the outcome the episode
  reached with `OutcomeRewards`: ``won`` 1.0, ``lost`` 0.0, ``truncated`` (T
  spent without a win: what Pass@(K,T) counts as a failure at T) 0.0, and
  ``unfinished`` (the rollout ended with the game running and turns left: the
  model stopped calling the tool, or TRL's ``max_completion_length`` cut it)
  0.0. Each is a choice: None leaves such rollouts unscored (TRL then gives
  them no advantage and keeps them out of their group's baseline).
  ``GRPOConfig(mask_truncated_completions=True)`` keeps completions cut by the
  token limit out of the loss.

What the model reads follows the evaluator's agent view: the observation, the
goal, the admissible commands, the budget only when ``reveal`` shows it, and
never the oracle. Nothing here imports TRL; `trl_dataset` needs ``datasets``
(the ``trl`` extra).

Example:
    >>> Env = game_environment(rewards=OutcomeRewards(truncated=None))
    >>> env = Env()
    >>> text = env.reset(env_id="turnbudget/Maze-Easy-v0", seed=0, T=1, prompt=[])
    >>> env.command("look").splitlines()[-1]
    '[The episode is over: the turn budget is spent.]'
    >>> env.outcome, env.get_reward() is None
    ('truncated', True)
"""

from __future__ import annotations

import copyreg
import logging
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, ClassVar

from turnbudget._checks import brief, check_positive_int, is_finite
from turnbudget.adapters.rows import check_row, check_rows
from turnbudget.adapters.session import OUTCOMES, GameSession

__all__ = [
    "DEFAULT_PROMPT",
    "GameEnvironment",
    "OutcomeRewards",
    "game_environment",
    "rows_per_step",
    "trl_dataset",
]

logger = logging.getLogger(__name__)

#: The instructions each row's prompt carries; TRL appends the game's first text to it.
DEFAULT_PROMPT = (
    "You are playing a text game. Reach the goal in as few turns as you can. Each turn, "
    "call the `command` tool with exactly one command (one of the listed commands works "
    "best). The game answers with what happens.\n\n"
)


@dataclass(frozen=True)
class OutcomeRewards:
    """The reward `GameEnvironment.get_reward` gives each way an episode can end.

    None leaves a rollout with that outcome unscored: TRL gives it no advantage
    and keeps it out of its group's baseline.

    Attributes:
        won: The game was won within T.
        lost: The game ended without a win (a game that can be lost).
        truncated: T commands were spent without a win: a failure at T, as
            Pass@(K,T) counts it. Set a value apart from ``lost`` to tell them
            apart in training, or None to learn only from episodes the game ended.
        unfinished: The rollout ended with the game running and turns left (the
            model stopped calling the tool, or TRL's limits cut it).

    Example:
        >>> OutcomeRewards(truncated=None).reward("truncated") is None
        True
        >>> OutcomeRewards().reward("won")
        1.0
    """

    won: float | None = 1.0
    lost: float | None = 0.0
    truncated: float | None = 0.0
    unfinished: float | None = 0.0

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is not None and not is_finite(value):  # (an inf reward reached TRL)
                raise ValueError(
                    f"Expect the reward for `{field.name}` to be a finite number or None (None: "
                    f"TRL's own missing reward), got {brief(value)}"
                )

    def reward(self, outcome: str) -> float | None:
        """The reward of ``outcome`` (one of `turnbudget.adapters.session.OUTCOMES`)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"Expect an outcome in {OUTCOMES}, got {brief(outcome)}")
        value = getattr(self, outcome)
        return None if value is None else float(value)


class GameEnvironment:
    """A TRL environment (``environment_factory``) that plays the row's game through one tool.

    TRL builds instances with no arguments and reuses each across rollouts
    (``reset`` starts the next). Configure a subclass with `game_environment`;
    the class attributes below are its settings. Every public method is a tool
    for TRL, so this class has exactly one: `command`.

    Attributes:
        reveal: Budget visibility (``"never"``, ``"always"``, ``"final=k"``).
        rewards: The reward of each outcome (`OutcomeRewards`).
        show_commands: End each text with the admissible commands.
    """

    reveal: ClassVar[str] = "never"
    rewards: ClassVar[OutcomeRewards] = OutcomeRewards()
    show_commands: ClassVar[bool] = True

    def __init__(self) -> None:
        self._session = GameSession(
            reveal=self.reveal, show_commands=self.show_commands, start_call="reset()"
        )

    def reset(self, **row: Any) -> str:
        """Start the row's episode: ``row`` holds ``env_id``, ``seed`` and ``T`` (other keys,
        such as TRL's ``prompt``, are ignored); returns the game's first text."""
        try:
            env_id, seed, turns = check_row(row)
        except ValueError:
            # (as a refused start: the previous rollout's episode played on, and was scored)
            self._session.discard()
            raise
        return self._session.start(env_id, seed, turns)

    def command(self, command: str) -> str:
        """Send one command to the game, such as `look` or `go north`; each call is one turn.

        Args:
            command: The command to play, on one line.

        Returns:
            What the game answers, followed by the commands that work now.
        """
        return self._session.play(command)

    def get_reward(self) -> float | None:
        """The reward of the outcome the episode reached (see `OutcomeRewards`)."""
        outcome = self._session.outcome
        if outcome == "unfinished":
            logger.debug(
                "A rollout ended with the game running after %d of %d turns",
                self._session.turns_used,
                self._session.turn_budget,
            )
        return self.rewards.reward(outcome)

    # Read-only views (properties: TRL turns only public methods into tools).

    @property
    def outcome(self) -> str:
        """``won``, ``lost``, ``truncated`` or ``unfinished``."""
        return self._session.outcome

    @property
    def turns_used(self) -> int:
        """Commands played in this episode."""
        return self._session.turns_used

    @property
    def turn_budget(self) -> int:
        """The episode's T (the row's)."""
        return self._session.turn_budget

    @property
    def episode(self) -> dict[str, Any] | None:
        """The ended episode's record (`turnbudget.records.EpisodeRecord`); None while it runs."""
        return self._session.episode


def game_environment(
    *,
    reveal: str = "never",
    rewards: OutcomeRewards | None = None,
    show_commands: bool = True,
) -> type[GameEnvironment]:
    """A `GameEnvironment` subclass with these settings, for ``environment_factory``.

    TRL names the reward it logs after the class, so the subclass keeps the name
    ``GameEnvironment``. Its settings are checked here, before any trainer starts.

    Args:
        reveal: Budget visibility: ``"never"`` (hidden), ``"always"`` or ``"final=k"``.
        rewards: The reward of each outcome (default `OutcomeRewards()`).
        show_commands: End each text with the admissible commands.
    """
    rewards = OutcomeRewards() if rewards is None else rewards
    if not isinstance(rewards, OutcomeRewards):
        raise ValueError(f"Expect `rewards` to be an OutcomeRewards, got {brief(rewards)}")
    GameSession(reveal=reveal, show_commands=show_commands)  # checks them
    settings = {"reveal": reveal, "rewards": rewards, "show_commands": show_commands}
    namespace = {**settings, "__module__": __name__, "_made_by_call": True}
    return _Configured("GameEnvironment", (GameEnvironment,), namespace)


class _Configured(type):
    """The type of `game_environment`'s classes, which pickle as the call that makes them
    (a class made at run time has no name to be found by: the class, and its instances,
    could not be sent to a spawned worker)."""


def _configured_again(reveal: str, rewards: OutcomeRewards, show_commands: bool) -> type:
    return game_environment(reveal=reveal, rewards=rewards, show_commands=show_commands)


def _reduce_configured(cls: _Configured) -> Any:
    """A class `game_environment` made pickles as the call; a subclass of one (a user's, with
    its own reward) by its name, as any class: it inherited the call, and came back as the
    base class, its overrides silently dropped."""
    if cls.__dict__.get("_made_by_call") is True:
        return _configured_again, (cls.reveal, cls.rewards, cls.show_commands)
    return cls.__qualname__


copyreg.pickle(_Configured, _reduce_configured)


_ARROW_INT_MAX = 2**63 - 1  # the largest seed a datasets.Dataset column holds


def trl_dataset(rows: list[dict[str, Any]], prompt: str = DEFAULT_PROMPT) -> Any:
    """A ``datasets.Dataset`` for ``GRPOTrainer``: each row with a conversational ``prompt``.

    Args:
        rows: Rows ``{env_id, seed, T}`` (`turnbudget.adapters.rows.task_rows`).
        prompt: The user message each row starts with; TRL appends the game's
            first text (what `GameEnvironment.reset` returns) to it.
    """
    try:
        from datasets import Dataset
    except ImportError:
        raise ImportError(
            "trl_dataset needs the `datasets` package: pip install -e '.[trl]' in the turnbudget checkout"
        ) from None
    if not isinstance(prompt, str):
        raise ValueError(f"Expect `prompt` to be a str, got {brief(prompt)}")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:  # (Arrow's own UnicodeEncodeError named no argument)
        raise ValueError(
            f"Expect `prompt` to be text UTF-8 can carry (no lone surrogate), got {brief(prompt)}"
        ) from None
    checked = check_rows(rows)  # an id no rollout could play fails here, not in the trainer
    too_big = [row["seed"] for row in checked if row["seed"] > _ARROW_INT_MAX]
    if too_big:  # (Arrow's ints are int64: pyarrow's OverflowError named no row)
        raise ValueError(
            f"Expect every row's seed to be at most {_ARROW_INT_MAX:,} in a datasets.Dataset "
            f"(Arrow's int64), got {brief(too_big[0])}"
        )
    return Dataset.from_list(
        [{"prompt": [{"role": "user", "content": prompt}], **row} for row in checked]
    )


def rows_per_step(args: Any) -> int:
    """The rows a ``GRPOTrainer`` with ``args`` (a ``GRPOConfig``) reads per optimizer step.

    Each generation batch holds ``generation_batch_size / num_generations``
    rows and serves ``num_iterations * steps_per_generation /
    gradient_accumulation_steps`` optimizer steps (one process). A progressive
    horizon (`turnbudget.adapters.rows.task_rows` with ``schedule``) needs a
    whole number of rows per step, the rows read in order
    (``shuffle_dataset=False``), and each generation batch trained at one step:
    TRL shuffles a batch that serves several steps across them (and trains it at
    each of ``num_iterations``), so a row's T would meet another step's (T = 8 at
    step 1 and T = 2 at step 3, with ``steps_per_generation=4``).
    """
    if getattr(args, "shuffle_dataset", False):
        raise ValueError(
            "A schedule over training steps needs the rows in order: GRPOConfig(shuffle_dataset=False)"
        )
    sizes = {
        name: check_positive_int(getattr(args, name, None), f"args.{name}")
        for name in (
            "generation_batch_size", "num_generations", "num_iterations",
            "steps_per_generation", "gradient_accumulation_steps",
        )
    }  # fmt: skip
    rows = Fraction(sizes["generation_batch_size"], sizes["num_generations"])
    steps = Fraction(
        sizes["num_iterations"] * sizes["steps_per_generation"],
        sizes["gradient_accumulation_steps"],
    )
    if steps > 1:
        raise ValueError(
            f"This GRPOConfig trains each generation batch over {steps} optimizer steps, "
            "shuffled across them: a schedule over steps needs one (num_iterations=1 and "
            "steps_per_generation = gradient_accumulation_steps), or a BudgetMix"
        )
    per_step = rows / steps
    if per_step.denominator != 1 or per_step < 1:
        raise ValueError(
            f"This GRPOConfig reads {per_step} rows per optimizer step; a schedule over steps "
            "needs a whole number of at least 1 (adjust the batch size, num_generations, "
            "num_iterations or steps_per_generation)"
        )
    return int(per_step)
