"""A cache root that is a file, or an entry that is a directory, fails at once with a clear error."""

from __future__ import annotations

from pathlib import Path

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


@pytest.mark.parametrize("fails", ["the lock", "the generation folder"])
def test_a_read_only_cache_folder_is_a_value_error_naming_it(tmp_path, fails, monkeypatch):
    """A game missing from a read-only cache folder (a shared, read-only copy of the games)
    was a bare PermissionError naming its lock file, or a generation folder, at reset; it is
    a ValueError naming the folder and the game, as a folder that cannot be made is."""
    import tempfile

    import filelock

    env = CoinCollector(level=5, cache_dir=tmp_path)
    env.cache.folder.mkdir(parents=True)

    def read_only(path, *args, **kwargs):
        raise OSError(30, "Read-only file system", str(path))

    class ReadOnlyLock:  # (filelock opens its file when the lock is taken)
        def __init__(self, path: str) -> None:
            self.path = path

        def acquire(self) -> None:
            read_only(self.path)

        def __enter__(self) -> None:
            self.acquire()

        def __exit__(self, *exc: object) -> None:
            return None

    if fails == "the lock":
        monkeypatch.setattr(filelock, "FileLock", ReadOnlyLock)
    else:
        monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: read_only(env.cache.folder))
    generated: list[int] = []
    monkeypatch.setattr(env, "generate", lambda game_id, path: generated.append(game_id))
    message = (
        f"Cannot write game 3 into the game cache folder '{env.cache.folder}': "
        "Read-only file system"
    )
    with pytest.raises(ValueError) as caught:
        env.reset(seed=3)
    assert str(caught.value) == message and not generated


def test_a_relative_cache_dir_means_the_working_directory_the_env_was_made_in(
    shipped_cache, tmp_path, monkeypatch
):
    """A relative cache_dir (or game_file) was looked up again in whatever the working
    directory was later: a copy of the env made after a chdir (a worker, a pickle) failed
    with 'TextWorld game file not found', and a reset of another game generated it anew
    under the new directory."""
    import copy
    import shutil

    shutil.copytree(shipped_cache, tmp_path / "games")
    monkeypatch.chdir(tmp_path)
    env = gym.make("turnbudget/CoinCollector-Easy-v0", cache_dir="games")
    played = gym.make(
        "turnbudget/TextWorldFile-v0",
        game_file=next(Path("games").glob("coin_collector-*")) / "0.z8",
    )
    for game in (env, played):
        game.reset(seed=0)
        game.step("look")
    monkeypatch.chdir(tmp_path.parent)
    for game in (env, played):
        twin = copy.deepcopy(game.unwrapped)  # (replays the episode: loads the game again)
        assert twin.walkthrough() == game.unwrapped.walkthrough()
        twin.close()
        game.close()
    assert env.unwrapped.cache.root == tmp_path / "games"
