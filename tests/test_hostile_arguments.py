"""Hostile arguments (issue 24): bad input is refused when made, with a clear error, or it plays.

Every keyword a user can pass (the config fields of every native game's free ``-v0``
id, the stack's options on every native id, every wrapper argument, `turnbudget.make`'s
own, the team games' factories and `make_team`) is tried with the same hostile values;
each must be refused at make time with a ``ValueError`` / ``TypeError`` that says what
is expected (and, for a ``ValueError``, stays short: it may quote the value, never repeat
a megabyte of it), or be accepted and play: reset and a few steps. Hostile reset
arguments and actions must be refused with a clear error or be a spent turn with
feedback, and leave the env usable. TextWorld ids are left out (slow to make).

The regression tests at the end pin each hole found this way; a hang of the original
code fails through the timeout marker instead of hanging the suite.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from _support import nested

import turnbudget
from turnbudget.envs.native.crafting import MAX_HEAD_START
from turnbudget.envs.native.shop import MAX_ITEMS, MAX_PRODUCTS
from turnbudget.multiagent import make_team, race_v0, vault_v0
from turnbudget.wrappers import HistoryFeatures, TurnBudget
from turnbudget.wrappers.discrete_actions import MAX_ACTIONS
from turnbudget.wrappers.history_features import MAX_FEATURES

MEGABYTE = "x" * 2**20
#: The hostile values every argument is tried with, by name.
HOSTILE = {
    "True": True, "False": False, "2.5": 2.5, "-1": -1, "0": 0, "1e6": 1e6, "10**6": 10**6,
    "nan": math.nan, "inf": math.inf, "None": None, "empty": "", "1MB": MEGABYTE,
    "list": [1, 2], "dict": {"a": 1},
    # (an Iterable whose iteration raises: "iteration over a 0-d array" named no argument)
    "0-d array": np.array(3),
    # (str() refuses an int of more than 4,300 digits: the refusal's own message failed)
    "10**5000": 10**5000,
}  # fmt: skip
_DEEP: list = []
for _ in range(5_000):  # (its repr, the refusal's message, hit the recursion limit; its copy too)
    _DEEP = [_DEEP]
HOSTILE["deep"] = _DEEP

#: Hostile commands: not strings (a TypeError), or strings (a spent turn with feedback).
NOT_STRINGS = [None, 3, 2.5, True, b"look", ["look"]]
BAD_STRINGS = [
    MEGABYTE, "look " * 200_000, "lo\x00ok", "\x1b[2J\x07look", "\ud800", "look\udfff",
    "go north " + "a" * 300, "look\n" * 50, "\u202egol", " " * 10_000, "",
]  # fmt: skip

NATIVE = [
    spec
    for spec in gym.registry.values()
    if spec.id.startswith("turnbudget/")
    and str(spec.kwargs.get("game_entry_point", "")).startswith("turnbudget.envs.native.")
]
FREE = [spec for spec in NATIVE if "difficulty" not in spec.kwargs]  # the config ids (-v0)
STACK_OPTIONS = ("turn_budget", "max_episode_steps", *turnbudget.wrappers.stack.STACK_OPTIONS)
FULL_STACK = {"errors": 0.3, "record": True, "reveal": "always", "process_reward": True,
              "budget_mix": [5, 9]}  # fmt: skip
# The sweeps reset hundreds of times: a seed whose Sokoban-Hard level is quick to build.
SEED = 7


def _refused(error: Exception, what: str) -> None:
    """A refusal says what it expected; a ValueError's message stays short."""
    message = str(error)
    assert "expect" in message.lower(), f"{what}: unclear {type(error).__name__}: {message[:300]}"
    if isinstance(error, ValueError):  # (gym.make appends every kwarg to a TypeError itself)
        assert len(message) < 1000, f"{what}: a {len(message)}-character message"


def _play(env: gym.Env, steps: int = 3) -> None:
    """Reset and a few steps, each observation in the observation space."""
    obs, _ = env.reset(seed=SEED)
    assert env.observation_space.contains(obs)
    for _ in range(steps):
        action = 0 if isinstance(env.action_space, gym.spaces.Discrete) else "look"
        obs, _, terminated, truncated, _ = env.step(action)
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            env.reset()


