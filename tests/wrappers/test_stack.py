"""turnbudget.make: same as stacking by hand, bad configuration fails at construction,
and the full stack on every registered env keeps the budget invariants."""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from _support import copy_shipped_textworld_games
from _wrapper_stub import STUB_ID, LineWorld
from hypothesis import given, settings
from hypothesis import strategies as st

import turnbudget
from turnbudget.wrappers import (
    InjectErrors,
    ProcessReward,
    RecordStepOutcomes,
    RevealBudget,
    SampleTurnBudget,
)
from turnbudget.wrappers.stack import STACK_ORDER


def chain(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def rollout(env: gym.Env, seed: int, n_episodes: int = 3) -> list:
    rng = np.random.default_rng(seed)
    trace = []
    for episode in range(n_episodes):
        obs, info = env.reset(seed=seed + episode)
        trace.append((obs, sorted(info)))
        done = False
        while not done:
            commands = info["admissible_actions"] or ["look"]
            action = commands[int(rng.integers(len(commands)))] if rng.random() < 0.9 else "dance"
            obs, reward, terminated, truncated, info = env.step(action)
            trace.append(
                (obs, reward, terminated, truncated, json.dumps(info, sort_keys=True, default=str))
            )
            done = terminated or truncated
    return trace


def test_make_equals_stacking_by_hand():
    options = dict(
        budget_mix="uniform:4-12", errors={"rate": 0.2}, record=True,
        process_reward={"gamma": 0.9}, reveal="final=3",
    )  # fmt: skip
    made = turnbudget.make("turnbudget/Maze-Easy-v0", **options)
    by_hand = RevealBudget(
        ProcessReward(
            RecordStepOutcomes(
                InjectErrors(
                    SampleTurnBudget(gym.make("turnbudget/Maze-Easy-v0"), "uniform:4-12"),
                    rate=0.2,
                )
            ),
            gamma=0.9,
        ),
        mode="final=3",
    )
    assert chain(made) == chain(by_hand)
    assert rollout(made, 3) == rollout(by_hand, 3)
    assert made.get_wrapper_attr("records") == by_hand.get_wrapper_attr("records")


def test_full_order_matches_the_documented_order():
    env = turnbudget.make(
        "turnbudget/Maze-Easy-v0", budget_mix=[5], errors=0.1, record=True, process_reward=True,
        reveal="always", discrete_actions=8, text_features=16,
    )  # fmt: skip
    ours = [name for name in reversed(chain(env)) if name in STACK_ORDER]
    assert ours == list(STACK_ORDER)


def test_record_shortcuts(tmp_path):
    seen = []
    path = tmp_path / "r.jsonl"
    for record in (path, str(path), seen.append, {"path": path, "record_steps": False}):
        env = turnbudget.make(STUB_ID, turn_budget=2, record=record, env_index=1)
        env.reset(seed=0)
        env.step("wait")
        env.step("wait")
    lines = path.read_text().splitlines()
    assert len(lines) == 3 + 3 + 1 and len(seen) == 3
    assert {json.loads(line)["env_index"] for line in lines} == {1}


def test_env_instance_without_a_turn_budget():
    env = turnbudget.make(LineWorld(), turn_budget=4, reveal="always")
    obs, _ = env.reset(seed=0)
    assert obs.endswith("[4 turns left]")
    with pytest.raises(ValueError, match="pass `turn_budget`"):
        turnbudget.make(LineWorld(), reveal="always")
    with pytest.raises(ValueError, match="already has a TurnBudget"):
        turnbudget.make(gym.make(STUB_ID), turn_budget=3)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"turn_budget": 0}, ValueError, "Expect `turn_budget` to be a positive int, got 0"),
        ({"turn_budget": -1}, ValueError, "got -1"),
        ({"budget_mix": []}, ValueError, "non-empty"),
        ({"budget_mix": [10, 0]}, ValueError, "positive int"),
        ({"errors": 1.5}, ValueError, r"\[0, 1\]"),
        ({"errors": -0.5}, ValueError, r"\[0, 1\]"),
        ({"errors": {"rate": 0.1, "kinds": ["lag"]}}, ValueError, "Unknown error kind 'lag'"),
        ({"errors": {"rate": 0.1, "kind": ["slip"]}}, TypeError, "kind"),
        ({"errors": "often"}, ValueError, "Unexpected `errors`"),
        ({"reveal": "sometimes"}, ValueError, "Expect `reveal`"),
        ({"reveal": "final=0"}, ValueError, "positive int"),
        ({"record": 5}, ValueError, "Unexpected `record`"),
        ({"process_reward": "yes"}, ValueError, "Unexpected `process_reward`"),
        ({"process_reward": {"gamma": 2}}, ValueError, "gamma"),
        ({"discrete_actions": 0}, ValueError, "Expect `discrete_actions`"),
        ({"text_features": -1}, ValueError, "Expect `text_features`"),
    ],
)
def test_bad_configuration_raises_before_any_episode(kwargs, error, message):
    with pytest.raises(error, match=message):
        turnbudget.make("turnbudget/Maze-Easy-v0", **kwargs)


