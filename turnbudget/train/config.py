"""`TrainConfig`: everything one training run does, one field per ``turnbudget train`` flag."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

from turnbudget._checks import (
    MAX_SEED,
    brief,
    check_bool,
    check_positive_int,
    check_seed,
    check_turn_budget,
    is_finite,
    is_int,
    renamed,
)
from turnbudget.agents.policy import CARD_FILE, ENCODING_FILE, WEIGHTS_FILE
from turnbudget.records.files import EVALUATION_FILES
from turnbudget.wrappers.process_reward import MAX_SCALE
from turnbudget.wrappers.sample_turn_budget import split_budget_mixes

__all__ = ["ALGOS", "TrainConfig", "check_config"]

ALGOS = ("ppo", "bc")
_DEFAULT_TURN_BUDGET = 30
_CHOICES = {
    "algo": ALGOS,
    "vec_env": ("dummy", "subproc"),
    "log": ("csv", "tensorboard", "none"),
    "bootstrap_at_budget": ("auto", "yes", "no"),
}
# Counts that must be >= 1 (`turn_budget` is checked on its own: it has an upper bound too).
_POSITIVE = ("total_steps", "max_actions", "text_dim", "history", "command_dim", "n_envs",
             "n_steps", "batch_size", "n_epochs", "bc_episodes", "bc_epochs", "torch_threads")  # fmt: skip
# Ints that may be 0.
_NON_NEGATIVE = ("seed", "task_seed_base", "task_pool", "checkpoint_every")
# The most each count may be: far above any real run, below what never ends, runs out of memory
# or overflows (``n_envs=10**20`` made envs until killed, ``net_arch=10**20`` crashed torch).
_MOST = {
    "total_steps": 10**12, "max_actions": 4096, "text_dim": 2**20, "history": 1024,
    "command_dim": 2**16, "n_envs": 1024, "n_steps": 2**24, "batch_size": 2**24,
    "n_epochs": 10_000, "bc_episodes": 10**7, "bc_epochs": 100_000, "torch_threads": 1024,
}  # fmt: skip
_MOST_LAYER = 2**16  # units in one hidden layer
# The most weights the policy and value networks hold together (512 MiB of float32; Adam keeps
# two more of each), and the most floats of observations a rollout holds (4 GiB): each count
# above is capped on its own, but their products were not (a 2**20-bucket text block under a
# 4,096-unit layer is 2**32 weights: SB3's orthogonal initialisation of them ran for hours).
_MOST_WEIGHTS = 2**27
_MOST_ROLLOUT_FLOATS = 2**30
#: The task seeds a `task_pool` of 0 draws from (a new world each episode).
UNBOUNDED_POOL = 2**31


@dataclasses.dataclass
class TrainConfig:
    """One training run (every field is a flag: ``--budget-mix uniform:12-40``).

    Example:
        >>> TrainConfig(algo="bc", out="runs/bc").bootstraps()
        False
        >>> TrainConfig(algo="sft")
        Traceback (most recent call last):
        ...
        ValueError: Expect `algo` to be one of ('ppo', 'bc'), got 'sft'
        >>> TrainConfig(gamma=float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: Expect `gamma` to be a number in (0, 1], got nan

    Every field is checked when the config is made (a ``ValueError`` naming the field), so a
    bad setting stops a run before anything is written.
    """

    algo: str = "ppo"
    """``ppo`` (MaskablePPO) or ``bc`` (behaviour cloning from the ε-oracle)."""
    env_id: str = "turnbudget/Maze-Easy-v0"
    """The registered game."""
    out: str = "runs/train"
    """Directory for the saved policy, logs and checkpoints."""
    seed: int = 0
    """Seeds torch, the PPO sampler, the training worlds and the budget draws."""
    total_steps: int = 100_000
    """Environment steps (PPO)."""
    turn_budget: int = _DEFAULT_TURN_BUDGET
    """Fixed turn budget T (ignored when ``budget_mix`` is set)."""
    budget_mix: str = ""
    """BudgetMix distribution, e.g. ``uniform:12-40`` (empty: fixed ``turn_budget``)."""
    budget_schedule: tuple[str, ...] = dataclasses.field(
        default=(),
        metadata={"split_flag": split_budget_mixes},  # (`cli.flags.SPLIT_FLAG`)
    )
    """A progressive horizon (as ScalingInter-RL): one BudgetMix per phase, short budgets first,
    e.g. ``uniform:12-20,uniform:21-30,uniform:31-40`` (on the command line the budgets after
    ``choice:`` stay in it; ``;`` separates phases that hold commas themselves, as
    ``10,20;30,40``); the run's steps are split evenly
    between the phases, and a phase's budgets replace ``budget_mix`` / ``turn_budget`` (empty: none;
    PPO only: BC's demonstrations take theirs from ``budget_mix``)."""
    process_reward: bool = False
    """Add potential-based shaping from the oracle's distance (`ProcessReward`)."""
    process_scale: float = 0.1
    """Shaping scale (Φ = -scale · distance; > 0, at most `ProcessReward`'s 1,000,000)."""
    reveal: str = "always"
    """Budget visibility (`RevealBudget` mode); with ``always`` the policy also gets numeric budget features."""
    max_actions: int = 10
    """Action slots (`DiscreteActions`)."""
    text_dim: int = 64
    """Hash buckets per `TextFeatures` block."""
    history: int = 4
    """Executed commands and observations kept in the window (`HistoryFeatures`)."""
    command_dim: int = 16
    """Hash buckets per command."""
    n_envs: int = 16
    """Parallel envs (16 × 64 steps: one batched forward pass serves 16 envs)."""
    vec_env: str = "dummy"
    """``dummy`` (all envs in this process) or ``subproc`` (one process per env)."""
    n_steps: int = 64
    """PPO rollout length per env."""
    batch_size: int = 256
    """PPO minibatch."""
    n_epochs: int = 4
    """PPO epochs per rollout."""
    learning_rate: float = 3e-4
    """PPO's Adam step size (BC fits with its own Adam at 1e-3)."""
    gamma: float = 0.99
    """Discount (also ProcessReward's gamma)."""
    ent_coef: float = 0.01
    """PPO entropy bonus."""
    net_arch: tuple[int, ...] = (128, 128)
    """Hidden layers of the policy and value MLPs."""
    init: str = ""
    """Start from this saved policy directory's network, in PPO and in BC (its encoding must
    match)."""
    task_seed_base: int = 1_000_000
    """Training worlds use task seeds >= this (evaluation uses smaller ones)."""
    task_pool: int = 0
    """If > 0, train on task seeds base..base+pool-1 only (a fixed pool); 0: a new world each episode."""
    bc_episodes: int = 200
    """Demonstration episodes (BC)."""
    bc_epsilon: float = 0.3
    """The demonstrator's ε: a random admissible command with this probability (BC)."""
    bc_epochs: int = 20
    """Passes over the demonstrations (BC)."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many steps (0: none)."""
    log: str = "csv"
    """``csv``, ``tensorboard`` (needs the tensorboard package) or ``none``."""
    progress: bool = False
    """Show a progress bar (SB3's, through rich)."""
    bootstrap_at_budget: str = "auto"
    """Bootstrap the value when the budget runs out: ``yes``, ``no`` or ``auto`` (yes only when
    the budget is hidden). A policy that sees its budget has running out of turns in its
    state: the value after the last turn is 0, and bootstrapping from the (never trained)
    value of a turns-left-0 state lets it drift (Pardo et al., 2018, "Time limits in RL")."""
    torch_threads: int = 1
    """torch threads in this process (1: parallelism comes from running seeds in parallel)."""
    budget: dataclasses.InitVar[int | None] = None
    """Deprecated: the old name of ``turn_budget`` (warns; removed in the next release)."""

    def __post_init__(self, budget: int | None) -> None:
        if budget is not None:  # `turn_budget` left at its default, or the old name is refused
            given = None if self.turn_budget == _DEFAULT_TURN_BUDGET else self.turn_budget
            self.turn_budget = renamed(given, budget, "turn_budget", "budget", "TrainConfig")
        for name, choices in _CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(f"Expect `{name}` to be one of {choices}, got {brief(value)}")
        self._check_numbers()
        for name in ("out", "env_id"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise ValueError(
                    f"Expect `{name}` to be a non-empty string, got {brief(getattr(self, name))}"
                )
        _check_path(self.out, "out")
        _check_env_id(self.env_id)
        for name in ("process_reward", "progress"):  # ("no" turned shaping on)
            setattr(self, name, check_bool(getattr(self, name), name))
        from turnbudget.wrappers.reveal_budget import check_reveal
        from turnbudget.wrappers.sample_turn_budget import BudgetMix

        try:
            mode, final_turns, _ = check_reveal(self.reveal, None, "")  # (one spelling: "NEVER")
        except ValueError:
            raise ValueError(
                f"Expect `reveal` to be 'never', 'always' or 'final=k', got {brief(self.reveal)}"
            ) from None
        self.reveal = f"final={final_turns}" if mode == "final" else mode
        if not isinstance(self.budget_mix, str):
            raise ValueError(
                f"Expect `budget_mix` to be a BudgetMix string or '', got {brief(self.budget_mix)}"
            )
        if self.budget_mix:
            try:
                BudgetMix.parse(self.budget_mix)  # (a clear error before anything is written)
            except ValueError as exc:
                raise ValueError(
                    f"Expect `budget_mix` to be a BudgetMix string or '': {exc}"
                ) from None
        if not isinstance(self.init, str):
            raise ValueError(
                f"Expect `init` to be a policy directory or '', got {brief(self.init)}"
            )
        _check_path(self.init, "init")
        schedule = self.budget_schedule
        if not isinstance(schedule, (list, tuple)) or not all(isinstance(p, str) for p in schedule):
            raise ValueError(
                "Expect `budget_schedule` to be a sequence (a list or tuple) of BudgetMix strings, one "
                f"per phase, got {brief(schedule)}"
            )
        if self.budget_schedule and self.algo == "bc":
            # (its phases split PPO's steps, total_steps / n_envs: BC's demonstrations all
            # played the first phase's budgets, silently)
            raise ValueError(
                "Expect no `budget_schedule` with algo 'bc': a schedule's phases split PPO's "
                "steps; give BC's demonstrations their budgets with `budget_mix`"
            )
        if self.budget_schedule:
            from turnbudget.wrappers.sample_turn_budget import BudgetMix

            self.budget_schedule = tuple(self.budget_schedule)
            for i, phase in enumerate(self.budget_schedule):
                try:
                    BudgetMix.parse(phase)  # a clear error for a bad phase, before any training
                except ValueError as exc:
                    raise ValueError(
                        f"Expect every phase of `budget_schedule` to be a BudgetMix string, got "
                        f"{brief(phase)} (phase {i + 1}): {exc}"
                    ) from None

    def _check_numbers(self) -> None:
        """Counts, seeds, rates and the layer sizes: each a ValueError naming its field."""
        self.turn_budget = check_turn_budget(self.turn_budget)
        for name in _POSITIVE:
            value = check_positive_int(getattr(self, name), name)
            if value > _MOST[name]:
                raise ValueError(f"Expect `{name}` to be at most {_MOST[name]:,}, got {value:,}")
            setattr(self, name, value)
        for name in _NON_NEGATIVE:
            value = getattr(self, name)
            if not is_int(value) or value < 0:
                raise ValueError(f"Expect `{name}` to be an int >= 0, got {brief(value)}")
            setattr(self, name, int(value))
        # (the learner seeds NumPy's legacy generator: 32 bits; task seeds are 64)
        self.seed = check_seed(self.seed, "seed", most=2**32 - 1)
        rollout = self.n_envs * self.n_steps
        if self.algo == "ppo" and (self.batch_size == 1 or rollout % self.batch_size == 1):
            # (MaskablePPO normalises each minibatch's advantages by their standard deviation:
            # NaN for one sample, and the weights became NaN while the run "finished")
            raise ValueError(
                f"Expect `batch_size` to leave no minibatch of one sample: the rollout of "
                f"`n_envs` x `n_steps` = {rollout:,} steps split into minibatches of "
                f"{self.batch_size:,} leaves one of 1 (PPO normalises a minibatch's advantages "
                f"by their spread); pick a batch_size that divides {rollout:,}"
            )
        pool = self.task_pool or UNBOUNDED_POOL  # (as `TaskSeeds` reads 0)
        if self.task_seed_base + pool - 1 > MAX_SEED:
            raise ValueError(
                f"Expect `task_seed_base` + `task_pool` to be at most {MAX_SEED + 1:,} (the task "
                f"seeds run from the base to base + pool - 1, at most {MAX_SEED:,}; a `task_pool` "
                f"of 0 is {UNBOUNDED_POOL:,} seeds), got {self.task_seed_base:,} + {pool:,}"
            )
        self.gamma = _check_real(self.gamma, "gamma", "a number in (0, 1]", lambda x: 0 < x <= 1)
        self.bc_epsilon = _check_real(
            self.bc_epsilon, "bc_epsilon", "a number in [0, 1]", lambda x: 0 <= x <= 1
        )
        self.learning_rate = _check_real(
            self.learning_rate, "learning_rate", "a finite number > 0", lambda x: x > 0
        )
        self.ent_coef = _check_real(
            self.ent_coef, "ent_coef", "a finite number >= 0", lambda x: x >= 0
        )
        # (> 0 and at most MAX_SCALE as `ProcessReward` takes it: refused there, once the envs
        # were built, by its own name `scale`, which no flag of ``turnbudget train`` has)
        self.process_scale = _check_real(
            self.process_scale,
            "process_scale",
            f"a finite number > 0 and at most {MAX_SCALE:,}",
            lambda x: 0 < x <= MAX_SCALE,
        )
        arch = self.net_arch
        if isinstance(arch, (str, bytes)) or not isinstance(arch, (tuple, list)) or not arch:
            raise ValueError(
                f"Expect `net_arch` to be a non-empty sequence of positive ints (hidden layer "
                f"sizes), got {brief(arch)}"
            )
        self.net_arch = tuple(
            check_positive_int(size, "net_arch", subject="every layer size in `net_arch`")
            for size in arch
        )
        if max(self.net_arch) > _MOST_LAYER:
            raise ValueError(
                f"Expect every layer size in `net_arch` to be at most {_MOST_LAYER:,}, "
                f"got {max(self.net_arch):,}"
            )
        self._check_sizes()

    def _check_sizes(self) -> None:
        """A ValueError when the network or a rollout would not fit in memory: their sizes
        are products of counts each capped on its own."""
        features = self.most_features()
        layers = (features, *self.net_arch)
        weights = 2 * sum(a * b for a, b in itertools.pairwise(layers))  # policy and value nets
        if weights > _MOST_WEIGHTS:
            raise ValueError(
                f"Expect the policy and value networks to hold at most {_MOST_WEIGHTS:,} weights, "
                f"got {weights:,} (up to {features:,} features from `text_dim`, `max_actions`, "
                f"`history` and `command_dim`, into `net_arch` "
                f"{','.join(map(str, self.net_arch))}): lower them"
            )
        floats = self.n_envs * self.n_steps * features
        if self.algo == "ppo" and floats > _MOST_ROLLOUT_FLOATS:
            raise ValueError(
                f"Expect a rollout to hold at most {_MOST_ROLLOUT_FLOATS:,} floats of "
                f"observations, got `n_envs` x `n_steps` x up to {features:,} features = "
                f"{floats:,}: lower them, or `text_dim`"
            )
        # BC keeps every demonstrated observation (`bc.collect_demos`): up to the largest
        # budget's steps per episode.
        longest = self._largest_budget()
        floats = self.bc_episodes * longest * features
        if self.algo == "bc" and floats > _MOST_ROLLOUT_FLOATS:
            raise ValueError(
                f"Expect BC's demonstrations to hold at most {_MOST_ROLLOUT_FLOATS:,} floats of "
                f"observations, got `bc_episodes` x up to {longest:,} turns x up to "
                f"{features:,} features = {floats:,}: lower them, or `text_dim`"
            )

    def _largest_budget(self) -> int:
        """The longest episode a demonstration may play: the largest T of ``budget_mix``,
        else ``turn_budget``."""
        from turnbudget.wrappers.sample_turn_budget import BudgetMix

        try:
            mix = BudgetMix.parse(self.budget_mix) if self.budget_mix else None
        except ValueError:  # (refused with its own message once the numbers are checked)
            mix = None
        if mix is None:
            return self.turn_budget
        return max(mix.values) if mix.kind == "choice" else mix.high

    def most_features(self) -> int:
        """The most features an observation has under this config (three text blocks of
        `text_dim` and `FeatureEncoder`'s slots, window, memory and budget features)."""
        slot = self.command_dim + 1 + self.history
        return (
            3 * self.text_dim + self.max_actions * slot + self.history * (self.command_dim + 1) + 6
        )

    def check_init(self) -> None:
        """A ValueError unless ``init`` is empty or holds a saved ``policy.zip``. Checked when
        PPO starts, not when the config is made: a plan of runs (the benchmarks') makes the
        configs of its PPO arms before their base has been trained."""
        if self.init and not (Path(self.init) / "policy.zip").is_file():
            raise ValueError(
                f"Expect `init` (--init) to be a directory holding a saved policy.zip (a run's "
                f"--out), got {brief(self.init)}"
            )

    def bootstraps(self) -> bool:
        """Whether the learner bootstraps the value where the budget ran out (see
        ``bootstrap_at_budget``); when it does not, `ProcessReward`'s Φ is zeroed there."""
        if self.bootstrap_at_budget == "auto":
            return self.reveal == "never"
        return self.bootstrap_at_budget == "yes"


def check_config(config: Any) -> TrainConfig:
    """A checked copy of ``config`` if it is a valid `TrainConfig`, else a TypeError or
    ValueError: what every training entry point takes is checked again, since a dataclass's
    fields can be changed after it was made (``config.seed = -1``)."""
    if not isinstance(config, TrainConfig):
        hint = " (an instance: TrainConfig(...))" if config is TrainConfig else ""
        raise TypeError(f"Expect `config` to be a TrainConfig{hint}, got {brief(config)}")
    # (its __post_init__ checks every field and spells each one way: the copy, not `config`,
    # which kept a float32 set after it was made, and config.json could not be written)
    return dataclasses.replace(config)


# Fields that change nothing a run writes but its progress display, or name the place itself.
_NOT_COMPARED = ("out", "progress")
_MOST_CONFIG_BYTES = 1 << 20


def check_out(config: TrainConfig, overwrite: bool = False) -> None:
    """A ValueError when ``config.out`` holds what the run would replace, unless
    ``overwrite``: another training run (its ``config.json`` differs: the settings are
    named), or a policy without its config; and, ``overwrite`` or not, an evaluation run
    or a probe run (`EVALUATION_FILES`: training replaced its summary.json and left its
    logs, two runs in one directory). The same run again (one that was killed, started over) and unrelated files
    are taken."""
    overwrite = check_bool(overwrite, "overwrite")
    out = Path(config.out)
    if not out.is_dir():
        return
    if config.init and Path(config.init).is_dir() and out.resolve() == Path(config.init).resolve():
        # (the run removed the policy it started from before it saved its own: stopped or
        # diverged, both were gone)
        raise ValueError(
            f"`init` and `out` are one directory ({out}): the run would replace the policy it "
            "starts from; train into another directory (with or without --overwrite)"
        )
    evaluation = [n for n in EVALUATION_FILES if (out / n).exists() or (out / n).is_symlink()]
    if evaluation:  # (a probe run's too: training wrote beside its probes.jsonl)
        raise ValueError(
            f"`out` {out} holds an evaluation run ({', '.join(evaluation)}): train into another "
            "directory (an evaluation and a training run never share one, with or without "
            "--overwrite)"
        )
    if overwrite:
        return
    fix = "train into another directory, or pass overwrite=True (--overwrite) to replace it"
    saved = out / "config.json"
    if not saved.is_file() and (saved.exists() or saved.is_symlink()):
        # (a folder of that name, which `start_out` then removed with all it held)
        raise ValueError(f"`out` {out} holds a config.json that is no file: {fix}")
    if not saved.is_file():
        # (a run that wrote no config.json: an older version's, or one stopped before it)
        # (an exported policy's weights.npz, read before a policy.zip, played the old policy
        # under the new run's name)
        held = [
            name
            for name in ("policy.zip", WEIGHTS_FILE, ENCODING_FILE, CARD_FILE, "summary.json",
                         "progress.csv", "checkpoints")
            if (out / name).exists() or (out / name).is_symlink()
        ]  # fmt: skip
        # (TensorBoard's event files, which the run clears: another tool's went, unasked)
        held += sorted(p.name for p in out.glob("events.out.tfevents.*"))[:1]
        if held:
            raise ValueError(f"`out` {out} holds a policy or a run ({', '.join(held)}): {fix}")
        return
    try:
        with saved.open("rb") as f:  # (a config.json is a few hundred bytes: 2 GB were read whole)
            data = f.read(_MOST_CONFIG_BYTES + 1)
        theirs = json.loads(data) if len(data) <= _MOST_CONFIG_BYTES else None
    except (OSError, ValueError, RecursionError):  # (not JSON, not UTF-8, too deep)
        theirs = None
    if not isinstance(theirs, dict):
        raise ValueError(f"`out` {out} holds a config.json that is no training config: {fix}")
    ours = json.loads(json.dumps(dataclasses.asdict(config)))  # (as config.json reads back)
    differ = [
        k
        for k in sorted(set(ours) | set(theirs))
        if k not in _NOT_COMPARED and ours.get(k) != theirs.get(k)
    ]
    if differ:
        raise ValueError(
            f"`out` {out} holds another training run (its config.json differs in "
            f"{', '.join(differ)}): {fix}"
        )


def _check_real(value: Any, name: str, expected: str, ok: Any) -> float:
    # (is_finite: float(10**400) raised an OverflowError that named no field)
    if not is_finite(value) or not ok(float(value)):
        raise ValueError(f"Expect `{name}` to be {expected}, got {brief(value)}")
    # (as a float: NumPy's float32 or a Fraction reached config.json, which JSON cannot hold:
    # a TypeError once `out` was made)
    return float(value)


def _check_path(path: str, name: str) -> None:
    # (no path holds a NUL: the run stopped at "embedded null byte", naming no field, once
    # its envs were built)
    if "\x00" in path:
        raise ValueError(f"Expect `{name}` to be a path without a NUL character, got {brief(path)}")


def _check_env_id(env_id: str) -> None:
    """A ValueError unless ``env_id`` is a registered Gymnasium id (with a hint for a bare
    ``turnbudget/`` id)."""
    import gymnasium as gym

    import turnbudget  # noqa: F401  (registers the ids)
    from turnbudget.registration import NAMESPACE

    if env_id in gym.registry and env_id.startswith(f"{NAMESPACE}/"):
        return
    if env_id in gym.registry:  # (CartPole-v1 crashed when the stack gave it a turn budget)
        raise ValueError(
            f"Expect `env_id` to be one of this package's text games ({NAMESPACE}/...), got "
            f"{brief(env_id)} (`turnbudget list` shows them)"
        )
    hint = ""
    if f"{NAMESPACE}/{env_id}" in gym.registry:
        hint = f"; did you mean '{NAMESPACE}/{env_id}'?"
    raise ValueError(
        f"Expect `env_id` to be a registered env id, got {brief(env_id)}{hint} "
        "(`turnbudget list` shows the ids)"
    )
