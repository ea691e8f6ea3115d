"""The stack through Gymnasium's own door: gym.make options, numeric info, one turn limit.

What RL libraries need without importing them (the `compat` suite runs the real
ones): ``gym.make(id, **options)`` builds `turnbudget.make`'s stack,
``max_episode_steps`` becomes the turn budget, ``info`` stacks in vector envs,
and DiscreteActions takes the number types their samplers send.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import TimeLimit

import turnbudget
from turnbudget.wrappers import (
    BudgetMix,
    DiscreteActions,
    InjectErrors,
    SampleTurnBudget,
    TextFeatures,
    TurnBudget,
)
from turnbudget.wrappers._common import find_wrapper
from turnbudget.wrappers.stack import absorb_time_limit
from turnbudget.wrappers.text_features import FEATURE_HIGH, hashed_ngrams

MAZE = "turnbudget/Maze-Easy-v0"
FULL = {
    "budget_mix": [4, 9],
    "errors": 0.3,
    "record": True,
    "process_reward": True,
    "reveal": "final=2",
    "discrete_actions": 6,
    "text_features": 16,
}


def chain(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def play(env: gym.Env, seed: int, steps: int = 40) -> list:
    """A seeded random rollout over the admissible indices; returns what it saw."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    trace = [(obs.tolist(), {k: np.asarray(v).tolist() for k, v in info.items()})]
    for _ in range(steps):
        mask = info["action_mask"]
        action = int(rng.choice(np.flatnonzero(mask))) if mask.any() else 0
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((obs.tolist(), float(reward), terminated, truncated,
                      {k: np.asarray(v).tolist() for k, v in info.items()}))  # fmt: skip
        if terminated or truncated:
            obs, info = env.reset()
    return trace


# -- gym.make builds turnbudget.make's stack --------------------------------------------


def test_gym_make_options_build_the_same_stack_as_turnbudget_make():
    by_gym = gym.make(MAZE, **FULL)
    by_make = turnbudget.make(MAZE, **FULL)
    assert chain(by_gym) == chain(by_make)
    assert chain(by_gym)[:3] == ["NumericInfo", "TextFeatures", "DiscreteActions"]
    assert play(by_gym, 3) == play(by_make, 3)


def test_module_prefixed_ids_build_the_same_stack():
    # "turnbudget:<id>" is how fresh worker processes reach the ids (they import the package).
    by_prefix = turnbudget.make(f"turnbudget:{MAZE}", text_features=8, reveal="always")
    assert chain(by_prefix) == chain(gym.make(MAZE, text_features=8, reveal="always"))


def test_the_spec_recreates_the_stack():
    env = gym.make(MAZE, discrete_actions=5, text_features=8, reveal="always")
    again = gym.make(env.spec)
    assert chain(again) == chain(env)
    assert play(again, 1, 15) == play(env, 1, 15)


@pytest.mark.parametrize(
    ("override", "built"),
    [
        ({"turn_budget": 12}, {"turn_budget": 12, "actions": 4, "errors": False}),
        ({"discrete_actions": 6}, {"turn_budget": 7, "actions": 6, "errors": False}),
        ({"errors": 0.5}, {"turn_budget": 7, "actions": 4, "errors": True}),
        ({"max_episode_steps": 3}, {"turn_budget": 3, "actions": 4, "errors": False}),
    ],
    ids=["turn_budget", "discrete_actions", "errors", "max_episode_steps"],
)
def test_the_spec_with_overrides_builds_what_they_describe(override, built):
    """``gym.make(env.spec, **overrides)``, Gymnasium's way to change a spec: the stack follows
    the overrides, and its spec says what it is. Gymnasium's own spec listed the wrappers built
    with their old arguments: each override changed the spec's kwargs and nothing else, and
    ``max_episode_steps=3`` put a TimeLimit under a TurnBudget still counting to 7."""
    base = gym.make(MAZE, turn_budget=7, discrete_actions=4)
    env = gym.make(base.spec, **override)
    budget = find_wrapper(env, TurnBudget)
    assert budget.default_turn_budget == built["turn_budget"] == env.spec.max_episode_steps
    assert env.spec.kwargs["turn_budget"] == built["turn_budget"]
    assert env.action_space == gym.spaces.Discrete(built["actions"])
    assert ("InjectErrors" in chain(env)) is built["errors"]
    assert "TimeLimit" not in chain(env)
    env.reset(seed=0)
    for turn in range(1, built["turn_budget"] + 1):
        *_, terminated, truncated, info = env.step(0)
        assert info["turns_left"] == built["turn_budget"] - turn
    assert truncated or terminated
    assert chain(gym.make(env.spec)) == chain(env)  # (and its own spec recreates it)


