"""`TextWorldEnv`: any compiled TextWorld game as a Gymnasium env that follows the contract."""

from __future__ import annotations

import copy
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from turnbudget._checks import PATH_CHARS, brief
from turnbudget.envs.core import INFO_VALID_ACTION, MAX_OBSERVATION_LENGTH, TextEnv, reset_needed
from turnbudget.envs.textworld.command import CommandGrammar
from turnbudget.envs.textworld.interpreter import Interpreter, InterpreterError, start_game
from turnbudget.envs.textworld.sanitize import normalize_text
from turnbudget.envs.textworld.storyfile import StoryFileError, check_story_file

__all__ = ["MAX_GAME_JSON_BYTES", "TextWorldEnv", "clean_feedback", "require_textworld"]

#: The largest game ``.json`` loaded (TextWorld reads it whole; its games' are under 1 MiB).
MAX_GAME_JSON_BYTES = 64 * 2**20

_INSTALL_HINT = 'TextWorld games need the textworld extra: pip install -e ".[textworld]" in the turnbudget checkout'
# Lines of the ASCII-art title banner TextWorld prints on reset.
_BANNER_LINE = re.compile(r"^[ _|\\$/<>()'`.-]*[_|\\$][ _|\\$/<>()'`.-]*$")
# The prompt (and status line) the interpreter appends to every answer.
_TRAILING_PROMPT = re.compile(r"\n>[^\n]*\Z")
# The interpreter's end-of-game menu: its options are refused meta commands.
_END_MENU = re.compile(r"^\s*Would you like to RESTART")
_SETBACK_VERBS = ("drop ", "close ", "go ")


def require_textworld() -> Any:
    """Import and return ``textworld``, or raise an ImportError that says how to install it.

    NumPy's global random state is as it was: textworld seeds a generator of its own with
    ``np.random.randint`` when it is first imported, which shifted a user's seeded stream.
    """
    import numpy as np

    state = np.random.get_state()
    try:
        import textworld
    except ImportError as e:
        raise ImportError(_INSTALL_HINT) from e
    finally:
        np.random.set_state(state)
    if sys.version_info < (3, 11):
        _copy_game_states_as_dicts(textworld)
    return textworld


def _copy_game_states_as_dicts(textworld: Any) -> None:
    """Let ``copy`` and ``pickle`` rebuild TextWorld's ``GameState`` from its items, on Python
    3.10. Its ``__getattr__`` answers None for any name, and before 3.11 (where every object
    has a ``__getstate__``) the reduction looked ``__getstate__`` up through it and called
    None: every copy of a TextWorld env in play failed (an error's look-ahead, a probe)."""
    import copyreg

    game_state = textworld.core.GameState
    copyreg.pickle(game_state, lambda state: (game_state, (dict(state),)))


def clean_feedback(text: str) -> str:
    """Game text as an observation: printable, no banner, prompt or runs of blank lines."""
    text = _TRAILING_PROMPT.sub("", normalize_text(text))
    lines = [
        line.strip() if line.startswith("        ") else line.rstrip()  # centred "*** The End ***"
        for line in text.split("\n")
        if not _BANNER_LINE.match(line) and not _END_MENU.match(line)
    ]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text[:MAX_OBSERVATION_LENGTH]


def _plan_steps(actions: Any) -> int:
    """The turns a TextWorld plan takes (its ``trigger`` actions are not played)."""
    return sum(action.name != "trigger" for action in actions)


