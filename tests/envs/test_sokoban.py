"""Rules of Sokoban: deadlocks lose, the solver is exact, levels come from reverse play."""

from __future__ import annotations

from collections import deque

import gymnasium as gym
import numpy as np
import pytest

from turnbudget.envs.native.sokoban import CONFIGS, Sokoban
from turnbudget.envs.native.sokoban_solver import SokobanSolver, check_oracle_size

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


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_solvable_and_undoable_agree_with_the_table_along_walks_that_go_on_after_a_loss(
    difficulty,
):
    # One solver answers every state of a walk in turn, so its memo (plans found, states
    # proven lost) is reused as a game reuses it; the table of another is the truth.
    game = Sokoban(difficulty)
    rng = np.random.default_rng(5)
    answers, undone = [], 0
    for seed in range(6 if difficulty == "medium" else 2):
        game.reset(seed=seed)
        searched, exact = _fresh_solver(game), _fresh_solver(game)
        for _ in range(60):  # moves as the rules allow, without ending the game on a loss
            was_solvable = exact.distance(game._player, game._boxes) is not None
            moves = [(m, step) for step in searched.offsets if (m := game._move(step))]
            (player, boxes), step = moves[int(rng.integers(len(moves)))]
            pushed = boxes != game._boxes
            game._player, game._boxes = player, boxes
            answer = searched.solvable(player, boxes)
            assert answer == (exact.distance(player, boxes) is not None), (seed, player, boxes)
            answers.append(answer)
            if pushed and was_solvable and searched.undoable(player, boxes, step):
                assert answer, (seed, player, boxes)  # an undoable push keeps it solvable
                undone += 1
    assert True in answers and False in answers and undone > 0


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


def _open_room(width: int, height: int, boxes: int = 1) -> str:
    """An open room with the player in a corner and ``boxes`` boxes each beside its target."""
    rows = [["_"] * width for _ in range(height)]
    rows[0][0] = "@"
    for i in range(boxes):
        rows[height // 2][3 * i : 3 * i + 2] = ["$", "."]
    return "\n".join("".join(row) for row in rows)


TOO_LARGE = [
    # (what, config of Sokoban-v0 or None, level for load_level, the limit the message names)
    ("11 boxes", {"width": 5, "height": 4, "boxes": 11, "wall_blocks": 0}, _open_room(33, 3, 11),
     "at most 6 boxes"),
    ("100x100", {"width": 100, "height": 100, "boxes": 1}, _open_room(100, 100),
     "fits in 8,192 characters, got a 100x100 room"),
    ("1e6 x 1e6", {"width": 10**6, "height": 10**6, "boxes": 3}, None, "fits in 8,192"),
    ("80x80", {"width": 80, "height": 80, "boxes": 1}, _open_room(80, 80),
     "at most 20,000,000 states"),
]  # fmt: skip


@pytest.mark.timeout(60, method="thread")  # the old code ran out of memory or ran for minutes
@pytest.mark.parametrize("what, config, level, limit", TOO_LARGE, ids=[t[0] for t in TOO_LARGE])
def test_levels_too_large_for_the_oracle_or_the_observation_are_refused_before_any_work(
    what, config, level, limit
):
    """11 boxes exhausted memory (the heuristic's 11! assignments), a 100x100 room took six
    minutes for the oracle and its observation was cut: each is a clear error up front."""
    with pytest.raises(ValueError, match=limit):
        gym.make("turnbudget/Sokoban-v0", **config)
    if level is not None:
        game = Sokoban()
        game.reset(seed=0)
        before = game.render()
        with pytest.raises(ValueError, match=limit):
            game.load_level(level)
        assert game.render() == before  # the current level is kept


def test_the_oracle_size_check_is_bounded_work_whatever_the_counts():
    """Boxes are checked first, so the binomial coefficient never grows with them (the old
    guard computed C(10^12, 10^11) and never returned)."""
    with pytest.raises(ValueError, match=r"at most 6 boxes .* got 100000000000;"):
        check_oracle_size(10**12, 10**12, 10**11)
    with pytest.raises(ValueError, match="at most 500,000 ways to place the boxes"):
        check_oracle_size(10**12, 10**12, 6)
    check_oracle_size(48, 60, 3)  # a 10x8 room with 3 boxes: 17,296 x 57 states


def test_the_largest_room_that_fits_is_never_cut():
    """A room just inside the observation limit (walls, so the oracle takes it) shows whole."""
    from turnbudget.envs.core import MAX_OBSERVATION_LENGTH

    width = 86
    rows = ["#" * width] * 83 + ["@$." + "#" * (width - 3)]  # an 88x86 grid, borders added
    game = Sokoban(render_mode="ansi")
    game.reset(seed=0)
    with pytest.raises(ValueError, match="fits in 8,192"):
        game.load_level("\n".join([*rows, "#" * width]))  # one row more does not fit
    obs = game.load_level("\n".join(rows))
    assert len(obs) > MAX_OBSERVATION_LENGTH - 300 and obs.endswith("Boxes cannot be pulled.")
    obs, *_ = game.step("x" * 200)  # the longest feedback: an invalid command quoted
    assert len(obs) <= MAX_OBSERVATION_LENGTH and obs.endswith("Boxes cannot be pulled.")
    assert game.distance_to_goal() == 1
