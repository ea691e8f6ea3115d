"""BudgetMix: draw the turn budget T per episode from a distribution."""

from __future__ import annotations

import bisect
import inspect
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.core import ActType, ObsType
from gymnasium.envs.registration import EnvSpec

from turnbudget._checks import MAX_TURN_BUDGET, brief, is_finite, json_int_keys, normalize_weights
from turnbudget.wrappers._common import (
    EpisodeSeeder,
    find_wrapper,
    record_args,
    require_single,
    spec_with_limit,
)
from turnbudget.wrappers.turn_budget import TurnBudget, begin_reset, check_turn_budget

# The numbers of `BudgetMix.parse` (a sign for a budget the value check then refuses by name).
_INT = re.compile(r"[+-]?[0-9]{1,18}")
_RANGE = re.compile(r"([0-9]{1,18})\s*-\s*([0-9]{1,18})")

__all__ = [
    "MAX_CHOICE_VALUES",
    "BudgetMix",
    "BudgetMixLike",
    "SampleTurnBudget",
    "beside_a_mix",
    "split_budget_mixes",
]  # fmt: skip


def split_budget_mixes(text: str) -> tuple[str, ...]:
    """Several `BudgetMix` strings written as one (a schedule's phases on a command line): split
    at ``;`` where there is one, else at commas, every budget after a ``choice:`` staying in
    it (a fixed budget after a choice needs ``;``). A comma split every item, so
    "choice:8,12,choice:30,40" was four fixed budgets.

    Example:
        >>> split_budget_mixes("uniform:12-20, choice:21,30, uniform:31-40, 50")
        ('uniform:12-20', 'choice:21,30', 'uniform:31-40', '50')
        >>> split_budget_mixes("10,20;uniform:21-30")
        ('10,20', 'uniform:21-30')
        >>> split_budget_mixes("")
        ()
    """
    if not text.strip():
        return ()
    if ";" in text:
        phases = [item.strip() for item in text.split(";")]
    else:
        phases = []
        for item in (item.strip() for item in text.split(",")):
            if phases and _is_choice(phases[-1]) and _INT.fullmatch(item):
                phases[-1] += f",{item}"
            else:
                phases.append(item)
    if not all(phases):
        raise ValueError(
            "expect a comma-separated list of str with no empty item (or one separated by "
            f"';'), got {text!r}"
        )
    return tuple(phases)


def beside_a_mix(turn_budget: Any) -> ValueError:
    """The error for a ``turn_budget`` given beside a ``budget_mix``: the mix draws every
    episode's budget, so the one asked for would be played never (`turnbudget.make`,
    ``gym.make`` and `make_team` refuse the pair)."""
    return ValueError(
        f"Got turn_budget={brief(turn_budget)} and a budget_mix, which draws each episode's "
        "budget: pass one of them"
    )


def _is_choice(phase: str) -> bool:
    """Whether ``phase`` is a ``choice:`` mix as `BudgetMix.parse` reads it (``Choice :8``)."""
    kind, colon, _ = phase.partition(":")
    return bool(colon) and kind.strip().lower() == "choice"


#: The most budgets `BudgetMix.choice` takes (a range of every T is `BudgetMix.uniform`).
MAX_CHOICE_VALUES = 1_000_000


