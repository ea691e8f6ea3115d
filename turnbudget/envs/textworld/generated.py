"""`GeneratedTextWorldEnv`: the base of the families whose games TextWorld generates from a seed."""

from __future__ import annotations

import importlib
import os
import re
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from turnbudget._checks import MAX_SEED, brief, is_int
from turnbudget.envs.textworld.cache import GameCache
from turnbudget.envs.textworld.env import TextWorldEnv, require_textworld
from turnbudget.envs.textworld.interpreter import Interpreter, start_game

__all__ = [
    "MAX_GAME_ID",
    "MAX_GENERATION_ATTEMPTS",
    "GeneratedTextWorldEnv",
    "GenerationError",
    "LevelledChallenge",
    "attempt_seed",
]

#: Generation that raises ``QuestGenerationError`` is retried with derived seeds this many times.
MAX_GENERATION_ATTEMPTS = 10
#: The largest game id: TextWorld seeds its generators (NumPy ``RandomState``) with it, and
#: those take 32-bit seeds.
MAX_GAME_ID = 2**32 - 1
#: The most characters of the compiler's complaint a `GenerationError` quotes.
_PROBLEM_CHARS = 240


class GenerationError(RuntimeError):
    """TextWorld could not make a game of a family (its compiler refused it, or no attempt
    made one its walkthrough wins); the message names the family, game id and settings."""


