"""Probe results: single-step skill, recovery-specific skill, and contrasts between agents.

`summarize_probes` turns the probe records (``probes.jsonl``) into
``probe_summary.json``: per agent and env group,

- ``single_step_skill``: the rate of optimal answers among the answers that
  change the state, normalized against the random baseline on the same
  states, ``(p - p_random) / (1 - p_random)`` (0 chance, 1 perfect);
  ``noop_rate``: the rate of valid answers that leave the state as it was
  (``look``), counted apart and never as errors;
- ``recovery_specific_skill``: the *win share* after an error minus the win
  share from the matched on-track state (as far from the goal, the same
  budget B): what the agent does after an error beyond what it does anyway
  from there. The win share of a probe is the share of the budgets T from the
  distance d1 (the fewest turns that can win) to B within which the agent won
  (the area under its Pass@(1,T) curve from that state): 1 for a win in d1
  turns, 0 for none within B, so a win that comes late counts for less and
  a generous B does not hide a detour. Memoryless agents score 0 whatever
  their single-step skill; it is positive only for an agent that plays better
  after an error, negative for one that plays worse;

each ``{"mean", "low", "high"}`` (95%), beside the raw rates (win rates within
B after the error and in the control, back to the pre-error distance within
the budget and promptly, turns to recover, the baseline's). `compare_probes` gives
the contrasts between two agents probed on the same states (the finding-2
question: does one gain more in recovery-specific skill than the other?).

Intervals: rates carry Wilson's score interval at their effective number of
trials (`turnbudget.eval.estimator.clustered_rate`: outcomes of one task are
alike); skills and differences the percentile bootstrap over tasks (agent,
baseline and pairs resampled together), widened to contain an interval that
cannot collapse: the single-step skill's from the Wilson intervals of the
agent's rate and the baseline's (`_skill_score`), the recovery-specific skill's from `paired_difference`, a
contrast's from `difference_interval` of the two skills' intervals. None
collapses where a rate sits at 0 or 1 or every pair agrees. Their Markdown and their pairing
with evaluation runs are the report's (`turnbudget.eval.report`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget._checks import (
    Each,
    Items,
    Maybe,
    brief,
    check_probability,
    field_problem,
    is_finite,
)
from turnbudget.eval.estimator import (
    check_confidence,
    check_n_bootstrap,
    clustered_rate,
    difference_interval,
    paired_difference,
)
from turnbudget.records import write_json

__all__ = [
    "PROBE_SUMMARY_FILE",
    "check_probe_records",
    "check_probe_summary",
    "compare_probes",
    "estimate_problem",
    "failure_bounds",
    "per_task",
    "skill",
    "summarize_probes",
    "write_probe_summary",
]

PROBE_SUMMARY_FILE = "probe_summary.json"
ALL = "all"
CONFIDENCE = 0.95
#: Prompt recovery (a raw rate): back within the turns the error added plus this many.
PROMPT_SLACK = 2

Interval = tuple[float, float, float]  # (estimate, low, high)
Records = Sequence[Mapping[str, Any]]


def skill(p: float, p_random: float) -> float | None:
    """Chance-normalized skill ``(p - p_random) / (1 - p_random)``: 0 for chance, 1 for perfect.

    None when chance is already perfect (nothing to normalize by).

    Example:
        >>> round(skill(0.55, 0.1), 6)
        0.5
    """
    p, p_random = check_probability(p, "p"), check_probability(p_random, "p_random")  # (NaN too)
    if p_random >= 1.0:
        return None
    return (p - p_random) / (1.0 - p_random)


def _round(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def _out(interval: Interval | None) -> dict[str, float | None]:
    if interval is None:
        return {"mean": None, "low": None, "high": None}
    return dict(zip(("mean", "low", "high"), (_round(x) for x in interval), strict=True))


def _tasks(*groups: Records) -> list[tuple[str, int]]:
    return sorted({(r["env_id"], int(r["task_seed"])) for records in groups for r in records})


def _sums(
    records: Records, tasks: list[tuple[str, int]], *values: Callable[[Any], float]
) -> np.ndarray:
    """Per task (rows, in ``tasks`` order), the sum of each of ``values`` over its records."""
    index = {t: i for i, t in enumerate(tasks)}
    out = np.zeros((len(tasks), len(values)))
    for r in records:
        row = out[index[(r["env_id"], int(r["task_seed"]))]]
        for j, value in enumerate(values):
            row[j] += value(r)
    return out


def _widened(
    per_task: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    score: Interval | None,
    n_bootstrap: int,
    confidence: float = CONFIDENCE,
    point: float | None = None,
) -> Interval | None:
    """``statistic`` of the task sums (columns of ``per_task``), with the percentile bootstrap
    over tasks widened to contain ``score`` (an interval of the same statistic). ``point``:
    the estimate to give instead (the interval widened to contain it too)."""
    if len(per_task) == 0:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = float(statistic(per_task.sum(axis=0)[None, :])[0])
    if not np.isfinite(mean):
        return None
    if point is not None:
        mean = point
    low = high = mean
    if n_bootstrap > 0 and len(per_task) > 1:
        rng = np.random.default_rng(0)
        index = rng.integers(0, len(per_task), size=(n_bootstrap, len(per_task)))
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = statistic(per_task[index].sum(axis=1))
        boot = boot[np.isfinite(boot)]
        if boot.size:
            alpha = (1.0 - confidence) / 2.0
            low, high = (float(x) for x in np.quantile(boot, [alpha, 1.0 - alpha]))
    if score is not None:
        low, high = min(low, score[1]), max(high, score[2])
    return mean, low, high


def _rate(hits: np.ndarray, trials: np.ndarray, confidence: float = CONFIDENCE) -> Interval | None:
    """The pooled rate of task sums with its clustered score interval."""
    keep = trials > 0
    if not keep.any():
        return None
    return clustered_rate(hits[keep], trials[keep], confidence)


def _plain(records: Records, key: str) -> float | None:
    return _round(sum(bool(r[key]) for r in records) / len(records)) if records else None


# --------------------------------------------------------------------------- single step


def _judged(r: Mapping[str, Any]) -> bool:
    return r.get("optimal") is not None and not r.get("noop")


def _skill_of(sums: np.ndarray) -> np.ndarray:
    """Skill from task sums (agent hits, agent judged, baseline hits, baseline judged)."""
    p, r = sums[:, 0] / sums[:, 1], sums[:, 2] / sums[:, 3]
    return (p - r) / (1.0 - r)


def _single_table(agent: Records, base: Records, tasks: list[tuple[str, int]]) -> np.ndarray:
    hit = lambda r: float(_judged(r) and bool(r["optimal"]))  # noqa: E731
    judged = lambda r: float(_judged(r))  # noqa: E731
    return np.hstack([_sums(agent, tasks, hit, judged), _sums(base, tasks, hit, judged)])


def _single_skill(
    table: np.ndarray,
    n_bootstrap: int,
    confidence: float = CONFIDENCE,
    baseline_known: bool = False,
) -> Interval | None:
    """The single-step skill of a table from `_single_table`, with its widened interval.
    ``baseline_known``: the score part holds the baseline's rate fixed (for a difference of
    two skills over one baseline, where its uncertainty all but cancels)."""
    table = table[(table[:, 1] > 0) & (table[:, 3] > 0)]
    if not len(table):
        return None
    base = table[:, 2].sum() / table[:, 3].sum()
    if base >= 1.0:
        return None
    p = _rate(table[:, 0], table[:, 1], confidence)
    r = (base, base, base) if baseline_known else _rate(table[:, 2], table[:, 3], confidence)
    score = None if p is None or r is None else _skill_score(p, r, base)
    return _widened(table, _skill_of, score, n_bootstrap, confidence)  # type: ignore[arg-type]


def _skill_score(p: Interval, r: Interval, base: float) -> Interval:
    """The score interval of (p - r) / (1 - r) from the agent's rate ``p`` and the baseline's
    ``r`` (rates with their intervals; ``base`` is r's estimate): each side adds in squares
    how far each rate's bound moves the skill (MOVER). The baseline's rate was held fixed:
    an agent whose answers were all wrong had a lower bound equal to its estimate, and a
    below-chance agent probed on one task was covered 52% of the time."""

    def skill(rate: float, baseline: float) -> float:
        return (rate - baseline) / (1.0 - baseline)

    mean = skill(p[0], base)
    # (a baseline bound of 1 has no skill below it: that side keeps the agent's part alone)
    low_r = mean - skill(p[0], r[2]) if r[2] < 1.0 else 0.0
    down = float(np.hypot(mean - skill(p[1], base), low_r))
    up = float(np.hypot(skill(p[2], base) - mean, skill(p[0], r[1]) - mean))
    return mean, mean - down, min(mean + up, 1.0)  # (no skill passes 1: every answer optimal)


def _matched_rates(table: np.ndarray) -> dict[str, float | None]:
    """The agent's and the baseline's rates of optimal answers (``rate``, ``baseline_rate``)
    on the tasks of a `_single_table` where both have judged answers: the p and p_random of
    `_single_skill`."""
    table = table[(table[:, 1] > 0) & (table[:, 3] > 0)]
    if not len(table):
        return {"rate": None, "baseline_rate": None}
    return {
        "rate": _round(float(table[:, 0].sum() / table[:, 1].sum())),
        "baseline_rate": _round(float(table[:, 2].sum() / table[:, 3].sum())),
    }


def _single(
    agent: Records, base: Records, n_bootstrap: int, confidence: float = CONFIDENCE
) -> dict[str, Any]:
    tasks = _tasks(agent, base)
    table = _single_table(agent, base, tasks)
    counts = _sums(agent, tasks, lambda r: 1.0, lambda r: float(bool(r.get("noop"))))
    invalid = _sums(agent, tasks, lambda r: float(r.get("valid") is False))
    judged = [r for r in agent if _judged(r)]
    # The exact chance of a uniform pick among the admissible commands, among those that
    # change the state: sum of n_optimal / n_admissible over sum of n_changing / n_admissible.
    exact = [
        (
            r["n_optimal"] / r["n_admissible"],
            r.get("n_changing", r["n_admissible"]) / r["n_admissible"],
        )
        for r in agent
        if r.get("n_admissible")
    ]
    chance = (
        sum(a for a, _ in exact) / sum(b for _, b in exact)
        if exact and sum(b for _, b in exact)
        else None
    )
    return {
        "probes": len(agent),
        "judged": len(judged),
        "noops": sum(bool(r.get("noop")) for r in agent),
        "noop_rate": _out(_rate(counts[:, 1], counts[:, 0], confidence) if len(agent) else None),
        "invalid_rate": _round(float(invalid.sum()) / len(agent)) if agent else None,
        # (both on the tasks the skill compares, where both have a judged answer: over every
        # task, they were not the p and p_random of the skill printed beside them)
        **_matched_rates(table),
        "baseline_noop_rate": _round(sum(bool(r.get("noop")) for r in base) / len(base))
        if base
        else None,
        "chance_rate": _round(chance),
        "skill": _out(_single_skill(table, n_bootstrap, confidence)),
    }


# --------------------------------------------------------------------------- recovery


def _pair_key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    return (r["env_id"], int(r["task_seed"]), int(r["prefix"]), r["kind"], int(r.get("repeat", 0)))


def _pairs(records: Records) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(recovery, control) records of the same state, repeat and agent, both applied and run."""
    controls = {
        _pair_key(r): r for r in records if r["probe"] == "control" and r.get("applied", True)
    }
    return [
        (r, controls[_pair_key(r)])
        for r in records
        if r["probe"] == "recovery" and r.get("applied", True) and _pair_key(r) in controls
    ]


def _win_share(r: Mapping[str, Any]) -> float:
    """The share of budgets T from the distance d1 (the fewest turns that can win) to B within
    which the agent won: 1 for a win in d1 turns, 0 for no win within B (the area under its
    Pass@(1,T) curve from this state)."""
    if not r.get("won"):
        return 0.0
    budget, distance = int(r["budget"]), int(r["distance_after"])
    return min(1.0, max(0.0, (budget - int(r["turns"]) + 1) / (budget - distance + 1)))


def _pair_table(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]], tasks: list
) -> np.ndarray:
    """Per task: win shares after the error and in the control (`_win_share`), wins after the error
    and in the control, and pairs."""
    index = {t: i for i, t in enumerate(tasks)}
    out = np.zeros((len(tasks), 5))
    for rec, ctrl in pairs:
        row = out[index[(rec["env_id"], int(rec["task_seed"]))]]
        row += (_win_share(rec), _win_share(ctrl), bool(rec["won"]), bool(ctrl["won"]), 1.0)
    return out


