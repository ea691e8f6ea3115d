"""Reports: ``report.md``, ``summary.json`` and the plots, rebuilt from the run logs alone.

A *report directory* is either one run directory (``run.json`` +
``episodes.jsonl`` + ``steps.jsonl``, as `evaluate` writes) or a directory
whose immediate subdirectories are run directories (as the main job writes).
`build_report` reads every run in it and writes, at its top:

- ``summary.json`` — ``{"runs": {label: run summary}, "comparisons": [...]}``;
- ``report.md`` — the tables;
- ``heatmap_<label>_<group>.png`` — a K x T heatmap per run and env group;
- ``pass_at_1_curve.png`` — Pass@(1,T) against T per run, one panel per group;
- ``recovery.png`` — optimal-step rates on track / right after an error, and
  recovery rates, per run;
- ``recovery_by_budget.png`` — the same rates at every budget T (runs with step records).

When the report directory also holds probe results (``probe_summary.json``,
written by `turnbudget.eval.probe`, at its top or in a subdirectory), the
report adds the probe tables and pairs each run's observational numbers with
the probe skills of the same agent.

Plots need matplotlib (the ``plot`` extra); it is imported only here, inside
the plotting functions, and without pyplot (no global figure state).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnbudget.eval.analysis import ALL, compare_runs, summarize_run

__all__ = [
    "build_report",
    "check_plotting",
    "find_runs",
    "load_run_summary",
    "plot_heatmap",
    "plot_pass1_curves",
    "plot_recovery",
    "render_markdown",
    "write_run_summary",
]

SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"


def find_runs(root: str | Path) -> list[Path]:
    """The run directories of a report directory: itself, or its subdirectories with ``run.json``."""
    from turnbudget.eval.logs import RUN_FILE

    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"No such run directory: {root}")
    if (root / RUN_FILE).exists():
        return [root]
    runs = sorted(p for p in root.iterdir() if (p / RUN_FILE).exists())
    if not runs:
        raise FileNotFoundError(
            f"{root} holds no evaluation run (no {RUN_FILE} in it or in its subdirectories)"
        )
    return runs


def load_run_summary(run_dir: str | Path, n_bootstrap: int = 1000) -> dict[str, Any]:
    """Summarise one run directory from its logs (``by_budget`` when it has step records).

    The logs are checked as they are read (`turnbudget.eval.logs`): a malformed
    record raises `turnbudget.eval.logs.LogError` naming the file, the line and the problem.
    """
    from turnbudget.eval.logs import (
        EPISODES_FILE,
        RUN_FILE,
        STEPS_FILE,
        read_config,
        read_episodes,
        read_steps,
    )

    run_dir = Path(run_dir)
    config = read_config(run_dir / RUN_FILE)
    episodes = read_episodes(run_dir / EPISODES_FILE, config)
    steps = None  # read only for logs whose episode records lack `budget_counts`
    lacking = [e for e in episodes if "budget_counts" not in e and not e.get("failed_to_run")]
    if lacking and config.record_steps and (run_dir / STEPS_FILE).exists():
        steps = read_steps(run_dir / STEPS_FILE, lacking)
    return summarize_run(config, episodes, n_bootstrap=n_bootstrap, steps=steps)


def _short(group: str) -> str:
    name = group.split("/")[-1]
    return re.sub(r"-v\d+$", "", name)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def _fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _grid_table(grid: Mapping[str, Any]) -> list[str]:
    ts, ks = grid["ts"], grid["ks"]
    lines = ["| K \\ T | " + " | ".join(str(t) for t in ts) + " |", "|---" * (len(ts) + 1) + "|"]
    for i, k in enumerate(ks):
        cells = [
            f"{grid['mean'][i][j]:.2f} [{grid['low'][i][j]:.2f}, {grid['high'][i][j]:.2f}]"
            for j in range(len(ts))
        ]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def _primary(entry: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    return ("rerun", entry["rerun"]) if "rerun" in entry else ("truncate", entry["truncate"])


def _pass1_row(grid: Mapping[str, Any]) -> list[float]:
    i = grid["ks"].index(1) if 1 in grid["ks"] else 0
    return list(grid["mean"][i])


def _failed_cell(run: Mapping[str, Any]) -> str:
    failed = run.get("failed_to_run") or {}
    if not failed.get("episodes"):
        return "0"
    kinds = ", ".join(f"{k}: {v}" for k, v in failed["by_kind"].items())
    return f"{failed['episodes']} ({kinds})"


def render_markdown(summary: Mapping[str, Any]) -> str:
    """The ``report.md`` text of a summary (``{"runs": ..., "comparisons": ...}``)."""
    runs: Mapping[str, Any] = summary["runs"]
    out = ["# Pass@(K,T) report", ""]
    out.append(
        "Pass@(K,T): the probability that at least one of K independent episodes, "
        "each capped at T turns, succeeds (unbiased estimator of Chen et al. 2021, "
        "averaged over tasks; 95% bootstrap intervals over tasks in brackets)."
    )
    out.append("")
    out += [
        "## Runs",
        "",
        "| run | agent | envs | tasks | n | mode | errors | reveal | failed to run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in runs.items():
        c = r["config"]
        out.append(
            f"| {label} | `{c['agent']}` | {', '.join(_short(e) for e in c['envs'])} | "
            f"{len(c['tasks'])} | {c['n']} | {c['mode']} | `{json.dumps(c['errors'])}` | "
            f"`{json.dumps(c['reveal'])}` | {_failed_cell(r)} |"
        )
    out.append("")
    if any(r.get("failed_to_run", {}).get("episodes") for r in runs.values()):
        out.append(
            "*Failed to run*: episodes whose agent or env raised, whose worker died or that "
            "timed out on every attempt. They are not the agent's failures: every table leaves "
            "them out, and a task with fewer than max(K) episodes that ran is left out of its "
            "grid. Rerunning the same command retries them."
        )
        out.append("")

    # Pass@(1,T) overview per group.
    groups = sorted({g for r in runs.values() for g in r["groups"]}, key=lambda g: (g == ALL, g))
    out += ["## Pass@(1,T) by run", ""]
    for group in groups:
        members = [(lbl, r) for lbl, r in runs.items() if group in r["groups"]]
        ts = members[0][1]["config"]["ts"]
        if any(r["config"]["ts"] != ts for _, r in members):
            continue
        out += [
            f"**{_short(group)}**",
            "",
            "| run | " + " | ".join(f"T={t}" for t in ts) + " |",
            "|---" * (len(ts) + 1) + "|",
        ]
        for lbl, r in members:
            out.append(
                f"| {lbl} | "
                + " | ".join(f"{x:.2f}" for x in _pass1_row(_primary(r["groups"][group])[1]))
                + " |"
            )
        out.append("")

    # Single-step and recovery analysis.
    out += [
        "## Single steps and recovery",
        "",
        "Observational, from the agents' own episodes at the largest budget. *Optimal*: the "
        "command starts a shortest plan from the state the agent saw. *On track*: no "
        "unrecovered error. *Error*: a distance-increasing event, self-inflicted (a non-optimal "
        "command) or injected; the agent is never blamed for an injection. *Wasted*: a valid "
        "non-optimal command that left the distance unchanged. *Recovered*: the distance came "
        "back to its pre-error value. These rates depend on where errors happen; the probe "
        "skills below, when present, do not.",
        "",
        "| run | group | success | optimal step | on track | after error | self-error / turn | wasted / turn | invalid / turn | injected / turn (raising distance) | recovery rate | turns to recover (mean) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for lbl, r in runs.items():
        for group, a in r["analysis"].items():
            out.append(
                f"| {lbl} | {_short(group)} | {_fmt(a['success_rate'])} | {_fmt(a['optimal_step_rate'])} | "
                f"{_fmt(a['optimal_step_rate_on_track'])} | {_fmt(a['optimal_step_rate_after_error'])} | "
                f"{_fmt(a['self_error_rate'], 3)} | {_fmt(a.get('wasted_rate'), 3)} | "
                f"{_fmt(a.get('invalid_rate'), 3)} | {_fmt(a['injected_error_rate'], 3)} "
                f"({a.get('errors_injected_increasing', '–')}) | "
                f"{_fmt(a['recovery_rate'])} | {_fmt(a['turns_to_recover_mean'], 1)} |"
            )
    out.append("")
    out += _budget_section(runs)
    out += _probe_section(summary)

    usage = [(lbl, r["agent_usage"]) for lbl, r in runs.items() if r.get("agent_usage")]
    if usage:
        out += [
            "## LLM usage",
            "",
            "Per decision, from the agents' own step records: admissible = the parsed "
            "command was an admissible one; latency includes retries and backoff.",
            "",
            "| run | decisions | admissible | tokens in / step | tokens out / step | "
            "latency / step (s) | retries | requests |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for lbl, u in usage:
            out.append(
                f"| {lbl} | {u['steps']} | {_fmt(u.get('admissible_rate'))} | "
                f"{_fmt(u.get('tokens_in_per_step'), 1)} | {_fmt(u.get('tokens_out_per_step'), 1)} | "
                f"{_fmt(u.get('latency_s_per_step'), 3)} | {u.get('retries', 0)} | "
                f"{u.get('requests', '-')} |"
            )
        out.append("")

    out += ["## Success by optimal solution length (long-horizon resilience)", ""]
    for lbl, r in runs.items():
        group = ALL if ALL in r["analysis"] else next(iter(r["analysis"]))
        rows = r["analysis"][group]["by_optimal_length"]
        if not rows:
            continue
        ts = [str(t) for t in r["config"]["ts"]]
        out += [
            f"**{lbl}** ({_short(group)}, Pass@(1,T))",
            "",
            "| optimal length | tasks | " + " | ".join(f"T={t}" for t in ts) + " |",
            "|---" * (len(ts) + 2) + "|",
        ]
        for row in rows:
            lo, hi = row["optimal_length"]
            out.append(
                f"| {lo}–{hi} | {row['tasks']} | "
                + " | ".join(_fmt(row["success_rate"][t]) for t in ts)
                + " |"
            )
        out.append("")

    comparisons = summary.get("comparisons") or []
    if comparisons:
        out += [
            "## Advantages across budgets",
            "",
            "Pass@(1,T) advantage of one run over another made under the same conditions: at the "
            "largest budget, at its peak, and the budget below which the advantage at the largest "
            "budget has halved (interpolated; – when there is no advantage at the largest budget).",
            "",
            "| better | worse | group | at max T | peak (at T) | halves at T |",
            "|---|---|---|---|---|---|",
        ]
        for c in comparisons:
            out.append(
                f"| {c['better']} | {c['worse']} | {_short(c['group'])} | {c['advantage_at_max_t']:.2f} | "
                f"{c['peak_advantage']:.2f} ({c['peak_t']}) | {_fmt(c['halving_budget'], 1)} |"
            )
        out.append("")

    out += ["## Pass@(K,T) grids", ""]
    for lbl, r in runs.items():
        for group, entry in r["groups"].items():
            for mode in ("truncate", "rerun"):
                if mode in entry:
                    out += [
                        f"### {lbl} · {_short(group)} · {mode}",
                        "",
                        *_grid_table(entry[mode]),
                        "",
                    ]
            if "gap" in entry:
                out += [
                    f"Rerun minus truncate: max |gap| {entry['gap']['max_abs']:.3f}, "
                    f"mean |gap| {entry['gap']['mean_abs']:.3f}.",
                    "",
                ]
    return "\n".join(out)


def _ci(s: Mapping[str, Any]) -> str:
    if s["mean"] is None:
        return "–"
    return f"{s['mean']:.2f} [{s['low']:.2f}, {s['high']:.2f}]"


def _budget_section(runs: Mapping[str, Any]) -> list[str]:
    """Per run (group "all"), the step analysis at every budget T, for all / won / lost episodes."""
    out: list[str] = []
    for lbl, r in runs.items():
        group = ALL if ALL in r["analysis"] else next(iter(r["analysis"]))
        table = r["analysis"][group].get("by_budget")
        if not table:
            continue
        if not out:
            out += [
                "## Single steps and recovery by budget",
                "",
                "The same analysis at every budget T (truncate mode: each episode's first T "
                "turns; rerun: the runs made at T), for all episodes and split into those that "
                "succeeded within T and those that did not. Cells: optimal on track / right "
                "after an error; recovery rate.",
                "",
            ]
        out += [
            f"**{lbl}** ({_short(group)})",
            "",
            "| T | episodes (won) | all: on track / after error | won: on track / after error "
            "| lost: on track / after error | recovery rate (won / lost) | wasted / turn |",
            "|---|---|---|---|---|---|---|",
        ]
        for t, cell in table.items():
            a, w, f = cell["all"], cell["success"], cell["failure"]
            out.append(
                f"| {t} | {a['episodes']} ({w['episodes']}) | "
                f"{_fmt(a['optimal_step_rate_on_track'])} / {_fmt(a['optimal_step_rate_after_error'])} | "
                f"{_fmt(w['optimal_step_rate_on_track'])} / {_fmt(w['optimal_step_rate_after_error'])} | "
                f"{_fmt(f['optimal_step_rate_on_track'])} / {_fmt(f['optimal_step_rate_after_error'])} | "
                f"{_fmt(a['recovery_rate'])} ({_fmt(w['recovery_rate'])} / {_fmt(f['recovery_rate'])}) | "
                f"{_fmt(a['wasted_rate'], 3)} |"
            )
        out.append("")
    return out


def _probe_section(summary: Mapping[str, Any]) -> list[str]:
    from turnbudget.eval.probe_report import render_probe_markdown

    probes = summary.get("probes") or []
    if not probes:
        return []
    out: list[str] = []
    for p in probes:
        out += [*render_probe_markdown(p).splitlines(), ""]
    pairs = summary.get("paired") or []
    if pairs:
        out += [
            "### Observational rates beside probe skills",
            "",
            "Left: rates from the run's own episodes (where errors happened to occur). Right: "
            "skills on fixed probe states, normalized so that RandomAgent scores 0.",
            "",
            "| run | optimal on track | optimal after error | recovery rate | single-step skill "
            "| recovery skill | prompt recovery skill | probe recovered (random) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in pairs:
            s, rs = row["single_step_skill"], row["recovery_skill"]
            out.append(
                f"| {row['run']} | {_fmt(row['optimal_on_track'])} | "
                f"{_fmt(row['optimal_after_error'])} | {_fmt(row['recovery_rate'])} | "
                f"{_ci(s)} | {_ci(rs)} | "
                f"{_ci(row['prompt_recovery_skill'])} | {_fmt(row['probe_recovery_rate'])} ({_fmt(row['probe_baseline_recovery_rate'])}) |"
            )
        out.append("")
    return out


def write_run_summary(out: str | Path, run_summary: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``summary.json`` and ``report.md`` for a single run (no plots)."""
    summary = {"runs": {run_summary["label"]: run_summary}, "comparisons": []}
    _write(Path(out), summary)
    return summary


