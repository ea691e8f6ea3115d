"""The BudgetMix replication's report: a verdict with an interval per finding, from the run logs.

Written by ``benchmarks/budgetmix.py`` (``--report-only`` rebuilds it from a
finished run) to the protocol in ``benchmarks/results/budgetmix/protocol.md``.
The numbers are the library's: per-task Pass@(K,T) from the episode records
(`turnbudget.eval.analysis.task_grid_arrays`) at budgets relative to each
task's optimal length (T = ceil(c · d*)), and every interval is
`turnbudget.eval.estimator.crossed_mean`: a t-interval at the level of
training seeds with the tasks crossed (``tasks="random"``: the game's
population of worlds, not these 24), paired by seed (an arm minus its own
seed's base on the same tasks). Finding 3's worst-case regret gets a
simultaneous (Bonferroni) interval. Records are read, and checked, by
`turnbudget.records`.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget.eval import clustered_rate, load_run
from turnbudget.eval.analysis import task_grid_arrays
from turnbudget.eval.estimator import _t_quantile, crossed_mean
from turnbudget.records import read_jsonl

__all__ = [
    "ARMS",
    "ARM_BASE",
    "bases",
    "budgets_for",
    "family",
    "interval",
    "load_probes",
    "load_runs",
    "probe_deltas",
    "task_table",
    "verdict",
    "worst_case_regret",
    "write_report",
]

ARMS = (
    "fixed-generous",
    "fixed-tight",
    "budgetmix",
    "budgetmix+pr",
    "progressive",
    "budgetmix-hidden",
)
#: The base an arm starts from (``base`` unless listed): the hidden arm's base never saw a
#: budget either (the same demonstrations and fit, without the budget features).
ARM_BASE = {"budgetmix-hidden": "base-hidden"}


def bases(arms: Sequence[str]) -> tuple[str, ...]:
    """The BC bases that ``arms`` start from."""
    return ("base", "base-hidden") if "budgetmix-hidden" in arms else ("base",)


GROUPS = ("random", "base", *ARMS)
CONDITIONS = ("clean", "errors")
COLORS = {
    "random": "0.6",
    "base": "k",
    "fixed-generous": "C0",
    "fixed-tight": "C3",
    "budgetmix": "C2",
    "budgetmix+pr": "C4",
    "progressive": "C1",
    "budgetmix-hidden": "C9",
    "base-hidden": "0.3",
}

CI = tuple[float, float, float]  # (mean, low, high)
Tables = dict[tuple[str, str, str], np.ndarray]  # (family, condition, group) -> [seed, task, T, K]


def budgets_for(cs: Sequence[float], d: int) -> list[int]:
    """The evaluation budgets of a task with optimal length ``d``: ceil(c · d) for each c,
    distinct, ascending (at least 1).

    Example:
        >>> budgets_for([1.5, 2.0, 6.0], 5)
        [8, 10, 30]
    """
    return sorted({max(1, math.ceil(c * d - 1e-9)) for c in cs})


def family(env_id: str) -> str:
    """``turnbudget/Maze-Easy-v0`` -> ``Maze-Easy``."""
    return env_id.split("/")[-1].rsplit("-v", 1)[0]


# --------------------------------------------------------------------------- Pass@(K,T)


def task_table(
    run_dir: Path, tasks: Sequence[int], ts: Sequence[int], ks: Sequence[int]
) -> np.ndarray:
    """Pass@(K,T) per task of one evaluation run, an array [task, T, K]: in rerun mode each
    T from its own runs, in truncate mode (one run at max T) a success counts at T when it
    came within T turns. Episodes that failed to run are left out."""
    run, episodes = load_run(run_dir)
    if list(run.tasks) != list(tasks):
        raise ValueError(f"{run_dir} evaluated the tasks {list(run.tasks)}, expect {list(tasks)}")
    episodes = [e for e in episodes if not e.get("failed_to_run")]
    mode = "truncate" if run.mode == "truncate" else "rerun"
    try:
        grids, _ = task_grid_arrays(episodes, ks, ts, mode)  # [task, K, T], tasks in seed order
    except ValueError as exc:
        raise ValueError(f"{run_dir}: {exc}") from exc
    return np.ascontiguousarray(grids.transpose(0, 2, 1))


def relative_table(run_dir: Path, lengths: Sequence[int], config: Any) -> np.ndarray:
    """Pass@(K, c·d*) per task of one agent, an array [task, c, K], from its runs per optimal
    length (``run_dir/d{d}``: the tasks with that d*, at T = `budgets_for` (cs, d))."""
    table = np.full((len(lengths), len(config.cs), len(config.ks)), np.nan)
    for d in sorted(set(lengths)):
        tasks = [t for t, length in enumerate(lengths) if length == d]
        ts = budgets_for(config.cs, d)
        part = task_table(run_dir / f"d{d}", tasks, ts, config.ks)  # [task, T, K]
        columns = [ts.index(budgets_for([c], d)[0]) for c in config.cs]
        table[tasks] = part[:, columns, :]
    return table


def groups(config: Any) -> tuple[str, ...]:
    """The evaluated agents: random, the bases, the arms."""
    return ("random", *bases(config.arms), *config.arms)


def load_runs(out: Path, config: Any, lengths: dict[str, Sequence[int]]) -> Tables:
    """{(family, condition, group): array [seed, task, c, K]} from the evaluation logs;
    ``lengths``: each env's optimal lengths of tasks ``0..tasks-1``."""
    tables: Tables = {}
    for env_id in config.envs:
        fam = family(env_id)
        for cond in config.conditions:
            for group in groups(config):
                labels = (
                    ["random"] if group == "random" else [f"{group}-s{s}" for s in config.seeds]
                )
                tables[fam, cond, group] = np.stack(
                    [
                        relative_table(out / "eval" / fam / cond / label, lengths[env_id], config)
                        for label in labels
                    ]
                )
    return tables


