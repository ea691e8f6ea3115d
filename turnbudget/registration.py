"""The one place where every ``turnbudget/`` id is registered: a game under a default `TurnBudget`.

It sits above envs and wrappers (it needs both): the games declare their
variants as data (`turnbudget.envs.VARIANTS`) and know nothing of wrappers.

An id is made in two steps, so that one owner enforces the turn limit:
``gym.make`` calls `make_game` (the entry point: it checks the stack's options,
``discrete_actions=``, ``text_features=``..., into a `StackPlan`, then builds
the game alone), adds its own wrappers (the env checker, and a ``TimeLimit``
when given ``max_episode_steps``), then calls `budget_stack` (the id's
registered wrapper), which turns that ``TimeLimit`` into the `TurnBudget` and
builds the planned stack on it.

An id's default budget is for the game it registers: a native id that names a
difficulty (``Maze-Easy-v0``) refuses another difficulty or config field (its
family's free id, ``Maze-v0``, takes them, under a budget that follows them), and a
TextWorld id warns when its settings (``level=``) are changed under its budget.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
import weakref
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec
from gymnasium.wrappers import RenderCollection

from turnbudget._checks import brief, check_option, load_object
from turnbudget.envs import VARIANTS, EnvVariant
from turnbudget.envs.env_checker import PassiveEnvChecker
from turnbudget.wrappers.sample_turn_budget import beside_a_mix
from turnbudget.wrappers.stack import (
    STACK_ENTRY_POINT,
    STACK_OPTIONS,
    StackPlan,
    peel_time_limits,
    plan_stack,
    registered_spec,
)
from turnbudget.wrappers.turn_budget import check_turn_budget

__all__ = [
    "NAMESPACE",
    "budget_stack",
    "make_game",
    "register_envs",
    "register_game",
]

NAMESPACE = "turnbudget"
_ENTRY_POINT = "turnbudget.registration:make_game"
# Keyword arguments that say how a game runs or where it keeps its files, not which game it
# is: any id takes them. (``game_file``: TextWorldFile-v0 is for any game file.)
_RUN_KWARGS = frozenset(
    {"turn_budget", "game_entry_point", "render_mode", "num_games", "cache_dir", "game_file"}
    | set(STACK_OPTIONS)
)

# The stack `make_game` checked, per game, until `budget_stack` (which ``gym.make`` calls
# next, with the same options) builds it: the options are read and checked once.
_PLANS: weakref.WeakKeyDictionary[gym.Env, StackPlan] = weakref.WeakKeyDictionary()


def _check_kwargs(game_cls: type, kwargs: dict[str, Any]) -> None:
    """Refuse keyword arguments the game does not take, naming the ones it does."""
    parameters = inspect.signature(game_cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return  # the game checks its own extra kwargs
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown:
        # Python's own wording first: clients such as TorchRL retry without an
        # argument (``frameskip``) when they read "unexpected keyword argument 'x'".
        raise TypeError(
            f"{game_cls.__name__}() got an unexpected keyword argument {unknown[0]!r} "
            f"(unexpected argument(s): {', '.join(unknown)}); expect turn_budget, "
            f"max_episode_steps, a stack option ({', '.join(STACK_OPTIONS)}) "
            f"or one of: {', '.join(parameters)}"
        )


def _split(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the stack's options, the game's kwargs); stack options left at None are dropped."""
    options = {k: v for k, v in kwargs.items() if k in STACK_OPTIONS and v is not None}
    return options, {k: v for k, v in kwargs.items() if k not in STACK_OPTIONS}


def _default_budget(game: gym.Env, turn_budget: int | None) -> int:
    if turn_budget is None:
        turn_budget = getattr(game.unwrapped, "default_turn_budget", None)
        if turn_budget is None:
            raise ValueError(
                f"{type(game.unwrapped).__name__} has no default budget: pass `turn_budget`"
            )
    return check_turn_budget(turn_budget)


def make_game(game_entry_point: str, turn_budget: int | None = None, **kwargs: Any) -> gym.Env:
    """The entry point of every registered id: the game at ``game_entry_point`` ("module:Class").

    ``turn_budget`` and the stack's options are `budget_stack`'s; they are
    checked here, before the game is built, and the stack they describe is kept
    for `budget_stack` to build. The game comes in turnbudget's
    `PassiveEnvChecker` (Gymnasium's own is disabled in the spec), which stays
    usable after a refused first reset.
    """
    if "budget" in kwargs:  # `turnbudget.make`'s old name for it: not a game's kwarg
        raise TypeError(
            "make_game() got an unexpected keyword argument 'budget': the turn budget's "
            f"keyword is `turn_budget` (gym.make(id, turn_budget={brief(kwargs['budget'])}))"
        )
    for name, value in kwargs.items():  # (Gymnasium quotes a TypeError's kwargs: recursion)
        check_option(value, name)
    _check_entry_point(game_entry_point)
    options, game_kwargs = _split(kwargs)
    plan = plan_stack(**options)
    if turn_budget is not None:
        check_turn_budget(turn_budget)
    game_cls = load_object(game_entry_point)
    _check_kwargs(game_cls, game_kwargs)
    # Gymnasium's ``_list`` render modes (every frame since the last reset, by its
    # RenderCollection), made here: gym.make derives them only from an entry point's
    # metadata, and then calls ``str`` methods on any render_mode given (True crashed in it).
    render_mode = game_kwargs.get("render_mode")
    collect = isinstance(render_mode, str) and render_mode.endswith("_list")
    if collect:
        game_kwargs["render_mode"] = render_mode.removesuffix("_list")
        if game_kwargs["render_mode"] not in ("ansi", "rgb_array"):
            raise ValueError(
                "Expect `render_mode` to be one of 'ansi', 'human', 'rgb_array', 'ansi_list' or "
                f"'rgb_array_list', got {brief(render_mode)}"
            )
    game = game_cls(**game_kwargs)
    overrides = set(game_kwargs) - {"difficulty", "render_mode"}
    if overrides and callable(getattr(game, "check_generates", None)):
        game.check_generates()  # (an unreachable distance range: a ValueError now)
    _PLANS[game] = plan
    checked = PassiveEnvChecker(game)
    return _Frames(checked) if collect else checked


