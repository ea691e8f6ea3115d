"""Classic-RL adapter: text observations to fixed-length hashed bag-of-n-grams vectors."""

from __future__ import annotations

import warnings
import zlib
from array import array
from collections.abc import Sequence
from itertools import chain, pairwise
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.core import ActType

from turnbudget._checks import brief, check_bool, check_positive_int, renamed
from turnbudget.wrappers._common import find_wrapper, record_args, require_single

__all__ = [
    "FEATURE_HIGH",
    "MAX_COUNT",
    "MAX_DIM",
    "MAX_NGRAMS",
    "NgramEncoder",
    "TextEncoder",
    "TextFeatures",
    "bucket_features",
    "bucket_rows",
    "hashed_ngrams",
    "ngram_buckets",
    "tokens",
]

#: Largest ``dim`` (2**20 buckets: 4 MiB of float32 per block and observation).
MAX_DIM = 2**20
#: Longest n-gram.
MAX_NGRAMS = 8

_DEFAULT_BLOCK_DIM = 256
# Every byte but a-z and 0-9 as a space: what `tokens` splits a text's bytes on.
_SEPARATORS = bytes(c if 97 <= c <= 122 or 48 <= c <= 57 else 32 for c in range(256))
_CACHE_LIMIT = 200_000
# Texts without their last line `NgramEncoder` keeps: each holds a whole observation's buckets
# (KiBs for a long TextWorld room), where a line's entry holds one line's; a 16-env Maze-Easy
# run meets about 2,800 in 5,000 observations.
_BODIES_LIMIT = 20_000
#: Counts are capped here, so every feature lies in [0, `FEATURE_HIGH`] whatever
#: the text (a bucket never reaches it in an 8192-character observation).
MAX_COUNT = 2**16 - 1
#: The upper bound of every feature, log(1 + `MAX_COUNT`) as float32 (about 11.09).
FEATURE_HIGH = float(np.log1p(np.array([MAX_COUNT])).astype(np.float32)[0])
# log(1 + count) as float32 for every count up to MAX_COUNT: the features are one lookup.
_LOG1P = np.log1p(np.arange(MAX_COUNT + 1)).astype(np.float32)
_LOG1P.flags.writeable = False


def _check_at_most(value: Any, name: str, most: int) -> int:
    """``value`` as an int if it is one in [1, ``most``] (every observation is a dense vector
    of ``dim`` floats per block), else a ValueError."""
    value = check_positive_int(value, name)
    if value > most:
        raise ValueError(f"Expect `{name}` to be at most {most}, got {brief(value)}")
    return value


def tokens(text: str) -> list[str]:
    """The words of ``text``: ``re.findall(r"[a-z0-9]+", text.lower())``, by a byte translation
    and a split (a third of the regex's cost: every new line is tokenized). A character that
    is not ASCII is a separator for the pattern as for its ``?`` here.

    >>> tokens("Go NORTH, then \u00e9ast-2!")
    ['go', 'north', 'then', 'ast', '2']
    """
    return text.lower().encode("ascii", "replace").translate(_SEPARATORS).decode("ascii").split()


def hashed_ngrams(
    text: str,
    dim: int,
    ngrams: int = 2,
    cache: dict[str, int] | None = None,
    lines: dict[Any, Any] | None = None,
) -> np.ndarray:
    """log(1 + count) of every word n-gram (n = 1..``ngrams``), hashed into ``dim`` buckets.

    Counts are capped at `MAX_COUNT`, so every value lies in [0, `FEATURE_HIGH`].
    The hash is CRC-32 (stable across processes, unlike ``hash()``). ``cache``
    (n-gram -> bucket) and ``lines`` (see `ngram_buckets`) memoize the work for
    one ``dim`` and ``ngrams``.

    >>> v = hashed_ngrams("Go north. Go north!", dim=64)
    >>> v.shape, v.dtype, round(float(v.max()), 3)
    ((64,), dtype('float32'), 1.099)
    >>> bool((hashed_ngrams("Go north.\\nGo north!", 64, lines={}) == hashed_ngrams(
    ...     "Go north.\\nGo north!", 64)).all())
    True
    """
    return bucket_features(ngram_buckets(text, dim, ngrams, cache, lines)[1], dim)