def _specific_of(sums: np.ndarray) -> np.ndarray:
    return (sums[:, 0] - sums[:, 1]) / sums[:, 4]


def _specific(
    table: np.ndarray, n_bootstrap: int, confidence: float = CONFIDENCE
) -> tuple[Interval | None, Interval | None, Interval | None]:
    """Recovery-specific skill (with its widened interval), and the two win rates within B."""
    table = table[table[:, 4] > 0]
    if not len(table):
        return None, None, None
    score = paired_difference(table[:, 0] - table[:, 1], table[:, 4], confidence)
    wins = _rate(table[:, 2], table[:, 4], confidence), _rate(table[:, 3], table[:, 4], confidence)
    return _widened(table, _specific_of, score, n_bootstrap, confidence), *wins


def _prompt(record: Mapping[str, Any]) -> bool:
    if not record.get("recovered"):
        return False
    added = int(record["distance_after"]) - int(record["distance_before"])
    return int(record["turns_to_recover"]) <= added + PROMPT_SLACK


def _recovery(
    agent: Records, base: Records, skipped: int, n_bootstrap: int, confidence: float = CONFIDENCE
) -> dict[str, Any]:
    pairs, base_pairs = _pairs(agent), _pairs(base)
    tasks = _tasks(agent, base)
    specific, after, control = _specific(_pair_table(pairs, tasks), n_bootstrap, confidence)
    base_specific, _, _ = _specific(_pair_table(base_pairs, tasks), n_bootstrap, confidence)
    errors = [rec for rec, _ in pairs]
    base_errors = [rec for rec, _ in base_pairs]
    turns = sorted(int(r["turns_to_recover"]) for r in errors if r.get("recovered"))
    return {
        "pairs": len(pairs),
        "skipped": skipped,  # states where no error of this kind has a matched control
        "recovery_specific": _out(specific),
        "win_rate": _out(after),
        "control_win_rate": _out(control),
        "error_cost": _round(control[0] - after[0]) if after and control else None,
        "recovery_rate": _plain(errors, "recovered"),
        "prompt_recovery_rate": _round(sum(map(_prompt, errors)) / len(errors)) if errors else None,
        "turns_to_recover_mean": _round(np.mean(turns)) if turns else None,
        "turns_to_recover_median": float(np.median(turns)) if turns else None,
        "baseline_recovery_specific": _out(base_specific),
        "baseline_win_rate": _plain(base_errors, "won"),
        "baseline_control_win_rate": _plain([c for _, c in base_pairs], "won"),
        "baseline_recovery_rate": _plain(base_errors, "recovered"),
    }


