"""Classic-RL adapter with memory: features per action slot, a window of executed commands, the budget."""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from turnbudget._checks import brief, check_bool, check_option, check_positive_int
from turnbudget.wrappers._common import find_wrapper, record_args, require_single
from turnbudget.wrappers.discrete_actions import DiscreteActions, check_max_actions
from turnbudget.wrappers.numeric_info import NumericInfo
from turnbudget.wrappers.reveal_budget import RevealBudget, template_shows_budget
from turnbudget.wrappers.text_features import (
    NgramEncoder,
    TextFeatures,
    hashed_ngrams,
    tokens,
)

__all__ = [
    "MAX_FEATURES",
    "FeatureEncoder",
    "FeatureEpisode",
    "HistoryFeatures",
    "executed_command",
    "text_features_vector",
]

# Scales that keep the numeric features near [0, 1] for the budgets these games use.
_TURN_SCALE = 100.0
_CACHE_LIMIT = 100_000
_ACTIONS_BYTES = 2**26  # most memory the memoized slot and window blocks take
_MEMORY_DIM = 64  # buckets of the bag of words compared across turns
#: Most features `FeatureEncoder` may add (2**20 float32: 4 MiB per observation).
MAX_FEATURES = 2**20


def _words(text: str) -> set[str]:
    return set(tokens(text))


def executed_command(chosen: str, info: Mapping[str, Any]) -> str:
    """The command a turn executed: the one chosen, or an applied slip's substitute
    (`InjectErrors`)."""
    injected = info.get("injected_error")
    if injected and injected.get("kind") == "slip" and injected.get("applied"):
        return injected.get("replaced_action") or chosen
    return chosen


def text_features_vector(
    observation: str,
    goal: str,
    admissible: Sequence[str],
    spec: Mapping[str, Any],
    cache: dict[str, int] | None = None,
) -> np.ndarray:
    """What `TextFeatures` with the settings ``spec`` returns for one observation.

    For agents outside a gym stack (`turnbudget.agents.policy.PolicyAgent`);
    the tests check it equals the wrapper's output along real episodes.
    """
    dim, ngrams = int(spec["dim"]), int(spec["ngrams"])
    blocks = [hashed_ngrams(observation, dim, ngrams, cache)]
    if spec["include_goal"]:
        blocks.append(hashed_ngrams(goal, dim, ngrams, cache))
    if spec["include_admissible"]:
        blocks.append(hashed_ngrams("\n".join(admissible), dim, ngrams, cache))
    return np.concatenate(blocks)


class FeatureEpisode:
    """What `FeatureEncoder` remembers of one episode: its goal's words, the commands executed
    (most recent first, the last ``history``), the unit vectors of the observations seen, and
    the turns played. `FeatureEncoder.episode` makes one; the batched training layer keeps one
    per sub-env."""

    __slots__ = ("executed", "goal_words", "n_seen", "seen", "seen_bytes", "shares", "turns")

    def __init__(self, goal: str, history: int):
        self.goal_words = _words(goal)
        self.shares: dict[tuple[str, ...], np.ndarray] = {}  # slot commands -> goal shares
        self.executed: deque[str] = deque(maxlen=history)
        # The unit vectors of the episode's observations (rows past ``n_seen`` unset: never read).
        self.seen = np.empty((64, _MEMORY_DIM))
        # (the same memory as bytes: a row stored by a slice assignment is a memcpy, where
        # NumPy's row assignment cost ten times as much)
        self.seen_bytes = memoryview(self.seen).cast("B")
        self.n_seen = 0
        self.turns = 0

    # A memoryview cannot be pickled: an episode is copied without its view of ``seen``
    # (``copy.deepcopy`` and pickle of a stack with `HistoryFeatures` failed), which the copy
    # makes again of its own ``seen``.
    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__ if name != "seen_bytes"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self.seen_bytes = memoryview(self.seen).cast("B")

    def record(self, command: str) -> None:
        """The command executed this turn (once per turn, after the turn's encoding)."""
        self.executed.appendleft(str(command))
        self.turns += 1

    def remember(self, row: memoryview) -> None:
        """Store the bytes of this turn's unit vector (a float64 row) as the next seen one."""
        n = self.n_seen
        if n == len(self.seen):
            self.seen = np.concatenate([self.seen, np.empty_like(self.seen)])
            self.seen_bytes = memoryview(self.seen).cast("B")
        width = len(row)
        self.seen_bytes[n * width : (n + 1) * width] = row
        self.n_seen = n + 1


