"""`make`: build a turn-budget experiment stack in one pass, from a table of its layers.

`LAYERS` is the stack as data: one row per wrapper, innermost first, naming
the `make` keyword(s) that configure it and how their values read. `plan_stack`
reads the options against that table once, before any env is built (a value it
cannot read, or options that do not go together, are refused there), and
returns a `StackPlan`; `StackPlan.build` walks it once, each wrapper checking
its own arguments as it is built. Every door builds through it: `make`, and
``gym.make(id, **options)`` on any ``turnbudget/`` id
(`turnbudget.registration` plans before it builds the game, and builds that
same plan on it), so both build the same stack.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import gymnasium as gym
from gymnasium import spaces
from gymnasium.envs.registration import load_env_creator
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

from turnbudget._checks import brief, check_option, is_int, renamed
from turnbudget.wrappers._common import find_wrapper, plain
from turnbudget.wrappers.discrete_actions import DiscreteActions
from turnbudget.wrappers.inject_errors import InjectErrors
from turnbudget.wrappers.numeric_info import NumericInfo
from turnbudget.wrappers.process_reward import ProcessReward
from turnbudget.wrappers.record_step_outcomes import RecordStepOutcomes
from turnbudget.wrappers.reveal_budget import RevealBudget
from turnbudget.wrappers.sample_turn_budget import (
    BudgetMix,
    BudgetMixLike,
    SampleTurnBudget,
    beside_a_mix,
)
from turnbudget.wrappers.text_features import TextFeatures
from turnbudget.wrappers.turn_budget import TurnBudget, check_turn_budget

__all__ = [
    "INFO_MODES",
    "LAYERS",
    "STACK_ENTRY_POINT",
    "STACK_OPTIONS",
    "STACK_ORDER",
    "Layer",
    "StackPlan",
    "absorb_time_limit",
    "drop_checks",
    "make",
    "peel_time_limits",
    "plan_stack",
    "registered_spec",
]

#: The wrapper every ``turnbudget/`` id registers (see `turnbudget.registration`).
STACK_ENTRY_POINT = "turnbudget.registration:budget_stack"
_STACK_NAME = "TurnBudgetStack"  # (its WrapperSpec's name in every registered id)
_OWN_WRAPPERS = "turnbudget.wrappers."  # (the modules of the layers a stack is built of)
INFO_MODES = ("text", "numeric")


def _on(value: Any) -> bool:
    """Whether an option's value asks for its wrapper (None and False leave it out)."""
    return value is not None and value is not False


class _Scalar(dict):
    """A wrapper's keyword arguments made from one `make` option's value (``reveal="final=3"``
    gives ``{"mode": "final=3"}``): the wrapper's errors about it name the option."""

    def __init__(self, kwargs: dict[str, Any], option: str):
        super().__init__(kwargs)
        self.option = option

    def renamed(self, exc: ValueError) -> ValueError:
        """``exc`` with the wrapper's name of the value (``mode``) said as the option's."""
        (keyword,) = self
        return ValueError(str(exc).replace(f"`{keyword}`", f"`{self.option}`"))


def _shortcut(
    name: str, scalar: str | None = None, *scalar_types: type, true: bool = True
) -> Callable[[Any], dict[str, Any] | None]:
    """The reader of option ``name``: None/False: no wrapper; True: defaults (where ``true``);
    a mapping: its keyword arguments; a value of ``scalar_types``: ``{scalar: value}``."""

    def read(value: Any) -> dict[str, Any] | None:
        if not _on(value):
            return None
        if value is True:
            if not true:  # (errors=True built a wrapper at rate 0, which never fired)
                raise ValueError(
                    f"Expect `{name}` to be a {scalar} (for example {name}=0.1) or the "
                    f"wrapper's keyword arguments, got True (it has no default {scalar})"
                )
            return {}
        if isinstance(value, Mapping):
            return dict(value)
        if scalar is not None and isinstance(value, scalar_types) and not isinstance(value, bool):
            return _Scalar({scalar: value}, option=name)
        raise ValueError(
            f"Unexpected `{name}`={brief(value)}: see turnbudget.make's docstring for what it accepts"
        )

    return read


def _budget_mix(budget_mix: BudgetMixLike | None) -> dict[str, Any] | None:
    return None if budget_mix is None else {"budget_mix": BudgetMix.coerce(budget_mix)}


