"""Hostile story files cannot hang or end the calling process: the interpreter runs apart.

The looping story is a real Z-machine file, assembled below: it plays along with
everything TextWorld sends while loading and resetting, then loops forever on
the command ``inventory``. No limit, however generous, is ever enough for it,
so the tests hold whatever the machine's load.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
import os
import shutil
import struct
import threading
from pathlib import Path

import gymnasium as gym
import pytest
from _support import SHIPPED_TEXTWORLD_GAMES, child_pids

import turnbudget  # noqa: F401 - registers the ids
from turnbudget.envs.deadline import StepTimeout, step_deadline
from turnbudget.envs.textworld import interpreter
from turnbudget.envs.textworld.interpreter import Interpreter, InterpreterError
from turnbudget.envs.textworld.storyfile import StoryFileError
from turnbudget.registration import register_game

GAME = SHIPPED_TEXTWORLD_GAMES / "coin_collector-1ad1367648" / "0"
LOOPING_ID = "turnbudget/TestLoopingStory-v0"


def _game_words() -> list[str]:
    """The words of the names of GAME's things and rooms (its story's parser knows them)."""
    infos = json.loads(GAME.with_suffix(".json").read_text())["infos"]
    return sorted(
        {word for _, info in infos if info.get("name") for word in info["name"].lower().split()}
    )


def _dictionary_entry(word: str) -> bytes:
    """``word`` as a version 8 dictionary entry: 9 Z-characters (a-z one each, ``-`` two),
    three to a 16-bit word, the last word's top bit set; then one byte of data."""
    zchars = []
    for ch in word:
        zchars += [ord(ch) - ord("a") + 6] if "a" <= ch <= "z" else [5, 7 + _A2.index(ch)]
    zchars = (zchars + [5] * 9)[:9]
    packed = [(a << 10) | (b << 5) | c for a, b, c in zip(*[iter(zchars)] * 3, strict=True)]
    packed[-1] |= 0x8000
    return struct.pack(">3H", *packed) + b"\0"


_A2 = "\n0123456789.,!?_#'\"/\\-:()"


