"""The native text-game engine: command parsing, the turn loop, text rendering.

Each game is a subclass that implements world generation and the effect of
commands (Minigrid's shape). The contract shared with every text env (spaces,
the step checks, game over, observation limits) is `turnbudget.envs.core`; this
engine adds what native games share: commands are normalized case- and
whitespace-insensitively with a few natural synonyms, anything that is not an
admissible command costs a turn with feedback and ``valid_action=False``, and
difficulties are data (a config dataclass per difficulty, overridable field by
field through keyword arguments).
"""

from __future__ import annotations

import copy
import dataclasses
import string
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from turnbudget._checks import MAX_TURN_BUDGET, brief, is_int
from turnbudget.envs.core import INFO_VALID_ACTION, PRINTABLE, TextEnv, reset_needed

__all__ = [
    "MAX_FAST_ATTRIBUTES",
    "TextGame",
    "normalize_command",
    "reset_needed",
    "sanitize_for_display",
]

#: The most attributes a game instance may hold. CPython (3.11-3.13) keeps an instance's
#: attributes in a compact layout its interpreter reads fast, shared by the class: room
#: for 30 names in all, one fewer for each instance made, kept for the names already
#: there. An attribute that does not fit, or a read of ``self.__dict__``, turns the
#: instance's attributes into a plain dict for its lifetime, and every attribute read in
#: its step then costs more (measured: Maze's whole step 60% more). So a game sets every
#: attribute in ``__init__`` (`TextGame._world_attributes`), holds at most this many, and
#: never reads its own ``__dict__`` in play.
MAX_FAST_ATTRIBUTES = 29

#: Task seeds whose worlds `TextGame.check_generates` builds when config overrides make a
#: game: half of them failing refuses the settings, fewer warn (a Sokoban check is at most
#: ~2 s; a seed that makes no world is a ValueError at its reset).
CHECKED_SEEDS = 8

_PRINTABLE_SET = frozenset(PRINTABLE)
_LINE_BREAKS = "\t\n\r\x0b\x0c"

_ARTICLES = frozenset({"the", "a", "an"})
_DIRECTIONS = {
    "n": "north", "s": "south", "e": "east", "w": "west",
    "north": "north", "south": "south", "east": "east", "west": "west",
}  # fmt: skip
_VERBS = {
    "get": "take", "grab": "take", "take": "take",
    "walk": "go", "move": "go", "go": "go", "head": "go",
    "l": "look", "look": "look",
    "i": "inventory", "inv": "inventory", "inventory": "inventory",
    "x": "examine", "examine": "examine",
    "open": "unlock", "unlock": "unlock",
    "drop": "drop", "discard": "drop",
}  # fmt: skip
_TWO_WORD_VERBS = {("pick", "up"): "take", ("put", "down"): "drop", ("look", "around"): "look"}
# Case and whitespace are folded in ASCII only: `str.lower` turns the Kelvin sign into "k" and
# `str.split` splits at a no-break space, so "LOO\u212a" or "go\xa0north" played a command.
_ASCII_FOLD = str.maketrans(string.ascii_uppercase + _LINE_BREAKS, string.ascii_lowercase + " " * 5)
# Commands longer than this are never admissible: skip the parsing work.
_MAX_PARSED_LENGTH = 200


class _FixedSeed(np.random.bit_generator.ISeedSequence):
    """What a copy's bit generator is built from before it takes the original's state (see
    `TextGame.__deepcopy__`): ``SeedSequence(0)``'s words, worked out once per size. Never
    drawn from; working them out on every copy was most of a copy's cost."""

    def __init__(self) -> None:
        self._words: dict[tuple[int, np.dtype], np.ndarray] = {}

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        key = (int(n_words), np.dtype(dtype))
        words = self._words.get(key)
        if words is None:
            words = self._words[key] = np.random.SeedSequence(0).generate_state(*key)
        return words.copy()


_COPY_SEED = _FixedSeed()


# (class, rendering) -> the names of its games' attributes in the order ``__init__`` sets them
_ATTRIBUTE_NAMES: dict[tuple[type, bool], tuple[str, ...] | None] = {}


