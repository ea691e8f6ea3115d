"""The team oracles: exact on hand-made instances and against brute force; the oracle team wins."""

from __future__ import annotations

import copy
from collections import deque

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from turnbudget.multiagent import race_v0, vault_v0
from turnbudget.multiagent.worlds.race import RaceWorld
from turnbudget.multiagent.worlds.vault import VaultWorld

DIFFICULTIES = ("easy", "medium", "hard")


def _corridor(n: int) -> list[dict[str, int]]:
    """Rooms 0..n-1 in a row, west to east."""
    exits: list[dict[str, int]] = [{} for _ in range(n)]
    for i in range(n - 1):
        exits[i]["east"], exits[i + 1]["west"] = i + 1, i
    return exits


# -- Vault -----------------------------------------------------------------------------------


def _vault_brute_force(world: VaultWorld, limit: int = 20) -> int | None:
    """Shortest number of rounds to a win over every joint admissible command, by the real rules."""
    start = copy.deepcopy(world)
    queue = deque([(start, 0)])
    seen = {start._state()}
    while queue:
        state, depth = queue.popleft()
        if depth >= limit:
            continue
        for runner in state.admissible("runner"):
            for operator in state.admissible("operator"):
                nxt = copy.deepcopy(state)
                nxt.play_round({"runner": runner, "operator": operator})
                if nxt.over:
                    return depth + 1
                if nxt._state() not in seen:
                    seen.add(nxt._state())
                    queue.append((nxt, depth + 1))
    return None


def test_vault_hand_made_door_next_to_start_costs_a_round_of_radio():
    # 0 -[red 1234]- 1 - 2 (vault): the code cannot be used before round 2.
    world = VaultWorld.from_layout(
        _corridor(3), start=0, vault=2, doors=[(0, "east", "red", "1234")]
    )
    assert world.distance_to_goal() == 4  # wait (operator says), enter, go, go
    assert world.optimal_actions("operator") == ["say red 1234"]
    assert world.optimal_actions("runner") == ["look", "wait"]
    plan = world.joint_plan()
    assert len(plan) == 4
    assert plan[0]["operator"] == "say red 1234"
    assert [p["runner"] for p in plan[1:]] == ["enter 1234", "go east", "go east"]


def test_vault_hand_made_far_doors_cost_no_waiting():
    # Two doors far enough from the start that both codes arrive in time.
    doors = [(2, "east", "red", "1111"), (4, "east", "blue", "2222")]
    world = VaultWorld.from_layout(_corridor(6), start=0, vault=5, doors=doors)
    assert world.distance_to_goal() == 7  # 5 moves + 2 doors
    # Two adjacent doors right at the start: one round of radio each before the second.
    doors = [(0, "east", "red", "1111"), (1, "east", "blue", "2222")]
    world = VaultWorld.from_layout(_corridor(4), start=0, vault=3, doors=doors)
    assert world.distance_to_goal() == 6  # wait, enter, go, enter, go, go
    assert world.distance_to_goal() == _vault_brute_force(world)


@pytest.mark.parametrize("seed", range(8))
def test_vault_distance_matches_brute_force(seed):
    world = VaultWorld("easy")
    world.generate(np.random.default_rng(seed))
    assert world.distance_to_goal() == _vault_brute_force(world)


def test_vault_message_carries_one_code():
    world = VaultWorld.from_layout(
        _corridor(4), start=0, vault=3,
        doors=[(0, "east", "red", "1111"), (1, "east", "blue", "2222")],
    )  # fmt: skip
    feedback = world.play_round({"runner": "wait", "operator": "say red 1111 and blue 2222"})
    assert "static" in feedback["operator"]
    assert world._heard == frozenset({"1111"})
    assert 'Radio: "red 1111 and blue ####"' in world.describe("runner")


