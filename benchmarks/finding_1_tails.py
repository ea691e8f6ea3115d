"""How often the main job's finding 1 errs on each side: its verdicts' tails, simulated.

Finding 1 (`pass_at_kt_report.finding_1`) calls "replicates" when its interval of the
contrast ΔPass@1(generous) − ΔPass@1(tight) lies above 0 and "does not replicate" when
it lies below; at 95% each should happen at most 2.5% of the time where the true contrast
is 0. This script simulates the main job's design (5 training seeds, 32 tasks drawn
with Maze-Easy's optimal lengths, n = 8, the real budget grids, the tight budgets T = 9
and c = 1.5) and feeds each draw to the real `finding_1`, beside one-sample intervals
over the seeds' contrasts (each seed's mean over the tasks; tasks fixed) and two exact
tests over the seeds that could replace its t-interval:

- ``seeds t``: Student's t over the 5 seeds' contrasts, the uncorrected base of the next two;
- ``johnson t``: Johnson's (1978) modified t, corrected for the sample's skewness γ̂;
- ``hall t``: Hall's (1992) cubic transform of t (monotone, so it always inverts);
- ``sign flip``: the seeds' contrasts' signs flipped (2^5 = 32 patterns); exact where each
  seed's contrast is symmetric about 0, but no pattern count reaches 2.5% a side at 5 seeds
  (the smallest one-sided p is 1/32), so it never calls a verdict;
- ``label perm``: which of each seed's 4 policies is the base, permuted (4^5 = 1024);
  exact where the 4 are exchangeable, as in the first null below, not otherwise.

The model: an episode succeeds by turn T iff U <= θ + τ + α + β log(T / d*), U logistic,
τ ~ N(0, 1) a task's effect, θ ~ N(0, ``--policy-sd``) a policy's (each arm and seed its
own); α = -3, β = 2 give the committed base's Pass@1 at T = 6..60 within 0.03. Scenarios:
``exchangeable`` (every arm is a base: the contrast is 0), ``arms-better`` (arms +1.5
logits, β 1.65, so their true gain is about the same at c = 1.5 and c = 4, +0.19; rel
budgets only), ``power-rel`` (+1.2 logits, β kept: true rel contrast +0.07),
``power-abs`` (the same arms: true abs contrast -0.05); the truths are computed (Monte
Carlo over 400,000 task-policy draws). Each rate comes with its normal
95% interval over the draws where the finding was testable.

Run:
    python benchmarks/finding_1_tails.py                   # 1000 draws a row: ~4 min at load 7
    python benchmarks/finding_1_tails.py --draws 20        # smoke
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from pass_at_kt_report import finding_1  # benchmarks/: the script's folder

from turnbudget.cli.flags import parse_config
from turnbudget.eval.estimator import _t_quantile

ARMS = ("base", "fixed-tight", "fixed-generous", "budgetmix")
TS = (6, 9, 12, 16, 24, 40, 60)
RATIOS = (1.0, 1.5, 2.0, 3.0, 4.0)
#: Maze-Easy's optimal lengths d* on task seeds 0..31 (the job's tasks; a draw picks 32).
OPTIMAL = (6, 7, 7, 7, 7, 5, 8, 7, 7, 5, 5, 6, 6, 5, 6, 7, 5, 5, 5, 5, 5, 5, 5, 8, 6, 6, 5, 5,
           5, 5, 8, 6)  # fmt: skip
ALPHA, BETA = -3.0, 2.0
#: scenario -> (scales, arms' logit shift, arms' β)
SCENARIOS = {
    "exchangeable": (("abs", "rel"), 0.0, BETA),
    "arms-better": (("rel",), 1.5, 1.65),
    "power-rel": (("rel",), 1.2, BETA),
    "power-abs": (("abs",), 1.2, BETA),
}


@dataclasses.dataclass
class Config:
    draws: int = 1000
    """simulated jobs per scenario and scale"""
    seeds: int = 5
    """training seeds (the main job's 5)"""
    tasks: int = 32
    """tasks per job"""
    n: int = 8
    """episodes per task"""
    policy_sd: tuple[float, ...] = (0.5, 1.0)
    """the policies' spread in logits (one run per value)"""
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    """which scenarios to run"""
    seed: int = 0
    """seed of the simulation"""


def _grids(rng: np.random.Generator, config: Config, sd: float, shift: float, beta: float):
    """One simulated job's per-task Pass@1 ``{arm: {seed: {"abs": [1, t, task], "rel": ...}}}``
    (Pass@1 is the success fraction by T, as `per_task_grids` computes it at K = 1)."""
    d = rng.choice(OPTIMAL, config.tasks).astype(float)[:, None]
    tau = rng.standard_normal((config.tasks, 1))
    grids: dict[str, dict[int, dict[str, np.ndarray]]] = {a: {} for a in ARMS}
    for s, arm in itertools.product(range(config.seeds), ARMS):
        theta = sd * rng.standard_normal() + (0.0 if arm == "base" else shift)
        b = BETA if arm == "base" else beta
        u = rng.logistic(size=(config.tasks, config.n))
        turn = np.maximum(d, np.ceil(d * np.exp((u - theta - tau - ALPHA) / b)))
        turn[turn > max(TS)] = np.inf
        grids[arm][s] = {
            "abs": np.stack([(turn <= t).mean(axis=1) for t in TS])[None],
            "rel": np.stack([(turn <= np.floor(c * d)).mean(axis=1) for c in RATIOS])[None],
        }
    return grids


def _truth(scale: str, sd: float, shift: float, beta: float, size: int = 400_000) -> float:
    """The true contrast over the population of tasks and policies (Monte Carlo)."""
    rng = np.random.default_rng(0)
    d = rng.choice(OPTIMAL, size).astype(float)
    z, u = rng.standard_normal(size) * math.hypot(1.0, sd), rng.logistic(size=size)
    tight, generous = (9, 60) if scale == "abs" else (1.5, 4.0)

    def passed(s: float, b: float, t: float) -> float:
        turn = np.maximum(d, np.ceil(d * np.exp((u - z - s - ALPHA) / b)))
        return float(np.mean(turn <= (t if scale == "abs" else np.floor(t * d))))

    gain = [passed(shift, beta, t) - passed(0.0, BETA, t) for t in (tight, generous)]
    return gain[1] - gain[0]


def _contrasts(grids, scale: str, tight: int, generous: int) -> np.ndarray:
    """Each policy's Pass@1(generous) - Pass@1(tight), [seed, `ARMS`]."""
    return np.array([[grids[a][s][scale][0, generous].mean() - grids[a][s][scale][0, tight].mean()
                      for a in ARMS] for s in sorted(grids["base"])])  # fmt: skip


def _per_seed(grids, scale: str, tight: int, generous: int) -> np.ndarray:
    """Each seed's contrast, the arms' mean minus the base (finding 1's, averaged over tasks)."""
    y = _contrasts(grids, scale, tight, generous)
    return y[:, 1:].mean(axis=1) - y[:, 0]


def _exact_tests(grids, scale: str, tight: int, generous: int) -> dict[str, int]:
    """The sign flip's and the label permutation's verdicts (+1, -1, 0) at 2.5% a side."""
    seeds = sorted(grids["base"])
    y = _contrasts(grids, scale, tight, generous)
    per_seed = (y.sum(axis=1, keepdims=True) - y) / (len(ARMS) - 1) - y  # base = column c
    observed = per_seed[:, 0]
    verdicts = {}
    for name, null in (
        ("sign flip", np.array(list(itertools.product((1, -1), repeat=len(seeds)))) * observed),
        ("label perm", per_seed[np.arange(len(seeds)),
                                np.array(list(itertools.product(range(len(ARMS)),
                                                                repeat=len(seeds))))]),
    ):  # fmt: skip
        stat, null = observed.mean(), null.mean(axis=1)
        up, down = np.mean(null >= stat - 1e-12), np.mean(null <= stat + 1e-12)
        verdicts[name] = 1 if up <= 0.025 else -1 if down <= 0.025 else 0
    return verdicts


def _skew_corrected(y: np.ndarray, method: str, confidence: float = 0.95) -> tuple[float, float]:
    """An interval for the mean of ``y`` (one sample: the seeds' contrasts, tasks fixed) from
    T = √n (ȳ − μ) / s: Student's (``"seeds"``), Johnson's (1978) modified t (``"johnson"``,
    ``T + γ̂ (1 + 2 T²) / (6 √n)``) or Hall's (1992) cubic transform of t (``"hall"``,
    ``T + γ̂ / (6 √n) + γ̂ T² / (3 √n) + γ̂² T³ / (27 n)``), set to ±t(n − 1) and inverted
    (γ̂ = μ̂₃ / s³, μ̂₃ = Σ(y − ȳ)³ / n, s with n − 1). Johnson's is a quadratic: its
    monotone branch, or no bound on a side where it never reaches the quantile."""
    n, mean, s = y.size, float(y.mean()), float(y.std(ddof=1))
    if s == 0:
        return mean, mean
    gamma = 0.0 if method == "seeds" else float(np.mean((y - mean) ** 3)) / s**3
    q = _t_quantile(0.5 + confidence / 2, n - 1)
    a = gamma / (6 * math.sqrt(n))
    bounds_t = []  # T = √n (ȳ − μ) / s at g(T) = -q and +q
    for target in (-q, q):
        if method == "johnson":
            if abs(a) < 1e-12:
                bounds_t.append(target)
                continue
            disc = 1 - 8 * a * (a - target)
            bounds_t.append((-1 + math.sqrt(disc)) / (4 * a) if disc >= 0 else
                            math.copysign(math.inf, target))  # fmt: skip
        else:  # hall: g(T) = ((1 + 2 a T)³ − 1) / (6 a) + a, monotone
            b = 2 * a
            bounds_t.append(target - a if abs(b) < 1e-12 else
                            (np.cbrt(1 + 3 * b * (target - a)) - 1) / b)  # fmt: skip
    half = s / math.sqrt(n)
    return mean - bounds_t[1] * half, mean - bounds_t[0] * half


def simulate(config: Config, scenario: str, scale: str, sd: float) -> dict[str, Any]:
    """Rates of each verdict per rule over ``config.draws`` simulated jobs."""
    _, shift, beta = SCENARIOS[scenario]
    truth = _truth(scale, sd, shift, beta)
    rng = np.random.default_rng([config.seed, list(SCENARIOS).index(scenario),
                                 ("abs", "rel").index(scale), round(sd * 100)])  # fmt: skip
    budgets, tight = (TS, 9) if scale == "abs" else (RATIOS, 1.5)
    rules = ("finding_1", "seeds t", "johnson t", "hall t", "sign flip", "label perm")
    counts = {r: np.zeros(2) for r in rules}
    testable = 0
    for _ in range(config.draws):
        grids = _grids(rng, config, sd, shift, beta)
        found = finding_1(grids, scale, budgets, tight)
        if not found["arms"]:  # (untestable: the base at a floor or a ceiling)
            continue
        testable += 1
        verdict = found["verdict"]
        verdicts = {"finding_1": 1 if verdict.startswith("replicates") else
                    -1 if verdict.startswith("does not") else 0}  # fmt: skip
        y = _per_seed(grids, scale, budgets.index(tight), len(budgets) - 1)
        for method in ("seeds", "johnson", "hall"):
            low, high = _skew_corrected(y, method)
            verdicts[f"{method} t"] = 1 if low > 0 else -1 if high < 0 else 0
        verdicts.update(_exact_tests(grids, scale, budgets.index(tight), len(budgets) - 1))
        for rule, v in verdicts.items():
            counts[rule] += (v == 1, v == -1)
    return {"scenario": scenario, "scale": scale, "policy_sd": sd, "truth": truth,
            "testable": testable, "counts": {r: c.tolist() for r, c in counts.items()}}  # fmt: skip


def _rate(k: float, n: int) -> str:
    if n == 0:
        return "–"
    p = k / n
    return f"{100 * p:.1f}% ± {100 * 1.959964 * math.sqrt(p * (1 - p) / n):.1f}"


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| scenario | scale | policy sd | true contrast | testable | rule | replicates | "
        "does not replicate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for rule, (up, down) in r["counts"].items():
            lines.append(
                f"| {r['scenario']} | {r['scale']} | {r['policy_sd']:g} | {r['truth']:+.3f} | "
                f"{r['testable']} | {rule} | {_rate(up, r['testable'])} | "
                f"{_rate(down, r['testable'])} |"
            )
    return "\n".join(lines)


def main(config: Config) -> list[dict[str, Any]]:
    unknown = sorted(set(config.scenarios) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"error: --scenarios {unknown}: expect some of {list(SCENARIOS)}")
    rows = [
        simulate(config, scenario, scale, sd)
        for scenario in config.scenarios
        for scale in SCENARIOS[scenario][0]
        for sd in config.policy_sd
    ]
    print(table(rows))
    return rows


if __name__ == "__main__":
    main(parse_config(Config, sys.argv[1:], __doc__.split("\n\n")[0]))