def _pass1(tables: Tables, fam: str, cond: str, group: str) -> np.ndarray:
    """Pass@(1, c·d*) per [seed, task, c] (K = ``ks[0]``)."""
    return tables[fam, cond, group][:, :, :, 0]


def interval(x: np.ndarray, alpha: float, bounds: tuple[float, float] = (-1.0, 1.0)) -> CI:
    """`crossed_mean` of ``x`` [seed, task] at level ``1 - alpha`` (tasks random); tasks with
    a NaN at some seed (no probe of that kind there) are left out."""
    x = np.asarray(x, dtype=float)
    keep = np.all(np.isfinite(x), axis=0)
    if not keep.any():
        return (float("nan"), float("nan"), float("nan"))
    return crossed_mean(x[:, keep], 1.0 - alpha, tasks="random", bounds=bounds)


def _random_interval(x: np.ndarray, n: int, alpha: float) -> CI:
    """The random agent (no training seeds): a rate over tasks (`clustered_rate`)."""
    hits = np.round(x[0] * n)
    return clustered_rate(hits, np.full(hits.shape, n), 1.0 - alpha)


def _fmt(ci: CI, digits: int = 2) -> str:
    mean, low, high = ci
    if not np.isfinite(mean):
        return "–"
    return f"{mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def _fmt_plain(ci: CI) -> str:
    mean, low, high = ci
    return f"{mean:.2f} [{low:.2f}, {high:.2f}]"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _header(first: str, columns: Sequence[str]) -> list[str]:
    return [_row([first, *columns]), "|---|" + "---|" * len(columns)]


def detectable(ci: CI, alpha: float, n_seeds: int, power: float = 0.8) -> float:
    """The smallest effect an interval like ``ci`` detects with probability ``power``:
    (t_{1-α/2} + t_power) · SE, SE = half-width / t_{1-α/2}, df = seeds - 1 (the seeds' t)."""
    df = max(1, n_seeds - 1)
    half = (ci[2] - ci[1]) / 2.0
    q = _t_quantile(1 - alpha / 2, df)
    return half * (q + _t_quantile(power, df)) / q


# --------------------------------------------------------------------------- probes


def load_probes(out: Path, config: Any) -> dict[str, Any] | None:
    """{family: {label: that agent's probe summary}} when the probes ran, else None."""
    found: dict[str, Any] = {}
    for env_id in config.envs:
        fam = family(env_id)
        found[fam] = {}
        for s in config.seeds:
            paths = sorted((out / "probe" / fam / f"s{s}").rglob("probe_summary.json"))
            if not paths:
                return None
            for path in paths:  # one per probed agent (or one for all of a seed's agents)
                found[fam].update(json.loads(path.read_text())["agents"])
    return found


def _probe_records(path: Path) -> list[dict[str, Any]]:
    """The probes that applied, from one job's ``probes.jsonl``."""
    records, _, _ = read_jsonl(path)
    return [r for r in records if r.get("applied", True)]


def probe_deltas(out: Path, config: Any, fam: str, arm: str) -> dict[str, Any] | None:
    """Per (seed, task) skill gains of ``arm`` over its seed's base, from ``probes.jsonl``.

    ``single``: the single-step skill gain, (p_arm - p_base) / (1 - p_random),
    p the rate of optimal answers among those that change the state and
    p_random the random baseline's over all probes (as the probe summary
    computes it). ``recovery``: the recovery-specific skill gain, each agent's
    mean over its matched pairs of win share after the error minus win share
    in the on-track control (`turnbudget.eval.probes.summary.per_task`). Arrays
    [seed, task], NaN where a task has no probe of that kind.
    """
    from turnbudget.eval.probes.summary import per_task

    per_seed = [sorted((out / "probe" / fam / f"s{s}").rglob("probes.jsonl")) for s in config.seeds]
    if not all(per_seed):
        return None
    # Every job probed the random baseline on the same states: count it once.
    records = [
        r for ps in per_seed for p in ps for r in _probe_records(p) if r["role"] != "baseline"
    ]
    records += [r for r in _probe_records(per_seed[0][0]) if r["role"] == "baseline"]
    tasks = sorted({(r["env_id"], int(r["task_seed"])) for r in records})
    chance = per_task(records, "", role="baseline").values()
    judged = sum(row["judged"] for row in chance)
    if not judged:
        return None
    p_random = sum(row["optimal"] for row in chance) / judged
    scale = max(1e-9, 1.0 - p_random)

    def ratio(rows: dict[Any, Any], key: str, count: str) -> np.ndarray:
        """``key / count`` per task, NaN where the task has no probe of that kind."""
        return np.array(
            [rows[t][key] / rows[t][count] if rows.get(t, {}).get(count) else np.nan for t in tasks]
        )

    def table(label: str) -> tuple[np.ndarray, np.ndarray]:
        rows = per_task(records, label)
        return ratio(rows, "optimal", "judged"), ratio(rows, "specific", "pairs")

    singles, specifics = [], []
    for s in config.seeds:
        arm_single, arm_specific = table(f"policy:{arm}-s{s}")
        base_single, base_specific = table(f"policy:{ARM_BASE.get(arm, 'base')}-s{s}")
        singles.append((arm_single - base_single) / scale)
        specifics.append(arm_specific - base_specific)
    return {
        "single": np.stack(singles),
        "recovery": np.stack(specifics),
        "single_chance": p_random,
    }