def looping_story(trigger: str = "i") -> bytes:
    """A Z-machine v8 story that answers "ok" to every command, and loops forever on one
    that starts with ``trigger``.

    Memory: the 64-byte header; an object table (63 default property words, one
    object with an empty name); 240 globals; a text buffer; a dictionary of GAME's
    words (static memory: the env refuses a story that does not know the words of its
    .json); then the code (high memory).
    """
    entries = sorted(_dictionary_entry(word) for word in _game_words())
    objects = 0x40
    properties = objects + 126 + 14
    globals_ = properties + 2
    buffer = globals_ + 480
    dictionary = buffer + 202
    code = (dictionary + 4 + 7 * len(entries) + 7) & ~7
    memory = bytearray(code)
    struct.pack_into(">H", memory, objects + 126 + 12, properties)
    memory[buffer] = 200  # the buffer's capacity
    # (no separators; entries of 7 bytes)
    memory[dictionary : dictionary + 4] = bytes([0, 7]) + struct.pack(">H", len(entries))
    memory[dictionary + 4 : dictionary + 4 + 7 * len(entries)] = b"".join(entries)
    key = 0x10  # global 0: the first character typed
    loop = bytearray()
    loop += b"\xe2\x17" + struct.pack(">H", buffer) + b"\x01\x00"  # storeb buffer 1 0 (no preload)
    loop += b"\xe4\x1f" + struct.pack(">H", buffer) + bytes([0, key])  # aread buffer 0 -> key
    loop += b"\xd0\x1f" + struct.pack(">H", buffer) + bytes([2, key])  # loadb buffer 2 -> key
    branch = len(loop)
    loop += bytes([0x41, key, ord(trigger), 0])  # je key trigger ?hang
    loop += b"\xe5\x7fo\xe5\x7fk\xbb"  # print_char 'o'; print_char 'k'; new_line
    back = len(loop)
    loop += bytes([0x8C, 0, 0])  # jump to the start of the loop
    hang = len(loop)
    loop += b"\x8c\xff\xff"  # hang: jump hang (forever)
    loop[branch + 3] = 0xC0 | (hang - (branch + 4) + 2)  # branch if true, short offset
    struct.pack_into(">h", loop, back + 1, -(back + 3) + 2)
    data = memory + loop
    data += bytes(-len(data) % 8)
    data[0] = 8  # version
    for offset, value in [(0x04, code), (0x06, code), (0x08, dictionary), (0x0A, objects),
                          (0x0C, globals_), (0x0E, dictionary), (0x1A, len(data) // 8)]:  # fmt: skip
        struct.pack_into(">H", data, offset, value)
    data[0x12:0x18] = b"260101"  # serial number
    struct.pack_into(">H", data, 0x1C, sum(data[0x40:]) % 0x10000)  # checksum
    return bytes(data)


def _story(tmp_path: Path, name: str, data: bytes) -> Path:
    """``data`` as ``name.z8`` with the shipped game's .json beside it."""
    path = tmp_path / f"{name}.z8"
    path.write_bytes(data)
    shutil.copyfile(GAME.with_suffix(".json"), path.with_suffix(".json"))
    return path


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _ended(pid: int) -> bool:
    """Gone, or a zombie (ended, waiting for whoever adopted it to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.fixture
def looping(tmp_path):
    return _story(tmp_path, "looping", looping_story())


def test_a_story_whose_dictionary_header_lies_is_a_story_file_error(tmp_path):
    """A header claiming 32,767 dictionary entries ended frotz when the env read the story's
    dictionary (to check it against the .json): an InterpreterError, where a story that cannot
    be loaded is a StoryFileError (a ValueError)."""
    data = bytearray(looping_story())
    dictionary = struct.unpack(">H", data[0x08:0x0A])[0]
    struct.pack_into(">H", data, dictionary + 2, 0x7FFF)
    struct.pack_into(">H", data, 0x1C, sum(data[0x40:]) % 0x10000)  # (its checksum again)
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=_story(tmp_path, "lying", bytes(data)))
    with pytest.raises(StoryFileError, match="Cannot load TextWorld game"):
        env.reset(seed=0)
    env.close()


def test_a_story_that_loops_later_is_stopped_and_the_env_recovers(looping, monkeypatch):
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=looping)
    env.reset(seed=0)
    assert env.step("look")[0] == "ok"  # a sound game until the trigger
    game = env.unwrapped
    pid = game._interpreter.pid
    with step_deadline(0.2), pytest.raises(StepTimeout, match=r"timeout of 0\.2s.*inventory"):
        env.step("inventory")
    assert _gone(pid)  # killed and reaped, not left spinning
    with pytest.raises(InterpreterError, match="reset the env"):
        env.step("look")
    env.reset(seed=0)  # a new interpreter
    assert env.step("look")[0] == "ok"
    # Without a deadline the interpreter's own limit applies (set low only now: the story
    # never answers, so any limit is exceeded whatever the load).
    monkeypatch.setattr(interpreter, "STEP_TIMEOUT", 0.2)
    with pytest.raises(StepTimeout, match="STEP_TIMEOUT"):
        env.step("inventory")
    env.close()


class _Inventory:
    """Asks for its inventory every turn: the looping story's trigger."""

    name = "inventory"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: str, info: object) -> str:
        return "inventory"


@pytest.fixture
def looping_id(looping):
    register_game(LOOPING_ID.split("/")[1], "turnbudget.envs.textworld.env:TextWorldEnv",
                  turn_budget=5, game_file=os.fspath(looping))  # fmt: skip
    # One reset first (imports TextWorld, checks the story file), so the episode's reset is
    # quick and its timeout normally falls in the loop: on a slow day it may fall in the
    # reset instead, which is a timeout too.
    env = gym.make(LOOPING_ID)
    env.reset(seed=0)
    env.close()
    yield LOOPING_ID
    del gym.registry[LOOPING_ID]


def _run(backend: str, **options) -> str:
    """Play the looping story's one episode on ``backend``; it must fail with kind timeout
    (the env, or the worker holding it, replaced). Returns the failure's error."""
    from turnbudget.eval.run.backends import make_backend
    from turnbudget.eval.run.driver import EpisodeFailure
    from turnbudget.eval.run.plan import make_config, plan_episodes

    agent = _Inventory()
    config = make_config(LOOPING_ID, agent, ks=[1], ts=[5], n=1, tasks=1, mode="auto",
                         reveal=None, errors=None, seed=0, label=None, record_steps=True)  # fmt: skip
    with make_backend(backend, **options).start(agent, config, serialize=False) as runner:
        (outcome,) = [o for chunk in runner.run(plan_episodes(config)) for o in chunk]
    assert isinstance(outcome, EpisodeFailure) and outcome.kind == "timeout", outcome
    return outcome.error


@pytest.mark.parametrize("backend", ["local", "pool"])
def test_timeout_stops_a_looping_story_on_every_backend(looping_id, backend):
    assert "timeout of 2s" in _run(backend, timeout=2.0)


def test_timeout_stops_a_looping_story_without_sigalrm(looping_id):
    """Off the main thread the local backend cannot use SIGALRM; the step deadline still
    stops the interpreter."""
    errors = []
    worker = threading.Thread(target=lambda: errors.append(_run("local", timeout=2.0)))
    worker.start()
    worker.join()
    assert errors[0].startswith("StepTimeout: ran past the timeout of 2s")


def test_without_a_timeout_the_step_limit_stops_a_looping_story(looping_id, monkeypatch):
    monkeypatch.setattr(interpreter, "STEP_TIMEOUT", 2.0)  # whatever fails here is a timeout
    assert _run("local").startswith("StepTimeout")


def test_an_interpreter_that_exits_ends_only_its_own_process(tmp_path):
    """Past every check, frotz calling exit() on a story ends the interpreter's process."""
    path = _story(tmp_path, "truncated", GAME.with_suffix(".z8").read_bytes()[:20000])
    game = Interpreter()
    with pytest.raises(StoryFileError, match="Fatal error: Story file read error"):
        game.load(os.fspath(path))
    assert not game.alive and _gone(game.pid)
    game = Interpreter()  # and the next one works
    game.load(os.fspath(_story(tmp_path, "looping", looping_story())))
    assert "ok" in game.step("look")[0]
    game.terminate()
    assert _gone(game.pid)


# -- no interpreter outlives its env ----------------------------------------------------------
# The collector is off while each test runs (`no_collector`): an interpreter left for garbage
# collection to end would then stay, so these check closing, not the collector's timing.

EASY_ID = "turnbudget/CoinCollector-Easy-v0"


@pytest.fixture
def no_collector():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def test_a_copy_has_an_interpreter_of_its_own_that_ends_with_it(no_collector):
    before = child_pids()
    env = gym.make(EASY_ID)
    env.reset(seed=0)
    (own,) = child_pids() - before
    twin = copy.deepcopy(env)
    (twins,) = child_pids() - before - {own}
    command = env.unwrapped.optimal_actions()[0]
    assert twin.step(command)[0] == env.step(command)[0]  # the same game, played apart
    twin.close()
    assert child_pids() - before == {own}
    env.step("look")  # the original's interpreter still answers
    env.close()
    assert child_pids() - before == set()
    del twin, env  # (closed twice: nothing left to end)
    assert child_pids() - before == set()


@pytest.mark.parametrize(
    "env_id",
    ["turnbudget/Cooking-Medium-v0", "turnbudget/TreasureHunter-Hard-v0", EASY_ID],
)
def test_a_copy_mid_episode_plays_on_as_the_episode_replayed_does(env_id):
    """A copy moves the interpreter's state and copies TextWorld's tracking, where unpickling
    replays the episode (about 12 ms a command on Cooking): every command played on both
    gives the same observation, reward, ending, info, distance and optimal commands, and
    the original plays on as if no copy had been made."""
    import pickle
    import random

    rng = random.Random(0)
    env = gym.make(env_id)
    _, info = env.reset(seed=0)
    game = env.unwrapped
    for turn in range(6):
        optimal = game.optimal_actions()
        command = (
            optimal[0] if optimal and rng.random() < 0.6 else rng.choice(info["admissible_actions"])
        )
        _, _, terminated, _, info = env.step(command)
        if terminated:
            break
        if turn % 2:
            continue
        twin, replayed = copy.deepcopy(game), pickle.loads(pickle.dumps(game))
        for _ in range(3):
            shown = sorted(twin._info()["admissible_actions"])
            assert shown == sorted(replayed._info()["admissible_actions"])
            if not shown:  # (the twins' game ended)
                break
            command = rng.choice(shown)
            assert twin.step(command) == replayed.step(command), (env_id, command)
            assert twin.distance_to_goal() == replayed.distance_to_goal()
            assert twin.optimal_actions() == replayed.optimal_actions()
        twin.close()
        replayed.close()
    original = pickle.loads(pickle.dumps(game))
    for command in sorted(info["admissible_actions"])[:1]:
        assert game.step(command) == original.step(command)  # (untouched by its copies)
    original.close()
    env.close()


def test_an_env_dropped_unclosed_ends_its_interpreter(no_collector):
    before = child_pids()
    env = gym.make(EASY_ID)
    env.reset(seed=0)
    assert len(child_pids() - before) == 1
    del env
    assert child_pids() - before == set()


_FIRST_ENV_DROPPED = """
import gc, sys
import gymnasium as gym
import turnbudget
from _support import child_pids
env = gym.make(sys.argv[1])
env.reset(seed=0)
started = len(child_pids())
del env
gc.collect()  # (importing TextWorld inside the first env's frames leaves a cycle: collectable)
print(started, len(child_pids()))
"""


def test_a_fresh_process_first_env_dropped_unclosed_ends_its_interpreter():
    """The first env of a process parses its game's logic, and TextWorld's parser (a module
    global) kept the failure it backtracked from, whose traceback held the frames that loaded
    the game: that env, dropped unclosed, kept its interpreter alive through any collection
    (the test above runs after others have parsed the logic)."""
    import subprocess
    import sys

    tests = str(Path(__file__).resolve().parents[2])  # (where `_support` is)
    path = os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_ENV_DROPPED, EASY_ID], capture_output=True, text=True,
        timeout=300, check=False, env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "0"], done.stdout


