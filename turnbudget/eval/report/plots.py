"""Plots: K x T heatmaps, Pass@(1,T) curves and the recovery figures of a report's summary.

matplotlib (the ``plot`` extra) is imported only inside the plotting
functions, and without pyplot (no global figure state).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnbudget._checks import check_dir_path
from turnbudget.eval.analysis import ALL, grid_problem
from turnbudget.eval.report._atomic import one_line, save_figure
from turnbudget.eval.report.markdown import _primary, _short, _slug, check_report_summary
from turnbudget.records.files import REPORT_HEATMAPS

__all__ = [
    "PASS1_CURVE_FILE",
    "PLOT_HINT",
    "check_plotting",
    "heatmap_names",
    "plot_heatmap",
    "plot_pass1_curves",
    "plot_recovery",
    "plot_recovery_by_budget",
    "write_plots",
]

#: The Pass@(1,T) curves, written for every report with plots.
PASS1_CURVE_FILE = "pass_at_1_curve.png"


def write_plots(root: str | Path, summary: Mapping[str, Any]) -> list[Path]:
    """All PNGs of a summary; returns their paths. The Pass@(1,T) curve comes last: a report
    whose curve is newer than its records has all its plots (`report_is_current` reads it so;
    a build stopped after it had left the last plots of an earlier run in place)."""
    root = check_dir_path(root, "root")  # ("" was the working directory)
    check_report_summary(summary)
    paths = []
    names = heatmap_names(summary)
    by_budget = any(_by_budget(r) for r in summary["runs"].values())
    # (an earlier report's plots of runs or groups no longer there stayed beside this one)
    stale = [p for p in root.glob(REPORT_HEATMAPS) if p.name not in set(names.values())]
    if not by_budget:
        stale.append(root / "recovery_by_budget.png")
    for path in stale:
        if path.is_file() or path.is_symlink():
            path.unlink()
    for label, r in summary["runs"].items():
        for group, entry in r["groups"].items():
            mode, grid = _primary(entry)
            path = root / names[label, group]
            title = f"{_cut(label, SHOWN_LABEL)} · {_short(group)} ({mode})"
            plot_heatmap(grid, title, path)
            paths.append(path)
    paths.append(plot_recovery(summary, root / "recovery.png"))
    if by_budget:
        paths.append(plot_recovery_by_budget(summary, root / "recovery_by_budget.png"))
    paths.append(plot_pass1_curves(summary, root / PASS1_CURVE_FILE))
    return paths


#: The most characters of a run's label in a legend, a title or under a bar: labels run to
#: 128 bytes, and one of 60 pushed the legend off the figure; 90 collapsed the axes.
SHOWN_LABEL = 32


def _cut(text: str, most: int) -> str:
    """``text`` on one line, at most ``most`` characters: its start and end round an ellipsis
    (the start and the end are what tell runs apart: ``ppo-seed0``, ``...-T32``)."""
    text = one_line(text)
    if len(text) <= most:
        return text
    head = (most - 1) // 2
    return text[:head] + "…" + text[len(text) - (most - 1 - head) :]


def _shown_labels(labels: Any) -> dict[str, str]:
    """Each run label as a figure shows it (`_plot_text`): cut to `SHOWN_LABEL` characters,
    and where two read alike once cut, each with a short hash of its full label.

    Example:
        >>> _shown_labels(["ppo", "maskableppo-budgetmix-uniform-12-40-seed0"])
        {'ppo': 'ppo', 'maskableppo-budgetmix-uniform-12-40-seed0': 'maskableppo-bud…form-12-40-seed0'}
    """
    labels = list(labels)
    cut = {label: _cut(label, SHOWN_LABEL) for label in labels}
    alike: dict[str, int] = {}
    for text in cut.values():
        alike[text] = alike.get(text, 0) + 1
    shown = {}
    for label, text in cut.items():
        if alike[text] > 1:
            digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:6]
            text = f"{_cut(label, SHOWN_LABEL - 7)} {digest}"
        shown[label] = _plot_text(text)
    return shown


def _plot_text(text: str) -> str:
    """``text`` as matplotlib shows it literally: `one_line` (lone surrogates too), and each
    ``$`` escaped (a label such as ``run $\\foo$`` went to its math parser, which failed the whole
    report; one holding an ESC was drawn as it was, and matplotlib's "Glyph 27 missing"
    warning printed the raw ESC to stderr), and a leading ``_`` kept from hiding it
    (matplotlib leaves a label starting with one out of the legend: run ``_baseline``'s
    curve had no name).

    Example:
        >>> print(_plot_text("cost $5 to $6"))
        cost \\$5 to \\$6
        >>> _plot_text("_baseline")
        '\\u200b_baseline'
    """
    text = one_line(text).replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


#: The most characters of a label's (or a group's) part of a heatmap's file name.
NAME_PART = 60


def heatmap_names(summary: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """The file name of each (run label, env group) heatmap: ``heatmap_<label>_<group>.png``.

    Each part is the text with runs of other characters than letters, digits and dots made
    ``-``, cut to `NAME_PART` characters. A part that was cut, or a name that another run's
    name would equal (``a/b`` and ``a-b``; ``A`` and ``a`` on a case-blind disk), gets a
    short hash of the label and group, so no run's heatmap overwrites another's.

    Example:
        >>> runs = {label: {"groups": {"all": {}}} for label in ("a/b", "a-b", "c")}
        >>> heatmap_names({"runs": runs})
        {('a/b', 'all'): 'heatmap_a-b_all-bce84526.png', ('a-b', 'all'): 'heatmap_a-b_all-492f8e3f.png', ('c', 'all'): 'heatmap_c_all.png'}
    """
    plain: dict[tuple[str, str], str] = {}
    cut: set[tuple[str, str]] = set()
    for label, run in summary["runs"].items():
        for group in run["groups"]:
            parts = [_slug(label), _slug(_short(group))]
            if any(len(part) > NAME_PART for part in parts):
                cut.add((label, group))
            plain[label, group] = "_".join(part[:NAME_PART] for part in parts)
    taken: dict[str, int] = {}
    for name in plain.values():
        taken[name.casefold()] = taken.get(name.casefold(), 0) + 1
    names = {}
    for (label, group), name in plain.items():
        if (label, group) in cut or taken[name.casefold()] > 1:
            digest = hashlib.sha256(f"{label}\0{group}".encode("utf-8", "surrogatepass"))
            name = f"{name}-{digest.hexdigest()[:8]}"
        names[label, group] = f"heatmap_{name}.png"
    return names


def _by_budget(run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    analysis = run["analysis"]
    return analysis[ALL if ALL in analysis else next(iter(analysis))].get("by_budget")


def plot_recovery_by_budget(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Per run, against T: optimal-step rate on track and right after an error, recovery rate."""
    import numpy as np

    check_report_summary(summary)
    panels = [
        ("optimal on track", "optimal_step_rate_on_track"),
        ("optimal right after an error", "optimal_step_rate_after_error"),
        ("errors recovered", "recovery_rate"),
    ]
    shown, colours = _shown_labels(summary["runs"]), _colours(summary["runs"])
    fig = _figure(3.4 * len(panels) + _legend_width(shown.values()), 3.2)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, key) in zip(axes, panels, strict=True):
        budgets: set[int] = set()
        for label, r in summary["runs"].items():
            table = _by_budget(r)
            if not table:
                continue
            ts = sorted(int(t) for t in table)  # (read back from JSON: "16" before "8")
            cells = [table[str(t)]["all"] for t in ts]
            values = [np.nan if c[key] is None else c[key] for c in cells]
            budgets.update(t for t, v in zip(ts, values, strict=True) if not np.isnan(v))
            ax.plot(ts, values, marker="o", ms=3, label=shown[label], color=colours[label])
        ax.set_title(title, fontsize=9)
        _budget_axis(ax, budgets)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    _legend_beside(fig, axes)
    return save_figure(fig, path)


