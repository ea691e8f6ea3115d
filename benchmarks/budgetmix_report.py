"""The BudgetMix replication's report: tables, figures and the four findings, from the run logs.

Read by ``benchmarks/budgetmix.py`` (and runnable alone: ``python
benchmarks/budgetmix_report.py OUT RESULTS`` rebuilds the report from a
finished run). Intervals are 95% percentile bootstraps over training seeds ×
tasks: each resample draws the seeds and the tasks with replacement and
averages over their cross product; differences between an arm and its base
are paired (arm seed s started from base seed s; same tasks).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["load_runs", "pass_tables", "write_report"]

ARMS = ("fixed-generous", "fixed-tight", "budgetmix", "budgetmix+pr")
GROUPS = ("random", "base", *ARMS)
CONDITIONS = ("clean", "errors")


def _family(env_id: str) -> str:
    return env_id.split("/")[-1].rsplit("-v", 1)[0]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


# --------------------------------------------------------------------------- Pass@(K,T)


def _pass_at_k(n: int, c: int, k: int) -> float:
    from turnbudget.eval.estimator import pass_at_k

    return pass_at_k(n, c, k)


def task_table(episodes: list[dict[str, Any]], tasks: Sequence[int], ts: Sequence[int],
               ks: Sequence[int]) -> np.ndarray:  # fmt: skip
    """Pass@(K,T) per task: an array [task, T, K]. Rerun logs use each T's own runs; truncate
    logs (one run at max T) count a success at T when it came within T turns."""
    budgets = {e["turn_budget"] for e in episodes}
    truncate = budgets == {max(ts)} and len(ts) > 1
    index = {t: i for i, t in enumerate(tasks)}
    n = np.zeros((len(tasks), len(ts)), dtype=int)
    c = np.zeros((len(tasks), len(ts)), dtype=int)
    for e in episodes:
        i = index.get(e["seed"])
        if i is None:
            continue
        for j, t in enumerate(ts):
            if truncate:
                first = e.get("first_success_turn")
                n[i, j] += 1
                c[i, j] += bool(e["success"]) and first is not None and first <= t
            elif e["turn_budget"] == t:
                n[i, j] += 1
                c[i, j] += bool(e["success"])
    out = np.zeros((len(tasks), len(ts), len(ks)))
    for i, j in np.ndindex(n.shape):
        for k_i, k in enumerate(ks):
            out[i, j, k_i] = _pass_at_k(int(n[i, j]), int(c[i, j]), k) if n[i, j] >= k else np.nan
    return out


def load_runs(out: Path, config: Any) -> dict[tuple[str, str, str], np.ndarray]:
    """{(family, condition, group): array [seed, task, T, K]} from the evaluation logs."""
    tasks = list(range(config.tasks))
    tables: dict[tuple[str, str, str], np.ndarray] = {}
    for env_id in config.envs:
        fam = _family(env_id)
        for cond in CONDITIONS:
            for group in GROUPS:
                labels = (
                    ["random"] if group == "random" else [f"{group}-s{s}" for s in config.seeds]
                )
                per_seed = []
                for label in labels:
                    path = out / "eval" / fam / cond / label / "episodes.jsonl"
                    per_seed.append(task_table(_read_jsonl(path), tasks, config.ts, config.ks))
                tables[fam, cond, group] = np.stack(per_seed)
    return tables


def pass_tables(tables: dict, fam: str, cond: str, group: str) -> np.ndarray:
    return tables[fam, cond, group]


def bootstrap(x: np.ndarray, n_boot: int, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of ``x`` [seed, task] over a two-way bootstrap of seeds × tasks."""
    x = np.asarray(x, dtype=float)
    mean = float(np.nanmean(x))
    rng = np.random.default_rng(seed)
    s, m = x.shape
    stats = np.empty(n_boot)
    for b in range(n_boot):
        si = rng.integers(s, size=s)
        ti = rng.integers(m, size=m)
        stats[b] = np.nanmean(x[np.ix_(si, ti)])
    low, high = np.percentile(stats, [2.5, 97.5])
    return mean, float(low), float(high)


