"""The main job's maths and report: Pass@(K,T) per training seed, findings 1 and 2, controls.

`pass_at_kt.py` plays the episodes and the probes; this module turns them
into numbers and words. Every interval over trained policies is
`turnbudget.eval.estimator.crossed_mean` over training seeds (a t-interval at
the level of seeds, the tasks crossed with them), on paired differences
where an arm is compared with its base: arm minus its own seed's base on the
same tasks.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget.eval.estimator import crossed_mean, pass_at_kt
from turnbudget.eval.probes.validate import MIN_TASKS_TO_RESOLVE

__all__ = [
    "PASS_RANGE",
    "TASK_COLUMNS",
    "controls_verdict",
    "finding_1",
    "finding_2",
    "per_task_grids",
    "task_table",
    "write_report",
]

#: Finding 1 is testable where the base's Pass@1 at the tight budget lies in this range
#: (outside it, a floor or a ceiling decides the contrast, not the policies).
PASS_RANGE = (0.1, 0.9)
_SKILLS = ("single_step_skill", "recovery_specific_skill")


# --------------------------------------------------------------------------- Pass@(K,T)


def per_task_grids(
    episodes: Sequence[Mapping[str, Any]], ks: Sequence[int], ts: Sequence[int],
    ratios: Sequence[float],
) -> dict[str, np.ndarray]:  # fmt: skip
    """Per-task Pass@(K,T) of one run (truncate mode: one episode per repeat at max T).

    ``{"abs": [k, t, task], "rel": [k, c, task]}``, tasks in seed order; the
    relative budget of a task is ``floor(c · d*)`` turns, d* its optimal length.
    """
    turns: dict[int, list[int | None]] = defaultdict(list)
    optimal: dict[int, int] = {}
    for e in episodes:
        turns[int(e["seed"])].append(e["first_success_turn"])
        optimal[int(e["seed"])] = int(e["initial_distance"])
    seeds = sorted(turns)
    absolute = np.stack([pass_at_kt(turns[s], ks, ts) for s in seeds], axis=-1)
    relative = np.stack([_at_ratios(turns[s], ks, ratios, optimal[s]) for s in seeds], axis=-1)
    return {"abs": absolute, "rel": relative}


def _at_ratios(
    turns: Sequence[int | None], ks: Sequence[int], ratios: Sequence[float], optimal: int
) -> np.ndarray:
    """One task's Pass@(K, floor(c · d*)) for each ratio c, [k, c]: two ratios that give the
    task one budget (1.0 and 1.1 of d* = 6) read the same column (`pass_at_kt` takes each T
    once; they failed the report after the whole job)."""
    budgets = [math.floor(c * optimal) for c in ratios]
    distinct = sorted(set(budgets))
    grid = pass_at_kt(turns, ks, distinct)
    return grid[:, [distinct.index(b) for b in budgets]]


def _interval(x: np.ndarray, bounds: tuple[float, float]) -> dict[str, float]:
    mean, low, high = crossed_mean(x, bounds=bounds)
    return {"mean": round(mean, 4), "low": round(low, 4), "high": round(high, 4)}


def controls_verdict(controls: Sequence[Mapping[str, Any]]) -> str:
    """The controls' verdict in words: a failed check, else one left inconclusive by too few
    probe tasks (`turnbudget validate`'s exit 3), else a pass."""
    if any(c["ok"] is False for c in controls):
        return "SOME CHECKS FAIL"
    inconclusive = sum(bool(c.get("inconclusive")) for c in controls)
    if inconclusive:
        return (
            f"INCONCLUSIVE: {inconclusive} of {len(controls)} checks had too few probe tasks to "
            f"resolve (--probe-tasks {MIN_TASKS_TO_RESOLVE} or more)"
        )
    return "every check passes"


def _seeds_and_tasks(per_seed: np.ndarray, by_tasks: np.ndarray, bound: float) -> dict[str, float]:
    """The mean of ``per_seed`` with the seeds' t-interval (`crossed_mean`), widened by the
    spread of the seeds' mean over task resamples ``by_tasks`` at the normal quantile: the two
    halves add in squares (none given: the seeds' interval), clipped to ±``bound``."""
    mean, low, high = crossed_mean(per_seed[:, None], bounds=(-bound, bound))
    by_tasks = by_tasks[np.isfinite(by_tasks)]
    if by_tasks.size > 1:
        half = math.hypot(max(mean - low, high - mean), 1.959964 * float(np.std(by_tasks, ddof=1)))
        low, high = max(-bound, mean - half), min(bound, mean + half)
    return {"mean": round(mean, 4), "low": round(low, 4), "high": round(high, 4)}


def _verdict(value: Mapping[str, float], positive: str, negative: str) -> str:
    if value["low"] > 0:
        return positive
    if value["high"] < 0:
        return negative
    return "inconclusive (the interval holds 0)"


def arm_tables(
    grids: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], scale: str
) -> dict[str, Any]:
    """Pass@(K,T) of each arm (mean over seeds, interval over seeds) and its paired gain over
    the base, on ``scale`` (``"abs"`` or ``"rel"``): ``{arm: {"pass": [k][t], "delta": ...}}``."""
    base = grids["base"]
    seeds = sorted(base)
    out: dict[str, Any] = {}
    for arm, by_seed in grids.items():
        x = np.stack([by_seed[s][scale] for s in seeds])  # [seed, k, t, task]
        d = x - np.stack([base[s][scale] for s in seeds])
        shape = x.shape[1:3]
        out[arm] = {
            "pass": [[_interval(x[:, i, j], (0, 1)) for j in range(shape[1])]
                     for i in range(shape[0])],
            "delta": None if arm == "base" else [
                [_interval(d[:, i, j], (-1, 1)) for j in range(shape[1])]
                for i in range(shape[0])
            ],
        }  # fmt: skip
    return out