class TextWorldEnv(TextEnv):
    """A compiled TextWorld game (``.z8``, or ``.ulx`` with TextWorld < 1.7) as a Gymnasium env.

    ## Description
    An adapter over ``textworld.start`` (not ``textworld.gym``, which is not a
    Gymnasium env, folds its step limit into ``done`` and returns the
    cumulative score as reward). The game file needs its ``.json`` next to it:
    TextWorld's state tracking reads the game's logic from there. The
    generated families (`CoinCollector`, `TreasureHunter`, `Cooking`,
    `TextWorldCustom`) are subclasses that pick the file from the reset seed.
    The Z-machine interpreter runs in a process of its own (`Interpreter`,
    started on the first reset): a call into it that runs past `STEP_TIMEOUT`
    or the episode's deadline (``--timeout``) stops it and raises
    `StepTimeout`, one that makes it exit raises `InterpreterError`; the next
    reset starts a new one.

    ## Goal
    The game's objective, given as ``info["goal"]`` on reset.

    ## Actions
    Free-form commands (``spaces.Text`` over ``string.printable``), e.g.
    ``"go north"``, ``"take coin"``, ``"open fridge"``. One turn is one
    command: only what the game's own grammar parses as a single command (one
    of its command templates, filled with the names of its things; see
    `CommandGrammar`) reaches the interpreter. Chained inputs (``"w, n"``,
    ``"look. take coin"``, ``"take coin and key"``), interpreter meta commands
    (``quit``, ``save``, ``undo``, ...) and multi-line or over-long text are
    refused with feedback. A refused or unrecognized command is a spent turn
    with ``valid_action=False``; a non-string action is a ``TypeError``.

    ## Observations
    The game's answer as printable text (accents folded, other non-ASCII
    dropped, the title banner and the ``>`` prompt removed), at most
    `MAX_OBSERVATION_LENGTH` characters.

    ## Rewards
    The change in the game's score on that step (TextWorld games score one
    point per quest milestone; a Coin Collector or Treasure Hunter win is
    worth 1). The sum over an episode is the final score, not a success flag:
    use ``info["won"]`` for success.

    ## Episode end
    ``terminated`` when the game is won or lost. The env never truncates:
    turn budgets are the `TurnBudget` wrapper's job.

    ## Info
    ``admissible_actions`` (TextWorld's admissible commands, sorted), ``won``,
    ``lost``, ``progress`` (score / max score), ``valid_action`` (steps only:
    the command was accepted and recognized as a game action: the move counter
    advanced, or TextWorld listed it as admissible), ``goal`` (reset only), and ``textworld/score``,
    ``textworld/max_score``, ``textworld/moves``.

    ## Oracle
    TextWorld tracks a winning policy (its quest's action plan, updated as the
    agent acts); its commands are generated only when asked.
    ``optimal_actions()`` is that plan's first command followed by the plan's
    other actions that can go first without lengthening it (checked on a copy
    of the logic state; TextWorld's plan is the reference for "shortest", and it is
    not always a shortest plan: its length can overstate the turns left by several),
    ``distance_to_goal()`` its length, ``walkthrough()`` the game's stored
    solution from the start, and ``inject_setback(rng)`` plays a reversible
    command on the agent's behalf (drop a carried item, close an open door or
    container, step into a neighbouring room) that is not the plan's next
    step and after which the plan is no shorter, and narrates it as a slip.

    ## Arguments
    - ``game_file``: a game file, or a sequence of them; with several, reset
      ``seed=s`` plays ``game_file[s % n]`` and an unseeded reset draws one.
    - ``render_mode``: None, ``"ansi"`` (the last observation), ``"human"`` or
      ``"rgb_array"`` (the screen drawn as an image; the ``plot`` extra).

    ## Registered configurations
    ``turnbudget/TextWorldFile-v0`` (pass ``game_file=``).

    ## Version history
    - v0: initial version.
    """

    oracle_is_plan = True  # (TextWorld's tracked winning plan: see the oracle below)
    _needs_game_file: ClassVar[bool] = True  # False in families that make their own games

    def __init__(
        self,
        game_file: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        render_mode: str | None = None,
    ):
        require_textworld()
        super().__init__(render_mode=render_mode)
        self._game_files: list[Path] = []
        if game_file is None and self._needs_game_file:
            raise ValueError(
                "Expect `game_file` to name a TextWorld game (.z8 with its .json), got None"
            )
        if game_file is not None:
            files = [game_file] if isinstance(game_file, (str, os.PathLike)) else game_file
            if not isinstance(files, (list, tuple)) or not all(
                isinstance(f, (str, os.PathLike)) for f in files
            ):
                raise TypeError(
                    "Expect `game_file` to be a path (str or os.PathLike) or a list of them, "
                    f"got {brief(game_file)}"
                )
            if not files:
                raise ValueError(
                    "Expect `game_file` to name at least one game file, got an empty sequence"
                )
            # (absolute: a relative one meant the working directory of each later load)
            if any(not os.fspath(f).strip() for f in files):  # (Path("") is ".": "got '.'")
                raise ValueError(
                    f"Expect `game_file` to name a TextWorld game, got {brief(game_file)}"
                )
            self._game_files = [self._check_game_file(Path(f)).absolute() for f in files]
        self._tw: Any = None  # the textworld environment, (re)built on reset
        self._interpreter: Interpreter | None = None  # its interpreter's process, kept across games
        self._loaded: Path | None = None
        self._grammar: CommandGrammar | None = None  # the game's one-command language
        self._state: Any = None  # the last textworld GameState
        self._history: list[str] = []  # commands sent since reset, replayed after unpickling
        self._score = 0
        self._moves = 0
        self._goal = ""
        self._walkthrough: list[str] | None = None
        self._policy_cache: tuple[int, list[str] | None] | None = None
        self._optimal_cache: tuple[int, list[str]] | None = None
        self.game_id: int | None = None

    # -- gymnasium API ---------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        # (no episode until the new game is loaded: a refused reset left the old one
        # playing under the new game's id, or a step failing on a closed interpreter)
        self._in_episode = False
        game_id = self._select_game(seed)
        self._start(self._game_path(game_id))
        self.game_id = game_id
        self._history = []
        self._begin_episode()
        self._in_episode = True
        observation = self._observe(clean_feedback(self._state.feedback))
        info = self._info()
        info["goal"] = self._goal
        return observation, info

    def _play(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        command, refusal = self._grammar.parse(action)
        if command is None:
            observation = self._observe(refusal)
            return observation, 0.0, False, False, self._info(valid_action=False)
        moves_before = self._moves
        # (a command TextWorld lists is one the game takes, though a few leave its move
        # counter where it was: Cooking's "examine red potato" was an invalid turn, where a
        # masked policy could only pick what was listed)
        listed = command in (self._state.admissible_commands or ())
        reward = self._send(command)
        observation = self._observe(clean_feedback(self._state.feedback) or "Nothing happens.")
        valid = self._moves > moves_before or listed
        return observation, reward, self._episode_over, False, self._info(valid_action=valid)

    def close(self) -> None:
        if self._tw is not None:
            self._tw.close()
        if self._interpreter is not None:
            self._interpreter.terminate()
        self._tw = self._interpreter = None
        self._loaded = None
        self._in_episode = False
        # (its oracle reached through the closed game: an AttributeError; it raises
        # ResetNeeded now, as before any reset)
        self._state = self._policy_cache = self._optimal_cache = None
        super().close()

    def admissible_actions(self) -> list[str]:
        """TextWorld's admissible commands in the current state ([] once the game is over)."""
        return (
            []
            if self._episode_over or self._state is None
            else list(self._state.admissible_commands or [])
        )

    def canonical_command(self, action: Any) -> str | None:
        """The admissible command ``action`` plays now, as TextWorld lists it (``GO EAST`` and
        ``e`` play ``go east``; ``take butter`` plays ``take stick of butter`` when that is the
        one listed command it names), or None when it plays none, names several, or no
        episode is under way: what
        an injected slip must not replace a command with, and what the records judge. Without
        it, an error's turn took ``GO EAST`` for no admissible command (a spent turn in the
        records) and a slip could "replace" it with ``go east``, the same command."""
        if not self._in_episode:
            return None
        command, _ = self._grammar.parse(action)
        if command is None:
            return None
        # (the grammar answers in lower case; TextWorld lists "examine BBQ" in the game's)
        listed = {c.lower(): c for c in reversed(self.admissible_actions())}
        if command in listed:
            return listed[command]
        return self._grammar.the_one_named(command, listed.values())

    # -- oracle ----------------------------------------------------------------

    def optimal_actions(self) -> list[str]:
        """Commands that start a plan as short as TextWorld's ([] once the game is over).

        The first is the first command of TextWorld's plan; the others are the
        plan's other actions that can go first (the leaves of its dependency
        tree, e.g. collecting the ingredients in another order), each checked
        to shorten the plan by one when removed from it, as TextWorld's tracking
        does when the action is played.
        """
        if not self._in_episode:  # (no game yet: [] read as "no command starts a plan")
            raise reset_needed("optimal_actions")
        policy = self._policy()
        if not policy:
            return []
        if self._optimal_cache is None or self._optimal_cache[0] != len(self._history):
            self._optimal_cache = (
                len(self._history),
                [policy[0], *self._other_plan_starts(policy[0])],
            )
        return list(self._optimal_cache[1])

    def distance_to_goal(self) -> int | None:
        """The length of TextWorld's winning plan (0 once won, None when lost or unsolvable)."""
        if not self._in_episode:  # (no game yet: None read as "unsolvable")
            raise reset_needed("distance_to_goal")
        if self._state is not None and self._state.won:
            return 0
        policy = self._policy()
        return None if policy is None else len(policy)

    def state_key(self) -> tuple[str, ...] | None:
        """The facts of the game's logic state, sorted (None before a reset, or in a game
        without TextWorld's tracking): what a command must change to change the state. The
        probes' no-op test read the observation's last paragraph, which here is the reply to
        the command: ``look`` and ``inventory`` were counted as errors."""
        progression = None if self._state is None else self._state.get("_game_progression")
        if progression is None:
            return None
        return tuple(sorted(map(str, progression.state.facts)))

    def walkthrough(self) -> list[str] | None:
        """The game's stored solution from the start of an episode, if it has one."""
        return None if self._walkthrough is None else list(self._walkthrough)

    def inject_setback(self, rng: np.random.Generator) -> str:
        """Play a reversible, non-optimal command for the agent and narrate it as a slip."""
        self._check_setback(rng)
        if self._tw is None or self._episode_over:
            return ""
        plan_start = set(self.optimal_actions())
        candidates = [
            c
            for c in self._state.admissible_commands or []
            if c.startswith(_SETBACK_VERBS) and c not in plan_start
        ]
        shortening = self._plan_shorteners(candidates)
        candidates = [c for c in candidates if c not in shortening]
        if not candidates:
            return "You hesitate for a moment, but nothing comes of it."
        # Prefer dropping or closing something; stepping away is the fallback.
        objects = [c for c in candidates if not c.startswith("go ")]
        pool = objects or candidates
        command = pool[int(rng.integers(len(pool)))]
        self._send(command)
        feedback = clean_feedback(self._state.feedback)
        return self._observe(f"Distracted, you {command}. {feedback}".strip())

    # -- pickling: the interpreter is rebuilt and the episode replayed -------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(
            _tw=None, _interpreter=None, _loaded=None, _state=None, _policy_cache=None,
            _optimal_cache=None,
        )  # fmt: skip
        return state

    def __deepcopy__(self, memo: dict[int, Any]) -> TextWorldEnv:
        """A copy at the same state. Mid-episode on a Z-machine game, the interpreter's state
        moves to a new interpreter, and TextWorld's own state is copied beside it: replaying
        the episode, as unpickling does, cost about 12 ms a command on Cooking-Medium, and a
        slip's or a setback's look-ahead copies the game on every turn it fires."""
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        source = self._interpreter
        live = (
            self._in_episode
            and self._tw is not None
            and self._loaded is not None
            and self._loaded.suffix == ".z8"
            and source is not None
            and source.alive
        )
        if not live:
            clone.__setstate__(copy.deepcopy(self.__getstate__(), memo))
            return clone
        interpreter = Interpreter()
        try:
            interpreter.load(os.fspath(self._loaded))
            interpreter.set_state(source.get_state())
        except BaseException:
            interpreter.terminate()
            raise
        memo[id(source)] = interpreter
        memo[id(self._grammar)] = self._grammar  # (made from the game's data: shared too)
        _copied_by_textworld(self._tw, memo)
        clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return clone

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.game_id is not None and self._in_episode:  # (a closed env needs a reset first)
            history, self._history = self._history, []
            self._start(self._game_path(self.game_id))
            self._begin_episode()
            for command in history:
                self._send(command)

    # -- for subclasses --------------------------------------------------------

    def _select_game(self, seed: int | None) -> int:
        """The game index of this episode: ``seed`` modulo the number of games, or a draw."""
        n = len(self._game_files)
        return seed % n if seed is not None else int(self.np_random.integers(n))

    def _game_path(self, game_id: int) -> Path:
        """The game file of ``game_id``."""
        return self._game_files[game_id]

    # -- engine ----------------------------------------------------------------

    @staticmethod
    def _check_game_file(path: Path) -> Path:
        shown = brief(str(path), PATH_CHARS)
        if path.suffix not in {".z8", ".ulx"}:
            raise ValueError(f"Expect a TextWorld game file (.z8 or .ulx), got {shown}")
        meta = path.with_suffix(".json")
        try:
            if path.is_dir():  # (it was "not found", though it is there)
                raise ValueError(f"Expect a TextWorld game file, got {shown}: a directory")
            if not path.is_file():
                raise FileNotFoundError(f"TextWorld game file not found: {shown}")
            if not meta.is_file():
                raise FileNotFoundError(
                    f"TextWorld game {shown} has no {brief(meta.name, PATH_CHARS)} next to it"
                )
            size = meta.stat().st_size
        except FileNotFoundError:
            raise
        except OSError as e:  # (a name too long for the system was a bare OSError quoting it)
            raise ValueError(f"Cannot use TextWorld game file {shown}: {e.strerror or e}") from None
        if size > MAX_GAME_JSON_BYTES:  # (TextWorld reads it whole: 3 GB was a MemoryError)
            raise ValueError(
                f"TextWorld game {shown} has a {brief(meta.name, PATH_CHARS)} of {size:,} bytes: expect "
                f"at most {MAX_GAME_JSON_BYTES:,} (MAX_GAME_JSON_BYTES)"
            )
        return path

    def _start(self, path: Path) -> None:
        """Load ``path`` into the interpreter unless it is already loaded (and running)."""
        stopped = self._interpreter is not None and not self._interpreter.alive
        if self._tw is not None and self._loaded == path and not stopped:
            return
        textworld = require_textworld()
        if self._tw is not None:
            self._tw.close()
        self._tw = self._loaded = None
        infos = textworld.EnvInfos(
            feedback=True, score=True, max_score=True, moves=True, won=True, lost=True,
            objective=True, admissible_commands=True, policy_commands=True,
            extras=["walkthrough"],
        )  # fmt: skip
        self._check_game_file(path)  # (again: either file may have gone since the constructor)
        check_story_file(path)  # a first check, in a throwaway child
        try:
            with warnings.catch_warnings():
                # jericho's UnsupportedGameWarning: its own score and move detection
                # is off for TextWorld games, which TextWorld tracks instead.
                warnings.simplefilter("ignore")
                if path.suffix == ".ulx":  # TextWorld < 1.7 only, with its own Glulx backend
                    self._tw = textworld.start(str(path), request_infos=infos)
                else:  # the interpreter in a process of its own: it can hang or exit there
                    if self._interpreter is None or stopped:
                        self._interpreter = Interpreter()
                    self._tw = start_game(path, infos, self._interpreter)
        except StoryFileError:
            raise
        except _UNLOADABLE as e:  # (Glulx games with TextWorld >= 1.7; a .json not a game's)
            raise ValueError(
                f"Cannot load TextWorld game {str(path)!r}: {type(e).__name__}: {e}"
            ) from e
        problem = _game_problem(self._tw._game)
        if not problem and path.suffix == ".z8":
            try:
                dictionary = self._interpreter.get_dictionary()
            except InterpreterError as e:  # (a dictionary its header misstates ends frotz)
                raise StoryFileError(f"Cannot load TextWorld game {str(path)!r}: {e}") from None
            problem = _story_mismatch(self._tw._game, dictionary)
        if problem:  # (each failed later, inside TextWorld's reset or ours, as an internal error)
            raise ValueError(f"Cannot load TextWorld game {str(path)!r}: its .json's {problem}")
        self._grammar = CommandGrammar.from_game(self._tw._game)
        self._loaded = path

    def _begin_episode(self) -> None:
        # Quest tracking is decided on reset: keep policy_commands on for it, then
        # off, so commands for the plan are generated only when the oracle asks.
        self._tw.request_infos.policy_commands = True
        try:
            self._state = self._tw.reset()
        except _UNLOADABLE as e:  # (a .json TextWorld loads but cannot track: a quest of no
            # event, an action's name no text, a flag no bool; its own exceptions came out)
            raise ValueError(
                f"Cannot load TextWorld game {str(self._loaded)!r}: {type(e).__name__}: {e}"
            ) from e
        self._tw.request_infos.policy_commands = False
        # (a .json whose world its quest cannot start from: the oracle's plan never moved)
        progression, plan = self._state.get("_game_progression"), self._state.get("_winning_policy")
        if progression is not None and plan and not progression.state.is_applicable(plan[0]):
            raise ValueError(
                f"Cannot load TextWorld game {str(self._loaded)!r}: its .json's world does not "
                f"allow its quest's first action ({brief(plan[0].name)})"
            )
        self._score = int(self._state.score or 0)
        self._moves = int(self._state.moves or 0)
        self._episode_over = bool(self._state.won or self._state.lost)
        self._goal = normalize_text(self._state.objective or "").strip()
        walkthrough = self._state.get("extra.walkthrough")
        self._walkthrough = list(walkthrough) if walkthrough else None
        self._policy_cache = self._optimal_cache = None

    def _send(self, command: str) -> float:
        """Play ``command`` in the interpreter; return the score change."""
        self._state, _, _ = self._tw.step(command)
        self._history.append(command)
        score = int(self._state.score or 0)
        reward = float(score - self._score)
        self._score = score
        self._moves = int(self._state.moves or 0)
        self._episode_over = bool(self._state.won or self._state.lost)
        self._policy_cache = self._optimal_cache = None
        return reward

    def _policy(self) -> list[str] | None:
        if self._state is None or self._state.won or self._state.lost:
            return None
        if self._policy_cache is None:
            actions = self._state.get("_winning_policy")
            commands = None
            if actions is not None:
                commands = list(self._tw._inform7.gen_commands_from_actions(actions))
            self._policy_cache = (len(self._history), commands)
        return self._policy_cache[1]

    def _plan_shorteners(self, commands: list[str]) -> set[str]:
        """The ``commands`` after which TextWorld's winning plan would be shorter than it is,
        or none (each tried on a copy of the game's logic state, as its tracking plays it).
        A command off the plan can shorten it, the plan being TextWorld's and not always a
        shortest one: a 'setback' then saved the agent turns (5 -> 1 in a Treasure Hunter
        game)."""
        state = self._state
        progression, current = state.get("_game_progression"), state.get("_winning_policy")
        actions = state.get("_valid_actions")
        if not commands or progression is None or current is None or actions is None:
            return set()  # (no logic state to try them on: as before)
        by_command: dict[str, Any] = {}
        for command, action in zip(
            self._tw._inform7.gen_commands_from_actions(actions), actions, strict=False
        ):
            by_command.setdefault(command, action)  # (one per action, in the same order)
        shorteners = set()
        for command in commands:
            if command not in by_command:
                continue
            probe = progression.copy()
            probe.update(by_command[command])
            after = probe.winning_policy
            if after is None or _plan_steps(after) < _plan_steps(current):
                shorteners.add(command)
        return shorteners

    def _other_plan_starts(self, first: str) -> list[str]:
        progression = self._state.get("_game_progression")
        current = self._state.get("_winning_policy")
        if progression is None or current is None:
            return []
        from textworld.generator.game import ActionDependencyTree, ActionDependencyTreeElement

        trees = [
            qp._tree
            for qp in progression.quest_progressions
            if qp.completable and not qp.done and not qp.quest.optional
        ]
        if not trees or None in trees:
            return []
        tree = ActionDependencyTree(
            kb=progression.game.kb, element_type=ActionDependencyTreeElement, trees=trees
        )
        starts = set()
        target = len(current) - 1
        for element in tree.leaves_elements:
            action = element.action
            if action.name == "trigger" or not progression.state.is_applicable(action):
                continue
            # What TextWorld's tracking does when the action is played: drop it from
            # the plan's tree (its later policy compression can only shorten the plan).
            probe = tree.copy()
            probe.remove(action)
            if sum(a.name != "trigger" for a in probe.flatten()) <= target:
                starts.update(self._tw._inform7.gen_commands_from_actions([action]))
        starts.discard(first)
        return sorted(starts)

    def _info(self, valid_action: bool | None = None) -> dict[str, Any]:
        state = self._state
        max_score = int(state.max_score or 0)
        info: dict[str, Any] = {
            "admissible_actions": []
            if self._episode_over
            else list(state.admissible_commands or []),
            "won": bool(state.won),
            "lost": bool(state.lost),
            "progress": 1.0
            if state.won
            else min(max(self._score / max_score, 0.0), 1.0)
            if max_score > 0
            else 0.0,
            "textworld/score": self._score,
            "textworld/max_score": max_score,
            "textworld/moves": self._moves,
        }
        if valid_action is not None:
            info[INFO_VALID_ACTION] = valid_action
        return info