@pytest.mark.parametrize(
    "options",
    [
        {"budget_mix": "uniform:3-9"},
        {"budget_mix": [4, 11], "errors": 0.2},
        {"budget_mix": {4: 1, 8: 3}, "errors": {"schedule": {2: "slip"}}},
        FULL,
        # (NumPy numbers, as a sweep over np.arange gives them: the spec was no JSON)
        {"budget_mix": [np.int64(4), 8], "errors": np.float32(0.25)},
        {"errors": {"rate": 0.1, "schedule": {np.int64(2): "slip"}}},
        {
            "reveal": {"mode": "final", "final_turns": np.int64(2)},
            "discrete_actions": np.int64(8),
            "text_features": 32,
        },
        {"discrete_actions": {"max_actions": np.int64(8)}, "text_features": np.int32(64)},
        # (a range, a NumPy array: accepted by the checks, and no JSON in the spec)
        {"budget_mix": range(10, 41, 10)},
        {"errors": {"rate": 0.1, "weights": np.array([1.0, 2.0, 1.0])}},
        {"record": {"budget_counts": np.array([8, 16])}},
        # (a BudgetMix object: its dataclass went into the spec, and JSON wrote its fields)
        {"budget_mix": BudgetMix.uniform(4, 9)},
        {"budget_mix": BudgetMix.choice([5, 20], [1, 3])},
        {"budget_mix": BudgetMix.log_uniform(5, 80)},
    ],
    ids=[
        "mix-string",
        "mix-list",
        "int-keys",
        "full",
        "np-mix",
        "np-key",
        "np-reveal",
        "np-features",
        "mix-range",
        "np-weights",
        "np-counts",
        "mix-object-uniform",
        "mix-object-weighted",
        "mix-object-loguniform",
    ],
)
def test_the_spec_goes_through_json_and_recreates_the_stack(options):
    """A spec stored as JSON (``to_json`` / ``from_json``) makes the same stack: a BudgetMix's
    spec held the parsed object, which JSON turned into a dict the way back refused, and the
    int keys of a ``{T: weight}`` mix or an error schedule come back as strings ("4")."""
    env = gym.make(MAZE, **options)
    again = gym.make(gym.envs.registration.EnvSpec.from_json(env.spec.to_json()))
    assert chain(again) == chain(env)
    assert again.spec.to_json() == env.spec.to_json()
    if "discrete_actions" in options:
        assert play(again, 2, 20) == play(env, 2, 20)


@pytest.mark.parametrize("mix", [[5, 6], BudgetMix.uniform(3, 9)], ids=["list", "object"])
def test_the_spec_of_a_stack_built_around_an_env_goes_through_json(mix):
    """`turnbudget.make(env, budget_mix=...)` recorded the parsed mix in its wrapper's spec,
    a list given included: JSON wrote the dataclass's fields, and the way back refused."""
    env = turnbudget.make(gym.make(MAZE, errors=0.1), budget_mix=mix)
    again = gym.make(gym.envs.registration.EnvSpec.from_json(env.spec.to_json()))
    assert chain(again) == chain(env)


def test_a_spec_recording_to_a_path_is_json(tmp_path):
    env = gym.make(MAZE, record=tmp_path / "steps.jsonl")
    again = gym.make(gym.envs.registration.EnvSpec.from_json(env.spec.to_json()))
    assert again.spec.kwargs["record"] == str(tmp_path / "steps.jsonl")
    assert chain(again) == chain(env)
    again.close()
    env.close()