def ngram_buckets(
    text: str,
    dim: int,
    ngrams: int = 2,
    cache: dict[str, int] | None = None,
    lines: dict[Any, Any] | None = None,
) -> tuple[list[str], list[int]]:
    """The words of ``text`` and the bucket of each of its word n-grams: what `hashed_ngrams`
    counts (`bucket_features` turns the buckets into its features).

    ``lines`` memoizes, for one ``dim`` and ``ngrams``, the words and buckets of every line
    seen and the buckets of the n-grams across every line break seen: a text whose lines
    were seen (an observation with a revealed budget: the budget's line is one of a few)
    costs their lookups however they combine. The lists returned may be memoized ones:
    never mutate them.
    """
    if cache is None:
        cache = {}
    elif len(cache) > _CACHE_LIMIT:
        cache.clear()
    if lines is None:
        words = tokens(text)
        return words, _buckets(_grams(words, ngrams), dim, cache)
    if len(lines) > _CACHE_LIMIT:
        lines.clear()
    parts: list[bytes] = []
    seen, _ = _text_buckets(text, dim, ngrams, cache, lines, parts)
    buckets = memoryview(b"".join(parts)).cast("q").tolist()
    if len(seen) == 1:
        return seen[0][0], buckets
    return [word for line in seen for word in line[0]], buckets


def bucket_features(indices: list[int], dim: int) -> np.ndarray:
    """log(1 + count) of each of ``dim`` buckets, counts capped at `MAX_COUNT` (float32)."""
    return bucket_rows([indices], dim)[0]


def bucket_rows(indices: Sequence[list[int]], dim: int) -> np.ndarray:
    """`bucket_features` of each list of buckets, as the rows of one ``(len(indices), dim)``
    array: one count and one lookup for them all.

    >>> rows = bucket_rows([[0, 0, 2], []], 3)
    >>> rows.shape, bool((rows[0] == bucket_features([0, 0, 2], 3)).all()), float(rows[1].max())
    ((2, 3), True, 0.0)
    """
    sizes = [len(row) for row in indices]
    flat = np.fromiter(chain.from_iterable(indices), dtype=np.int64, count=sum(sizes))
    return _counted_rows(flat, sizes, dim)


def _packed_rows(rows: list[bytes], dim: int) -> np.ndarray:
    """`bucket_rows` of rows whose buckets are `_packed`: one join and no Python int to convert
    (``np.fromiter`` over a batch's ints cost more than the rest of the count)."""
    flat = np.frombuffer(b"".join(rows), dtype=np.int64)
    return _counted_rows(flat, [len(row) >> 3 for row in rows], dim)


def _packed(buckets: list[int]) -> bytes:
    """Buckets as the bytes of an int64 array (what `_packed_rows` joins)."""
    return array("q", buckets).tobytes()


def _counted_rows(flat: np.ndarray, sizes: list[int], dim: int) -> np.ndarray:
    """The rows of `bucket_rows` from all their buckets in a row (``sizes`` of them each)."""
    if len(sizes) > 1:  # row i counts in buckets i * dim .. (i + 1) * dim - 1
        flat = flat + np.repeat(np.arange(0, len(sizes) * dim, dim), sizes)
    counts = np.bincount(flat, minlength=len(sizes) * dim)
    if max(sizes, default=0) > MAX_COUNT:
        counts = np.minimum(counts, MAX_COUNT)
    return _LOG1P.take(counts).reshape(len(sizes), dim)  # (take: a tighter loop than [counts])