def _refused_or_plays(what: str, make, *args, **kwargs) -> None:
    """``make(*args, **kwargs)`` is refused clearly, or what it makes plays."""
    try:
        env = make(*args, **kwargs)
    except (ValueError, TypeError) as error:
        _refused(error, what)
    else:
        _play(env)


def _fields(spec: gym.envs.registration.EnvSpec) -> list[str]:
    game = gym.make(spec.id).unwrapped
    return [f.name for f in dataclasses.fields(game.config)] + ["difficulty", "render_mode"]


# ---------------------------------------------------------------------- what users pass


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize(
    "env_id, field",
    [(spec.id, field) for spec in FREE for field in _fields(spec)],
    ids=[f"{spec.id}-{field}" for spec in FREE for field in _fields(spec)],
)
def test_every_config_field_refuses_hostile_values_when_made_or_plays(env_id, field):
    for name, value in HOSTILE.items():
        _refused_or_plays(f"{field}={name}", gym.make, env_id, **{field: value})


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("spec", NATIVE, ids=lambda spec: spec.id)
def test_every_stack_option_refuses_hostile_values_when_made_or_plays(spec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (no hostile value may name a file, but be safe)
    for option in STACK_OPTIONS:
        for name, value in HOSTILE.items():
            _refused_or_plays(f"{option}={name}", gym.make, spec.id, **{option: value})


# Each wrapper's arguments, through the stack option that passes them (one id: the stack
# is the same on every id).
WRAPPER_ARGUMENTS = {
    "discrete_actions": ("max_actions",),
    "text_features": ("size", "block_dim", "ngrams", "include_goal", "include_admissible"),
    "errors": ("rate", "kinds", "weights", "schedule", "transient_message", "check_slips"),
    "reveal": ("mode", "final_turns", "template"),
    "process_reward": ("gamma", "potential", "scale", "unsolvable_distance",
                       "potential_at_truncation"),
    "record": ("path", "callback", "memory", "record_steps", "oracle", "env_index", "fsync"),
}  # fmt: skip
_WRAPPER_CASES = [(o, a) for o, arguments in WRAPPER_ARGUMENTS.items() for a in arguments]


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("option, argument", _WRAPPER_CASES, ids=[a for _, a in _WRAPPER_CASES])
def test_every_wrapper_argument_refuses_hostile_values_when_made_or_plays(
    option, argument, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    base = {"rate": 0.5} if option == "errors" and argument != "rate" else {}
    if option == "reveal" and argument == "final_turns":
        base = {"mode": "final"}
    for name, value in HOSTILE.items():
        kwargs = {option: {**base, argument: value}}
        what = f"{option}={{{argument!r}: {name}}}"
        _refused_or_plays(what, turnbudget.make, "turnbudget/Maze-Easy-v0", **kwargs)


def _wrapper_classes() -> list[type]:
    return [
        cls
        for cls in map(vars(turnbudget.wrappers).get, turnbudget.wrappers.__all__)
        if isinstance(cls, type) and issubclass(cls, gym.Wrapper)
    ]


def _direct_cases() -> list[tuple[type, str]]:
    return [
        (cls, name)
        for cls in _wrapper_classes()
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name not in ("self", "env") and parameter.kind is parameter.POSITIONAL_OR_KEYWORD
    ]


def _base_for(cls: type) -> gym.Env:
    """The stack ``cls`` wraps: HistoryFeatures reads DiscreteActions then TextFeatures; a
    TurnBudget wraps the game (a registered id has its budget already)."""
    if cls is TurnBudget:
        return gym.make("turnbudget/Maze-Easy-v0").unwrapped
    if cls is HistoryFeatures:
        return turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=8, text_features=64,
                               info="text")  # fmt: skip
    return gym.make("turnbudget/Maze-Easy-v0")


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize(
    "cls, argument", _direct_cases(), ids=[f"{c.__name__}-{a}" for c, a in _direct_cases()]
)
def test_every_wrapper_made_directly_refuses_hostile_values_or_plays(
    cls, argument, tmp_path, monkeypatch
):
    # (a value nested past the interpreter was a RecursionError from Gymnasium's deep copy of
    # the arguments, before the wrapper's checks: make's options were checked, the classes not)
    monkeypatch.chdir(tmp_path)
    for name, value in HOSTILE.items():
        _refused_or_plays(
            f"{cls.__name__}({argument}={name})", cls, _base_for(cls), **{argument: value}
        )


@pytest.mark.parametrize("argument", ["turn_budget", "make_kwargs"])
def test_make_refuses_hostile_budgets_and_make_kwargs_or_plays(argument):
    for name, value in HOSTILE.items():
        kwargs = {argument: value}
        _refused_or_plays(
            f"{argument}={name}", turnbudget.make, "turnbudget/Maze-Easy-v0", **kwargs
        )


def _history_features(**kwargs) -> HistoryFeatures:
    env = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=6, text_features=16,
                          info="text", reveal="always")  # fmt: skip
    return HistoryFeatures(env, **kwargs)