def _write(root: Path, summary: Mapping[str, Any]) -> None:
    (root / SUMMARY_FILE).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    (root / REPORT_FILE).write_text(render_markdown(summary) + "\n")


def build_report(
    root: str | Path,
    *,
    plots: bool = True,
    n_bootstrap: int = 1000,
    summaries: Mapping[Path, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Rebuild ``summary.json``, ``report.md`` and (with ``plots``) the PNGs from the logs in ``root``.

    ``summaries`` maps run directories to run summaries already computed from
    their complete logs with the same ``n_bootstrap`` (what `evaluate`
    returns in ``EvalResult.summary``); those runs are not summarised again.
    """
    root = Path(root)
    known = {Path(k).resolve(): v for k, v in (summaries or {}).items()}
    runs: dict[str, Any] = {}
    for run_dir in find_runs(root):
        s = known.get(run_dir.resolve()) or load_run_summary(run_dir, n_bootstrap=n_bootstrap)
        if s["label"] in runs:
            raise ValueError(
                f"Two runs in {root} share the label {s['label']!r}; labels must be unique"
            )
        runs[s["label"]] = s
    summary: dict[str, Any] = {"runs": runs, "comparisons": compare_runs(runs)}
    from turnbudget.eval.probe_report import find_probe_summaries, pair_with_runs

    probes = [json.loads(p.read_text()) for p in find_probe_summaries(root)]
    if probes:
        summary["probes"] = probes
        summary["paired"] = pair_with_runs(probes, runs)
    _write(root, summary)
    if plots:
        write_plots(root, summary)
    return summary


def write_plots(root: str | Path, summary: Mapping[str, Any]) -> list[Path]:
    """All PNGs of a summary; returns their paths."""
    root = Path(root)
    paths = []
    for label, r in summary["runs"].items():
        for group, entry in r["groups"].items():
            mode, grid = _primary(entry)
            path = root / f"heatmap_{_slug(label)}_{_slug(_short(group))}.png"
            plot_heatmap(grid, f"{label} · {_short(group)} ({mode})", path)
            paths.append(path)
    paths.append(plot_pass1_curves(summary, root / "pass_at_1_curve.png"))
    paths.append(plot_recovery(summary, root / "recovery.png"))
    if any(_by_budget(r) for r in summary["runs"].values()):
        paths.append(plot_recovery_by_budget(summary, root / "recovery_by_budget.png"))
    return paths


def _by_budget(run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    analysis = run["analysis"]
    return analysis[ALL if ALL in analysis else next(iter(analysis))].get("by_budget")


def plot_recovery_by_budget(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Per run, against T: optimal-step rate on track and right after an error, recovery rate."""
    import numpy as np

    panels = [
        ("optimal on track", "optimal_step_rate_on_track"),
        ("optimal right after an error", "optimal_step_rate_after_error"),
        ("errors recovered", "recovery_rate"),
    ]
    fig = _figure(3.4 * len(panels), 3.2)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, key) in zip(axes, panels, strict=True):
        for label, r in summary["runs"].items():
            table = _by_budget(r)
            if not table:
                continue
            ts = [int(t) for t in table]
            values = [np.nan if c["all"][key] is None else c["all"][key] for c in table.values()]
            ax.plot(ts, values, marker="o", ms=3, label=label)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("turn budget T")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize=6, loc="lower right")
    fig.savefig(path)
    return Path(path)