class _Frames(RenderCollection):
    """Gymnasium's RenderCollection, with the spec of the env it wraps: the spec's kwargs
    say its ``_list`` render mode already, so ``gym.make(spec)`` makes it again (as a wrapper
    of its own in the spec, it failed gym.make's check of the spec's wrappers)."""

    @property
    def spec(self) -> Any:
        return self.env.spec


def budget_stack(env: gym.Env, spec_limit: int | None = None) -> gym.Env:
    """The registered wrapper of every id: one turn limit, then the stack ``gym.make`` was asked for.

    ``gym.make`` calls it last, with the ``TimeLimit`` it adds for
    ``max_episode_steps=N`` on the outside: N becomes the turn budget (a
    different explicit ``turn_budget``, or a ``budget_mix``, is refused), so no
    second, unaware limit is left. ``turn_budget=None`` takes the game's
    ``default_turn_budget``. ``spec_limit``: the ``max_episode_steps`` of the spec
    ``gym.make`` was given, when it is a stack's own (`registered_spec`), which mirrors
    that stack's budget: its ``TimeLimit`` is no limit of the caller's, so a ``turn_budget``
    override wins over it.
    """
    spec = env.unwrapped.spec
    if spec is None:
        raise ValueError("budget_stack wraps an env made by gym.make (it reads the spec's kwargs)")
    plan = _PLANS.pop(env.unwrapped, None)
    _check_difficulty(spec)
    _check_game(spec, env.unwrapped)
    if plan is None:  # a game not made by make_game
        plan = plan_stack(**_split(spec.kwargs)[0])
    turn_budget = spec.kwargs.get("turn_budget")
    env, limit = peel_time_limits(env)
    if limit is not None and limit == spec_limit:
        limit = None  # (the spec's mirror of its own budget, which the kwargs hold)
    if limit is not None:
        registered = (
            gym.spec(spec.id).kwargs.get("turn_budget") if spec.id in gym.registry else None
        )
        if turn_budget not in (None, registered, limit, spec_limit):
            raise ValueError(
                f"Got turn_budget={turn_budget} and max_episode_steps={limit}: "
                "pass one (max_episode_steps becomes the turn budget)"
            )
        if spec.kwargs.get("budget_mix") is not None:
            raise ValueError(
                "max_episode_steps sets one turn budget, but budget_mix draws one per episode: "
                "drop max_episode_steps"
            )
        turn_budget = spec.kwargs["turn_budget"] = limit
    mixed = spec.kwargs.get("budget_mix") is not None
    registered = gym.registry[spec.id].kwargs if spec.id in gym.registry else {}
    if (
        mixed
        and turn_budget is not None
        and limit is None
        and turn_budget not in (registered.get("turn_budget"), spec_limit)
    ):
        raise beside_a_mix(turn_budget)
    if (
        mixed
        and turn_budget is None
        and getattr(env.unwrapped, "default_turn_budget", None) is None
    ):
        # (the mix draws every episode's budget, so the default is never played; but a
        # TextWorld game has none, and a mixed stack's spec names no turn_budget: its
        # gym.make(env.spec) was "has no default budget")
        turn_budget = registered.get("turn_budget")
    budget = _default_budget(env, turn_budget)
    return registered_spec(plan.build(env, budget), None if mixed else budget)


def _check_difficulty(spec: gym.envs.registration.EnvSpec) -> None:
    """Refuse another difficulty on an id that names one (``Maze-Easy-v0``, difficulty="hard"):
    it played the hard game under the id's easy budget, too short for any hard task, and
    records labelled it easy."""
    registered = gym.registry[spec.id].kwargs if spec.id in gym.registry else {}
    own, asked = registered.get("difficulty"), spec.kwargs.get("difficulty")
    if own is None or not isinstance(asked, str) or asked.lower() == own:
        return
    raise ValueError(
        f"Expect no `difficulty` other than {own!r} for {spec.id} (its budget is "
        f"{registered.get('turn_budget')}), got {brief(asked)}: make "
        f"{_instead(spec, asked, '')} instead"
    )