class NgramEncoder:
    """`hashed_ngrams` of many texts at once, for one ``dim`` and ``ngrams``, memoized per line
    (`ngram_buckets`' line memo): a text whose lines were seen costs their lookups and the
    n-grams across its line breaks, however its lines combine. An observation with a
    revealed budget is a new text every turn, but its lines are the game's few, and the
    budget's line one of a few (`TextEncoder` keeps one, `FeatureEncoder` one for its memory).

    With ``bag_dim``, `encode_with_bags` also gives each text's bag of words hashed into
    ``bag_dim`` buckets (``hashed_ngrams(text, bag_dim, 1)``) from the same pass over its
    lines: the learner's batch hashes an observation's block and its memory's bag of words
    (`FeatureEncoder`) while it tokenizes the text once.

    >>> encoder = NgramEncoder(dim=16, ngrams=2, bag_dim=8)
    >>> texts = ["Go north.\\n[5 turns left]", "Go north.\\n[4 turns left]"]
    >>> rows, words = encoder.encode_with_words(texts)
    >>> bool((rows[1] == hashed_ngrams(texts[1], 16)).all()), sorted(words[1])
    (True, ['4', 'go', 'left', 'north', 'turns'])
    >>> rows, bags, words = encoder.encode_with_bags(texts)
    >>> bool((bags[1] == hashed_ngrams(texts[1], 8, 1)).all())
    True
    """

    def __init__(self, dim: int, ngrams: int, bag_dim: int | None = None):
        self.dim = _check_at_most(dim, "dim", MAX_DIM)
        self.ngrams = _check_at_most(ngrams, "ngrams", MAX_NGRAMS)
        self.bag_dim = None if bag_dim is None else _check_at_most(bag_dim, "bag_dim", MAX_DIM)
        self._cache: dict[str, int] = {}
        # word -> bucket in bag_dim buckets (the n-gram cache when the sizes agree: a word's
        # bucket is the same)
        self._bag_cache: dict[str, int] = self._cache if bag_dim == self.dim else {}
        self._lines: dict[Any, Any] = {}  # (see `ngram_buckets`)
        # text without its last line -> `_Body` (see `_encode`)
        self._bodies: dict[str, _Body] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """`hashed_ngrams` of each text, as the rows of one array."""
        return _packed_rows(self._encode(texts, None), self.dim)

    def encode_with_words(self, texts: Sequence[str]) -> tuple[np.ndarray, list[frozenset[str]]]:
        """`encode`, and the set of each text's words."""
        words: list[frozenset[str]] = []
        return _packed_rows(self._encode(texts, words), self.dim), words

    def encode_with_bags(
        self, texts: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray, list[frozenset[str]]]:
        """`encode_with_words`, and between them each text's bag of words in ``bag_dim``
        buckets (``hashed_ngrams(text, bag_dim, 1)``), as the rows of a second array."""
        if self.bag_dim is None:
            raise ValueError("encode_with_bags needs an NgramEncoder made with a `bag_dim`")
        words: list[frozenset[str]] = []
        bags: list[bytes] = []
        rows = self._encode(texts, words, bags)
        if self.bag_dim == self.dim:  # (one count for both: each row counts on its own)
            counted = _packed_rows(rows + bags, self.dim)
            return counted[: len(rows)], counted[len(rows) :], words
        return _packed_rows(rows, self.dim), _packed_rows(bags, self.bag_dim), words

    def _encode(
        self,
        texts: Sequence[str],
        words: list[frozenset[str]] | None,
        bags: list[bytes] | None = None,
    ) -> list[bytes]:
        """The buckets of each text (`_packed`: what `_packed_rows` counts); appends each text's
        set of words to ``words`` and the buckets of its bag of words to ``bags`` (unless None)."""
        dim, ngrams, cache, lines = self.dim, self.ngrams, self._cache, self._lines
        bodies = self._bodies
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        if len(self._bag_cache) > _CACHE_LIMIT:
            self._bag_cache.clear()
        if len(lines) > _CACHE_LIMIT:
            lines.clear()
        if len(bodies) > _BODIES_LIMIT:
            bodies.clear()
        if isinstance(texts, str):  # (a str is a sequence of one-character texts)
            raise TypeError(f"Expect `texts` to be a sequence of str, got the str {texts!r:.60}")
        bag = None if self.bag_dim is None else (self.bag_dim, self._bag_cache)
        rows = []
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"Expect every text to be a str, got {type(text).__name__}")
            # An observation's last line is the revealed budget's, new every turn, while its
            # body (the lines above) repeats (about 44% of a cold run's bodies were seen):
            # the body's buckets, words and bag are memoized whole, and the last line is
            # added as `_text_buckets` adds a line after others.
            body, _, last = text.rpartition("\n")
            known = bodies.get(body)
            if known is None:
                parts: list[bytes] = []
                seen, before = _text_buckets(body, dim, ngrams, cache, lines, parts, bag)
                known = bodies[body] = (
                    b"".join(parts),
                    seen[0][2] if len(seen) == 1 else frozenset().union(*[e[2] for e in seen]),
                    b"".join([e[5] for e in seen]),
                    before,
                )
            body_buckets, body_words, body_bag, before = known
            entry = lines.get(last)
            if entry is None:
                entry = lines[last] = _line(last, dim, ngrams, cache, bag)
            if entry[0]:  # (as a line of `_text_buckets`)
                if before:
                    span = lines.get((before, entry[3]))
                    if span is None:
                        span = lines[before, entry[3]] = _packed(
                            _spanning(before, entry[3], dim, ngrams, cache)
                        )
                    rows.append(body_buckets + span + entry[1])
                else:
                    rows.append(body_buckets + entry[1])
                if words is not None:
                    words.append(body_words | entry[2] if body_words else entry[2])
                if bags is not None:
                    bags.append(body_bag + entry[5])
            else:
                rows.append(body_buckets)
                if words is not None:
                    words.append(body_words)
                if bags is not None:
                    bags.append(body_bag)
        return rows