@dataclass(frozen=True)
class BudgetMix:
    """A distribution over turn budgets: a weighted set, a uniform or log-uniform range, or a callable.

    Build one with `BudgetMix.choice`, `BudgetMix.uniform`, `BudgetMix.log_uniform`,
    `BudgetMix.from_callable`, or from a string with `BudgetMix.parse`
    (``"10,20,40"``, ``"uniform:5-40"``, ``"loguniform:5-80"``).

    Example:
        >>> import numpy as np
        >>> mix = BudgetMix.choice([10, 20, 40], weights=[2, 1, 1])
        >>> sorted({mix.sample(np.random.default_rng(s)) for s in range(50)})
        [10, 20, 40]
        >>> BudgetMix.parse("uniform:5-8").sample(np.random.default_rng(0)) in range(5, 9)
        True
    """

    kind: str
    values: tuple[int, ...] = ()
    probabilities: tuple[float, ...] = ()
    low: int = 0
    high: int = 0
    fn: Callable[[np.random.Generator], int] | None = None

    def __post_init__(self) -> None:
        """Check fields set by hand (the factories check their arguments, and build these):
        weights of (0.3, 0.3) gave the last value the missing mass, low > high failed inside
        NumPy at the first reset, and an unknown kind was a bare AssertionError there."""
        kinds = ("choice", "uniform", "log_uniform", "callable")
        if self.kind not in kinds:
            raise ValueError(f"Expect `kind` among {kinds}, got {brief(self.kind)}")
        if self.kind == "choice":
            values, weights = tuple(self.values), tuple(self.probabilities)
            if not values or len(weights) != len(values):
                raise ValueError(
                    "Expect a choice's `values` non-empty, with one probability each, got "
                    f"{len(values)} values and {len(weights)} probabilities"
                )
            if not all(type(v) is int and 1 <= v <= MAX_TURN_BUDGET for v in values):
                values = tuple(check_turn_budget(v, "values[i]") for v in values)
            if not (
                all(is_finite(w) and w >= 0 for w in weights)
                and math.isclose(math.fsum(weights), 1.0, abs_tol=1e-9)
            ):
                raise ValueError(
                    "Expect a choice's `probabilities` finite, >= 0 and summing to 1, got "
                    f"{brief(weights)} (BudgetMix.choice(values, weights) normalises weights)"
                )
            object.__setattr__(self, "values", values)  # (a list: the mix was unhashable)
            object.__setattr__(self, "probabilities", tuple(float(w) for w in weights))
        elif self.kind in ("uniform", "log_uniform"):
            low, high = _check_range(self.low, self.high)
            object.__setattr__(self, "low", low)
            object.__setattr__(self, "high", high)
        elif not callable(self.fn):
            raise ValueError(f"Expect `fn` to be a callable (rng) -> int, got {brief(self.fn)}")

    @classmethod
    def choice(cls, values: Sequence[int], weights: Sequence[float] | None = None) -> BudgetMix:
        """T drawn from ``values`` with probabilities proportional to ``weights`` (uniform if None)."""
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ValueError(
                f"Expect `values` to be a non-empty sequence of positive ints, got {brief(values)}"
            )
        try:
            size = len(values)
        except OverflowError:  # (a range past sys.maxsize)
            size = MAX_CHOICE_VALUES + 1
        if size > MAX_CHOICE_VALUES:  # (before any is looked at: range(1, 10**12) never ended)
            raise ValueError(
                f"Expect at most {MAX_CHOICE_VALUES:,} budgets to choose from, got {brief(values)} "
                "(for every T in a range, use BudgetMix.uniform(low, high): 'uniform:LOW-HIGH')"
            )
        checked = tuple(check_turn_budget(v, "values[i]") for v in values)
        probabilities = normalize_weights(weights, len(checked), per="value")
        return cls("choice", values=checked, probabilities=probabilities)

    @classmethod
    def uniform(cls, low: int, high: int) -> BudgetMix:
        """T uniform over the integers ``low..high`` (both included)."""
        low, high = _check_range(low, high)
        return cls("uniform", low=low, high=high)

    @classmethod
    def log_uniform(cls, low: int, high: int) -> BudgetMix:
        """T in ``low..high`` with log T roughly uniform: P(T=t) is proportional to log((t+1)/t)."""
        low, high = _check_range(low, high)
        return cls("log_uniform", low=low, high=high)

    @classmethod
    def from_callable(cls, fn: Callable[[np.random.Generator], int]) -> BudgetMix:
        """T = ``fn(rng)``; the result is checked (a positive int) at every draw.

        ``fn`` is checked here: it must take one argument, and one test draw
        (on a throwaway generator, never the env's) must give a positive int.
        """
        if not callable(fn):
            raise ValueError(f"Expect `fn` to be a callable (rng) -> int, got {fn!r}")
        try:
            inspect.signature(fn).bind(np.random.default_rng(0))
        except TypeError as e:
            raise ValueError(
                f"Expect the budget callable to take one argument (rng): {e}"
            ) from None
        except ValueError:  # no signature to inspect (some builtins): the test draw decides
            pass
        try:
            drawn = fn(np.random.default_rng(0))
        except Exception as e:
            raise ValueError(f"The budget callable failed on a test draw: {e!r}") from e
        check_turn_budget(drawn, "the budget drawn by the callable")
        return cls("callable", fn=fn)

    @classmethod
    def parse(cls, spec: str) -> BudgetMix:
        """Parse ``"10,20,40"``, ``"choice:10,20"``, ``"uniform:5-40"`` or ``"loguniform:5-80"``."""
        expect = "expect 'T1,T2,...', 'uniform:LOW-HIGH' or 'loguniform:LOW-HIGH'"
        if not isinstance(spec, str):
            raise ValueError(f"Expect a budget mix string ({expect[7:]}), got {brief(spec)}")
        kind, _, rest = spec.strip().lower().rpartition(":")
        kind = kind.strip()
        # Whole ASCII numbers only: spaces around an item are fine, inside one ("10 20") are not.
        if kind in ("", "choice"):
            items = [_INT.fullmatch(item.strip()) for item in rest.split(",")]
            if not all(items):
                raise ValueError(f"Cannot parse budget mix {brief(spec)}: {expect}")
            values = [int(item.group()) for item in items]  # type: ignore[union-attr]
        elif kind in ("uniform", "loguniform", "log_uniform") and (
            bounds := _RANGE.fullmatch(rest.strip())
        ):
            low, high = int(bounds[1]), int(bounds[2])
        else:
            raise ValueError(f"Cannot parse budget mix {brief(spec)}: {expect}")
        if kind in ("", "choice"):
            return cls.choice(values)
        return cls.uniform(low, high) if kind == "uniform" else cls.log_uniform(low, high)

    @classmethod
    def coerce(cls, mix: BudgetMixLike) -> BudgetMix:
        """Accept a `BudgetMix`, a string, a sequence of budgets, a ``{T: weight}`` mapping or a callable."""
        if isinstance(mix, BudgetMix):
            return mix
        try:
            if isinstance(mix, str):
                return cls.parse(mix)
            if isinstance(mix, Mapping):  # (a JSON spec's keys are strings: "4" is 4)
                mix = json_int_keys(mix)
                return cls.choice(list(mix.keys()), list(mix.values()))
            if callable(mix):
                return cls.from_callable(mix)
            if isinstance(mix, Sequence):
                return cls.choice(mix)
        except ValueError as e:  # (the parts' names, `values[i]` or `high`, are not the caller's)
            if "budget mix" in str(e):  # (`parse`'s own message quotes the whole spec)
                raise
            raise ValueError(f"Expect a valid `budget_mix`, got {brief(mix)}: {e}") from None
        raise ValueError(
            "Expect `budget_mix` to be a BudgetMix, a string, a sequence of ints, a {T: weight} "
            f"mapping or a callable (rng) -> int, got {brief(mix)}"
        )

    def plain(self) -> str | list[int] | dict[int, float] | BudgetMix:
        """This mix as `coerce` reads it back from JSON (an env spec's kwargs), drawing the same
        budgets under a seed: ``"uniform:L-H"`` or ``"loguniform:L-H"``, a choice's budgets (a
        list when they are equally likely, else ``{T: probability}``); a callable's mix, or a
        choice weighting a budget listed twice, has none and is itself. (A spec held
        the dataclass, which Gymnasium's ``to_json`` wrote as a dict of its fields, read back
        as a {T: weight} mapping and refused.)"""
        if self.kind in ("uniform", "log_uniform"):
            return f"{self.kind.replace('_', '')}:{self.low}-{self.high}"
        if self.kind != "choice":
            return self
        if len(set(self.probabilities)) == 1:
            return list(self.values)
        if len(set(self.values)) < len(self.values):  # (a budget twice, weighted: merged into
            return self  # a mapping, its draws under a seed were others; no JSON form, as before)
        return dict(zip(self.values, self.probabilities, strict=True))

    @property
    def cumulative(self) -> tuple[float, ...]:
        """Cumulative probabilities of a choice (cached)."""
        # (Not read from `__dict__`, which slows every later attribute read of the instance:
        # see `turnbudget.envs.native.base.MAX_FAST_ATTRIBUTES`.)
        cached = getattr(self, "_cumulative", None)
        if cached is None:
            cached = tuple(itertools.accumulate(self.probabilities))
            object.__setattr__(self, "_cumulative", cached)
        return cached

    def sample(self, rng: np.random.Generator) -> int:
        """Draw one budget."""
        if self.kind == "choice":
            index = bisect.bisect_right(self.cumulative, rng.random())
            return self.values[min(index, len(self.values) - 1)]
        if self.kind == "uniform":
            return int(rng.integers(self.low, self.high + 1))
        if self.kind == "log_uniform":
            t = math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)))
            return min(max(int(t), self.low), self.high)
        assert self.fn is not None
        return check_turn_budget(self.fn(rng), "the budget drawn by the callable")