PLOT_HINT = (
    "plots need matplotlib: pip install 'turnbudget[plot]' (or skip them: --no-plots / plots=False)"
)


def check_plotting() -> None:
    """Raise ``ImportError`` now, not after a long run, when matplotlib is missing."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError(PLOT_HINT)


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(PLOT_HINT) from None
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def plot_heatmap(grid: Mapping[str, Any], title: str, path: str | Path) -> Path:
    """A K x T heatmap of Pass@(K,T) means, each cell annotated."""
    import numpy as np

    ks, ts = grid["ks"], grid["ts"]
    mean = np.asarray(grid["mean"])
    fig = _figure(1.2 + 0.62 * len(ts), 1.0 + 0.42 * len(ks))
    ax = fig.add_subplot()
    im = ax.imshow(mean, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(ts)), [str(t) for t in ts])
    ax.set_yticks(range(len(ks)), [str(k) for k in ks])
    ax.set_xlabel("turn budget T")
    ax.set_ylabel("K")
    ax.set_title(f"Pass@(K,T) — {title}", fontsize=9)
    for i in range(len(ks)):
        for j in range(len(ts)):
            v = mean[i, j]
            ax.text(
                j,
                i,
                f"{v:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if v < 0.6 else "black",
            )
    fig.colorbar(im, ax=ax, shrink=0.9)
    fig.savefig(path)
    return Path(path)


def plot_pass1_curves(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Pass@(1,T) against T with its bootstrap band, one line per run, one panel per env group."""
    runs = summary["runs"]
    groups = sorted({g for r in runs.values() for g in r["groups"]}, key=lambda g: (g == ALL, g))
    fig = _figure(3.6 * len(groups), 3.2)
    axes = fig.subplots(1, len(groups), squeeze=False)[0]
    for ax, group in zip(axes, groups, strict=True):
        for label, r in runs.items():
            if group not in r["groups"]:
                continue
            _, grid = _primary(r["groups"][group])
            i = grid["ks"].index(1) if 1 in grid["ks"] else 0
            ts = grid["ts"]
            (line,) = ax.plot(ts, grid["mean"][i], marker="o", ms=3, label=label)
            ax.fill_between(ts, grid["low"][i], grid["high"][i], alpha=0.15, color=line.get_color())
        ax.set_title(_short(group), fontsize=9)
        ax.set_xlabel("turn budget T")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Pass@(1,T)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.savefig(path)
    return Path(path)


