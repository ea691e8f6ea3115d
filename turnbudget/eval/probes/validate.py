"""Validate the probe metrics on control agents whose true skills are known.

`validate` probes every control of `turnbudget.agents.controls` on the same
states and checks each metric against what the control truly has
(`control_checks`):

- recovery-specific skill: 0 for the memoryless ε-oracles (ε = 0, 0.1, 0.3,
  0.5, 0.8), for random and for the ping-pong; near 0 for the undo reflex
  (its interval may lie above 0 by at most `REFLEX_MARGIN`: in a probe, the
  forced prefix it retraces is the teacher's optimal path; on Maze-Easy its
  truth, about +0.105, is at the margin: see `turnbudget.agents.controls`); above 0 for the
  recovery-positive control, below 0 for the recovery-negative one;
- the finding-2 contrast between ε-oracles (0.8 → 0.5, 0.5 → 0.3, 0.3 → 0.1):
  a gain in single-step skill, none in recovery-specific skill;
- single-step skill: 1 for the oracle; for each other ε-oracle its exact value
  on the probed states (`exact_single_step_skill`, about 1 − ε), which its
  interval holds; 0 for random (its interval holds 0), at least 0.9 for the
  look-first and look-last oracles, whose looks are no-ops (their rate is
  reported beside).

A check passes when the interval says what the control's construction does:
"0" when it holds 0, "+" when it lies above 0, "−" below, "exact" when it holds
the control's exact value. Each check shows the run's 95% interval. A null check
(``0``, ``≈0``, ``≤0``: a skill the control lacks by construction; ``exact``: a
skill known exactly) is judged on a simultaneous one instead, Bonferroni over
the run's null checks (`family_confidence`: 34 of them, each at 99.85%, for the
two default envs), so a sound metric fails one of them in at most 5% of runs
(`FAMILY_ERROR`; measured in `benchmarks/validate_error_rate.py`). The
``+`` and ``−`` checks (a skill built in) keep the 95% interval: a wider one
would only cost them power; with fewer than `MIN_TASKS_TO_RESOLVE` tasks of an
env, one that does not resolve (its interval holds 0) is inconclusive, not failed.
``turnbudget validate`` prints the table and exits 1 when a check fails, 3 when none
failed but some were inconclusive.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from turnbudget._checks import (
    brief,
    check_bool,
    check_positive_int,
    check_seed,
    is_finite,
    is_real,
)
from turnbudget.eval.estimator import check_n_bootstrap
from turnbudget.eval.probes.run import ProbeResult, probe
from turnbudget.eval.probes.summary import (
    CONFIDENCE,
    check_probe_records,
    compare_probes,
    summarize_probes,
)
from turnbudget.eval.run.lock import locks_output_dir
from turnbudget.eval.run.plan import check_backend_options
from turnbudget.records import write_json

__all__ = [
    "EPSILONS",
    "FAMILY_ERROR",
    "NULL_CHECKS",
    "NULL_PAIRS",
    "REFLEX_MARGIN",
    "VALIDATION_FILE",
    "Check",
    "Validation",
    "control_agents",
    "control_checks",
    "exact_single_step_skill",
    "family_confidence",
    "format_checks",
    "judge",
    "validate",
]

VALIDATION_FILE = "validation.json"
#: The ε of the memoryless ε-oracle controls.
EPSILONS = (0.0, 0.1, 0.3, 0.5, 0.8)
#: The ε-oracle pairs (base ε, better ε) of the finding-2 null contrasts.
NULL_PAIRS = ((0.8, 0.5), (0.5, 0.3), (0.3, 0.1))
#: How far above 0 the interval of a goal-free reflex's recovery-specific skill may lie.
REFLEX_MARGIN = 0.1
_REFLEXES = ("random", "ping-pong", "undo-reflex")
#: The chance that a sound metric fails any null check of one run: their verdicts read
#: intervals at `family_confidence` over the run's null checks.
FAMILY_ERROR = 0.05
#: The checks of a skill the control lacks by construction, or has exactly (``exact``): judged
#: on simultaneous intervals.
NULL_CHECKS = frozenset({"0", "≤0", "≈0", "exact"})
#: The checks of a skill built into the control (a sign it must show).
BUILT_IN_CHECKS = frozenset({"+", "−", "+mean"})
#: The fewest tasks of an env at which its built-in skills resolve: over 20 seeds (0-19),
#: every ``+``, ``−`` and ``+mean`` check passed at 12 and 16 tasks on Maze-Easy and
#: KeyQuest-Easy. At 10, 3 of the 20 failed KeyQuest's recovery-positive ``+`` once the
#: recovery-specific floor counted tasks, not every pair (`paired_difference`); at 2 most
#: failed (the null checks passed at every size). With fewer, such a check that does not
#: resolve is inconclusive, not failed: only one whose interval lies on the wrong side of 0
#: fails.
MIN_TASKS_TO_RESOLVE = 12


@dataclass(frozen=True)
class Check:
    """One row of the control table: a metric of a control, what it must be, what it was.

    ``expected``: ``"0"`` (the interval holds 0), ``"+"`` / ``"−"`` (it lies
    above / below 0), ``"≤0"`` (it does not lie above 0), ``"≈0"`` (it holds 0 or
    lies above it by at most `REFLEX_MARGIN`), ``"+mean"`` (the mean is above 0: a gain its interval
    may not yet resolve at small sizes), ``"≥0.9"`` and ``"1"`` (the mean),
    ``"exact"`` (the interval holds ``truth``, the control's exact value), or ``"info"``
    (reported, not checked: ``ok`` is None).

    ``value`` holds the mean and the run's 95% interval; ``simultaneous``, for the null
    checks (`NULL_CHECKS`), the interval their verdict reads: at `family_confidence` over
    every null check of the run (None for the others, judged on ``value``).

    ``ok`` is None for ``info``, and for a check that is ``inconclusive``: a built-in
    skill (`BUILT_IN_CHECKS`) its env's tasks were too few to resolve
    (`MIN_TASKS_TO_RESOLVE`), its interval holding 0.
    """

    group: str
    control: str
    metric: str
    expected: str
    value: Mapping[str, float | None]
    ok: bool | None
    simultaneous: Mapping[str, float | None] | None = None
    truth: float | None = None
    inconclusive: bool = False


@dataclass
class Validation:
    """What `validate` returns: the checks, and the probe run they were measured on."""

    checks: list[Check]
    probe: ProbeResult

    @property
    def failed(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if c.ok is False]

    @property
    def inconclusive(self) -> list[Check]:
        """The checks too few tasks left unresolved (see `Check`)."""
        return [c for c in self.checks if c.inconclusive]

    @property
    def passed(self) -> bool:
        """Whether every check passed: none failed, none inconclusive."""
        return not self.failed and not self.inconclusive


def control_agents() -> list[Any]:
    """One of each control: random, the ε-oracles of `EPSILONS`, the reflexes, the look
    oracles, and the recovery-positive and recovery-negative agents."""
    from turnbudget.agents.baselines import OracleAgent, RandomAgent
    from turnbudget.agents.controls import make_control

    return [
        RandomAgent(),
        *(OracleAgent(e) for e in EPSILONS),
        *(make_control(name) for name in ("undo", "pingpong", "look-first", "look-last")),
        make_control("recovery-positive"),
        make_control("recovery-negative"),
    ]


def _oracle(epsilon: float) -> str:
    return f"oracle-eps{epsilon:g}"


#: What each expected form asks of a measured (mean, low, high), and an ``exact`` check's truth.
_RULES: dict[str, Callable[[float, float, float, float | None], bool]] = {
    "0": lambda mean, low, high, truth: low <= 0.0 <= high,
    "+": lambda mean, low, high, truth: low > 0.0,
    "−": lambda mean, low, high, truth: high < 0.0,
    "≤0": lambda mean, low, high, truth: low <= 0.0,
    "≈0": lambda mean, low, high, truth: high >= 0.0 and low <= REFLEX_MARGIN,
    "≥0.9": lambda mean, low, high, truth: mean >= 0.9,
    "1": lambda mean, low, high, truth: mean == 1.0,
    "exact": lambda mean, low, high, truth: truth is not None and low <= truth <= high,
    "+mean": lambda mean, low, high, truth: mean > 0.0,
}


def judge(expected: str, value: Mapping[str, Any], truth: float | None = None) -> bool | None:
    """Whether ``value`` (``{"mean", "low", "high"}``) is what a check expects (see `Check`;
    ``truth``: the exact value an ``exact`` check's interval must hold); None for ``info``,
    False when nothing was measured (a mean of None).

    Example:
        >>> value = {"mean": 0.01, "low": -0.02, "high": 0.04}
        >>> judge("0", value), judge("+", value)
        (True, False)
    """
    if expected != "info" and expected not in _RULES:
        raise ValueError(
            f"Expect `expected` to be one of {[*_RULES, 'info']}, got {brief(expected)}"
        )
    if not isinstance(value, Mapping):
        raise ValueError(f"Expect `value` to be a mapping of mean, low, high, got {brief(value)}")
    if expected == "info":
        return None
    measured = value.get("mean"), value.get("low"), value.get("high")
    if measured[0] is None:
        return False
    if not all(is_real(x) and x == x for x in measured) or not (
        truth is None or (is_real(truth) and truth == truth)
    ):  # (a NaN compares False everywhere: a check would pass or fail by its form)
        raise ValueError(
            f"Expect `value` to hold numbers (mean, low, high) and `truth` a number or "
            f"None, got {brief(dict(value))} and {brief(truth)}"
        )
    return bool(_RULES[expected](*measured, truth))


def family_confidence(n_checks: int, family_error: float = FAMILY_ERROR) -> float:
    """The coverage of each of ``n_checks`` intervals that together cover all their true
    values with probability at least 1 - ``family_error`` (Bonferroni).

    Example:
        >>> round(family_confidence(30), 6)
        0.998333
    """
    n_checks = check_positive_int(n_checks, "n_checks")
    if not is_real(family_error) or not 0.0 < family_error < 1.0:
        raise ValueError(f"Expect `family_error` in (0, 1), got {brief(family_error)}")
    return 1.0 - float(family_error) / n_checks


def control_checks(
    config: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    *,
    n_bootstrap: int = 1000,
) -> list[Check]:
    """The control table of a probe run of `control_agents` (see the module doc), per env.

    Each check's ``value`` is from ``summary`` (the run's 95% intervals); a null check
    (expected ``0``, ``≈0`` or ``≤0``) is judged on its ``simultaneous`` interval, made from
    ``records`` at `family_confidence` over every null check of the run.
    """
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    truths = {
        (group, _oracle(e)): exact_single_step_skill(
            [r for r in records if r["env_id"] == group and r["agent"] == _oracle(e)], e
        )
        for group in config["envs"]
        for e in EPSILONS
    }
    contrasts = _contrasts(config, records, n_bootstrap, CONFIDENCE)
    rows = list(_rows(config, summary, contrasts, truths))
    level = family_confidence(sum(row[3] in NULL_CHECKS for row in rows))
    wide = summarize_probes(config, records, n_bootstrap=n_bootstrap, confidence=level)
    wide_rows = _rows(config, wide, _contrasts(config, records, n_bootstrap, level), truths)
    tasks = _tasks_per_env(config, records)
    checks = []
    for (group, control, metric, expected, value, truth), wide_row in zip(
        rows, wide_rows, strict=True
    ):
        simultaneous = dict(wide_row[4]) if expected in NULL_CHECKS else None
        ok = judge(expected, value if simultaneous is None else simultaneous, truth)
        inconclusive = (
            ok is False
            and expected in BUILT_IN_CHECKS
            and tasks.get(group, 0) < MIN_TASKS_TO_RESOLVE
            and not _wrong_side(expected, value)
        )
        if inconclusive:
            ok = None
        checks.append(
            Check(group, control, metric, expected, value, ok, simultaneous, truth, inconclusive)
        )
    return checks


def _tasks_per_env(
    config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> dict[str, int]:
    """The tasks each env of the run probed (a task whose plan held no probe adds nothing)."""
    seen: dict[str, set[int]] = {group: set() for group in config["envs"]}
    for r in records:
        seen.setdefault(r["env_id"], set()).add(int(r["task_seed"]))
    return {group: len(tasks) for group, tasks in seen.items()}


def _wrong_side(expected: str, value: Mapping[str, Any]) -> bool:
    """Whether a built-in skill's interval lies on the wrong side of 0 (a failure at any size)."""
    low, high = value.get("low"), value.get("high")
    if low is None or high is None:
        return False  # (nothing measured: inconclusive with too few tasks)
    return low > 0.0 if expected == "−" else high < 0.0


def exact_single_step_skill(records: Sequence[Mapping[str, Any]], epsilon: float) -> float | None:
    """The single-step skill a memoryless ε-oracle has on the states of its single-step probe
    ``records`` (one env), known exactly from each state's counts: with probability 1 − ε it
    answers optimally, else it picks uniformly among the state's ``n_admissible`` commands,
    of which ``n_optimal`` are optimal and ``n_changing`` change the state. Its rate of optimal
    answers among those that change the state, normalized against the chance of a uniform
    pick, is about 1 − ε; None without such states.

    Example:
        >>> state = {"env_id": "e", "task_seed": 0, "probe": "single", "kind": None,
        ...          "role": "agent", "agent": "oracle", "n_admissible": 4, "n_optimal": 1,
        ...          "n_changing": 4}
        >>> round(exact_single_step_skill([state, state], 0.1), 6)
        0.9
    """
    if not is_finite(epsilon) or not 0 <= epsilon <= 1:
        raise ValueError(f"Expect `epsilon` to be a number in [0, 1], got {brief(epsilon)}")
    check_probe_records(records)
    weights = [
        (r["n_optimal"] / r["n_admissible"], r.get("n_changing", r["n_admissible"]) / r["n_admissible"])
        for r in records
        if r["probe"] == "single" and r["role"] == "agent" and r.get("applied", True)
        and r.get("n_admissible")
    ]  # fmt: skip
    changing = sum(c for _, c in weights)
    # (no state with a command that changes it: nothing to judge, as without states)
    chance = sum(o for o, _ in weights) / changing if changing else 1.0
    if chance >= 1.0:
        return None
    hits = sum(1 - epsilon + epsilon * o for o, _ in weights)
    judged = sum(1 - epsilon + epsilon * c for _, c in weights)
    return (hits / judged - chance) / (1.0 - chance)


def _contrasts(
    config: Mapping[str, Any], records: Any, n_bootstrap: int, confidence: float
) -> dict[tuple[float, float], Any]:
    return {
        (a, b): compare_probes(
            config, records, _oracle(a), _oracle(b), n_bootstrap=n_bootstrap, confidence=confidence
        )
        for a, b in NULL_PAIRS
    }


def _rows(
    config: Mapping[str, Any],
    summary: Mapping[str, Any],
    contrasts: Mapping[Any, Any],
    truths: Mapping[tuple[str, str], float | None],
) -> Iterator[tuple[str, str, str, str, Mapping[str, Any], float | None]]:
    """The table's rows, (group, control, metric, expected, value, an ``exact`` check's truth),
    from a summary, the null contrasts at one confidence and the ε-oracles' exact
    single-step skills (``truths``, by group and control)."""
    agents = summary["agents"]
    rs = "recovery-specific skill"
    for group in config["envs"]:
        g = {label: agents[label][group] for label in agents}
        for label in (*_REFLEXES, *map(_oracle, EPSILONS)):
            expected = "≈0" if label in _REFLEXES else "0"
            yield group, label, rs, expected, g[label]["recovery_specific_skill"], None
        for label, expected in (("recovery-positive", "+"), ("recovery-negative", "−")):
            yield group, label, rs, expected, g[label]["recovery_specific_skill"], None
        for a, b in NULL_PAIRS:
            name = f"{_oracle(a)} → {_oracle(b)}"
            c = contrasts[(a, b)][group]
            yield group, name, f"Δ {rs}", "0", c["recovery_specific_skill"], None
            yield group, name, "Δ single-step skill", "+mean", c["single_step_skill"], None
        single = "single-step skill"
        yield group, "random", single, "0", g["random"]["single_step_skill"], None
        # Below chance where commands have inverses (it undoes the probe's last optimal
        # command), at chance where most have none (Crafting): never above it.
        yield group, "ping-pong", single, "≤0", g["ping-pong"]["single_step_skill"], None
        # (ε > 0: its exact value, not a comparison with the row before: an ε = 0.1 oracle
        # that happened to answer every judged probe optimally tied ε = 0 at 1.000 and failed
        # a check of "below the previous row" on a sound metric, 1 run in 30 on KeyQuest-Easy)
        for e in EPSILONS:
            value = g[_oracle(e)]["single_step_skill"]
            if e == 0:
                yield group, _oracle(e), single, "1", value, None
            else:
                yield group, _oracle(e), single, "exact", value, truths[(group, _oracle(e))]
        for label in ("look-first", "look-last"):
            yield group, label, single, "≥0.9", g[label]["single_step_skill"], None
            yield group, label, "no-op rate", "info", g[label]["noop_rate"], None


def format_checks(checks: Sequence[Check]) -> str:
    """The control table as aligned text: group, control, metric, expected (an ``exact`` check's
    truth), measured (95%), the simultaneous interval its verdict read (null checks only),
    verdict."""

    def measured(v: Mapping[str, Any]) -> str:
        if v.get("mean") is None:
            return "–"
        return f"{v['mean']:+.3f} [{v['low']:+.3f}, {v['high']:+.3f}]"

    def simultaneous(v: Mapping[str, Any] | None) -> str:
        if v is None:
            return ""
        return "–" if v.get("mean") is None else f"[{v['low']:+.3f}, {v['high']:+.3f}]"

    def expected(c: Check) -> str:  # (an exact check shows its truth: "=+0.903")
        return c.expected if c.expected != "exact" or c.truth is None else f"={c.truth:+.3f}"

    verdict = {True: "ok", False: "FAIL", None: ""}

    def shown(c: Check) -> str:
        return "too few tasks" if c.inconclusive else verdict[c.ok]

    header = ("env", "control", "metric", "expected", "measured [95% interval]", "simultaneous")
    rows = [(*header, "")]
    rows += [
        (c.group.split("/")[-1], c.control, c.metric, expected(c), measured(c.value),
         simultaneous(c.simultaneous), shown(c))
        for c in checks
    ]  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines)


