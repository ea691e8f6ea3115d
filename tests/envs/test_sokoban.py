"""Rules of Sokoban: deadlocks lose, the solver is exact, levels come from reverse play."""

from __future__ import annotations

from collections import deque

import gymnasium as gym
import numpy as np
import pytest

from turnbudget.envs.native.sokoban import CONFIGS, Sokoban
from turnbudget.envs.native.sokoban_solver import SokobanSolver

# Hand-made levels with their optimal solutions in moves, counted by hand.
KNOWN_LEVELS = [
    ("#####\n#@$.#\n#####", 1),
    ("######\n#@ $.#\n######", 2),
    ("#######\n#.  $@#\n#  #  #\n#######", 3),
    # east, push south twice (box on the bottom row), west, south, push east: 6
    ("#####\n#@  #\n# $ #\n#   #\n#  .#\n#####", 6),
    # two boxes: the top one east three times, walk (west, west, south) behind the other, push
    # it east twice: 3 + 3 + 2 (the other order costs 11, interleaving 9)
    ("#######\n#@$  .#\n#  $ .#\n#######", 8),
]


def _game_with(level: str) -> Sokoban:
    game = Sokoban("easy")
    game.reset(seed=0)
    game.load_level(level)
    return game


def _brute_force_distance(game: Sokoban) -> int | None:
    """Plain breadth-first search over (player, boxes), every move, no pruning."""
    solver = game._solver
    start = (game._player, game._boxes)
    seen = {start}
    frontier = deque([(start, 0)])
    while frontier:
        (player, boxes), d = frontier.popleft()
        if boxes == game._targets:
            return d
        for step in solver.offsets:
            nxt = player + step
            if game._walls[nxt]:
                continue
            new_boxes = boxes
            if boxes >> nxt & 1:
                beyond = nxt + step
                if game._walls[beyond] or boxes >> beyond & 1:
                    continue
                new_boxes = boxes ^ (1 << nxt | 1 << beyond)
            state = (nxt, new_boxes)
            if state not in seen:
                seen.add(state)
                frontier.append((state, d + 1))
    return None


@pytest.mark.parametrize(("level", "moves"), KNOWN_LEVELS)
def test_the_solver_distance_is_exact_on_hand_made_levels(level, moves):
    game = _game_with(level)
    assert _brute_force_distance(game) == moves
    assert game.distance_to_goal() == moves
    for _ in range(moves):
        obs, reward, terminated, truncated, info = game.step(game.optimal_actions()[0])
    assert terminated and info["won"] and reward == 1.0 and not truncated


@pytest.mark.parametrize("difficulty", ["easy", "medium"])
def test_the_solver_matches_a_brute_force_search_on_generated_levels(difficulty):
    game = Sokoban(difficulty)
    rng = np.random.default_rng(0)
    for seed in range(4):
        game.reset(seed=seed)
        for _ in range(6):  # from the start and along a random walk
            assert game.distance_to_goal() == _brute_force_distance(game)
            safe = [a for a in game.admissible_actions() if a != "look"]
            _, _, terminated, _, _ = game.step(safe[int(rng.integers(len(safe)))])
            if terminated:
                assert game.distance_to_goal() == (0 if game._won else None)
                break


@pytest.mark.parametrize("seed", [0, 1])
def test_the_solver_matches_a_brute_force_search_on_hard_levels(seed):
    game = Sokoban("hard")
    game.reset(seed=seed)
    assert game.distance_to_goal() == _brute_force_distance(game)


def _fresh_solver(game: Sokoban) -> SokobanSolver:
    """A solver of the game's level that has answered nothing yet (no table, no memo)."""
    return SokobanSolver(game._walls, game._width, game._targets)


@pytest.mark.parametrize(("difficulty", "seeds"), [("easy", 200), ("medium", 200), ("hard", 40)])
def test_generated_optimal_lengths_lie_in_the_variant_range(difficulty, seeds):
    """Generation only bounds a level's length (a replay above, a bounded search below);
    the exact solver, fresh for every level, must agree that it is in range."""
    config = CONFIGS[difficulty]
    game = Sokoban(difficulty)
    lengths = []
    for seed in range(seeds):
        game.reset(seed=seed)
        lengths.append(_fresh_solver(game).distance(game._player, game._boxes))
        assert config.min_distance <= lengths[-1] <= config.max_distance, (seed, lengths[-1])
        if difficulty == "easy":
            assert lengths[-1] == _brute_force_distance(game)
    assert len(set(lengths)) >= 5  # a spread of lengths, not one length over and over


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_the_bounded_search_agrees_with_the_exact_distance(difficulty):
    game = Sokoban(difficulty)
    rng = np.random.default_rng(1)
    checked = 0
    for seed in range(3):
        game.reset(seed=seed)
        for _ in range(4):  # from the start and along a random walk
            distance = game.distance_to_goal()
            if distance is None:
                break
            state = (game._player, game._boxes)
            assert _fresh_solver(game).within(*state, distance)
            assert not _fresh_solver(game).within(*state, distance - 1)
            checked += 1
            for _ in range(3):
                actions = [a for a in game.admissible_actions() if a != "look"]
                _, _, terminated, _, _ = game.step(actions[int(rng.integers(len(actions)))])
                if terminated:
                    break
            if terminated:
                break
    assert checked >= 6


