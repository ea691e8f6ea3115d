"""A cache root that is a file, or an entry that is a directory, fails at once with a clear error."""

from __future__ import annotations

import gymnasium as gym
import pytest

from turnbudget.envs.textworld import CoinCollector


def test_a_cache_root_that_is_a_file_fails_at_construction(tmp_path):
    root = tmp_path / "cache"
    root.write_text("not a folder")
    with pytest.raises(ValueError, match="is a file"):
        CoinCollector(level=5, cache_dir=root)
    with pytest.raises(ValueError, match="is a file"):
        CoinCollector(level=5, cache_dir=root / "below" / "it")
    with pytest.raises(ValueError, match="is a file"):
        gym.make("turnbudget/CoinCollector-Easy-v0", cache_dir=root)


@pytest.mark.parametrize("entry", ["0.z8", "0.json", "0.ok", "0.lock"])
def test_a_cache_entry_that_is_a_directory_fails_before_generating(tmp_path, entry, monkeypatch):
    env = CoinCollector(level=5, cache_dir=tmp_path)
    (env.cache.folder / entry).mkdir(parents=True)
    generated: list[int] = []
    monkeypatch.setattr(env, "generate", lambda game_id, path: generated.append(game_id))
    with pytest.raises(ValueError, match="is a directory"):
        env.reset(seed=0)
    assert not generated  # refused before a game was generated (1-7 s), not at the rename
    assert not any(env.cache.folder.glob(".0-*"))  # no generation folder was left behind
