"""Command parsing, hostile input and game-specific behaviour of the native games."""

from __future__ import annotations

import math
import pickle
import sys

import gymnasium as gym
import numpy as np
import pytest
from _support import native_env_ids

from turnbudget.envs.native.base import normalize_command
from turnbudget.envs.native.crafting import Crafting
from turnbudget.envs.native.keyquest import KeyQuest
from turnbudget.envs.native.maze import Maze
from turnbudget.envs.native.shop import Shop
from turnbudget.envs.native.sokoban import Sokoban

HOSTILE_COMMANDS = [
    "",
    "   ",
    "x" * 100_000,
    "\x00\x01\x07\x1b[2J",
    "\\q",
    "\\e",
    "look\nquit",
    "go\x00north",
    "look\r\nquit",
    "ñorth ☃ 北",
    "take \\ key",
    "\t",
]


@pytest.mark.parametrize("env_id", native_env_ids())
@pytest.mark.parametrize("command", HOSTILE_COMMANDS, ids=repr)
def test_hostile_strings_cost_a_turn_with_feedback_and_change_nothing(env_id, command):
    env = gym.make(env_id)
    game = env.unwrapped
    _, info = env.reset(seed=0)
    before = (game.distance_to_goal(), game.admissible_actions())
    obs, reward, terminated, truncated, info = env.step(command)
    assert info["valid_action"] is False
    assert info["turns_used"] == 1
    assert reward == 0.0 and not terminated and not truncated
    assert obs and env.observation_space.contains(obs)
    assert (game.distance_to_goal(), game.admissible_actions()) == before
    # and the game goes on normally afterwards
    obs, *_, info = env.step(game.optimal_actions()[0])
    assert info["valid_action"] is True


@pytest.mark.parametrize("env_id", native_env_ids())
@pytest.mark.parametrize("action", [None, 3, 2.5, b"look", ["look"], {"cmd": "look"}])
def test_non_string_actions_raise_a_clear_type_error(env_id, action):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    with pytest.raises(TypeError, match="Expect the action to be a str"):
        env.step(action)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("n", "go north"),
        ("  GO   North ", "go north"),
        ("walk w", "go west"),
        ("South", "go south"),
        ("get the red key", "take red key"),
        ("pick up red key", "take red key"),
        ("Grab  RED key", "take red key"),
        ("put down the golden crown", "drop golden crown"),
        ("open the red door", "unlock red door"),
        ("unlock red door with red key", "unlock red door"),
        ("open the red door with the red key", "unlock red door"),
        # (anything after the door's own key, or another key, is no command of the game)
        ("unlock red door with red key and go north", "unlock red door with red key and go north"),
        ("unlock red door with blue key", "unlock red door with blue key"),
        ("open red door with red key, then go west", "unlock red door with red key, then go west"),
        ("unlock red door with", "unlock red door with"),
        ("l", "look"),
        ("i", "inventory"),
        ("dance", "dance"),
        ("", ""),
    ],
)
def test_commands_are_normalized(raw, canonical):
    assert normalize_command(raw) == canonical


@pytest.mark.parametrize(
    "spoken",
    [
        "{unlock} with {own} key and go north",
        "{unlock} with {own} key, then go west",
        "{unlock} with {own} key. take coin",
        "{unlock} with {other} key",
        "{unlock} with",
    ],
)
def test_an_unlock_with_more_than_its_own_key_is_a_spent_turn(spoken):
    """'unlock yellow door with banana and go north' unlocked the door: everything from
    'with' on was cut, so a second command (or a wrong key) rode along with the first."""
    env = gym.make("turnbudget/KeyQuest-Easy-v0", turn_budget=500)
    _, info = env.reset(seed=0)
    while not any(a.startswith("unlock") for a in info["admissible_actions"]):
        _, _, _, _, info = env.step(env.unwrapped.optimal_actions()[0])
    unlock = next(a for a in info["admissible_actions"] if a.startswith("unlock"))
    own = unlock.split()[1]
    other = "blue" if own != "blue" else "red"
    before = env.unwrapped.admissible_actions()
    _, _, _, _, info = env.step(spoken.format(unlock=unlock, own=own, other=other))
    assert info["valid_action"] is False and env.unwrapped.admissible_actions() == before
    _, _, _, _, info = env.step(f"{unlock} with {own} key")
    assert info["valid_action"] is True