@pytest.mark.parametrize("argument", ["history", "command_dim", "budget"])
def test_history_features_refuses_hostile_values_when_made_or_plays(argument):
    for name, value in HOSTILE.items():
        _refused_or_plays(f"{argument}={name}", _history_features, **{argument: value})


# ---------------------------------------------------------------- resets and actions

HOSTILE_SEEDS = [True, 2.5, -1, "0", math.nan, [1], np.int64(3), 2**200]
HOSTILE_OPTIONS = [
    {"unknown": 1}, {"turn_budget": 10**12}, {"turn_budget": 2**200}, {"turn_budget": 0},
    {"turn_budget": True}, {"turn_budget": 2.0}, {"repeat": 2**200}, {"repeat": -1},
    {"repeat": "a"}, "options", [1], {MEGABYTE: 1},
]  # fmt: skip


def _reset_refused_or_plays(env: gym.Env, **arguments) -> None:
    try:
        env.reset(**arguments)
    except (ValueError, TypeError) as error:
        _refused(error, f"reset({arguments!r:.80})")
        env.reset(seed=SEED)  # usable again
    env.step("look")


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("spec", NATIVE, ids=lambda spec: spec.id)
def test_hostile_reset_arguments_are_refused_or_play_and_the_env_stays_usable(spec):
    for env in (gym.make(spec.id), turnbudget.make(spec.id, **FULL_STACK)):
        for seed in HOSTILE_SEEDS:
            _reset_refused_or_plays(env, seed=seed)
        for options in HOSTILE_OPTIONS:
            _reset_refused_or_plays(env, seed=SEED, options=options)


MISSPELT_OPTIONS = {  # a reset option spelt like a stack option: the option meant
    "turn_budgt": "turn_budget", "Turn_Budget": "turn_budget", "turnbudget": "turn_budget",
    "budget": "turn_budget", "BUDGET": "turn_budget", "T": "turn_budget", "repeats": "repeat",
    "episode": "episode_id",
}  # fmt: skip


def test_a_misspelt_stack_reset_option_is_refused_naming_the_option_meant():
    """``reset(options={"turn_budgt": 5})`` passed through as an env's own option: the episode
    played under the default budget without a word. An env's own options still pass."""
    envs = {
        "gym.make": gym.make("turnbudget/Maze-Easy-v0"),
        "stack": turnbudget.make("turnbudget/Maze-Easy-v0", **FULL_STACK),
        "team": make_team("race_v0", errors=0.5, record=True),
    }
    for where, env in envs.items():
        for key, meant in MISSPELT_OPTIONS.items():
            with pytest.raises(ValueError, match=f"did you mean '{meant}'") as error:
                env.reset(seed=0, options={key: 5})
            assert repr(key) in str(error.value), (where, str(error.value))
        for own in ({"unknown": 1}, {"t": 5}, {"budget_visible": True}, {3: 1},
                    {"turn_budget_s": 5}, {"repeat_id": 1}, {"time_budget": 5}):  # fmt: skip
            env.reset(seed=0, options=own)  # (passed through, as before)
        _, info = env.reset(seed=0, options={"turn_budget": 5})  # (usable after refusals)
        budgets = (
            [i["turn_budget"] for i in info.values()] if where == "team" else [info["turn_budget"]]
        )
        assert budgets and set(budgets) == {5}, (where, budgets)


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("spec", NATIVE, ids=lambda spec: spec.id)
def test_hostile_actions_are_a_type_error_or_a_spent_turn_and_the_env_stays_usable(spec):
    for env in (gym.make(spec.id), turnbudget.make(spec.id, **FULL_STACK)):
        _, info = env.reset(seed=SEED)
        for action in NOT_STRINGS:
            with pytest.raises(TypeError, match="Expect the action to be a str"):
                env.step(action)
        for action in BAD_STRINGS:
            used = info["turns_used"]
            obs, _, terminated, truncated, info = env.step(action)
            assert env.observation_space.contains(obs), f"{action!r:.40}"
            assert info["turns_used"] == used + 1, f"{action!r:.40}"  # a turn, spent
            assert info["valid_action"] is False and not terminated, f"{action!r:.40}"
            if truncated:
                _, info = env.reset()
        _, _, _, _, info = env.step(info["admissible_actions"][0])  # still plays
        assert info["valid_action"] is True