# A text's body (all but its last line) memoized by `NgramEncoder._encode`: the buckets of its
# n-grams (`_packed`), its set of words, its bag's buckets (`_packed`) and its last n - 1 words.
_Body = tuple[bytes, frozenset[str], bytes, tuple[str, ...]]


def _text_buckets(
    text: str,
    dim: int,
    ngrams: int,
    cache: dict[str, int],
    lines: dict[Any, Any],
    parts: list[bytes],
    bag: tuple[int, dict[str, int]] | None = None,
) -> tuple[list[_Line], tuple[str, ...]]:
    """The memo entries of ``text``'s lines with words, and its last n - 1 words (what the
    n-grams across a line after it start with); appends to ``parts`` the buckets of its
    n-grams (`_packed`), from its lines' and its line breaks' (memoized in ``lines``). A word
    never spans a line break; n-grams do (over empty lines too), as in the whole text: each
    is counted on the line where it ends. ``bag`` (bag_dim, its word cache): the entries
    hold their words' buckets in bag_dim buckets (one ``lines`` memo serves one ``bag`` only)."""
    seen = []
    before: tuple[str, ...] = ()  # the last n - 1 words before this line (none if n = 1)
    for line in text.split("\n"):
        entry = lines.get(line)
        if entry is None:
            entry = lines[line] = _line(line, dim, ngrams, cache, bag)
        words, line_buckets, _, first, last, _ = entry
        if words:
            if before:  # the n-grams across the break: from before's words to first's
                span = lines.get((before, first))
                if span is None:
                    span = lines[before, first] = _packed(
                        _spanning(before, first, dim, ngrams, cache)
                    )
                parts.append(span)
                if len(words) < ngrams - 1:
                    last = (before + last)[1 - ngrams :]
            before = last
            parts.append(line_buckets)
            seen.append(entry)
    return seen, before


# A line's words, the buckets of its n-grams (`_packed`), its set of words, its first and last
# n - 1 words (what n-grams across its breaks are made of), and its words' buckets in a bag
# (`_packed`; empty without one).
_Line = tuple[list[str], bytes, frozenset[str], tuple[str, ...], tuple[str, ...], bytes]