def _fmt(ci: tuple[float, float, float], digits: int = 2) -> str:
    mean, low, high = ci
    return f"{mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def _fmt_plain(ci: tuple[float, float, float]) -> str:
    mean, low, high = ci
    return f"{mean:.2f} [{low:.2f}, {high:.2f}]"


# --------------------------------------------------------------------------- probes


def load_probes(out: Path, config: Any) -> dict[str, Any] | None:
    """{family: {label: that agent's probe summary}} when the probes ran, else None."""
    found: dict[str, Any] = {}
    for env_id in config.envs:
        fam = _family(env_id)
        found[fam] = {}
        for s in config.seeds:
            path = out / "probe" / fam / f"s{s}" / "probe_summary.json"
            if not path.is_file():
                return None
            found[fam].update(json.loads(path.read_text())["agents"])
    return found


def probe_deltas(out: Path, config: Any, fam: str, arm: str) -> dict[str, np.ndarray] | None:
    """Per (seed, task) skill gains of ``arm`` over its seed's base, from ``probes.jsonl``.

    Skill = (p - p_random) / (1 - p_random) with p_random the random baseline's
    rate over all probes (as the probe summary computes it), so a skill gain is
    the rate gain divided by (1 - p_random). Returns arrays [seed, task] for
    ``single`` and ``recovery`` (NaN where a task has no probe of that kind).
    """
    paths = [out / "probe" / fam / f"s{s}" / "probes.jsonl" for s in config.seeds]
    if not all(p.is_file() for p in paths):
        return None
    records = [r for p in paths for r in _read_jsonl(p) if r.get("applied", True)]
    # Each seed's job probed the random baseline on the same states: count it once.
    records = [r for r in records if r["role"] != "baseline"] + [
        r for r in _read_jsonl(paths[0]) if r["role"] == "baseline" and r.get("applied", True)
    ]
    tasks = sorted({r["task_seed"] for r in records})
    index = {t: i for i, t in enumerate(tasks)}
    result = {}
    for probe, key in (("single", "optimal"), ("recovery", "recovered")):
        base_rate = [
            bool(r[key]) for r in records if r["role"] == "baseline" and r["probe"] == probe
        ]
        if not base_rate:
            return None
        chance = float(np.mean(base_rate))
        scale = max(1e-9, 1.0 - chance)

        def rates(label: str, probe: str = probe, key: str = key) -> np.ndarray:
            hits = np.zeros(len(tasks))
            count = np.zeros(len(tasks))
            for r in records:
                if r["role"] == "agent" and r["agent"] == label and r["probe"] == probe:
                    hits[index[r["task_seed"]]] += bool(r[key])
                    count[index[r["task_seed"]]] += 1
            with np.errstate(invalid="ignore", divide="ignore"):
                return hits / count

        gains = [
            (rates(f"policy:{arm}-s{s}") - rates(f"policy:base-s{s}")) / scale for s in config.seeds
        ]
        result[probe] = np.stack(gains)
        result[f"{probe}_chance"] = chance
    return result


def _skill(agents: dict[str, Any], label: str, env_id: str, key: str) -> float | None:
    agent = agents.get(label)
    if agent is None:
        return None
    group = agent.get(env_id) or next(iter(agent.values()))
    value = group[key]
    return None if value is None or value.get("mean") is None else float(value["mean"])


# --------------------------------------------------------------------------- figures