# ------------------------------------------------------------------------- team games

TEAM_GAMES = {"vault_v0": vault_v0, "race_v0": race_v0}


def _team_play(env) -> None:
    env.reset(seed=SEED)
    for _ in range(3):
        if not env.agents:
            env.reset()
        env.step({agent: "wait" for agent in env.agents})


def _team_refused_or_plays(what: str, make, *args, **kwargs) -> None:
    try:
        env = make(*args, **kwargs)
    except (ValueError, TypeError) as error:
        _refused(error, what)
    else:
        if hasattr(env, "agent_iter"):  # the AEC form (aec=True)
            env.reset(seed=0)
            env.step("wait")
        else:
            _team_play(env)


_TEAM_KWARGS = ["difficulty", "turn_budget", "budget_mix", "errors", "record", "reveal", "aec",
                "render_mode"]  # fmt: skip


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("game", TEAM_GAMES)
def test_make_team_refuses_hostile_values_when_made_or_plays(game, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for kwarg in _TEAM_KWARGS:
        for name, value in HOSTILE.items():
            _team_refused_or_plays(f"{kwarg}={name}", make_team, game, **{kwarg: value})
    for option, arguments in (
        ("errors", ("rate", "kinds", "weights", "schedule", "transient_message")),
        ("reveal", ("mode", "final_turns", "template")),
        ("record", ("path", "callback", "memory", "record_steps", "oracle", "env_index", "fsync")),
    ):
        for argument in arguments:
            base = {"rate": 0.5} if option == "errors" and argument != "rate" else {}
            for name, value in HOSTILE.items():
                kwargs = {option: {**base, argument: value}}
                _team_refused_or_plays(
                    f"{option}={{{argument!r}: {name}}}", make_team, game, **kwargs
                )


@pytest.mark.parametrize("game", TEAM_GAMES)
@pytest.mark.parametrize("factory", ["parallel_env", "env"])
def test_team_factories_refuse_hostile_values_when_made_or_play(game, factory):
    make = getattr(TEAM_GAMES[game], factory)
    for kwarg in ("difficulty", "turn_budget", "render_mode"):
        for name, value in HOSTILE.items():
            _team_refused_or_plays(f"{factory}({kwarg}={name})", make, **{kwarg: value})


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("game", TEAM_GAMES)
def test_team_hostile_resets_and_commands_are_refused_or_spent_and_the_env_stays_usable(game):
    env = make_team(game, errors=0.5, record=True, reveal="always")
    for seed in HOSTILE_SEEDS:
        try:
            env.reset(seed=seed)
        except (ValueError, TypeError) as error:
            _refused(error, f"reset(seed={seed!r:.40})")
            env.reset(seed=0)
        env.step({agent: "wait" for agent in env.agents})
    for options in HOSTILE_OPTIONS:
        try:
            env.reset(seed=0, options=options)
        except (ValueError, TypeError) as error:
            _refused(error, f"reset(options={options!r:.40})")
            env.reset(seed=0)
        env.step({agent: "wait" for agent in env.agents})
    for command in [*NOT_STRINGS, *BAD_STRINGS, "say " + "1234 " * 200_000]:
        env.reset(seed=0)
        _, _, _, _, infos = env.step({agent: command for agent in env.agents})
        assert all(info["valid_action"] is False for info in infos.values()), f"{command!r:.40}"
        _, _, _, _, infos = env.step({agent: "wait" for agent in env.agents})
        assert infos and all(info["turns_used"] == 2 for info in infos.values())


# -------------------------------------------------------------------- regressions


@pytest.mark.timeout(60, method="thread")  # the original drew a million items, 500 times
def test_a_crafting_head_start_past_its_limit_is_refused_when_made():
    with pytest.raises(ValueError, match=f"`max_head_start` to be at most {MAX_HEAD_START:,}"):
        gym.make("turnbudget/Crafting-v0", max_head_start=10**6)
    _play(gym.make("turnbudget/Crafting-v0", max_head_start=MAX_HEAD_START))


@pytest.mark.parametrize("count", [0, 13, 10**6])
def test_a_crafting_goal_count_outside_1_to_max_distance_is_refused_when_made(count):
    # (0: numpy's "low >= high" at reset; a million: a RuntimeError after 500 tries)
    with pytest.raises(ValueError, match=r"1 <= `max_goal_count` <= `max_distance`.*12"):
        gym.make("turnbudget/Crafting-v0", max_goal_count=count)
    _play(gym.make("turnbudget/Crafting-v0", max_goal_count=12))  # the limit itself plays


@pytest.mark.timeout(60, method="thread")  # the original built a million products per try
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"items": 10**6}, f"`items` to be from 1 to {MAX_ITEMS}"),
        ({"items": 0}, f"`items` to be from 1 to {MAX_ITEMS}"),  # (was min() of nothing)
        ({"items": 3}, r"`items` x 5 <= `max_distance`.*3 x 5 > 12"),
        ({"page_size": 0}, "`page_size` to be a positive int"),  # (was a ZeroDivisionError)
        ({"catalog": 10**6}, "<= 9,000 products .* = 1,000,004"),
        ({"near_misses": 10**6}, "<= 9,000 products .* = 1,000,041"),
        ({"catalog": MAX_PRODUCTS - 3}, "<= 9,000 products .* = 9,001"),
    ],
)
def test_a_shop_past_its_limits_is_refused_when_made(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make("turnbudget/Shop-v0", **kwargs)


def test_a_shop_of_9000_products_gives_each_its_own_code():
    """The limit is the codes p1000-p9999: a full shop still names every product apart."""
    env = gym.make("turnbudget/Shop-v0", catalog=MAX_PRODUCTS - 4, max_distance=10**4)
    env.reset(seed=0)
    game = env.unwrapped
    assert len(game._products) == MAX_PRODUCTS == len(game._by_code)


def test_a_shopping_list_at_its_limit_fits_in_one_observation():
    env = gym.make("turnbudget/Shop-v0", items=MAX_ITEMS, near_misses=0, catalog=0,
                   min_distance=5 * MAX_ITEMS, max_distance=10**4)  # fmt: skip
    obs, info = env.reset(seed=0)
    assert obs.startswith(info["goal"]) and f"({MAX_ITEMS})" in info["goal"]


@pytest.mark.parametrize("value", [10**6, 2**200])
def test_discrete_actions_past_its_limit_is_refused_when_made(value):
    # (a million: a million-entry mask every step; 2**200: an OverflowError)
    with pytest.raises(ValueError, match=f"`discrete_actions` to be at most {MAX_ACTIONS}"):
        turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=value)
    env = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=MAX_ACTIONS)
    _, info = env.reset(seed=0)
    assert info["action_mask"].shape == (MAX_ACTIONS,)