def _skill(agents: dict[str, Any], label: str, env_id: str, key: str) -> float | None:
    agent = agents.get(label)
    if agent is None:
        return None
    group = agent.get(env_id) or next(iter(agent.values()))
    value = group[key]
    return None if value is None or value.get("mean") is None else float(value["mean"])


# --------------------------------------------------------------------------- figures


def _axes_over_budgets(ax: Any, cs: Sequence[float]) -> None:
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.set_xticks(cs, [f"{c:g}" for c in cs])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _save(fig: Any, results: Path, name: str) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(results / name, dpi=110)
    plt.close(fig)
    return name


def _band(ax: Any, cs: Sequence[float], cis: Sequence[CI], group: str) -> None:
    """A Pass@(1,T) curve with its interval band."""
    color = COLORS.get(group, "C5")
    ax.plot(cs, [c[0] for c in cis], "-o", color=color, label=group, ms=3)
    ax.fill_between(cs, [c[1] for c in cis], [c[2] for c in cis], color=color, alpha=0.12)


def _pass1_figure(config: Any, estimates: dict[str, Any], fam: str, results: Path) -> str:
    import matplotlib.pyplot as plt

    cs = list(config.cs)
    conds = list(config.conditions)
    fig, axes = plt.subplots(1, len(conds), figsize=(5.5 * len(conds), 4), squeeze=False)
    for ax, cond in zip(axes[0], conds):
        for group in groups(config):
            _band(ax, cs, estimates[fam]["pass1"][cond][group], group)
        _axes_over_budgets(ax, cs)
        ax.set_xlabel("turn budget in units of the optimal length, c = T / d*")
        ax.set_title(f"{fam}, {cond}")
    axes[0][0].set_ylabel("Pass@(1, c·d*)")
    axes[0][-1].legend(fontsize=7)
    return _save(fig, results, f"pass1_{fam}.png")


def _heatmap_figure(config: Any, tables: Tables, fam: str, results: Path) -> str:
    import matplotlib.pyplot as plt

    cs, ks, gs = list(config.cs), list(config.ks), groups(config)
    cond = config.conditions[0]
    fig, axes = plt.subplots(1, len(gs), figsize=(2.6 * len(gs), 2.8), sharey=True)
    for ax, group in zip(axes, gs):
        grid = np.nanmean(tables[fam, cond, group], axis=(0, 1)).T  # [K, c]
        ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto", origin="lower")
        for (i, j), v in np.ndenumerate(grid):
            color = "w" if v < 0.6 else "k"
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6, color=color)
        ax.set_xticks(range(len(cs)), [f"{c:g}" for c in cs], fontsize=7)
        ax.set_yticks(range(len(ks)), [str(k) for k in ks], fontsize=7)
        ax.set_title(group, fontsize=8)
        ax.set_xlabel("c = T / d*")
    axes[0].set_ylabel("K")
    fig.suptitle(f"{fam}: Pass@(K, c·d*), {cond} (mean over seeds × tasks)")
    return _save(fig, results, f"heatmap_{fam}.png")


def _delta_figure(config: Any, estimates: dict[str, Any], fam: str, results: Path) -> str:
    import matplotlib.pyplot as plt

    cs = list(config.cs)
    fig, ax = plt.subplots(figsize=(6, 4))
    for arm in config.arms:
        _band(ax, cs, estimates[fam]["delta1"][config.conditions[0]][arm], arm)
    ax.axhline(0, color="k", lw=0.8)
    _axes_over_budgets(ax, cs)
    ax.set_xlabel("c = T / d*")
    ax.set_ylabel("ΔPass@(1, c·d*), arm − its BC base")
    ax.set_title(f"{fam}: what RL adds over the base, by budget")
    ax.legend(fontsize=7)
    return _save(fig, results, f"delta_{fam}.png")


def _probe_figure(config: Any, probes: dict[str, Any], results: Path) -> str:
    import matplotlib.pyplot as plt

    n_envs = len(config.envs)
    fig, axes = plt.subplots(1, n_envs, figsize=(7 * n_envs, 3.6), squeeze=False)
    gs = (*bases(config.arms), *config.arms)
    for ax, env_id in zip(axes[0], config.envs):
        fam = family(env_id)
        for g_i, group in enumerate(gs):
            for k_i, key in enumerate(("single_step_skill", "recovery_specific_skill")):
                vals = [
                    _skill(probes[fam], f"policy:{group}-s{s}", env_id, key) for s in config.seeds
                ]
                vals = [v for v in vals if v is not None]
                if not vals:
                    continue
                x = g_i + (k_i - 0.5) * 0.38
                label = key.replace("_", " ") if g_i == 0 else None
                ax.bar(x, np.mean(vals), width=0.36, color=f"C{k_i}", label=label)
                ax.plot([x] * len(vals), vals, "k.", ms=3)
        ax.set_xticks(range(len(gs)), gs, fontsize=7, rotation=20)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_ylabel("skill (0 = random / memoryless, 1 = oracle)")
        ax.set_title(f"{fam}: probe skills (bars: mean over seeds; dots: seeds)")
        ax.legend(fontsize=7)
    return _save(fig, results, "probe_skills.png")


