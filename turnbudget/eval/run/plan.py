"""Configuration and planning: what an evaluation runs, decided before anything runs.

`make_config` checks `evaluate`'s arguments and resolves them into an
`EvalConfig` (everything that determines the results, logged as ``run.json``
and compared on resume); `plan_episodes` turns it into the sorted list of
`EpisodeSpec` that the backends execute. An episode is fully determined by its
spec: the env is reset with the task seed and the agent with `agent_seed`,
so results depend neither on the backend nor on the order of execution.

The argument checks every kind of run shares (task seeds, K and T values,
retries) and the one seed derivation (`derive_seed`) live here too.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import json
import operator
import os
import re
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from collections.abc import Set as AbstractSet
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from typing import Any, overload

import numpy as np

from turnbudget._checks import (
    MAX_TURN_BUDGET,
    brief,
    check_agent,
    check_bool,
    check_label,
    check_option,
    check_seed,
    is_int,
    is_listlike,
)
from turnbudget.agents.base import agent_flags
from turnbudget.eval.run.agent_view import budget_visible
from turnbudget.records import RunPlan, format_episode_id, read_config_dict

__all__ = [
    "MAX_BUDGETS",
    "MAX_EPISODES_PER_TASK",
    "MAX_RETRIES",
    "MAX_TASKS",
    "MAX_TASK_SEED",
    "MODES",
    "EpisodePlan",
    "EpisodeSpec",
    "EvalConfig",
    "GridConfig",
    "agent_name",
    "agent_seed",
    "check_backend_options",
    "check_retries",
    "derive_seed",
    "make_config",
    "plan_episodes",
    "positive_ints",
    "read_config",
    "record_plan",
    "task_seeds",
]

MODES = ("auto", "truncate", "rerun", "both")
ERROR_DRAWS = ("per_repeat", "shared")
#: The most tasks a run may have (its ``run.json`` lists every task seed).
MAX_TASKS = 1_000_000
#: The most episodes per task (``n``, and so every K): a typo such as 10**20 is refused, not
#: planned until the memory runs out.
MAX_EPISODES_PER_TASK = 100_000
#: The most budgets T in one grid: each task's tally keeps a row of them per budget run (a
#: rerun's), so |T| = 20,000 held about 3 GB a task.
MAX_BUDGETS = 1_000
#: The most times a failed episode is rerun (`check_retries`).
MAX_RETRIES = 100
#: The largest task seed: an int32, as the turn budgets and the records' counts.
MAX_TASK_SEED = 2**31 - 1


class GridConfig:
    """What every run's configuration shares (an `EvalConfig`, a team run's `TeamConfig`):
    its JSON form (``run.json``) and the budgets its episodes run at."""

    ts: tuple[int, ...]
    mode: str

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)  # type: ignore[call-overload]  # (its subclasses are dataclasses)
        for key in ("envs", "ks", "ts", "tasks"):
            d[key] = list(d[key])
        return d

    @property
    def run_budgets(self) -> tuple[int, ...]:
        """The budgets episodes are actually run at."""
        return (max(self.ts),) if self.mode == "truncate" else tuple(sorted(set(self.ts)))


@dataclass(frozen=True)
class EvalConfig(GridConfig):
    """Everything that determines an evaluation's results (JSON-serialisable).

    The backend, worker count, progress bar and output path are not part of
    it: they change how a run executes, never what it produces.
    """

    label: str
    envs: tuple[str, ...]
    agent: str
    ks: tuple[int, ...]
    ts: tuple[int, ...]
    n: int
    tasks: tuple[int, ...]
    mode: str  # resolved: truncate | rerun | both
    reveal: Any = None
    errors: Any = None
    seed: int = 0
    needs_oracle: bool = False
    budget_aware: bool = False
    record_steps: bool = True
    error_draws: str = "per_repeat"  # or "shared": every repeat of a task faces the same draws

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvalConfig:
        """The configuration `to_dict` gave (a run's ``run.json``), checked field by field:
        ``ValueError`` names the first field that is missing, unknown or wrong."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise ValueError(f"Expect only the fields {names}, got unknown ones: {unknown}")
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.name not in d]
        if missing:
            raise ValueError(f"Expect the fields {missing} too: they are missing")
        d = dict(d)
        for key in ("envs", "ks", "ts", "tasks"):
            if not isinstance(d[key], list):
                raise ValueError(f"Expect `{key}` to be a list, got {d[key]!r}")
        if not d["envs"] or not all(isinstance(e, str) and e for e in d["envs"]):
            raise ValueError(f"Expect `envs` to be env ids, got {d['envs']!r}")
        if len(set(d["envs"])) != len(d["envs"]):
            raise ValueError(f"Expect distinct env ids, got {d['envs']}")
        d["envs"] = tuple(d["envs"])
        d["ks"] = positive_ints(d["ks"], "ks")
        d["ts"] = positive_ints(d["ts"], "ts", most=MAX_TURN_BUDGET, count=MAX_BUDGETS)
        if not is_int(d["n"]) or d["n"] < max(d["ks"]):
            raise ValueError(f"Expect `n` to be an int >= max(ks) = {max(d['ks'])}, got {d['n']!r}")
        d["tasks"] = tuple(d["tasks"])
        if not d["tasks"] or not all(is_int(s) and s >= 0 for s in d["tasks"]):
            raise ValueError(f"Expect `tasks` to be non-negative seeds, got {list(d['tasks'])}")
        if len(set(d["tasks"])) != len(d["tasks"]):
            raise ValueError(f"Expect distinct `tasks`, got {list(d['tasks'])}")
        for key, allowed in (("mode", MODES[1:]), ("error_draws", ERROR_DRAWS)):
            if key in d and d[key] not in allowed:
                raise ValueError(f"Expect `{key}` to be one of {allowed}, got {d[key]!r}")
        for key in ("label", "agent"):
            if not isinstance(d[key], str) or not d[key]:
                raise ValueError(f"Expect `{key}` to be a non-empty string, got {brief(d[key])}")
        if "seed" in d and not (is_int(d["seed"]) and d["seed"] >= 0):
            # (a negative one was NumPy's bare "expected non-negative integer" in the report)
            raise ValueError(f"Expect `seed` to be an int >= 0, got {d['seed']!r}")
        for key in ("needs_oracle", "budget_aware", "record_steps"):
            if key in d and not isinstance(d[key], bool):
                raise ValueError(f"Expect `{key}` to be true or false, got {d[key]!r}")
        # (600 deep: JSON's reader took it, and `to_dict` failed the report with RecursionError)
        check_logged_settings(errors=d.get("errors"), reveal=d.get("reveal"))
        return cls(**d)


