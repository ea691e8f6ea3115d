"""Registry-wide contract tests for the TextWorld ids, on the shipped games (game 0)."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from _support import SHIPPED_TEXTWORLD_GAMES

import turnbudget
from turnbudget.envs.textworld import TextWorldEnv
from turnbudget.envs.textworld.variants import TEXTWORLD_VARIANTS
from turnbudget.utils import check_text_env

DATA = SHIPPED_TEXTWORLD_GAMES
ENV_IDS = [f"turnbudget/{i}" for i in TEXTWORLD_VARIANTS if i != "TextWorldFile-v0"]
# No single step may take more CPU seconds (a spin; a step blocked on I/O is caught by the
# pytest-timeout marks): CPU time, not wall time, so a busy machine cannot trip it.
STEP_SECONDS = 5.0
HOSTILE = [
    "\\q", "\\e", "\\quit", "look\nquit", "look\rquit", "quit", "q", "restart", "undo",
    "save", "restore", "script", "again", "look. quit", "look; go north", "look then quit",
    "yes", "\x00\x01\x1b[2J", "\x7f", "x" * 10_000, "go north " * 500, "", "   ",
    "caf\u00e9 \u2603 \u00fcber", "\t\tlook\t", "examine \ud83d\ude00", ">", "*", "..", "\\",
]  # fmt: skip


def _oracle_play(env: gym.Env, seed: int = 0) -> tuple[int, dict]:
    """Follow optimal_actions() from reset(seed); every step must shorten the plan by one."""
    _, info = env.reset(seed=seed)
    game = env.unwrapped
    optimal = game.distance_to_goal()
    assert optimal is not None and optimal > 0
    turns = 0
    while True:
        distance = game.distance_to_goal()
        _, _, terminated, truncated, info = env.step(game.optimal_actions()[0])
        turns += 1
        assert info["valid_action"]
        if terminated or truncated:
            break
        assert game.distance_to_goal() == distance - 1
    assert turns == optimal
    return turns, info


def test_every_family_and_difficulty_is_registered():
    expected = {
        f"turnbudget/{family}-{difficulty}-v0"
        for family in ("CoinCollector", "TreasureHunter", "Cooking")
        for difficulty in ("Easy", "Medium", "Hard")
    } | {"turnbudget/TextWorldCustom-v0", "turnbudget/TextWorldFile-v0"}
    assert expected <= set(gym.registry)


def test_import_registers_ids_without_importing_textworld():
    script = (
        "import sys, gymnasium as gym, turnbudget;"
        "assert 'textworld' not in sys.modules, 'textworld imported eagerly';"
        "assert 'turnbudget/Cooking-Hard-v0' in gym.registry"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_missing_textworld_raises_a_clear_import_error():
    script = (
        "import sys; sys.modules['textworld'] = None\n"
        "import gymnasium as gym, turnbudget\n"
        "try:\n"
        "    gym.make('turnbudget/CoinCollector-Easy-v0')\n"
        "except ImportError as e:\n"
        "    assert 'pip install -e \".[textworld]\" in the turnbudget checkout' in str(e), e\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


@pytest.mark.timeout(600, method="thread")
@pytest.mark.parametrize(
    "env_id",
    # Cooking-Hard's long plan (~6 s) in the `slow` suite; Cooking-Easy and -Medium stay here.
    [
        pytest.param(i, marks=pytest.mark.slow) if i.endswith("Cooking-Hard-v0") else i
        for i in ENV_IDS
    ],
)
def test_every_id_passes_the_contract_checker(env_id):
    """Gymnasium's checker, seeded rollouts identical in two processes, pickle round trip
    (the interpreter replays the episode), the oracle's plan shortening by one per turn to
    a win within half the default budget, setbacks that keep the task solvable, hostile
    inputs and budget flags: see `check_text_env`. ``num_games=1``: unseeded resets (the
    checker's) stay on the shipped game 0."""
    report = check_text_env(
        env_id,
        seeds=(0,),
        steps=15,
        # Two fresh processes per id are slow here: the next test runs every id in two.
        cross_process=False,
        env_kwargs={"num_games": 1},
    )
    # TextWorld's oracle is its quest's plan (`oracle_is_plan`), not searched against every
    # action: the default ``oracle="auto"`` checks it as one.
    assert set(report.skipped) == {"oracle_bellman", "cross_process_determinism"}


def _digests_script(env_ids: list[str]) -> str:
    return f"""
import hashlib, json, gymnasium as gym, numpy as np, turnbudget
for env_id in {env_ids!r}:
    env = gym.make(env_id, num_games=1)
    rng = np.random.default_rng(5)
    digest = hashlib.sha256()
    obs, info = env.reset(seed=0)
    digest.update(json.dumps([obs, info], sort_keys=True).encode())
    for _ in range(25):
        actions = info["admissible_actions"] or ["look"]
        action = actions[int(rng.integers(len(actions)))]
        out = env.step(action)
        digest.update(json.dumps([out[0], float(out[1]), *out[2:]], sort_keys=True).encode())
        info = out[4]
        if out[2] or out[3]:
            obs, info = env.reset()
    print(env_id, digest.hexdigest())
"""


@pytest.mark.slow  # (~20 s on an idle machine: two processes play every id)
@pytest.mark.timeout(600, method="thread")  # a hang guard
def test_seeded_rollouts_are_identical_in_two_processes():
    script = _digests_script(ENV_IDS)
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        )
        outputs.append(out.stdout.split())
    assert outputs[0] == outputs[1]
    assert len(set(outputs[0][1::2])) == len(ENV_IDS)  # different games, different digests


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_wins_within_default_budget(env_id):
    env = gym.make(env_id)
    turns, info = _oracle_play(env, seed=0)
    assert info["won"] and not info["lost"]
    assert info["progress"] == 1.0
    assert info["textworld/score"] == info["textworld/max_score"]
    assert turns <= info["turn_budget"] / 2, "default budget must be generous (>= 2x optimal)"
    walkthrough = env.unwrapped.walkthrough()
    assert walkthrough and len(walkthrough) <= info["turn_budget"] / 2


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_walkthrough_replays_to_a_win_and_rewards_sum_to_the_score(env_id):
    env = gym.make(env_id)
    _, info = env.reset(seed=0)
    assert info["goal"] and info["progress"] == 0.0
    total = 0.0
    for command in env.unwrapped.walkthrough():
        assert not info.get("won")
        _, reward, terminated, truncated, info = env.step(command)
        total += reward
        assert not truncated
    assert terminated and info["won"]
    assert total == info["textworld/max_score"] > 0
    # The game is over: further steps are spent turns that change nothing.
    obs, reward, terminated, _, info = env.step("look")
    assert (reward, terminated, info["valid_action"], info["admissible_actions"]) == (
        0.0,
        True,
        False,
        [],
    )