def test_evaluate_ends_every_interpreter_it_starts(no_collector):
    from turnbudget.agents import OracleAgent
    from turnbudget.eval import evaluate

    before = child_pids()
    result = evaluate(EASY_ID, OracleAgent(0.0), tasks=[0], ks=(1,), ts=(30,), n=1)
    assert result is not None
    assert child_pids() - before == set()


def test_a_closed_runner_ends_its_interpreters_while_still_held(no_collector):
    from turnbudget.agents import OracleAgent
    from turnbudget.eval.run.driver import Driver
    from turnbudget.eval.run.episodes import EvaluationEpisodes
    from turnbudget.eval.run.plan import make_config, plan_episodes

    config = make_config(
        EASY_ID, OracleAgent(0.0), ks=[1], ts=[30], n=1, tasks=1, mode="auto", reveal=None,
        errors=None, seed=0, label=None, record_steps=False,
    )  # fmt: skip
    before = child_pids()
    runner = Driver(OracleAgent(0.0), config, kind=EvaluationEpisodes)  # (a Ray actor's holds it)
    (outcome,) = runner.run(plan_episodes(config))
    assert outcome[0]["success"]
    assert len(child_pids() - before) == 1  # its env's, kept for the next episode
    runner.close()
    assert child_pids() - before == set()