def _plots(config: Any, tables: dict, results: Path, n_boot: int) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    files = []
    ts, ks = list(config.ts), list(config.ks)
    colors = {"random": "0.6", "base": "k", "fixed-generous": "C0", "fixed-tight": "C3",
              "budgetmix": "C2", "budgetmix+pr": "C4"}  # fmt: skip
    for env_id in config.envs:
        fam = _family(env_id)
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for ax, cond in zip(axes, CONDITIONS):
            for group in GROUPS:
                x = tables[fam, cond, group][:, :, :, 0]
                cis = [bootstrap(x[:, :, j], n_boot) for j in range(len(ts))]
                mean = [c[0] for c in cis]
                ax.plot(ts, mean, "-o", color=colors[group], label=group, ms=3)
                ax.fill_between(ts, [c[1] for c in cis], [c[2] for c in cis],
                                color=colors[group], alpha=0.15)  # fmt: skip
            ax.axvspan(config.tight, config.generous, color="0.9", zorder=0)
            ax.set_xscale("log")
            ax.set_xticks(ts, [str(t) for t in ts])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("turn budget T (shaded: training range)")
            ax.set_title(f"{fam}, {cond}")
        axes[0].set_ylabel("Pass@(1,T)")
        axes[1].legend(fontsize=8)
        fig.tight_layout()
        name = f"pass1_{fam}.png"
        fig.savefig(results / name, dpi=110)
        plt.close(fig)
        files.append(name)

        fig, axes = plt.subplots(1, len(GROUPS), figsize=(3 * len(GROUPS), 2.8), sharey=True)
        for ax, group in zip(axes, GROUPS):
            grid = np.nanmean(tables[fam, "clean", group], axis=(0, 1)).T  # [K, T]
            ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto", origin="lower")
            for (i, j), v in np.ndenumerate(grid):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="w" if v < 0.6 else "k")  # fmt: skip
            ax.set_xticks(range(len(ts)), [str(t) for t in ts], fontsize=7)
            ax.set_yticks(range(len(ks)), [str(k) for k in ks], fontsize=7)
            ax.set_title(group, fontsize=9)
            ax.set_xlabel("T")
        axes[0].set_ylabel("K")
        fig.suptitle(f"{fam}: Pass@(K,T), no injected errors (mean over seeds × tasks)")
        fig.tight_layout()
        name = f"heatmap_{fam}.png"
        fig.savefig(results / name, dpi=110)
        plt.close(fig)
        files.append(name)

        fig, ax = plt.subplots(figsize=(6, 4))
        base = tables[fam, "clean", "base"][:, :, :, 0]
        for group in ARMS:
            d = tables[fam, "clean", group][:, :, :, 0] - base
            cis = [bootstrap(d[:, :, j], n_boot) for j in range(len(ts))]
            ax.plot(ts, [c[0] for c in cis], "-o", color=colors[group], label=group, ms=3)
            ax.fill_between(ts, [c[1] for c in cis], [c[2] for c in cis], color=colors[group],
                            alpha=0.15)  # fmt: skip
        ax.axhline(0, color="k", lw=0.8)
        ax.axvspan(config.tight, config.generous, color="0.9", zorder=0)
        ax.set_xscale("log")
        ax.set_xticks(ts, [str(t) for t in ts])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("turn budget T")
        ax.set_ylabel("ΔPass@(1,T), arm − its BC base")
        ax.set_title(f"{fam}: what RL adds over the base, by budget")
        ax.legend(fontsize=8)
        fig.tight_layout()
        name = f"delta_{fam}.png"
        fig.savefig(results / name, dpi=110)
        plt.close(fig)
        files.append(name)
    return files


