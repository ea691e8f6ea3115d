"""`check_group_seeding`: does an env keep what a GRPO group needs? Run it on anyone's env.

An LLM-RL trainer plays K attempts of one task and compares their returns (a
GRPO group); that comparison means something only if the K attempts start in
the same state, their flags say why each ended, and nothing outside the env
(another library seeding Python's RNG, a previous episode) leaks in. The checks,
each run to the end and reported apart (a failure never hides the next one):

- ``same_start``: K resets with one seed, on one instance and on fresh ones,
  give the same episode under the same actions (observations, rewards, flags
  and info, step by step).
- ``seeds_differ``: different seeds give different episodes (an env that
  ignores its seed passes ``same_start`` and gives every group the same task).
- ``own_rng``: reseeding Python's and NumPy's global RNG before every reset and
  step changes nothing: the env's randomness is its own.
- ``leaves_global_rng``: making, resetting and stepping the env leave Python's
  and NumPy's global RNG as they were (an env that seeds them reseeds the
  trainer's sampling and every other env in the process).
- ``clean_reset``: a reset in the middle of an episode gives the same episode
  as a fresh one (no turn count, inventory or history carried over).
- ``cap_truncates``: spending turns up to the turn cap T ends the episode on
  turn T with ``truncated`` and not ``terminated``: running out of turns is
  not the game's end, and a trainer that bootstraps or masks on the flags must
  be able to tell them apart.

The env needs only Gymnasium's two calls (`SeedableEnv`): ``reset(seed=s)`` ->
``(obs, info)`` and ``step(action)`` -> ``(obs, reward, terminated, truncated,
info)``. Gymnasium and GEM envs have them; anything else (TextArena's
multi-player API, an OpenEnv client) goes through a few-line adapter: see the
guide's "Checking group seeding" section.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from turnbudget._checks import brief, check_positive_int, is_int
from turnbudget.envs.core import INFO_ADMISSIBLE_ACTIONS

__all__ = ["CHECKS", "GroupSeedingReport", "SeedableEnv", "SeedingFailure", "check_group_seeding"]

#: Hang guards on a typo (``group_size=10**9``): the most attempts per seed, turns per attempt.
MAX_GROUP_SIZE = 1024
MAX_STEPS = 100_000

#: The checks, in the order they run and are reported.
CHECKS: tuple[str, ...] = (
    "same_start",
    "seeds_differ",
    "own_rng",
    "leaves_global_rng",
    "clean_reset",
    "cap_truncates",
)

Outcome = Literal["passed", "failed", "skipped"]
_MAX_CAP = 10_000  # cap_truncates plays up to the cap: a larger one is skipped, not played


@runtime_checkable
class SeedableEnv(Protocol):
    """What `check_group_seeding` needs of an env: Gymnasium's ``reset`` and ``step``.

    Gymnasium envs and GEM envs (``gem.Env``) have this shape already. For
    any other API, write an adapter with these two methods (and ``close`` if
    the env holds resources). Optional attributes the checker reads:

    - ``remote`` (bool): the env runs in another process (an OpenEnv client):
      ``own_rng`` and ``leaves_global_rng`` are skipped, since this process's
      global RNG cannot reach it.
    """

    def reset(self, *, seed: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode fully determined by ``seed``; return ``(observation, info)``."""
        ...

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Play one turn; return ``(observation, reward, terminated, truncated, info)``."""
        ...


@dataclass(frozen=True)
class SeedingFailure:
    """One failed check: which property, and what was seen.

    Attributes:
        check: The check's name (one of `CHECKS`).
        message: ``check_group_seeding[<check>] failed for <env>: ...``.
    """

    check: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class GroupSeedingReport:
    """What `check_group_seeding` found.

    Attributes:
        env: The env's name (its id, or its class name).
        checks: Check name -> ``"passed"``, ``"failed"`` or ``"skipped"``, in `CHECKS` order.
        failures: The failed checks, each with a message naming the property and what differed.
        skipped: Check name -> why it did not run.
    """

    env: str
    checks: dict[str, Outcome] = field(default_factory=dict)
    failures: list[SeedingFailure] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when no check failed (skipped checks do not count against it)."""
        return not self.failures

    def raise_if_failed(self) -> None:
        """Raise ``AssertionError`` with every failure's message, one per line, if any check failed."""
        if self.failures:
            raise AssertionError("\n".join(str(failure) for failure in self.failures))

    def __str__(self) -> str:
        lines = [f"check_group_seeding on {self.env}: {'passed' if self.passed else 'FAILED'}"]
        for check, outcome in self.checks.items():
            why = f" ({self.skipped[check]})" if check in self.skipped else ""
            lines.append(f"  {check:18} {outcome}{why}")
        lines += [f"  {failure}" for failure in self.failures]
        return "\n".join(lines)