def test_history_features_past_their_limit_are_refused_when_made():
    env = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=6, text_features=16,
                          info="text")  # fmt: skip
    for kwargs in ({"history": 10**6}, {"command_dim": 10**6}):  # (was a MemoryError)
        with pytest.raises(ValueError, match=f"at most {MAX_FEATURES:,} history features"):
            HistoryFeatures(env, **kwargs)


@pytest.mark.parametrize(
    "make",
    [
        lambda: gym.make("turnbudget/Maze-Easy-v0", turn_budget=2**200, text_features=True),
        lambda: gym.make("turnbudget/Maze-Easy-v0", turn_budget=2**31),
        lambda: make_team("vault_v0", turn_budget=2**200),
        lambda: vault_v0.parallel_env(turn_budget=2**200),
    ],
)
def test_a_turn_budget_past_an_int32_is_refused_when_made(make):
    # (2**200 with NumericInfo was an OverflowError at reset; the records hold int32 counts)
    with pytest.raises(ValueError, match=r"to be at most 2,147,483,647"):
        make()


def test_a_turn_budget_option_past_an_int32_is_refused_at_reset():
    env = gym.make("turnbudget/Maze-Easy-v0", text_features=True)
    for budget in (10**12, 2**200):
        with pytest.raises(ValueError, match=r"`turn_budget` to be at most 2,147,483,647"):
            env.reset(seed=0, options={"turn_budget": budget})
    _play(env)