def _probe_plot(config: Any, probes: dict[str, Any], results: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(config.envs), figsize=(6 * len(config.envs), 3.6), squeeze=False
    )
    groups = ("base", *ARMS)
    for ax, env_id in zip(axes[0], config.envs):
        fam = _family(env_id)
        for g_i, group in enumerate(groups):
            for k_i, key in enumerate(("single_step_skill", "recovery_skill")):
                vals = [
                    _skill(probes[fam], f"policy:{group}-s{s}", env_id, key) for s in config.seeds
                ]
                vals = [v for v in vals if v is not None]
                if not vals:
                    continue
                x = g_i + (k_i - 0.5) * 0.38
                ax.bar(x, np.mean(vals), width=0.36, color=f"C{k_i}",
                       label=key.replace("_", " ") if g_i == 0 else None)  # fmt: skip
                ax.plot([x] * len(vals), vals, "k.", ms=4)
        ax.set_xticks(range(len(groups)), groups, fontsize=8, rotation=15)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_ylabel("skill (0 = random, 1 = oracle)")
        ax.set_title(f"{fam}: probe skills (bars: mean over seeds; dots: seeds)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    name = "probe_skills.png"
    fig.savefig(results / name, dpi=110)
    plt.close(fig)
    return name


# --------------------------------------------------------------------------- findings


def _halving_budget(ts: Sequence[int], delta: Sequence[float], ref_t: int) -> float | None:
    """The largest T below ``ref_t`` where the advantage falls to half its value at ``ref_t``
    (linear in T between grid points); None when it never does within the grid."""
    ref = delta[list(ts).index(ref_t)]
    if ref <= 0:
        return None
    pairs = [(t, d) for t, d in zip(ts, delta) if t <= ref_t]
    for (t0, d0), (t1, d1) in zip(pairs[::-1][1:], pairs[::-1][:-1]):
        if d0 <= ref / 2:
            return float(t0 + (t1 - t0) * (ref / 2 - d0) / (d1 - d0)) if d1 != d0 else float(t0)
    return None


def _replicates(flag: bool | None) -> str:
    return {True: "**replicates**", False: "**does not replicate**", None: "**inconclusive**"}[flag]


def write_report(config: Any, out: Path, results: Path, timings: dict[str, Any]) -> Path:
    """Write report.md, summary.json and the figures into ``results``."""
    results.mkdir(parents=True, exist_ok=True)
    nb = int(config.n_boot) if hasattr(config, "n_boot") else int(config.n_bootstrap)
    tables = load_runs(out, config)
    probes = load_probes(out, config)
    ts = list(config.ts)
    figures = _plots(config, tables, results, nb)
    if probes is not None:
        figures.append(_probe_plot(config, probes, results))
    summary: dict[str, Any] = {"config": {k: list(v) if isinstance(v, tuple) else v
                                          for k, v in vars(config).items()},
                               "families": {}}  # fmt: skip
    lines = [
        "# BudgetMix replication on a CPU",
        "",
        "Does what multi-turn RL buys survive a tight turn budget? The research's four findings, "
        "tested with MaskablePPO policies on the native games. Produced by "
        "`benchmarks/budgetmix.py` (command and seeds below); every number is regenerated by it. "
        "A reading of the results, with caveats: [notes.md](notes.md).",
        "",
        "## Setup",
        "",
        f"- Families: {', '.join(config.envs)}. Training seeds {list(config.seeds)}; "
        f"training worlds from task seeds >= 1,000,000, evaluation tasks 0..{config.tasks - 1}.",
        f"- Base: behaviour cloning on {config.bc_episodes} episodes of the ε-oracle "
        f"(ε = {config.bc_epsilon}: the labels include its random commands), budgets drawn from "
        f"{config.mix}, one base per training seed.",
        f"- Arms, {config.steps:,} PPO env steps each from their seed's base: fixed-generous "
        f"(T = {config.generous}), fixed-tight (T = {config.tight}), budgetmix "
        f"(T ~ {config.mix}), budgetmix+pr (the same with ProcessReward, distance potential, "
        "scale 0.1). The budget is visible to every policy (RevealBudget always + numeric budget "
        "features), so each can adapt to T; they are evaluated in rerun mode.",
        f"- Evaluation: K = {list(config.ks)}, T = {ts}, n = {max(config.ks)} episodes per task, "
        f"without errors and with injected errors (rate {config.error_rate} per turn, all kinds). "
        "Intervals: 95% bootstrap over training seeds × tasks (paired for differences).",
        "",
    ]
    fam_results = {}
    for env_id in config.envs:
        fam = _family(env_id)
        res: dict[str, Any] = {"pass1": {}, "delta1": {}}
        for cond in CONDITIONS:
            res["pass1"][cond] = {
                g: [bootstrap(tables[fam, cond, g][:, :, j, 0], nb) for j in range(len(ts))]
                for g in GROUPS
            }
            base = tables[fam, cond, "base"][:, :, :, 0]
            res["delta1"][cond] = {
                a: [bootstrap(tables[fam, cond, a][:, :, j, 0] - base[:, :, j], nb)
                    for j in range(len(ts))]
                for a in ARMS
            }  # fmt: skip
        fam_results[fam] = res
        summary["families"][fam] = res

    # Tables of Pass@(1,T).
    for env_id in config.envs:
        fam = _family(env_id)
        res = fam_results[fam]
        for cond in CONDITIONS:
            lines += [f"### {fam}: Pass@(1,T), {cond}", "",
                      "| agent | " + " | ".join(f"T={t}" for t in ts) + " |",
                      "|---|" + "---|" * len(ts)]  # fmt: skip
            for g in GROUPS:
                lines.append(
                    f"| {g} | " + " | ".join(_fmt_plain(c) for c in res["pass1"][cond][g]) + " |"
                )
            lines += ["", f"ΔPass@(1,T) over the base ({cond}):", "",
                      "| arm | " + " | ".join(f"T={t}" for t in ts) + " |", "|---|" + "---|" * len(ts)]  # fmt: skip
            for a in ARMS:
                lines.append(
                    f"| {a} | " + " | ".join(_fmt(c) for c in res["delta1"][cond][a]) + " |"
                )
            lines.append("")
        lines += [f"![{fam} Pass@(1,T)](pass1_{fam}.png)", "",
                  f"![{fam} ΔPass@(1,T)](delta_{fam}.png)", "",
                  f"![{fam} heatmaps](heatmap_{fam}.png)", ""]  # fmt: skip

    # ---- findings
    glance_at = len(lines)
    lines += ["## Findings", ""]
    gi, ti = ts.index(config.generous), ts.index(config.tight)
    # Engineering bar.
    lines += ["### Engineering bar: does RL improve on its base at the generous budget?", ""]
    bar_any = False
    for env_id in config.envs:
        fam = _family(env_id)
        for a in ARMS:
            ci = fam_results[fam]["delta1"]["clean"][a][gi]
            ok = ci[1] > 0
            bar_any |= ok
            lines.append(f"- {fam}, {a}: ΔPass@(1,{config.generous}) = {_fmt(ci)}"
                         + (" — interval excludes zero" if ok else ""))  # fmt: skip
    lines += ["", f"Bar met: **{'yes' if bar_any else 'no'}**.", ""]
    summary["engineering_bar_met"] = bar_any

    # Finding 1.
    lines += ["### Finding 1: the RL advantage over the base shrinks as T tightens", "",
              f"RL = the fixed-generous arm (standard RL at a generous budget); the other arms "
              f"are in the tables above. Replicates when Δ(T={config.generous}) > 0 and "
              f"Δ(T={config.generous}) − Δ(T={config.tight}) > 0, both intervals excluding zero; "
              "does not replicate when the difference's interval lies below zero; "
              "inconclusive otherwise.", ""]  # fmt: skip
    f1 = []
    for env_id in config.envs:
        fam = _family(env_id)
        for cond in CONDITIONS:
            arm = tables[fam, cond, "fixed-generous"][:, :, :, 0]
            base = tables[fam, cond, "base"][:, :, :, 0]
            d = arm - base
            shrink = bootstrap(d[:, :, gi] - d[:, :, ti], nb)
            deltas = [c[0] for c in fam_results[fam]["delta1"][cond]["fixed-generous"]]
            half = _halving_budget(ts, deltas, config.generous)
            base_ci = fam_results[fam]["delta1"][cond]["fixed-generous"][gi]
            # Nothing to shrink without an advantage at the generous budget; otherwise the
            # paired interval of Δ(generous) − Δ(tight) decides, and one straddling 0 does not.
            if base_ci[1] <= 0:
                ok = None
            elif shrink[1] > 0:
                ok = True
            elif shrink[2] < 0:
                ok = False
            else:
                ok = None
            f1.append(ok)
            lines.append(
                f"- {fam}, {cond}: Δ by T = "
                + ", ".join(f"{t}: {v:+.2f}" for t, v in zip(ts, deltas))
                + f"; Δ({config.generous}) − Δ({config.tight}) = {_fmt(shrink)}; the advantage "
                + (f"halves at T ≈ {half:.1f}" if half is not None else "does not halve within the grid")
                + f" → {_replicates(ok)}"
            )  # fmt: skip
    lines.append("")
    summary["finding1"] = f1

    # Finding 2.
    lines += ["### Finding 2: RL's gain is larger in recovery skill than in single-step skill", ""]
    if probes is None:
        lines += ["**Pending**: the teacher-forced probes (`turnbudget.eval.probe`) were not in "
                  "this version when the run was made; rerun the same command once they are "
                  "(trained policies and evaluations are reused) to fill this in.", ""]  # fmt: skip
        summary["finding2"] = "pending"
    else:
        lines += ["Skill gains over each arm's own base, per (seed, task) from the probe records, "
                  "with 95% bootstrap intervals over training seeds × tasks (paired). Replicates "
                  "when the recovery gain exceeds the single-step gain (interval of the "
                  "difference above zero); does not when it lies below zero.", "",
                  "| family | arm | Δ single-step skill | Δ recovery skill | recovery − single | verdict |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        f2 = {}
        for env_id in config.envs:
            fam = _family(env_id)
            for a in ARMS:
                d = probe_deltas(out, config, fam, a)
                if d is None:
                    continue
                single, recovery = bootstrap(d["single"], nb), bootstrap(d["recovery"], nb)
                diff = bootstrap(d["recovery"] - d["single"], nb)
                ok = True if diff[1] > 0 else False if diff[2] < 0 else None
                f2[f"{fam}/{a}"] = {"single": single, "recovery": recovery, "difference": diff,
                                    "replicates": ok}  # fmt: skip
                lines.append(f"| {fam} | {a} | {_fmt(single)} | {_fmt(recovery)} | {_fmt(diff)} "
                             f"| {_replicates(ok)} |")  # fmt: skip
        lines += ["", "![probe skills](probe_skills.png)", ""]
        summary["finding2"] = f2

    # Finding 3.
    lines += ["### Finding 3: BudgetMix is robust across budgets", "",
              "Regret at T = Pass@(1,T) of the arm minus the best of the three unshaped arms at "
              "that T; an arm's worst case is its largest regret over the grid. Replicates when "
              "BudgetMix's worst-case regret is no larger than either fixed arm's.", ""]  # fmt: skip
    f3 = []
    for env_id in config.envs:
        fam = _family(env_id)
        for cond in CONDITIONS:
            means = {a: np.array([c[0] for c in fam_results[fam]["pass1"][cond][a]]) for a in ARMS}
            best = np.max(np.stack([means[a] for a in ARMS[:3]]), axis=0)
            worst = {a: float(np.max(best - means[a])) for a in ARMS}
            ok = worst["budgetmix"] <= min(worst["fixed-generous"], worst["fixed-tight"]) + 1e-9
            f3.append(ok)
            outside = [j for j, t in enumerate(ts) if t < config.tight or t > config.generous]
            lines.append(
                f"- {fam}, {cond}: worst regret " + ", ".join(f"{a} {worst[a]:.3f}" for a in ARMS)
                + f" → {_replicates(ok)}. Outside the training range (T = "
                + ", ".join(str(ts[j]) for j in outside) + "): "
                + "; ".join(f"{a} " + "/".join(f"{means[a][j]:.2f}" for j in outside) for a in ARMS)
            )  # fmt: skip
    lines.append("")
    summary["finding3"] = f3

    # Finding 4.
    lines += ["### Finding 4: what process reward adds", "",
              "budgetmix+pr − budgetmix, Pass@(1,T) averaged over the grid's budgets (paired by "
              "seed and task), and at the tightest and most generous training budgets.", ""]  # fmt: skip
    f4 = {}
    for env_id in config.envs:
        fam = _family(env_id)
        for cond in CONDITIONS:
            d = (
                tables[fam, cond, "budgetmix+pr"][:, :, :, 0]
                - tables[fam, cond, "budgetmix"][:, :, :, 0]
            )
            avg = bootstrap(np.nanmean(d, axis=2), nb)
            at_t = bootstrap(d[:, :, ti], nb)
            at_g = bootstrap(d[:, :, gi], nb)
            f4[f"{fam}/{cond}"] = {"mean": avg, "tight": at_t, "generous": at_g}
            verdict = "helps" if avg[1] > 0 else "hurts" if avg[2] < 0 else "no clear effect"
            lines.append(f"- {fam}, {cond}: over the grid {_fmt(avg)}; at T={config.tight} "
                         f"{_fmt(at_t)}; at T={config.generous} {_fmt(at_g)} → {verdict}")  # fmt: skip
    lines.append("")
    summary["finding4"] = f4

    # Runs.
    lines += [
        "## Runs",
        "",
        "| job | steps | wall s | steps/s | env share |",
        "|---|---|---|---|---|",
    ]
    for env_id in config.envs:
        fam = _family(env_id)
        for group in ("base", *ARMS):
            for seed in config.seeds:
                path = out / "policies" / fam / f"{group}-s{seed}" / "summary.json"
                if not path.is_file():
                    continue
                e = json.loads(path.read_text())
                steps = e.get("steps", e.get("demo_steps"))
                lines.append(f"| {fam}/{group}-s{seed} ({e.get('algo')}) | {steps} | {e.get('wall_s')} "
                             f"| {e.get('steps_per_s', '–')} | {e.get('env_share', '–')} |")  # fmt: skip
    lines += ["", "Stage wall times (s): " + ", ".join(
        f"{k[:-7]} {v}" for k, v in timings.items() if k.endswith("_wall_s")), ""]  # fmt: skip
    glance = ["## At a glance", "",
              "| finding | " + " | ".join(f"{_family(e)} {c}" for e in config.envs for c in CONDITIONS) + " |",
              "|---|" + "---|" * (len(config.envs) * len(CONDITIONS))]  # fmt: skip
    glance.append("| RL beats its base at T = generous (engineering bar) | " + " | ".join(
        "yes" if any(fam_results[_family(e)]["delta1"][c][a][gi][1] > 0 for a in ARMS) else "no"
        for e in config.envs for c in CONDITIONS) + " |")  # fmt: skip
    glance.append("| 1. RL advantage shrinks as T tightens | " + " | ".join(
        _replicates(v).strip("*") for v in f1) + " |")  # fmt: skip
    glance.append("| 3. BudgetMix has the smallest worst-case regret of the unshaped arms | " + " | ".join(
        _replicates(v).strip("*") for v in f3) + " |")  # fmt: skip
    f4_cells = []
    for e in config.envs:
        for c in CONDITIONS:
            m = summary["finding4"][f"{_family(e)}/{c}"]["mean"]
            f4_cells.append(f"{m[0]:+.2f} [{m[1]:+.2f}, {m[2]:+.2f}]")
    glance.append("| 4. process reward, Δ Pass@1 over the grid | " + " | ".join(f4_cells) + " |")
    glance += ["", "Finding 2 (recovery vs single-step skill) is per arm, in its section below. "
               "Command, seeds and every setting: see the end of this report.", ""]  # fmt: skip
    lines[glance_at:glance_at] = glance
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(config).items()}
    lines += ["## Reproduce", "",
              "```bash",
              "python benchmarks/budgetmix.py" + (" --quick" if config.quick else "")
              + f" --out {config.out} --results {results}",
              "```", "",
              "Every job is a pure function of its settings and seed (training with one torch "
              "thread is bit-for-bit reproducible on the same build; evaluation does not depend "
              "on the worker count), and finished jobs are skipped on a rerun, so the run can "
              "be made in pieces (``--seeds``, ``--stages``). Settings:", "", "```json", json.dumps(fields, indent=1), "```", "",
              "Configurations tried before this run: [configurations.md](configurations.md).", ""]  # fmt: skip
    (results / "report.md").write_text("\n".join(lines) + "\n")
    (results / "summary.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    (results / "timings.json").write_text(json.dumps(timings, indent=1, default=str) + "\n")
    return results / "report.md"


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from budgetmix import Config

    run_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = json.loads((run_dir / "config.json").read_text())
    config = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()})
    timings = (
        json.loads((run_dir / "timings.json").read_text())
        if (run_dir / "timings.json").is_file()
        else {}
    )
    write_report(config, run_dir, out_dir, timings)