@pytest.mark.parametrize(
    "message, heard",
    [
        ("11112222", "1111####"),  # two codes run together
        ("1 1 1 1 2 2 2 2", "1 1 1 1 # # # #"),  # or spelt digit by digit
        ("1-1-1-1, then 2222", "#-#-#-#, then 2222"),  # the first four-digit code wins
        ("door 2: 2222", "door #: 2222"),
    ],
)
def test_vault_message_carries_no_second_code_in_other_spellings(message, heard):
    """Only a second four-digit code was static: "11112222" carried both codes, and so did
    the digits spelt one by one."""
    world = VaultWorld.from_layout(
        _corridor(4), start=0, vault=3,
        doors=[(0, "east", "red", "1111"), (1, "east", "blue", "2222")],
    )  # fmt: skip
    feedback = world.play_round({"runner": "wait", "operator": f"say {message}"})
    assert "static" in feedback["operator"]
    assert f'Radio: "{heard}"' in world.describe("runner")


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_vault_oracle_team_wins_within_budget(difficulty):
    for seed in range(20):
        env = vault_v0.parallel_env(difficulty=difficulty)
        _, infos = env.reset(seed=seed)
        game = env.unwrapped
        distance = game.distance_to_goal()
        rounds = 0
        while env.agents:
            before = game.distance_to_goal()
            actions = {a: game.optimal_actions(a)[0] for a in env.agents}
            _, rewards, terminations, truncations, infos = env.step(actions)
            rounds += 1
            assert all(info["valid_action"] for info in infos.values())
            if not any(terminations.values()):
                assert game.distance_to_goal() == before - 1
        assert all(terminations.values()) and not any(truncations.values()), (difficulty, seed)
        assert rewards == {"operator": 1.0, "runner": 1.0}
        assert rounds == distance <= vault_v0.DEFAULT_BUDGETS[difficulty]


def test_vault_progress_counts_open_route_doors_not_the_oracle_distance():
    """The operator's ``info["progress"]`` is the share of the route's coded doors that stand
    open, never 1 - d/d0 (issue 21); the runner's is 0 until won (it does not know the route)."""
    doors = [(2, "east", "red", "1111"), (4, "east", "blue", "2222")]
    world = VaultWorld.from_layout(_corridor(6), start=0, vault=5, doors=doors)
    seen = []
    while not world.over:
        world.play_round({a: world.optimal_actions(a)[0] for a in ("operator", "runner")})
        seen.append((world.progress("runner"), world.progress("operator")))
    assert [p for _, p in seen] == [0, 0, 1 / 3, 1 / 3, 1 / 3, 2 / 3, 1.0]  # per door entered
    assert [p for p, _ in seen] == [0, 0, 0, 0, 0, 0, 1.0]


def test_vault_runner_progress_does_not_tell_route_doors_from_decoys():
    """The runner entering every code it hears learned from its progress which doors were on
    the route (a decoy left it unchanged, a route door raised it): the operator's knowledge."""
    exits = [{"east": 1, "south": 3}, {"west": 0, "east": 2}, {"west": 1}, {"north": 0}]
    doors = [(0, "east", "green", "1111"), (0, "south", "red", "2222")]  # green: route; red: decoy
    world = VaultWorld.from_layout(exits, start=0, vault=2, doors=doors, difficulty="medium")
    world.play_round({"operator": "say red 2222", "runner": "wait"})
    world.play_round({"operator": "say green 1111", "runner": "enter 2222"})
    after_decoy = world.progress("runner")
    world.play_round({"operator": "wait", "runner": "enter 1111"})
    assert world.progress("runner") == after_decoy == 0.0
    assert world.progress("operator") == 0.5


# -- Race ------------------------------------------------------------------------------------


def _race_key(world: RaceWorld) -> tuple:
    return (
        tuple(world._room.values()), tuple(world._where), tuple(world._holder),
        world._round % 2, tuple(tuple(k) for k in world._known.values()),
    )  # fmt: skip


def _race_brute_force(world: RaceWorld, role: str, limit: int = 14) -> int | None:
    """Shortest win for ``role`` over all its admissible commands, the rival playing the house policy."""
    rival = world._other(role)
    queue = deque([(copy.deepcopy(world), 0)])
    seen = {_race_key(world)}
    while queue:
        state, depth = queue.popleft()
        if depth >= limit:
            continue
        house = state.house_action(rival)
        for command in state.admissible(role):
            nxt = copy.deepcopy(state)
            nxt.play_round({role: command, rival: nxt.parse(rival, house)})
            if nxt.over:
                if nxt.won(role):
                    return depth + 1
                continue
            if _race_key(nxt) not in seen:
                seen.add(_race_key(nxt))
                queue.append((nxt, depth + 1))
    return None