@pytest.mark.parametrize("env_id", native_env_ids())
def test_unicode_look_alikes_of_a_command_play_nothing(env_id):
    # str.lower() turns the Kelvin sign into "k", and str.split() splits at a no-break space
    # or an ASCII separator: each played a listed command.
    env = gym.make(env_id)
    game = env.unwrapped
    env.reset(seed=0)
    spaced = next(c for c in game.admissible_actions() if " " in c)
    look_alikes = [
        "LOO\u212a",
        "loo\u212a",
        spaced.replace(" ", "\u00a0"),
        spaced.replace(" ", "\u3000"),
        spaced.replace(" ", "\x1c"),
        spaced.replace(" ", "\x85"),
    ]
    for command in look_alikes:
        assert game.canonical_command(command) is None, command
        before = game.distance_to_goal(), game.admissible_actions(), game.optimal_actions()
        _, _, terminated, _, info = env.step(command)
        assert info["valid_action"] is False and not terminated, command
        after = game.distance_to_goal(), game.admissible_actions(), game.optimal_actions()
        assert after == before, command
    # ASCII case and whitespace still fold
    assert game.canonical_command(spaced.upper().replace(" ", " \t ")) == spaced


def test_synonyms_are_valid_moves():
    env = Maze("easy")
    env.reset(seed=0)
    direction = env.admissible_actions()[0].split()[1]
    _, _, _, _, info = env.step(f"  {direction[0].upper()} ")
    assert info["valid_action"] is True


def test_maze_observation_describes_only_the_current_room():
    env = Maze("medium")
    obs, info = env.reset(seed=4)
    goal_room = info["goal"].removeprefix("Find ").removesuffix(".")
    assert goal_room in obs  # the goal text names the room...
    assert obs.count("You are in") == 1  # ...but only the current room is described
    assert "Exits lead" in obs or "dead end" in obs


def test_maze_is_won_by_entering_the_goal_room():
    env = Maze("easy")
    env.reset(seed=2)
    while True:
        obs, reward, terminated, truncated, info = env.step(env.optimal_actions()[0])
        if terminated:
            break
        assert reward == 0.0
    assert reward == 1.0 and info["won"] and not truncated
    assert env.optimal_actions() == [] and env.distance_to_goal() == 0
    obs, reward, terminated, _, info = env.step("look")
    assert terminated and reward == 0.0 and "over" in obs


def test_maze_setbacks_return_to_entered_rooms_and_its_memory_stays_within_the_maze():
    """A setback sweeps the agent back to a room it entered, no closer to the goal; what the
    game keeps of the rooms entered does not grow with the turns played (5,000 here)."""
    env = Maze("medium")
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    rooms = env.config.width * env.config.height
    entered = {env._room}
    for turn in range(5_000):
        if turn % 7 == 6:
            here, before = env._room, env.distance_to_goal()
            text = env.inject_setback(rng)
            if env._room != here:
                assert env._room in entered and env.distance_to_goal() >= before
                assert text.startswith("A gust of wind sweeps you back to")
        else:
            commands = env.admissible_actions()
            env.step(commands[int(rng.integers(len(commands)))])
            if env._won:
                env.reset(seed=turn)
                entered = set()
        entered.add(env._room)
    assert len(env._visited) <= rooms
    assert pickle.loads(pickle.dumps(env))._visited == env._visited


def test_keyquest_locked_door_blocks_and_explains():
    env = KeyQuest("medium")
    # find a seed and a state where the agent stands next to a locked door
    for seed in range(50):
        env.reset(seed=seed)
        for _ in range(40):
            room = env._room
            locked = [
                d
                for d in env._exits[room]
                if (room, d) in env._door_at and not env._open_mask >> env._door_at[room, d] & 1
            ]
            if locked:
                direction = locked[0]
                obs, _, _, _, info = env.step(f"go {direction}")
                assert info["valid_action"] is False
                assert "locked" in obs
                return
            env.step(env.optimal_actions()[0])
    pytest.fail("no locked door met")


def test_keyquest_keys_lie_behind_other_doors_in_hard_games():
    """The chain structure: some key is only reachable after opening another door."""
    behind = 0
    for seed in range(20):
        env = KeyQuest("hard")
        env.reset(seed=seed)
        reachable = env._flood(env._room, 0)
        keys = env._item_loc[: env.config.doors]
        behind += any(room not in reachable for room in keys)
    assert behind >= 10


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_keyquest_generation_knows_the_exact_length_for_every_goal_room(difficulty):
    """Generation draws the goal among the rooms whose quest length is in range, from one
    search; that length must be the oracle's for every room, not only the one drawn."""
    env = KeyQuest(difficulty)
    for seed in range(8):
        env.reset(seed=seed)
        lengths = env._delivery_lengths(10_000)  # no cut: every room the treasure can reach
        assert lengths[env._goal_room] == env.distance_to_goal()
        for room, length in enumerate(lengths):
            if room == env._item_loc[env.config.doors]:
                continue
            env._goal_room, env._oracle = room, {}
            assert length == env.distance_to_goal(), (seed, room)
        cut = env._delivery_lengths(env.config.max_distance)
        assert cut == [x if x <= env.config.max_distance else -1 for x in lengths]