def _line(
    line: str,
    dim: int,
    ngrams: int,
    cache: dict[str, int],
    bag: tuple[int, dict[str, int]] | None = None,
) -> _Line:
    words = tokens(line)
    buckets = _packed(_buckets(_grams(words, ngrams), dim, cache))
    if bag is None:
        bag_buckets = b""
    elif bag[0] == dim and bag[1] is cache:  # the n-grams start with the words: their buckets
        bag_buckets = buckets[: 8 * len(words)]
    else:
        bag_buckets = _packed(_buckets(words, *bag))
    return (
        words,
        buckets,
        frozenset(words),
        tuple(words[: ngrams - 1]),
        tuple(words[max(0, len(words) - ngrams + 1) :]),
        bag_buckets,
    )


def _spanning(
    before: tuple[str, ...], after: tuple[str, ...], dim: int, ngrams: int, cache: dict[str, int]
) -> list[int]:
    """Buckets of the n-grams that start in ``before`` and end in ``after`` (words that follow
    it across a line break): they lie in its last n - 1 words and the first n - 1 after."""
    words = before[1 - ngrams :] + after[: ngrams - 1]
    at = min(len(before), ngrams - 1)
    return _buckets(
        [
            " ".join(words[i : i + n])
            for n in range(2, ngrams + 1)
            for i in range(max(0, at - n + 1), min(at, len(words) - n + 1))
        ],
        dim,
        cache,
    )


def _grams(words: list[str], ngrams: int) -> list[str]:
    grams = list(words)
    if ngrams >= 2:  # (the bigrams by pairs, joined in C: no Python frame per bigram)
        grams += map(" ".join, pairwise(words))
    for n in range(3, ngrams + 1):
        grams.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return grams


def _buckets(grams: list[str], dim: int, cache: dict[str, int]) -> list[int]:
    # (the lookups in one map: almost every n-gram of a new line was met before)
    indices = list(map(cache.get, grams))
    if None in indices:
        for i, gram in enumerate(grams):
            if indices[i] is None:
                index = cache.get(gram)  # (an n-gram met earlier in this list)
                if index is None:
                    index = cache[gram] = zlib.crc32(gram.encode()) % dim
                indices[i] = index
    return indices