def _attribute_names(game: TextGame) -> tuple[str, ...] | None:
    """The names of ``game``'s attributes, in the order ``__init__`` sets them, read from a
    game made like it (a read of ``game``'s own ``__dict__`` would move it out of CPython's
    fast layout: `MAX_FAST_ATTRIBUTES`). Only for our own games that declare their
    `TextGame._world_attributes` (a test holds them to setting every attribute in ``__init__``);
    None for any other class (a subclass may set attributes anywhere) or one not made so."""
    rendering = game.render_mode is not None
    key = (type(game), rendering)
    if key not in _ATTRIBUTE_NAMES:
        names = None
        cls = type(game)
        if "_world_attributes" in cls.__dict__ and cls.__module__.startswith("turnbudget."):
            fields = dataclasses.fields(game.config)
            config = {f.name: getattr(game.config, f.name) for f in fields}
            config = {name: value for name, value in config.items() if is_int(value)}
            try:
                template = cls(game.difficulty, game.render_mode, **config)
            except (TypeError, ValueError):
                pass
            else:
                names = tuple(vars(template))
        _ATTRIBUTE_NAMES[key] = names
    return _ATTRIBUTE_NAMES[key]


def ascii_words(command: str) -> list[str]:
    """The words of ``command``, lower-cased, with case and whitespace folded in ASCII only (a
    look-alike such as the Kelvin sign or a no-break space stays part of its word).

    Example:
        >>> ascii_words("  Go\tNORTH "), ascii_words("LOO\u212a go\xa0north")
        (['go', 'north'], ['loo\u212a', 'go\xa0north'])
    """
    return [w for w in command.translate(_ASCII_FOLD).split(" ") if w]


def normalize_command(command: str) -> str:
    """Map a free-form command to the canonical form games list as admissible.

    Lower-cases, collapses whitespace (both in ASCII only: a look-alike such as the
    Kelvin sign or a no-break space plays no command), drops articles and applies synonyms:
    ``"  Go   N "`` and ``"n"`` become ``"go north"``, ``"pick up the Red Key"``
    becomes ``"take red key"``, ``"open red door with red key"`` becomes
    ``"unlock red door"``.

    >>> normalize_command("  Pick up THE red key")
    'take red key'
    >>> normalize_command("w"), normalize_command("walk  South")
    ('go west', 'go south')
    """
    if len(command) > _MAX_PARSED_LENGTH:
        return ""
    words = [w for w in ascii_words(command) if w not in _ARTICLES]
    if not words:
        return ""
    if tuple(words[:2]) in _TWO_WORD_VERBS:
        words = [_TWO_WORD_VERBS[words[0], words[1]], *words[2:]]
    if len(words) == 1 and words[0] in _DIRECTIONS:
        return "go " + _DIRECTIONS[words[0]]
    verb = _VERBS.get(words[0], words[0])
    rest = words[1:]
    if verb == "go" and len(rest) == 1 and rest[0] in _DIRECTIONS:
        rest = [_DIRECTIONS[rest[0]]]
    if verb == "unlock" and "with" in rest:  # "unlock red door with red key"
        at = rest.index("with")
        # only the door's own key and nothing after it: "... with red key and go north" or
        # "... with blue key" played the unlock (one turn is one command, as it says)
        if at >= 1 and rest[at + 1 :] == [rest[0], "key"]:
            rest = rest[:at]
    return " ".join([verb, *rest])


def sanitize_for_display(text: str, limit: int = 40) -> str:
    """Printable-ASCII, single-line, shortened copy of user input, safe to echo back."""
    cleaned = "".join(
        ch if ch in _PRINTABLE_SET and ch not in _LINE_BREAKS else "?" for ch in text[: limit + 1]
    )
    return cleaned[:limit] + "..." if len(text) > limit else cleaned