def derive_seed(*parts: Any) -> int:
    """A 32-bit seed from ints and strings (strings by CRC32): a pure function of ``parts``.

    Every seed a run draws comes from here: an episode's agent seed, a team
    member's, a probe's plan, errors and agents.

    Example:
        >>> derive_seed(0, "turnbudget/Maze-Easy-v0", 3, 1) == agent_seed(0, "turnbudget/Maze-Easy-v0", 3, 1)
        True
    """
    words = [zlib.crc32(p.encode()) if isinstance(p, str) else int(p) for p in parts]
    return int(np.random.SeedSequence(words).generate_state(1, dtype=np.uint32)[0])


def task_seeds(tasks: Any, name: str = "tasks") -> tuple[int, ...]:
    """Task seeds from a count ``m`` (seeds ``0..m-1``) or a list of distinct seeds >= 0:
    at most `MAX_TASKS` of them, each at most `MAX_TASK_SEED` (checked before any is made);
    ``name``: the argument's, for the messages.

    Example:
        >>> task_seeds(3), task_seeds([7, 2])
        ((0, 1, 2), (7, 2))
        >>> task_seeds(10**20)
        Traceback (most recent call last):
        ...
        ValueError: Expect `tasks` to be a positive int (a count from 1 to 1,000,000) or a list of seeds, got 100000000000000000000
    """
    if is_int(tasks):
        if not 1 <= tasks <= MAX_TASKS:
            raise ValueError(
                f"Expect `{name}` to be a positive int (a count from 1 to {MAX_TASKS:,}) or a list "
                f"of seeds, "
                f"got {brief(tasks)}"
            )
        return tuple(range(int(tasks)))
    if not is_listlike(tasks):
        raise ValueError(
            f"Expect `{name}` to be a positive int or a list of seeds, got {brief(tasks)}"
        )
    seeds = tuple(itertools.islice(tasks, MAX_TASKS + 1))  # (a huge range is never built)
    if len(seeds) > MAX_TASKS:
        raise ValueError(f"Expect at most {MAX_TASKS:,} task seeds in `{name}`, got more")
    if (
        not seeds
        or not all(is_int(s) and 0 <= s <= MAX_TASK_SEED for s in seeds)
        or len(set(seeds)) != len(seeds)
    ):
        raise ValueError(
            f"Expect `{name}` to be distinct non-negative seeds (each at most "
            f"{MAX_TASK_SEED:,}), got {brief(tasks if isinstance(tasks, Sequence) else seeds)}"
        )
    return tuple(int(s) for s in seeds)