def test_a_max_distance_whose_budget_is_past_an_int32_is_refused_when_made():
    with pytest.raises(ValueError, match=r"`max_distance` to be at most 1,073,741,823"):
        gym.make("turnbudget/Maze-v0", max_distance=2**200)


@pytest.mark.parametrize(
    "make",
    [
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", text_features={"include_goal": v}),
        lambda v: turnbudget.make(
            "turnbudget/Maze-Easy-v0", text_features={"include_admissible": v}
        ),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", errors={"check_slips": v}),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", record={"memory": v}),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", record={"record_steps": v}),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", record={"oracle": v}),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", record={"fsync": v}),
        lambda v: make_team("vault_v0", record={"oracle": v}),
        lambda v: make_team("vault_v0", aec=v),
    ],
)
def test_a_switch_takes_true_or_false_never_a_truthy_value(make):
    # (each was bool(value): "no" switched it on, aec=2.5 returned the AEC env)
    for value in ("no", 2.5, [0]):
        with pytest.raises(ValueError, match="to be True or False, got"):
            make(value)
    make(np.bool_(False))


@pytest.mark.parametrize("field, family", [("goals", "Crafting"), ("pulls", "Sokoban")])
def test_a_config_field_that_is_not_an_int_is_not_a_keyword(field, family):
    # (goals=1 was a TypeError "object of type 'int' has no len()" at reset)
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{field}'"):
        gym.make(f"turnbudget/{family}-v0", **{field: 1})


def test_a_maze_too_small_for_its_min_distance_is_refused_when_made():
    # (a 1x4 maze has no rooms 5 apart: a RuntimeError at reset)
    with pytest.raises(ValueError, match=r"`min_distance` <= 3: no room of a 1x4 Maze"):
        gym.make("turnbudget/Maze-v0", width=1)


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: turnbudget.make(
                "turnbudget/Maze-Easy-v0", errors={"rate": 0.5, "weights": 2.5}
            ),
            "`weights` to be a sequence of numbers",
        ),  # (was "'float' object is not iterable")
        (
            lambda: turnbudget.make("turnbudget/Maze-Easy-v0", make_kwargs=1),
            "`make_kwargs` to be a mapping",
        ),  # (was "'int' object is not iterable")
        (
            lambda: turnbudget.make("turnbudget/Maze-Easy-v0", process_reward={"scale": 10**400}),
            r"`scale` to be a number in \(0.0, inf\)",
        ),  # (was an OverflowError)
        (
            lambda: turnbudget.make("turnbudget/Maze-Easy-v0", budget_mix="abc"),
            "expect 'T1,T2,...'",
        ),  # (was "invalid literal for int()")
        (
            lambda: turnbudget.make("turnbudget/Maze-Easy-v0", record={"path": True}),
            "`path` to be a file path",
        ),  # (was "expected str, bytes or os.PathLike object")
        (
            lambda: turnbudget.make("turnbudget/Maze-Easy-v0", record=""),
            "`path` to be a file path",
        ),  # (was "Cannot append records to '.'")
        (
            lambda: turnbudget.make("turnbudget/Maze-Easy-v0", reveal={"final_turns": 2}),
            "Expect `final_turns` to be None",
        ),
        (
            lambda: gym.make("turnbudget/Maze-v0", difficulty=True),
            r"`difficulty` to be one of .*, got True",
        ),  # (was "got 'true'")
    ],
)
def test_a_hostile_value_gets_an_error_that_says_what_is_expected(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "make",
    [
        lambda: gym.make("turnbudget/Maze-Easy-v0", turn_budget=MEGABYTE),
        lambda: gym.make("turnbudget/Maze-v0", difficulty=MEGABYTE),
        lambda: turnbudget.make("turnbudget/Maze-Easy-v0", reveal=MEGABYTE),
        lambda: turnbudget.make("turnbudget/Maze-Easy-v0", record=MEGABYTE),
        lambda: turnbudget.make("turnbudget/Maze-Easy-v0", budget_mix=MEGABYTE),
        lambda: make_team("vault_v0", difficulty=MEGABYTE),
    ],
)
def test_an_error_quotes_a_megabyte_value_without_repeating_it(make):
    with pytest.raises(ValueError) as error:
        make()
    assert "characters)" in str(error.value) and len(str(error.value)) < 1000