class _Failed(Exception):
    """A check saw the property broken (message: what it saw)."""


EnvSource = str | SeedableEnv | Callable[[], SeedableEnv]
Transcript = list[str]  # one canonical JSON line per reset or step


def check_group_seeding(
    env: EnvSource,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    group_size: int = 4,
    steps: int = 8,
    actions: Sequence[Any] | None = None,
    idle_actions: Sequence[Any] = ("look",),
    turn_cap: int | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
) -> GroupSeedingReport:
    """Check that an env keeps what a GRPO group needs; run every check and report each.

    Python's and NumPy's global RNG are put back as they were afterwards,
    whatever the env did to them.

    Args:
        env: A registered Gymnasium id (made with ``gymnasium.make(id, **env_kwargs)``),
            a zero-argument factory (an env class works), or an env instance
            (then every attempt runs on it: no fresh instances).
        seeds: Reset seeds. ``same_start`` runs on each; ``seeds_differ``
            needs two; the others use the first.
        group_size: K, the attempts per seed in ``same_start`` (every other
            one on a fresh instance when a factory or id is given).
        steps: Turns per attempt (fewer when the episode ends first).
        actions: What the attempts play, drawn per turn by one fixed-seed
            generator (the same draws for every attempt and every seed). None:
            ``info["admissible_actions"]`` when the env gives it, else ``idle_actions``.
        idle_actions: Actions that spend a turn without ending the game,
            played in turn up to the cap in ``cap_truncates`` (``"look"``
            for turnbudget's games; e.g. ``"\\\\boxed{up}"`` for GEM's Sokoban).
        turn_cap: The env's turn limit T. None: ``info["turn_budget"]`` from
            the reset, if given; else ``cap_truncates`` is skipped.
        env_kwargs: Keyword arguments for ``gymnasium.make`` (ids only).

    Returns:
        A `GroupSeedingReport`: ``passed`` is a bool; ``failures`` name the
        properties broken, with what differed and where.

    Raises:
        TypeError: ``env`` is none of the above.
        ValueError: A bad argument (no seeds, a group smaller than 2, a cap under 1...).

    Example:
        >>> import turnbudget
        >>> from turnbudget.utils import check_group_seeding
        >>> report = check_group_seeding("turnbudget/Maze-Easy-v0", group_size=2, steps=3)
        >>> report.passed, report.checks["cap_truncates"]
        (True, 'passed')
    """
    make, name = _source(env, env_kwargs)
    if (
        isinstance(seeds, (str, bytes))
        or not isinstance(seeds, (Sequence, np.ndarray))
        or not len(seeds)
        or not all(is_int(seed) and seed >= 0 for seed in seeds)
    ):
        raise ValueError(f"Expect `seeds` to be one or more ints >= 0, got {brief(seeds)}")
    if check_positive_int(steps, "steps") > MAX_STEPS:
        raise ValueError(f"Expect `steps` to be at most {MAX_STEPS:,}, got {steps:,}")
    if check_positive_int(group_size, "group_size") < 2:
        raise ValueError(
            f"Expect `group_size` to be at least 2 (K attempts to compare), got {group_size}"
        )
    if group_size > MAX_GROUP_SIZE:
        raise ValueError(
            f"Expect `group_size` to be at most {MAX_GROUP_SIZE:,}, got {group_size:,}"
        )
    if actions is not None and (
        isinstance(actions, (str, bytes)) or not isinstance(actions, Sequence) or not actions
    ):
        raise ValueError(
            f"Expect `actions` to be a non-empty sequence or None, got {brief(actions)}"
        )
    if turn_cap is not None:
        check_positive_int(turn_cap, "turn_cap")
    if isinstance(idle_actions, (str, bytes)) or not isinstance(idle_actions, Sequence):
        raise ValueError(f"Expect `idle_actions` to be a sequence, got {brief(idle_actions)}")
    if not idle_actions:
        raise ValueError("Expect `idle_actions` to hold at least one action, got none")
    run = _Run(
        make,
        name,
        list(dict.fromkeys(seeds)),
        group_size,
        steps,
        actions,
        list(idle_actions),
        turn_cap,
    )
    saved = _global_rng_state()
    try:
        return run.all_checks()
    finally:
        run.close()
        random.setstate(saved[0])
        np.random.set_state(saved[1])