def finding_1(
    grids: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]], scale: str,
    budgets: Sequence[float], tight_budget: float,
) -> dict[str, Any]:  # fmt: skip
    """Does RL's gain over the base shrink at tight budgets? (Pass@1, ``scale``)

    The tight budget, ``tight_budget`` (one of ``budgets`` below the largest), is fixed
    before the data, as the BudgetMix replication's is: chosen as the smallest budget
    whose base Pass@1 came out in `PASS_RANGE`, the base's own noise chose it, and the
    base is half of every gain, so an arm no better than the base at any budget was found
    to differ 6.1-6.6% of the time at a 95% level (5 seeds whose spread is 2-3 logits;
    5.2% with the budget fixed). Where the base's Pass@1 there lies outside `PASS_RANGE`
    (a floor or a ceiling), the finding is untestable. The generous budget is the largest.
    The contrast, per seed and task, is ``(arm - base)(generous) - (arm - base)(tight)``:
    above 0, the gain shrinks as the budget tightens (the finding replicates). "RL" pools
    the arms (their mean gain per seed: every arm starts from its seed's base).
    """
    base = grids["base"]
    seeds = sorted(base)
    base_x = np.stack([base[s][scale][0] for s in seeds])  # [seed, t, task] at K = 1
    base_pass = base_x.mean(axis=(0, 2))
    generous = len(budgets) - 1
    tight = list(budgets).index(tight_budget)
    if tight == generous:
        raise ValueError(f"Expect the tight budget {tight_budget:g} below the largest of {budgets}")
    result: dict[str, Any] = {
        "scale": scale,
        "base_pass1": [round(float(p), 4) for p in base_pass],
        "generous": budgets[generous],
        "tight": budgets[tight],
        "arms": {},
    }
    if not PASS_RANGE[0] <= base_pass[tight] <= PASS_RANGE[1]:
        result["verdict"] = (
            f"untestable: the base's Pass@1 at the tight budget ({tight_budget:g}) is "
            f"{base_pass[tight]:.2f}, outside {list(PASS_RANGE)} (a floor or a ceiling)"
        )
        return result
    arms = [a for a in grids if a != "base"]
    gains = {}
    for arm in arms:
        x = np.stack([grids[arm][s][scale][0] for s in seeds]) - base_x
        gains[arm] = x
    gains["RL (arms pooled)"] = np.mean([gains[a] for a in arms], axis=0)
    for arm, g in gains.items():
        result["arms"][arm] = {
            "gain_tight": _interval(g[:, tight], (-1, 1)),
            "gain_generous": _interval(g[:, generous], (-1, 1)),
            "shrink": _interval(g[:, generous] - g[:, tight], (-2, 2)),
        }
    result["verdict"] = _verdict(
        result["arms"]["RL (arms pooled)"]["shrink"],
        "replicates: RL's gain over the base is smaller at the tight budget",
        "does not replicate: RL's gain over the base is larger at the tight budget",
    )
    return result