def _record(record: Any, env_index: Any) -> dict[str, Any] | None:
    """A JSONL path, a callback, True or keyword arguments; ``env_index`` goes into the records."""
    if env_index is not None and (not is_int(env_index) or env_index < 0):
        raise ValueError(f"Expect `env_index` to be an int >= 0 or None, got {brief(env_index)}")
    if isinstance(record, (str, os.PathLike)):
        kwargs: dict[str, Any] | None = {"path": record}
    elif callable(record) and not isinstance(record, Mapping):
        kwargs = {"callback": record}
    else:
        kwargs = _shortcut("record")(record)
    if kwargs is not None and env_index is not None:
        kwargs.setdefault("env_index", env_index)
    return kwargs


def _info(info: str | None, text_features: Any) -> dict[str, Any] | None:
    """`NumericInfo` for ``info="numeric"``; by default wherever the observation is numeric."""
    if info is None:
        info = "numeric" if _on(text_features) else "text"
    if not isinstance(info, str) or info not in INFO_MODES:  # (an array: "ambiguous")
        raise ValueError(f"Expect `info` to be one of {INFO_MODES} or None, got {brief(info)}")
    return {} if info == "numeric" else None


@dataclasses.dataclass(frozen=True)
class Layer:
    """One row of the stack's table: a wrapper, and the `make` keywords that configure it.

    ``read`` takes the values of ``keywords`` (None where not given) and returns
    the wrapper's keyword arguments, or None to leave the wrapper out; it raises
    ``ValueError`` for a value it cannot read.
    """

    wrapper: type[gym.Wrapper]
    keywords: tuple[str, ...]
    read: Callable[..., dict[str, Any] | None]

    @property
    def name(self) -> str:
        return self.wrapper.__name__


#: The stack, innermost first, on a `TurnBudget` (inside every registered id; `make` puts
#: one on an env given with ``turn_budget``). Each wrapper reads what the ones inside it put in
#: ``info``; a row's place says why it sits there.
LAYERS = (
    # BudgetMix: T per episode, passed down through reset options
    Layer(SampleTurnBudget, ("budget_mix",), _budget_mix),
    # errors fire inside the recorded turn
    Layer(InjectErrors, ("errors",), _shortcut("errors", "rate", numbers.Real, true=False)),
    # sees the agent's command, the injected error and the raw reward
    Layer(RecordStepOutcomes, ("record", "env_index"), _record),
    # shaping on top of the recorded reward
    Layer(ProcessReward, ("process_reward",), _shortcut("process_reward")),
    # the text the agent reads
    Layer(RevealBudget, ("reveal",), _shortcut("reveal", "mode", str)),
    # classic-RL adapters last: they change the spaces
    Layer(DiscreteActions, ("discrete_actions",), _shortcut("discrete_actions", "max_actions", numbers.Integral)),
    Layer(TextFeatures, ("text_features",), _shortcut("text_features", "size", numbers.Integral)),
    # info as fixed-shape arrays, for vector envs and replay buffers
    Layer(NumericInfo, ("info", "text_features"), _info),
)  # fmt: skip

#: Innermost first: the names of `TurnBudget` and of the `LAYERS`.
STACK_ORDER = (TurnBudget.__name__, *(layer.name for layer in LAYERS))

#: The stack's options: keyword arguments of `make` and of ``gym.make`` on any
#: ``turnbudget/`` id (``gym.make(id, discrete_actions=8, text_features=64)``): the
#: keyword that turns each layer on, then those that only tune one.
STACK_OPTIONS = tuple(
    dict.fromkeys(
        [*(layer.keywords[0] for layer in LAYERS), *(k for layer in LAYERS for k in layer.keywords)]
    )
)


@dataclasses.dataclass(frozen=True)
class StackPlan:
    """A checked stack: the wrappers to build, innermost first, with their keyword arguments."""

    layers: tuple[tuple[Layer, dict[str, Any]], ...]

    def build(self, env: gym.Env, turn_budget: int | None = None) -> gym.Env:
        """Wrap ``env`` in the planned layers, in one pass.

        ``env`` has a `TurnBudget`, or gets one of ``turn_budget`` first. The
        wrappers check their own keyword arguments as they are built.
        """
        if turn_budget is not None:
            env = TurnBudget(env, turn_budget)
        for layer, kwargs in self.layers:
            try:
                env = layer.wrapper(env, **kwargs)
            except ValueError as exc:
                if type(exc) is not ValueError or not isinstance(kwargs, _Scalar):
                    raise
                # ("Expect `mode` to be one of ..." for reveal="maybe": a name never passed)
                raise kwargs.renamed(exc) from None
        return env