class TextEncoder:
    """The features of `TextFeatures` for one agent: the blocks, their checks and their caches.

    Arguments as `TextFeatures` (``size`` or ``block_dim``, ``ngrams``,
    ``include_goal``, ``include_admissible``), and ``bag_dim``: the buckets of the
    bags of words `encode_batch_with_bags` also returns (the learner's batch hands
    them to `FeatureEncoder`'s memory). The team form
    (`turnbudget.multiagent.wrappers.TeamTextFeatures`) keeps one per agent;
    the learner's vector env (`turnbudget.train.batched`) one for all its
    sub-envs (`encode_batch`).

    Example:
        >>> encoder = TextEncoder(size=64)
        >>> encoder.set_goal("Find the exit.")
        >>> v = encoder.encode("You are in a hall.", ["go north"])
        >>> v.shape, encoder.space.contains(v), encoder.block_dim
        ((64,), True, 32)
    """

    def __init__(
        self,
        size: int | None = None,
        ngrams: int = 2,
        include_goal: bool = True,
        include_admissible: bool = False,
        *,
        block_dim: int | None = None,
        dim: int | None = None,
        bag_dim: int | None = None,
    ):
        include_goal = check_bool(include_goal, "include_goal")
        include_admissible = check_bool(include_admissible, "include_admissible")
        blocks = 1 + include_goal + include_admissible
        block_dim = renamed(block_dim, dim, "block_dim", "dim", "TextFeatures")
        if size is not None:
            if block_dim is not None:
                raise ValueError(
                    "Give `size` (the whole vector) or `block_dim` (per block), not both"
                )
            size = check_positive_int(size, "size")
            if size > blocks * MAX_DIM:  # (named here: the block_dim it made was never given)
                raise ValueError(
                    f"Expect `size` to be at most {blocks * MAX_DIM} ({blocks} blocks of at most "
                    f"{MAX_DIM}), got {brief(size)}"
                )
            if size % blocks:
                raise ValueError(
                    f"Expect `size` to be a multiple of {blocks} (one block each for the "
                    f"observation{', the goal' * include_goal}"
                    f"{', the admissible commands' * include_admissible}), got {size}"
                )
            block_dim = size // blocks
        block_dim = _DEFAULT_BLOCK_DIM if block_dim is None else block_dim
        self.block_dim = _check_at_most(block_dim, "block_dim", MAX_DIM)
        self.ngrams = _check_at_most(ngrams, "ngrams", MAX_NGRAMS)
        self.include_goal, self.include_admissible = include_goal, include_admissible
        #: ``Box(0, FEATURE_HIGH)`` of the vector's length.
        self.space = spaces.Box(
            0.0, FEATURE_HIGH, shape=(blocks * self.block_dim,), dtype=np.float32
        )
        self._ngrams = NgramEncoder(self.block_dim, self.ngrams, bag_dim)
        self._goal = np.zeros(self.block_dim, dtype=np.float32)

    def set_goal(self, goal: str) -> None:
        """Hash the episode's goal into the goal block (at every reset)."""
        self._goal = self.hash(goal)

    def hash(self, text: str) -> np.ndarray:
        """`hashed_ngrams` of ``text`` into one block, with this encoder's caches."""
        return self.hash_batch([text])[0]

    def hash_batch(self, texts: Sequence[str]) -> np.ndarray:
        """`hash` of each text, as the rows of one array."""
        return self._ngrams.encode(texts)

    def encode(self, text: str, admissible: Any = ()) -> np.ndarray:
        """The vector: ``text``'s block, then the goal's and the ``admissible`` commands' if kept."""
        return self.encode_batch([text], [self._goal], [admissible])[0]

    def encode_batch(
        self, texts: Sequence[str], goals: Sequence[np.ndarray], admissible: Sequence[Any]
    ) -> np.ndarray:
        """`encode` for several observations at once: row i is ``texts[i]``'s block, then (if
        kept) the goal block ``goals[i]`` (from `hash`) and ``admissible[i]``'s block."""
        return self._with_blocks(self.hash_batch(texts), goals, admissible)

    def encode_batch_with_bags(
        self, texts: Sequence[str], goals: Sequence[np.ndarray], admissible: Sequence[Any]
    ) -> tuple[np.ndarray, np.ndarray, list[frozenset[str]]]:
        """`encode_batch`, each text's bag of words in ``bag_dim`` buckets and its set of words
        (`NgramEncoder.encode_with_bags`), from one pass over the texts' lines. Needs ``bag_dim``."""
        rows, bags, words = self._ngrams.encode_with_bags(texts)
        return self._with_blocks(rows, goals, admissible), bags, words

    def _with_blocks(
        self, rows: np.ndarray, goals: Sequence[np.ndarray], admissible: Sequence[Any]
    ) -> np.ndarray:
        """The texts' ``rows``, then the goal and admissible blocks this encoder keeps."""
        blocks = [rows]
        if self.include_goal:
            blocks.append(np.asarray(goals, dtype=np.float32))
        if self.include_admissible:
            blocks.append(self.hash_batch(["\n".join(commands) for commands in admissible]))
        return np.concatenate(blocks, axis=1)