def test_missing_oracle_is_a_construction_error():
    with pytest.raises(TypeError, match="oracle"):
        turnbudget.make(STUB_ID, make_kwargs={"oracle": False}, errors=0.1)
    with pytest.raises(TypeError, match="oracle=False"):
        turnbudget.make(STUB_ID, make_kwargs={"oracle": False}, record=True)
    turnbudget.make(
        STUB_ID, make_kwargs={"oracle": False}, record={"oracle": False}, reveal="always"
    )


# -- every registered env ----------------------------------------------------------------


def registered_ids() -> list:
    params = []
    for env_id, spec in sorted(gym.registry.items()):
        if not env_id.startswith("turnbudget/") or env_id == "turnbudget/TextWorldFile-v0":
            continue  # TextWorldFile needs a game file: it is covered by the TextWorld tests
        textworld = str(spec.kwargs.get("game_entry_point", "")).startswith(
            "turnbudget.envs.textworld"
        )
        params.append(pytest.param(env_id, textworld, id=env_id))
    return params


def check_budget_invariants(records: list[dict], steps: list[tuple]) -> None:
    """Turns never exceed T, truncation exactly at T without termination, one record per step."""
    step_records = [r for r in records if r["record"] == "step"]
    assert len(step_records) == len(steps)
    for record, (terminated, truncated, info) in zip(step_records, steps):
        assert not (terminated and truncated)
        assert record["turn"] == info["turns_used"] <= info["turn_budget"] == record["turn_budget"]
        assert truncated == (info["turns_used"] == info["turn_budget"] and not terminated)
        assert (record["terminated"], record["truncated"]) == (terminated, truncated)
    for episode in (r for r in records if r["record"] == "episode"):
        assert episode["turns_used"] <= episode["turn_budget"]