# The Z-machine alphabet A2 (two Z-characters each in a dictionary word; a-z and space one,
# anything else four): the story file's dictionary keeps a word's first 9 Z-characters.
_Z_ALPHABET_A2 = frozenset("\n0123456789.,!?_#'\"/\\-:()")
_Z_WORD_LENGTH = 9
#: A word of a name as Inform 7 puts it in a story's dictionary, whole.
_PLAIN_WORD = re.compile(r"[a-z0-9'-]+")


def _dictionary_word(word: str) -> str:
    """``word`` as a version 4+ story file's dictionary keeps it (its first 9 Z-characters)."""
    kept, cost = [], 0
    for ch in word:
        cost += 1 if "a" <= ch <= "z" or ch == " " else 2 if ch in _Z_ALPHABET_A2 else 4
        if cost > _Z_WORD_LENGTH:
            break
        kept.append(ch)
    return "".join(kept)


def _story_mismatch(game: Any, dictionary: Sequence[Any]) -> str | None:
    """Why the ``.json`` of ``game`` is not its story file's (None: nothing shows it): a word of
    a thing's or a room's name the story's parser does not know (``dictionary``: the story's
    words, as jericho lists them). A game compiled from the ``.json`` knows every one; of
    1,820 pairs of different cached games of one family, all but 5 had a word the other's
    story lacks."""
    known = {str(word).lower() for word in dictionary}
    for info in game.infos.values():
        for word in (info.name or "").lower().split():
            # (plain words only: Inform 7 keeps "café" in its own spelling, reads "lounge/bar"
            # as two words and "(small)" as three)
            if _PLAIN_WORD.fullmatch(word) and _dictionary_word(word) not in known:
                return (
                    f"names are another game's: the story knows no word {brief(word)} "
                    f"(of {brief(info.name)})"
                )
    return None


