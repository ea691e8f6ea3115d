"""`check_text_env`: the text-env contract as one function anyone can run on their own env.

PettingZoo ships ``pettingzoo.test.api_test`` inside the package so that a
user's env can be held to the same contract as the library's own; this is
that for turnbudget's contract (`turnbudget.envs.core` and DESIGN.md). Each
check raises an ``AssertionError`` whose message starts with
``check_text_env[<check>]`` and names the seed and step where it failed.

The checks, in order:

- ``gymnasium_checker``: Gymnasium's ``check_env`` on the unwrapped env and on
  the outermost non-Gymnasium wrapper (e.g. `TurnBudget`).
- ``reset_needed`` (fresh envs only: an id or a factory): ``step`` before
  ``reset`` raises ``gymnasium.error.ResetNeeded``.
- ``type_check``: a non-string action raises ``TypeError``.
- ``info_keys``: every reset and step carries the contract's info keys with
  the right types; every step's return follows the contract (observation in
  the space, float reward, bool flags, never both flags).
- ``determinism``: two seeded random rollouts are identical; different seeds
  give different rollouts (when more than one seed is given).
- ``cross_process_determinism``: the same rollout in two fresh Python
  processes with different ``PYTHONHASHSEED`` (needs an id, or an env or
  factory that pickles and whose class is importable).
- ``pickle_round_trip``: an unpickled copy continues exactly like the original.
- ``oracle_solves``: following ``optimal_actions()[0]`` shortens
  ``distance_to_goal()`` by one every turn and wins in exactly that many
  turns, within half the default budget.
- ``oracle_bellman`` (``oracle="exact"``, the default for an env that does not declare
  ``oracle_is_plan``): along random walks, the distance
  is 1 + the minimum over every admissible action of the distance after it
  (tried on deep copies), and ``optimal_actions()`` is exactly the set of
  actions achieving it; in a game that declares ``commands_keep_solvable``,
  no admissible action ends it other than by winning or leaves it unsolvable.
- ``setbacks``: ``inject_setback`` returns a narration, never shortens the
  task and keeps it solvable; the oracle still wins afterwards.
- ``hostile_input``: control characters, escapes, interpreter meta commands,
  huge and non-ASCII strings never raise, hang or end the game; each is one
  spent turn; a refused one changes nothing the oracle sees.
- ``budget_flags`` (envs with a turn budget in ``info``): an episode won on
  the last budgeted turn is terminated and not truncated; running out of
  turns truncates without terminating.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from turnbudget._checks import (
    brief,
    check_bool,
    check_positive_int,
    check_seed,
    is_finite,
    is_int,
    is_real,
)
from turnbudget.envs.core import (
    INFO_ADMISSIBLE_ACTIONS,
    INFO_LOST,
    INFO_PROGRESS,
    INFO_VALID_ACTION,
    INFO_WON,
    RESET_INFO_KEYS,
    STEP_INFO_KEYS,
    Oracle,
)

__all__ = ["HOSTILE_COMMANDS", "CheckReport", "check_text_env"]

#: Inputs that have crashed, hung or desynced text games: control characters,
#: interpreter escapes and meta commands, chained commands, huge and non-ASCII text.
HOSTILE_COMMANDS: tuple[str, ...] = (
    "", "   ", "\t", "\x00\x01\x07\x1b[2J", "\x7f", "\\q", "\\e", "\\quit", "\\",
    "look\nquit", "look\r\nquit", "look\rquit", "go\x00north", "quit", "q", "restart",
    "undo", "save", "restore", "script", "again", "yes", "look. quit", "look; go north",
    "look then quit", "take \\ key", "\u00f1orth \u2603 \u5317", "examine \ud83d\ude00",
    ">", "*", "..", "x" * 100_000, "go north " * 500,
)  # fmt: skip

EnvSource = str | gym.Env | Callable[[], gym.Env]
_SETBACK_TURNS = (0, 2, 7, 12, 17, 22)
_CHECKER_NOISE = (".*different from the unwrapped version", ".*is not within the observation space")


@dataclass
class CheckReport:
    """What `check_text_env` ran (as `GroupSeedingReport`: ``passed`` is a bool).

    Attributes:
        checks: The checks that ran and passed, in order.
        skipped: Check name -> why it did not run.
        setbacks_that_cost: How many injected setbacks lengthened the task.
    """

    checks: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    setbacks_that_cost: int = 0

    @property
    def passed(self) -> bool:
        """True when checks ran and none failed (a failure raises: a returned report passed)."""
        return bool(self.checks)


class _Context:
    """Where a check is, for the failure message."""

    def __init__(self, name: str):
        self.name = name
        self.check = ""
        self.seed: int | None = None
        self.step = 0

    def fail(self, message: str) -> AssertionError:
        where = f"seed {self.seed}, step {self.step}" if self.seed is not None else "no seed"
        return AssertionError(
            f"check_text_env[{self.check}] failed for {self.name} ({where}): {message}"
        )

    def require(self, condition: Any, message: str) -> None:
        if not condition:
            raise self.fail(message)


def check_text_env(
    env_or_id: EnvSource,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    steps: int = 25,
    walks: int = 2,
    oracle: Literal["auto", "exact", "plan"] | None = "auto",
    cross_process: bool = True,
    budget_factor: float | None = 2.0,
    hostile_commands: Sequence[str] = HOSTILE_COMMANDS,
    max_step_seconds: float = 5.0,
    env_kwargs: Mapping[str, Any] | None = None,
) -> CheckReport:
    """Run every contract check on an env and raise ``AssertionError`` on the first failure.

    Args:
        env_or_id: A registered id (made with ``gymnasium.make(id, **env_kwargs)``),
            a zero-argument factory (an env class works), or an env instance
            (copied by pickling; ``reset_needed`` is then skipped).
        seeds: Reset seeds. Every oracle and setback check runs once per seed;
            ``determinism`` compares the first two.
        steps: The length of the random walks (determinism, pickle, Bellman).
        walks: How many of ``seeds`` get a Bellman random walk.
        oracle: ``"exact"``: the oracle is exact (Bellman-consistent against
            every admissible action); ``"plan"``: its plan is followed and must
            shorten by one per turn, but other actions are not searched (e.g.
            TextWorld, whose oracle is its quest's plan); ``"auto"``: ``"plan"``
            for an env that declares ``oracle_is_plan`` (`TextEnv`'s flag, set by
            the TextWorld envs), else ``"exact"``; None: the env has no oracle,
            skip those checks. An env without the three `Oracle` methods skips
            them too.
        cross_process: Run the ``cross_process_determinism`` check.
        budget_factor: The default budget must be at least this many times the
            optimal solution (None: not checked).
        hostile_commands: The inputs of ``hostile_input``.
        max_step_seconds: A hostile step measured slower than this fails ``hostile_input``.
            A step that never returns is not interrupted: it hangs the check, so run the
            check of an env you do not trust under a timeout (``timeout 600 python ...``).
        env_kwargs: Keyword arguments for ``gymnasium.make`` (ids only).

    Returns:
        A `CheckReport` of what ran and what was skipped, and why.

    Raises:
        AssertionError: ``check_text_env[<check>] failed for <env> (seed s, step t): ...``.
    """
    seeds, steps, walks, hostile_commands = _check_arguments(
        seeds, steps, walks, oracle, cross_process, budget_factor, hostile_commands,
        max_step_seconds, env_kwargs,
    )  # fmt: skip
    make, fresh, name, spawn = _factory(env_or_id, env_kwargs)
    ctx = _Context(name)
    report = CheckReport()
    env = make()
    try:
        has_oracle = oracle is not None and isinstance(env.unwrapped, Oracle)
        if oracle == "auto":
            oracle = "plan" if getattr(env.unwrapped, "oracle_is_plan", False) is True else "exact"
        with _check(ctx, report, "gymnasium_checker"):
            # (the contract's info first: Gymnasium's checker read a NaN progress, which is no
            # number equal to itself, as a step that is not deterministic)
            first = make()
            try:
                _reset(first, seeds[0], ctx)
            finally:
                first.close()  # (a TextWorld game's interpreter process)
            _gymnasium_checker(make)
        if fresh:
            with _check(ctx, report, "reset_needed"):
                try:
                    make().step("look")
                except gym.error.ResetNeeded:
                    pass
                else:
                    raise ctx.fail(
                        "step() before reset() did not raise gymnasium.error.ResetNeeded"
                    )
        else:
            report.skipped["reset_needed"] = "needs a fresh env: pass an id or a factory"
        with _check(ctx, report, "type_check"):
            _type_check(env, seeds[0], ctx)
        with _check(ctx, report, "info_keys"):
            for seed in seeds:
                _rollout(env, seed, steps, ctx)
        with _check(ctx, report, "determinism"):
            _determinism(env, seeds, steps, ctx)
        if not cross_process:
            report.skipped["cross_process_determinism"] = "cross_process=False"
        elif spawn is None:
            report.skipped["cross_process_determinism"] = (
                "the env does not pickle, or its class is defined in __main__"
            )
        else:
            with _check(ctx, report, "cross_process_determinism"):
                _cross_process(spawn, env, seeds[0], steps, ctx)
        with _check(ctx, report, "pickle_round_trip"):
            _pickle_round_trip(env, seeds[0], steps, ctx)
        if has_oracle:
            with _check(ctx, report, "oracle_solves"):
                for seed in seeds:
                    _oracle_solves(env, seed, budget_factor, ctx)
            if oracle == "exact":
                with _check(ctx, report, "oracle_bellman"):
                    for seed in seeds[:walks]:
                        _bellman(env.unwrapped, seed, steps, ctx)
            else:
                report.skipped["oracle_bellman"] = "oracle='plan'"
            with _check(ctx, report, "setbacks"):
                for seed in seeds:
                    report.setbacks_that_cost += _setbacks(env.unwrapped, seed, ctx)
        else:
            why = "oracle=None" if oracle is None else "the env has no Oracle methods"
            for check in ("oracle_solves", "oracle_bellman", "setbacks"):
                report.skipped[check] = why
        with _check(ctx, report, "hostile_input"):
            _hostile_input(env, seeds[0], hostile_commands, max_step_seconds, has_oracle, ctx)
        _, info = env.reset(seed=seeds[0])
        if "turn_budget" in info:
            with _check(ctx, report, "budget_flags"):
                _budget_flags(env, seeds, has_oracle, ctx)
        else:
            report.skipped["budget_flags"] = "no turn budget in info (no TurnBudget wrapper)"
    finally:
        env.close()
    return report


# -- plumbing ------------------------------------------------------------------------


@contextmanager
def _check(ctx: _Context, report: CheckReport, check: str) -> Iterator[None]:
    ctx.check, ctx.seed, ctx.step = check, None, 0
    try:
        yield
    except AssertionError as error:
        if str(error).startswith("check_text_env["):
            raise
        raise ctx.fail(str(error) or type(error).__name__) from error
    except Exception as error:  # any crash inside a check is that check's failure
        raise ctx.fail(f"raised {type(error).__name__}: {error}") from error
    report.checks.append(check)


#: What ``oracle=`` may say (or None: no oracle checks).
ORACLE_MODES = ("auto", "exact", "plan")

#: The longest random walk `check_text_env` takes (a hang guard on a typo such as 10**9).
MAX_CHECK_STEPS = 100_000


def _check_arguments(
    seeds: Any, steps: Any, walks: Any, oracle: Any, cross_process: Any, budget_factor: Any,
    hostile_commands: Any, max_step_seconds: Any, env_kwargs: Any,
) -> tuple[list[int], int, int, list[str]]:  # fmt: skip
    """The caller's arguments checked before any env is made: a mistake there is a
    ValueError or TypeError naming the argument, never an AssertionError that blames the env."""
    if (
        isinstance(seeds, (str, bytes))
        or not isinstance(seeds, (Sequence, np.ndarray))
        or not len(seeds)
    ):
        raise ValueError(f"Expect `seeds` to be a non-empty sequence of ints, got {brief(seeds)}")
    seeds = [check_seed(seed, "seeds[i]") for seed in seeds]
    if len(set(seeds)) < len(seeds):  # (seeds 0 and 0 "gave identical rollouts": the env blamed)
        raise ValueError(f"Expect `seeds` to hold distinct ints, got {brief(seeds)}")
    steps = check_positive_int(steps, "steps")
    if steps > MAX_CHECK_STEPS:
        raise ValueError(f"Expect `steps` to be at most {MAX_CHECK_STEPS:,}, got {steps:,}")
    if not is_int(walks) or walks < 0:
        raise ValueError(f"Expect `walks` to be an int >= 0, got {brief(walks)}")
    if oracle is not None and not (isinstance(oracle, str) and oracle in ORACLE_MODES):
        raise ValueError(
            f"Expect `oracle` to be one of {', '.join(map(repr, ORACLE_MODES))} or None, "
            f"got {brief(oracle)}"
        )
    check_bool(cross_process, "cross_process")
    if budget_factor is not None and not (is_finite(budget_factor) and budget_factor > 0):
        raise ValueError(
            f"Expect `budget_factor` to be a positive finite number or None, got {brief(budget_factor)}"
        )
    if not (is_finite(max_step_seconds) and max_step_seconds > 0):
        raise ValueError(
            f"Expect `max_step_seconds` to be a positive finite number, got {brief(max_step_seconds)}"
        )
    if isinstance(hostile_commands, (str, bytes)) or not isinstance(hostile_commands, Sequence):
        raise ValueError(
            f"Expect `hostile_commands` to be a sequence of str, got {brief(hostile_commands)}"
        )
    if not all(isinstance(command, str) for command in hostile_commands):
        raise ValueError("Expect every one of `hostile_commands` to be a str")
    if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
        raise TypeError(f"Expect `env_kwargs` to be a mapping or None, got {brief(env_kwargs)}")
    return seeds, steps, int(walks), list(hostile_commands)


def _factory(
    source: EnvSource, env_kwargs: Mapping[str, Any] | None
) -> tuple[Callable[[], gym.Env], bool, str, bytes | None]:
    """(make a copy, copies are fresh, a name, a pickled spec for another process or None)."""
    kwargs = dict(env_kwargs or {})
    if isinstance(source, str):

        def make() -> gym.Env:
            return gym.make(source, **kwargs)

        if source.startswith("turnbudget/"):
            return make, True, source, pickle.dumps(("id", source, kwargs))
        # (an id registered outside turnbudget does not exist in a fresh process: its spec,
        # whose entry point it imports, goes instead)
        try:
            game = make()
            try:
                spawn = _spawnable(("spec", gym.spec(source), kwargs), game.unwrapped)
            finally:
                game.close()
        except Exception:  # (an unknown id fails every check below, with gym's own message)
            spawn = None
        return make, True, source, spawn
    if kwargs:
        raise ValueError("Expect `env_kwargs` only with an env id")
    if isinstance(source, gym.Env):
        blob = pickle.dumps(source)
        name = type(source.unwrapped).__name__
        return (lambda: pickle.loads(blob)), False, name, _spawnable(("env", blob), source)
    if callable(source):
        name = getattr(source, "__name__", type(source).__name__)

        def make_checked() -> gym.Env:
            env = source()
            if not isinstance(env, gym.Env):
                raise TypeError(f"Expect the factory {name} to return a gym.Env, got {brief(env)}")
            return env

        return make_checked, True, name, _spawnable(("factory", source), source)
    raise TypeError(f"Expect an env id, an env or a factory, got {type(source).__name__}")


def _spawnable(spec: tuple[str, Any], obj: Any) -> bytes | None:
    target = obj.unwrapped if isinstance(obj, gym.Env) else obj
    module = getattr(target, "__module__", None) or type(target).__module__
    if module == "__main__" or not getattr(sys.modules.get(module), "__file__", None):
        return None  # another process could not import the class
    try:
        return pickle.dumps(spec)
    except Exception:  # an unpicklable factory: the check is skipped, not failed
        return None


def _load_spawned(blob: bytes) -> gym.Env:
    kind, payload, *rest = pickle.loads(blob)
    if kind == "id":
        import turnbudget  # noqa: F401 - registers the turnbudget ids in the fresh process

        return gym.make(payload, **rest[0])
    if kind == "spec":
        return gym.make(payload, **rest[0])
    if kind == "env":
        return pickle.loads(payload)
    return payload()


def _step(env: gym.Env, action: str, ctx: _Context) -> tuple[str, float, bool, bool, dict]:
    """One step, with every per-step contract check."""
    result = env.step(action)
    ctx.step += 1
    ctx.require(isinstance(result, tuple) and len(result) == 5, "step() must return 5 values")
    obs, reward, terminated, truncated, info = result
    ctx.require(isinstance(obs, str), f"observation is {type(obs).__name__}, not str")
    ctx.require(env.observation_space.contains(obs), f"observation outside the space: {obs[:80]!r}")
    ctx.require(isinstance(reward, (int, float, np.floating)), f"reward is {reward!r}")
    ctx.require(
        isinstance(terminated, (bool, np.bool_)) and isinstance(truncated, (bool, np.bool_)),
        "terminated and truncated must be bools",
    )
    ctx.require(
        not (terminated and truncated), "terminated and truncated are both True on one step"
    )
    _check_info(info, STEP_INFO_KEYS, ctx)
    return obs, float(reward), terminated, truncated, info


def _reset(env: gym.Env, seed: int | None, ctx: _Context, **kwargs: Any) -> tuple[str, dict]:
    obs, info = env.reset(seed=seed, **kwargs)
    ctx.seed, ctx.step = seed, 0
    ctx.require(
        env.observation_space.contains(obs), f"reset observation outside the space: {obs[:80]!r}"
    )
    _check_info(info, RESET_INFO_KEYS, ctx)
    return obs, info


def _check_info(info: Any, keys: frozenset[str], ctx: _Context) -> None:
    ctx.require(isinstance(info, dict), "info must be a dict")
    missing = sorted(keys - set(info))
    ctx.require(not missing, f"info lacks {missing}")
    admissible = info[INFO_ADMISSIBLE_ACTIONS]
    ctx.require(
        isinstance(admissible, list) and all(isinstance(a, str) for a in admissible),
        "info['admissible_actions'] must be a list of str",
    )
    ctx.require(
        isinstance(info[INFO_WON], bool) and isinstance(info[INFO_LOST], bool),
        "won/lost must be bools",
    )
    progress = info[INFO_PROGRESS]
    ctx.require(
        is_real(progress) and is_finite(progress),
        f"progress must be a finite number in [0, 1], got {brief(progress)}",
    )
    ctx.require(0.0 <= progress <= 1.0, f"progress {progress!r} outside [0, 1]")
    if INFO_VALID_ACTION in keys:
        ctx.require(isinstance(info[INFO_VALID_ACTION], bool), "valid_action must be a bool")


def _pick(info: dict, rng: np.random.Generator) -> str:
    actions = info[INFO_ADMISSIBLE_ACTIONS] or ["look"]
    return actions[int(rng.integers(len(actions)))]


def _rollout(
    env: gym.Env, seed: int, steps: int, ctx: _Context, actions_seed: int | None = None
) -> str:
    """Digest of a seeded random rollout over admissible actions (resets when it ends); the
    actions drawn from ``actions_seed`` (default: ``seed``)."""
    digest = hashlib.sha256()
    rng = np.random.default_rng(seed if actions_seed is None else actions_seed)

    def feed(*items: Any) -> None:
        digest.update(json.dumps(items, sort_keys=True, default=str).encode())

    obs, info = _reset(env, seed, ctx)
    feed(obs, info)
    distance = getattr(env.unwrapped, "distance_to_goal", None)
    if callable(distance):  # (tasks a short transcript does not show apart)
        feed(distance())
    for _ in range(steps):
        obs, reward, terminated, truncated, info = _step(env, _pick(info, rng), ctx)
        feed(obs, reward, terminated, truncated, info)
        if terminated or truncated:
            obs, info = env.reset()
            feed(obs, info)
    return digest.hexdigest()


# -- the checks ------------------------------------------------------------------------


def _gymnasium_checker(make: Callable[[], gym.Env]) -> None:
    env = make()
    outer = env
    while isinstance(outer, (OrderEnforcing, PassiveEnvChecker)):
        outer = outer.env
    try:
        with warnings.catch_warnings():
            for message in _CHECKER_NOISE:
                warnings.filterwarnings("ignore", message=message)
            check_env(env.unwrapped, skip_render_check=True)
            if isinstance(outer, gym.Wrapper):
                check_env(outer, skip_render_check=True)
    finally:
        env.close()


def _type_check(env: gym.Env, seed: int, ctx: _Context) -> None:
    _reset(env, seed, ctx)
    for action in (None, 3, b"look", ["look"]):
        try:
            env.step(action)
        except TypeError:
            continue
        raise ctx.fail(f"step({action!r}) did not raise TypeError")


def _determinism(env: gym.Env, seeds: Sequence[int], steps: int, ctx: _Context) -> None:
    first = _rollout(env, seeds[0], steps, ctx)
    ctx.require(
        _rollout(env, seeds[0], steps, ctx) == first, "the same seed gave a different rollout"
    )
    if len(seeds) > 1:
        # The same commands from both seeds: each seed's own draw of commands made any two
        # rollouts differ, and a reset that ignores its seed passed.
        ctx.require(
            _rollout(env, seeds[0], steps, ctx, actions_seed=0)
            != _rollout(env, seeds[1], steps, ctx, actions_seed=0),
            f"seeds {seeds[0]} and {seeds[1]} gave identical rollouts: reset ignores its seed",
        )


def _cross_process(spawn: bytes, env: gym.Env, seed: int, steps: int, ctx: _Context) -> None:
    here = _rollout(env, seed, steps, ctx)
    script = (
        "import pickle, sys; from turnbudget.utils.check_text_env import _Context, _load_spawned, _rollout;"
        f"print(_rollout(_load_spawned(sys.stdin.buffer.read()), {seed}, {steps}, _Context('child')))"
    )
    for hash_seed in ("1", "2"):  # different str hashing must not change anything
        out = subprocess.run(
            [sys.executable, "-c", script],
            input=spawn,
            capture_output=True,
            # The child imports what this process can (e.g. a test directory on sys.path).
            env={
                **os.environ,
                "PYTHONHASHSEED": hash_seed,
                "PYTHONPATH": os.pathsep.join(sys.path),
            },
            check=False,
        )
        ctx.require(
            out.returncode == 0,
            f"the rollout failed in a fresh process: {out.stderr.decode()[-500:]}",
        )
        ctx.require(
            out.stdout.decode().strip() == here,
            f"seed {seed} gave a different rollout in a fresh process (PYTHONHASHSEED={hash_seed})",
        )


def _pickle_round_trip(env: gym.Env, seed: int, steps: int, ctx: _Context) -> None:
    _, info = _reset(env, seed, ctx)
    for action in info[INFO_ADMISSIBLE_ACTIONS][:2]:
        _step(env, action, ctx)
    clone = pickle.loads(pickle.dumps(env))
    try:
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            action = _pick(info, rng)
            a, b = _step(env, action, ctx), clone.step(action)
            ctx.require(a == b, f"the unpickled copy answered {action!r} differently")
            info = a[4]
            if a[2] or a[3]:
                break
    finally:
        clone.close()


def _oracle_solves(env: gym.Env, seed: int, budget_factor: float | None, ctx: _Context) -> None:
    _, info = _reset(env, seed, ctx)
    game = env.unwrapped
    optimal = game.distance_to_goal()
    ctx.require(
        isinstance(optimal, int) and optimal > 0, f"distance_to_goal() at reset is {optimal!r}"
    )
    while True:
        distance = game.distance_to_goal()
        plan = game.optimal_actions()
        ctx.require(plan, f"optimal_actions() is empty at distance {distance}")
        _, _, terminated, truncated, info = _step(env, plan[0], ctx)
        ctx.require(info[INFO_VALID_ACTION], f"the optimal action {plan[0]!r} was not valid")
        if terminated or truncated:
            break
        after = game.distance_to_goal()
        ctx.require(
            after == distance - 1, f"{plan[0]!r} took the distance from {distance} to {after}"
        )
    ctx.require(info[INFO_WON] and not info[INFO_LOST], "the oracle's plan did not win")
    ctx.require(info[INFO_PROGRESS] == 1.0, f"progress is {info[INFO_PROGRESS]} after a win")
    ctx.require(ctx.step == optimal, f"won in {ctx.step} turns, distance_to_goal() said {optimal}")
    if budget_factor is not None and "turn_budget" in info:
        ctx.require(
            optimal * budget_factor <= info["turn_budget"],
            f"the default budget {info['turn_budget']} is under {budget_factor}x the optimal {optimal}",
        )


def _bellman(game: gym.Env, seed: int, steps: int, ctx: _Context) -> None:
    _, info = _reset(game, seed, ctx)
    rng = np.random.default_rng(seed)
    # What `InjectErrors` then trusts instead of trying a slip on a copy.
    keeps_solvable = getattr(game, "commands_keep_solvable", False) is True
    for _ in range(steps):
        distance = game.distance_to_goal()
        after = {}
        actions = info[INFO_ADMISSIBLE_ACTIONS]
        for action in actions:
            probe = copy.deepcopy(game)
            try:
                _, _, ended, _, probe_info = probe.step(action)
                after[action] = probe.distance_to_goal()
            finally:
                probe.close()  # a copy may hold a process of its own (TextWorld's interpreter)
            ctx.require(
                not keeps_solvable
                or (after[action] is not None and (not ended or probe_info.get(INFO_WON))),
                f"{action!r} {'ended the game' if ended else 'made the task unsolvable'}, "
                "but the game declares commands_keep_solvable",
            )
        reachable = [d for d in after.values() if d is not None]
        ctx.require(
            # (a task lost before the game ends, as a Race role's once the rival cannot be
            # beaten: no distance, and none after any command)
            (reachable and distance == 1 + min(reachable)) or (distance is None and not reachable),
            f"distance {distance} but the admissible actions lead to {after}",
        )
        expected = (
            [] if distance is None else sorted(a for a, d in after.items() if d == distance - 1)
        )
        ctx.require(
            sorted(game.optimal_actions()) == expected,
            f"optimal_actions() {sorted(game.optimal_actions())} but {expected} shorten the plan",
        )
        _, _, terminated, _, info = _step(game, actions[int(rng.integers(len(actions)))], ctx)
        if terminated:
            break


def _setbacks(game: gym.Env, seed: int, ctx: _Context) -> int:
    _reset(game, seed, ctx)
    rng = np.random.default_rng(seed)
    cost = 0
    info: dict = {}
    for turn in range(1000):
        if turn in _SETBACK_TURNS:
            before = game.distance_to_goal()
            draw = int(rng.integers(2**32))
            twin = copy.deepcopy(game)  # (the same setback, drawn again, must do the same)
            try:
                narration = game.inject_setback(np.random.default_rng(draw))
                after = game.distance_to_goal()
                ctx.require(
                    twin.inject_setback(np.random.default_rng(draw)) == narration
                    and twin.distance_to_goal() == after
                    and twin.optimal_actions() == game.optimal_actions(),
                    "inject_setback() did not do the same from the same state and rng (does it "
                    "draw from its own or the global generator, not the rng it is given?)",
                )
            finally:
                twin.close()  # (a TextWorld game's copy has an interpreter process of its own)
            ctx.require(
                isinstance(narration, str) and narration, "inject_setback() returned no narration"
            )
            ctx.require(after is not None, "a setback made the task unsolvable")
            ctx.require(after >= before, f"a setback shortened the task from {before} to {after}")
            cost += after > before
        _, _, terminated, _, info = _step(game, game.optimal_actions()[0], ctx)
        if terminated:
            break
    ctx.require(info.get(INFO_WON), "the oracle did not win after setbacks")
    return cost


def _hostile_input(
    env: gym.Env,
    seed: int,
    commands: Sequence[str],
    max_seconds: float,
    has_oracle: bool,
    ctx: _Context,
) -> None:
    _, info = _reset(env, seed, ctx)
    if "turn_budget" in info:  # room for every hostile input and one more turn
        _, info = _reset(env, seed, ctx, options={"turn_budget": len(commands) + 1})
    # (room under Gymnasium's TimeLimits too: one of 30 steps "ended the game" on the 30th)
    with _room_in_time_limits(env, len(commands) + 1):
        _hostile_steps(env, commands, max_seconds, has_oracle, info, ctx)


@contextmanager
def _room_in_time_limits(env: gym.Env, steps: int) -> Iterator[None]:
    """Every `TimeLimit` in ``env``'s stack lets ``steps`` more steps run, then is as it was."""
    limits, inner = [], env
    while isinstance(inner, gym.Wrapper):
        if isinstance(inner, gym.wrappers.TimeLimit):
            limits.append((inner, inner._max_episode_steps))
            inner._max_episode_steps = inner._elapsed_steps + steps
        inner = inner.env
    try:
        yield
    finally:
        for limit, value in limits:
            limit._max_episode_steps = value


def _hostile_steps(
    env: gym.Env,
    commands: Sequence[str],
    max_seconds: float,
    has_oracle: bool,
    info: dict,
    ctx: _Context,
) -> None:
    game = env.unwrapped
    for command in commands:
        before = (game.distance_to_goal(), info[INFO_ADMISSIBLE_ACTIONS]) if has_oracle else None
        turns = info.get("turns_used")
        began = time.monotonic()
        try:
            obs, reward, terminated, truncated, info = _step(env, command, ctx)
        except AssertionError:
            raise
        except Exception as error:
            raise ctx.fail(
                f"step({command[:30]!r}) raised {type(error).__name__}: {error}"
            ) from error
        ctx.require(time.monotonic() - began < max_seconds, f"step({command[:30]!r}) took too long")
        ctx.require(obs, f"step({command[:30]!r}) gave no feedback")
        ctx.require(not terminated and not truncated, f"step({command[:30]!r}) ended the game")
        ctx.require(reward == 0.0, f"step({command[:30]!r}) gave a reward of {reward!r}")
        if turns is not None:
            ctx.require(
                info["turns_used"] == turns + 1, f"step({command[:30]!r}) did not spend one turn"
            )
        if has_oracle and not info[INFO_VALID_ACTION]:
            after = (game.distance_to_goal(), info[INFO_ADMISSIBLE_ACTIONS])
            ctx.require(after == before, f"the refused step({command[:30]!r}) changed the game")
    if has_oracle:  # the game goes on normally afterwards
        _, _, _, _, info = _step(env, game.optimal_actions()[0], ctx)
        ctx.require(
            info[INFO_VALID_ACTION], "after the hostile inputs the optimal action was refused"
        )


def _budget_flags(env: gym.Env, seeds: Sequence[int], has_oracle: bool, ctx: _Context) -> None:
    seed = seeds[0]
    _reset(env, seed, ctx, options={"turn_budget": 2})
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, info = _step(env, "look", ctx)
    ctx.require(
        truncated or info[INFO_WON] or info[INFO_LOST], "ran out of turns without truncation"
    )
    if has_oracle:  # win on exactly the last budgeted turn
        _reset(env, seed, ctx)
        optimal = env.unwrapped.distance_to_goal()
        _reset(env, seed, ctx, options={"turn_budget": optimal})
        for _ in range(optimal):
            _, _, terminated, truncated, info = _step(env, env.unwrapped.optimal_actions()[0], ctx)
        ctx.require(
            terminated and not truncated and info[INFO_WON],
            "an episode won on its last budgeted turn must be terminated, not truncated",
        )