@pytest.fixture(scope="module")
def textworld_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shipped TextWorld games (game 0 of each variant): nothing to generate."""
    return copy_shipped_textworld_games(tmp_path_factory.mktemp("textworld-cache"))


@pytest.mark.parametrize(("env_id", "textworld"), registered_ids())
def test_full_stack_on_every_registered_env(env_id, textworld, request, monkeypatch):
    if textworld:
        pytest.importorskip("textworld")
        cache = request.getfixturevalue("textworld_cache")
        monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", os.fspath(cache))
    env = turnbudget.make(
        env_id, budget_mix="uniform:3-25", errors={"rate": 0.3}, record=True,
        process_reward=True, reveal="final=5",
    )  # fmt: skip
    rng = np.random.default_rng(0)
    steps = []
    n_episodes = (
        1 if textworld else 3
    )  # a TextWorld episode costs seconds, a native one microseconds
    for seed in range(n_episodes):
        obs, info = env.reset(seed=seed)
        assert env.observation_space.contains(obs)
        done = False
        while not done:
            commands = info["admissible_actions"] or ["look"]
            action = commands[int(rng.integers(len(commands)))]
            obs, reward, terminated, truncated, info = env.step(action)
            assert env.observation_space.contains(obs)
            event = info.get("injected_error")
            if event is not None and event["applied"]:
                assert event["distance_after"] is not None  # still solvable
            steps.append((terminated, truncated, info))
            done = terminated or truncated
    records = env.get_wrapper_attr("records")
    check_budget_invariants(records, steps)
    assert sum(r["record"] == "episode" for r in records) == n_episodes
    env.close()


# -- properties over random actions, budgets and error rates ------------------------------


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    budgets=st.lists(st.integers(1, 15), min_size=1, max_size=4),
    rate=st.floats(0.0, 1.0),
    kinds=st.sets(st.sampled_from(["slip", "transient", "setback"]), min_size=1),
    actions=st.lists(
        st.sampled_from(["forward", "back", "wait", "jump", "", "dance"]), min_size=1, max_size=60
    ),
)
def test_budget_and_record_invariants(seed, budgets, rate, kinds, actions):
    env = turnbudget.make(
        STUB_ID, budget_mix=budgets, errors={"rate": rate, "kinds": sorted(kinds)},
        record=True, process_reward=True, reveal="always", make_kwargs={"length": 5},
    )  # fmt: skip
    _, info = env.reset(seed=seed)
    assert info["turn_budget"] in budgets
    steps = []
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        steps.append((terminated, truncated, info))
        if terminated or truncated:
            env.reset()
    records = env.get_wrapper_attr("records")
    finished = sum(1 for _, (t, tr, _) in enumerate(steps) if t or tr)
    assert sum(r["record"] == "episode" for r in records) == finished
    # steps of the unfinished last episode are not delivered yet
    delivered = len([r for r in records if r["record"] == "step"])
    last_end = max((i for i, (t, tr, _) in enumerate(steps) if t or tr), default=-1)
    check_budget_invariants(records, steps[: last_end + 1])
    assert delivered == last_end + 1


# -- edge cases of the whole stack --------------------------------------------------------


def test_win_on_the_last_budgeted_turn_is_a_success_not_a_truncation():
    env = turnbudget.make(STUB_ID, record=True, reveal="final=1", process_reward=True,
                          make_kwargs={"length": 6, "trap": False})  # fmt: skip
    env.reset(seed=0)
    distance = env.unwrapped.distance_to_goal()
    env.reset(seed=0, options={"turn_budget": distance})
    for _ in range(distance):
        _, _, terminated, truncated, info = env.step("forward")
    assert (terminated, truncated, info["won"], info["turns_left"]) == (True, False, True, 0)
    assert info["process_reward"]["env_reward"] == 1.0
    episode = env.get_wrapper_attr("records")[-1]
    assert (
        episode["success"] and episode["first_success_turn"] == episode["turn_budget"] == distance
    )


def test_a_loss_injected_into_step_is_an_unrecovered_error_not_blamed_on_an_optimal_command():
    """The loss raises the distance (to unsolvable): an error that is never recovered. The
    command was optimal for the state the agent saw, so it is not self-inflicted (issue 9)."""

    def lose_on_turn_3(game, action):
        game.turns = getattr(game, "turns", 0) + 1
        if game.turns == 3:
            game.lost = True

    env = turnbudget.make(STUB_ID, record=True, process_reward={"gamma": 1.0},
                          make_kwargs={"on_step": lose_on_turn_3, "trap": False})  # fmt: skip
    env.reset(seed=0)
    for _ in range(3):
        _, reward, terminated, truncated, info = env.step("forward")
    assert terminated and not truncated and info["process_reward"]["potential"] == 0.0
    *steps, episode = env.get_wrapper_attr("records")
    assert steps[-1]["distance_after"] is None and steps[-1]["optimal"]
    assert steps[-1]["errors_opened"] == 1 and not steps[-1]["error_self"]
    assert not episode["success"] and episode["n_unrecovered"] == 1
    assert episode["n_errors_self"] == 0


def test_two_recorders_agree(tmp_path):
    inner = RecordStepOutcomes(InjectErrors(gym.make(STUB_ID, length=4), rate=0.3))
    outer = RecordStepOutcomes(inner, path=tmp_path / "r.jsonl")
    rollout(outer, 0)
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert lines == inner.records and len(lines) > 3


@pytest.mark.filterwarnings("ignore:.*wrapper applied to it")
def test_full_text_stack_passes_the_gymnasium_checker_and_pickles():
    import pickle

    from gymnasium.utils.env_checker import check_env

    options = dict(
        budget_mix="uniform:5-20", errors=0.2, record=True, reveal="always", process_reward=True
    )
    check_env(turnbudget.make("turnbudget/KeyQuest-Easy-v0", **options), skip_render_check=True)
    env = turnbudget.make("turnbudget/KeyQuest-Easy-v0", **options)
    env.reset(seed=0)
    env.step("look")
    copy = pickle.loads(pickle.dumps(env))
    for action in ("look", "inventory", "look"):
        a, b = env.step(action), copy.step(action)
        assert a[:4] == b[:4] and a[4].get("injected_error") == b[4].get("injected_error")


def make_recorded_sub_env(path: str, index: int):
    return lambda: turnbudget.make(
        "turnbudget/Maze-Easy-v0", budget_mix="uniform:3-12", errors=0.2, record=path,
        reveal="always", env_index=index,
    )  # fmt: skip


def test_async_sub_envs_share_one_jsonl_file(tmp_path):
    path = str(tmp_path / "shared.jsonl")
    venv = gym.vector.AsyncVectorEnv(
        [make_recorded_sub_env(path, i) for i in range(2)], shared_memory=False
    )
    _, info = venv.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(60):
        actions = [
            a[int(rng.integers(len(a)))] if len(a) else "look" for a in info["admissible_actions"]
        ]
        _, _, _, _, info = venv.step(actions)
    venv.close()
    records = [json.loads(line) for line in Path(path).read_text().splitlines()]
    episodes = [r for r in records if r["record"] == "episode"]
    assert {r["env_index"] for r in episodes} == {0, 1}
    assert len({r["episode_id"] for r in episodes}) == len(episodes)
    for index in (0, 1):  # per sub-env, every episode's steps come whole and in order before it
        own = [r for r in records if r["env_index"] == index]
        turn = 0
        for r in own:
            if r["record"] == "step":
                turn += 1
                assert r["turn"] == turn
            else:
                assert r["turns_used"] == turn <= r["turn_budget"]
                turn = 0


@settings(max_examples=40, deadline=None)
@given(actions=st.lists(st.text(max_size=300), min_size=1, max_size=20), seed=st.integers(0, 10**6))
def test_hostile_commands_never_crash_the_full_stack(actions, seed):
    env = turnbudget.make(
        "turnbudget/KeyQuest-Easy-v0", budget_mix=[5, 50], errors={"rate": 0.5}, record=True,
        process_reward=True, reveal="always",
    )  # fmt: skip
    env.reset(seed=seed)
    for action in actions:
        obs, _, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            env.reset()
    assert all(json.dumps(r) for r in env.get_wrapper_attr("records"))


def test_numpy_numbers_are_the_shortcuts_python_numbers_are():
    """`discrete_actions=np.int64(8)` and `text_features=np.int64(64)` were refused as
    "Unexpected", while `{"size": np.int64(64)}` was taken: a NumPy scalar is the number."""
    import numpy as np

    def first(**options):
        env = turnbudget.make("turnbudget/Maze-Easy-v0", **options)
        obs, _ = env.reset(seed=3)
        step = env.step(0 if "discrete_actions" in options else "look")
        return obs, (step[1], step[2], step[4].get("injected_error"))

    for numpy_value, options in (
        (dict(discrete_actions=np.int64(8)), dict(discrete_actions=8)),
        (dict(discrete_actions=8, text_features=np.int64(64)), dict(discrete_actions=8, text_features=64)),
        (dict(errors=np.float32(0.5)), dict(errors=0.5)),
    ):  # fmt: skip
        (obs_a, step_a), (obs_b, step_b) = first(**numpy_value), first(**options)
        assert np.array_equal(obs_a, obs_b) if not isinstance(obs_a, str) else obs_a == obs_b
        assert step_a == step_b


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reveal": "maybe"}, "Expect `reveal` to be one of"),
        ({"reveal": "final=x"}, "Expect k in `reveal`='final=k' to be a positive int"),
        ({"discrete_actions": 0}, "Expect `discrete_actions` to be a positive int"),
        ({"text_features": 65}, "Expect `text_features` to be a multiple of 2"),
    ],
)
def test_a_bad_option_value_is_named_as_the_option_given(kwargs, message):
    """A value given as an option (``reveal="maybe"``) was refused in the words of the wrapper
    it configures ('Expect `mode` to be one of ...'), a name the caller never passed; through
    gym.make too. (Given as the wrapper's keyword arguments, its own names stay.)"""
    for make in (turnbudget.make, gym.make):
        with pytest.raises(ValueError, match=message):
            make("turnbudget/Maze-Easy-v0", **kwargs)
    with pytest.raises(ValueError, match="Expect `mode` to be one of"):
        turnbudget.make("turnbudget/Maze-Easy-v0", reveal={"mode": "maybe"})