def _line_race() -> RaceWorld:
    # 0 - 1 - 2 - 3 - 4, the workbench in the middle, a single iron at room 1.
    return RaceWorld.from_layout(
        _corridor(5), bench=2, starts={"player_0": 0, "player_1": 4},
        recipes={"player_0": ("iron", "wood"), "player_1": ("iron", "clay")},
        copies=[("iron", 1), ("wood", 0), ("clay", 3)],
    )  # fmt: skip


def test_race_hand_made_best_response():
    world = _line_race()
    # player_0: take wood, go east, take iron (round 3), go east, craft = 5 rounds. The house
    # player_1's solo tour (clay first) would take the iron only at round 5: it is blocked.
    assert world.distance_to_goal("player_0") == 5
    assert world.optimal_actions("player_0") == ["take wood"]
    assert len(world.joint_plan("player_0")) == 5
    # player_1 reaches the iron at round 4 at the earliest; the house player_0 takes it at
    # round 3 and crafts at round 5: player_1 cannot win.
    assert world.distance_to_goal("player_1") is None
    for role in world.roles:
        assert world.distance_to_goal(role) == _race_brute_force(world, role)


@pytest.mark.parametrize("seed", range(8))
def test_race_distance_matches_brute_force(seed):
    world = RaceWorld("easy")
    world.generate(np.random.default_rng(seed))
    for role in world.roles:
        assert world.distance_to_goal(role) == _race_brute_force(world, role), (seed, role)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_race_best_response_beats_the_house_within_budget(difficulty):
    for seed in range(20):
        for focal in ("player_0", "player_1"):
            env = race_v0.parallel_env(difficulty=difficulty)
            env.reset(seed=seed)
            game = env.unwrapped
            rival = "player_1" if focal == "player_0" else "player_0"
            distance = game.distance_to_goal(focal)
            rounds = 0
            while env.agents:
                actions = {focal: game.optimal_actions(focal)[0], rival: game.house_action(rival)}
                _, rewards, terminations, truncations, _ = env.step(actions)
                rounds += 1
            assert rewards[focal] == 1.0 and not any(truncations.values()), (
                difficulty,
                seed,
                focal,
            )
            assert rounds == distance <= race_v0.DEFAULT_BUDGETS[difficulty]


def test_a_runner_setback_never_carries_the_runner_past_a_door_slammed_behind_it():
    """The runner was escorted to any visited room no closer by depth: after an operator's
    setback shut a door the runner had walked through, away from the vault, the runner's
    setback could put it back beyond that door, saving the code and the ``enter`` (4 -> 2)."""
    exits = [{"south": 1}, {"north": 0, "south": 2, "east": 3}, {"north": 1}, {"west": 1}]
    world = VaultWorld.from_layout(exits, start=3, vault=0, doors=[(1, "south", "red", "1234")])
    for commands in (
        {"runner": "go west", "operator": "say red 1234"},
        {"runner": "enter 1234", "operator": "wait"},
        {"runner": "go south", "operator": "wait"},
    ):
        world.step(commands)
    world.inject_setback("operator", np.random.default_rng(0))
    before = world.distance_to_goal()
    for seed in range(20):
        trial = copy.deepcopy(world)
        trial.inject_setback("runner", np.random.default_rng(seed))
        assert trial.distance_to_goal() >= before == 4, seed


@pytest.mark.parametrize("name", ["race_v0", "vault_v0"])
def test_setbacks_never_shorten_the_task(name):
    module = race_v0 if name == "race_v0" else vault_v0
    for seed in range(10):
        env = module.parallel_env(difficulty="medium")
        env.reset(seed=seed)
        game = env.unwrapped
        rng = np.random.default_rng(seed)
        for _ in range(6):
            if not env.agents:
                break
            for agent in env.agents:
                before = game.distance_to_goal(agent)
                if before is None:
                    continue
                narration = game.inject_setback(agent, rng)
                after = game.distance_to_goal(agent)
                assert narration and after is not None and after >= before, (seed, agent)
            actions = {a: (env.unwrapped.world.admissible(a) or ["wait"])[0] for a in env.agents}
            env.step(actions)