class FeatureEncoder:
    """The memory and action-slot features of `HistoryFeatures`, as a plain stateful object.

    One encoder serves one episode at a time: ``reset(goal)``, then per turn
    ``encode(...)`` for the observation the agent sees and ``record(command)``
    for the command that was actually executed (which may differ from the one
    chosen: a slip, a forced turn). The same object computes the features in
    the training stack and inside `PolicyAgent`, so the two cannot drift.
    `encode_batch` encodes many episodes' turns at once (one `FeatureEpisode`
    each, from `episode`): `encode` is its batch of one, and the learner's
    vector env (`turnbudget.train.batched`) calls it for all its sub-envs.

    Features, in order (``size()`` of them):

    - per action slot i < ``max_actions`` (the i-th admissible command in
      alphabetical order, as `DiscreteActions` numbers them; zeros past the
      admissible ones): hashed n-grams of the command (``command_dim``), the
      share of the command's words found in the goal, and whether it is the
      command executed 1..``history`` turns ago;
    - the commands executed 1..``history`` turns ago, hashed (``command_dim`` each);
    - memory: cosine similarity of this observation's features to each of the
      last ``history`` observations and the largest one to any earlier
      observation of the episode (a revisit signal that hashed features alone
      cannot give an MLP);
    - the share of the goal's words in the observation, and turns played / 100;
    - with ``budget``: turns left / 100, turns left / budget, 1 / turns left, on turns
      whose text shows the budget; 0, 0, 1 on the others (callers pass None for both).

    Args:
        max_actions: Action slots (the `DiscreteActions` size).
        history: How many past turns the window holds (a positive int).
        command_dim: Hash buckets per command (a positive int).
        budget: Include the budget features.

    Raises:
        ValueError: An argument of the wrong type, or more than `MAX_FEATURES` features.
    """

    def __init__(self, max_actions: int, history: int, command_dim: int, budget: bool):
        self.max_actions = check_max_actions(max_actions)
        self.history = check_positive_int(history, "history")
        self.command_dim = check_positive_int(command_dim, "command_dim")
        self.budget = check_bool(budget, "budget")
        self.slot_size = self.command_dim + 1 + self.history
        if self.size() > MAX_FEATURES:  # (brief: a count past 4,300 digits has no str())
            raise ValueError(
                f"Expect at most {MAX_FEATURES:,} history features, got {brief(self.size())} "
                f"(max_actions={self.max_actions} slots of command_dim + 1 + history = "
                f"{brief(self.slot_size)}, and history={brief(self.history)} commands of "
                f"command_dim={brief(self.command_dim)}): lower `history`, `command_dim` or "
                f"`max_actions`"
            )
        self._cache: dict[str, int] = {}  # n-gram -> bucket, one cache per dim
        #: Buckets of the observations' bags of words that the memory compares.
        self.memory_dim = _MEMORY_DIM
        self._memory_ngrams = NgramEncoder(self.memory_dim, 1)  # the observations' bags of words
        self._command_cache: dict[str, tuple[np.ndarray, frozenset[str]]] = {}
        self._slots_cache: dict[
            tuple[str, ...], tuple[np.ndarray, dict[str, tuple[int, ...]], frozenset[str]]
        ] = {}
        self._window_cache: dict[tuple[str, ...], bytes] = {}
        self._no_shares = np.zeros(self.max_actions, dtype=np.float32)
        self._size = self.size()
        # The slot features (to the end of the slots) then the window's commands.
        self._slots_end = self.max_actions * self.slot_size
        self._actions_end = self._slots_end + self.history * self.command_dim
        self._blocks_limit = max(1, min(_CACHE_LIMIT, _ACTIONS_BYTES // (4 * self._actions_end)))
        self._no_window = np.zeros(self.history * self.command_dim, dtype=np.float32)
        # a row's tail (memory, goal share, turns, budget) before it is written: zeros
        self._no_tail = bytes(4 * (self._size - self._actions_end))
        self.reset("")

    def size(self) -> int:
        """Length of the vector `encode` returns."""
        return (
            self.max_actions * self.slot_size
            + self.history * self.command_dim
            + self.history
            + 1
            + 2
            + (3 if self.budget else 0)
        )

    def episode(self, goal: str) -> FeatureEpisode:
        """A new episode with this goal text, for `encode_batch`."""
        return FeatureEpisode(goal, self.history)

    def reset(self, goal: str) -> None:
        """Start an episode with this goal text."""
        self._episode = self.episode(goal)

    def record(self, command: str) -> None:
        """The command executed this turn (call once per turn, after `encode`)."""
        self._episode.record(command)

    @property
    def _executed(self) -> deque[str]:
        """The commands executed in the current episode, most recent first."""
        return self._episode.executed

    def _command(self, command: str) -> tuple[np.ndarray, frozenset[str]]:
        """(hashed n-grams, word set) of a command, memoized: commands repeat all the time."""
        hit = self._command_cache.get(command)
        if hit is None:
            if len(self._command_cache) > _CACHE_LIMIT:
                self._command_cache.clear()
            vector = hashed_ngrams(command, self.command_dim, 2, self._cache)
            hit = self._command_cache[command] = (vector, frozenset(_words(command)))
        return hit

    @staticmethod
    def _units(bags: np.ndarray) -> np.ndarray:
        """Each observation's bag of words (the rows of ``bags``) as a unit vector."""
        vectors = bags.astype(np.float64)
        # each row's own dot product (the same BLAS call as ``vector @ vector``, bit for bit)
        squares = (vectors[:, None, :] @ vectors[:, :, None]).reshape(len(vectors))
        vectors /= np.maximum(np.sqrt(squares), 1e-8)[:, None]
        return vectors

    def _shares(self, episode: FeatureEpisode, shown: tuple[str, ...]) -> np.ndarray:
        """The share of each slot command's words found in the episode's goal (zeros past the
        commands shown), memoized for the episode: states repeat. (`encode_batch` skips the
        call when no command shares a word with the goal: all zeros, the common case.)"""
        if not shown:
            return self._no_shares
        shares = episode.shares.get(shown)
        if shares is None:
            goal = episode.goal_words
            shares = episode.shares[shown] = np.zeros(self.max_actions, dtype=np.float32)
            shares[: len(shown)] = [
                len(words & goal) / max(1, len(words))
                for words in (self._command(command)[1] for command in shown)
            ]
        return shares

    def _slot_commands(
        self, shown: tuple[str, ...]
    ) -> tuple[bytes, dict[str, tuple[int, ...]], frozenset[str]]:
        """The slots' features with only their commands hashed (no flags, no shares; the bytes
        of their float32s: a batch's rows are one join), where
        the flags of each command's slots start in them, and all their commands' words,
        memoized (never mutate them). A cold run meets a new pair of state and window about
        every other turn, but seldom a new state or a new window: `encode_batch` sets a
        turn's few flags in its own row."""
        hit = self._slots_cache.get(shown)
        if hit is None:
            self._limit_blocks()
            slots = np.zeros((self.max_actions, self.slot_size), dtype=np.float32)
            flags: dict[str, tuple[int, ...]] = {}
            for slot, command in enumerate(shown):
                slots[slot, : self.command_dim] = self._command(command)[0]
                first = slot * self.slot_size + self.command_dim + 1
                flags[command] = (*flags.get(command, ()), first)
            words = frozenset().union(*[self._command(command)[1] for command in shown])
            hit = self._slots_cache[shown] = (slots.tobytes(), flags, words)
        return hit

    def _window(self, executed: tuple[str, ...]) -> bytes:
        """The window's commands hashed, most recent first (zeros past the episode's start),
        as the bytes of its float32s, memoized."""
        window = self._window_cache.get(executed)
        if window is None:
            self._limit_blocks()
            rows = [self._command(done)[0] for done in executed]
            rows.append(self._no_window[len(executed) * self.command_dim :])
            window = self._window_cache[executed] = np.concatenate(rows).tobytes()
        return window

    def _limit_blocks(self) -> None:
        """Empty the slot and window memos once they hold their share of memory."""
        if len(self._slots_cache) + len(self._window_cache) >= self._blocks_limit:
            self._slots_cache.clear()
            self._window_cache.clear()

    def encode(
        self,
        observation: str,
        commands: Sequence[str],
        turns_left: int | None = None,
        turn_budget: int | None = None,
    ) -> np.ndarray:
        """Features of the observation the agent sees now, given the slot commands."""
        return self.encode_batch(
            [self._episode], [observation], [commands], [turns_left], [turn_budget]
        )[0]

    def encode_batch(
        self,
        episodes: Sequence[FeatureEpisode],
        observations: Sequence[str],
        commands: Sequence[Sequence[str]],
        turns_left: Sequence[int | None],
        turn_budgets: Sequence[int | None],
        bags: tuple[np.ndarray, Sequence[frozenset[str]]] | None = None,
    ) -> np.ndarray:
        """`encode` for several episodes at once: row i holds the features of
        ``observations[i]`` in ``episodes[i]`` (a float32 array of ``(len(episodes), size())``).

        ``bags``: the observations' bags of words in `memory_dim` buckets and their sets of
        words, when already hashed (`NgramEncoder.encode_with_bags`: the learner's batch gets
        them in the pass that hashes the text blocks); else this encoder hashes them."""
        if not len(episodes):
            return np.empty((0, self._size), dtype=np.float32)
        features, words = bags or self._memory_ngrams.encode_with_words(observations)
        units = self._units(features)
        unit_bytes, width = memoryview(units).cast("B"), 8 * units.shape[1]
        # Each row as bytes (slots, window, a zero tail), joined at once: NumPy's assignment of
        # a list of arrays looked at every array
        parts: list[bytes] = []
        flags, shares, tails = [], [], []
        slots_cache, window_cache = self._slots_cache, self._window_cache  # (hits: no call)
        # (the attributes read per row as locals, and the memory's similarities inline: an
        # attribute or a call per row cost more than the few lines they stand for)
        max_actions, history, size = self.max_actions, self.history, self._size
        no_tail, budget_features = self._no_tail, self.budget
        no_memory = [0.0] * (history + 1)
        row = 0  # where this turn's row starts in the flat output
        for i, (episode, now, obs_words, shown_commands, left, budget) in enumerate(
            zip(episodes, units, words, commands, turns_left, turn_budgets)
        ):
            shown = tuple(shown_commands[:max_actions])
            executed = tuple(episode.executed)
            hit = slots_cache.get(shown)
            block, first_flags, slot_words = hit if hit is not None else self._slot_commands(shown)
            window = window_cache.get(executed)
            parts += (block, window if window is not None else self._window(executed), no_tail)
            for lag, done in enumerate(executed):  # whether a slot's command was executed then
                for first in first_flags.get(done, ()):
                    flags.append(row + first + lag)
            row += size
            goal = episode.goal_words
            # (the block's zeros when no command shares a word with the goal: most states, each
            # of which cost every episode a memo entry)
            if not goal.isdisjoint(slot_words):
                shares.append((i, self._shares(episode, shown)))
            # The memory: the similarities of this observation to the last ``history`` seen
            # (most recent first, zeros past the episode's start) and the largest to any.
            n = episode.n_seen
            if n:
                # (ndarray.dot makes the BLAS call ``@`` makes, a gemv, or a dot for one row,
                # at two thirds of its cost)
                similarity = episode.seen[:n].dot(now).tolist()
                recent = n if n < history else history
                tail = similarity[: -recent - 1 : -1]
                if recent < history:
                    tail += [0.0] * (history - recent)
                tail.append(max(similarity))
            else:
                tail = no_memory.copy()
            episode.remember(unit_bytes[i * width : (i + 1) * width])  # (now joins the seen)
            tail += [len(goal & obs_words) / (len(goal) or 1), episode.turns / _TURN_SCALE]
            if budget_features:
                left = float(left if left is not None else 0)
                total = float(budget if budget else 1)
                tail += [left / _TURN_SCALE, left / total, 1.0 / (left if left > 1.0 else 1.0)]
            tails += tail
        out = np.frombuffer(bytearray().join(parts), dtype=np.float32).reshape(-1, self._size)
        # (the tails' floats as one buffer: a list of lists costs NumPy a look at every float,
        # and array("d", ...) a parse of each)
        tails_buffer = struct.pack(f"{len(tails)}d", *tails)
        out[:, self._actions_end :] = np.frombuffer(tails_buffer).reshape(len(out), -1)
        for i, row_shares in shares:
            out[i, self.command_dim : self._slots_end : self.slot_size] = row_shares
        if flags:
            out.reshape(-1)[flags] = 1.0
        return out


class HistoryFeatures(
    gym.ObservationWrapper[np.ndarray, int, np.ndarray], gym.utils.RecordConstructorArgs
):
    """Append memory and per-action-slot features to `TextFeatures`' vector.

    The outermost classic-RL adapter: it wraps a stack that ends in
    `DiscreteActions` then `TextFeatures` and appends what `FeatureEncoder`
    computes: what each action index means right now (its command's hashed
    words and overlap with the goal), a window of the last ``history``
    executed commands, whether this observation was seen before, and, with
    ``budget``, the numeric budget. A memoryless policy in a partially
    observable game (the Maze shows one room; KeyQuest does not say where the
    keys were) cannot tell a new room from the one it just left; a short
    window is cheaper than a recurrent policy and keeps ``MaskablePPO``.

    The executed command is the one `DiscreteActions` sent, or an injected
    slip's substitute when `InjectErrors` replaced it.

    `spec()` returns everything an agent needs to rebuild the same features
    from text (see `turnbudget.agents.policy.PolicyAgent`).

    Args:
        env: A stack ending in `DiscreteActions` and then `TextFeatures`.
        history: Past turns in the window (a positive int).
        command_dim: Hash buckets per command (a positive int); the features it adds
            (`FeatureEncoder`) are at most `MAX_FEATURES`.
        budget: Add the numeric budget features (needs a `RevealBudget` that
            shows the budget: the policy sees what the text shows, so with
            ``reveal="final=k"`` the numbers too show only in the last k turns).

    Example:
        >>> import turnbudget
        >>> env = HistoryFeatures(turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=6,
        ...                                        text_features=32, info="text"), history=2, command_dim=8)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape == env.observation_space.shape, env.spec_dict()["history"]
        (True, 2)
    """

    def __init__(self, env: gym.Env, history: int = 4, command_dim: int = 16, budget: bool = False):
        for name, value in (("history", history), ("command_dim", command_dim), ("budget", budget)):
            check_option(value, name)  # (before Gymnasium deep-copies them: recursion)
        record_args(self, history=history, command_dim=command_dim, budget=budget)
        gym.ObservationWrapper.__init__(self, env)
        if isinstance(env, NumericInfo):  # the text keys it reads are gone
            raise ValueError(
                "Expect the text info keys below HistoryFeatures: build the stack with "
                "turnbudget.make(..., info='text') and put NumericInfo outside HistoryFeatures"
            )
        text = env if isinstance(env, TextFeatures) else None
        discrete = env.env if text is not None and isinstance(env.env, DiscreteActions) else None
        if text is None or discrete is None:
            raise ValueError(
                "Expect HistoryFeatures to wrap a stack ending in DiscreteActions then TextFeatures "
                "(turnbudget.make(..., discrete_actions=N, text_features=D))"
            )
        require_single(env, HistoryFeatures)
        self.encoder = FeatureEncoder(discrete.max_actions, history, command_dim, budget)
        reveal = find_wrapper(env, RevealBudget)
        if self.encoder.budget and (
            reveal is None or reveal.mode == "never" or not template_shows_budget(reveal.template)
        ):
            # (a template with no budget in it, "[Hurry up!]" or "{turns_used}", gave the
            # policy the exact budget in its features while the text showed none)
            raise ValueError(
                "Expect a RevealBudget that shows the budget (reveal=..., its template "
                "with {turns_left} or {turn_budget}) below HistoryFeatures(budget=True)"
                + ("" if reveal is None else f", got template {reveal.template!r}")
            )
        self._text, self._discrete, self._reveal = text, discrete, reveal
        base = text.observation_space.shape[0]
        self.observation_space = spaces.Box(
            -np.inf, np.inf, shape=(base + self.encoder.size(),), dtype=np.float32
        )
        self._commands: list[str] = []

    def spec_dict(self) -> dict[str, Any]:
        """The encoding, JSON-serialisable: what `PolicyAgent` rebuilds the features from."""
        reveal = self._reveal
        return {
            "text_features": {
                "dim": self._text.block_dim,  # (the policy files' key)
                "ngrams": self._text.ngrams,
                "include_goal": self._text.include_goal,
                "include_admissible": self._text.include_admissible,
            },
            "max_actions": self._discrete.max_actions,
            "history": self.encoder.history,
            "command_dim": self.encoder.command_dim,
            "budget": self.encoder.budget,
            "reveal": None
            if reveal is None or reveal.mode == "never"
            else {
                "mode": reveal.mode,
                "final_turns": reveal.final_turns,
                "template": reveal.template,
            },
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.encoder.reset(str(info.get("goal", "")))
        return self._features(obs, info), info

    def step(self, action: int) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        command = self._discrete.action(action) if self._commands else ""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.encoder.record(executed_command(command, info))
        return self._features(obs, info), reward, terminated, truncated, info

    def observation(self, observation: np.ndarray) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError("HistoryFeatures builds features in reset() and step()")

    def _features(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        self._commands = list(info["action_commands"])
        shown = info.get("budget_visible") is True  # (as the text: `RevealBudget` says when)
        extra = self.encoder.encode(
            info["text_observation"],
            self._commands,
            info.get("turns_left") if shown else None,
            info.get("turn_budget") if shown else None,
        )
        return np.concatenate([obs, extra]).astype(np.float32, copy=False)