def test_pickling_leaves_the_solver_caches_out_and_answers_the_same():
    import pickle

    game = Sokoban("medium")
    game.reset(seed=4)
    plan = []
    while not game._won:  # builds the table
        plan.append(game.optimal_actions())
        game.step(plan[-1][0])
    game.reset(seed=4)
    game.distance_to_goal()
    clone = pickle.loads(pickle.dumps(game))
    assert clone._solver._table is None and game._solver._table is not None
    for actions in plan:
        assert clone.optimal_actions() == actions
        clone.step(actions[0])
    assert clone._won


def test_a_box_pushed_against_a_wall_without_targets_ends_the_game_as_lost():
    env = gym.make("turnbudget/Sokoban-Easy-v0")
    env.reset(seed=0)
    game = env.unwrapped
    game.load_level("######\n#    #\n# $@ #\n#   .#\n######")
    assert game.distance_to_goal() == 7  # around and push south, then east twice
    obs, reward, terminated, truncated, info = env.step("go west")  # the box hits the west wall
    assert terminated and not truncated and info["lost"] and not info["won"]
    assert reward == 0.0 and "stuck" in obs and "lost" in obs
    assert game.distance_to_goal() is None and game.optimal_actions() == []
    obs, reward, terminated, truncated, info = env.step("go east")
    assert terminated and not truncated and "over" in obs


def test_every_unsolvable_push_loses_and_every_solvable_one_does_not():
    game = Sokoban("medium")
    rng = np.random.default_rng(3)
    lost = 0
    for seed in range(8):
        game.reset(seed=seed)
        for _ in range(40):
            actions = [a for a in game.admissible_actions() if a != "look"]
            _, _, terminated, _, info = game.step(actions[int(rng.integers(len(actions)))])
            exact = _brute_force_distance(game) if not info["won"] else 0
            assert info["lost"] == (exact is None)
            if terminated:
                lost += info["lost"]
                break
    assert lost > 0


def test_the_grid_legend_and_moves_are_in_the_observation():
    obs, info = Sokoban("hard").reset(seed=2)
    assert "Legend:" in obs and "go north" in obs
    grid = [line for line in obs.splitlines() if line.startswith("#")]
    assert len(grid) == 8 and all(len(line) == 9 for line in grid)  # 7x6 inside the walls
    assert sum(line.count("$") + line.count("*") for line in grid) == 3
    assert "Push every box" in info["goal"]


def test_walls_and_stuck_boxes_explain_themselves():
    game = _game_with("#######\n#@*#  #\n# $  .#\n#######")
    obs, _, _, _, info = game.step("go north")
    assert info["valid_action"] is False and "wall" in obs
    obs, _, _, _, info = game.step("go east")
    assert info["valid_action"] is False and "won't move" in obs


def test_setbacks_are_checked_with_the_solver():
    game = Sokoban("medium")
    game.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(5):
        before = game.distance_to_goal()
        narration = game.inject_setback(rng)
        assert narration and game.distance_to_goal() is not None
        assert game.distance_to_goal() >= before
    while not game._won:
        game.step(game.optimal_actions()[0])


@pytest.mark.parametrize("bad", ["", "#####\n#@$#\n#####", "####\n#@?.#\n####", "#$.#"])
def test_malformed_levels_are_clear_errors(bad):
    game = Sokoban()
    game.reset(seed=0)
    with pytest.raises(ValueError, match="Expect"):
        game.load_level(bad)


def test_a_level_too_large_to_tabulate_is_refused_at_once_not_solved_for_minutes():
    """The oracle tabulates every solvable state: a 10x10 room with 5 boxes (6.5 million
    placements) would take minutes and gigabytes, so it is a clear error on load."""
    rows = ["@" + "_" * 9, "_$__$___$_", "___##_____", "__$__$____", *["_" * 10] * 2]
    rows += ["__.._..___", "____._____", *["_" * 10] * 2]
    game = Sokoban()
    game.reset(seed=0)
    before = game.render()
    with pytest.raises(ValueError, match="at most 500,000 ways"):
        game.load_level("\n".join(rows))
    assert game.render() == before  # the current level is kept
    game.load_level("\n".join(row.replace("$", "_", 1) for row in rows).replace(".", "_", 2))


@pytest.mark.parametrize(
    "config",
    [{"width": 10, "height": 10, "boxes": 5}, {"boxes": 0}, {"width": 2, "height": 1, "boxes": 2}],
)
def test_configs_the_oracle_cannot_tabulate_are_clear_errors(config):
    with pytest.raises(ValueError, match="ways to place the boxes"):
        gym.make("turnbudget/Sokoban-v0", **config)