# -- plumbing ----------------------------------------------------------------------------


def _source(
    env: EnvSource, env_kwargs: Mapping[str, Any] | None
) -> tuple[Callable[[], tuple[SeedableEnv, bool]], str]:
    """(make: () -> (an env, whether it is fresh and ours to close), a name)."""
    if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
        raise TypeError(f"Expect `env_kwargs` to be a mapping or None, got {brief(env_kwargs)}")
    kwargs = dict(env_kwargs or {})
    if isinstance(env, str):
        return (lambda: (gym.make(env, **kwargs), True)), env
    if kwargs:
        raise ValueError("Expect `env_kwargs` only with an env id")
    if not isinstance(env, type) and callable(getattr(env, "step", None)):
        if not callable(getattr(env, "reset", None)):
            raise TypeError(
                f"Expect the env to have reset(seed=...), {type(env).__name__} has none"
            )
        return (lambda: (env, False)), _name(env)
    if callable(env):
        name = getattr(env, "__name__", type(env).__name__)

        def make() -> tuple[SeedableEnv, bool]:
            made = env()
            if not (
                callable(getattr(made, "step", None)) and callable(getattr(made, "reset", None))
            ):
                raise TypeError(
                    f"Expect the factory {name} to return an env with reset() and step(), "
                    f"got {brief(made)}"
                )
            return made, True

        return make, name
    raise TypeError(
        "Expect an env id, an env with reset(seed=...) and step(action), or a zero-argument "
        f"factory, got {type(env).__name__}"
    )


def _name(env: Any) -> str:
    spec = getattr(env, "spec", None)
    if getattr(spec, "id", None):
        return spec.id
    return type(getattr(env, "unwrapped", env)).__name__


def _global_rng_state() -> tuple[Any, Any]:
    return random.getstate(), np.random.get_state()


def _changed_global_rngs(a: tuple[Any, Any], b: tuple[Any, Any]) -> list[str]:
    """Which of the global RNGs differ between two snapshots."""
    changed = []
    if a[0] != b[0]:
        changed.append("Python's `random`")
    if not all(np.array_equal(x, y) for x, y in zip(a[1], b[1])):
        changed.append("NumPy's `np.random`")
    return changed


