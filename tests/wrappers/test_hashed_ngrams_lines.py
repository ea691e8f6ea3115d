"""`hashed_ngrams` with its line memo gives exactly the features of the plain computation."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

from turnbudget.wrappers.text_features import MAX_COUNT, NgramEncoder, hashed_ngrams

_TOKEN = re.compile(r"[a-z0-9]+")


def reference(text: str, dim: int, ngrams: int) -> np.ndarray:
    """The computation as it was before the line memo (issue 26): every n-gram of the text."""
    words = _TOKEN.findall(text.lower())
    grams = list(words)
    for n in range(2, ngrams + 1):
        grams.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    indices = [zlib.crc32(gram.encode()) % dim for gram in grams]
    counts = np.minimum(np.bincount(np.asarray(indices, dtype=np.int64), minlength=dim), MAX_COUNT)
    return np.log1p(counts).astype(np.float32)


_PIECES = ("go", "North", "red key", "a", "!", "...", "\n", "\n\n", " ", "Turns left: 7", "7", "")


@pytest.mark.parametrize("ngrams", [1, 2, 3, 4])
def test_line_memo_matches_the_plain_computation(ngrams: int) -> None:
    rng = np.random.default_rng(ngrams)
    lines: dict = {}
    cache: dict = {}
    for _ in range(400):
        text = "".join(_PIECES[i] for i in rng.integers(len(_PIECES), size=rng.integers(0, 30)))
        expected = reference(text, 32, ngrams)
        assert np.array_equal(hashed_ngrams(text, 32, ngrams, cache, lines), expected), text
        assert np.array_equal(hashed_ngrams(text, 32, ngrams), expected), text


def test_line_memo_on_real_observations() -> None:
    import gymnasium as gym

    env = gym.make("turnbudget/KeyQuest-Medium-v0")
    obs, info = env.reset(seed=3)
    lines: dict = {}
    for turn in range(60):
        assert np.array_equal(hashed_ngrams(obs, 64, 2, None, lines), reference(obs, 64, 2))
        obs, _, terminated, truncated, info = env.step(info["admissible_actions"][turn % 3])
        if terminated or truncated:
            obs, info = env.reset()


@pytest.mark.parametrize("ngrams", [1, 2, 3, 4])
def test_texts_that_repeat_all_but_their_last_line_match_the_plain_computation(ngrams: int) -> None:
    # A revealed budget: the same text again with a new last line, whose n-grams span
    # back over short lines (ngrams 3 and 4) into the memoized part.
    rng = np.random.default_rng(10 + ngrams)
    heads = ["Go north.\n\nYou see a red key", "a\n\nb", "", "x\n", "one two three\nfour"]
    lines: dict = {}
    cache: dict = {}
    for _ in range(300):
        last = "".join(_PIECES[i] for i in rng.integers(len(_PIECES), size=rng.integers(0, 4)))
        text = f"{heads[int(rng.integers(len(heads)))]}\n{last}"
        features = hashed_ngrams(text, 32, ngrams, cache, lines)
        assert np.array_equal(features, reference(text, 32, ngrams)), text


@pytest.mark.parametrize("ngrams", [1, 2, 3, 4])
def test_ngram_encoder_matches_the_plain_computation(ngrams: int) -> None:
    # Its rows are summed from memoized lines and line breaks, however the lines combine:
    # short and empty lines that n-grams span, one line, none, a budget line that changes.
    rng = np.random.default_rng(20 + ngrams)
    encoder = NgramEncoder(32, ngrams)
    for _ in range(60):
        texts = [
            "".join(_PIECES[i] for i in rng.integers(len(_PIECES), size=rng.integers(0, 30)))
            + f"\n[{int(rng.integers(40))} turns left]" * int(rng.integers(2))
            for _ in range(int(rng.integers(1, 6)))
        ]
        rows, words = encoder.encode_with_words(texts)
        assert rows.dtype == np.float32
        assert np.array_equal(encoder.encode(texts), rows)
        for text, row, text_words in zip(texts, rows, words, strict=True):
            assert np.array_equal(row, reference(text, 32, ngrams)), text
            assert text_words == frozenset(_TOKEN.findall(text.lower())), text


@pytest.mark.parametrize("ngrams", [1, 2, 3, 4])
def test_ngram_encoder_bodies_seen_before_match_the_plain_computation(ngrams: int) -> None:
    # A body (all but the last line) memoized whole, then met again under another last line:
    # an empty one, one word whose n-grams span back over short lines, none at all (no line
    # break), a body without words, one that ends in empty lines, lines of sentences.
    rng = np.random.default_rng(30 + ngrams)
    bodies = ["Go north.\n\nYou see a red key", "a\n\nb", "", "x\n", "...\n!", "one two\n\n",
              "You are in a hall. Exits lead north. a", "Exits lead north. You are in a hall."]  # fmt: skip
    lasts = ["", "7", "[12 turns left]", "go North", "!", "red key a", "a. b. . c", "Hall. Exits"]
    encoder = NgramEncoder(32, ngrams, bag_dim=16)
    for _ in range(40):
        texts = []
        for _ in range(int(rng.integers(1, 6))):
            last = lasts[int(rng.integers(len(lasts)))]
            body = bodies[int(rng.integers(len(bodies)))]
            texts.append(last if rng.integers(4) == 0 else f"{body}\n{last}")
        rows, bags, words = encoder.encode_with_bags(texts)
        for text, row, bag, text_words in zip(texts, rows, bags, words, strict=True):
            assert np.array_equal(row, reference(text, 32, ngrams)), text
            assert np.array_equal(bag, reference(text, 16, 1)), text
            assert text_words == frozenset(_TOKEN.findall(text.lower())), text


@pytest.mark.parametrize(
    ("dim", "ngrams", "named"),
    [(0, 2, "dim"), (-1, 2, "dim"), ("16", 2, "dim"), (True, 2, "dim"), (2**21, 2, "dim"),
     (16, 0, "ngrams"), (16, 1.5, "ngrams"), (16, 9, "ngrams")],
)  # fmt: skip
def test_ngram_encoder_refuses_a_bad_size_naming_it(dim, ngrams, named) -> None:
    with pytest.raises(ValueError, match=f"`{named}`"):
        NgramEncoder(dim, ngrams)


@pytest.mark.parametrize("texts", ["a str, not a list of them", [None], [b"bytes"], ["ok", 7]])
def test_ngram_encoder_refuses_texts_that_are_not_strs(texts) -> None:
    encoder = NgramEncoder(16, 2)
    with pytest.raises(TypeError, match="Expect"):
        encoder.encode(texts)
    assert encoder.encode(["ok", ""]).shape == (2, 16)  # and still encodes what it should


@pytest.mark.parametrize(
    "env_id",
    ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Medium-v0", "turnbudget/Crafting-Easy-v0",
     "turnbudget/Shop-Easy-v0", "turnbudget/Sokoban-Easy-v0"],
)  # fmt: skip
@pytest.mark.parametrize(("dim", "bag_dim"), [(64, 64), (32, 64), (16, 8)])
def test_one_pass_blocks_and_bags_match_the_plain_computation(env_id, dim, bag_dim) -> None:
    # The learner's batch hashes each observation's block and its memory's bag of words in
    # one pass over its lines (issue 26): each must be what the plain computation of the
    # whole text gives, along real episodes with the revealed budget's line, several texts
    # a batch, the memo warm across batches. (dim == bag_dim: the two share a word cache.)
    import turnbudget

    env = turnbudget.make(env_id, reveal="always", info="text")
    encoder = NgramEncoder(dim, 2, bag_dim=bag_dim)
    rng = np.random.default_rng(5)
    obs, info = env.reset(seed=11)
    texts = []
    for _ in range(90):
        texts.append(obs)
        if len(texts) == 3:
            rows, bags, words = encoder.encode_with_bags(texts)
            assert np.array_equal(rows, encoder.encode(texts))
            for text, row, bag, text_words in zip(texts, rows, bags, words, strict=True):
                assert np.array_equal(row, reference(text, dim, 2)), text
                assert np.array_equal(bag, reference(text, bag_dim, 1)), text
                assert text_words == frozenset(_TOKEN.findall(text.lower())), text
            texts = []
        commands = info["admissible_actions"] or ["look"]
        obs, _, terminated, truncated, info = env.step(commands[rng.integers(len(commands))])
        if terminated or truncated:
            obs, info = env.reset()


def test_encode_with_bags_needs_a_bag_dim() -> None:
    with pytest.raises(ValueError, match="bag_dim"):
        NgramEncoder(16, 2).encode_with_bags(["go north"])
    with pytest.raises(ValueError, match="`bag_dim`"):
        NgramEncoder(16, 2, bag_dim=0)