@pytest.mark.timeout(60, method="thread")
def test_an_evaluation_budget_past_an_int32_is_refused_before_it_runs():
    from turnbudget.agents import RandomAgent
    from turnbudget.eval import evaluate

    with pytest.raises(ValueError, match=r"`ts` to hold ints at most 2,147,483,647, got 2\d+"):
        evaluate("turnbudget/Maze-Easy-v0", RandomAgent(), ks=[1], ts=[5, 2**31], tasks=1)


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("turnbudget/KeyQuest-v0", dict(min_distance=100, max_distance=100)),
        ("turnbudget/Crafting-v0", dict(min_distance=500, max_distance=500)),
        ("turnbudget/Sokoban-v0", dict(min_distance=500, max_distance=500)),
    ],
)
def test_a_distance_range_no_world_reaches_is_refused_when_made(env_id, kwargs):
    """The games generate until the optimal length lies in [min_distance, max_distance]:
    a range none reaches was made, then the first reset raised RuntimeError ("widen
    [min_distance, max_distance]") where the guide promises a ValueError at make time."""
    with pytest.raises(ValueError, match=r"cannot be played: .*widen \[min_distance"):
        gym.make(env_id, **kwargs)
    env = gym.make(env_id, max_distance=kwargs["max_distance"])  # (a range that is reached)
    env.reset(seed=0)
    assert env.step("look")[0]


