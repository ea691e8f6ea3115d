"""Helpers shared by the wrappers: finding a wrapper in a stack, oracle checks, seeding."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import zlib
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np

from turnbudget._checks import brief, check_option
from turnbudget.envs.core import get_oracle

__all__ = [
    "EpisodeSeeder",
    "env_id_of",
    "find_wrapper",
    "plain",
    "record_args",
    "require_oracle",
    "require_single",
    "seed_sequence",
    "seeded_rng",
    "spec_with_limit",
]


def find_wrapper(env: gym.Env, cls: type) -> Any | None:
    """Return the outermost wrapper of type ``cls`` in ``env``'s stack, or None."""
    while True:
        if isinstance(env, cls):
            return env
        if not isinstance(env, gym.Wrapper):
            return None
        env = env.env


#: The most items of a range or an array `plain` writes out as a list.
_MOST_ITEMS = 1_000_000


def plain(value: Any) -> Any:
    """``value`` with its NumPy scalars and arrays as Python's, keys too, a range as a list, a
    path as its str and a `BudgetMix` as its JSON form, through dicts, lists and tuples: the
    option checkers take ``np.int64(8)`` (a sweep over ``np.arange``), ``range(10, 41, 10)``
    or a ``Path`` to record to, which JSON does not. Every wrapper records its arguments so
    (`record_args`): a stack built around an env object, or by hand, kept them raw, and its
    spec's ``to_json`` failed."""
    if isinstance(value, np.generic):
        return value.item()
    # (one longer than any option takes is left as it is, for its check to refuse: a range
    # of 10**30 budgets was a MemoryError here, before BudgetMix could name it)
    if isinstance(value, np.ndarray):
        return plain(value.tolist()) if value.size <= _MOST_ITEMS else value
    if isinstance(value, range):
        try:
            return list(value) if len(value) <= _MOST_ITEMS else value
        except OverflowError:  # (past sys.maxsize items)
            return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    from turnbudget.wrappers.sample_turn_budget import BudgetMix  # (it imports this module)

    if isinstance(value, BudgetMix):
        return value.plain()
    if type(value) is dict:
        return {_plain_key(k): plain(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(plain(v) for v in value)
    return value


def _plain_key(key: Any) -> Any:
    """A dict key as `plain` writes it, or as it is when that is no key (a range made a list:
    a TypeError before the option's own check could name it)."""
    written = plain(key)
    try:
        hash(written)
    except TypeError:
        return key
    return written


def record_args(wrapper: gym.utils.RecordConstructorArgs, **kwargs: Any) -> None:
    """``gym.utils.RecordConstructorArgs.__init__(wrapper, **kwargs)`` of the arguments as
    JSON writes them (`plain`), whose deep copy of the arguments is a RecursionError for one
    nested past the interpreter (before the wrapper's own checks could name it): that
    argument is then refused by name (`check_option`)."""
    try:
        gym.utils.RecordConstructorArgs.__init__(
            wrapper, **{name: plain(value) for name, value in kwargs.items()}
        )
    except RecursionError:
        for name, value in kwargs.items():
            check_option(value, name)
        raise
    except TypeError:  # ("cannot pickle 'generator' object", naming no argument)
        for name, value in kwargs.items():
            try:
                copy.deepcopy(value)
            except TypeError:
                raise TypeError(
                    f"Expect `{name}` to be a value the wrapper can keep a copy of (a list, "
                    f"not a generator or an iterator), got {brief(value)}"
                ) from None
        raise


def require_oracle(env: gym.Env, methods: tuple[str, ...], wrapper: str, hint: str = "") -> None:
    """Raise ``TypeError`` at construction when the unwrapped env lacks an oracle method."""
    get_oracle(env, methods, needed_by=wrapper, hint=hint)


def env_id_of(env: gym.Env) -> str:
    """The registered id of ``env`` (its class name when it was not made by id)."""
    spec = env.unwrapped.spec
    return spec.id if spec is not None else type(env.unwrapped).__name__


def seed_sequence(*values: int) -> np.random.SeedSequence:
    """``np.random.SeedSequence(list(values))``, for a fifth fewer instructions.

    SeedSequence splits each int of a list into its 32-bit words (low first; 0 is one word)
    with NumPy calls per int; given those words as a uint32 array it takes them as they are,
    and mixes the same entropy. The wrappers build several per episode (a seeded reset, an
    error's turn), so the split is done here, in plain Python.

    Example:
        >>> (seed_sequence(2**40 + 7, 0).generate_state(2)
        ...  == np.random.SeedSequence([2**40 + 7, 0]).generate_state(2)).all()
        np.True_
    """
    words = []
    for value in values:
        value = int(value)
        if value < 0:
            raise ValueError(f"Expect seed values to be ints >= 0, got {brief(value)}")
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        while value:
            words.append(value & 0xFFFFFFFF)
            value >>= 32
    return np.random.SeedSequence(np.array(words, dtype=np.uint32))


def seeded_rng(*values: int) -> np.random.Generator:
    """``np.random.default_rng(list(values))``: the same generator, built from `seed_sequence`."""
    return np.random.Generator(np.random.PCG64(seed_sequence(*values)))


class EpisodeSeeder:
    """Per-episode seeds that follow Gymnasium's seeding rule, for one wrapper.

    ``reset(seed=s)`` restarts the stream from ``s`` (salted by the wrapper's
    name, so two wrappers seeded alike draw independent numbers); a reset
    without a seed continues it (vector autoreset); an env never seeded draws
    its stream from OS entropy. The global NumPy RNG is never touched.
    """

    def __init__(self, salt: str):
        self._salt = zlib.crc32(salt.encode())
        self._rng: np.random.Generator | None = None

    def stream(self, seed: int | None) -> np.random.Generator:
        """The wrapper's generator: restarted from ``seed`` when given, else continued."""
        if seed is not None:
            # (the whole seed: masked to 63 bits, seeds s and s + 2**63 drew the same budgets
            # and errors)
            self._rng = seeded_rng(int(seed), self._salt)
        elif self._rng is None:
            self._rng = np.random.default_rng()
        return self._rng

    def next_seed(self, seed: int | None) -> int:
        """A seed for one episode, drawn from `stream`."""
        return int(self.stream(seed).integers(2**63))

    @contextlib.contextmanager
    def undone_on_failure(self) -> Iterator[None]:
        """Undo the block's draws (a restart too) when it raises: a reset that the env below
        refuses (a seed a TextWorld family cannot play) draws nothing, as a reset refused
        for its arguments does, and the next reset plays what it would have."""
        rng = self._rng
        state = None if rng is None else rng.bit_generator.state
        try:
            yield
        except BaseException:
            self._rng = rng
            if rng is not None:
                rng.bit_generator.state = state
            raise


def require_single(env: gym.Env, cls: type) -> None:
    """Raise ``ValueError`` when ``env`` already contains a ``cls`` (its info keys would clash)."""
    if find_wrapper(env, cls) is not None:
        raise ValueError(f"{cls.__name__} is already in this stack; wrap an env with it only once")


def spec_with_limit(wrapper: gym.Wrapper, limit: int | None) -> Any:
    """``wrapper``'s spec (Gymnasium's, cached) with ``max_episode_steps`` = ``limit``: what a
    budget wrapper says its episodes last (None: it varies), for the wrappers that read it."""
    if wrapper._cached_spec is None:
        spec = gym.Wrapper.spec.fget(wrapper)  # type: ignore[attr-defined]
        if spec is not None:
            wrapper._cached_spec = dataclasses.replace(spec, max_episode_steps=limit)
    return wrapper._cached_spec