# --------------------------------------------------------------------------- summary


def _pick(
    records: Records, role: str, probe: str | None = None, kind: str | None = None,
    who: str | None = None,
) -> list[Mapping[str, Any]]:  # fmt: skip
    return [
        r for r in records
        if r["role"] == role and (probe is None or r["probe"] == probe)
        and (who is None or r["agent"] == who) and (kind is None or r["kind"] == kind)
        and (probe != "single" or r.get("applied", True))
    ]  # fmt: skip


def _group(
    records: Records,
    label: str,
    kinds: Sequence[str],
    n_bootstrap: int,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    single = _single(
        _pick(records, "agent", "single", who=label), _pick(records, "baseline", "single"),
        n_bootstrap, confidence,
    )  # fmt: skip
    recovery = {}
    for kind in [*kinds, None]:
        mine = [r for r in _pick(records, "agent", kind=kind, who=label) if r["probe"] != "single"]
        skipped = sum(r["probe"] == "recovery" and not r.get("applied", True) for r in mine)
        base = [r for r in _pick(records, "baseline", kind=kind) if r["probe"] != "single"]
        recovery[kind or ALL] = _recovery(mine, base, skipped, n_bootstrap, confidence)
    return {
        "tasks": len(_tasks(records)),
        "single_step_skill": single["skill"],
        "noop_rate": single["noop_rate"],
        "recovery_specific_skill": recovery[ALL]["recovery_specific"],
        "single_step": single,
        "recovery": recovery,
    }


def _groups(config: Mapping[str, Any]) -> list[str]:
    envs = list(config["envs"])
    return [*envs, ALL] if len(envs) > 1 else envs


def _in(records: Records, group: str) -> list[Mapping[str, Any]]:
    return [r for r in records if group == ALL or r["env_id"] == group]


_COUNT = Maybe("count")
#: What the summaries read of a probe record (`_check_probes`: and what each kind needs).
_RECORD = {
    "env_id": "str", "task_seed": "count", "role": "str", "probe": "str", "agent?": "str",
    "kind": Maybe("str"), "prefix?": "count", "repeat?": "count", "n_changing?": "count",
    **dict.fromkeys(
        ("budget?", "distance_before?", "distance_after?", "turns?", "turns_to_recover?",
         "n_admissible?", "n_optimal?"), _COUNT,
    ),
    # (read for their truth: "False" was a win, an optimal step, an applied error)
    **dict.fromkeys(("won?", "recovered?", "optimal?", "noop?", "valid?", "applied?"),
                    Maybe("bool")),
}  # fmt: skip
#: (part, whole) counts of a record: a part never exceeds its whole (n_optimal past
#: n_admissible made a chance rate of 15); those of a win's turns only in a win (a win past
#: its budget was a division by zero in `_win_share`).
_AT_MOST = (("n_optimal", "n_admissible"), ("n_changing", "n_admissible"))
#: (d1 <= budget, not d1 <= turns: a TextWorld distance is an upper bound, and a random walk
#: won TreasureHunter-Medium in 3 turns from a d1 of 4, which failed every probe run there)
_AT_MOST_IN_A_WIN = (("turns", "budget"), ("distance_after", "budget"))
#: The fields a record needs when it is (role, probe, won, recovered, scored against chance).
_NEEDS = (
    (lambda r: r["role"] == "agent", ("agent",)),
    (lambda r: r["probe"] in ("recovery", "control"), ("prefix", "kind")),
    # (an applied pair's outcome: a record without one was a bare KeyError 'won' or 'recovered')
    (lambda r: r["probe"] in ("recovery", "control") and r.get("applied", True), ("won",)),
    (lambda r: r["probe"] == "recovery" and r.get("applied", True), ("recovered",)),
    (lambda r: r.get("won"), ("budget", "distance_after", "turns")),
    (lambda r: r.get("recovered"), ("distance_before", "distance_after", "turns_to_recover")),
    (lambda r: r.get("n_admissible"), ("n_optimal",)),
)


def check_probe_records(records: Any) -> None:
    """A ValueError naming the field when a probe record of ``records`` lacks what the
    summaries read, or holds it with the wrong type."""
    _check_probes(None, records, None)


def _check_probes(config: Any, records: Any, keys: Sequence[str] | None) -> None:
    """A ValueError naming the field when ``config`` (a probe config's dict: its ``envs`` and
    ``keys``; not checked when ``keys`` is None) or a record of ``records`` lacks what the
    summaries read (a bare ``KeyError``, or a ``TypeError`` from ``int(None)``)."""
    spec = {"envs": Items("str", least=1), **{key: Items("str") for key in keys or ()}}
    problem = None if keys is None else field_problem(config, spec, "config")
    if problem is None and not isinstance(records, (list, tuple)):
        problem = f"Expect `records` to be a list of probe records, got {brief(records)}"
    for i, r in enumerate(records) if problem is None else ():
        problem = field_problem(r, _RECORD, f"records[{i}]")
        for needed, fields in _NEEDS if problem is None else ():
            missing = [k for k in fields if r.get(k) is None] if needed(r) else []
            if missing:
                problem = f"Expect records[{i}][{missing[0]!r}] to be set, but it is missing"
                break
        bounded = (*_AT_MOST, *(_AT_MOST_IN_A_WIN if r.get("won") else ()))
        for part, whole in bounded if problem is None else ():
            if r.get(part) is not None and r.get(whole) is not None and r[part] > r[whole]:
                problem = (
                    f"Expect records[{i}][{part!r}] to be at most its {whole!r} "
                    f"({r[whole]}), got {r[part]}"
                )
                break
        if problem is not None:
            break
    if problem is not None:
        raise ValueError(problem)


def summarize_probes(
    config: Mapping[str, Any],
    records: Records,
    *,
    n_bootstrap: int = 1000,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """Skills per agent and env group (each env id, and "all" when there are several), each
    interval of two-sided coverage ``confidence``.

    Raises:
        ValueError: a bad ``n_bootstrap`` or ``confidence``, or a config or record lacking
            what is read (the field named).
    """
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    confidence = check_confidence(confidence)
    _check_probes(config, records, ("labels", "kinds"))
    agents = {
        label: {
            group: _group(_in(records, group), label, config["kinds"], n_bootstrap, confidence)
            for group in _groups(config)
        }
        for label in config["labels"]
    }
    return {"config": dict(config), "n_records": len(records), "agents": agents}


#: The fields of a failed probe's record that say why it failed (no outcome).
_FAILURE_FIELDS = ("failed_to_run", "failure", "error", "attempts")


def _played_as(record: Mapping[str, Any], good: bool) -> dict[str, Any]:
    """A failed probe's record with the outcome that is best (``good``) or worst for the
    agent's skills: an optimal command or not; a win (in the fewest turns) after the error
    or a loss; and in its control the opposite, which is what the recovery-specific skill
    is measured against."""
    r = {k: v for k, v in record.items() if k not in _FAILURE_FIELDS}
    if r["probe"] != "single" and r.get("distance_after") is None:
        # (a pair with no error that fits its state: skipped, played or not, whatever its
        # outcome; its failure in the forced opening turns has no skill to bound)
        return {**r, "applied": False}
    r["applied"] = True
    if r["probe"] == "single":
        return {**r, "valid": True, "noop": False, "optimal": good}
    won = good if r["probe"] == "recovery" else not good
    if won:
        r.update(won=True, turns=r["distance_after"])
    else:
        r.update(won=False, turns=r["budget"])
    if r["probe"] == "recovery":
        r["recovered"] = good
        if good:
            r["turns_to_recover"] = max(1, r["distance_after"] - r["distance_before"])
    return r


def failure_bounds(
    config: Mapping[str, Any], records: Records, failed: Records
) -> dict[str, dict[str, dict[str, list[float | None]]]]:
    """Per probed agent with probes that failed to run, per env group: ``single_step_skill``
    and ``recovery_specific_skill`` (their means) with each failed probe counted against the
    agent, then for it (`_played_as`), as ``[against, for]``. The skills over the probes
    that ran are unbiased only when failing does not depend on the outcome: an agent that
    raises on the states it would get wrong fails to run exactly those. The baseline's
    failures are the baseline's, and stay out."""
    check_probe_records(records)  # (the failed ones are checked played, in the summaries)
    _check_failed(failed)
    out: dict[str, dict[str, dict[str, list[float | None]]]] = {}
    for label in dict.fromkeys(r["agent"] for r in failed if r["role"] == "agent"):
        theirs = [r for r in failed if r["role"] == "agent" and r["agent"] == label]
        sides = [
            summarize_probes(
                {**config, "labels": [label]},
                [*records, *(_played_as(r, good) for r in theirs)],
                n_bootstrap=0,
            )["agents"][label]
            for good in (False, True)
        ]
        out[label] = {
            group: {
                skill: [(side[group][skill] or {}).get("mean") for side in sides]
                for skill in ("single_step_skill", "recovery_specific_skill")
            }
            for group in sides[0]
        }
    return out


def compare_probes(
    config: Mapping[str, Any],
    records: Records,
    base: str,
    other: str,
    *,
    n_bootstrap: int = 1000,
    confidence: float = CONFIDENCE,
    failed: Records = (),
) -> dict[str, dict[str, dict[str, Any]]]:
    """What ``other`` gains over ``base`` (two agents probed on the same states), per env group.

    ``{group: {"single_step_skill": Δ, "recovery_specific_skill": Δ}}``, each
    ``{"mean", "low", "high"}``: the mean is the difference of the two skills as
    `summarize_probes` reports them (each over the tasks where that agent was judged);
    the bootstrap over the tasks where both were resamples both agents (and the
    baseline) together, widened to the MOVER combination of the two skills' intervals. The finding-2 contrast is ``recovery_specific_skill``:
    an agent whose gains concentrate in error recovery gains there, while two
    memoryless agents of different single-step skill differ only in
    ``single_step_skill``.

    ``failed``: the probes that failed to run (`ProbeResult.failed`). Each skill is over
    the probes that ran, which is unbiased only when failing does not follow the outcome:
    an agent that raises on the states it would get wrong scored a clear gain over itself
    answering. When either agent's probes failed, each Δ also holds ``bounds``: the gain
    with ``other``'s failed probes counted against it and ``base``'s for it
    (``"against_other"``), then the reverse (``"for_other"``) (`_played_as`), each with its
    interval; and its ``low`` and ``high`` are widened to the first's low and the second's
    high, so a gain whose interval excludes 0 holds whatever the failed probes would have
    been (``bounded_by_failures``).

    Raises:
        ValueError: ``base`` or ``other`` is no probed agent's label (the random baseline
            is not one unless it was probed as an agent), a bad ``n_bootstrap`` or
            ``confidence`` (the two-sided coverage of every interval), or ``failed`` that is
            no list of failed probes' records.
    """
    n_bootstrap = check_n_bootstrap(n_bootstrap)
    confidence = check_confidence(confidence)
    _check_probes(config, records, ("labels",))
    labels = list(config["labels"])
    for name, label in (("base", base), ("other", other)):
        if label not in labels:
            raise ValueError(
                f"Expect `{name}` to be the label of a probed agent, one of {labels}, got "
                f"{label!r:.200} (the random baseline is one only when probed as an agent)"
            )
    _check_failed(failed)
    theirs = [r for r in failed if r["role"] == "agent" and r["agent"] in (base, other)]
    out = _compare(config, records, base, other, n_bootstrap, confidence)
    if not theirs:
        return out
    sides = {}
    for side, favoured in (("against_other", base), ("for_other", other)):
        played = [_played_as(r, good=(r["agent"] == favoured)) for r in theirs]
        sides[side] = _compare(config, [*records, *played], base, other, n_bootstrap, confidence)
    for group, skills in out.items():
        for skill, gain in skills.items():
            low, high = sides["against_other"][group][skill], sides["for_other"][group][skill]
            gain["bounds"] = {"against_other": low, "for_other": high}
            gain["bounded_by_failures"] = True
            if gain["mean"] is not None:
                gain["low"] = min(gain["low"], low["low"] if low["low"] is not None else -1.0)
                gain["high"] = max(gain["high"], high["high"] if high["high"] is not None else 1.0)
    return out


def _check_failed(failed: Any) -> None:
    """A ValueError unless ``failed`` is a list of failed probes' records."""
    if not isinstance(failed, (list, tuple)) or not all(
        isinstance(r, Mapping)
        and isinstance(r.get("probe"), str)
        and isinstance(r.get("role"), str)
        and (r["role"] != "agent" or isinstance(r.get("agent"), str))
        for r in failed
    ):
        raise ValueError(
            f"Expect `failed` to be a list of failed probes' records, got {brief(failed)}"
        )


def _compare(
    config: Mapping[str, Any],
    records: Records,
    base: str,
    other: str,
    n_bootstrap: int,
    confidence: float,
) -> dict[str, dict[str, dict[str, Any]]]:
    """`compare_probes` over ``records`` (checked)."""
    out = {}
    for group in _groups(config):
        rs = _in(records, group)
        tasks = _tasks(rs)
        a_single, b_single = (_pick(rs, "agent", "single", who=w) for w in (base, other))
        random = _pick(rs, "baseline", "single")
        table_a, table_b = (_single_table(x, random, tasks) for x in (a_single, b_single))
        skills = [_single_skill(t, n_bootstrap, confidence, True) for t in (table_b, table_a)]
        single = None
        if all(skills):
            both = np.hstack([table_b, table_a])
            difference = difference_interval(*skills)  # type: ignore[arg-type]
            single = _widened(
                both[(both[:, 1] > 0) & (both[:, 3] > 0) & (both[:, 5] > 0)],
                lambda s: _skill_of(s[:, :4]) - _skill_of(s[:, 4:]),
                difference,
                n_bootstrap,
                confidence,
                point=difference[0],  # (the two skills as reported, each over its own tasks)
            )
        pairs = [_pairs(_pick(rs, "agent", who=w)) for w in (other, base)]
        tables = [_pair_table(p, tasks) for p in pairs]
        specific = [_specific(t, n_bootstrap, confidence)[0] for t in tables]
        gain = None
        if all(specific):
            both = np.hstack(tables)
            difference = difference_interval(*specific)  # type: ignore[arg-type]
            gain = _widened(
                both[(both[:, 4] > 0) & (both[:, 9] > 0)],
                lambda s: _specific_of(s[:, :5]) - _specific_of(s[:, 5:]),
                difference,
                n_bootstrap,
                confidence,
                point=difference[0],
            )
        out[group] = {"single_step_skill": _out(single), "recovery_specific_skill": _out(gain)}
    return out


def per_task(records: Records, label: str, role: str = "agent") -> dict[tuple[str, int], Any]:
    """One agent's probe outcomes per task ``(env id, task seed)``: ``optimal`` and ``judged``
    single-step answers (no-ops apart), ``noops``, and over its matched (error, control)
    pairs ``specific`` (the sum of win share after the error minus win share in the control)
    and ``pairs``: the counts every skill of this module is a ratio of, for analyses that
    resample at other levels (training seeds and tasks).
    """
    check_probe_records(records)
    mine = [r for r in records if r["role"] == role and (role != "agent" or r["agent"] == label)]
    out: dict[tuple[str, int], Any] = defaultdict(
        lambda: {"optimal": 0, "judged": 0, "noops": 0, "specific": 0.0, "pairs": 0}
    )
    for r in mine:
        if r["probe"] == "single":
            row = out[(r["env_id"], int(r["task_seed"]))]
            row["judged"] += _judged(r)
            row["optimal"] += _judged(r) and bool(r["optimal"])
            row["noops"] += bool(r.get("noop"))
    for after, control in _pairs(mine):
        row = out[(after["env_id"], int(after["task_seed"]))]
        row["specific"] += _win_share(after) - _win_share(control)
        row["pairs"] += 1
    return dict(out)


def estimate_problem(value: Any, where: str) -> str | None:
    """What is wrong with an estimate of a summary (None: nothing): a mapping of ``mean``,
    ``low`` and ``high``, finite numbers, or all None (no estimate)."""
    problem = field_problem(value, {k: Maybe("number") for k in ("mean", "low", "high")}, where)
    if problem is None and value["mean"] is not None:
        for key in ("low", "high"):
            if value[key] is None:
                return f"Expect {where}[{key!r}] to be a finite number (its mean is one), got None"
        if not value["low"] <= value["mean"] <= value["high"]:
            return (
                f"Expect {where} to hold low <= mean <= high, got {value['low']}, "
                f"{value['mean']}, {value['high']}"
            )
    return problem


def _rate_estimate_problem(value: Any, where: str) -> str | None:
    """`estimate_problem`, of a rate: each bound in [0, 1] (a tampered summary's -0.5 or 7.5
    reached the report's tables)."""
    problem = estimate_problem(value, where)
    if problem is None and value["mean"] is not None:
        for key in ("mean", "low", "high"):
            problem = _rate_problem(value[key], f"{where}[{key!r}]")
            if problem:
                break
    return problem


def _rate_problem(value: Any, where: str) -> str | None:
    if value is None or (is_finite(value) and 0 <= value <= 1):
        return None
    return f"Expect {where} to be a rate from 0 to 1 or None, got {brief(value)}"


_RATE = _rate_problem
#: What the report reads of an agent's skills in one env group of a probe summary.
_PROBE_GROUP = {
    "single_step_skill": estimate_problem,
    "noop_rate": _rate_estimate_problem,
    "recovery_specific_skill": estimate_problem,
    "single_step": {
        "skill": estimate_problem,
        "noop_rate": _rate_estimate_problem,
        **{key: _RATE for key in ("rate", "baseline_rate", "chance_rate")},
    },
    "recovery": {
        ALL: {
            "recovery_specific": estimate_problem,
            **{key: _rate_estimate_problem for key in ("win_rate", "control_win_rate")},
            **{
                key: _RATE
                for key in ("recovery_rate", "baseline_recovery_rate", "prompt_recovery_rate")
            },
            "turns_to_recover_mean": Maybe("number"),
            "pairs": "count",
            "skipped": "count",
        }
    },
}
#: What the report reads of a probe summary (`check_probe_summary`).
_PROBE_SUMMARY = {
    "config": {
        "labels": Items("str"),
        "agents": Items("str"),
        "tasks": Items("any"),
        "prefixes": Items("number"),
        "kinds": Items("str"),
        "budget_factor": "number",
        "budget_slack": "number",
    },
    "agents": Each(Each(_PROBE_GROUP, least=1)),
}


def check_probe_summary(summary: Any, where: str = "summary") -> None:
    """A ValueError naming the field (its path from ``where``) when ``summary`` is no probe
    summary the report can read (`summarize_probes`'s shape): each label of
    ``config['labels']`` with its agent in ``config['agents']`` and its skills by env group
    in ``agents``, each estimate finite numbers or None (a malformed one was a bare
    ``KeyError: 'config'``, a ``TypeError`` or an ``OverflowError`` from its tables)."""
    problem = field_problem(summary, _PROBE_SUMMARY, where)
    if problem is None:
        labels, agents = summary["config"]["labels"], summary["agents"]
        if len(summary["config"]["agents"]) != len(labels):
            problem = (
                f"Expect {where}['config']['agents'] to hold one agent per label of "
                f"{where}['config']['labels'] ({len(labels)}), "
                f"got {len(summary['config']['agents'])}"
            )
        for key in agents if problem is None else ():
            if key not in labels:
                problem = (
                    f"Expect {where}['agents'] to be keyed by labels of "
                    f"{where}['config']['labels'], got {brief(key)}"
                )
                break
        for label in labels if problem is None else ():
            if label not in agents:
                problem = (
                    f"Expect {where}['agents'][{brief(label)}] to hold the skills of each env "
                    "group, but it is missing"
                )
                break
    if problem is not None:
        raise ValueError(problem)


def write_probe_summary(out: str | Path, summary: Mapping[str, Any]) -> Path:
    path = Path(out) / PROBE_SUMMARY_FILE
    write_json(path, summary, indent=1, sort_keys=True)
    return path