def _figures(config: Any, tables: Tables, estimates: dict[str, Any],
             probes: dict[str, Any] | None, results: Path) -> list[str]:  # fmt: skip
    """Per family: Pass@(1, c·d*) curves, Pass@(K, c·d*) heatmaps, Δ curves; probe skills."""
    import matplotlib

    matplotlib.use("Agg")
    files = []
    for env_id in config.envs:
        fam = family(env_id)
        files.append(_pass1_figure(config, estimates, fam, results))
        files.append(_heatmap_figure(config, tables, fam, results))
        files.append(_delta_figure(config, estimates, fam, results))
    if probes is not None:
        files.append(_probe_figure(config, probes, results))
    return files


# --------------------------------------------------------------------------- verdicts


def verdict(ci: CI, margin: float) -> tuple[str, str]:
    """The protocol's rule for a contrast predicted positive: ``replicates`` when the
    interval lies above 0; ``does not replicate`` when it lies below ``margin`` (an effect of
    the size of interest is ruled out; below 0: the opposite holds); else ``inconclusive``.

    Example:
        >>> verdict((0.2, 0.05, 0.35), 0.1)[0], verdict((0.0, -0.06, 0.07), 0.1)[0]
        ('replicates', 'does not replicate')
        >>> verdict((0.05, -0.05, 0.15), 0.1)[0]
        'inconclusive'
    """
    mean, low, high = ci
    if not np.isfinite(mean):
        return "untestable", "no data"
    if low > 0:
        return "replicates", "interval above 0"
    if high < 0:
        return "does not replicate", "interval below 0: the opposite"
    if high < margin:
        return "does not replicate", f"an effect of {margin:g} or more is ruled out"
    return "inconclusive", f"interval holds 0 and {margin:g}"


def worst_case_regret(
    p: dict[str, np.ndarray], arm: str, alpha: float
) -> tuple[float, float, float]:
    """``arm``'s worst-case regret over the budgets, max over c of (the best arm at c minus
    ``arm``), with a simultaneous interval.

    ``p``: {arm: Pass@1 [seed, task, c]}, paired by seed and task. Each paired
    difference (other arm b minus ``arm`` at budget c) gets a `crossed_mean`
    interval at level 1 - alpha / m (Bonferroni over the m pairs (b, c)), so
    all hold at once with probability >= 1 - alpha; then the maximum of the
    means lies between the maximum of the lower bounds and the maximum of the
    upper bounds. Regret is at least 0 (b = ``arm``).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> good = rng.random((10, 24, 3)) * 0.1 + 0.5
        >>> p = {"a": good, "b": good - 0.3}
        >>> r = worst_case_regret(p, "b", 0.05)
        >>> round(r[0], 2), r[1] > 0.2, worst_case_regret(p, "a", 0.05)[:2]
        (0.3, True, (0.0, 0.0))
    """
    others = [b for b in p if b != arm]
    n_c = p[arm].shape[2]
    level = alpha / max(1, len(others) * n_c)
    means, lows, highs = [0.0], [0.0], [0.0]
    for b in others:
        for j in range(n_c):
            mean, low, high = interval(p[b][:, :, j] - p[arm][:, :, j], level)
            means.append(mean)
            lows.append(low)
            highs.append(high)
    return max(means), max(lows), max(highs)


# --------------------------------------------------------------------------- sections


def _estimates(config: Any, tables: Tables, alpha: float) -> dict[str, Any]:
    """Per family: Pass@(1, c·d*) of every group and Δ of every arm over its base (paired),
    per condition and c, each ``(mean, low, high)``."""
    families = {}
    n = max(config.ks)
    for env_id in config.envs:
        fam = family(env_id)
        res: dict[str, Any] = {"pass1": {}, "delta1": {}}
        for cond in config.conditions:
            pass1 = {g: _pass1(tables, fam, cond, g) for g in groups(config)}
            res["pass1"][cond] = {
                g: [
                    _random_interval(pass1[g][:, :, j], n, alpha)
                    if g == "random"
                    else interval(pass1[g][:, :, j], alpha, (0.0, 1.0))
                    for j in range(len(config.cs))
                ]
                for g in groups(config)
            }
            res["delta1"][cond] = {
                a: [
                    interval(pass1[a][:, :, j] - pass1[ARM_BASE.get(a, "base")][:, :, j], alpha)
                    for j in range(len(config.cs))
                ]
                for a in config.arms
            }
        families[fam] = res
    return families