#: What TextWorld's game states hold of its logic: lists of facts and actions, which no step
#: changes (each builds new ones), copied as lists.
_LOGIC_LISTS = ("_facts", "_valid_actions")


def _copied_by_textworld(tw: Any, memo: dict[int, Any]) -> None:
    """Put in ``memo`` what a copy of TextWorld's env chain ``tw`` takes as TextWorld's own
    copies take it: what no step changes shared (each layer's game data and Inform 7
    logic), its quest tracking copied by ``GameProgression.copy`` (3 ms where a deep copy
    took 50 on Cooking-Medium), its states' lists of logic facts and actions as lists."""

    def copied(value: Any, copy_of: Callable[[Any], Any]) -> None:
        if value is not None and id(value) not in memo:
            memo[id(value)] = copy_of(value)

    layer = tw
    while layer is not None:
        layers = vars(layer)
        for name in ("_game", "_inform7"):
            copied(layers.get(name), lambda shared: shared)
        copied(layers.get("_game_progression"), lambda progression: progression.copy())
        for state in (layers.get("state"), layers.get("_prev_state")):
            if isinstance(state, dict):  # (each state holds the tracking's progression)
                copied(state.get("_game_progression"), lambda progression: progression.copy())
                for key in _LOGIC_LISTS:
                    if isinstance(state.get(key), list):
                        copied(state[key], list)
        layer = layers.get("_wrapped_env")


