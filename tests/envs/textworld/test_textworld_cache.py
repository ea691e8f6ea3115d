"""The game cache, generation and `turnbudget textworld pregen`.

These are the only TextWorld tests that run TextWorld's generator (a few
seconds per game); the rest play the shipped games.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from _support import HANG_GUARD, make_not_regular, run_child

import turnbudget  # noqa: F401 - registers the ids
from turnbudget.cli import main
from turnbudget.envs.textworld import CoinCollector, GameCache
from turnbudget.envs.textworld.cache import CACHE_ENV_VAR, default_cache_dir, settings_key

Game = pytest.importorskip("textworld").Game
DATA = Path(__file__).resolve().parents[2] / "data" / "textworld"
EASY = settings_key("coin_collector", {"level": 5})


def test_cache_dir_comes_from_kwarg_then_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "from-env"))
    assert default_cache_dir() == tmp_path / "from-env"
    assert CoinCollector().cache.root == tmp_path / "from-env"
    assert CoinCollector(cache_dir=tmp_path / "kw").cache.root == tmp_path / "kw"
    monkeypatch.delenv(CACHE_ENV_VAR)
    assert default_cache_dir().parts[-2:] == ("turnbudget", "textworld")


def test_cache_key_depends_on_family_and_settings():
    keys = {
        settings_key("coin_collector", {"level": 5}),
        settings_key("coin_collector", {"level": 6}),
        settings_key("treasure_hunter", {"level": 5}),
    }
    assert len(keys) == 3
    assert settings_key("cooking", {"a": 1, "b": 2}) == settings_key("cooking", {"b": 2, "a": 1})


def test_shipped_entries_are_valid(shipped_cache):
    for folder in shipped_cache.iterdir():
        settings = json.loads((folder / "settings.json").read_text())
        cache = GameCache(settings["family"], settings["settings"], root=shipped_cache)
        assert cache.folder == folder, "settings.json must hash to its folder name"
        assert cache.is_valid(0)


@pytest.mark.parametrize("damage", ["truncate_game", "garble_json", "drop_marker", "drop_game"])
def test_a_corrupt_or_partial_entry_is_detected_and_regenerated(tmp_path, damage):
    shutil.copytree(DATA / EASY, tmp_path / EASY)
    game, meta, marker = (tmp_path / EASY / f"0.{ext}" for ext in ("z8", "json", "ok"))
    original = Game.load(str(meta))
    if damage == "truncate_game":
        game.write_bytes(game.read_bytes()[:1000])
    elif damage == "garble_json":
        meta.write_text("{not json")
    elif damage == "drop_marker":
        marker.unlink()
    else:
        game.unlink()
    env = CoinCollector(level=5, cache_dir=tmp_path)
    assert not env.cache.is_valid(0)
    _, info = env.reset(seed=0)  # regenerates game 0 with TextWorld
    assert env.cache.is_valid(0)
    assert Game.load(str(meta)) == original, "regeneration reproduces the same game"
    for command in env.walkthrough():
        *_, info = env.step(command)
    assert info["won"]
    assert sorted(p.name for p in (tmp_path / EASY).iterdir()) == [
        "0.json", "0.lock", "0.ok", "0.z8", "settings.json"
    ]  # fmt: skip


def test_what_a_killed_generation_left_is_removed_when_the_entry_is_made(tmp_path):
    """A worker killed mid-generation (Ctrl-C, a timeout) skips the `finally` that removes its
    temporary folder: each such folder stayed in the cache for good."""
    shutil.copytree(DATA / EASY, tmp_path / EASY)
    (tmp_path / EASY / "0.ok").unlink()  # (game 0 to be made again)
    for name in (".0-odtt_1jx", ".0-44lneo8u"):  # (as `_write` names its temporary folders)
        (tmp_path / EASY / name).mkdir()
        (tmp_path / EASY / name / "0.z8").write_bytes(b"half a game")
    (tmp_path / EASY / ".1-kept0000").mkdir()  # (game 1's: not this entry's to remove)
    env = CoinCollector(level=5, cache_dir=tmp_path)
    env.reset(seed=0)
    env.close()
    assert sorted(p.name for p in (tmp_path / EASY).iterdir()) == [
        ".1-kept0000", "0.json", "0.lock", "0.ok", "0.z8", "settings.json"
    ]  # fmt: skip


_IS_VALID_CHILD = """
import sys
from turnbudget.envs.textworld import GameCache
print(GameCache("coin_collector", {"level": 5}, root=sys.argv[1]).is_valid(0))
"""


@pytest.mark.parametrize("ext", ["z8", "json", "ok"])
@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
def test_an_entry_that_is_not_a_regular_file_is_invalid_and_regenerated(tmp_path, ext, special):
    """Checking an entry hashed its files: a FIFO there (a cache shared by several users)
    blocked every reset and ``pregen`` for ever, and a link to /dev/zero was hashed for ever.
    (A child process: a regression hangs it, which `HANG_GUARD` reports.)"""
    shutil.copytree(DATA / EASY, tmp_path / EASY)
    entry = tmp_path / EASY / f"0.{ext}"
    entry.unlink()
    make_not_regular(entry, special)
    done = run_child(_IS_VALID_CHILD, str(tmp_path))
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr[-2000:]
    if (ext, special) == ("json", "fifo"):  # (one regeneration: a few seconds of TextWorld)
        env = CoinCollector(level=5, cache_dir=tmp_path)
        env.reset(seed=0)
        assert env.cache.is_valid(0) and entry.is_file()


@pytest.mark.slow  # (~10 s: two processes generate one TextWorld game)
@pytest.mark.timeout(300, method="thread")
def test_two_processes_generating_the_same_game_end_with_one_valid_game(tmp_path):
    script = (
        "import sys, json; from turnbudget.envs.textworld import TreasureHunter;"
        "env = TreasureHunter(level=3, cache_dir=sys.argv[1]);"
        "path = env.pregenerate(7);"
        "print(json.dumps([str(path), env.cache.is_valid(7)]))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [json.loads(p.communicate(timeout=HANG_GUARD)[0]) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outputs[0] == outputs[1] and outputs[0][1] is True
    (folder,) = tmp_path.iterdir()
    assert sorted(p.name for p in folder.iterdir()) == [
        "7.json",
        "7.lock",
        "7.ok",
        "7.z8",
        "settings.json",
    ]  # fmt: skip  (no temporary folders left behind)
    # The game is the one a fresh, sequential generation makes: seeds mean games.
    fresh = tmp_path.parent / "fresh"
    env = gym.make("turnbudget/TreasureHunter-Easy-v0", level=3, cache_dir=fresh)
    env.reset(seed=7)
    assert Game.load(str(fresh / folder.name / "7.json")) == Game.load(str(folder / "7.json"))
    assert env.unwrapped.walkthrough()


def test_pregen_fills_the_cache_and_reports(tmp_path, capsys):
    shutil.copytree(DATA / EASY, tmp_path / EASY)
    rc = main(
        ["textworld", "pregen", "turnbudget/CoinCollector-Easy-v0", "--seeds", "0",
         "--cache-dir", str(tmp_path), "--json", "--no-progress"]
    )  # fmt: skip
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {
        "env_id": "turnbudget/CoinCollector-Easy-v0",
        "games": 1,
        "max_walkthrough": 5,
        "walkthrough_lengths": [5],
    }


@pytest.mark.slow
def test_pregen_generates_with_a_progress_bar(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "turnbudget.cli", "textworld", "pregen",
         "turnbudget/TreasureHunter-Easy-v0", "--seeds", "1-2", "--cache-dir", str(tmp_path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "2 games ready" in out.stdout
    assert "pregen" in out.stderr and "100%" in out.stderr
    assert len(list(tmp_path.glob("*/*.ok"))) == 2


def test_pregen_rejects_unknown_ids_and_bad_seeds(tmp_path, capsys):
    """Each is exit status 2 and one line (an unknown id and --workers 0 were status 1 with
    no prefix, a file for --cache-dir a traceback, and a trillion seeds ran out of memory)."""
    pregen = ["textworld", "pregen", "--cache-dir", str(tmp_path)]
    (tmp_path / "file").write_text("")
    for argv, says in [
        (["turnbudget/Maze-Easy-v0"], "Unknown generated TextWorld id"),
        (["--workers", "0"], "Expect --workers to be a positive int, got 0"),
        (["--cache-dir", str(tmp_path / "file")], "Expect --cache-dir to be a directory"),
        (["--seeds", "5-2"], "Expect a non-empty range of non-negative seeds"),
        (["--seeds", "0-1000000000000"], "Expect at most 1,000,000 seeds from 0 to 4,294,967,295"),
    ]:
        base = pregen[:2] if argv[0] == "--cache-dir" else pregen  # (given twice: refused)
        try:
            code = main([*base, *argv])
        except SystemExit as exit_:  # (argparse's own refusals)
            code = exit_.code
        err = capsys.readouterr().err
        assert code == 2 and says in err and "Traceback" not in err, err


@pytest.mark.slow
@pytest.mark.parametrize(
    "env_id",
    [
        f"turnbudget/{family}-{difficulty}-v0"
        for family in ("CoinCollector", "TreasureHunter", "Cooking")
        for difficulty in ("Easy", "Medium", "Hard")
    ]
    + ["turnbudget/TextWorldCustom-v0"],
)
def test_oracle_wins_freshly_generated_games_within_default_budget(env_id, tmp_path):
    env = gym.make(env_id, cache_dir=tmp_path)
    for seed in (1, 2, 3):
        _, info = env.reset(seed=seed)
        game = env.unwrapped
        while not (info.get("won") or info.get("lost")):
            _, _, terminated, truncated, info = env.step(game.optimal_actions()[0])
            if terminated or truncated:
                break
        assert info["won"] and not truncated, (env_id, seed)
        assert info["turns_used"] <= info["turn_budget"] / 2


def test_env_var_is_honoured_by_gym_make(tmp_path, monkeypatch):
    shutil.copytree(DATA / EASY, tmp_path / EASY)
    monkeypatch.setenv(CACHE_ENV_VAR, os.fspath(tmp_path))
    env = gym.make("turnbudget/CoinCollector-Easy-v0")
    env.reset(seed=0)
    assert env.unwrapped.cache.folder == tmp_path / EASY


# What TextWorld 1.7 raised for TextWorldCustom(world_size=100, nb_objects=150) game 0 (after
# five minutes of generating it): a game too big for a .z8 story file.
TOO_BIG = """
-= i6 =-
FAIL: 1
Inform 6.33N for Linux (30th August 2015)
File "<constructing output>"; Line 0\t# Error:  This program has overflowed the maximum \
readable-memory size of the Z-machine format. See the memory map below: the start of the area \
marked "above readable memory" must be brought down to $FFF s.
> \nFile "<constructing output>"; Line 0\t# Fatal error: The story file exceeds version-8 \
limit (512K) by 54168 bytes
========
*** Usually this means a compilation error.
*** Maybe the game is too big for a .z8 file.
*** See /tmp/cache/custom-7686c8bcc0/.0-sstnx50m/game.ni for more information.
"""


@pytest.fixture
def too_big(monkeypatch) -> list[object]:
    """Every game compiles too big for its story file; the compiles tried."""
    import textworld.generator
    from textworld.generator.inform7 import CouldNotCompileGameError

    tried: list[object] = []

    def compile_game(game, options):
        tried.append(game)
        raise CouldNotCompileGameError(TOO_BIG)

    monkeypatch.setattr(textworld.generator, "compile_game", compile_game)
    return tried


def test_a_game_too_big_for_its_story_file_is_one_line_naming_the_game(tmp_path, too_big):
    """TextWorld's CouldNotCompileGameError came out of reset whole: 15 lines of compiler
    output naming a generation folder already removed."""
    from turnbudget.envs.textworld import GenerationError

    env = gym.make("turnbudget/CoinCollector-Easy-v0", cache_dir=tmp_path)
    with pytest.raises(GenerationError) as caught:
        env.reset(seed=1)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert message.startswith("TextWorld could not compile coin_collector game 1 with {'level': 5}")
    assert "The story file exceeds version-8 limit (512K) by 54168 bytes" in message
    assert len(too_big) == 1  # (a game too big is not tried again from other seeds)
    assert not list(env.unwrapped.cache.folder.glob(".1-*"))  # no generation folder left
    assert isinstance(caught.value, RuntimeError)  # (what it was, and what generation raised)


def test_pregen_names_each_game_it_could_not_make_and_goes_on(tmp_path, capsys, too_big):
    """A game TextWorld could not compile was a traceback that ended pregen at that game."""
    shutil.copytree(DATA / EASY, tmp_path / EASY)  # (game 0 is ready; 1 and 2 fail)
    argv = ["textworld", "pregen", "turnbudget/CoinCollector-Easy-v0", "--seeds", "0-2",
            "--cache-dir", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "turnbudget/CoinCollector-Easy-v0: 1 games ready, longest walkthrough 5\n"
    lines = err.splitlines()
    assert len(lines) == 2 and "Traceback" not in err, err
    for seed, line in zip((1, 2), lines, strict=True):
        assert line.startswith(
            f"turnbudget textworld: error: turnbudget/CoinCollector-Easy-v0 game {seed}: "
            f"TextWorld could not compile coin_collector game {seed} "
        ), line
        assert line.endswith("The story file exceeds version-8 limit (512K) by 54168 bytes")
    assert len(too_big) == 2


@pytest.mark.parametrize("marker", ["[" * 100_000, "[" * 3000, '"' + "0" * 10_000 + '"'])
def test_a_marker_of_any_text_is_an_invalid_entry(tmp_path, marker):
    """A marker nested past the interpreter was a RecursionError out of every reset of the
    game and out of pregen (a garbled marker is regenerated, as a garbled .json is)."""
    shutil.copytree(DATA / EASY, tmp_path / EASY)
    (tmp_path / EASY / "0.ok").write_text(marker)
    assert GameCache("coin_collector", {"level": 5}, root=tmp_path).is_valid(0) is False


@pytest.mark.slow  # (TextWorld generates a Hard-sized cooking game: ~6 s of CPU)
def test_a_generator_that_fails_on_a_seed_is_retried_from_the_next_seed(tmp_path):
    """TextWorld's cooking generator draws from an empty list for some seeds of these
    settings: game 0 was NumPy's "ValueError: high <= 0" out of reset."""
    from turnbudget.envs.textworld import Cooking

    env = Cooking(recipe=3, take=2, go=9, cut=True, split="test", cache_dir=tmp_path)
    observation, info = env.reset(seed=0)
    assert "cookbook" in observation and not info["won"]
    assert env.distance_to_goal() > 0 and env.optimal_actions()


def test_a_generator_that_fails_on_every_seed_is_a_generation_error_naming_why(
    tmp_path, monkeypatch
):
    from turnbudget.envs.textworld import Cooking, GenerationError
    from turnbudget.envs.textworld.generated import MAX_GENERATION_ATTEMPTS

    tried: list[int] = []

    def make(settings, options):  # (as TextWorld's cooking generator fails at games 0 and 1)
        tried.append(options.seeds["map"])  # (TextWorld derives one seed per part)
        raise ValueError("high <= 0")

    monkeypatch.setattr("textworld.challenges.tw_cooking.cooking.make", make)
    env = Cooking(cache_dir=tmp_path)
    with pytest.raises(GenerationError) as caught:
        env.reset(seed=0)
    assert len(set(tried)) == MAX_GENERATION_ATTEMPTS
    message = str(caught.value)
    assert message.startswith("TextWorld could not generate cooking game 0 with {")
    assert message.endswith("attempts (ValueError: 'high <= 0')"), message