def check_retries(retries: Any) -> int:
    """``retries`` when it is an int from 0 to `MAX_RETRIES` (an episode that always fails
    is rerun that many times: 10**20 would never end)."""
    if not is_int(retries) or not 0 <= retries <= MAX_RETRIES:
        raise ValueError(
            f"Expect `retries` to be a non-negative int (at most {MAX_RETRIES}), got {brief(retries)}"
        )
    return int(retries)


def check_backend_options(options: Any) -> dict[str, Any] | None:
    """``backend_options`` as a new dict when it is a mapping with string keys, or None."""
    if options is None:
        return None
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise ValueError(
            "Expect `backend_options` to be a dict of the backend's keyword arguments or None, "
            f"got {brief(options)}"
        )
    return dict(options)


def _values(values: Any, name: str) -> Iterable[Any]:
    """``values`` when it is a collection of values (not a string, a mapping or a number)."""
    if not is_listlike(values):
        raise ValueError(f"Expect `{name}` to be a list of positive ints, got {brief(values)}")
    return values


def positive_ints(
    values: Iterable[Any], name: str, most: int | None = None, count: int | None = None
) -> tuple[int, ...]:
    """Distinct positive ints, sorted (K values, budgets): each at most ``most``, at most
    ``count`` of them."""
    values = _values(values, name)
    if count is not None:  # (a generator has no len: its first count + 1 values tell)
        size = len(values) if isinstance(values, Sized) else None
        values = list(itertools.islice(values, count + 1))
        if len(values) > count:
            got = f"{size:,}" if size is not None else "more"
            raise ValueError(f"Expect `{name}` to hold at most {count:,} values, got {got}")
    out = []
    for v in values:
        if not is_int(v) or v < 1:
            raise ValueError(f"Expect `{name}` to hold positive ints, got {brief(v)}")
        if most is not None and v > most:
            raise ValueError(f"Expect `{name}` to hold ints at most {most:,}, got {brief(v)}")
        out.append(int(v))
    if not out:
        raise ValueError(f"Expect `{name}` to hold at least one value, got none")
    if len(set(out)) != len(out):
        raise ValueError(f"Expect `{name}` values to be distinct, got {out}")
    return tuple(sorted(out))


def agent_name(agent: Any) -> str:
    """An agent's name, the default label of its run: its ``name``, else its class's name."""
    return str(getattr(agent, "name", None) or type(agent).__name__)