def _setup_section(config: Any, lengths: dict[str, Sequence[int]]) -> list[str]:
    d_stars = "; ".join(f"{family(e)}: d* {min(lengths[e])}–{max(lengths[e])}" for e in config.envs)
    level = round(100 * (1 - config.alpha))
    missing = [a for a in ARMS if a not in config.arms]
    subset = (
        [
            f"**A subset of the protocol**: {len(config.arms)} of its {len(ARMS)} arms ran "
            f"({', '.join(config.arms)}); not run: {', '.join(missing)}. A finding or contrast "
            "that needs an arm that did not run is marked untestable. The full protocol, whose "
            "finished jobs this run's are (they are skipped): `nice -n 10 python "
            "benchmarks/budgetmix.py --out runs/budgetmix --results benchmarks/results/"
            "budgetmix` (about 65 CPU-minutes: 35 min on 2 idle cores).",
            "",
        ]
        if missing
        else []
    )
    return [
        "# BudgetMix replication on a CPU",
        "",
        *subset,
        "Does what multi-turn RL buys survive a tight turn budget? The research's findings, "
        "tested with MaskablePPO policies on the native games, to the protocol written before "
        "the run ([protocol.md](protocol.md)). Produced by `benchmarks/budgetmix.py` (the "
        "command under Reproduce); every number is regenerated by it.",
        "",
        "## Setup",
        "",
        f"- Families: {', '.join(config.envs)} ({d_stars}). Training seeds "
        f"{list(config.seeds)}; training worlds from task seeds >= 1,000,000, evaluation "
        f"tasks 0..{config.tasks - 1}.",
        f"- Base: behaviour cloning on {config.bc_episodes} episodes of the ε-oracle "
        f"(ε = {config.bc_epsilon}), budgets drawn from {config.mix}, one base per training seed.",
        f"- Arms ({', '.join(config.arms)}), {config.steps:,} PPO env steps each from their "
        f"seed's base: fixed-generous (T = {config.generous}), fixed-tight (T = {config.tight}), "
        f"budgetmix (T ~ {config.mix}), budgetmix+pr (the same with ProcessReward), progressive "
        f"(phases {' → '.join(config.progressive)}, equal steps each), budgetmix-hidden "
        "(BudgetMix, the budget never shown; from a base without budget features). The other "
        "arms see their budget.",
        f"- Evaluation: budgets relative to each task's optimal length, T = ceil(c·d*) for "
        f"c = {list(config.cs)}; K = {list(config.ks)}, n = {max(config.ks)} episodes per "
        f"task; conditions {list(config.conditions)}.",
        f"- Intervals: {level}% `crossed_mean` (a t-interval over training seeds, tasks crossed "
        "and random, paired by seed for differences; a rate's widened near 0 and 1 to hold "
        "Wilson's at its effective number of cells); finding 3's with Bonferroni over the "
        "pairs of its maximum. Each contrast's MDE (80% power at this design, from its own "
        "interval's width) is given beside it.",
        "",
    ]


def _pass1_section(config: Any, estimates: dict[str, Any]) -> list[str]:
    columns = [f"c={c:g}" for c in config.cs]
    lines = []
    for env_id in config.envs:
        fam = family(env_id)
        res = estimates[fam]
        for cond in config.conditions:
            lines += [f"### {fam}: Pass@(1, c·d*), {cond}", "", *_header("agent", columns)]
            lines += [_row([g, *map(_fmt_plain, res["pass1"][cond][g])]) for g in groups(config)]
            lines += ["", f"ΔPass@(1, c·d*) over the arm's base ({cond}):", ""]
            lines += _header("arm", columns)
            lines += [_row([a, *map(_fmt, res["delta1"][cond][a])]) for a in config.arms]
            lines.append("")
        lines += [f"![{fam} Pass@1](pass1_{fam}.png)", "", f"![{fam} Δ](delta_{fam}.png)", "",
                  f"![{fam} heatmaps](heatmap_{fam}.png)", ""]  # fmt: skip
    return lines


def _line(what: str, ci: CI, config: Any, rule: tuple[str, str]) -> str:
    mde = detectable(ci, config.alpha, len(config.seeds)) if np.isfinite(ci[0]) else float("nan")
    return f"- {what}: {_fmt(ci)} (MDE {mde:.2f}) → **{rule[0]}** ({rule[1]})"


def _finding1(config: Any, tables: Tables, estimates: dict[str, Any]) -> tuple[list[str], dict]:
    cs = list(config.cs)
    gi, ti = cs.index(config.generous_c), cs.index(config.tight_c)
    lines = [
        "### Finding 1: the RL advantage over the base shrinks as T tightens",
        "",
        f"RL = fixed-generous. Contrast: Δ(c={config.generous_c:g}) − Δ(c={config.tight_c:g}), "
        "Δ = arm − its seed's base on the same task (paired). Replicates when Δ(generous) and "
        f"the contrast both lie above 0; untestable when the base's Pass@1 at c = "
        f"{config.tight_c:g} lies outside [0.1, 0.9] (a floor or a ceiling, not a finding).",
        "",
    ]
    verdicts: dict[str, Any] = {}
    for env_id in config.envs:
        fam = family(env_id)
        for cond in config.conditions:
            key = f"{fam}/{cond}"
            base_tight = estimates[fam]["pass1"][cond]["base"][ti][0]
            if "fixed-generous" not in config.arms:
                verdicts[key] = {"verdict": "untestable", "why": "fixed-generous not run"}
                lines.append(f"- {fam}, {cond}: **untestable** (fixed-generous was not run)")
                continue
            if not 0.1 <= base_tight <= 0.9:
                why = f"base Pass@1 at c={config.tight_c:g} is {base_tight:.2f}, outside [0.1, 0.9]"
                verdicts[key] = {"verdict": "untestable", "why": why}
                lines.append(f"- {fam}, {cond}: **untestable** ({why})")
                continue
            d = _pass1(tables, fam, cond, "fixed-generous") - _pass1(tables, fam, cond, "base")
            gain = estimates[fam]["delta1"][cond]["fixed-generous"][gi]
            shrink = interval(d[:, :, gi] - d[:, :, ti], config.alpha)
            rule = verdict(shrink, config.margin)
            if rule[0] == "replicates" and gain[1] <= 0:
                rule = ("inconclusive", "no advantage at the generous budget to shrink")
            verdicts[key] = {"verdict": rule[0], "why": rule[1], "contrast": shrink, "gain": gain,
                             "base_tight": base_tight}  # fmt: skip
            lines.append(
                f"- {fam}, {cond} (base at c={config.tight_c:g}: {base_tight:.2f}; "
                f"Δ(c={config.generous_c:g}) = {_fmt(gain)})"
            )
            lines.append("  " + _line("Δ(generous) − Δ(tight)", shrink, config, rule))
    return [*lines, ""], verdicts


