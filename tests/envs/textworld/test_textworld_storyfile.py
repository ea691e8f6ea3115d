"""A malformed story file is a Python exception with a clear message, never the end of the process."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import gymnasium as gym
import pytest
from _support import SHIPPED_TEXTWORLD_GAMES

import turnbudget  # noqa: F401 - registers the ids
from turnbudget.envs.textworld import storyfile
from turnbudget.envs.textworld.env import MAX_GAME_JSON_BYTES
from turnbudget.envs.textworld.storyfile import (
    StoryFileError,
    check_story_file,
    probe_story_file,
    validate_story_file,
)

GAME = SHIPPED_TEXTWORLD_GAMES / "coin_collector-1ad1367648" / "0"


def _story(tmp_path: Path, name: str, data: bytes) -> Path:
    """``data`` as ``name.z8`` with the shipped game's .json beside it."""
    path = tmp_path / f"{name}.z8"
    path.write_bytes(data)
    shutil.copyfile(GAME.with_suffix(".json"), path.with_suffix(".json"))
    return path


def _with_checksum(data: bytearray) -> bytes:
    length = struct.unpack(">H", data[0x1A:0x1C])[0] * 8
    struct.pack_into(">H", data, 0x1C, sum(data[0x40:length]) % 0x10000)
    return bytes(data)


def _good() -> bytearray:
    return bytearray(GAME.with_suffix(".z8").read_bytes())