def plan_stack(**options: Any) -> StackPlan:
    """Read the stack's ``options`` (see `make`) against `LAYERS`: the one place they are read.

    Example:
        >>> [layer.name for layer, _ in plan_stack(reveal="final=3", errors=0.1).layers]
        ['InjectErrors', 'RevealBudget']
        >>> plan_stack(text_features=64).layers[-1][0].name  # numeric info with numeric features
        'NumericInfo'
    """
    unknown = sorted(set(options) - set(STACK_OPTIONS))
    if unknown:
        raise TypeError(
            f"plan_stack() got an unexpected keyword argument {unknown[0]!r}; "
            f"expect one of: {', '.join(STACK_OPTIONS)}"
        )
    for name, value in options.items():  # (a deeper one hit the recursion limit: copied, shown)
        check_option(value, name)
    layers = []
    for layer in LAYERS:
        kwargs = layer.read(*(options.get(keyword) for keyword in layer.keywords))
        if kwargs is not None:
            layers.append((layer, kwargs))
    return StackPlan(tuple(layers))


def peel_time_limits(env: gym.Env) -> tuple[gym.Env, int | None]:
    """``env`` without the ``TimeLimit`` wrappers on its outside, and the smallest of their limits."""
    limits = []
    while isinstance(env, TimeLimit):  # (Gymnasium's TimeLimit takes True for 1: refused here)
        limits.append(check_turn_budget(env._max_episode_steps, "max_episode_steps"))
        env = env.env
    return env, min(limits, default=None)


def _take_over_time_limits(
    env: gym.Env, build_budget: bool = False
) -> tuple[gym.Env, TurnBudget | None, int | None]:
    """`absorb_time_limit`, the env's `TurnBudget` (None: it has none) and, when it has none
    and ``build_budget`` (`make`, which builds one), the limit peeled for it (else None)."""
    env, limit = peel_time_limits(env)
    budget = find_wrapper(env, TurnBudget)
    if limit is not None:
        if budget is None:
            if build_budget:
                return env, None, limit
            raise ValueError(
                "This env has a TimeLimit but no TurnBudget to take it over: give it to "
                "turnbudget.make(env), which makes the limit its budget"
            )
        if find_wrapper(env, SampleTurnBudget) is not None:  # (its draw replaced the limit)
            raise ValueError(
                f"This env's TimeLimit of {limit} steps sets one turn budget, but its "
                "budget_mix draws one per episode: drop the TimeLimit (or the budget_mix)"
            )
        set_turn_budget(env, limit)
    return env, budget, None


def set_turn_budget(env: gym.Env, turn_budget: int) -> gym.Env:
    """Change the default turn budget of the stack ``env`` (from its next reset on), its spec
    included: ``env.spec.max_episode_steps`` and ``gym.make(env.spec)`` then say the new
    budget, as if it had been given at construction. `TurnBudget.set_default_turn_budget`
    changes its own wrapper only, and the wrappers outside it kept the spec they were built
    with (``gym.make(env.spec)`` rebuilt the old budget). Returns ``env``.

    Example:
        >>> import gymnasium as gym, turnbudget
        >>> env = set_turn_budget(gym.make("turnbudget/Maze-Easy-v0", errors=0.2), 11)
        >>> env.reset(seed=0)[1]["turn_budget"], env.spec.max_episode_steps
        (11, 11)
        >>> gym.make(env.spec).reset(seed=0)[1]["turn_budget"]
        11
    """
    budget = find_wrapper(env, TurnBudget)
    if budget is None:
        raise ValueError(f"Expect an env with a TurnBudget, got {brief(env)}")
    if find_wrapper(env, SampleTurnBudget) is not None:
        raise ValueError("This env's budget_mix draws each episode's budget: it has no default")
    registered = _in_registered_form(env.spec)  # (before its budget changes it)
    budget.set_default_turn_budget(turn_budget)
    inner = env
    while inner is not budget:  # their cached specs still name the old budget
        inner._cached_spec, inner = None, inner.env
    if registered:
        registered_spec(env, budget.default_turn_budget)
    return env