def test_an_interpreter_killed_between_calls_is_not_alive_and_its_env_recovers():
    """`alive` read only the finalizer: an interpreter killed from outside between two calls
    (the OOM killer, a stray kill) made close() raise InterpreterError, which failed a local
    run after its last episode."""
    import signal

    env = gym.make("turnbudget/CoinCollector-Easy-v0")
    env.reset(seed=0)
    pid = env.unwrapped._interpreter.pid
    os.kill(pid, signal.SIGKILL)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # (until it has ended; not reaped)
    assert not env.unwrapped._interpreter.alive
    env.close()  # (raised: "The interpreter process ended during close(): exit status -9")
    env.reset(seed=0)  # (a new interpreter)
    env.step("look")
    env.close()


def test_the_story_file_check_s_child_ends_by_itself_when_its_parent_is_gone(tmp_path):
    """The check loads the story in a forked child that only its parent killed past the
    timeout: with the parent killed meanwhile, a story that loops at load kept it spinning a
    core for ever."""
    import signal
    import subprocess
    import sys
    import time

    story = _story(tmp_path, "loops_on_look", looping_story("l"))  # (the check sends "look")
    script = (
        "from turnbudget.envs.textworld.storyfile import probe_story_file\n"
        f"probe_story_file({str(story)!r}, timeout=1.0)\n"
    )
    checker = subprocess.Popen([sys.executable, "-c", script])
    children = f"/proc/{checker.pid}/task/{checker.pid}/children"
    deadline = time.monotonic() + 120  # (a guard: the fork comes within a second or two)
    forked: list[int] = []
    while not forked and time.monotonic() < deadline and checker.poll() is None:
        with contextlib.suppress(FileNotFoundError), open(children) as f:
            forked = [int(p) for p in f.read().split()]
        time.sleep(0.01)
    assert forked, "the check forked no child"
    checker.send_signal(signal.SIGKILL)  # (before its own timeout could kill the child)
    checker.wait()
    deadline = time.monotonic() + 120  # (a guard: it ends about 2 s after it started)
    while time.monotonic() < deadline and not _ended(forked[0]):
        time.sleep(0.1)
    gone = _ended(forked[0])
    if not gone:
        os.kill(forked[0], signal.SIGKILL)
    assert gone, "the check's child outlived its parent"