@pytest.mark.timeout(120, method="thread")
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_hostile_commands_never_hang_crash_or_desync(env_id):
    env = gym.make(env_id, turn_budget=10_000)
    _, info = env.reset(seed=0)
    for command in HOSTILE:
        began = time.thread_time()
        obs, reward, terminated, truncated, info = env.step(command)
        assert time.thread_time() - began < STEP_SECONDS, f"step({command[:20]!r}) too slow"
        assert env.observation_space.contains(obs), command[:20]
        assert obs, "feedback must say something"
        assert not terminated and not truncated and reward == 0.0
        assert info["textworld/score"] == 0
    assert info["textworld/moves"] <= 3  # only plain commands like "look" may count as moves
    # The interpreter and TextWorld's tracking still agree: the walkthrough wins.
    for command in env.unwrapped.walkthrough():
        _, _, terminated, _, info = env.step(command)
    assert terminated and info["won"]
    assert info["textworld/score"] == info["textworld/max_score"]
    # And a reset still works (measured: "look\nquit" used to break later resets).
    obs, info = env.reset(seed=0)
    assert info["textworld/moves"] == 0 and not info["won"]


@pytest.mark.parametrize(
    "command",
    ["\\q", "look\nquit", "quit", "restart", "undo", "look. go north", "x" * 10_000, "\x00"],
)
def test_refused_commands_are_spent_turns_with_feedback(command):
    env = gym.make("turnbudget/CoinCollector-Easy-v0", turn_budget=3)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(command)
    assert info["valid_action"] is False and info["turns_used"] == 1
    assert obs and reward == 0.0 and not terminated and not truncated


def test_the_oracle_after_close_answers_as_before_any_reset():
    """It reached through the closed game: AttributeError '_inform7' on None. With no game to
    ask, it raises ResetNeeded, as before any reset (it answered None and [], which the
    oracle's protocol reads as "unsolvable" and "no command starts a plan")."""
    env = gym.make("turnbudget/CoinCollector-Easy-v0")
    env.reset(seed=0)
    game = env.unwrapped
    assert game.distance_to_goal() and game.optimal_actions()
    env.close()
    for method in ("distance_to_goal", "optimal_actions"):
        with pytest.raises(gym.error.ResetNeeded, match=f"before {method}"):
            getattr(game, method)()
    assert game.admissible_actions() == []