def _finding2(config: Any, out: Path, probes: dict[str, Any] | None) -> tuple[list[str], Any]:
    lines = ["### Finding 2: RL's gain concentrates in error recovery", ""]
    if probes is None:
        return [*lines, "**Untestable**: the probe stage has not run.", ""], "untestable"
    lines += [
        "Per arm, gains over its seed's base from the teacher-forced probes (per seed × task): "
        "single-step skill and recovery-specific skill (win share after an error minus from "
        "the matched on-track state: 0 for any memoryless policy, whatever its single-step "
        "skill). The verdict is on the recovery-specific gain (replicates when its interval "
        "lies above 0); recovery − single-step gain is shown beside it, without a verdict "
        "(the two skills are on different scales).",
        "",
        *_header("family", ["arm", "Δ single-step", "Δ recovery-specific", "recovery − single",
                            "MDE (recovery)", "verdict"]),
    ]  # fmt: skip
    verdicts = {}
    for env_id in config.envs:
        fam = family(env_id)
        for a in config.arms:
            d = probe_deltas(out, config, fam, a)
            if d is None:
                continue
            # (each gain on its own range: the single-step gain reaches 1 / (1 - p_random), an
            # arm near perfect over a base below chance; a difference of recovery skills 2)
            top = 1.0 / max(1e-9, 1.0 - d["single_chance"])
            single = interval(d["single"], config.alpha, (-top, top))
            recovery = interval(d["recovery"], config.alpha, (-2.0, 2.0))
            contrast = interval(d["recovery"] - d["single"], config.alpha, (-2.0 - top, 2.0 + top))
            rule = verdict(recovery, config.margin)
            mde = detectable(recovery, config.alpha, len(config.seeds))
            verdicts[f"{fam}/{a}"] = {"single": single, "contrast": recovery,
                                      "recovery_minus_single": contrast, "verdict": rule[0],
                                      "why": rule[1]}  # fmt: skip
            lines.append(_row([fam, a, _fmt(single), _fmt(recovery), _fmt(contrast),
                               f"{mde:.2f}", f"**{rule[0]}** ({rule[1]})"]))  # fmt: skip
    return [*lines, "", "![probe skills](probe_skills.png)", ""], verdicts


UNSHAPED = ("fixed-generous", "fixed-tight", "budgetmix", "progressive", "budgetmix-hidden")
FIXED = ("fixed-generous", "fixed-tight")


def _finding3(config: Any, tables: Tables) -> tuple[list[str], dict]:
    lines = [
        "### Finding 3: BudgetMix is robust across budgets",
        "",
        "Regret of an arm at c = the best of the unshaped arms run here at c minus the arm; "
        "worst-case regret = its maximum over the budgets, with a simultaneous interval "
        "(Bonferroni over the pairs). Replicates when BudgetMix's worst-case regret lies below "
        f"{config.margin:g} (upper bound) while some fixed-budget arm's lies above 0 (lower "
        "bound); does not replicate when BudgetMix's lies above 0 (another arm beats it at some "
        f"budget) or every fixed arm's lies below {config.margin:g} (upper bound: no budget "
        "dependence to guard against).",
        "",
    ]
    verdicts: dict[str, Any] = {}
    arms = [a for a in UNSHAPED if a in config.arms]
    for env_id in config.envs:
        fam = family(env_id)
        for cond in config.conditions:
            key = f"{fam}/{cond}"
            fixed = [a for a in FIXED if a in arms]
            if "budgetmix" not in arms or not fixed:
                why = "needs budgetmix and a fixed-budget arm"
                verdicts[key] = {"verdict": "untestable", "why": why}
                lines.append(f"- {fam}, {cond}: **untestable** ({why}; arms run: {arms})")
                continue
            p = {a: _pass1(tables, fam, cond, a) for a in arms}
            regret = {a: worst_case_regret(p, a, config.alpha) for a in arms}
            bm = regret["budgetmix"]
            if bm[2] < config.margin and any(regret[a][1] > 0 for a in fixed):
                rule = ("replicates", "BudgetMix within the margin everywhere; a fixed arm is not")
            elif bm[1] > 0:
                rule = ("does not replicate", "another arm beats BudgetMix at some budget")
            elif all(regret[a][2] < config.margin for a in fixed):
                rule = ("does not replicate", "no fixed arm is budget-dependent beyond the margin")
            else:
                rule = ("inconclusive", "intervals too wide to decide")
            verdicts[key] = {"verdict": rule[0], "why": rule[1], "regret": regret}
            cells = ", ".join(f"{a} {_fmt(regret[a])}" for a in arms)
            lines.append(f"- {fam}, {cond}: worst-case regret {cells} → **{rule[0]}** ({rule[1]})")
    return [*lines, ""], verdicts