def plot_recovery(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Per run: optimal-step rate overall, on track and right after an error; recovery rate."""
    import numpy as np

    runs = summary["runs"]
    labels = list(runs)
    stats = [
        runs[lbl]["analysis"][
            ALL if ALL in runs[lbl]["analysis"] else next(iter(runs[lbl]["analysis"]))
        ]
        for lbl in labels
    ]
    series = [
        ("optimal step", "optimal_step_rate"),
        ("on track", "optimal_step_rate_on_track"),
        ("right after error", "optimal_step_rate_after_error"),
        ("errors recovered", "recovery_rate"),
    ]
    fig = _figure(max(5.0, 1.1 * len(labels) + 2.0), 3.8)
    ax_rate, ax_turns = fig.subplots(1, 2, width_ratios=[3, 2])
    x = np.arange(len(labels))
    width = 0.8 / len(series)
    for s, (name, key) in enumerate(series):
        values = [np.nan if st[key] is None else st[key] for st in stats]
        ax_rate.bar(x + (s - (len(series) - 1) / 2) * width, values, width, label=name)
    ax_rate.set_xticks(x, labels, rotation=30, ha="right", fontsize=7)
    ax_rate.set_ylim(0, 1.05)
    ax_rate.set_ylabel("rate")
    ax_rate.set_title("single-step quality vs recovery", fontsize=9)
    fig.legend(
        *ax_rate.get_legend_handles_labels(),
        loc="outside lower center",
        ncols=len(series),
        fontsize=7,
    )
    data = [st["turns_to_recover"] or [np.nan] for st in stats]
    ax_turns.boxplot(data, showfliers=False)
    ax_turns.set_xticks(range(1, len(labels) + 1), labels, rotation=30, ha="right", fontsize=7)
    ax_turns.set_ylabel("turns to recover")
    ax_turns.set_title("turns to recover an error", fontsize=9)
    fig.savefig(path)
    return Path(path)