def test_non_string_actions_are_type_errors():
    env = gym.make("turnbudget/CoinCollector-Easy-v0")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="str"):
        env.step(3)


def test_setbacks_cost_something_where_something_can_be_undone():
    game = gym.make("turnbudget/Cooking-Medium-v0").unwrapped
    game.reset(seed=0)
    before = game.distance_to_goal()
    narration = game.inject_setback(np.random.default_rng(0))
    assert narration.startswith("Distracted, you ")
    assert game.distance_to_goal() > before


def test_a_setback_never_shortens_textworld_s_plan():
    """TextWorld's plan is not always a shortest one: after these moves in a Treasure Hunter
    game it says 5 turns, and a 'setback' that stepped south left 1 (the agent gained four
    turns by its error). A setback whose plan would be shorter is never chosen."""
    game = gym.make("turnbudget/TreasureHunter-Medium-v0").unwrapped
    game.reset(seed=0)
    for command in ["go east", "open passageway", "go south", "go east", "close door",
                    "close hatch"]:  # fmt: skip
        game.step(command)
    before = game.distance_to_goal()
    assert before == 5 and "go south" in game.admissible_actions()
    for seed in range(8):
        copy = pickle.loads(pickle.dumps(game))
        copy.inject_setback(np.random.default_rng(seed))
        assert copy.distance_to_goal() >= before, seed
        copy.close()


def test_reset_is_determined_by_the_seed_and_unseeded_resets_draw_from_the_pool():
    env = gym.make("turnbudget/Cooking-Easy-v0", num_games=1)
    first = env.reset(seed=0)
    env.step("look")
    assert env.reset(seed=0) == first
    assert env.reset(seed=5) == first  # 5 % num_games == 0
    assert env.reset()[0] == first[0]


@pytest.mark.parametrize("vector", ["sync", "async"])
def test_vector_envs_with_per_episode_budgets(vector):
    def make():
        return gym.make("turnbudget/CoinCollector-Easy-v0", num_games=1)

    if vector == "sync":
        envs = gym.vector.SyncVectorEnv([make, make])
    else:
        envs = gym.vector.AsyncVectorEnv([make, make], shared_memory=False)
    try:
        obs, info = envs.reset(seed=[0, 0], options={"turn_budget": 2})
        assert obs[0] == obs[1] and list(info["turn_budget"]) == [2, 2]
        envs.step(["go west", "xyzzy"])
        obs, reward, terminated, truncated, info = envs.step(["go north", "look"])
        assert list(truncated) == [True, True] and not terminated.any()
        assert list(info["valid_action"]) == [True, True]
    finally:
        envs.close()


def test_any_game_file_plays(tmp_path):
    game_file = next(DATA.glob("treasure_hunter-*/0.z8"))
    env = gym.make("turnbudget/TextWorldFile-v0", game_file=str(game_file))
    _, info = env.reset(seed=0)
    assert info["goal"]
    for command in env.unwrapped.walkthrough():
        _, _, terminated, _, info = env.step(command)
    assert terminated and info["won"]
    # Several files: seed s plays file s % n.
    files = sorted(DATA.glob("coin_collector-*/0.z8"))
    multi = TextWorldEnv(game_file=files)
    assert multi.reset(seed=1)[0] == TextWorldEnv(game_file=files[1]).reset(seed=0)[0]


def test_bad_game_files_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match=r"\.z8 or \.ulx"):
        TextWorldEnv(game_file=tmp_path / "game.txt")
    # (an empty path read as "got '.'", and a directory as "not found")
    with pytest.raises(ValueError, match=r"to name a TextWorld game, got ''"):
        TextWorldEnv(game_file="")
    (tmp_path / "folder.z8").mkdir()
    with pytest.raises(ValueError, match=r"folder\.z8.*: a directory"):
        TextWorldEnv(game_file=tmp_path / "folder.z8")
    with pytest.raises(FileNotFoundError, match="not found"):
        TextWorldEnv(game_file=tmp_path / "missing.z8")
    lone = tmp_path / "lone.z8"
    lone.write_bytes(next(DATA.glob("custom-*/0.z8")).read_bytes())
    with pytest.raises(FileNotFoundError, match=r"lone\.json"):
        TextWorldEnv(game_file=lone)
    with pytest.raises(ValueError, match="at least one"):
        TextWorldEnv(game_file=[])
    with pytest.raises(ValueError, match="`game_file`"):
        gym.make("turnbudget/TextWorldFile-v0")