def _contrasts(config: Any, tables: Tables) -> tuple[list[str], dict]:
    """Finding 4 (process reward) and the new arms: paired arm − arm, over the grid and at the
    tight and generous budgets."""
    cs = list(config.cs)
    gi, ti = cs.index(config.generous_c), cs.index(config.tight_c)
    pairs = [
        ("4. process reward", "budgetmix+pr", "budgetmix"),
        ("progressive horizon vs BudgetMix", "progressive", "budgetmix"),
        ("budget visible vs hidden (BudgetMix)", "budgetmix", "budgetmix-hidden"),
    ]
    lines = [
        "### Finding 4 and the new arms",
        "",
        "Paired differences (same seed's base, same tasks) of Pass@(1, c·d*): averaged over the "
        f"budgets, at c = {config.tight_c:g} and at c = {config.generous_c:g}. No prediction: "
        "an effect is reported when its interval excludes 0.",
        "",
    ]
    effects: dict[str, Any] = {}
    for env_id in config.envs:
        fam = family(env_id)
        for cond in config.conditions:
            for name, a, b in pairs:
                if a not in config.arms or b not in config.arms:
                    lines.append(f"- {fam}, {cond}, {name}: **untestable** ({a} or {b} not run)")
                    continue
                d = _pass1(tables, fam, cond, a) - _pass1(tables, fam, cond, b)
                avg = interval(d.mean(axis=2), config.alpha)
                tight, gen = (
                    interval(d[:, :, ti], config.alpha),
                    interval(d[:, :, gi], config.alpha),
                )
                word = "positive" if avg[1] > 0 else "negative" if avg[2] < 0 else "no clear effect"
                mde = detectable(avg, config.alpha, len(config.seeds))
                effects[f"{fam}/{cond}/{a}-{b}"] = {"mean": avg, "tight": tight, "generous": gen}
                lines.append(
                    f"- {fam}, {cond}, {name} ({a} − {b}): over the budgets {_fmt(avg)} "
                    f"(MDE {mde:.2f}); at c={config.tight_c:g} {_fmt(tight)}; at "
                    f"c={config.generous_c:g} {_fmt(gen)} → {word}"
                )
    return [*lines, ""], effects


def _engineering_bar(config: Any, estimates: dict[str, Any]) -> tuple[list[str], bool]:
    gi = list(config.cs).index(config.generous_c)
    lines = ["### Engineering bar: does RL improve on its base at the generous budget?", ""]
    met = False
    for env_id in config.envs:
        fam = family(env_id)
        for a in config.arms:
            ci = estimates[fam]["delta1"][config.conditions[0]][a][gi]
            met |= bool(ci[1] > 0)
            lines.append(f"- {fam}, {a}: ΔPass@(1, {config.generous_c:g}·d*) = {_fmt(ci)}")
    return [*lines, "", f"Bar met: **{'yes' if met else 'no'}**.", ""], met


def _glance(config: Any, summary: dict[str, Any]) -> list[str]:
    cells = [f"{family(e)}/{c}" for e in config.envs for c in config.conditions]

    def word(v: Any) -> str:
        return v["verdict"] if isinstance(v, dict) else str(v)

    f2 = summary["finding2"]
    f2_cells = []
    for cell in cells:
        fam = cell.split("/")[0]
        mine = (
            {k: v for k, v in f2.items() if k.startswith(fam + "/")} if isinstance(f2, dict) else {}
        )
        f2_cells.append(
            ", ".join(f"{k.split('/')[1]}: {word(v)}" for k, v in mine.items()) or "untestable"
        )
    return [
        "## At a glance",
        "",
        *_header("finding", cells),
        _row(["1. RL advantage shrinks as T tightens",
              *[word(summary["finding1"].get(c, "untestable")) for c in cells]]),
        _row(["2. gain concentrates in recovery (per arm)", *f2_cells]),
        _row(["3. BudgetMix robust across budgets",
              *[word(summary["finding3"].get(c, "untestable")) for c in cells]]),
        "",
        "Every verdict comes with its interval and MDE in the sections below; command and "
        "settings at the end.",
        "",
    ]  # fmt: skip


def _runs_section(config: Any, out: Path, timings: dict[str, Any]) -> list[str]:
    lines = ["## Runs", "", *_header("job", ["steps", "wall s", "steps/s"])]
    for env_id in config.envs:
        fam = family(env_id)
        for group in (*bases(config.arms), *config.arms):
            for seed in config.seeds:
                path = out / "policies" / fam / f"{group}-s{seed}" / "summary.json"
                if not path.is_file():
                    continue
                e = json.loads(path.read_text())
                steps = e.get("steps", e.get("demo_steps"))
                cells = [steps, e.get("wall_s"), e.get("steps_per_s", "–")]
                lines.append(_row([f"{fam}/{group}-s{seed} ({e.get('algo')})", *map(str, cells)]))
    walls = ", ".join(f"{k[:-7]} {v}" for k, v in timings.items() if k.endswith("_wall_s"))
    return [*lines, "", f"Stage wall times (s): {walls}", ""]


def _settings(config: Any) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(config).items()}


def _reproduce(config: Any, results: Path) -> list[str]:
    flags = "" if not config.quick else " --quick"
    arms = "" if tuple(config.arms) == ARMS else f" --arms {','.join(config.arms)}"
    return [
        "## Reproduce",
        "",
        "```bash",
        f"nice -n 10 python benchmarks/budgetmix.py{flags}{arms} --out {config.out} "
        f"--results {results} --workers {config.workers}",
        "```",
        "",
        "Every job is a pure function of its settings and seed (training with one torch thread "
        "is bit-for-bit reproducible on the same build; evaluation does not depend on the "
        "worker count or backend); finished jobs are skipped on a rerun, so a killed run "
        "continues where it stopped. Settings:",
        "",
        "```json",
        json.dumps(_settings(config), indent=1),
        "```",
        "",
    ]