BudgetMixLike = (
    BudgetMix | str | Sequence[int] | Mapping[int, float] | Callable[[np.random.Generator], int]
)


class SampleTurnBudget(
    gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs
):
    """BudgetMix: draw a new turn budget T for every episode.

    The env must contain a `TurnBudget` (every registered id does). On each
    reset this wrapper draws T and passes it down as
    ``options["turn_budget"]``; a caller's own ``options["turn_budget"]`` wins.
    Draws come from a generator seeded by the reset seed and continued by
    resets without a seed, so a seeded run is reproducible, also per sub-env of
    a ``SyncVectorEnv`` / ``AsyncVectorEnv`` (whose autoreset passes no seed).
    ``info["sampled_turn_budget"]`` on reset is the drawn T (None when the
    caller set it); ``info["turn_budget"]`` is the budget in force.

    Args:
        env: The environment to wrap; must contain a `TurnBudget`.
        budget_mix: What `BudgetMix.coerce` accepts: a `BudgetMix`, a string
            such as ``"uniform:5-40"``, a sequence of budgets, a
            ``{T: weight}`` mapping or a callable ``(rng) -> int``.

    Example:
        >>> import gymnasium as gym
        >>> import turnbudget
        >>> env = SampleTurnBudget(gym.make("turnbudget/Maze-Easy-v0"), budget_mix=[5, 10, 20])
        >>> _, info = env.reset(seed=0)
        >>> info["turn_budget"] in (5, 10, 20), info["sampled_turn_budget"] == info["turn_budget"]
        (True, True)
        >>> _, info = env.reset(seed=0, options={"turn_budget": 3})
        >>> info["turn_budget"], info["sampled_turn_budget"]
        (3, None)
    """

    def __init__(self, env: gym.Env[ObsType, ActType], budget_mix: BudgetMixLike):
        # (its JSON form: the spec of a stack built around an env held the dataclass, which
        # `EnvSpec.to_json` wrote as a dict of its fields, refused when read back)
        record_args(
            self, budget_mix=budget_mix.plain() if isinstance(budget_mix, BudgetMix) else budget_mix
        )
        gym.Wrapper.__init__(self, env)
        self.budget_mix = BudgetMix.coerce(budget_mix)
        require_single(env, SampleTurnBudget)
        if find_wrapper(env, TurnBudget) is None:
            raise ValueError(
                "SampleTurnBudget needs a TurnBudget inside the env it wraps "
                "(every registered turnbudget id has one; otherwise wrap with TurnBudget first)"
            )
        self._seeder = EpisodeSeeder("SampleTurnBudget")
        self.sampled_turn_budget: int | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        options = begin_reset(self.env, seed, options)
        with self._seeder.undone_on_failure():  # (a reset refused below draws nothing)
            # One draw per episode, even when the caller's budget wins, so the stream stays
            # aligned.
            drawn = self.budget_mix.sample(self._seeder.stream(seed))
            if options.get("turn_budget") is None:
                options["turn_budget"] = self.sampled_turn_budget = drawn
            else:
                self.sampled_turn_budget = None
            obs, info = self.env.reset(seed=seed, options=options)
        assert "sampled_turn_budget" not in info, "info['sampled_turn_budget'] set twice"
        info["sampled_turn_budget"] = self.sampled_turn_budget
        return obs, info

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        return self.env.step(action)

    @property
    def spec(self) -> EnvSpec | None:
        """The env's spec, with ``max_episode_steps`` None: the budget varies per episode."""
        return spec_with_limit(self, None)


def _check_range(low: int, high: int) -> tuple[int, int]:
    low, high = check_turn_budget(low, "low"), check_turn_budget(high, "high")
    if high < low:
        raise ValueError(f"Expect `high` >= `low`, got low={low}, high={high}")
    return low, high