def test_a_setting_most_seeds_cannot_build_is_refused_when_made():
    """One world (seed 0) was generated to tell: a Sokoban that 2 of 12 seeds could build
    was made, and the other tasks' episodes were lost at their resets. Seeds 0 to 7 are
    tried now: half failing refuses the settings, fewer warn (KeyQuest-Easy at
    max_distance 6: 95 of seeds 0-99 build, 7 does not), and none failing plays every one."""
    with pytest.raises(ValueError, match=r"cannot be played: task seeds 1, 3, 4, 5 of 0 to 7"):
        gym.make("turnbudget/Sokoban-v0", difficulty="hard", wall_blocks=22)
    with pytest.warns(UserWarning, match=r"KeyQuest: task seed\(s\) 7 of 0 to 7 make no world"):
        env = gym.make("turnbudget/KeyQuest-v0", difficulty="easy", max_distance=6)
    env.reset(seed=6)
    with pytest.raises(ValueError, match="widen"):
        env.reset(seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make("turnbudget/Sokoban-v0", difficulty="hard", wall_blocks=15)
    for seed in range(8):
        env.reset(seed=seed)


@pytest.mark.parametrize(
    "options",
    [
        {"budget_mix": nested(5_000)},
        {"errors": {"rate": nested(5_000)}},
        {"reveal": {"template": nested(5_000)}},
        {"process_reward": {"gamma": nested(5_000)}},
        {"info": nested(5_000)},
        {"turn_budget": nested(5_000)},
    ],
    ids=["budget_mix", "errors", "reveal", "process_reward", "info", "turn_budget"],
)
def test_an_option_nested_past_the_recursion_limit_is_refused_naming_it(options):
    """Such a value hit the recursion limit: its repr built the refusal's message, and the
    wrappers deep-copy their arguments before checking them (Gymnasium's constructor args)."""
    (name,) = options
    for make in (turnbudget.make, gym.make):
        with pytest.raises(ValueError, match=f"Expect `{name}`"):
            make("turnbudget/Maze-Easy-v0", **options)


def test_a_config_field_nested_past_the_recursion_limit_is_refused_naming_it():
    """Gymnasium quotes the keyword arguments of a TypeError from the env's creator: the
    quote itself hit the recursion limit."""
    with pytest.raises(ValueError, match="Expect `width` to nest at most 32 deep"):
        gym.make("turnbudget/Maze-v0", width=nested(5_000))


@pytest.mark.parametrize(
    "options, name",
    [
        ({"turn_budget": 10**5000}, "turn_budget"),
        ({"discrete_actions": 10**5000}, "discrete_actions"),
        ({"text_features": 10**5000}, "text_features"),
        ({"record": True, "env_index": 10**5000}, "env_index"),
        ({"reveal": "final=" + "9" * 5000}, "final=k"),
    ],
)
def test_an_int_too_long_to_write_is_refused_naming_the_option(options, name):
    """str() refuses ints of more than 4,300 digits: the refusal's message failed to build,
    and CPython's own error named nothing (an env_index that long was taken, then failed at
    the first reset)."""
    with pytest.raises(ValueError, match=f"Expect .*{name}") as refused:
        turnbudget.make("turnbudget/Maze-Easy-v0", **options)
    assert "4300 digits" not in str(refused.value)


def test_a_record_callback_that_takes_no_record_is_refused_when_made():
    """It was taken, then raised on the episode's last step, whose result never came back."""
    with pytest.raises(ValueError, match="Expect `callback` to take one argument"):
        turnbudget.make("turnbudget/Maze-Easy-v0", record={"callback": lambda: None})


@pytest.mark.parametrize(
    "make",
    [
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=v),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=v),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", record={"env_index": v}),
        lambda v: turnbudget.make("turnbudget/Maze-Easy-v0", errors=v),
        lambda v: gym.make("turnbudget/Maze-v0", width=v),
        lambda v: make_team("vault_v0", turn_budget=v),
    ],
)
def test_a_numpy_duration_is_no_count_or_rate(make):
    """np.timedelta64 is a NumPy signed integer: turn_budget=np.timedelta64(5) was taken as
    5, an env_index of one overflowed at make, and a rate of one was numpy's UFuncTypeError."""
    with pytest.raises(ValueError, match=r"Expect .*timedelta64"):
        make(np.timedelta64(5))


@pytest.mark.parametrize(
    "make",
    [
        lambda: turnbudget.make("turnbudget/Maze-Easy-v0", info=np.array(["text", "numeric"])),
        lambda: make_team("vault_v0", info=np.array(["text", "numeric"])),
    ],
    ids=["make", "make_team"],
)
def test_an_array_as_the_info_mode_is_refused_naming_it(make):
    """`info` was compared with `in`: NumPy's "truth value of an array ... is ambiguous"."""
    with pytest.raises(ValueError, match=r"Expect `info` to be one of"):
        make()


def test_a_generator_as_a_wrappers_argument_is_refused_naming_it():
    """Gymnasium deep-copies a wrapper's arguments: a generator was "cannot pickle 'generator'
    object", naming no argument."""
    from turnbudget.wrappers import InjectErrors

    with pytest.raises(TypeError, match=r"Expect `kinds` to be a value the wrapper can keep"):
        turnbudget.make(
            "turnbudget/Maze-Easy-v0", errors={"rate": 0.2, "kinds": (k for k in ["slip"])}
        )
    with pytest.raises(TypeError, match=r"Expect `kinds` to be a value the wrapper can keep"):
        InjectErrors(gym.make("turnbudget/Maze-Easy-v0"), rate=0.2, kinds=(k for k in ["slip"]))