def _canonical(value: Any, path: frozenset[int] = frozenset()) -> Any:
    """A JSON-able form in which equal values compare equal (arrays, NumPy scalars, tuples,
    objects by their attributes: `_object_form`). ``path``: the ids of the containers
    above ``value``, so that one holding itself (a tree whose nodes name their parent) is
    written once, not followed for ever."""
    if isinstance(value, (Mapping, list, tuple)) or _attributes(value) is not None:
        if id(value) in path:
            return f"<{type(value).__qualname__}: a reference back to a value above it>"
        path = path | {id(value)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v, path) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v, path) for v in value]
    if isinstance(value, np.ndarray):
        return {"ndarray": str(value.dtype), "shape": list(value.shape), "data": value.tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return "nan"
    fields = _attributes(value)
    if fields is not None:
        return {"object": type(value).__qualname__, "attributes": _canonical(fields, path)}
    return value


def _attributes(value: Any) -> dict[str, Any] | None:
    """An object's attributes, where JSON has no form for it and it has a ``__dict__``: they
    stand for it (its default repr, ``<Item object at 0x7fd3...>``, differed for every fresh
    instance, and an env that put an object in its info failed ``same_start`` however well
    it was seeded)."""
    if isinstance(value, (str, int, float, bool, type(None), np.ndarray, np.generic)):
        return None
    fields = getattr(value, "__dict__", None)
    return fields if isinstance(fields, dict) else None


def _line(*items: Any) -> str:
    return json.dumps([_item(item) for item in items], sort_keys=True)


def _item(value: Any) -> Any:
    """`_canonical` of one value of a transcript line, or for a value nested past Python's
    stack a digest of what it holds, read without recursion (`_deep_digest`): one stand-in
    for every such value let an env that ignores its seed pass."""
    try:
        return json.loads(json.dumps(_canonical(value), sort_keys=True, default=_addressless_repr))
    except RecursionError:
        return {"nested too deeply to show": _deep_digest(value)}


def _deep_digest(value: Any) -> str:
    """A digest of ``value``'s structure and atoms, walked with a stack of its own: equal
    for two values that hold the same, whatever their depth (a value met again is written
    as a reference to its first visit)."""
    digest = hashlib.blake2b(digest_size=16)
    seen: dict[int, int] = {}
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (str, int, float, bool, type(None))):
            digest.update(f"{type(item).__name__}:{item!r};".encode("utf-8", "backslashreplace"))
            continue
        if id(item) in seen:
            digest.update(f"ref:{seen[id(item)]};".encode())
            continue
        seen[id(item)] = len(seen)
        if isinstance(item, np.ndarray):
            digest.update(f"ndarray:{item.dtype}:{item.shape}:".encode() + item.tobytes())
            continue
        if isinstance(item, Mapping):
            digest.update(f"map:{len(item)};".encode())
            for key in sorted(item, key=str):
                stack.extend((item[key], str(key)))
            continue
        if isinstance(item, (list, tuple)):
            digest.update(f"seq:{len(item)};".encode())
            stack.extend(reversed(item))
            continue
        fields = _attributes(item)
        if fields is not None:
            digest.update(f"object:{type(item).__qualname__};".encode())
            stack.append(fields)
            continue
        digest.update(f"{_addressless_repr(item)};".encode("utf-8", "backslashreplace"))
    return digest.hexdigest()


def _addressless_repr(value: Any) -> str:
    """An object JSON has no form for and that has no attributes (`_canonical` writes those
    that have), as its repr without a memory address."""
    return _ADDRESS.sub("", repr(value))


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


_FIELDS = {
    "reset": ("observation", "info"),
    "step": ("action", "observation", "reward", "terminated", "truncated", "info"),
}


def _first_difference(a: Transcript, b: Transcript) -> str:
    """Where two transcripts part: "the reset: observation ...", "step 3: info['x'] 1 vs 2"."""
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            kind, *xs = json.loads(x)
            _, *ys = json.loads(y)
            where = "the reset" if kind == "reset" else f"step {index}"
            name, u, v = next(f for f in zip(_FIELDS[kind], xs, ys) if f[1] != f[2])
            return f"{where}: {_describe(name, u, v)}"
    return f"one episode has {len(a) - 1} steps, the other {len(b) - 1}"


def _describe(name: str, u: Any, v: Any) -> str:
    """What differs between two values of one field: the first info key, where texts part."""
    if isinstance(u, dict) and isinstance(v, dict):
        missing = object()
        keys = sorted(k for k in set(u) | set(v) if u.get(k, missing) != v.get(k, missing))
        return f"info[{keys[0]!r}] {brief(u.get(keys[0]))} vs {brief(v.get(keys[0]))}"
    if isinstance(u, str) and isinstance(v, str):
        at = next((i for i, (p, q) in enumerate(zip(u, v)) if p != q), min(len(u), len(v)))
        if at > 0:
            return f"{name} from character {at} on: {brief(u[at : at + 60])} vs {brief(v[at : at + 60])}"
    return f"{name} {brief(u)} vs {brief(v)}"