#: What loading a game raises for a story or .json TextWorld cannot play (its quest checks
#: raise a NameError subclass, `UnderspecifiedQuestError`, and bare assertions).
_UNLOADABLE = (
    ValueError, NotImplementedError, KeyError, TypeError, AttributeError, RecursionError,
    NameError, AssertionError,
)  # fmt: skip


def _quest_problem(game: Any) -> str | None:
    """What of a game's quests TextWorld's tracking cannot follow (None: nothing): a quest
    with no event, an action no rule of the game's knowledge base makes (its conditions
    other than the rule's), an entity in an action under another type than its own. Such a
    quest sent the tracking's dependency tree round a loop at reset, its memory growing
    until the process was killed."""
    rules = game.kb.rules
    for number, quest in enumerate(game.quests):
        if not quest.win_events and not quest.fail_events:
            return f"quest {number} has no winning or failing event"
        for event in (*quest.win_events, *quest.fail_events):
            for action in event.actions:
                name = action.name
                try:
                    rule = rules[name] if isinstance(name, str) else None
                except KeyError:
                    rule = None
                if rule is None:
                    return f"quest {number} plays {brief(name)}, which no rule of its game makes"
                for side in ("preconditions", "postconditions"):
                    ours = sorted(p.name for p in getattr(action, side))
                    if ours != sorted(p.name for p in getattr(rule, side)):
                        return f"quest {number}'s {name!r} has {side} other than its rule's"
                for proposition in (*action.preconditions, *action.postconditions):
                    for variable in proposition.arguments:
                        kind = game.infos[variable.name].type
                        if variable.type != kind:
                            return (
                                f"quest {number}'s {name!r} takes {brief(variable.name)} as a "
                                f"{brief(variable.type)}, but it is a {brief(kind)}"
                            )
    return None