def test_a_spec_recreates_a_mixed_stack_of_a_game_with_no_default_budget():
    """A TextWorld game has no default budget, and a mixed stack's spec names no
    turn_budget: gym.make(env.spec) and make_vec(env.spec) were "has no default budget"."""
    env = gym.make("turnbudget/CoinCollector-Easy-v0", budget_mix=[5, 10])
    again = gym.make(env.spec)
    assert chain(again) == chain(env)
    assert {again.reset(seed=s)[1]["turn_budget"] for s in range(12)} == {5, 10}
    vector = gym.make_vec(env.spec, num_envs=2)
    vector.close()
    again.close()
    env.close()


def test_a_taken_over_time_limit_is_the_spec_s_budget():
    env = turnbudget.make(TimeLimit(gym.make(MAZE, turn_budget=20), max_episode_steps=6))
    assert env.spec.max_episode_steps == env.spec.kwargs["turn_budget"] == 6
    again = gym.make(env.spec)
    assert find_wrapper(again, TurnBudget).default_turn_budget == 6
    assert "TimeLimit" not in chain(again)


def test_gym_make_vec_builds_the_stack_and_stacks_numeric_info():
    envs = gym.make_vec(MAZE, num_envs=2, discrete_actions=6, text_features=32, budget_mix=[4, 9])
    obs, info = envs.reset(seed=0)
    assert obs.shape == (2, 32) and info["action_mask"].shape == (2, 6)
    for _ in range(12):
        obs, _, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert not (terminated & truncated).any()
        for key in ("won", "valid_action", "turns_left", "sampled_turn_budget"):
            assert info[key].dtype != object and info[key].shape == (2,), key
    envs.close()


def test_bad_options_through_gym_make_fail_before_the_game_is_built():
    with pytest.raises(ValueError, match="Expect `discrete_actions` to be a positive int"):
        gym.make(MAZE, discrete_actions=0)
    with pytest.raises(ValueError, match="`info`"):
        gym.make(MAZE, info="bytes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'discrete_action'"):
        gym.make(MAZE, discrete_action=8)


def test_unknown_kwargs_use_pythons_wording_so_clients_can_retry():
    # TorchRL's GymEnv passes frameskip and drops it when the error says this.
    with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'"):
        gym.make(MAZE, frameskip=1)


# -- numeric info -----------------------------------------------------------------------


def test_numeric_info_is_fixed_shape_numpy_on_every_reset_and_step():
    env = gym.make(MAZE, **FULL)
    space = env.get_wrapper_attr("info_space")
    assert set(space.spaces) == {
        "won", "lost", "progress", "valid_action", "turn_budget", "turns_used", "turns_left",
        "sampled_turn_budget", "injected_error_kind", "env_reward", "shaping",
        "budget_visible", "action_mask",
    }  # fmt: skip
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    kinds = set()
    for _ in range(200):
        assert set(info) == set(space.spaces) and space.contains(info), info
        assert all(isinstance(v, np.ndarray) for v in info.values())
        kinds.add(int(info["injected_error_kind"]))
        _, _, terminated, truncated, info = env.step(int(rng.integers(6)))
        if terminated or truncated:
            assert space.contains(info)
            _, info = env.reset()
    assert -1 in kinds and len(kinds) > 1  # errors fired and were reported


def test_info_modes_default_to_the_observation():
    assert "admissible_actions" in gym.make(MAZE, discrete_actions=4).reset(seed=0)[1]
    assert "admissible_actions" not in gym.make(MAZE, text_features=8).reset(seed=0)[1]
    _, info = gym.make(MAZE, text_features=8, discrete_actions=4, info="text").reset(seed=0)
    assert info["text_observation"] and info["action_commands"]
    _, info = turnbudget.make(MAZE, discrete_actions=4, info="numeric").reset(seed=0)
    assert info["won"].dtype == np.bool_ and "action_commands" not in info


# -- one owner for the turn limit -----------------------------------------------------------