def _unpack_reset(result: Any) -> tuple[Any, dict]:
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
        raise _Failed(
            f"reset() returned {brief(result)}; expect (observation, info) with info a dict"
            " (wrap the env in an adapter: see SeedableEnv)"
        )
    return result


def _unpack_step(result: Any) -> tuple[Any, Any, bool, bool, dict]:
    if not (isinstance(result, tuple) and len(result) == 5):
        size = len(result) if isinstance(result, tuple) else type(result).__name__
        raise _Failed(
            f"step() returned {size} values; expect (observation, reward, terminated, truncated,"
            " info) (wrap the env in an adapter: see SeedableEnv)"
        )
    obs, reward, terminated, truncated, info = result
    if not isinstance(terminated, (bool, np.bool_)) or not isinstance(truncated, (bool, np.bool_)):
        raise _Failed(
            f"step() returned terminated={brief(terminated)}, truncated={brief(truncated)}; expect two bools"
        )
    return obs, reward, bool(terminated), bool(truncated), info if isinstance(info, dict) else {}


def _reseeder(start: int) -> Callable[[], None]:
    """Before each call: reseed Python's and NumPy's global RNG, with a new value every time."""
    values = itertools.count(start)

    def reseed() -> None:
        value = next(values)
        random.seed(value)
        np.random.seed(value)

    return reseed