# --------------------------------------------------------------------------- the report


def write_report(config: Any, out: Path, results: Path, timings: dict[str, Any],
                 lengths: dict[str, Sequence[int]]) -> Path:  # fmt: skip
    """Write report.md, summary.json, timings.json and the figures into ``results``;
    ``lengths``: each env's optimal lengths of the evaluation tasks."""
    results.mkdir(parents=True, exist_ok=True)
    tables = load_runs(out, config, lengths)
    probes = load_probes(out, config)
    estimates = _estimates(config, tables, config.alpha)
    _figures(config, tables, estimates, probes, results)
    summary: dict[str, Any] = {"config": _settings(config), "families": estimates}
    bar, summary["engineering_bar_met"] = _engineering_bar(config, estimates)
    f1, summary["finding1"] = _finding1(config, tables, estimates)
    f2, summary["finding2"] = _finding2(config, out, probes)
    f3, summary["finding3"] = _finding3(config, tables)
    f4, summary["contrasts"] = _contrasts(config, tables)
    lines = [
        *_setup_section(config, lengths),
        *_glance(config, summary),
        *_pass1_section(config, estimates),
        "## Findings",
        "",
        *bar,
        *f1,
        *f2,
        *f3,
        *f4,
        *_runs_section(config, out, timings),
        *_reproduce(config, results),
    ]
    (results / "report.md").write_text("\n".join(lines) + "\n")
    (results / "summary.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    (results / "timings.json").write_text(json.dumps(timings, indent=1, default=str) + "\n")
    return results / "report.md"


# --------------------------------------------------------------------------- power


#: The protocol's contrasts, as a normal model of one (seed, task) cell of the paired
#: contrast: seed_sd and task_sd are the seed's and the task's effect on it, noise_sd the
#: rest (interaction and binomial noise of the cells it combines); tasks, the tasks per seed.
CONTRASTS = {
    # Δ(generous) − Δ(tight): four Pass@1 cells of n = 8 (p near 0.5: sd 0.18 each).
    "finding 1: Δ(gen) − Δ(tight)": {"seed_sd": (0.07, 0.14), "task_sd": 0.15,
                                      "noise_sd": 0.40, "tasks": 24, "tests": 1},
    # the recovery-specific gain over the base: 16 probe tasks, a few matched pairs each.
    "finding 2: recovery-specific gain": {"seed_sd": (0.07, 0.14), "task_sd": 0.15,
                                          "noise_sd": 0.45, "tasks": 16, "tests": 1},
    # one arm − another at one budget (two cells), Bonferroni over 4 others × 5 budgets.
    "finding 3: arm − arm at one c": {"seed_sd": (0.07, 0.14), "task_sd": 0.10,
                                      "noise_sd": 0.28, "tasks": 24, "tests": 20},
    "engineering bar / contrasts: arm − base at one c": {
        "seed_sd": (0.07, 0.14), "task_sd": 0.10, "noise_sd": 0.28, "tasks": 24, "tests": 1},
}  # fmt: skip


def simulated_power(
    effect: float, seeds: int, tasks: int, seed_sd: float, task_sd: float, noise_sd: float,
    alpha: float = 0.05, sims: int = 400, seed: int = 0,
) -> float:  # fmt: skip
    """The share of simulated replications whose `crossed_mean` interval (tasks random) lies
    above 0 when the true paired contrast is ``effect``."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        x = (
            effect
            + seed_sd * rng.standard_normal((seeds, 1))
            + task_sd * rng.standard_normal((1, tasks))
            + noise_sd * rng.standard_normal((seeds, tasks))
        )
        hits += crossed_mean(x, 1.0 - alpha, tasks="random", bounds=(-2.0, 2.0))[1] > 0
    return hits / sims


def simulated_mde(seeds: int, tasks: int, seed_sd: float, task_sd: float, noise_sd: float,
                  alpha: float = 0.05, power: float = 0.8, sims: int = 400) -> float:  # fmt: skip
    """The smallest effect (to 0.01) detected with probability ``power`` (bisection on
    `simulated_power` with common random numbers)."""
    low, high = 0.0, 1.0
    while high - low > 0.01:
        mid = (low + high) / 2
        args = (seeds, tasks, seed_sd, task_sd, noise_sd, alpha, sims)
        low, high = (low, mid) if simulated_power(mid, *args) >= power else (mid, high)
    return round(high, 2)


def power_table(seeds: Sequence[int] = (3, 10, 20), alpha: float = 0.05) -> list[str]:
    """Markdown: each contrast's MDE at 80% power for several seed counts and seed spreads."""
    lines = _header("contrast (model)", [f"{s} seeds, seed sd {sd}" for s in seeds
                                         for sd in (0.07, 0.14)])  # fmt: skip
    for name, m in CONTRASTS.items():
        cells = [
            f"{simulated_mde(s, m['tasks'], sd, m['task_sd'], m['noise_sd'], alpha / m['tests']):.2f}"
            for s in seeds
            for sd in m["seed_sd"]
        ]
        lines.append(_row([name, *cells]))
    return lines


if __name__ == "__main__":  # the protocol's power table
    # No options, but `--help` answers rather than starting minutes of simulations.
    argparse.ArgumentParser(
        description="Print the BudgetMix protocol's power table: each contrast's minimum "
        "detectable effect at 80% power, by simulation (minutes)."
    ).parse_args()
    print("\n".join(power_table()))