def win_in(env: gym.Env, seed: int) -> tuple[bool, bool, dict]:
    """Play the oracle's plan; return the last step's flags and info."""
    env.reset(seed=seed)
    while True:
        command = env.unwrapped.optimal_actions()[0]
        _, _, terminated, truncated, info = env.step(command)
        if terminated or truncated:
            return terminated, truncated, info


@pytest.mark.parametrize("extra", [{}, {"reveal": "always", "record": True}])
def test_max_episode_steps_becomes_the_turn_budget(extra):
    probe = gym.make(MAZE)
    probe.reset(seed=4)
    distance = probe.unwrapped.distance_to_goal()
    env = gym.make(MAZE, max_episode_steps=distance, **extra)
    assert "TimeLimit" not in chain(env) and env.spec.max_episode_steps == distance
    assert find_wrapper(env, TurnBudget).default_turn_budget == distance
    terminated, truncated, info = win_in(env, 4)  # the win comes on the last turn
    assert (terminated, truncated, info["won"], info["turns_left"]) == (True, False, True, 0)
    env.reset(seed=4)
    for _ in range(distance):
        _, _, terminated, truncated, info = env.step("look")
    assert (terminated, truncated, info["turns_left"]) == (False, True, 0)
    again = gym.make(env.spec)
    assert again.reset(seed=0)[1]["turn_budget"] == distance and "TimeLimit" not in chain(again)


def test_max_episode_steps_in_make_vec_and_conflicts():
    envs = gym.make_vec(MAZE, num_envs=2, max_episode_steps=3)
    _, info = envs.reset(seed=0)
    assert info["turn_budget"].tolist() == [3, 3]
    envs.close()
    assert gym.make(MAZE, turn_budget=7, max_episode_steps=7).reset(seed=0)[1]["turn_budget"] == 7
    with pytest.raises(ValueError, match="turn_budget=7 and max_episode_steps=5"):
        gym.make(MAZE, turn_budget=7, max_episode_steps=5)
    with pytest.raises(ValueError, match="budget_mix"):
        gym.make(MAZE, budget_mix=[3, 4], max_episode_steps=5)


def test_an_outer_time_limit_is_taken_over_by_turnbudget_make():
    probe = gym.make(MAZE)
    probe.reset(seed=2)
    distance = probe.unwrapped.distance_to_goal()
    limited = TimeLimit(gym.make(MAZE), max_episode_steps=distance)
    # Gymnasium's TimeLimit alone sets both flags on a win on its last step...
    assert win_in(limited, 2)[:2] == (True, True)
    # ...so hand the env to turnbudget.make (or absorb_time_limit): one limit, one owner.
    env = turnbudget.make(TimeLimit(gym.make(MAZE), max_episode_steps=distance), reveal="always")
    assert "TimeLimit" not in chain(env)
    terminated, truncated, info = win_in(env, 2)
    assert (terminated, truncated, info["turn_budget"]) == (True, False, distance)
    assert chain(absorb_time_limit(TimeLimit(gym.make(MAZE), 5))) == chain(gym.make(MAZE))
    with pytest.raises(ValueError, match="no TurnBudget"):
        absorb_time_limit(TimeLimit(gym.make(MAZE).unwrapped, 5))


def test_an_outer_time_limit_on_a_game_without_a_turn_budget_becomes_the_one_make_builds():
    """The docs say a TimeLimit on the outside of an env given to turnbudget.make becomes its
    budget, but an env without a TurnBudget (a game of your own) was refused, with or
    without `turn_budget`, by an error that did not say what to do."""
    from turnbudget.envs.native.maze import Maze

    env = turnbudget.make(TimeLimit(Maze(difficulty="easy"), 7), reveal="always")
    assert "TimeLimit" not in chain(env)
    assert env.reset(seed=0)[1]["turn_budget"] == 7
    for _ in range(7):
        *_, terminated, truncated, info = env.step("look")
    assert (terminated, truncated, info["turns_left"]) == (False, True, 0)
    same = turnbudget.make(TimeLimit(Maze(difficulty="easy"), 7), turn_budget=7)
    assert same.reset(seed=0)[1]["turn_budget"] == 7
    with pytest.raises(ValueError, match=r"TimeLimit \(7 steps\) and `turn_budget` \(9\)"):
        turnbudget.make(TimeLimit(Maze(difficulty="easy"), 7), turn_budget=9)


