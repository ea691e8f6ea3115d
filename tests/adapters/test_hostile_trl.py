"""Hostile rows at TRL's dataset door: `trl_dataset` refuses what no rollout could play
(an unknown id, a module to import, an id without a TurnBudget, rows that are not a
list) before a trainer starts. Marker ``llmrl``: needs ``datasets`` (the ``trl`` extra)."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.llmrl
pytest.importorskip("datasets")

from turnbudget.adapters.trl import trl_dataset  # noqa: E402

ENV = "turnbudget/Maze-Easy-v0"


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("turnbudget/NoSuchGame-v0", "Cannot make 'turnbudget/NoSuchGame-v0' for a row"),
        ("CartPole-v1", "has no TurnBudget"),
        ("hostile_dataset_module:Maze-Easy-v0", "never a module to import"),
    ],
)
def test_a_row_no_rollout_could_play_fails_when_the_dataset_is_built(env_id, message):
    rows = [{"env_id": ENV, "seed": 0, "T": 3}, {"env_id": env_id, "seed": 1, "T": 3}]
    with pytest.raises(ValueError, match=message):
        trl_dataset(rows)
    assert "hostile_dataset_module" not in sys.modules


@pytest.mark.parametrize("rows", [None, {"env_id": ENV, "seed": 0, "T": 3}, "rows", 3])
def test_rows_that_are_not_a_list_are_a_clear_error(rows):
    with pytest.raises(ValueError, match="Expect `rows` to be a list of rows"):
        trl_dataset(rows)


def test_a_seed_past_arrow_s_int64_is_a_clear_error():
    """A row's seed may be any 64-bit word, but a datasets.Dataset column is int64: it failed
    inside pyarrow with an OverflowError naming no row."""
    rows = [{"env_id": ENV, "seed": 3, "T": 3}, {"env_id": ENV, "seed": 2**63, "T": 3}]
    with pytest.raises(ValueError, match="at most 9,223,372,036,854,775,807"):
        trl_dataset(rows)
    assert len(trl_dataset([{"env_id": ENV, "seed": 2**63 - 1, "T": 3}])) == 1


def test_a_prompt_arrow_cannot_store_is_a_clear_error():
    # (a lone surrogate was Arrow's own UnicodeEncodeError, naming no argument)
    with pytest.raises(ValueError, match="Expect `prompt` to be text UTF-8 can carry"):
        trl_dataset([{"env_id": ENV, "seed": 0, "T": 3}], prompt="Play.\ud800")