#: The columns of a probe task table (`task_table`): `turnbudget.eval.probes.summary.per_task`'s.
TASK_COLUMNS = ("optimal", "judged", "specific", "pairs")
#: Resamples of the probe tasks in finding 2's intervals.
TASK_BOOTSTRAP = 1000


def task_table(
    rows: Mapping[tuple[str, int], Mapping[str, float]], tasks: Sequence[Any]
) -> np.ndarray:
    """An agent's `per_task` counts as an array [task, `TASK_COLUMNS`], rows in ``tasks`` order
    (a task it has no record of: zeros)."""
    return np.array([[float(rows.get(t, {}).get(c, 0.0)) for c in TASK_COLUMNS] for t in tasks])


def _task_skills(table: np.ndarray, baseline: np.ndarray, index: np.ndarray) -> np.ndarray:
    """An agent's two skills, [resample, (single-step, recovery-specific)], on the task sets of
    ``index`` [resample, task]: as the probe summary computes them (single steps over the tasks
    where the agent and the random baseline both have a judged answer)."""
    keep = ((table[:, 1] > 0) & (baseline[:, 1] > 0))[:, None]
    mine, chance = (
        (table[:, :2] * keep)[index].sum(axis=1),
        (baseline[:, :2] * keep)[index].sum(axis=1),
    )
    specific = table[:, 2:][index].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p, r = mine[:, 0] / mine[:, 1], chance[:, 0] / chance[:, 1]
        return np.stack([(p - r) / (1.0 - r), specific[:, 0] / specific[:, 1]], axis=1)


def finding_2(
    skills: Mapping[str, Mapping[int, Mapping[str, float]]],
    tables: Mapping[str, Mapping[int, np.ndarray]] | None = None,
    baseline: np.ndarray | None = None,
) -> dict[str, Any]:
    """Is RL's gain in recovery-specific skill larger than in single-step skill? (probes)

    Per seed: the arm's probe skill minus its own base's, on the same probe
    states; the contrast is Δ recovery-specific − Δ single-step. Both skills are
    normalized so that chance (the random baseline) scores 0 and the oracle 1
    on single steps. The interval is over training seeds and over the probe tasks, which
    every seed shares: the seeds' t-interval (one value per seed) and, given each policy's
    `task_table` and the baseline's, the spread of the seeds' mean under a bootstrap of the
    tasks (one resample for every policy), each part at its own quantile. Over the seeds
    alone, it covered the skills' value on Maze-Easy's tasks 58-69% of the time at 24 probe
    tasks: the tasks drawn move every seed alike, which no spread between seeds shows.
    """
    seeds = sorted(skills["base"])
    arms = [a for a in skills if a != "base"]
    delta = {
        arm: {k: np.array([skills[arm][s][k] - skills["base"][s][k] for s in seeds])
              for k in _SKILLS}
        for arm in arms
    }  # fmt: skip
    delta["RL (arms pooled)"] = {k: np.mean([delta[a][k] for a in arms], axis=0) for k in _SKILLS}
    spread: dict[str, np.ndarray] = {}  # arm -> [resample, (d_single, d_recovery, contrast)]
    if tables is not None and baseline is not None:
        index = np.random.default_rng(0).integers(0, len(baseline), (TASK_BOOTSTRAP, len(baseline)))
        boot = {a: np.mean([_task_skills(tables[a][s], baseline, index) for s in seeds], axis=0)
                for a in skills}  # fmt: skip
        gains = {a: boot[a] - boot["base"] for a in arms}
        gains["RL (arms pooled)"] = np.mean([gains[a] for a in arms], axis=0)
        spread = {a: np.column_stack([g, g[:, 1] - g[:, 0]]) for a, g in gains.items()}
    result: dict[str, Any] = {"arms": {}}
    for arm, d in delta.items():
        columns = (d["single_step_skill"], d["recovery_specific_skill"],
                   d["recovery_specific_skill"] - d["single_step_skill"])  # fmt: skip
        result["arms"][arm] = {
            name: _seeds_and_tasks(x, spread.get(arm, np.empty((0, 3)))[:, j], bound)
            for j, (name, x, bound) in enumerate(
                zip(("d_single", "d_recovery", "contrast"), columns, (2, 2, 4), strict=True)
            )
        }
    result["verdict"] = _verdict(
        result["arms"]["RL (arms pooled)"]["contrast"],
        "replicates: RL gains more in recovery-specific skill than in single-step skill",
        "does not replicate: RL gains more in single-step skill than in recovery-specific skill",
    )
    return result