class TextFeatures(
    gym.ObservationWrapper[np.ndarray, ActType, str], gym.utils.RecordConstructorArgs
):
    """Turn the text observation into a fixed-length float vector for classic RL.

    The vector concatenates blocks of ``block_dim`` hashed word n-gram
    features (see `hashed_ngrams`): the observation, then the episode's goal
    (``info["goal"]`` at reset) if ``include_goal``, then the admissible
    commands if ``include_admissible`` (useful with `DiscreteActions`, whose
    index meaning depends on them). Give its length either whole (``size``:
    the observation has ``size`` floats, split evenly between the blocks) or
    per block (``block_dim``). No vocabulary is fitted, so the features are
    the same in every process and episode, and bounded: the observation
    space is ``Box(0, FEATURE_HIGH)``. The text observation stays available
    in ``info["text_observation"]``.

    Args:
        env: An env with ``Text`` observations.
        size: The observation's length: a multiple of the block count (2 with
            the goal block, the default). ``text_features=N`` in `turnbudget.make`
            and ``gym.make`` is ``size=N``.
        ngrams: Longest n-gram (1 = bag of words, 2 = words and bigrams; at most `MAX_NGRAMS`).
        include_goal: Add the goal block.
        include_admissible: Add the admissible-commands block.
        block_dim: Buckets per block (a positive int, at most `MAX_DIM`; default 256
            when ``size`` is not given). Give ``size`` or ``block_dim``, not both.
        dim: Deprecated: the old name of ``block_dim`` (warns; removed in the next release).

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = TextFeatures(gym.make("turnbudget/Maze-Easy-v0"), size=128)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, obs.dtype, env.observation_space.contains(obs), env.block_dim
        ((128,), dtype('float32'), True, 64)
        >>> info["text_observation"].startswith(info["goal"])
        True
    """

    def __init__(
        self,
        env: gym.Env[str, ActType],
        size: int | None = None,
        ngrams: int = 2,
        include_goal: bool = True,
        include_admissible: bool = False,
        *,
        block_dim: int | None = None,
        dim: int | None = None,
    ):
        gym.ObservationWrapper.__init__(self, env)
        self.encoder = TextEncoder(
            size, ngrams, include_goal, include_admissible, block_dim=block_dim, dim=dim
        )
        if not isinstance(env.observation_space, spaces.Text):
            raise ValueError(
                f"TextFeatures needs a Text observation space, got {env.observation_space}"
            )
        require_single(env, TextFeatures)
        from turnbudget.wrappers.numeric_info import NumericInfo  # (it imports this module)

        encoder = self.encoder
        if (encoder.include_goal or encoder.include_admissible) and find_wrapper(
            env, NumericInfo
        ) is not None:  # (the goal's and the commands' blocks were all zeros, silently)
            raise ValueError(
                "TextFeatures reads info['goal'] and info['admissible_actions'], which "
                "NumericInfo drops: put NumericInfo outside TextFeatures (turnbudget.make(..., "
                "text_features=N, info='numeric') stacks them in order)"
            )
        self.block_dim, self.ngrams = encoder.block_dim, encoder.ngrams
        self.include_goal = encoder.include_goal
        self.include_admissible = encoder.include_admissible
        record_args(
            self,
            ngrams=self.ngrams,
            include_goal=self.include_goal,
            include_admissible=self.include_admissible,
            block_dim=self.block_dim,
        )
        self.observation_space = encoder.space

    @property
    def dim(self) -> int:
        """Deprecated: the old name of `block_dim` (warns; removed in the next release)."""
        warnings.warn(
            "TextFeatures.dim is deprecated: use TextFeatures.block_dim (the same number); "
            "dim will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.block_dim

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.encoder.set_goal(str(info.get("goal", "")))
        return self._features(obs, info), info

    def step(self, action: ActType) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._features(obs, info), reward, terminated, truncated, info

    def observation(self, observation: str) -> np.ndarray:
        """Features of ``observation`` alone (goal block from this episode, no admissible block)."""
        return self._features(observation, {})

    def _features(self, obs: str, info: dict[str, Any]) -> np.ndarray:
        features = self.encoder.encode(obs, info.get("admissible_actions", ()))
        assert "text_observation" not in info, "info['text_observation'] set twice"
        info["text_observation"] = obs
        return features