def _agent_repr(agent: Any) -> str:
    """A repr that is the same in every process: a default repr (which holds a memory
    address) is the class's name, and any other address is taken out (a dataclass holding
    a NumPy Generator shows ``Generator(PCG64) at 0x7F3E...``). An agent built from a
    spec of outside code carries where it came from (`agent_origin`: digests of its arguments
    and of its code), which a default repr left out. What looks like a secret is blanked, and
    so are such an agent's arguments (`turnbudget.agents.registry`: a dataclass agent's repr
    echoes the key it was given)."""
    from turnbudget.agents.registry import agent_origin
    from turnbudget.agents.secrets import redact

    origin = agent_origin(agent)
    try:
        text = _ordered_repr(agent)
    except (ValueError, RecursionError) as exc:  # (an int too long to write, nested too deep)
        check_agent(agent)  # (what is not an agent is told so first)
        raise ValueError(
            f"Cannot record the agent {type(agent).__qualname__}: its repr() failed "
            f"({brief(exc)}); a run is recorded and resumed by its agent's repr"
        ) from None
    if " object at 0x" in text:
        cls = type(agent)
        text = f"{cls.__module__}.{cls.__qualname__}"
    else:
        text = _ADDRESS.sub("", text)
    # (a dataclass agent's repr showed its api_key field, and its URL's password, as they were)
    text = redact(text)
    return text if origin is None else f"{text} [{origin}]"


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _ordered_repr(value: Any, depth: int = 0) -> str:
    """``repr(value)`` with every set's elements in sorted order, through lists, tuples, dicts
    and dataclasses with their generated repr: a set's own order follows the process's hash
    seed, so a dataclass agent holding a ``frozenset`` of words had another repr in the next
    process, and its run could not be resumed. Anything else: its own repr.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Avoiding:
        ...     avoid: frozenset = frozenset({"wait", "look", "inventory"})
        >>> _ordered_repr(Avoiding())
        "Avoiding(avoid=frozenset({'inventory', 'look', 'wait'}))"
    """
    if depth > 16:  # (a value that holds itself)
        return repr(value)
    kind = type(value)
    if kind in (set, frozenset) and not _hash_stable(value):
        inner = ", ".join(sorted(_ordered_repr(v, depth + 1) for v in value))
        if kind is set:
            return f"{{{inner}}}" if value else "set()"
        return f"frozenset({{{inner}}})" if value else "frozenset()"
    if kind is list:
        return "[" + ", ".join(_ordered_repr(v, depth + 1) for v in value) + "]"
    if kind is tuple:
        inner = ", ".join(_ordered_repr(v, depth + 1) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind is dict:
        items = (
            f"{_ordered_repr(k, depth + 1)}: {_ordered_repr(v, depth + 1)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    if _has_dataclass_repr(value):
        shown_fields = (f for f in fields(value) if f.repr)
        shown = ", ".join(
            f"{f.name}={_ordered_repr(getattr(value, f.name), depth + 1)}" for f in shown_fields
        )
        return f"{kind.__qualname__}({shown})"
    return repr(value)


def _hash_stable(values: Any) -> bool:
    """Whether the order of a set of ``values`` is the same in every process: numbers (and
    None, and tuples of them) hash alike whatever the hash seed, str and bytes do not. Such a
    set keeps its own repr, as runs recorded before sets were sorted have it."""
    return all(
        type(v) in (int, float, bool, complex, type(None)) or (type(v) is tuple and _hash_stable(v))
        for v in values
    )


def _has_dataclass_repr(value: Any) -> bool:
    """Whether ``value`` is a dataclass instance whose repr is the one `dataclasses` writes
    (recognized as `pprint` recognizes it)."""
    if not is_dataclass(value) or isinstance(value, type):
        return False
    wrapped = getattr(type(value).__repr__, "__wrapped__", None)
    return "__create_fn__" in getattr(wrapped, "__qualname__", "")


def played_env_id(env_id: str) -> str:
    """The registered id ``gym.make(env_id)`` plays, which its records carry: ``env_id``
    itself, an unversioned id's latest version, or the id after ``module:`` (the module
    imported). An id that names nothing registered is returned as it is (``gym.make``
    then raises its own error, with its suggestions).

    Example:
        >>> played_env_id("turnbudget/Maze-Easy"), played_env_id("turnbudget:turnbudget/Maze-Easy-v0")
        ('turnbudget/Maze-Easy-v0', 'turnbudget/Maze-Easy-v0')
    """
    import gymnasium as gym
    from gymnasium.envs.registration import find_highest_version, get_env_id, parse_env_id

    if env_id in gym.registry:
        return env_id
    module, _, name = env_id.rpartition(":")
    if module.startswith("."):  # (import_module raised TypeError: relative to no package)
        raise ValueError(
            f"Cannot make {brief(env_id)}: the module of a 'module:id' env id is imported by "
            f"its full name, and {brief(module)} is relative (no package to be relative to)"
        )
    try:
        if module:
            importlib.import_module(module)
        if name in gym.registry:
            return name
        namespace, base, version = parse_env_id(name)
        latest = None if version is not None else find_highest_version(namespace, base)
    except (ImportError, gym.error.Error):  # (no such module, a malformed id: make says so)
        return env_id
    return env_id if latest is None else get_env_id(namespace, base, latest)


def env_id_tuple(envs: Any) -> tuple[str, ...]:
    """``envs`` (one env id or several) as a tuple of the env ids played (`played_env_id`:
    the run's records carry those, so a rerun and the report find them).

    Example:
        >>> env_id_tuple("turnbudget/Maze-Easy-v0")
        ('turnbudget/Maze-Easy-v0',)
    """
    if isinstance(envs, str):
        return (envs,)
    # (a set of ids is refused: its order changes between processes, and with it the run's
    # env indices, its report's order and whether a rerun may resume it)
    if isinstance(envs, (bytes, Mapping, AbstractSet)) or not isinstance(envs, Iterable):
        raise ValueError(f"Expect `envs` to be an env id or a list of env ids, got {brief(envs)}")
    env_ids = tuple(itertools.islice(envs, MAX_TASKS + 1))
    if (
        not env_ids
        or len(env_ids) > MAX_TASKS
        or not all(isinstance(e, str) and e for e in env_ids)
    ):
        raise ValueError(f"Expect `envs` to be env ids, got {brief(envs)}")
    return tuple(map(played_env_id, env_ids))


def check_logged_settings(**settings: Any) -> None:
    """`ValueError` for a setting (``reveal``, ``errors``) that a run's ``run.json`` cannot
    hold: nested past JSON's recursion, or no JSON (a NumPy int): it is logged and compared
    on resume, and such a run failed only once it had a directory to write."""
    for name, value in settings.items():
        check_option(value, name)
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"Expect `{name}` to be JSON-serialisable (it is logged and compared on resume), "
                f"got {brief(value)}"
            ) from None


def resolve_mode(mode: str, reveal: Any, aware: str | None, *, both: bool = True) -> str:
    """The mode a run plays: ``auto`` is ``rerun`` for agents that see their budget (``reveal``
    shows it, or ``aware`` says which agent reads it) and ``truncate`` for the others; an
    explicit ``truncate`` for agents that see it is kept, with a warning (its grid was read as
    exact without a word) that advises ``rerun``, and ``both`` where the caller has it."""
    sees_budget = aware is not None or budget_visible(reveal)
    if mode == "auto":
        return "rerun" if sees_budget else "truncate"
    if mode == "truncate" and sees_budget:
        warnings.warn(
            "mode='truncate' reads each T off the episodes played at max(T): exact only for an "
            "agent that cannot see its budget, and this one can ("
            + (aware if aware is not None else f"reveal={reveal!r}")
            + "). Its Pass@(K,T) below max(T) is what it did in its first T turns of a longer "
            "budget, not under T: use mode='rerun'"
            + (" (or 'both', to see the gap)" if both else ""),
            UserWarning,
            stacklevel=5,  # (the caller of evaluate or evaluate_team, past its run-dir lock)
        )
    return mode


def make_config(
    envs: str | Sequence[str],
    agent: Any,
    *,
    ks: Sequence[int],
    ts: Sequence[int],
    n: int | None,
    tasks: int | Sequence[int],
    mode: str,
    reveal: Any,
    errors: Any,
    seed: int,
    label: str | None,
    record_steps: bool,
    error_draws: str = "per_repeat",
) -> EvalConfig:
    env_ids = env_id_tuple(envs)
    if len(set(env_ids)) != len(env_ids):
        raise ValueError(f"Expect distinct env ids, got {list(env_ids)}")
    ks_t = positive_ints(ks, "ks", most=MAX_EPISODES_PER_TASK)
    ts_t = positive_ints(ts, "ts", most=MAX_TURN_BUDGET, count=MAX_BUDGETS)  # (each a budget)
    n_val = max(ks_t) if n is None else n
    if not is_int(n_val) or not 1 <= n_val <= MAX_EPISODES_PER_TASK:
        raise ValueError(
            f"Expect `n` to be a positive int (at most {MAX_EPISODES_PER_TASK:,}), got {brief(n)}"
        )
    if max(ks_t) > n_val:
        raise ValueError(
            f"Pass@K needs n >= max(K) episodes per task: got n={n_val}, max(K)={max(ks_t)}"
        )
    seeds = task_seeds(tasks)
    # (str only: a NumPy array of one name passed `in`, then failed hashing or reached run.json)
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"Expect `mode` to be one of {MODES}, got {brief(mode)}")
    if not isinstance(error_draws, str) or error_draws not in ERROR_DRAWS:
        raise ValueError(
            f"Expect `error_draws` to be one of {ERROR_DRAWS}, got {brief(error_draws)}"
        )
    seed = check_seed(seed)
    record_steps = check_bool(record_steps, "record_steps")
    if label is not None:
        check_label(label)
    else:
        label = check_label(
            agent_name(agent),
            subject="the agent's name (the default `label`; pass `label` to name the run)",
        )
    check_logged_settings(reveal=reveal, errors=errors)
    needs_oracle, budget_aware = agent_flags(agent)
    mode = resolve_mode(mode, reveal, "it is budget_aware" if budget_aware else None)
    return EvalConfig(
        label=label,
        envs=env_ids,
        agent=_agent_repr(agent),
        ks=ks_t,
        ts=ts_t,
        n=int(n_val),
        tasks=seeds,
        mode=mode,
        reveal=reveal,
        errors=errors,
        seed=seed,
        needs_oracle=needs_oracle,
        budget_aware=budget_aware,
        record_steps=record_steps,
        error_draws=error_draws,
    )