def test_keyquest_keeps_its_oracles_answers_for_the_same_world_and_they_stay_exact():
    """An evaluation plays each task at every budget and repeat: the same world again keeps
    the oracle's table (searched once per state), and every answer is a fresh game's."""
    game = KeyQuest("medium")
    game.reset(seed=3)
    table = game._oracle
    game.distance_to_goal()
    game.reset(seed=3)
    assert game._oracle is table and table
    game.reset(seed=4)
    assert game._oracle is not table
    rng = np.random.default_rng(0)
    for seed in (3, 3, 4, 3, 4):  # each replay starts where the table has every state searched
        game.reset(seed=seed)
        fresh = KeyQuest("medium")
        fresh.reset(seed=seed)
        for turn in range(60):
            assert game.distance_to_goal() == fresh.distance_to_goal(), (seed, turn)
            assert game.optimal_actions() == fresh.optimal_actions(), (seed, turn)
            if turn % 7 == 3:  # a setback (a dropped key, a door locked again) on both
                assert game.inject_setback(np.random.default_rng(turn)) == fresh.inject_setback(
                    np.random.default_rng(turn)
                )
                continue
            commands = game.admissible_actions()
            command = commands[int(rng.integers(len(commands)))]
            if game.step(command)[2] | fresh.step(command)[2]:
                break


def test_keyquest_inventory_and_drop_round_trip():
    env = KeyQuest("easy")
    env.reset(seed=1)
    while not any(a.startswith("take") for a in env.admissible_actions()):
        env.step(env.optimal_actions()[0])
    take = next(a for a in env.admissible_actions() if a.startswith("take"))
    item = take.removeprefix("take ")
    env.step(take)
    obs, *_ = env.step("inventory")
    assert item in obs
    distance = env.distance_to_goal()
    obs, *_, info = env.step(f"drop {item}")
    assert info["valid_action"] and f"drop the {item}" in obs
    assert env.distance_to_goal() >= distance
    assert take in env.admissible_actions()


def test_unknown_difficulty_is_a_clear_error():
    with pytest.raises(ValueError, match="difficulty"):
        Maze("impossible")
    with pytest.raises(ValueError, match="render_mode"):
        KeyQuest("easy", render_mode="depth_array")  # rgb_array is drawn: see test_render.py