class TextGame(TextEnv):
    """Base class of the native text games.

    Subclasses set ``configs`` (difficulty name -> a frozen config dataclass)
    and ``default_budgets`` (difficulty name -> default turn budget), and
    implement the world:

    - ``_generate()``: build a new world from ``self.np_random`` only, and set
      ``self.goal`` (the goal sentence);
    - ``_admissible()``: the canonical commands admissible now (a list the
      engine may cache until the state changes; never mutate it);
    - ``_describe()``: the text of what the agent currently perceives;
    - ``_apply(command)``: apply an admissible command, return its feedback;
      set ``self._won`` / ``self._lost`` when the game ends;
    - ``_progress()``: a cheap 0..1 progress measure a player could keep
      (subgoals achieved: doors opened, items bought, boxes on targets), never
      the oracle's distance: agents see it;
    - the oracle: ``optimal_actions()``, ``distance_to_goal()``,
      ``inject_setback(rng)``, each raising `reset_needed` before the first reset
      (``inject_setback`` starts with `_check_setback`);
    - ``_explain_invalid(command)`` optionally, for better feedback;
    - ``_world_attributes``: the names of the attributes ``_generate`` and play set (each is
      set to None when the game is made: see `MAX_FAST_ATTRIBUTES`).

    The engine keeps ``self._state_version``, bumped on every state change, so
    subclasses can cache per-state work (admissible lists, descriptions, oracle
    answers).

    Any int field of the config dataclass can be overridden by keyword
    (``Maze(difficulty="hard", width=12)``); ``default_turn_budget`` then grows
    to at least twice the variant's longest optimal solution. A game checks the
    limits of its own fields in ``__init__``, so that a config it cannot build is
    refused when it is made, never at reset.
    """

    configs: ClassVar[Mapping[str, Any]] = {}
    default_budgets: ClassVar[Mapping[str, int]] = {}
    #: Every attribute a world sets after construction (in ``_generate``, and the memos it
    #: fills as it is played), set to None by ``__init__`` first: an attribute first set
    #: after more instances of the class exist may not fit the fast layout
    #: (`MAX_FAST_ATTRIBUTES`). A test checks that play sets no other.
    _world_attributes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, difficulty: str = "easy", render_mode: str | None = None, **config: Any):
        if not isinstance(difficulty, str) or difficulty.lower() not in self.configs:
            raise ValueError(
                f"Expect `difficulty` to be one of {tuple(self.configs)}, got {brief(difficulty)}"
            )
        difficulty = difficulty.lower()
        super().__init__(render_mode=render_mode)
        self.difficulty = difficulty
        self.config = self._configure(self.configs[difficulty], config)
        self.goal = ""
        self._won = False
        self._lost = False
        self._state_version = 0
        self._admissible_cache: tuple[int, list[str]] | None = None
        for name in self._world_attributes:  # (set by each world: see `_world_attributes`)
            setattr(self, name, None)

    @property
    def default_turn_budget(self) -> int:
        """The variant's default turn budget: at least twice its longest optimal solution."""
        # (Worked out, not stored: CPython keeps at most 30 attributes of an instance in its
        # fast layout, and the games need theirs; see `MAX_FAST_ATTRIBUTES`.)
        return max(self.default_budgets[self.difficulty], 2 * self.config.max_distance)

    def _configure(self, base: Any, overrides: dict[str, Any]) -> Any:
        """``base`` with ``overrides`` of its int fields applied, each a non-negative int,
        1 <= min_distance <= max_distance, and twice max_distance a valid turn budget."""
        fields = [f.name for f in dataclasses.fields(base) if is_int(getattr(base, f.name))]
        unknown = sorted(set(overrides) - set(fields))
        if unknown:
            # Python's own wording first: clients such as TorchRL retry without an
            # argument (``frameskip``) when they read "unexpected keyword argument 'x'".
            raise TypeError(
                f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r} "
                f"(unexpected argument(s): {', '.join(unknown)}); "
                f"expect difficulty, render_mode or an int config field: {', '.join(fields)}"
            )
        for name, value in overrides.items():
            if not is_int(value) or value < 0:
                raise ValueError(f"Expect `{name}` to be a non-negative int, got {brief(value)}")
        config = dataclasses.replace(base, **{k: int(v) for k, v in overrides.items()})
        if not 1 <= config.min_distance <= config.max_distance:
            raise ValueError(
                "Expect 1 <= `min_distance` <= `max_distance`, got "
                f"{config.min_distance} and {config.max_distance}"
            )
        if 2 * config.max_distance > MAX_TURN_BUDGET:  # the default budget is twice it
            raise ValueError(
                f"Expect `max_distance` to be at most {MAX_TURN_BUDGET // 2:,} (the default "
                f"turn budget is twice it), got {config.max_distance}"
            )
        return config

    # Lists (or sets) that steps mutate in place. Everything else in a game is either
    # rebound when it changes or a per-world table that never changes (memo
    # tables included), so copies may share it.
    _mutable_lists: ClassVar[tuple[str, ...]] = ()

    # Memos of the oracle's answers, filled as they are asked for: a cache, not state, so a
    # pickle leaves them out (a game pickles the same before and after a query).
    _oracle_memos: ClassVar[tuple[str, ...]] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self._oracle_memos:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # (the memos back as "not asked yet", which the oracle fills again: missing, a deep
        # copy of an unpickled game, which reads every attribute by name, raised)
        for name in self._oracle_memos:
            self.__dict__.setdefault(name, None)

    def __deepcopy__(self, memo: dict[int, Any]) -> TextGame:
        """A cheap, independent copy for look-ahead (e.g. checking a slip).

        The world's unchanging tables are shared instead of copied; a reset of
        either copy builds new tables and leaves the other untouched.
        """
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        names = _attribute_names(self)
        if names is None:
            clone.__dict__.update(self.__dict__)
        else:  # (not through ``__dict__``: reading it moves the original out of the fast layout)
            for name in names:
                setattr(clone, name, getattr(self, name))
        for name in self._mutable_lists:
            mutable = getattr(self, name)  # (None in a game not reset yet)
            setattr(clone, name, None if mutable is None else mutable.copy())
        if self._np_random is not None:  # 3x faster than deep-copying the Generator
            # Built from a fixed seed, then given the original's state: built without one, it
            # seeded itself from OS entropy first, which cost as much as the rest of the copy.
            bit_generator = type(self._np_random.bit_generator)(_COPY_SEED)
            bit_generator.state = self._np_random.bit_generator.state
            clone._np_random = np.random.Generator(bit_generator)
        return clone

    # -- gymnasium API ---------------------------------------------------------

    def check_generates(self) -> None:
        """Generate the worlds of task seeds 0 to ``CHECKED_SEEDS - 1``, each on a copy (the
        env's generator is left as it was): config overrides whose distance range no world
        reaches, or that half those seeds or more cannot generate, are a ``ValueError`` when
        the env is made, not at a reset (`turnbudget.registration.make_game` calls it); fewer
        failures are a warning that names the seeds. One seed was tried: a Sokoban that 2 of
        12 seeds could build was made, and an evaluation lost the other tasks' episodes at
        their resets. (A range that 95 of 100 seeds build is a user's to play.)"""
        failed: list[int] = []
        for seed in range(CHECKED_SEEDS):
            trial = copy.deepcopy(self)  # (generating rebuilt this env's world mid-episode)
            trial._np_random = np.random.default_rng(seed)  # (what reset(seed=seed) draws)
            try:
                trial._generate()
            except RuntimeError as exc:
                failed.append(seed)
                if 2 * len(failed) >= CHECKED_SEEDS:
                    raise ValueError(
                        f"{type(self).__name__} cannot be played: task seeds "
                        f"{', '.join(map(str, failed))} of 0 to {CHECKED_SEEDS - 1} make no "
                        f"world: {exc}"
                    ) from None
        if failed:
            warnings.warn(
                f"{type(self).__name__}: task seed(s) {', '.join(map(str, failed))} of 0 to "
                f"{CHECKED_SEEDS - 1} make no world with these settings (a reset with such a "
                "seed raises ValueError): widen [min_distance, max_distance] or avoid them",
                stacklevel=2,
            )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        # (a world that failed to generate left this one half rebuilt: no step may play it)
        self._in_episode = False
        self._won = self._lost = self._episode_over = False
        self._admissible_cache = None
        try:
            self._generate()
        except RuntimeError as exc:  # (config overrides: `check_generates`)
            raise ValueError(str(exc)) from None
        self._in_episode = True
        self._state_changed()
        observation = self._observe(f"{self.goal}\n\n{self._describe()}")
        info = self._info()
        info["goal"] = self.goal
        return observation, info

    def _play(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        feedback, valid = self._command(action)
        terminated = self._episode_over = self._won or self._lost
        text = feedback if terminated else f"{feedback}\n\n{self._describe()}"
        observation = self._observe(text)
        return (
            observation,
            1.0 if self._won else 0.0,
            terminated,
            False,
            self._info(valid_action=valid),
        )

    def _command(self, action: str) -> tuple[str, bool]:
        """Parse and apply one free-form command: its feedback, and whether it was admissible.

        A plain tuple: this is the hot path of every step.
        """
        admissible = self._admissible_now()
        # Fast path: agents that pick from info["admissible_actions"] send canonical commands.
        # (A list, not a set: a state is asked once or twice, and lists are short.)
        if action in admissible:
            command = action
        else:
            command = normalize_command(action)
            if command not in admissible:
                return self._explain_invalid(command, action), False
        feedback = self._apply(command)
        self._state_changed()
        return feedback, True

    def canonical_command(self, action: Any) -> str | None:
        """The admissible command ``action`` plays now, in the spelling the game lists it in
        (``"N"`` and ``"walk north"`` play ``"go north"``), or None when it plays none. An
        injected slip must replace the command with another one, not this one respelt."""
        if not self._in_episode:
            raise reset_needed("canonical_command")
        if not isinstance(action, str):
            return None
        action = str.__str__(action)  # (a str subclass's own == could match anything)
        admissible = self._admissible_now()
        if action in admissible:
            return action
        command = normalize_command(action)
        return command if command in admissible else None

    # -- helpers for subclasses ------------------------------------------------

    def _state_changed(self) -> None:
        self._state_version += 1

    def _admissible_now(self) -> list[str]:
        """`_admissible`, cached until the state changes (never mutate it)."""
        cache = self._admissible_cache
        if cache is None or cache[0] != self._state_version:
            cache = self._admissible_cache = (self._state_version, self._admissible())
        return cache[1]

    def admissible_actions(self) -> list[str]:
        """The canonical commands admissible in the current state."""
        if not self._in_episode:
            raise reset_needed("admissible_actions")
        return list(self._admissible_now())

    def _explain_invalid(self, command: str, raw_action: str) -> str:
        if len(raw_action) > _MAX_PARSED_LENGTH:
            return f"That command is too long ({len(raw_action)} characters); nothing happens."
        if not command:
            return "You need to type a command, such as `look`."
        return f'You can\'t do that: "{sanitize_for_display(raw_action)}".'

    def _info(self, valid_action: bool | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "admissible_actions": [] if self._won or self._lost else list(self._admissible_now()),
            "won": self._won,
            "lost": self._lost,
            "progress": 1.0 if self._won else self._progress(),
        }
        if valid_action is not None:
            info[INFO_VALID_ACTION] = valid_action
        return info

    def _choice(self, sequence: list[Any] | tuple[Any, ...]) -> Any:
        """A seeded uniform choice from a sequence (never the global RNG)."""
        return sequence[int(self.np_random.integers(len(sequence)))]

    def _shuffled(self, sequence: list[Any] | tuple[Any, ...]) -> list[Any]:
        order = self.np_random.permutation(len(sequence))
        return [sequence[i] for i in order]

    # -- to implement ------------------------------------------------------------

    def _generate(self) -> None:
        raise NotImplementedError

    def _admissible(self) -> list[str]:
        raise NotImplementedError

    def _describe(self) -> str:
        raise NotImplementedError

    def _apply(self, command: str) -> str:
        raise NotImplementedError

    def _progress(self) -> float:
        raise NotImplementedError

    def optimal_actions(self) -> list[str]:
        """Every admissible command that starts a shortest plan to success."""
        raise NotImplementedError

    def distance_to_goal(self) -> int | None:
        """The length of a shortest plan to success (0 once won, None when unsolvable)."""
        raise NotImplementedError

    def inject_setback(self, rng: np.random.Generator) -> str:
        """Apply a recoverable perturbation and return its narration."""
        raise NotImplementedError