def test_bad_family_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="`level`"):
        gym.make("turnbudget/CoinCollector-Easy-v0", level=0)
    with pytest.raises(ValueError, match="`num_games`"):
        gym.make("turnbudget/TreasureHunter-Easy-v0", num_games=0)
    # (a game id is a 32-bit seed: 2**40 games were accepted, then every reset failed in NumPy)
    with pytest.raises(
        ValueError, match=r"`num_games` to be a positive int of at most 4,294,967,296"
    ):
        gym.make("turnbudget/CoinCollector-Easy-v0", num_games=2**32 + 1)
    assert (
        gym.make("turnbudget/CoinCollector-Easy-v0", num_games=2**32).unwrapped.num_games == 2**32
    )
    with pytest.raises(ValueError, match="`go`"):
        gym.make("turnbudget/Cooking-Easy-v0", go=4)
    with pytest.raises(ValueError, match="`world_size`"):
        gym.make("turnbudget/TextWorldCustom-v0", world_size=-1)
    with pytest.raises(TypeError):
        gym.make("turnbudget/TextWorldCustom-v0", wolrd_size=3)  # typos are not swallowed


def test_shipped_games_are_small():
    for path in DATA.glob("*/*"):
        assert path.stat().st_size < 1_000_000, path
    assert Path(DATA).is_dir()


@pytest.mark.parametrize(
    "env_id", ["turnbudget/Cooking-Medium-v0", "turnbudget/CoinCollector-Hard-v0"]
)
def test_the_wrapper_stack_works_unchanged(env_id):
    env = turnbudget.make(
        env_id,
        budget_mix=[60, 80],
        errors={"schedule": {1: "slip", 2: "setback", 3: "transient"}},
        record=True,
        process_reward=True,
        reveal="final=3",
    )
    _, info = env.reset(seed=0)
    game = env.unwrapped
    kinds = []
    while True:
        obs, reward, terminated, truncated, info = env.step(game.optimal_actions()[0])
        assert env.observation_space.contains(obs)
        if info.get("injected_error"):
            kinds.append(info["injected_error"]["kind"])
            assert info["injected_error"]["distance_after"] is not None
        if terminated or truncated:
            break
    assert info["won"] and terminated
    assert "setback" in kinds and "transient" in kinds


def test_discrete_actions_and_text_features_on_textworld():
    env = turnbudget.make(
        "turnbudget/TreasureHunter-Medium-v0", discrete_actions=16, text_features=True
    )
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs, _, terminated, truncated, info = env.step(int(rng.integers(16)))
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            env.reset(seed=0)


@pytest.mark.parametrize("env_id", ["turnbudget/Cooking-Medium-v0", "turnbudget/Cooking-Hard-v0"])
def test_every_optimal_action_shortens_the_plan_by_one(env_id):
    """optimal_actions() lists the other orders TextWorld's plan allows, each checked here
    by playing it in the real interpreter (on an unpickled copy of the game)."""
    game = gym.make(env_id).unwrapped
    game.reset(seed=0)
    alternatives = 0
    while True:
        distance, optimal = game.distance_to_goal(), game.optimal_actions()
        assert len(set(optimal)) == len(optimal)
        assert set(optimal) <= set(game.admissible_actions())
        for command in optimal[1:]:
            probe = pickle.loads(pickle.dumps(game))
            _, _, terminated, _, info = probe.step(command)
            assert (info["won"] and distance == 1) or probe.distance_to_goal() == distance - 1
            alternatives += 1
        _, _, terminated, _, info = game.step(optimal[0])
        if terminated:
            break
    assert info["won"]
    assert alternatives > 0, "cooking recipes allow several orders"


def test_a_refused_reset_leaves_no_episode_to_step(tmp_path):
    """A reset whose game fails to load (a file gone bad between episodes) leaves nothing to
    play: the next step is ResetNeeded. The old game went on under the new game's id, or the
    step failed inside on the closed interpreter; and a good reset plays again."""
    files = []
    for name, folder in (("a", "coin_collector-f885672c61"), ("b", "cooking-2ceb75f2ce")):
        for suffix in ("z8", "json"):
            source = SHIPPED_TEXTWORLD_GAMES / folder / f"0.{suffix}"
            shutil.copy(source, tmp_path / f"{name}.{suffix}")
        files.append(tmp_path / f"{name}.z8")
    env = TextWorldEnv(files)
    first, _ = env.reset(seed=0)
    env.step("look")
    files[1].write_bytes(files[1].read_bytes()[:2000])  # (truncated: the load fails)
    with pytest.raises(Exception, match="truncated"):
        env.reset(seed=1)
    assert env.game_id == 0  # (the game still loaded)
    with pytest.raises(gym.error.ResetNeeded):
        env.step("look")
    assert env.reset(seed=0)[0] == first
    env.close()