def registered_spec(stack: gym.Wrapper, budget: int | None) -> gym.Wrapper:
    """Give the stack `budget_stack` built (its default turn ``budget``; None under a
    BudgetMix) the spec of the registered id that makes it: its options in ``kwargs`` (the
    turn budget as in force), ``max_episode_steps`` = ``budget``, and as its one wrapper the
    registered stack, told that ``max_episode_steps`` mirrors the budget. So
    ``gym.make(stack.spec, **overrides)`` builds the stack the overrides describe (Gymnasium's
    own spec lists the wrappers built, with their old arguments: ``turn_budget=12`` or
    ``errors=0.5`` changed the spec's kwargs and nothing else, and ``max_episode_steps``
    added a second limit under the stack), and the spec holds only JSON. Returns ``stack``."""
    inner = stack
    while isinstance(inner, gym.Wrapper) and type(inner).__module__.startswith(_OWN_WRAPPERS):
        inner = inner.env
    made = inner.spec  # (what gym.make built under the stack: its OrderEnforcing counts)
    if made is None:
        return stack
    kwargs = plain(copy.deepcopy(made.kwargs))  # (Gymnasium's specs share nothing either)
    if budget is not None:
        kwargs["turn_budget"] = budget
    elif kwargs.get("budget_mix") is not None:  # (its draws are the budget: a turn_budget
        kwargs.pop("turn_budget", None)  # beside it is refused, and gym.make(spec) was)
    wrapper = gym.envs.registration.WrapperSpec(
        name=_STACK_NAME, entry_point=STACK_ENTRY_POINT, kwargs={"spec_limit": budget}
    )
    stack._cached_spec = dataclasses.replace(
        made, kwargs=kwargs, max_episode_steps=budget, additional_wrappers=(wrapper,)
    )
    return stack


def _in_registered_form(spec: Any) -> bool:
    return spec is not None and [w.entry_point for w in spec.additional_wrappers] == [
        STACK_ENTRY_POINT
    ]


#: The layers ``gym.make`` adds that check how an env is called, not what it does.
_CHECK_LAYERS = (OrderEnforcing, PassiveEnvChecker)


def drop_checks(env: gym.Env) -> gym.Env:
    """``env`` with the call checks ``gym.make`` puts in it (``OrderEnforcing`` and the passive
    env checker, Gymnasium's or turnbudget's) taken out of the stack, in place.

    For a driver that always resets before it steps (the evaluator): each of
    those layers is one more call per step, and a fresh copy of the checker
    checks its first step again. The other wrappers and the game are kept as
    they are.

    Example:
        >>> import gymnasium as gym, turnbudget
        >>> env = drop_checks(turnbudget.make("turnbudget/Maze-Easy-v0", errors=0.1))
        >>> [type(w).__name__ for w in (env, env.env, env.env.env)]
        ['InjectErrors', 'TurnBudget', 'Maze']
    """
    while isinstance(env, _CHECK_LAYERS):
        env = env.env
    outer = env
    while isinstance(outer, gym.Wrapper):
        while isinstance(outer.env, _CHECK_LAYERS):
            outer.env = outer.env.env
        outer = outer.env
    return env


def absorb_time_limit(env: gym.Env) -> gym.Env:
    """Make the ``TimeLimit`` wrappers on the outside of ``env`` its turn budget, and drop them.

    A ``TimeLimit`` counts steps on its own, outside `TurnBudget`: it can set
    ``truncated=True`` on the very step the game ends (both flags) and leaves
    ``info["turns_left"]`` wrong. This returns ``env`` without them, its
    `TurnBudget`'s default budget set to the smallest of their limits, so one
    owner enforces one limit. ``gym.make(id, max_episode_steps=N)`` on a
    ``turnbudget/`` id does this by itself; `make` does it to an env it is given.

    Example:
        >>> import gymnasium as gym, turnbudget
        >>> env = absorb_time_limit(gym.wrappers.TimeLimit(gym.make("turnbudget/Maze-Easy-v0"), 5))
        >>> type(env).__name__, env.reset(seed=0)[1]["turn_budget"]
        ('TurnBudget', 5)
    """
    return _take_over_time_limits(env)[0]