@locks_output_dir  # the probes and validation.json under one hold of the directory
def validate(
    envs: str | Sequence[str],
    *,
    tasks: int | Sequence[int] = 40,
    seed: int = 0,
    baseline_repeats: int = 4,
    n_bootstrap: int = 1000,
    out: str | os.PathLike[str] | None = None,
    progress: bool = False,
    workers: int = 1,
    backend: Any = None,
    backend_options: dict[str, Any] | None = None,
    timeout: float | None = None,
    retries: int = 2,
    overwrite: bool = True,
) -> Validation:
    """Probe the control agents on ``envs`` and check every metric against their true skills.

    Args:
        envs: one env id or several (each checked on its own).
        tasks: task seeds, or a count ``m`` for seeds ``0..m-1``.
        seed: base of every seed (plans, errors, agents).
        baseline_repeats: probes per state for the random baseline.
        n_bootstrap: bootstrap resamples over tasks.
        out: a directory for the probe results and ``validation.json`` (the checks).
        progress: show a progress bar on stderr.
        workers: with ``backend``, ``backend_options``, ``timeout`` and ``retries``,
            where the probe episodes run, as in `turnbudget.eval.probe`.
        backend: see ``workers``.
        backend_options: see ``workers``.
        timeout: see ``workers``.
        retries: see ``workers``.
        overwrite: replace the results of other probes in ``out``, as `probe` does; False
            refuses them before any probe runs, as ``turnbudget validate`` does without
            ``--overwrite``.

    Example:
        >>> v = validate("turnbudget/Maze-Easy-v0", tasks=4, n_bootstrap=100)
        >>> [c.ok for c in v.checks if c.control == "oracle-eps0" and c.metric == "single-step skill"]
        [True]
    """
    progress = check_bool(progress, "progress")
    seed = check_seed(seed)
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    backend_options = check_backend_options(backend_options)
    # (`probe` unlocked: this call holds the directory already, and another run taking it
    # between the probes and validation.json put this run's checks beside its own probes)
    result = probe.__wrapped__(
        envs, control_agents(), tasks=tasks, seed=seed, baseline_repeats=baseline_repeats,
        n_bootstrap=n_bootstrap, out=out, progress=progress, workers=workers, backend=backend,
        backend_options=backend_options, timeout=timeout, retries=retries, overwrite=overwrite,
    )  # fmt: skip
    checks = control_checks(
        result.config.to_dict(), result.records, result.summary, n_bootstrap=n_bootstrap
    )
    if out is not None:
        rows = [asdict(c) for c in checks]
        write_json(Path(out, VALIDATION_FILE), rows, indent=1)
    return Validation(checks, result)