class _Run:
    """One call of `check_group_seeding`: the envs it made, and the checks over them."""

    def __init__(
        self,
        make: Callable[[], tuple[SeedableEnv, bool]],
        name: str,
        seeds: list[int],
        group_size: int,
        steps: int,
        actions: Sequence[Any] | None,
        idle_actions: list[Any],
        turn_cap: int | None,
    ):
        self.make, self.name, self.seeds = make, name, seeds
        self.group_size, self.steps, self.actions = group_size, steps, actions
        self.idle_actions, self.turn_cap = idle_actions, turn_cap
        self.opened: list[SeedableEnv] = []
        self._fresh = False
        self.report = GroupSeedingReport(name)
        self.baseline: dict[int, Transcript] = {}
        self._pinned: Transcript | str | None = None

    # -- envs --------------------------------------------------------------------

    def new_env(self) -> SeedableEnv:
        """A fresh instance when the source makes them, else the one instance. The previous
        fresh one is closed first: no check plays two at once, and a served or otherwise
        bounded env (an OpenEnv server's sessions, interpreters) may allow only a few."""
        self.close()
        env, fresh = self.make()
        if fresh:
            self.opened.append(env)
        self._fresh = fresh
        return env

    def close(self) -> None:
        """Close the fresh instances made so far."""
        opened, self.opened = self.opened, []
        for env in opened:
            close = getattr(env, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):  # best effort: the report is what matters
                    close()

    # -- episodes ----------------------------------------------------------------

    def episode(
        self,
        env: SeedableEnv,
        seed: int,
        before_call: Callable[[], None] | None = None,
        steps: int | None = None,
    ) -> Transcript:
        """Reset with ``seed`` and play ``steps`` turns (fewer if it ends); the transcript."""
        rng = np.random.default_rng(0)  # the same draws for every seed; never the global RNG
        idle = itertools.cycle(self.idle_actions)
        if before_call:
            before_call()
        obs, info = _unpack_reset(env.reset(seed=seed))
        transcript = [_line("reset", obs, info)]
        for _ in range(self.steps if steps is None else steps):
            action = self.choose(info, rng, idle)
            if before_call:
                before_call()
            obs, reward, terminated, truncated, info = _unpack_step(env.step(action))
            transcript.append(_line("step", action, obs, reward, terminated, truncated, info))
            if terminated or truncated:
                break
        return transcript

    def choose(self, info: dict, rng: np.random.Generator, idle: Iterator[Any]) -> Any:
        options = self.actions
        if options is None:
            admissible = info.get(INFO_ADMISSIBLE_ACTIONS)
            options = admissible if isinstance(admissible, list) and admissible else None
        if not options:
            return next(idle)
        return options[int(rng.integers(len(options)))]

    def reference(self, seed: int) -> Transcript:
        if seed not in self.baseline:
            self.baseline[seed] = self.episode(self.new_env(), seed)
        return self.baseline[seed]

    # -- the checks --------------------------------------------------------------

    def all_checks(self) -> GroupSeedingReport:
        remote = bool(getattr(self.new_env(), "remote", False))
        self.run("same_start", self.same_start)
        if len(self.seeds) < 2:
            self.skip("seeds_differ", "needs two seeds")
        else:
            self.run("seeds_differ", self.seeds_differ)
        if remote:
            for check in ("own_rng", "leaves_global_rng"):
                self.skip(check, "the env runs in another process (remote=True)")
        else:
            self.run("own_rng", self.own_rng)
            self.run("leaves_global_rng", self.leaves_global_rng)
        self.run("clean_reset", self.clean_reset)
        self.run("cap_truncates", self.cap_truncates)
        return self.report

    def run(self, check: str, body: Callable[[], str | None]) -> None:
        """Run one check: a returned string skips it (the reason); `_Failed` or a crash fails it."""
        try:
            skipped = body()
        except _Failed as error:
            self.fail(check, str(error))
        except Exception as error:  # a crash inside a check is that check's failure
            self.fail(check, f"raised {type(error).__name__}: {brief(str(error))}")
        else:
            if skipped:
                self.skip(check, skipped)
            else:
                self.report.checks[check] = "passed"

    def fail(self, check: str, message: str) -> None:
        self.report.checks[check] = "failed"
        self.report.failures.append(
            SeedingFailure(check, f"check_group_seeding[{check}] failed for {self.name}: {message}")
        )

    def skip(self, check: str, why: str) -> None:
        self.report.checks[check] = "skipped"
        self.report.skipped[check] = why

    def same_start(self) -> None:
        for seed in self.seeds:
            env = self.new_env()
            first = self.baseline[seed] = self.episode(env, seed)
            for attempt in range(2, self.group_size + 1):
                if attempt % 2 == 0:  # every other attempt on a fresh instance, when there are any
                    env = self.new_env()
                where = (
                    "a fresh instance" if self._fresh and attempt % 2 == 0 else "the same instance"
                )
                other = self.episode(env, seed)
                if other != first:
                    raise _Failed(
                        f"attempt {attempt} of {self.group_size} with seed {seed} (on {where}) "
                        f"differs from attempt 1 at {_first_difference(first, other)}"
                    )

    def seeds_differ(self) -> None:
        episodes = [self.reference(seed) for seed in self.seeds]
        if all(episode == episodes[0] for episode in episodes[1:]):
            raise _Failed(
                f"seeds {self.seeds} all gave the same episode: the seed does not choose the task "
                "(every group plays the same one, unless the game has a single start by design)"
            )

    def pinned(self) -> Transcript | str:
        """The first seed's episode on a fresh instance with the global RNG pinned (reseeded
        the same way before every call), or why there is none: the same pinned episode on a
        second fresh instance differs, so the env is not reproducible by itself."""
        if self._pinned is None:
            seed = self.seeds[0]
            self._pinned = self.episode(self.new_env(), seed, before_call=_reseeder(1))
            if self._fresh:
                again = self.episode(self.new_env(), seed, before_call=_reseeder(1))
                if again != self._pinned:
                    self._pinned = (
                        f"seed {seed} gives different episodes on two fresh instances even with "
                        f"the global RNG pinned ({_first_difference(self._pinned, again)}): "
                        "see same_start"
                    )
        return self._pinned

    def own_rng(self) -> str | None:
        first = self.pinned()
        if isinstance(first, str):
            return first
        seed = self.seeds[0]
        other = self.episode(self.new_env(), seed, before_call=_reseeder(7919))
        if other != first:
            raise _Failed(
                f"with Python's and NumPy's global RNG reseeded to other values before every "
                f"call, seed {seed} gave a different episode: {_first_difference(first, other)} "
                "(the env draws from the global RNG)"
            )
        return None

    def leaves_global_rng(self) -> None:
        seed = self.seeds[0]
        self.close()  # closing the previous instance is not this one's making
        before = _global_rng_state()
        env = self.new_env()
        changed = _changed_global_rngs(before, _global_rng_state())
        if changed:
            raise _Failed(
                f"making the env changed {' and '.join(changed)}: the env seeds or draws from "
                "the global RNG, which is the trainer's"
            )
        calls = itertools.chain(["reset()"], (f"step {n}" for n in itertools.count(1)))
        state: dict[str, Any] = {}

        def watch() -> None:  # called before each call: judge the previous one
            now = _global_rng_state()
            if state:
                changed = _changed_global_rngs(state["before"], now)
                if changed:
                    raise _Failed(
                        f"{state['call']} (seed {seed}) changed {' and '.join(changed)}: the env "
                        "seeds or draws from the global RNG, which is the trainer's"
                    )
            state["before"], state["call"] = now, next(calls)

        self.episode(env, seed, before_call=watch)
        watch()

    def clean_reset(self) -> str | None:
        first = self.pinned()
        if isinstance(first, str):
            return first
        seed = self.seeds[0]
        env = self.new_env()
        played = max(1, self.steps // 2)
        for other_seed in dict.fromkeys((seed, *self.seeds[1:2])):
            # Mid-episode: reset and play part of an episode, then reset with `seed` again.
            self.episode(env, other_seed, steps=played)
            again = self.episode(env, seed, before_call=_reseeder(1))
            if again != first:
                raise _Failed(
                    f"reset(seed={seed}) after {played} turn{'s' * (played != 1)} of an episode with seed "
                    f"{other_seed} gave a different episode than a fresh reset: "
                    f"{_first_difference(first, again)} (the reset kept state)"
                )
        return None

    def cap_truncates(self) -> str | None:
        ended_early = []
        env = self.new_env()
        for seed in self.seeds:
            _, info = _unpack_reset(env.reset(seed=seed))
            cap = self.turn_cap if self.turn_cap is not None else info.get("turn_budget")
            if cap is None:
                return "no turn cap: pass turn_cap (the env's turn limit) or report info['turn_budget']"
            if cap > _MAX_CAP:
                return f"the turn cap {cap} is over {_MAX_CAP:,} turns: check the env with a smaller one"
            idle = itertools.cycle(self.idle_actions)
            for turn in range(1, cap + 1):
                _, _, terminated, truncated, _ = _unpack_step(env.step(next(idle)))
                if terminated and truncated:
                    at = "at the turn cap" if turn == cap else "before the turn cap"
                    raise _Failed(
                        f"seed {seed}, turn {turn} of {cap} ({at}): terminated and truncated are both "
                        "True (the cap must truncate, never also terminate)"
                    )
                if truncated and turn < cap:
                    raise _Failed(
                        f"seed {seed}: truncated on turn {turn}, before the turn cap {cap}"
                    )
                if terminated and turn == cap:
                    raise _Failed(
                        f"seed {seed}: the turn cap {cap} ended the episode with terminated=True, "
                        "truncated=False (the cap is folded into terminated)"
                    )
                if terminated:
                    ended_early.append(f"seed {seed} on turn {turn}")
                    break
            else:
                if not truncated:
                    raise _Failed(
                        f"seed {seed}: still running after {cap} step() calls, the turn cap (the "
                        "cap is off by one, not enforced, or not every step counts as a turn)"
                    )
                return None
        return (
            f"every episode ended before the cap {cap} ({', '.join(ended_early)}): pass idle_actions "
            "that spend a turn without ending the game"
        )