@dataclass(frozen=True, order=True)
class EpisodeSpec:
    """One episode to run; everything about it follows from these fields."""

    env_id: str
    task_seed: int
    rep: int
    turn_budget: int
    env_index: int = field(compare=False)
    agent_seed: int = field(compare=False)

    @property
    def episode_id(self) -> str:
        return format_episode_id(self.env_id, self.task_seed, self.rep, self.turn_budget)


def agent_seed(seed: int, env_id: str, task_seed: int, rep: int) -> int:
    """The agent's seed for one episode: independent of the budget and of execution order."""
    return derive_seed(seed, env_id, task_seed, rep)


def record_plan(config: EvalConfig) -> RunPlan:
    """The episodes ``config`` plans, as `turnbudget.records` checks a run's records."""
    return RunPlan(
        config.envs, config.tasks, config.n, config.run_budgets, config.ts, config.record_steps,
        agent_seed=functools.partial(agent_seed, config.seed),
    )  # fmt: skip


def read_config(path: str | os.PathLike[str]) -> EvalConfig:
    """A run's ``run.json``, checked (`EvalConfig.from_dict`); `LogError` names what is wrong."""
    return EvalConfig.from_dict(read_config_dict(path, EvalConfig.from_dict))


class EpisodePlan(Sequence[EpisodeSpec]):
    """Every episode a configuration asks for, in a fixed order, each made when it is asked
    for: a run of millions of episodes holds none of them.

    The order is `EpisodeSpec`'s: by env id, task seed, repeat, then budget; the
    ``i``-th episode follows from ``i`` by index arithmetic over those four.

    Example:
        >>> config = make_config(["b", "a"], "agent", ks=[1], ts=[8, 4], n=2, tasks=[5, 1],
        ...     mode="rerun", reveal=None, errors=None, seed=0, label=None, record_steps=True)
        >>> plan = plan_episodes(config)
        >>> len(plan), [(s.env_id, s.task_seed, s.rep, s.turn_budget) for s in plan[:3]]
        (16, [('a', 1, 0, 4), ('a', 1, 0, 8), ('a', 1, 1, 4)])
        >>> plan[-1].episode_id, plan[-1].env_index
        ('b|seed=5|rep=1|T=8', 0)
    """

    def __init__(self, config: Any):  # (an `EvalConfig`; a `TeamConfig` in `TeamEpisodePlan`)
        self._envs = sorted(enumerate(config.envs), key=lambda pair: pair[1])  # (index, id)
        self._tasks = sorted(config.tasks)
        self._n = config.n
        self._budgets = tuple(sorted(config.run_budgets))
        self._seed = config.seed
        self._size = len(self._envs) * len(self._tasks) * self._n * len(self._budgets)

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> EpisodeSpec: ...

    @overload
    def __getitem__(self, index: slice) -> list[EpisodeSpec]: ...

    def __getitem__(self, index: int | slice) -> EpisodeSpec | list[EpisodeSpec]:
        if isinstance(index, slice):
            return [self._spec(i) for i in range(*index.indices(self._size))]
        i = operator.index(index)
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(f"episode {index} of a plan of {self._size}")
        return self._spec(i)

    def _spec(self, i: int) -> EpisodeSpec:
        rest, budget = divmod(i, len(self._budgets))
        rest, rep = divmod(rest, self._n)
        env, task = divmod(rest, len(self._tasks))
        return self._make(env, self._tasks[task], rep, self._budgets[budget])

    def _make(
        self, env: int, task: int, rep: int, budget: int, seed: int | None = None
    ) -> EpisodeSpec:
        env_index, env_id = self._envs[env]
        if seed is None:
            seed = self._agent_seed(env_id, task, rep)
        return EpisodeSpec(env_id, task, rep, budget, env_index=env_index, agent_seed=seed)

    def _agent_seed(self, env_id: str, task: int, rep: int) -> int:
        return agent_seed(self._seed, env_id, task, rep)

    def __iter__(self) -> Iterator[EpisodeSpec]:
        for env, (_, env_id) in enumerate(self._envs):
            for task in self._tasks:
                for rep in range(self._n):
                    seed = self._agent_seed(env_id, task, rep)  # (once for every budget)
                    for budget in self._budgets:
                        yield self._make(env, task, rep, budget, seed)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == self._size and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # (equal to a list of the same specs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size} episodes)"


def plan_episodes(config: EvalConfig) -> EpisodePlan:
    """Every episode the configuration asks for, in a fixed order (an `EpisodePlan`: a
    sequence that makes each `EpisodeSpec` when asked for it)."""
    return EpisodePlan(config)