def _game_problem(game: Any) -> str | None:
    """What of a loaded game's ``.json`` its episodes cannot use (None: nothing): a
    ``metadata`` that is no mapping, an ``objective`` that is no text, a walkthrough that is
    no list of commands, ``infos`` that miss an entity its world or quests use or name one
    with no text."""
    metadata = getattr(game, "metadata", None)
    if not isinstance(metadata, dict):
        return f"metadata is {brief(metadata)}, not an object"
    objective = getattr(game, "_objective", None)
    if objective is not None and not isinstance(objective, str):
        return f"objective is {brief(objective)}, not a string"
    walkthrough = metadata.get("walkthrough")
    if walkthrough is not None and not (
        isinstance(walkthrough, list) and all(isinstance(c, str) for c in walkthrough)
    ):
        return f"walkthrough is {brief(walkthrough)}, not a list of commands"
    # (a world of no facts loaded: no command was admissible, every one the story played was
    # judged invalid, and the oracle's plan never moved, up to a win)
    if not any(f.name == "at" and f.arguments[0].name == "P" for f in game.world.facts):
        return "world places the player nowhere (no at(P, room) fact)"
    # (TextWorld names each entity of a command from its infos: one missing was a KeyError
    # from inside reset, or from a step)
    used = {"P", "I"}  # (the player and the inventory)
    used.update(v.name for fact in game.world.facts for v in fact.arguments)
    for quest in game.quests:
        for event in (*quest.win_events, *quest.fail_events):
            used.update(v.name for action in event.actions for v in action.variables)
    missing = sorted(used - set(game.infos))
    if missing:
        return f"infos have no entry for {brief(missing[0])} ({len(missing)} missing in all)"
    problem = _quest_problem(game)
    if problem:
        return problem
    for key, info in game.infos.items():  # (a name no text was an AttributeError in reset)
        if info.name is not None and not isinstance(info.name, str):
            return f"infos give {brief(key)} the name {brief(info.name)}, not a string"
    return None