def _budget_axis(ax: Any, budgets: set[int]) -> None:
    """Label the x axis of turn budgets with whole turns only (one T was labelled in tenths
    of a turn around it)."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    few = len(budgets) <= 2  # (too few whole numbers in view for MaxNLocator to keep to them)
    ax.xaxis.set_major_locator(FixedLocator(sorted(budgets)) if few else MaxNLocator(integer=True))
    ax.set_xlabel("turn budget T")


def _colours(labels: Any) -> dict[str, str]:
    """One colour per run for the whole figure: matplotlib's cycle restarts in each panel, so
    a run missing from one shifted the others' colours there, and the one legend beside the
    panels named the wrong curves."""
    return {label: f"C{i % 10}" for i, label in enumerate(labels)}


def _legend_width(texts: Any) -> float:
    """Inches a legend of ``texts`` beside the panels takes (the figure widens by it)."""
    return 0.6 + 0.06 * max((len(text) for text in texts), default=0)


def _legend_beside(fig: Any, axes: Any) -> None:
    """One legend of the runs, right of the panels (inside one, it hid the curves it named)."""
    handles = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(text, handle)
    if handles:
        fig.legend(handles.values(), handles.keys(), loc="outside right upper", fontsize=7)


PLOT_HINT = "plots need matplotlib: pip install -e '.[plot]' in the turnbudget checkout (or skip them: --no-plots / plots=False)"


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

    problem = grid_problem(grid, "grid", cells=("mean",))
    if problem is not None:
        raise ValueError(problem)
    ks, ts = grid["ks"], grid["ts"]
    mean = np.asarray(grid["mean"])
    fig = _figure(1.2 + 0.62 * len(ts), 1.0 + 0.42 * len(ks))
    ax = fig.add_subplot()
    im = ax.imshow(mean, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(ts)), [str(t) for t in ts])
    ax.set_yticks(range(len(ks)), [str(k) for k in ks])
    ax.set_xlabel("turn budget T")
    ax.set_ylabel("K")
    ax.set_title(_plot_text(f"Pass@(K,T) — {title}"), fontsize=9)
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
    return save_figure(fig, path)


def plot_pass1_curves(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Pass@(1,T) against T with its bootstrap band, one line per run, one panel per env group."""
    check_report_summary(summary)
    runs = summary["runs"]
    groups = sorted({g for r in runs.values() for g in r["groups"]}, key=lambda g: (g == ALL, g))
    shown, colours = _shown_labels(runs), _colours(runs)
    fig = _figure(3.6 * len(groups) + _legend_width(shown.values()), 3.2)
    axes = fig.subplots(1, len(groups), squeeze=False)[0]
    for ax, group in zip(axes, groups, strict=True):
        budgets: set[int] = set()
        for label, r in runs.items():
            if group not in r["groups"]:
                continue
            _, grid = _primary(r["groups"][group])
            i = grid["ks"].index(1)
            ts = grid["ts"]
            budgets.update(ts)
            mean, low, high = grid["mean"][i], grid["low"][i], grid["high"][i]
            (line,) = ax.plot(ts, mean, marker="o", ms=3, label=shown[label], color=colours[label])
            if len(ts) > 1:
                ax.fill_between(ts, low, high, alpha=0.15, color=line.get_color())
            else:  # (a band over one T has no width: the interval was a hairline)
                ax.errorbar(ts, mean, yerr=[[mean[0] - low[0]], [high[0] - mean[0]]],
                            fmt="none", capsize=4, color=line.get_color())  # fmt: skip
        ax.set_title(_plot_text(_short(group)), fontsize=9)
        _budget_axis(ax, budgets)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Pass@(1,T)")
    _legend_beside(fig, axes)
    return save_figure(fig, path)


def plot_recovery(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Per run: optimal-step rate overall, on track and right after an error; recovery rate."""
    import numpy as np

    check_report_summary(summary)
    runs = summary["runs"]
    labels = list(runs)
    shown = list(_shown_labels(labels).values())
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
    fig = _figure(max(6.5, 1.1 * len(labels) + 2.0), 3.8)
    ax_rate, ax_turns = fig.subplots(1, 2, width_ratios=[3, 2])
    x = np.arange(len(labels))
    width = 0.8 / len(series)
    for s, (name, key) in enumerate(series):
        values = [np.nan if st[key] is None else st[key] for st in stats]
        ax_rate.bar(x + (s - (len(series) - 1) / 2) * width, values, width, label=name)
    ax_rate.set_xticks(x, shown, rotation=30, ha="right", fontsize=7)
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
    # (the outliers shown: without them a tail up to 8 turns read as a maximum of 3)
    ax_turns.boxplot(data, flierprops={"markersize": 3})
    ax_turns.set_xticks(range(1, len(labels) + 1), shown, rotation=30, ha="right", fontsize=7)
    ax_turns.set_ylabel("turns")
    ax_turns.set_title("turns to recover", fontsize=9)  # (a longer title ran off the figure)
    return save_figure(fig, path)
