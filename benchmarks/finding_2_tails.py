"""How often the main job's finding 2 errs on each side: its verdicts' tails, simulated.

Finding 2 (`pass_at_kt_report.finding_2`) calls "replicates" when its interval of the
contrast Δ recovery-specific − Δ single-step skill (RL's arms pooled, minus each seed's
base) lies above 0 and "does not replicate" when it lies below; at 95% each should happen
at most 2.5% of the time where the true contrast is 0. This script simulates the main
job's probe design (5 training seeds, 24 probe tasks shared by every policy, 4 single-step
states a task, 4 or 6 matched recovery pairs a task as Maze-Easy's tasks 0..23 give them;
the random baseline's 16 single steps a task, about 71% judged) and feeds each job's
per-task tables to the real `finding_2`.

The model, on the logit scale, every effect shared by all policies unless said otherwise:
a task's effect τ ~ N(0, 0.5); a single-step state's u ~ N(0, 5) and a recovery pair's
w ~ N(0, 3) (the seeds of a policy mostly agree on a state: the job's seeds differ by
0.03-0.04 in single-step skill); an error's z ~ N(0, 1); RL's own effects, added to the
three arms' logits only (RL gains more on some states than on others): v ~ N(0, 0.7) a
single-step state, y ~ N(0, 1) a pair, x ~ N(0, 3) a task's errors after an error; a
policy's own θ ~ N(0, ``--policy-sd``) (each arm and seed its own). A single step is
judged with the arm's rate (the base 0.90, an arm 1.0) and optimal with probability
logistic(μ + τ + u + v + θ); the random baseline is right at a state with a Beta(mean
0.48, κ 6) chance, judged 71% of the time. In a pair, the control wins with
logistic(ρ + τ + w + y + θ) and the run after the error with that logit + ε + z + x; a
win's share of budgets is Beta(mean m, κ 4). With the ``observed`` scenario's values the
job's own figures come back: base optimal 0.66, arms 0.77, chance 0.48; wins after the
error / in the control 0.21 / 0.26 for the base, 0.38 / 0.63 for the arms; true gains
+0.21 single-step, -0.24 recovery-specific; mean interval half-widths 0.12, 0.10 and 0.15
for Δ single, Δ recovery and the contrast (the job's: 0.11, 0.10, 0.16).
Scenarios: ``exchangeable`` (every arm is a base: both gains are 0), ``alike`` (the arms
gain about +0.20 in both skills: the contrast is about 0), ``power`` (+0.20 single-step,
+0.35 recovery-specific: the finding holds by +0.15), ``observed`` (the committed
job's gains: contrast about -0.44). The truths are computed (Monte Carlo over 400,000
states and policies). Each rate comes with its normal 95% interval over the draws;
``covers`` is how often the interval holds the true contrast.

Run:
    python benchmarks/finding_2_tails.py --scenarios exchangeable,alike       # 1000 draws a row: ~7 min
    python benchmarks/finding_2_tails.py --scenarios power,observed --draws 200
    python benchmarks/finding_2_tails.py --draws 3 --truth-size 20000         # smoke
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from finding_1_tails import _rate  # benchmarks/: the script's folder
from pass_at_kt_report import _task_skills, finding_2

from turnbudget.cli.flags import parse_config

ARMS = ("base", "fixed-tight", "fixed-generous", "budgetmix")
#: Recovery pairs per probe task, Maze-Easy's task seeds 0..23 (slips and setbacks that apply).
PAIRS = (6, 6, 6, 6, 6, 4, 6, 6, 6, 4, 4, 6, 6, 4, 6, 6, 4, 4, 4, 4, 4, 4, 4, 6)
STATES = 4  # single-step states a task (prefixes 0, 0.25, 0.5, 0.75)
BASELINE_REPEATS = 4
#: The effects' spreads in logits (see the model above).
SD = {"task": 0.5, "state": 5.0, "pair": 3.0, "error": 1.0, "rl": 0.7, "rl_pair": 1.0,
      "rl_error": 3.0}  # fmt: skip
CHANCE, CHANCE_KAPPA, SHARE_KAPPA = 0.48, 6.0, 4.0
BASELINE_JUDGED = 0.714


@dataclasses.dataclass(frozen=True)
class Arm:
    """One kind of policy: μ (single steps), judged rate, ρ, ε (recovery), win shares."""

    mu: float
    judged: float
    rho: float
    eps: float
    share_control: float
    share_after: float
    rl: bool


BASE = Arm(2.21, 0.90, -2.30, -0.61, 0.63, 0.63, False)
#: scenario -> the RL arms' parameters (the base is `BASE` in every one)
SCENARIOS = {
    "exchangeable": dataclasses.replace(BASE),
    "alike": Arm(3.98, 1.0, -2.30, 1.53, 0.63, 0.80, True),
    "power": Arm(3.98, 1.0, -2.30, 3.82, 0.63, 0.80, True),
    "observed": Arm(3.98, 1.0, 1.21, -2.70, 0.87, 0.74, True),
}


@dataclasses.dataclass
class Config:
    draws: int = 1000
    """simulated jobs per scenario"""
    seeds: int = 5
    """training seeds (the main job's 5)"""
    policy_sd: tuple[float, ...] = (0.15, 0.5)
    """the policies' own spread in logits (one run per value)"""
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    """which scenarios to run"""
    truth_size: int = 400_000
    """Monte Carlo draws of states and policies behind each true gain"""
    seed: int = 0
    """seed of the simulation"""


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _beta(rng: np.random.Generator, mean: float, kappa: float, size: Any) -> np.ndarray:
    return rng.beta(mean * kappa, (1.0 - mean) * kappa, size)


def _job(rng: np.random.Generator, seeds: int, sd: float, rl: Arm):
    """One simulated job: ``{arm: {seed: task table}}`` and the baseline's table, each
    [task, (optimal, judged, specific, pairs)] as `task_table` gives them."""
    tasks, pairs = len(PAIRS), np.array(PAIRS)
    tau = SD["task"] * rng.standard_normal((tasks, 1))
    u = tau + SD["state"] * rng.standard_normal((tasks, STATES))
    v = SD["rl"] * rng.standard_normal((tasks, STATES))
    real = np.arange(max(PAIRS))[None] < pairs[:, None]  # [task, pair]: pairs that exist
    w = tau + SD["pair"] * rng.standard_normal(real.shape)
    z = SD["error"] * rng.standard_normal(real.shape)
    y = SD["rl_pair"] * rng.standard_normal(real.shape)
    x = SD["rl_error"] * rng.standard_normal((tasks, 1))  # (an error RL handles badly: task-wide)
    chance = _beta(rng, CHANCE, CHANCE_KAPPA, (tasks, STATES, 1))
    judged = rng.random((tasks, STATES, BASELINE_REPEATS)) < BASELINE_JUDGED
    hits = judged & (rng.random(judged.shape) < chance)
    baseline = np.column_stack([hits.sum(axis=(1, 2)), judged.sum(axis=(1, 2)),
                                np.zeros(tasks), pairs]).astype(float)  # fmt: skip
    tables: dict[str, dict[int, np.ndarray]] = {a: {} for a in ARMS}
    for arm in ARMS:
        p = BASE if arm == "base" else rl
        for s in range(seeds):
            single = p.mu + u + (v if p.rl else 0.0) + sd * rng.standard_normal()
            judged = rng.random(single.shape) < p.judged
            optimal = judged & (rng.random(single.shape) < _logistic(single))
            control = p.rho + w + (y if p.rl else 0.0) + sd * rng.standard_normal()
            won_c = rng.random(real.shape) < _logistic(control)
            won_a = rng.random(real.shape) < _logistic(control + p.eps + z + (x if p.rl else 0.0))
            share = (won_a * _beta(rng, p.share_after, SHARE_KAPPA, real.shape)
                     - won_c * _beta(rng, p.share_control, SHARE_KAPPA, real.shape))  # fmt: skip
            tables[arm][s] = np.column_stack(
                [optimal.sum(axis=1), judged.sum(axis=1), (share * real).sum(axis=1), pairs]
            ).astype(float)
    return tables, baseline


def _skills(tables, baseline) -> dict[str, dict[int, dict[str, float]]]:
    """Each policy's two skills as the probe summary computes them from its task table."""
    index = np.arange(len(baseline))[None]
    out: dict[str, dict[int, dict[str, float]]] = {}
    for arm, by in tables.items():
        out[arm] = {}
        for s, table in by.items():
            single, specific = _task_skills(table, baseline, index)[0]
            out[arm][s] = {"single_step_skill": single, "recovery_specific_skill": specific}
    return out


def _truth(rl: Arm, sd: float, size: int = 400_000) -> tuple[float, float]:
    """RL's true gains (Δ single-step, Δ recovery-specific) over the population of states
    and policies (Monte Carlo): the value a job's skills estimate at infinitely many tasks."""
    rng = np.random.default_rng(0)
    n = rng.standard_normal
    tau = SD["task"] * n(size)
    u, v = tau + SD["state"] * n(size), SD["rl"] * n(size)
    w, z, y = tau + SD["pair"] * n(size), SD["error"] * n(size), SD["rl_pair"] * n(size)
    x = SD["rl_error"] * n(size)
    theta = sd * n(size)

    def skills(p: Arm) -> tuple[float, float]:
        optimal = np.mean(_logistic(p.mu + u + (v if p.rl else 0.0) + theta))
        control = p.rho + w + (y if p.rl else 0.0) + theta
        specific = np.mean(_logistic(control + p.eps + z + (x if p.rl else 0.0)) * p.share_after
                           - _logistic(control) * p.share_control)  # fmt: skip
        return (optimal - CHANCE) / (1.0 - CHANCE), float(specific)

    (s_rl, r_rl), (s_base, r_base) = skills(rl), skills(BASE)
    return s_rl - s_base, r_rl - r_base


def simulate(config: Config, scenario: str, sd: float) -> dict[str, Any]:
    """Rates of each verdict of the real `finding_2` over ``config.draws`` simulated jobs."""
    rl = SCENARIOS[scenario]
    d_single, d_recovery = _truth(rl, sd, config.truth_size)
    truth = d_recovery - d_single
    rng = np.random.default_rng([config.seed, list(SCENARIOS).index(scenario), round(sd * 100)])
    counts = np.zeros(3)  # replicates, does not replicate, the interval holds the truth
    means = []
    for _ in range(config.draws):
        tables, baseline = _job(rng, config.seeds, sd, rl)
        found = finding_2(_skills(tables, baseline), tables, baseline)
        contrast = found["arms"]["RL (arms pooled)"]["contrast"]
        counts += (found["verdict"].startswith("replicates"),
                   found["verdict"].startswith("does not"),
                   contrast["low"] <= truth <= contrast["high"])  # fmt: skip
        a = found["arms"]["RL (arms pooled)"]
        means.append((a["d_single"]["mean"], a["d_recovery"]["mean"]))
    return {"scenario": scenario, "policy_sd": sd, "d_single": d_single,
            "d_recovery": d_recovery, "truth": truth, "draws": config.draws,
            "mean_estimates": np.mean(means, axis=0).tolist(),
            "counts": counts.tolist()}  # fmt: skip


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| scenario | policy sd | true Δ single | true Δ recovery | true contrast | draws | "
        "replicates | does not replicate | covers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        up, down, covers = r["counts"]
        lines.append(
            f"| {r['scenario']} | {r['policy_sd']:g} | {r['d_single']:+.3f} | "
            f"{r['d_recovery']:+.3f} | {r['truth']:+.3f} | {r['draws']} | "
            f"{_rate(up, r['draws'])} | {_rate(down, r['draws'])} | {_rate(covers, r['draws'])} |"
        )
    return "\n".join(lines)


def main(config: Config) -> list[dict[str, Any]]:
    unknown = sorted(set(config.scenarios) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"error: --scenarios {unknown}: expect some of {list(SCENARIOS)}")
    rows = [simulate(config, s, sd) for s in config.scenarios for sd in config.policy_sd]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main(parse_config(Config, sys.argv[1:], __doc__.split("\n\n")[0]))