def test_making_the_first_textworld_env_leaves_numpy_s_global_stream_as_it_was():
    """textworld seeds a generator of its own from ``np.random`` when first imported: the first
    TextWorld env of a process shifted a user's seeded stream. (A fresh interpreter: this
    one may have imported textworld already.)"""
    code = (
        "import sys, numpy as np, gymnasium as gym, turnbudget\n"
        "np.random.seed(123); expected = np.random.rand(); np.random.seed(123)\n"
        "env = gym.make('turnbudget/TreasureHunter-Easy-v0')\n"
        "assert 'textworld' in sys.modules\n"
        "print(np.random.rand() == expected)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "True", done.stderr


def test_a_reset_the_game_refuses_draws_nothing_from_the_wrappers_streams():
    """A TextWorld family without `num_games` refuses a seed past 32 bits, but the BudgetMix
    and error wrappers above it had already drawn their episode seeds (restarted from it):
    the next reset played other budgets and errors than a run without the refused call."""
    from turnbudget.wrappers import InjectErrors, SampleTurnBudget
    from turnbudget.wrappers._common import find_wrapper

    def streams(refuse: bool) -> list[Any]:
        env = gym.make(
            "turnbudget/CoinCollector-Easy-v0", budget_mix="uniform:5-500",
            errors={"rate": 0.5, "kinds": ["transient"]},
        )  # fmt: skip
        env.reset(seed=0)
        if refuse:
            with pytest.raises(ValueError, match="without `num_games`"):
                env.reset(seed=2**40)
        states = [
            find_wrapper(env, cls)._seeder._rng.bit_generator.state
            for cls in (SampleTurnBudget, InjectErrors)
        ]
        env.close()
        return states

    assert streams(refuse=True) == streams(refuse=False)


def test_an_error_turn_reads_a_respelt_command_as_the_command_it_plays():
    """TextWorld had no `canonical_command`: on an error's turn ``GO EAST`` was no admissible
    command (the records' spent turn, where a quiet turn played it), and a slip could
    "replace" it with ``go east``, the agent's own command."""
    replaced, played = [], []
    for repeat in range(12):
        env = gym.make("turnbudget/CoinCollector-Easy-v0", errors={"schedule": {1: "slip"}})
        _, info = env.reset(seed=0, options={"repeat": repeat})
        game = env.unwrapped
        mine = next(c for c in info["admissible_actions"] if c not in game.optimal_actions())
        assert game.canonical_command(mine.upper()) == mine
        assert game.canonical_command(f"  {mine.title()} ") == mine
        assert game.canonical_command("xyzzy") is None
        _, _, _, _, info = env.step(mine.upper())
        event = info["injected_error"]
        if event["applied"]:
            replaced.append(event["replaced_action"])
            played.append(mine)
        env.close()
    assert replaced, "some slip applied"
    assert all(r != m for r, m in zip(replaced, played, strict=True)), (replaced, played)

    env = gym.make("turnbudget/CoinCollector-Easy-v0", errors={"schedule": {1: "transient"}})
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(info["admissible_actions"][0].upper())
    assert info["valid_action"] is True  # (as on a quiet turn)
    env.close()


def test_every_admissible_command_is_a_valid_turn():
    """TextWorld lists commands that leave its move counter where it was ("examine red
    potato", "prepare meal" in Cooking), and such a turn was reported invalid: a masked
    policy, which picks only listed commands, was scored invalid turns."""
    import copy

    env = gym.make("turnbudget/Cooking-Easy-v0")
    _, info = env.reset(seed=0)
    game = env.unwrapped
    for _ in range(2):
        for command in info["admissible_actions"]:
            twin = copy.deepcopy(game)
            assert twin.step(command)[4]["valid_action"] is True, command
            twin.close()
        _, _, _, _, info = env.step(game.optimal_actions()[0])
    assert env.step("dance")[4]["valid_action"] is False
    env.close()