def test_an_outside_id_s_max_episode_steps_is_its_budget_unless_turn_budget_names_one():
    """An outside id registered with max_episode_steps could not go through turnbudget.make:
    its TimeLimit was refused under the TurnBudget the stack builds, with or without
    `turn_budget`, by advice `make` gave no way to follow."""
    name = "test-outside/LimitedMaze-v0"
    gym.register(name, entry_point="turnbudget.envs.native.maze:Maze", max_episode_steps=50)
    try:
        for kwargs, budget in (({}, 50), ({"turn_budget": 20}, 20)):
            env = turnbudget.make(name, errors=0.1, **kwargs)
            assert "TimeLimit" not in chain(env)
            assert env.reset(seed=0)[1]["turn_budget"] == budget
    finally:
        del gym.registry[name]


# -- the number types RL libraries send -------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [
        1,
        1.0,
        np.int8(1),
        np.uint16(1),
        np.int64(1),
        np.float32(1.0),
        np.float64(1.0),
        np.array(1),
        np.array(1.0, dtype=np.float32),
        np.array([1]),
        np.array([[1.0]]),
    ],
    ids=repr,
)
def test_discrete_actions_take_any_whole_number(action):
    env = DiscreteActions(gym.make(MAZE), max_actions=4)
    _, info = env.reset(seed=0)
    assert env.action(action) == info["action_commands"][1]
    _, _, _, _, after = env.step(action)
    assert after["valid_action"] and after["turns_used"] == 1


