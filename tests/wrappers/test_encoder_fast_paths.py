"""The encoders' cheaper paths (issue 26) against the plain computations they replace."""

from __future__ import annotations

import re

import numpy as np
import pytest

from turnbudget.wrappers.history_features import FeatureEncoder
from turnbudget.wrappers.text_features import hashed_ngrams, tokens

_TOKEN = re.compile(r"[a-z0-9]+")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Go NORTH, then east-2!",
        "You are in the Misty Solar.\n\nExits lead north and east.\n[25 turns left]",
        "tabs\tand\x0bvertical\x1cfile\x1fseparators\x85next line",
        "caf\u00e9 na\u00efve \u212aelvin \u0130stanbul \u00df \u0663\u0664 x\u00b2",
        "a lone surrogate \ud800 splits here\udfff too",
        "under_score and-dash.dot/slash",
        "\u2003em space\u3000ideographic",
    ],
)
def test_tokens_are_the_regex_words_of_the_lowered_text(text):
    assert tokens(text) == _TOKEN.findall(text.lower())


def test_the_memory_equals_the_plain_similarities_past_the_first_allocation():
    """150 turns (the seen vectors grow past their first 64 rows): the memory features are
    the matmul of the seen unit vectors with this turn's, as they were computed before."""
    history = 3
    encoder = FeatureEncoder(4, history, 8, budget=False)
    encoder.reset("find the exit")
    rng = np.random.default_rng(5)
    rooms = [f"Room {i} with a door.\nExits lead {d}." for i, d in enumerate("nsewnsew")]
    seen: list[np.ndarray] = []
    start = encoder.size() - (history + 1 + 2)  # the memory, then the goal share and turns
    for turn in range(150):
        text = rooms[int(rng.integers(len(rooms)))] + f"\n[{150 - turn} turns left]"
        row = encoder.encode(text, ["go north", "look"])
        bag = hashed_ngrams(text, encoder.memory_dim, 1).astype(np.float64)
        now = bag / max(np.sqrt(bag @ bag), 1e-8)
        if seen:
            similarity = (np.array(seen) @ now).tolist()
            recent = min(len(seen), history)
            memory = similarity[: -recent - 1 : -1] + [0.0] * (history - recent)
            memory.append(max(similarity))
        else:
            memory = [0.0] * (history + 1)
        np.testing.assert_array_equal(row[start : start + history + 1], np.float32(memory))
        seen.append(now)
        encoder.record("go north")