def _malformed(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Each malformed file, with the words its error must hold."""
    good = _good()
    code_zeroed = bytearray(good)
    code_zeroed[0x40:0x4000] = bytes(0x4000 - 0x40)  # sound header, checksum fixed: loops forever
    bad_pc = bytearray(good)
    struct.pack_into(">H", bad_pc, 0x06, 0xFFFF)  # starts outside the code: runtime error
    flipped = bytearray(good)
    flipped[5000] ^= 0xFF
    return {
        "truncated": (_story(tmp_path, "truncated", bytes(good[:20000])), "truncated"),
        "text": (_story(tmp_path, "text", b"This is a text file, renamed .z8.\n" * 20), "version"),
        "short text": (_story(tmp_path, "short", b"hello\n"), "too short"),
        "empty": (_story(tmp_path, "empty", b""), "too short"),
        "flipped byte": (_story(tmp_path, "flipped", bytes(flipped)), "checksum"),
        "bad start": (_story(tmp_path, "bad_pc", bytes(bad_pc)), "runtime error"),
        "endless loop": (_story(tmp_path, "loop", _with_checksum(code_zeroed)), "did not finish"),
    }


@pytest.mark.parametrize(
    "case",
    ["truncated", "text", "short text", "empty", "flipped byte", "bad start", "endless loop"],
)
def test_malformed_story_files_raise_through_the_full_stack(tmp_path, monkeypatch, case):
    path, words = _malformed(tmp_path)[case]
    if case == "endless loop":  # it never loads: a short probe timeout ends it sooner
        monkeypatch.setattr(storyfile, "PROBE_TIMEOUT", 3.0)
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    with pytest.raises(StoryFileError, match=words) as error:
        env.reset(seed=0)
    assert str(path) in str(error.value)
    env.close()
    monkeypatch.undo()  # every file that loads gets the default timeout (a busy machine)
    # The process and the package still work: a sound game loads and plays.
    good = _story(tmp_path, "good", bytes(_good()))
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=good)
    env.reset(seed=0)
    assert env.step("look")[-1]["valid_action"]
    env.close()


def test_the_interpreter_exiting_becomes_an_exception(tmp_path):
    """Without the header check, frotz prints 'Fatal error' and exits: the probe's child does."""
    path = _story(tmp_path, "truncated", bytes(_good()[:20000]))
    with pytest.raises(StoryFileError, match="Fatal error: Story file read error"):
        probe_story_file(path)


def test_sound_story_files_pass_once(tmp_path, monkeypatch):
    path = _story(tmp_path, "good", bytes(_good()))
    validate_story_file(path)
    check_story_file(path)
    calls = []
    monkeypatch.setattr(storyfile, "probe_story_file", calls.append)
    check_story_file(path)  # remembered: not probed again
    assert calls == []
    path.write_bytes(bytes(_good()[:20000]))  # the file changed: checked again
    with pytest.raises(StoryFileError, match="truncated"):
        check_story_file(path)


def test_glulx_headers_are_checked(tmp_path):
    path = tmp_path / "game.ulx"
    header = bytearray(b"Glul" + bytes(60))
    struct.pack_into(">I", header, 12, 4096)
    path.write_bytes(bytes(header))
    with pytest.raises(StoryFileError, match="truncated"):
        validate_story_file(path)
    path.write_bytes(b"Glul")
    with pytest.raises(StoryFileError, match="too short"):
        validate_story_file(path)


def _glulx_named_z8(tmp_path: Path) -> Path:
    """A Glulx header (sound magic and declared length) and junk, named .z8."""
    data = bytearray(b"Glul" + bytes(range(256)) * 4)
    struct.pack_into(">I", data, 12, len(data))
    return _story(tmp_path, "glulx", bytes(data))


def _in_child(body) -> tuple[str, str]:
    """Run ``body`` in a forked child: ``("raised", "Type: message")``, ``("returned", "")``,
    or ``("exited", status)`` when something ended the child's process."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            body()
            report = "returned|"
        except BaseException as e:
            report = f"raised|{type(e).__name__}: {e}"
        os.write(write_end, report.encode()[:4000])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    status = os.waitpid(pid, 0)[1]
    if not report:
        return "exited", str(os.waitstatus_to_exitcode(status))
    kind, _, detail = report.partition("|")
    return kind, detail


def test_a_glulx_file_named_z8_is_refused_and_the_process_survives(tmp_path):
    path = _glulx_named_z8(tmp_path)

    def play() -> None:
        env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
        env.reset(seed=0)

    kind, detail = _in_child(play)
    assert kind == "raised" and detail.startswith("StoryFileError"), (kind, detail)
    assert "Glulx" in detail and "version byte 1-8" in detail and str(path) in detail


@pytest.mark.parametrize("size", [600_000, 1_500_000_000])
def test_an_oversized_story_file_is_refused_before_it_is_read(tmp_path, size):
    path = _story(tmp_path, "padded", GAME.with_suffix(".z8").read_bytes())
    os.truncate(path, size)  # zero padding (sparse: no disk space used)
    with pytest.raises(StoryFileError, match="version-8 Z-machine story is at most 524288 bytes"):
        validate_story_file(path)
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    with pytest.raises(StoryFileError, match=f"is {size} bytes"):
        env.reset(seed=0)
    env.close()


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("metadata", ["{not json", '{"a": 1}', "[1, 2]"])
def test_a_game_json_that_is_not_a_textworld_game_is_a_clear_error(tmp_path, metadata):
    """A sound story file beside a .json that is JSON but not a TextWorld game raised a bare
    ``KeyError: 'KB'`` from inside TextWorld (a .json that is not JSON was a ValueError);
    TextWorld then closed the game that never loaded, which raised in its ``__del__``."""
    path = _story(tmp_path, "game", bytes(_good()))
    path.with_suffix(".json").write_text(metadata)
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    with pytest.raises(ValueError, match="Cannot load TextWorld game"):
        env.reset(seed=0)
    env.close()


def _game_json(**changes: object) -> str:
    import json

    return json.dumps({**json.loads(GAME.with_suffix(".json").read_text()), **changes})


def _infos(drop: str | None = None, name: object = None) -> str:
    """The game's .json without ``drop``'s infos entry, or with ``name`` for the coin's."""
    import json

    game = json.loads(GAME.with_suffix(".json").read_text())
    game["infos"] = [[key, info] for key, info in game["infos"] if key != drop]
    for key, info in game["infos"]:
        if key == "o_0" and name is not None:
            info["name"] = name
    return json.dumps(game)


@pytest.mark.parametrize(
    "metadata, says",
    [
        # (each loaded, then failed inside reset as an internal error)
        (lambda: _game_json(metadata=[1]), r"metadata is \[1\], not an object"),  # AttributeError
        (lambda: _game_json(metadata={"walkthrough": 5}), r"walkthrough is 5, not a list"),
        (lambda: _game_json(objective=[1]), r"objective is \[1\], not a string"),  # TypeError
        (lambda: _infos(drop="P"), r"infos have no entry for 'P' \(1 missing in all\)"),  # KeyError
        (lambda: _infos(drop="r_0"), r"infos have no entry for 'r_0'"),  # KeyError
        (lambda: _infos(name=5), r"infos give 'o_0' the name 5, not a string"),  # AttributeError
        (lambda: "[" * 100_000 + "]" * 100_000, r"RecursionError"),  # (raised as it was)
    ],
)
def test_a_game_json_of_the_wrong_shapes_is_a_clear_error(tmp_path, metadata, says):
    _refused_at_reset(tmp_path, metadata(), says)


def _edited(edit) -> str:
    """The game's .json with ``edit`` applied to it (a dict)."""
    import json

    game = json.loads(GAME.with_suffix(".json").read_text())
    edit(game)
    return json.dumps(game)


def _refused_at_reset(tmp_path, json_text: str, says: str) -> None:
    """A sound story beside ``json_text`` loads, and its first reset is a ValueError naming
    the game and saying ``says``."""
    path = _story(tmp_path, "game", bytes(_good()))
    path.with_suffix(".json").write_text(json_text)
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    with pytest.raises(ValueError, match=f"Cannot load TextWorld game .*{says}"):
        env.reset(seed=0)
    env.close()


def _first_action(quest: dict) -> dict:
    return quest["win_events"][0]["actions"][-1]


def _retype(quest: dict) -> None:
    _first_action(quest)["postconditions"][0]["arguments"][0]["type"] = "zz"


@pytest.mark.parametrize(
    "edit, says",
    [
        # (these two sent TextWorld's quest tracking round a loop at reset: minutes, then
        # the memory ran out and the process was killed)
        (_retype, r"quest 0's '.*' takes '.*' as a 'zz', but it is a"),
        (lambda q: _first_action(q)["postconditions"].pop(0), r"postconditions other than its"),
        # (these came out of reset as TextWorld's own exceptions)
        (lambda q: q.update(win_events=[], fail_events=[]), r"UnderspecifiedQuestError"),
        (lambda q: _first_action(q).update(name=7), r"quest 0 plays 7, which no rule"),
        (lambda q: q.update(repeatable="zz"), r"AssertionError"),
    ],
    ids=["a-type", "a-postcondition-gone", "no-event", "a-name-no-text", "a-flag-no-bool"],
)
def test_a_game_json_whose_quests_textworld_cannot_track_is_a_clear_error(tmp_path, edit, says):
    _refused_at_reset(tmp_path, _edited(lambda game: edit(game["quests"][0])), says)


def _places_the_player(fact: dict) -> bool:
    return fact["name"] == "at" and fact["arguments"][0]["name"] == "P"


@pytest.mark.parametrize(
    "keep, says",
    [
        (lambda fact: False, r"its \.json's world places the player nowhere"),
        (_places_the_player, r"its \.json's world does not allow its quest's first action"),
    ],
    ids=["no-facts", "only-the-player"],
)
def test_a_game_json_whose_world_cannot_play_its_quest_is_a_clear_error(tmp_path, keep, says):
    """A .json whose world facts were gone loaded: no command was admissible, every one the
    story played was judged invalid, and the oracle's plan stood still up to a win."""

    def only_kept(game: dict) -> None:
        game["world"] = [fact for fact in game["world"] if keep(fact)]

    _refused_at_reset(tmp_path, _edited(only_kept), says)


@pytest.mark.parametrize("change", ["gone", "a directory"])
def test_a_game_json_gone_since_the_env_was_made_is_named(tmp_path, change):
    """TextWorld then loads the story without its game (no TWInform7 layer), and the env
    failed with ``AttributeError: 'JerichoEnv' object has no attribute '_game'``."""
    path = _story(tmp_path, "game", bytes(_good()))
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    path.with_suffix(".json").unlink()
    if change == "a directory":
        path.with_suffix(".json").mkdir()
    with pytest.raises(FileNotFoundError, match=r"has no 'game\.json' next to it"):
        env.reset(seed=0)
    env.close()


def test_a_game_json_too_large_to_be_a_games_is_refused_before_it_is_read(tmp_path):
    """TextWorld reads the .json whole: a sparse 3 GB one was a MemoryError (or the machine's
    memory) at reset."""
    path = _story(tmp_path, "game", bytes(_good()))
    with path.with_suffix(".json").open("r+b") as f:
        f.truncate(3 * 2**30)  # (sparse: no disk used)
    with pytest.raises(ValueError, match=r"has a 'game\.json' of 3,221,225,472 bytes: expect"):
        gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    path.with_suffix(".json").write_bytes(GAME.with_suffix(".json").read_bytes())
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    with path.with_suffix(".json").open("r+b") as f:  # (grown since the env was made)
        f.truncate(MAX_GAME_JSON_BYTES + 1)
    with pytest.raises(ValueError, match=r"of 67,108,865 bytes: expect at most 67,108,864"):
        env.reset(seed=0)
    env.close()


def test_a_game_file_name_too_long_for_the_system_is_a_short_value_error(tmp_path):
    """It was a bare OSError quoting the whole name."""
    with pytest.raises(
        ValueError, match=r"Cannot use TextWorld game file .*: File name too long"
    ) as e:
        gym.make("turnbudget/TextWorldFile-v0", game_file=tmp_path / ("x" * 5000 + ".z8"))
    assert len(str(e.value)) < 700  # (a path is shown up to PATH_CHARS = 512)


@pytest.mark.parametrize("timeout", [float("inf"), 1e10])
def test_a_sound_story_passes_the_check_under_any_timeout(timeout):
    """The check's child arms a timer of its own: an infinite or huge timeout overflowed it,
    and the sound story was reported as one the interpreter cannot run."""
    probe_story_file(SHIPPED_TEXTWORLD_GAMES / "coin_collector-1ad1367648" / "0.z8", timeout)


def _shipped_games() -> list[Path]:
    return sorted(
        folder / "0.z8" for folder in SHIPPED_TEXTWORLD_GAMES.iterdir() if folder.is_dir()
    )


def test_a_story_beside_another_games_json_is_a_clear_error(tmp_path):
    """TextWorld loaded a story beside any game's .json, and tracked the .json's game while the
    story played its own: the oracle, the score and the win were another game's."""
    story, other = _shipped_games()[3], _shipped_games()[4]  # (two Cooking games)
    path = tmp_path / "game.z8"
    shutil.copyfile(story, path)
    shutil.copyfile(other.with_suffix(".json"), path.with_suffix(".json"))
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    with pytest.raises(
        ValueError, match=r"its \.json's names are another game's: the story knows no word"
    ):
        env.reset(seed=0)
    shutil.copyfile(story.with_suffix(".json"), path.with_suffix(".json"))
    env.reset(seed=0)  # (its own .json: it loads)
    env.close()


@pytest.mark.filterwarnings("ignore:Game .* is not fully supported")
def test_every_shipped_story_knows_its_own_json_and_no_other_games():
    """`_story_mismatch` over the shipped games (one of each family and setting), each story
    with each game's .json: none with its own, and every other but three. A larger
    CoinCollector world of one seed holds every room of a smaller one, so its story knows
    every word of the smaller's .json (a limit of the check, documented)."""
    jericho = pytest.importorskip("jericho")
    textworld = pytest.importorskip("textworld")
    from turnbudget.envs.textworld.env import _story_mismatch

    stories = _shipped_games()
    games = [textworld.Game.load(str(story.with_suffix(".json"))) for story in stories]
    passed = set()
    for story in stories:
        interpreter = jericho.FrotzEnv(str(story))
        dictionary = interpreter.get_dictionary()
        interpreter.close()
        for other, game in zip(stories, games, strict=True):
            if _story_mismatch(game, dictionary) is None:
                passed.add((story.parent.name, other.parent.name))
    assert passed == {(story.parent.name,) * 2 for story in stories} | {
        ("coin_collector-1ad1367648", "coin_collector-f885672c61"),
        ("coin_collector-2cdb009f85", "coin_collector-1ad1367648"),
        ("coin_collector-2cdb009f85", "coin_collector-f885672c61"),
    }


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_game_whose_names_inform_keeps_otherwise_loads(tmp_path):
    """The story's dictionary is checked on plain words only: Inform 7 keeps "café" in its
    own spelling, reads "lounge/bar" as two words and "(small)" as three, and a game TextWorld
    compiled with such names was refused as another game's."""
    pytest.importorskip("textworld")
    from textworld import GameMaker

    maker = GameMaker()
    cafe, bar = maker.new_room("Café"), maker.new_room("Lounge/Bar")
    maker.set_player(cafe)
    maker.connect(cafe.east, bar.west)
    for name, room in (("key", cafe), ("naïve robot", cafe), ("box (small)", bar)):
        room.add(maker.new(type="o", name=name))
    maker.set_quest_from_commands(["take key"])
    path = tmp_path / "cafe.z8"
    maker.compile(str(path))
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=path)
    env.reset(seed=0)
    assert env.step("take key")[1:3] == (1.0, True)
    env.close()