def test_ansi_render_returns_the_last_observation():
    env = gym.make("turnbudget/Maze-Easy-v0", render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert env.render() == obs


@pytest.mark.parametrize("env_id", native_env_ids())
def test_deepcopy_is_independent_and_behaves_like_a_pickled_copy(env_id):
    import copy
    import pickle

    game = gym.make(env_id).unwrapped
    game.reset(seed=5)
    for _ in range(3):  # a drop or a move: mutate some state, without losing (Sokoban)
        actions = game.admissible_actions()
        for action in [actions[-min(3, len(actions))], *game.optimal_actions()]:
            probe = copy.deepcopy(game)
            probe.step(action)
            if not probe._lost:
                break
        game.step(action)
    snapshot = pickle.dumps(game)
    clone = copy.deepcopy(game)
    for _ in range(20):  # play the clone far away, then reset it to a new world
        clone.step(clone.optimal_actions()[0] if clone.optimal_actions() else "look")
        clone.inject_setback(clone.np_random)
    clone.reset(seed=99)
    reference = pickle.loads(snapshot)
    for _ in range(200):
        action = game.optimal_actions()[0]
        assert game.step(action) == reference.step(action)
        assert game.distance_to_goal() == reference.distance_to_goal()
        if game._won:
            break
    assert game._won


@pytest.mark.parametrize("env_id", native_env_ids())
def test_an_unpickled_game_deep_copies_and_plays_as_the_original(env_id):
    """A pickle leaves the oracle's memos out, and a deep copy reads every attribute by name:
    copying an unpickled Maze or KeyQuest raised AttributeError."""
    import copy
    import pickle

    game = gym.make(env_id).unwrapped
    game.reset(seed=3)
    game.step(game.optimal_actions()[0])
    clone = copy.deepcopy(pickle.loads(pickle.dumps(game)))
    for _ in range(5):
        if game._won:
            break
        action = game.optimal_actions()[0]
        assert clone.optimal_actions() == game.optimal_actions()
        assert clone.step(action) == game.step(action)


@pytest.mark.parametrize("game_class", [Maze, KeyQuest, Crafting, Sokoban, Shop])
def test_step_before_reset_is_a_clear_error(game_class):
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        game_class().step("look")


@pytest.mark.parametrize("game_class", [Maze, KeyQuest, Crafting, Sokoban, Shop])
def test_the_oracle_and_admissible_actions_before_reset_are_a_clear_error(game_class):
    """Asked before the first reset, they failed from inside (IndexError, AttributeError,
    'min() arg is an empty sequence'), and Crafting answered a distance of 0, as if won."""
    game = game_class()
    questions = {
        "distance_to_goal": game.distance_to_goal,
        "optimal_actions": game.optimal_actions,
        "admissible_actions": game.admissible_actions,
        "canonical_command": lambda: game.canonical_command("look"),
        "inject_setback": lambda: game.inject_setback(np.random.default_rng(0)),
    }
    for name, ask in questions.items():
        with pytest.raises(gym.error.ResetNeeded, match=rf"reset\(\) before {name}\(\)"):
            ask()
    game.reset(seed=0)
    assert game.distance_to_goal() > 0 and game.optimal_actions()


@pytest.mark.parametrize("game_class", [Maze, KeyQuest, Crafting, Sokoban, Shop])
@pytest.mark.parametrize(
    "rng", [None, 0, np.random.RandomState(0)], ids=["None", "int", "RandomState"]
)
def test_a_setback_refuses_an_rng_that_is_no_generator_in_every_state(game_class, rng):
    """Whether a game drew from ``rng`` depended on its state: None played in some states and
    was an AttributeError in others."""
    game = game_class()
    game.reset(seed=1)
    for _ in range(3):
        with pytest.raises(TypeError, match=r"Expect `rng` to be a np\.random\.Generator"):
            game.inject_setback(rng)
        game.step(game.optimal_actions()[0])


@pytest.mark.parametrize("env_id", native_env_ids())
def test_progress_is_not_the_oracle_distance(env_id):
    """Agents see ``info["progress"]``: it counts subgoals a player sees, never 1 - d/d0 (issue
    21: on Maze it was exactly that on every step). Along an optimal path d falls every turn;
    player-visible progress moves only when a subgoal is reached."""
    env = gym.make(env_id)
    game = env.unwrapped
    matches = steps = 0
    for seed in range(8):
        env.reset(seed=seed)
        start = game.distance_to_goal()
        while True:
            _, _, terminated, truncated, info = env.step(game.optimal_actions()[0])
            if terminated or truncated:
                break
            steps += 1
            matches += math.isclose(info["progress"], 1 - game.distance_to_goal() / start)
    assert steps >= 30 and matches <= steps / 4, (matches, steps)


def test_maze_progress_is_zero_until_the_goal_is_found():
    env = gym.make("turnbudget/Maze-Medium-v0")
    game = env.unwrapped
    _, info = env.reset(seed=3)
    seen = [info["progress"]]
    while not info["won"]:
        _, _, _, _, info = env.step(game.optimal_actions()[0])
        seen.append(info["progress"])
    assert seen[-1] == 1.0 and set(seen[:-1]) == {0.0}


@pytest.mark.parametrize("env_id", ["turnbudget/Maze-Medium-v0", "turnbudget/KeyQuest-Medium-v0"])
def test_a_copy_draws_what_the_original_draws_without_reading_os_entropy(env_id, monkeypatch):
    """A look-ahead copy (a checked slip, a probe) takes the original's generator state; it
    no longer seeds a fresh generator from OS entropy first (as much as the rest of a copy)."""
    import copy

    import numpy.random.bit_generator as bit_generator

    game = gym.make(env_id).unwrapped
    game.reset(seed=3)
    game.np_random.random(5)  # (somewhere in its stream)

    def entropy(bits):
        raise AssertionError("a copy read OS entropy")

    monkeypatch.setattr(bit_generator, "randbits", entropy)
    clone = copy.deepcopy(game)
    assert clone.np_random is not game.np_random
    assert clone.np_random.random(4).tolist() == game.np_random.random(4).tolist()


def _declared(env_id: str) -> bool:
    return getattr(gym.make(env_id).unwrapped, "commands_keep_solvable", False)


@pytest.mark.parametrize("env_id", [i for i in native_env_ids() if _declared(i)])
def test_a_game_that_declares_commands_keep_solvable_never_ends_on_a_non_optimal_command(env_id):
    """The declaration lets `InjectErrors` skip a slip's look-ahead: it must be what the
    look-ahead would find. From every state of random play with setbacks, every admissible
    command that is not optimal leaves the game running and solvable (played on a copy)."""
    import copy

    import numpy as np

    game = gym.make(env_id).unwrapped
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(12):
        game.reset(seed=seed)
        for _ in range(60):
            optimal = set(game.optimal_actions())
            for command in game.admissible_actions():
                if command not in optimal:
                    probe = copy.deepcopy(game)
                    _, _, terminated, _, _ = probe.step(command)
                    assert not terminated and probe.distance_to_goal() is not None, command
                    checked += 1
            actions = game.admissible_actions()
            if rng.random() < 0.1:
                game.inject_setback(rng)
            elif game.step(actions[int(rng.integers(len(actions)))])[2]:
                break
    assert checked > 1000


def test_only_games_that_cannot_be_blocked_declare_commands_keep_solvable():
    assert all(c.commands_keep_solvable for c in (Maze, KeyQuest, Crafting))
    # Sokoban (a box pushed into a corner) and Shop (a wrong purchase) can be lost.
    assert not any(c.commands_keep_solvable for c in (Sokoban, Shop))


@pytest.mark.parametrize("env_id", native_env_ids())
@pytest.mark.parametrize("bit_generator", [None, np.random.MT19937, np.random.SFC64])
def test_a_copy_draws_what_the_original_would(env_id, bit_generator):
    """A copy's generator is built from a fixed seed's words, then given the original's state:
    whatever the bit generator, it draws what the original would have, and nothing it draws
    moves the original's."""
    import copy

    game = gym.make(env_id).unwrapped
    game.reset(seed=5)
    if bit_generator is not None:  # (a game seeded by hand with another bit generator)
        game._np_random = np.random.Generator(bit_generator(11))
    game.np_random.random(3)
    clone = copy.deepcopy(game)
    assert type(clone.np_random.bit_generator) is type(game.np_random.bit_generator)
    ahead = clone.np_random.random(8)
    assert (ahead == game.np_random.random(8)).all()
    assert (copy.deepcopy(clone).np_random.random(4) == clone.np_random.random(4)).all()


@pytest.mark.parametrize("env_id", native_env_ids())
def test_a_game_not_reset_yet_can_be_deep_copied_and_the_copy_plays_like_it(env_id):
    import copy

    game = gym.make(env_id).unwrapped
    clone = copy.deepcopy(game)  # (before the first reset: as vector envs and learners may)
    assert clone.reset(seed=4) == game.reset(seed=4)
    for _ in range(30):
        action = (game.optimal_actions() or ["look"])[0]
        assert clone.step(action) == game.step(action)


class _CountingMaze(Maze):
    """A user's subclass: it sets an attribute outside ``__init__``, as subclasses may."""

    _world_attributes = (*Maze._world_attributes, "_extra_world")

    def step(self, action):
        self.moves_seen = getattr(self, "moves_seen", 0) + 1
        return super().step(action)


def test_deepcopy_keeps_what_a_subclass_or_a_renderer_set():
    """Our games are copied by the names their ``__init__`` sets; a subclass's attributes set
    anywhere else, and a rendering game's render mode, are copied too."""
    import copy

    game = _CountingMaze("easy")
    game.reset(seed=1)
    game.step(game.optimal_actions()[0])
    clone = copy.deepcopy(game)
    assert clone.moves_seen == 1 and clone._extra_world is None
    assert clone.step("look") == game.step("look") and clone.moves_seen == game.moves_seen == 2

    rendered = gym.make("turnbudget/Maze-Easy-v0", render_mode="ansi").unwrapped
    rendered.reset(seed=2)
    clone = copy.deepcopy(rendered)
    assert clone.render_mode == "ansi" and clone.render() == rendered.render()


def _played(env_id: str, seed: int, turns: int = 60, **stack: object) -> gym.Env:
    """A game played under the evaluation's stack (records with the oracle, errors): every
    oracle query, setback and memo a run makes."""
    from turnbudget.wrappers.stack import make

    env = make(env_id, record=True, **stack)
    _, info = env.reset(seed=seed)
    for turn in range(turns):
        commands = info["admissible_actions"] or ["look"]
        _, _, terminated, truncated, info = env.step(commands[(seed + turn) % len(commands)])
        if terminated or truncated:
            _, info = env.reset(seed=seed + 1)
    return env


@pytest.mark.parametrize("env_id", native_env_ids())
def test_a_game_sets_every_attribute_it_will_hold_when_it_is_made(env_id):
    """A game holds no attribute it did not set in ``__init__``, and at most
    `MAX_FAST_ATTRIBUTES` (CPython's fast layout: see its comment), after reset, play, every
    error kind and the oracle's memos."""
    from turnbudget.envs.native.base import MAX_FAST_ATTRIBUTES

    made = set(vars(gym.make(env_id).unwrapped))
    game = _played(env_id, seed=3, errors={"rate": 0.3}).unwrapped
    game.optimal_actions(), game.distance_to_goal()
    assert set(vars(game)) <= made, f"set after __init__: {sorted(set(vars(game)) - made)}"
    assert len(made) <= MAX_FAST_ATTRIBUTES
    rendered = gym.make(env_id, render_mode="ansi").unwrapped  # (one attribute more)
    assert len(vars(rendered)) <= MAX_FAST_ATTRIBUTES


@pytest.mark.skipif(
    sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11),
    reason="reads CPython 3.11's object layout",
)
@pytest.mark.parametrize("env_id", native_env_ids())
def test_play_keeps_a_games_attributes_in_cpythons_fast_layout(env_id):
    """Twenty games of a kind, made before any is reset, played under the evaluation's stack:
    none has its attributes turned into a plain dict (a read of its ``__dict__`` in play, or
    an attribute that does not fit, would; every later step then runs slower)."""
    import ctypes

    def has_plain_dict(obj: object) -> bool:
        # CPython 3.11: an object whose type manages its dict keeps the dict's pointer 3 words
        # before it, NULL while its attributes are in the compact layout.
        assert type(obj).__flags__ & (1 << 4)  # Py_TPFLAGS_MANAGED_DICT
        return (
            ctypes.c_void_p.from_address(id(obj) - 3 * ctypes.sizeof(ctypes.c_void_p)).value
            is not None
        )

    import copy

    from turnbudget.wrappers.stack import make

    # (Every error kind: Sokoban's and Shop's slips look ahead on a copy of the game.)
    envs = [make(env_id, record=True, errors={"rate": 0.3}) for _ in range(20)]
    assert not any(has_plain_dict(env.unwrapped) for env in envs)  # (the check itself works:)
    for seed, env in enumerate(envs):
        _, info = env.reset(seed=seed)
        for turn in range(40):
            commands = info["admissible_actions"] or ["look"]
            _, _, terminated, truncated, info = env.step(commands[(seed + turn) % len(commands)])
            if terminated or truncated:
                break
        env.unwrapped.optimal_actions(), env.unwrapped.distance_to_goal()
    assert [has_plain_dict(env.unwrapped) for env in envs] == [False] * 20
    copies = [copy.deepcopy(env.unwrapped) for env in envs[:3]]  # (a probe's, a look-ahead's)
    assert not any(has_plain_dict(game) for game in [*copies, *(e.unwrapped for e in envs)])
    vars(envs[0].unwrapped)
    assert has_plain_dict(envs[0].unwrapped)


def test_keyquest_refuses_unlocking_a_door_it_does_not_show_as_any_unknown_command():
    """ "unlock <colour> door" answered "You can't unlock the <colour> door from here" for a
    door of any room, and "You can't do that" for a colour no door has: a player learnt which
    doors the world holds from the start room."""
    env = gym.make("turnbudget/KeyQuest-Hard-v0")
    obs, _ = env.reset(seed=0)
    game = env.unwrapped
    here = {game._door_color(d) for (room, _), d in game._door_at.items() if room == game._room}
    elsewhere = sorted(set(game._door_colors) - here)
    assert here and elsewhere, "the test needs doors here and elsewhere"
    nowhere, _, _, _, _ = env.step("unlock mauve door")
    for colour in elsewhere:
        unseen, _, _, _, info = env.step(f"unlock {colour} door")
        assert info["valid_action"] is False
        assert unseen.split("\n")[0] == nowhere.split("\n")[0].replace("mauve", colour)
    shown, _, _, _, _ = env.step(f"unlock {sorted(here)[0]} door")
    assert "from here without its key" in shown