def _check_entry_point(game_entry_point: Any) -> None:
    """Refuse a game no ``turnbudget/`` id registers, before it is imported: a
    ``game_entry_point=`` keyword replaced the id's game (``gym.make("turnbudget/Maze-v0",
    game_entry_point="subprocess:Popen", args=...)`` ran a command)."""
    games = {
        spec.kwargs.get("game_entry_point")
        for spec in gym.registry.values()
        if spec.entry_point == _ENTRY_POINT
    }
    if game_entry_point not in games:
        raise ValueError(
            "Expect `game_entry_point` to be the game of a registered turnbudget id "
            f"(register_game registers one), got {brief(game_entry_point)}"
        )


def _instead(spec: gym.envs.registration.EnvSpec, asked: str, how: str) -> str:
    """The ids other than ``spec``'s that play difficulty ``asked`` (``how``: the free id's other
    kwargs), as text."""
    family = f"{spec.namespace}/{spec.name.split('-')[0]}"
    ids = {
        f"{family}-{asked.capitalize()}-v{spec.version}": "",
        f"{family}-v{spec.version}": f" with difficulty={asked.lower()!r}{how}",
    }
    found = [i + w for i, w in ids.items() if i in gym.registry and i != spec.id]
    return " or ".join(found) or "another id"


def _overrides(spec: gym.envs.registration.EnvSpec, game: gym.Env) -> dict[str, Any]:
    """The game settings ``spec``'s kwargs change from those its registered id makes."""
    registered = gym.registry[spec.id].kwargs
    config, configs = getattr(game, "config", None), getattr(type(game), "configs", None)
    if dataclasses.is_dataclass(config) and isinstance(configs, dict):  # a native game
        base = configs[game.difficulty]
        return {
            f.name: getattr(config, f.name)
            for f in dataclasses.fields(base)
            if getattr(config, f.name) != getattr(base, f.name)
        }
    try:
        parameters = inspect.signature(type(game)).parameters
    except (TypeError, ValueError):
        return {}
    return {
        name: value
        for name, value in spec.kwargs.items()
        if name not in _RUN_KWARGS
        and name in parameters
        and value != registered.get(name, parameters[name].default)
    }


def _check_game(spec: gym.envs.registration.EnvSpec, game: gym.Env) -> None:
    """An id's budget is for the game it registers: refuse another game on it, and a native
    id that names a difficulty another config (its family's free id takes one, under a budget
    that follows it); warn of a TextWorld id's settings changed under its budget."""
    if spec.id not in gym.registry:
        return
    registered = gym.registry[spec.id].kwargs
    own = registered.get("game_entry_point")
    if own is not None and spec.kwargs.get("game_entry_point") != own:
        raise ValueError(
            f"Expect no `game_entry_point` other than {own!r} for {spec.id}, got "
            f"{brief(spec.kwargs.get('game_entry_point'))}: make the id of that game instead"
        )
    if registered.get("turn_budget") is None:
        return  # a free id: its budget follows its game's settings
    overrides = _overrides(spec, game)
    if not overrides:
        return
    got = ", ".join(f"{name}={brief(value)}" for name, value in overrides.items())
    if registered.get("difficulty") is not None:  # (as `_check_difficulty`, for a config)
        raise ValueError(
            f"Expect no config override for {spec.id} (its budget, "
            f"{registered['turn_budget']}, is for its own config), got {got}: make "
            f"{_instead(spec, registered['difficulty'], ', ' + got)} instead"
        )
    if spec.kwargs.get("turn_budget") == registered["turn_budget"]:
        warnings.warn(
            f"{spec.id} with {got} plays under the id's budget of {registered['turn_budget']} "
            "turns, chosen for its registered settings: pass turn_budget= for these",
            stacklevel=2,
        )


def register_game(
    env_id: str, game_entry_point: str, turn_budget: int | None, **game_kwargs: Any
) -> None:
    """Register ``turnbudget/<env_id>`` as ``game_entry_point`` under a default `TurnBudget`."""
    full_id = f"{NAMESPACE}/{env_id}"
    if full_id in gym.registry:
        return  # re-importing the package must not warn about re-registration
    gym.register(
        id=full_id,
        entry_point=_ENTRY_POINT,
        kwargs={"game_entry_point": game_entry_point, "turn_budget": turn_budget, **game_kwargs},
        # The budget is ours (truncation via TurnBudget), never gymnasium's TimeLimit.
        max_episode_steps=None,
        # make_game adds a passive checker that survives a refused first reset.
        disable_env_checker=True,
        additional_wrappers=(
            WrapperSpec(name="TurnBudgetStack", entry_point=STACK_ENTRY_POINT, kwargs={}),
        ),  # (`registered_spec` gives every stack built the same one)
    )


def register_envs(variants: tuple[EnvVariant, ...] = VARIANTS) -> None:
    """Register every variant (by default every family's). Safe to call more than once."""
    for variant in variants:
        register_game(
            variant.name, variant.entry_point, turn_budget=variant.turn_budget, **variant.kwargs
        )