def make(
    env_id: str | gym.Env,
    *,
    turn_budget: int | None = None,
    make_kwargs: Mapping[str, Any] | None = None,
    budget: int | None = None,
    **options: Any,
) -> gym.Env:
    """Make a registered env and stack the turn-budget wrappers on it, in `STACK_ORDER`.

    Equivalent to ``gym.make(env_id, turn_budget=turn_budget)`` wrapped by hand in
    `SampleTurnBudget`, `InjectErrors`, `RecordStepOutcomes`, `ProcessReward`,
    `RevealBudget`, `DiscreteActions`, `TextFeatures` and `NumericInfo`,
    skipping those left at None. For a ``turnbudget/`` id it *is*
    ``gym.make(env_id, turn_budget=turn_budget, **options)``: every option below is
    also a ``gym.make`` keyword, so string-id clients (``gym.make_vec``, SB3's
    ``make_vec_env``, TorchRL's ``GymEnv``) build the same stack. A mapping
    passes keyword arguments to its wrapper (a misspelt one raises
    ``TypeError``); the scalar shortcuts are listed below. Every configuration
    error is raised here, before any episode runs.

    Args:
        env_id: A registered id (or an env; one without a `TurnBudget` then
            needs ``turn_budget``; a ``TimeLimit`` on its outside becomes its budget, as
            an outside text game's ``max_episode_steps`` does unless ``turn_budget`` is
            given).
        turn_budget: The default turn budget T (the id's default if None), as in
            ``gym.make`` and ``reset(options={"turn_budget": T})``.
        make_kwargs: Extra keyword arguments for ``gym.make`` (e.g. ``render_mode``).
        budget: Deprecated: the old name of ``turn_budget`` (warns; removed in the next release).

    Keyword Args:
        budget_mix: BudgetMix: anything `BudgetMix.coerce` accepts (``"uniform:5-40"``, ``[10, 20]``...).
        errors: An error rate (float) or `InjectErrors` keyword arguments.
        record: True (in memory), a JSONL path, a callback, or `RecordStepOutcomes` keyword arguments.
        process_reward: True or `ProcessReward` keyword arguments.
        reveal: A mode (``"always"``, ``"final=3"``, ``"never"``) or `RevealBudget` keyword arguments.
        discrete_actions: ``max_actions`` or `DiscreteActions` keyword arguments.
        text_features: True, the observation's length (an int: `TextFeatures`'s ``size``,
            e.g. 64 floats, 32 each for the observation and the goal) or `TextFeatures`
            keyword arguments (``{"block_dim": 64}``: 64 per block).
        info: ``"numeric"`` (`NumericInfo`: fixed-shape NumPy values only, for
            vector envs and replay buffers) or ``"text"`` (every key); None:
            numeric exactly when ``text_features`` makes the observation numeric.
        env_index: The sub-env index in a vector env (for the records).

    Example:
        >>> import turnbudget
        >>> env = turnbudget.make("turnbudget/Maze-Easy-v0", budget_mix=[8, 16], errors=0.1,
        ...                       record=True, reveal="final=3")
        >>> _, info = env.reset(seed=1)
        >>> info["turn_budget"] in (8, 16)
        True
        >>> [type(w).__name__ for w in (env, env.env, env.env.env, env.env.env.env)]
        ['RevealBudget', 'RecordStepOutcomes', 'InjectErrors', 'SampleTurnBudget']
    """
    if not isinstance(env_id, (str, gym.Env)):
        raise ValueError(f"Expect `env_id` to be a registered id or an env, got {brief(env_id)}")
    unknown = sorted(set(options) - set(STACK_OPTIONS))
    if unknown:
        raise TypeError(
            f"make() got an unexpected keyword argument {unknown[0]!r}; "
            f"expect turn_budget, make_kwargs or one of: {', '.join(STACK_OPTIONS)}"
        )
    budget = renamed(turn_budget, budget, "turn_budget", "budget", "make")
    if budget is not None:
        budget = check_turn_budget(budget, "turn_budget")
    if make_kwargs is not None and (  # (a key not a str: Python's "keywords must be strings")
        not isinstance(make_kwargs, Mapping) or not all(isinstance(k, str) for k in make_kwargs)
    ):
        raise ValueError(
            f"Expect `make_kwargs` to be a mapping of gym.make keyword arguments (str keys) or "
            f"None, got {brief(make_kwargs)}"
        )
    # (one given there skipped make's own checks: turn_budget=30 beside make_kwargs'
    # budget_mix was dropped silently, where make refuses the pair)
    # (an outside game's own settings may share those names: they go to it as given)
    ours = isinstance(env_id, str) and _builds_the_stack(env_id)
    taken = sorted(set(make_kwargs or ()) & {"turn_budget", "budget", *STACK_OPTIONS})
    if ours and taken:
        raise ValueError(
            f"Expect `make_kwargs` to hold gym.make's own keyword arguments (render_mode, a "
            f"game's settings), got {taken[0]!r}: give it to make itself"
        )
    options = {key: value for key, value in options.items() if value is not None}
    kwargs = dict(make_kwargs or {})
    if budget is not None:
        kwargs["turn_budget"] = budget
    if (
        budget is not None
        and options.get("budget_mix") is not None
        and isinstance(env_id, str)
        and _builds_the_stack(env_id)
    ):
        raise beside_a_mix(budget)  # (an outside game needs one: its TurnBudget is built here)
    if not isinstance(env_id, gym.Env) and _builds_the_stack(env_id):
        # The id's registered wrapper builds the stack; its entry point checks the options
        # before the game is built (`turnbudget.registration`).
        return gym.make(env_id, **kwargs, **options)
    plan = plan_stack(**options)  # before anything is built
    if isinstance(env_id, gym.Env):
        env, own_budget, limit = _take_over_time_limits(env_id, build_budget=True)
        if limit is not None:  # (no TurnBudget: the one built here takes the TimeLimit over)
            if budget is not None and budget != limit:
                raise ValueError(
                    f"This env's TimeLimit ({limit} steps) and `turn_budget` ({budget}) "
                    "disagree: give one of them"
                )
            budget = limit
        if own_budget is None and budget is None:
            raise ValueError("This env has no TurnBudget: pass `turn_budget`")
        if own_budget is not None and budget is not None:
            raise ValueError("This env already has a TurnBudget: set its budget where it was made")
        return plan.build(env, budget)
    if budget is not None and not _takes_turn_budget(env_id):
        kwargs.pop("turn_budget")  # (an outside game: its budget is the TurnBudget built here)
    env = gym.make(env_id, **kwargs)
    if find_wrapper(env, TurnBudget) is not None:
        if budget is not None and "turn_budget" not in kwargs:
            env.close()
            raise ValueError(
                f"{env_id!r} already has a TurnBudget: set its budget where it is made"
            )
        return plan.build(env)
    # An outside text game's registered max_episode_steps: its TimeLimit is dropped (the
    # stack's one limit is its TurnBudget, which refused to go over another), and the limit
    # is the budget unless `turn_budget` names one. (Not a game that is no text game, such as
    # CartPole: that is refused as having no TurnBudget.)
    if isinstance(env.action_space, spaces.Text):
        env, limit = peel_time_limits(env)
        budget = limit if budget is None else budget
    if budget is None:  # an outside id without a budget: refused, and the env made is closed
        env.close()
        _no_budget(env_id)
    return plan.build(env, budget)