@pytest.mark.parametrize(
    "action",
    [
        1.5,
        np.float32(0.5),
        float("nan"),
        float("inf"),
        np.bool_(True),
        True,
        "1",
        np.array([1, 2]),
        np.array(["1"]),
        None,
        -1.0,
        np.float32(4.0),
        np.timedelta64(1),  # (a NumPy integer by class, but a duration: it played index 1)
    ],
    ids=repr,
)
def test_discrete_actions_refuse_what_is_not_an_index(action):
    env = DiscreteActions(gym.make(MAZE), max_actions=4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Discrete\(4\): a whole number"):
        env.step(action)


def test_text_features_declare_and_keep_a_finite_bound():
    env = TextFeatures(gym.make(MAZE), block_dim=8)
    assert env.observation_space.is_bounded() and env.observation_space.high.max() == FEATURE_HIGH
    huge = hashed_ngrams("north " * 100_000, dim=8)
    assert huge.max() == np.float32(FEATURE_HIGH) and env.observation_space.contains(
        np.concatenate([huge, huge])
    )


def test_a_mix_weighting_a_budget_listed_twice_draws_the_same_from_its_spec():
    """Its JSON form merged the repeated budget into a mapping: the same odds, and other
    draws under a seed from `gym.make(env.spec)` and `make_vec` (the review's case)."""
    env = turnbudget.make(MAZE, budget_mix=BudgetMix.choice([10, 20, 10], weights=[1, 2, 1]))
    again = gym.make(env.spec)
    draws = [[e.reset(seed=s)[1]["turn_budget"] for s in range(12)] for e in (env, again)]
    assert draws[0] == draws[1] and set(draws[0]) == {10, 20}


def test_a_stack_built_around_an_env_or_by_hand_has_a_json_spec_that_rebuilds_it(tmp_path):
    """Options given as NumPy scalars, a range or a Path became plain JSON on the id's route
    only: around an env object, or with a wrapper built by hand, the spec kept them raw and
    its to_json() failed."""
    import pathlib

    import numpy as np
    from gymnasium.envs.registration import EnvSpec

    import turnbudget
    from turnbudget.wrappers import DiscreteActions, InjectErrors, SampleTurnBudget

    game = "turnbudget/Maze-Easy-v0"
    builds = [
        lambda: turnbudget.make(gym.make(game), discrete_actions=np.int64(8)),
        lambda: turnbudget.make(gym.make(game), record=pathlib.Path(tmp_path / "r.jsonl")),
        lambda: turnbudget.make(gym.make(game), reveal={"mode": "final", "final_turns": np.int64(2)}),
        lambda: turnbudget.make(gym.make(game), errors={"rate": 0.2, "schedule": {np.int64(2): "slip"}}),
        lambda: SampleTurnBudget(gym.make(game), budget_mix=range(5, 9)),
        lambda: SampleTurnBudget(gym.make(game), budget_mix=[np.int64(5), 7]),
        lambda: InjectErrors(gym.make(game), schedule={np.int64(2): "slip"}),
        lambda: DiscreteActions(gym.make(game), max_actions=np.int64(8)),
    ]  # fmt: skip
    for build in builds:
        env = build()
        again = gym.make(EnvSpec.from_json(env.spec.to_json()))
        first, second = env.reset(seed=3), again.reset(seed=3)
        assert first[0] == second[0] and first[1].get("turn_budget") == second[1].get("turn_budget")
        action = 0 if isinstance(env.action_space, gym.spaces.Discrete) else "look"
        for _ in range(3):
            step, step_again = env.step(action), again.step(action)
            assert step[0] == step_again[0]
            assert step[4].get("injected_error") == step_again[4].get("injected_error")


@pytest.mark.parametrize(
    "kwargs",
    [dict(turn_budget=30, make_kwargs={"budget_mix": [5]}), dict(make_kwargs={"turn_budget": 30}, budget_mix=[5]),
     dict(turn_budget=7, make_kwargs={"turn_budget": 9}), dict(make_kwargs={"errors": 0.2})],
    ids=["mix-inside", "budget-inside", "two-budgets", "errors-inside"],
)  # fmt: skip
def test_make_kwargs_refuses_what_make_itself_takes(kwargs):
    """make's own options given through make_kwargs skipped its checks: turn_budget=30 beside
    a budget_mix inside make_kwargs dropped the 30 silently, where make refuses the pair."""
    import turnbudget

    with pytest.raises(ValueError, match="give it to make itself"):
        turnbudget.make("turnbudget/Maze-Easy-v0", **kwargs)


@pytest.mark.parametrize("make_kwargs", [{1: 2}, {b"render_mode": "ansi"}])
def test_make_kwargs_with_a_key_no_keyword_can_be_is_refused_naming_it(make_kwargs):
    """A key that is not a str was Python's own "keywords must be strings", naming nothing."""
    import turnbudget

    with pytest.raises(ValueError, match=r"Expect `make_kwargs` to be a mapping of gym\.make"):
        turnbudget.make("turnbudget/Maze-Easy-v0", make_kwargs=make_kwargs)


class _OutsideShop:
    """An outside game's settings named as make's options are: its own, passed as given."""

    def __new__(cls, budget: int = 10, info: str = "short", **kwargs):
        from _wrapper_stub import BareLine

        game = BareLine(**kwargs)
        game.coins, game.hints = budget, info
        return game


def test_make_kwargs_of_an_outside_game_reach_it_whatever_their_names():
    import turnbudget

    gym.register("outside/Shop-v0", entry_point=_OutsideShop, max_episode_steps=20,
                 disable_env_checker=True)  # fmt: skip
    try:
        env = turnbudget.make("outside/Shop-v0", make_kwargs={"budget": 50, "info": "long"})
        assert (env.unwrapped.coins, env.unwrapped.hints) == (50, "long")
    finally:
        gym.registry.pop("outside/Shop-v0")


@pytest.mark.parametrize(
    "build",
    [
        lambda env: InjectErrors(env, schedule={range(3): "slip"}),
        lambda env: SampleTurnBudget(env, budget_mix={range(3): 1.0}),
    ],
    ids=["schedule", "mix"],
)
def test_a_key_json_cannot_write_is_named_by_the_option_s_own_check(build):
    """A range as a dict key became a list when the arguments were recorded: a TypeError
    (unhashable type) before the option's own check could name it."""
    with pytest.raises(ValueError, match="range"):
        build(gym.make("turnbudget/Maze-Easy-v0"))