def _compiler_problem(output: str) -> str:
    """The line of the Inform compilers' output that says why a game did not compile: the
    fatal error, else the first error, else the first line that is not TextWorld's framing."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(("-=", "FAIL", "=", "***"))]
    for pattern in (r"Fatal error:\s*(.+)", r"Error:\s*(.+)"):
        found = next(filter(None, (re.search(pattern, line) for line in lines)), None)
        if found:
            said = [found.group(1)]
            break
    problem = said[0] if said else "the Inform compiler failed"
    return problem if len(problem) <= _PROBLEM_CHARS else problem[: _PROBLEM_CHARS - 3] + "..."


def attempt_seed(game_id: int, attempt: int) -> int:
    """The TextWorld seed of generation attempt ``attempt`` for game ``game_id``.

    Attempt 0 uses the game id itself; retries use seeds derived from it, so a
    game id always means the same game.

    Example:
        >>> attempt_seed(7, 0)
        7
        >>> attempt_seed(7, 1) == attempt_seed(7, 1) != 7
        True
    """
    if attempt == 0:
        return game_id
    return int(np.random.SeedSequence([game_id, attempt]).generate_state(1)[0] % (2**31))


def _walkthrough_wins(textworld: Any, path: Path) -> bool:
    """Whether the compiled game at ``path`` is won by its stored walkthrough (True if none)."""
    infos = textworld.EnvInfos(won=True, extras=["walkthrough"])
    interpreter = Interpreter()  # bounded steps here too: no game may hang generation
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # jericho's UnsupportedGameWarning
            env = start_game(path, infos, interpreter)
        state = env.reset()
        walkthrough = state.get("extra.walkthrough")
        if not walkthrough:
            return True
        for command in walkthrough:
            state, _, done = env.step(command)
            if done:
                break
        return bool(state.won)
    finally:
        interpreter.terminate()


class GeneratedTextWorldEnv(TextWorldEnv):
    """Base of the generated families: reset ``seed=s`` plays game ``s`` of the family.

    Subclasses set ``family`` and implement ``_settings()`` (the generation
    settings, which key the cache) and ``_make_game(options)`` (return a
    ``textworld.Game`` built with the given ``textworld.GameOptions``, whose
    seeds are set). Games are generated once and read from a `GameCache`.

    Args:
        num_games: None for an unbounded family (reset ``seed=s`` plays game
            ``s``; an unseeded reset draws a game id from the env's RNG), or
            N to restrict play to games ``0..N-1`` (``seed % N``, N at most 2**32), e.g. a
            fixed set generated ahead of time.
        cache_dir: The cache root; default ``$TURNBUDGET_TEXTWORLD_CACHE`` or
            the user's cache dir.
        render_mode: None, ``"ansi"``, ``"human"`` or ``"rgb_array"`` (see `TextWorldEnv`).
    """

    family = ""
    _needs_game_file = False

    def __init__(
        self,
        num_games: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        render_mode: str | None = None,
    ):
        super().__init__(game_file=None, render_mode=render_mode)
        # (game ids are TextWorld's 32-bit seeds: past 2**32 games, every reset failed in NumPy)
        if num_games is not None and (
            not is_int(num_games) or not 0 < num_games <= MAX_GAME_ID + 1
        ):
            raise ValueError(
                f"Expect `num_games` to be a positive int of at most {MAX_GAME_ID + 1:,} (game "
                f"ids are TextWorld's 32-bit seeds) or None, got {brief(num_games)}"
            )
        self.num_games = None if num_games is None else int(num_games)
        self.cache = GameCache(self.family, self._settings(), root=cache_dir)

    @property
    def max_seed(self) -> int:
        """The largest seed a reset takes: a game id (TextWorld's are 32-bit) without
        ``num_games``; with it, any seed (game ``seed % num_games``)."""
        return MAX_GAME_ID if self.num_games is None else MAX_SEED

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        # Refused before anything changes: the seed is a game id, and TextWorld's are 32-bit.
        if self.num_games is None and is_int(seed) and seed > MAX_GAME_ID:
            raise ValueError(
                f"Expect `seed` to be at most {MAX_GAME_ID:,} in {type(self).__name__} without "
                f"`num_games` (the seed is the id of the game TextWorld generates, a 32-bit "
                f"seed), got {seed}; pass num_games=N to play game seed % N"
            )
        return super().reset(seed=seed, options=options)

    def _settings(self) -> dict[str, Any]:
        raise NotImplementedError

    def _make_game(self, options: Any) -> Any:
        raise NotImplementedError

    def _select_game(self, seed: int | None) -> int:
        if seed is not None:
            return seed if self.num_games is None else seed % self.num_games
        return int(self.np_random.integers(self.num_games or 2**31))

    def _game_path(self, game_id: int) -> Path:
        return self.cache.get(game_id, lambda path: self.generate(game_id, path))

    @staticmethod
    def _check_game_id(game_id: Any) -> int:
        # (a str, float, bool or None was an AttributeError from inside TextWorld, and left
        # its lock file, 'x.lock', in the cache; -1 a NumPy seed error)
        if not is_int(game_id) or not 0 <= game_id <= MAX_GAME_ID:
            raise ValueError(
                f"Expect `game_id` to be an int in [0, {MAX_GAME_ID:,}] (TextWorld's 32-bit "
                f"seeds), got {brief(game_id)}"
            )
        return int(game_id)

    def generate(self, game_id: int, path: str | os.PathLike[str]) -> None:
        """Generate game ``game_id`` of this family into ``path`` (a ``.z8``) and its ``.json``.

        An attempt is retried with the next derived seed (see `attempt_seed`)
        when TextWorld raises ``QuestGenerationError`` or when the game's own
        walkthrough does not win it (TextWorld sometimes names two objects so
        that its parser asks "Which do you mean ...?"). Bypasses the cache; use
        `pregenerate` or `reset` to fill it.
        """
        game_id = self._check_game_id(game_id)
        textworld = require_textworld()
        from textworld.generator import compile_game
        from textworld.generator.chaining import QuestGenerationError
        from textworld.generator.inform7 import CouldNotCompileGameError

        failures: set[str] = set()
        last: Exception | None = None  # (the traceback the final error keeps)
        for attempt in range(MAX_GENERATION_ATTEMPTS):
            options = textworld.GameOptions()
            options.seeds = attempt_seed(game_id, attempt)
            options.path = str(path)
            options.file_ext = ".z8"
            options.force_recompile = True
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # jericho's UnsupportedGameWarning
                    game = self._make_game(options)
                    compile_game(game, options)
            except QuestGenerationError as e:
                failures.add("QuestGenerationError")
                last = e
                continue
            except ValueError as e:
                # (TextWorld's cooking generator draws from an empty list for some seeds:
                # Cooking(recipe=3, take=2, go=9, cut=True, split="test") raised NumPy's "high
                # <= 0" from inside it at games 0 and 1; another seed makes a game)
                failures.add(f"{type(e).__name__}: {brief(str(e))}")
                last = e
                continue
            except CouldNotCompileGameError as e:
                # (its message was the compilers' whole output, 15 lines naming a generation
                # folder already removed; a game too big for a .z8 is not retried from
                # another seed: the settings make them all about as big)
                raise GenerationError(
                    f"TextWorld could not compile {self.family} game {game_id} with "
                    f"{self._settings()}: {_compiler_problem(str(e))}"
                ) from e
            if _walkthrough_wins(textworld, Path(path)):
                return
            failures.add("an unwinnable walkthrough")
        raise GenerationError(
            f"TextWorld could not generate {self.family} game {game_id} with {self._settings()} "
            f"in {MAX_GENERATION_ATTEMPTS} attempts ({'; '.join(sorted(failures))})"
        ) from last

    def pregenerate(self, game_id: int) -> Path:
        """Make sure game ``game_id`` is in the cache; return its file."""
        return self._game_path(self._check_game_id(game_id))


class LevelledChallenge(GeneratedTextWorldEnv):
    """A TextWorld challenge configured by one ``level`` (Coin Collector, Treasure Hunter).

    Subclasses set ``family``, ``max_level`` and ``challenge_module``, the
    TextWorld module whose ``make(settings, options)`` builds a game.
    """

    max_level: ClassVar[int] = 0
    challenge_module: ClassVar[str] = ""

    def __init__(
        self,
        level: int = 5,
        num_games: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        render_mode: str | None = None,
    ):
        if not is_int(level) or not 1 <= level <= self.max_level:
            raise ValueError(
                f"Expect `level` to be an int in [1, {self.max_level}], got {brief(level)}"
            )
        self._check_level(int(level))
        self.level = int(level)
        super().__init__(num_games=num_games, cache_dir=cache_dir, render_mode=render_mode)

    @classmethod
    def _check_level(cls, level: int) -> None:
        """Raise ``ValueError`` for a level in range that TextWorld cannot build (default: none)."""

    def _settings(self) -> dict[str, Any]:
        return {"level": self.level}

    def _make_game(self, options: Any) -> Any:
        challenge = importlib.import_module(self.challenge_module)
        return challenge.make(settings=self._settings(), options=options)