def _spec(env_id: str) -> gym.envs.registration.EnvSpec | None:
    """The spec ``gym.make(env_id)`` would use ("module:id" imports the module), or None when
    there is none (gym.make then raises the proper error)."""
    module, _, name = env_id.rpartition(":")
    try:
        if module:
            importlib.import_module(module)
        return gym.spec(name)
    except (ImportError, gym.error.Error):
        return None


def _takes_turn_budget(env_id: str) -> bool:
    """Whether an outside id's entry point names a ``turn_budget`` parameter (one that builds
    its own `TurnBudget`): if not, `make` keeps it out of ``gym.make`` and builds the
    `TurnBudget` itself (a game's ``**config`` would refuse it)."""
    spec = _spec(env_id)
    if spec is None:
        return True  # (as before: gym.make says what is wrong)
    try:
        entry = spec.entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
        parameters = inspect.signature(creator).parameters.values()
    except (ImportError, AttributeError, TypeError, ValueError, gym.error.Error):
        return True
    return any(p.name == "turn_budget" and p.kind is not p.VAR_KEYWORD for p in parameters)


def _builds_the_stack(env_id: str) -> bool:
    """True for ids whose ``gym.make`` takes the stack's options (every ``turnbudget/`` id)."""
    spec = _spec(env_id)
    return spec is not None and any(
        w.entry_point == STACK_ENTRY_POINT for w in spec.additional_wrappers
    )


class NoTurnBudgetError(ValueError):
    """`make` of an outside id with no budget. The engines, which take no ``turn_budget``,
    say instead which ids they play (`for_engines`)."""

    def __init__(self, env_id: str):
        super().__init__(f"{env_id!r} has no TurnBudget: pass `turn_budget`")
        self.env_id = env_id

    def for_engines(self) -> ValueError:
        """The error an engine (evaluate, probe) raises for this id."""
        return ValueError(
            f"{self.env_id!r} has no TurnBudget: the engines play the text games with turn "
            "budgets (`turnbudget list` shows them), or an id registered to make one"
        )


def _no_budget(env_id: str) -> NoReturn:
    raise NoTurnBudgetError(env_id)