# --------------------------------------------------------------------------- report


def _fmt(v: Mapping[str, float] | None, sign: bool = False) -> str:
    if v is None:
        return "–"
    f = "{:+.2f}" if sign else "{:.2f}"
    return f"{f.format(v['mean'])} [{f.format(v['low'])}, {f.format(v['high'])}]"


def _pass_rows(
    tables: Mapping[str, Any], reference: Mapping[str, np.ndarray], k_index: int, key: str
) -> list[str]:
    rows = []
    for label, grid in reference.items():  # [k, t, task]
        cells = [f"{v:.2f}" for v in grid[k_index].mean(axis=-1)]
        rows.append(f"| {label} (reference) | " + " | ".join(cells) + " |")
    for arm, t in tables.items():
        if t[key] is not None:
            rows.append(f"| {arm} | " + " | ".join(_fmt(v, key == "delta") for v in t[key][k_index]) + " |")  # fmt: skip
    return rows


def _table(title: str, budgets: list[str], rows: list[str]) -> list[str]:
    head = "| agent | " + " | ".join(budgets) + " |"
    return [title, "", head, "|---" * (len(budgets) + 1) + "|", *rows, ""]


def write_report(
    out: Path,
    config: Mapping[str, Any],
    grids: Mapping[str, Mapping[int, Mapping[str, np.ndarray]]],
    reference: Mapping[str, Mapping[str, np.ndarray]],
    skills: Mapping[str, Mapping[int, Mapping[str, float]]],
    reference_skills: Mapping[str, Mapping[str, float]],
    controls: Sequence[Mapping[str, Any]],
    controls_text: str,
    command: str,
    figure: Path | None,
    probe_tables: tuple[Mapping[str, Mapping[int, np.ndarray]], np.ndarray] | None = None,
) -> dict[str, Any]:
    """Write ``out/report.md`` and ``out/summary.json``; return the summary. ``probe_tables``:
    each policy's `task_table` [arm][seed] and the random baseline's (finding 2's intervals
    then cover the probe tasks too)."""
    ks, ts, ratios = list(config["ks"]), list(config["ts"]), list(config["ratios"])
    tables = {scale: arm_tables(grids, scale) for scale in ("rel", "abs")}
    f1 = {scale: finding_1(grids, scale, budgets, tight)
          for scale, budgets, tight in (("rel", ratios, config["tight_ratio"]),
                                        ("abs", ts, config["tight_t"]))}  # fmt: skip
    f2 = finding_2(skills, *(probe_tables or (None, None)))
    # (a check too few probe tasks left unresolved is no pass: `turnbudget validate` exits 3)
    inconclusive = sum(bool(c.get("inconclusive")) for c in controls)
    controls_pass = all(c["ok"] is not False for c in controls) and not inconclusive
    summary = {
        "config": dict(config),
        "tables": tables,
        "finding_1": f1,
        "finding_2": f2,
        "skills": {a: {str(s): v for s, v in by.items()} for a, by in skills.items()},
        "reference_skills": reference_skills,
        "controls_pass": controls_pass,
        "controls_inconclusive": inconclusive,
        "controls": list(controls),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")

    rel_names = [f"c={c:g}" for c in ratios]
    abs_names = [f"T={t}" for t in ts]
    seeds = sorted(grids["base"])
    env = config["env"].split("/")[-1]
    lines = [
        "# The main job: do RL's gains survive a tight turn budget, and where do they come from?",
        "",
        f"Produced by `{command}` (every number and figure here; `benchmarks/pass_at_kt.py`).",
        "",
        "## Setup",
        "",
        f"- Game: {config['env']}; evaluation tasks 0..{config['tasks'] - 1} (training worlds "
        f"use seeds >= 1,000,000), n = {config['n']} episodes per task, K = {ks}.",
        f"- Agents: the zoo's `policy:zoo/{config['family']}/<arm>/seed<k>`, arms "
        f"{list(grids)}, training seeds {seeds} (each arm starts from its seed's base; how "
        "each was trained: its `card.json`, `turnbudget list --zoo`); reference rows: "
        "random and the ε-oracles. Every policy is budget-blind, so one episode at max T "
        "scores every budget (truncate mode).",
        f"- Budgets: relative to each task's optimal length d* (T = floor(c · d*), c in "
        f"{ratios}) and absolute (T in {ts}).",
        "- Intervals: 95%, over training seeds (`crossed_mean`: a t-interval at the level of "
        "seeds, tasks crossed with them, tasks treated as a sample; a rate's widened near 0 "
        "and 1 to hold Wilson's at its effective number of cells); gains are paired: "
        "each arm minus its own seed's base on the same tasks. Finding 2's probe skills: the "
        "seeds' t-interval widened by a bootstrap of the probe tasks, which every seed shares "
        "(the two halves added in squares). Reference rows are means over tasks.",
        "",
        "## Verdicts",
        "",
    ]
    pooled = "RL (arms pooled)"
    for scale, name in (("rel", "relative budgets"), ("abs", "absolute budgets")):
        r = f1[scale]
        unit = "c" if scale == "rel" else "T"
        if not r["arms"]:  # (untestable)
            lines.append(f"- **Finding 1** ({name}): {r['verdict']}.")
            continue
        a = r["arms"][pooled]
        lines.append(
            f"- **Finding 1** ({name}: tight {unit} = {r['tight']:g}, fixed before the data; "
            f"generous {unit} = "
            f"{r['generous']:g}): {r['verdict']}. RL's ΔPass@1 over the base: "
            f"{_fmt(a['gain_tight'], True)} at the tight budget, "
            f"{_fmt(a['gain_generous'], True)} at the generous one; generous − tight = "
            f"{_fmt(a['shrink'], True)}."
        )
    a = f2["arms"][pooled]
    lines += [
        f"- **Finding 2** (probes): {f2['verdict']}. Δ recovery-specific skill "
        f"{_fmt(a['d_recovery'], True)}, Δ single-step skill {_fmt(a['d_single'], True)}; "
        f"recovery − single-step = {_fmt(a['contrast'], True)}.",
        f"- **Controls**: {controls_verdict(controls)} "
        "(the measurement's null and positive controls, below): the probe metrics are "
        "trusted only when they do.",
        "",
    ]
    if figure is not None:
        lines += [
            f"![{env}: Pass@1 and RL's gain against the budget; probe gains]({figure.name})",
            "",
        ]
    lines += ["## Finding 1 per arm", ""]
    for scale, unit in (("rel", "c"), ("abs", "T")):
        r = f1[scale]
        if not r["arms"]:
            continue
        lines += [
            f"{'Relative' if scale == 'rel' else 'Absolute'} budgets (tight {unit} = "
            f"{r['tight']:g}, generous {unit} = {r['generous']:g}; base Pass@1 per budget "
            f"{r['base_pass1']}):",
            "",
            "| arm | Δ at tight | Δ at generous | generous − tight |",
            "|---|---|---|---|",
            *[f"| {arm} | {_fmt(v['gain_tight'], True)} | {_fmt(v['gain_generous'], True)} | "
              f"{_fmt(v['shrink'], True)} |" for arm, v in r["arms"].items()],
            "",
        ]  # fmt: skip
    lines += [
        "## Finding 2 per arm (probes)",
        "",
        "| arm | Δ single-step skill | Δ recovery-specific skill | recovery − single-step |",
        "|---|---|---|---|",
        *[f"| {arm} | {_fmt(v['d_single'], True)} | {_fmt(v['d_recovery'], True)} | "
          f"{_fmt(v['contrast'], True)} |" for arm, v in f2["arms"].items()],
        "",
        "Probe skills (mean over seeds; reference agents: their own value): "
        + "; ".join(
            f"{a} single-step {np.mean([s['single_step_skill'] for s in by.values()]):+.2f}, "
            f"recovery-specific {np.mean([s['recovery_specific_skill'] for s in by.values()]):+.2f}"
            for a, by in skills.items()
        )
        + "; "
        + "; ".join(
            f"{a} {v['single_step_skill']:+.2f} / {v['recovery_specific_skill']:+.2f}"
            for a, v in reference_skills.items()
        )
        + ".",
        "",
    ]  # fmt: skip
    for k_index, k in enumerate(ks):
        if k not in (1, max(ks)):
            continue
        lines += _table(f"## Pass@({k},T), relative budgets T = floor(c · d*)", rel_names,
                        _pass_rows(tables["rel"], {a: g["rel"] for a, g in reference.items()},
                                   k_index, "pass"))  # fmt: skip
        lines += _table(f"## Pass@({k},T), absolute budgets", abs_names,
                        _pass_rows(tables["abs"], {a: g["abs"] for a, g in reference.items()},
                                   k_index, "pass"))  # fmt: skip
    lines += _table("## ΔPass@(1,T) over the base, relative budgets", rel_names,
                    _pass_rows(tables["rel"], {}, 0, "delta"))  # fmt: skip
    lines += _table("## ΔPass@(1,T) over the base, absolute budgets", abs_names,
                    _pass_rows(tables["abs"], {}, 0, "delta"))  # fmt: skip
    lines += [
        "## Controls (`turnbudget validate`'s checks, on this job's probe states)",
        "",
        "A null check (`0`, `≈0`, `≤0`) is judged on its simultaneous interval (Bonferroni "
        "over the job's null checks: a sound metric fails one in at most 5% of runs), the "
        "others on their 95% interval or mean.",
        "",
        "```",
        controls_text,
        "```",
        "",
    ]
    (out / "report.md").write_text("\n".join(lines))
    return summary


def plot(out: Path, summary: Mapping[str, Any], figure: Path) -> None:
    """The headline figure: Pass@(1, c·d*) per arm, ΔPass@1 over the base, probe gains."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = summary["config"]["ratios"]
    tables = summary["tables"]["rel"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for i, (arm, t) in enumerate(tables.items()):
        color = f"C{i}"  # one color per arm in both panels
        row = t["pass"][0]
        axes[0].plot(ratios, [v["mean"] for v in row], marker="o", label=arm, color=color)
        axes[0].fill_between(
            ratios, [v["low"] for v in row], [v["high"] for v in row], alpha=0.15, color=color
        )
        if t["delta"] is not None:
            d = t["delta"][0]
            axes[1].plot(ratios, [v["mean"] for v in d], marker="o", label=arm, color=color)
            axes[1].fill_between(
                ratios, [v["low"] for v in d], [v["high"] for v in d], alpha=0.15, color=color
            )
    axes[0].set(xlabel="budget c = T / d*", ylabel="Pass@1", title="Pass@(1, c·d*), 95% over seeds")
    axes[1].axhline(0, color="grey", lw=0.8)
    axes[1].set(
        xlabel="budget c = T / d*", ylabel="ΔPass@1 over base", title="RL's gain over its base"
    )
    arms = list(summary["finding_2"]["arms"])
    x = np.arange(len(arms))
    for offset, key, name in (
        (-0.18, "d_single", "Δ single-step"),
        (0.18, "d_recovery", "Δ recovery-specific"),
    ):
        vals = [summary["finding_2"]["arms"][a][key] for a in arms]
        mean = np.array([v["mean"] for v in vals])
        err = np.array(
            [
                [m - v["low"] for m, v in zip(mean, vals)],
                [v["high"] - m for m, v in zip(mean, vals)],
            ]
        )
        axes[2].bar(x + offset, mean, 0.36, yerr=err, capsize=3, label=name)
    axes[2].axhline(0, color="grey", lw=0.8)
    axes[2].set_xticks(x, arms, rotation=20, fontsize=8)
    axes[2].set(ylabel="skill gain over base", title="Probe skills: RL minus its base")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(figure, dpi=90)
    plt.close(fig)