def test_game_states_copied_as_dicts_copy_a_game_in_play_as_before(monkeypatch):
    """On Python 3.10 TextWorld's ``GameState`` could not be copied or pickled (its
    ``__getattr__`` answered None for ``__getstate__``, which was called): every copy of a
    game in play failed. There the env rebuilds it from its items (`_copy_game_states_as_dicts`,
    registered on 3.10 only); here the rebuild is checked on this version too: the copies
    play as before, and a state copied is an equal ``GameState`` of its own."""
    import copyreg
    import pickle

    import textworld.core

    from turnbudget.envs.textworld.env import _copy_game_states_as_dicts

    # (registered for this test only: `copy` reads copyreg's table, the same dict)
    monkeypatch.setitem(copyreg.dispatch_table, textworld.core.GameState, None)
    _copy_game_states_as_dicts(textworld)
    assert copyreg.dispatch_table[textworld.core.GameState] is not None
    state = textworld.core.GameState(feedback="Hi.", admissible_commands=["look"], won=False)
    for copied in (copy.deepcopy(state), pickle.loads(pickle.dumps(state))):
        assert type(copied) is textworld.core.GameState and copied == state
        assert copied["admissible_commands"] is not state["admissible_commands"]
        assert copied.won is False and copied.feedback == "Hi."
    test_a_copy_mid_episode_plays_on_as_the_episode_replayed_does(EASY_ID)
