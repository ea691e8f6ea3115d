"""Markdown: the ``report.md`` of runs and the ``probe_report.md`` of probes, from their summaries."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from turnbudget._checks import Each, Items, Maybe, brief, field_problem
from turnbudget.eval.analysis import ALL, check_run_summary
from turnbudget.eval.probes.summary import check_probe_summary, estimate_problem
from turnbudget.eval.report._atomic import one_line
from turnbudget.records.files import REPORT_HEADING  # (the first line of every report.md)

__all__ = [
    "check_report_summary",
    "failure_bounds_lines",
    "probe_failure_bounds",
    "probe_failure_lines",
    "render_markdown",
    "render_probe_markdown",
]

#: What a report's table cell reads as a number (a rate, a mean): a finite one, or None.
_RATE = Maybe("number")


def _agents_problem(config: Any, where: str) -> str | None:
    """A run's agent (``agent``), or a team run's agents by role (``agents``), as text."""
    if "agents" in config:
        return field_problem(config["agents"], Each("str"), f"{where}['agents']")
    return field_problem(config.get("agent"), "str", f"{where}['agent']")


def _pair_problem(value: Any, where: str) -> str | None:
    if len(value) != 2:
        return f"Expect {where} to hold two values (from, to), got {len(value)}"
    if value[0] is None:  # (only the upper end may be open: None)
        return f"Expect {where} to start at a number, got None"
    return None


def _str_keys_problem(table: Any, where: str) -> str | None:
    """Env groups are named by str (an int key failed the report's sort and its short name)."""
    for key in table:
        if not isinstance(key, str):
            return f"Expect the keys of {where} to be env groups (str), got {brief(key)}"
    return None


def _budget_keys_problem(table: Any, where: str) -> str | None:
    for key in table:
        if not (str(key).isascii() and str(key).isdigit()):
            return f"Expect the keys of {where} to be budgets, got {brief(key)}"
    return None


def _both(*checks: Any) -> Any:
    """A field spec: each of ``checks`` (field specs) in turn."""

    def check(value: Any, where: str) -> str | None:
        for spec in checks:
            problem = field_problem(value, spec, where)
            if problem is not None:
                return problem
        return None

    return check


_BUDGET_CELL = {
    "episodes": "count",
    **dict.fromkeys(
        ("optimal_step_rate_on_track", "optimal_step_rate_after_error", "recovery_rate"), _RATE
    ),
}
_FEASIBILITY = {
    "ks": Items("count", least=1),
    "feasible": Items({"t": "count", "tasks": "count", **dict.fromkeys(
        ("mean", "low", "high"), Maybe(Items(_RATE)))}),
    "by_ratio": Items({
        "ratio": _both(Items(_RATE), _pair_problem), "cells": "count", "tasks": "count",
        "mean": Maybe(Items(_RATE)),  # (None: no cell in that bin)
    }),
    "step_regret": {"successes": "count", "mean": _RATE, "median": _RATE, "max": Maybe("count")},
}  # fmt: skip


def _k1_problem(ks: Any, where: str) -> str | None:
    return None if 1 in ks else f"Expect {where} to hold K = 1 (the row the report reads)"


#: A failure bound's grid (`failure_bounds_lines` prints its K = 1 row).
_BOUND = {
    "ks": _both(Items("count", least=1), _k1_problem),
    "ts": Items("count", least=1),
    **dict.fromkeys(("mean", "low", "high"), Items(Items("number"))),
}
#: What the report reads of a run summary's analysis of one env group.
_ANALYSIS = {
    "failed_to_run?": {"bounds?": Each(Each(_BOUND))},
    **dict.fromkeys(
        (
            "success_rate",
            "optimal_step_rate",
            "optimal_step_rate_on_track",
            "optimal_step_rate_after_error",
            "self_error_rate",
            "injected_error_rate",
            "recovery_rate",
            "turns_to_recover_mean",
            "wasted_rate?",
            "invalid_rate?",
        ),
        _RATE,
    ),
    "errors_injected_increasing?": Maybe("count"),
    "turns_to_recover": Items("number"),
    "by_optimal_length": Items(
        {
            "optimal_length": _both(Items("count"), _pair_problem),
            "tasks": "count",
            "success_rate": Each(_RATE),
        }
    ),
    "by_budget?": Maybe(
        _both(
            Each(
                {
                    "all": {**_BUDGET_CELL, "wasted_rate": _RATE},
                    "success": _BUDGET_CELL,
                    "failure": _BUDGET_CELL,
                }
            ),
            _budget_keys_problem,
        )
    ),
    "feasibility?": Maybe(_FEASIBILITY),
}
#: What the report reads of a run summary (`check_report_summary`).
RUN_SUMMARY = {
    "config": _both(
        {
            "envs": Items("str"),
            "tasks": Items("any"),
            "n": "count",
            "mode": "str",
            "errors": "any",
            "reveal": "any",
            "ts": Items("count", least=1),
        },
        _agents_problem,
    ),
    "failed_to_run?": {"episodes": "count", "by_kind": Each("count")},
    "groups": _both(
        Each({"gap?": {"max_abs": "number", "mean_abs": "number"}}, least=1), _str_keys_problem
    ),
    "analysis": _both(Each(_ANALYSIS, least=1), _str_keys_problem),
    "agent_usage?": Maybe(
        {
            "steps": "count",
            **dict.fromkeys(
                (
                    "admissible_rate?",
                    "tokens_in_per_step?",
                    "tokens_out_per_step?",
                    "latency_s_per_step?",
                ),
                _RATE,
            ),
            "retries?": "any",
            "requests?": "any",
        }
    ),
}
_COMPARISON = {
    "better": "str",
    "worse": "str",
    "group": "str",
    "advantage_at_max_t": "number",
    "advantage_at_max_t_interval?": Maybe(_both(Items("number"), _pair_problem)),
    "clear_at_max_t?": "any",
    "lower_at_max_t?": "any",
    "bounded_by_failures?": "any",
    "halving_budget": _RATE,
    "peak_advantage": "number",
    "peak_t": "count",
}
_PAIRED = {
    "run": "str",
    **dict.fromkeys(
        (
            "optimal_on_track",
            "optimal_after_error",
            "recovery_rate",
            "probe_win_rate",
            "probe_control_win_rate",
        ),
        _RATE,
    ),
    **dict.fromkeys(
        ("single_step_skill", "noop_rate", "recovery_specific_skill"), estimate_problem
    ),
}


def _run_tables_problem(run: Mapping[str, Any], where: str) -> str | None:
    """What the report's tables of a run need beyond `RUN_SUMMARY`'s fields: its analysis's
    tables over its config's budgets, and a feasibility table's rows per budget and K."""
    ts = [str(t) for t in run["config"]["ts"]]
    for group, a in run["analysis"].items():
        at = f"{where}['analysis'][{brief(group)}]"
        for i, row in enumerate(a["by_optimal_length"]):
            missing = [t for t in ts if t not in row["success_rate"]]
            if missing:
                return (
                    f"Expect {at}['by_optimal_length'][{i}]['success_rate'] to hold a rate per "
                    f"budget of {where}['config']['ts'], got none for {missing[0]}"
                )
        f = a.get("feasibility")
        if not f:
            continue
        if 1 not in f["ks"]:
            return f"Expect {at}['feasibility']['ks'] to hold 1, got {brief(f['ks'])}"
        if len(f["feasible"]) > len(ts):
            return (
                f"Expect {at}['feasibility']['feasible'] to hold a row per budget of "
                f"{where}['config']['ts'] ({len(ts)}), got {len(f['feasible'])}"
            )
        for j, row in enumerate(f["by_ratio"]):
            if row["cells"] and (row["mean"] is None or len(row["mean"]) != len(f["ks"])):
                return (
                    f"Expect {at}['feasibility']['by_ratio'][{j}]['mean'] to hold a value per "
                    f"K of {at}['feasibility']['ks'] ({len(f['ks'])}), got {brief(row['mean'])}"
                )
        for j, cell in enumerate(f["feasible"]):
            if cell["mean"] is not None and any(
                cell[k] is None or len(cell[k]) != len(f["ks"]) or None in cell[k]
                for k in ("mean", "low", "high")
            ):
                return (
                    f"Expect {at}['feasibility']['feasible'][{j}] to hold a mean, low and "
                    f"high per K of {at}['feasibility']['ks'], or a mean of None"
                )
        if group not in run["groups"]:
            return f"Expect {where}['groups'] to hold the group {brief(group)} of its analysis"
    return None


def check_report_summary(summary: Any, where: str = "summary") -> None:
    """A ValueError naming the field (its path from ``where``) when ``summary`` (``{"runs":
    {label: run summary}, "comparisons": [...]}``, and its ``probes`` and ``paired``) holds
    less than the report reads: a malformed summary was a bare ``KeyError``, ``TypeError``,
    ``IndexError`` or ``OverflowError`` from its tables."""
    problem = field_problem(
        summary,
        {
            "runs": Each("any"),
            "comparisons?": Maybe(Items(_COMPARISON)),
            "probes?": Maybe(Items("any")),
            "paired?": Maybe(Items(_PAIRED)),
        },
        where,
    )
    if problem is not None:
        raise ValueError(problem)
    for label, run in summary["runs"].items():
        if not isinstance(label, str):
            raise ValueError(f"Expect the keys of {where}['runs'] to be labels, got {brief(label)}")
        at = f"{where}['runs'][{brief(label)}]"
        check_run_summary(run, at, RUN_SUMMARY)
        problem = _run_tables_problem(run, at)
        if problem is not None:
            raise ValueError(problem)
    for i, probe_summary in enumerate(summary.get("probes") or ()):
        check_probe_summary(probe_summary, f"{where}['probes'][{i}]")


def _short(group: str) -> str:
    """An env id's name without its namespace and version (plain text: `_md` for Markdown)."""
    name = group.split("/")[-1]
    return re.sub(r"-v\d+$", "", name)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


_MARKDOWN = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "[": "\\[",
        "]": "\\]",
        "!": "\\!",
    }
)


def _printable(text: str) -> str:
    """`one_line`: a table row stays one line (see its example)."""
    return one_line(text)


def _md(label: str) -> str:
    """A run's label as Markdown text: a ``|`` would split a table's row, a ``<`` start HTML,
    a line break end the row (`_printable`). Two labels never read alike (``&`` is escaped
    too: ``x&lt;y`` and ``x<y`` were one row, and one run was missing from every table).

    Example:
        >>> print(_md("a|b <i>*x*</i> &lt;"))
        a\\|b &lt;i&gt;\\*x\\*&lt;/i&gt; &amp;lt;
    """
    return _printable(label.translate(_MARKDOWN))


def _code(text: str) -> str:
    """``text`` (an agent's repr) as a code span in a table cell: its ``|`` escaped (GitHub's
    tables read ``\\|`` in a code span as ``|``), fenced by more backticks than it holds."""
    text = _printable(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


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
    i = grid["ks"].index(1)
    return list(grid["mean"][i])


def failure_bounds_lines(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A line per run (``{label: run summary}``) and env group with episodes that failed to
    run: Pass@(1,T) with them counted as losses (interval in brackets), then as successes,
    in the group's primary mode (the labels as given: escape them for where they go)."""
    lines = []
    for label, run in runs.items():
        for group, stats in sorted(run["analysis"].items(), key=lambda g: (g[0] == ALL, g[0])):
            bounds = (stats.get("failed_to_run") or {}).get("bounds") or {}
            mode = "rerun" if "rerun" in bounds else "truncate"
            if not bounds.get(mode):
                continue
            lost, won = bounds[mode]["as_losses"], bounds[mode]["as_successes"]
            i, j = lost["ks"].index(1), won["ks"].index(1)
            as_losses = ", ".join(
                f"T={t}: {m:.2f} [{lo:.2f}, {hi:.2f}]"
                for t, m, lo, hi in zip(lost["ts"], lost["mean"][i], lost["low"][i],
                                        lost["high"][i])
            )  # fmt: skip
            as_wins = ", ".join(f"T={t}: {m:.2f}" for t, m in zip(won["ts"], won["mean"][j]))
            lines.append(
                f"- {label}, {_md(_short(group))} ({mode}): counted as losses {as_losses}; "
                f"as successes {as_wins}"
            )
    return lines


def _failed_cell(run: Mapping[str, Any]) -> str:
    failed = run.get("failed_to_run") or {}
    if not failed.get("episodes"):
        return "0"
    kinds = ", ".join(f"{_md(str(k))}: {v}" for k, v in failed["by_kind"].items())
    return f"{failed['episodes']} ({kinds})"


def _agents_cell(config: Mapping[str, Any]) -> str:
    """The agent of a run, or each role's agent of a team run."""
    if "agents" in config:
        return "; ".join(f"{role}: {_code(agent)}" for role, agent in config["agents"].items())
    return _code(config["agent"])


def _grants_cell(config: Mapping[str, Any]) -> str:
    """What the run's agent was shown beyond a player's view, by its own flags: a sealed
    submission that declares ``needs_oracle`` or ``budget_aware`` is given the oracle's
    actions or its budget on every turn, and a reader of the report should see so."""
    names = {"needs_oracle": "oracle actions", "budget_aware": "budget"}
    roles = config.get("grants")
    if isinstance(roles, Mapping):  # a team run: each role's own flags
        cells = [
            f"{_md(str(role))}: {', '.join(names.get(str(f), _md(str(f))) for f in flags)}"
            for role, flags in roles.items()
            if isinstance(flags, list) and flags
        ]
        return "; ".join(cells) or "none"
    grants = [name for key, name in names.items() if config.get(key) is True]
    return ", ".join(grants) or "none"


def _envs_cell(config: Mapping[str, Any]) -> str:
    """A run's envs; a team run's game with its difficulty, and the role whose win counts
    where one does (runs at two difficulties read alike)."""
    envs = ", ".join(_md(_short(e)) for e in config["envs"])
    said = [str(config["difficulty"])] if "difficulty" in config else []
    if config.get("success") not in (None, "all"):
        said.append(f"success: {config['success']}")
    return f"{envs} ({'; '.join(_md(s) for s in said)})" if said else envs


def render_markdown(summary: Mapping[str, Any]) -> str:
    """The ``report.md`` text of a summary (``{"runs": ..., "comparisons": ...}``).

    Raises:
        ValueError: the summary holds less than the report reads (`check_report_summary`),
            naming the field.
    """
    check_report_summary(summary)
    runs: Mapping[str, Any] = {_md(label): run for label, run in summary["runs"].items()}
    out = [REPORT_HEADING, ""]
    out.append(
        "Pass@(K,T): the probability that at least one of K independent episodes, "
        "each capped at T turns, succeeds (unbiased estimator of Chen et al. 2021, "
        "averaged over tasks; 95% bootstrap intervals over tasks in brackets)."
    )
    out.append("")
    out += [
        "## Runs",
        "",
        "| run | agent | envs | tasks | n | mode | errors | reveal | beyond a player's view "
        "| failed to run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in runs.items():
        c = r["config"]
        out.append(
            f"| {label} | {_agents_cell(c)} | {_envs_cell(c)} | "
            f"{len(c['tasks'])} | {c['n']} | {c['mode']} | {_code(json.dumps(c['errors']))} | "
            f"{_code(json.dumps(c['reveal']))} | {_grants_cell(c)} | {_failed_cell(r)} |"
        )
    out.append("")
    if any(r.get("failed_to_run", {}).get("episodes") for r in runs.values()):
        out.append(
            "*Failed to run*: episodes whose agent or env raised, whose worker died or that "
            "timed out on every attempt. They are not the agent's failures: every table leaves "
            "them out, and a task with fewer than max(K) episodes that ran is left out of its "
            "grid. Rerunning the same command retries them. That grid is unbiased only when "
            "failing to run does not depend on the outcome (an agent that raises, hangs or "
            "dies when it is losing fails to run exactly its losses); with every such episode "
            "counted as a loss, then as a success, Pass@(1,T) would be:"
        )
        out.append("")
        out += failure_bounds_lines(runs)
        out.append("")

    # Pass@(1,T) overview per group.
    groups = sorted({g for r in runs.values() for g in r["groups"]}, key=lambda g: (g == ALL, g))
    out += ["## Pass@(1,T) by run", ""]
    for group in groups:
        members = [(lbl, r) for lbl, r in runs.items() if group in r["groups"]]
        # One table per set of budgets (a run at other budgets left the whole group out).
        by_budgets: dict[tuple[int, ...], list[tuple[str, Any]]] = {}
        for lbl, r in members:
            by_budgets.setdefault(tuple(r["config"]["ts"]), []).append((lbl, r))
        for ts, same in by_budgets.items():
            out += [
                f"**{_md(_short(group))}**",
                "",
                "| run | " + " | ".join(f"T={t}" for t in ts) + " |",
                "|---" * (len(ts) + 1) + "|",
            ]
            for lbl, r in same:
                row = _pass1_row(_primary(r["groups"][group])[1])
                out.append(f"| {lbl} | " + " | ".join(f"{x:.2f}" for x in row) + " |")
            out.append("")

    out += _feasibility_section(runs)

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
                f"| {lbl} | {_md(_short(group))} | {_fmt(a['success_rate'])} | {_fmt(a['optimal_step_rate'])} | "
                f"{_fmt(a['optimal_step_rate_on_track'])} | {_fmt(a['optimal_step_rate_after_error'])} | "
                f"{_fmt(a['self_error_rate'], 3)} | {_fmt(a.get('wasted_rate'), 3)} | "
                f"{_fmt(a.get('invalid_rate'), 3)} | {_fmt(a['injected_error_rate'], 3)} "
                f"({_fmt(a.get('errors_injected_increasing'), 0)}) | "
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
            f"**{lbl}** ({_md(_short(group))}, Pass@(1,T))",
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
            "Pass@(1,T) advantage of the run with the higher mean over budgets over another made "
            "under the same conditions: at the largest budget with its 95% interval, at its peak, "
            "and the budget below which the advantage at the largest budget has halved "
            "(interpolated). A verdict needs the interval at the largest budget above 0, or "
            "below it (the curves cross: the run with the lower mean is ahead there); "
            "otherwise the row reads *no clear difference*, and no halving budget is given.",
            "",
            "| higher mean | lower mean | group | at max T [95%] | verdict | peak (at T) | halves at T |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in comparisons:
            clear = c.get("clear_at_max_t", False)
            interval = c.get("advantage_at_max_t_interval")
            at_max = f"{c['advantage_at_max_t']:.2f}" + (
                f" [{interval[0]:+.2f}, {interval[1]:+.2f}]" if interval else ""
            )
            lower = c.get("lower_at_max_t", False) is True
            verdict = (
                "higher at max T" if clear
                else "lower at max T (the curves cross)" if lower
                else "*no clear difference*"
            )  # fmt: skip
            if c.get("bounded_by_failures"):  # (episodes failed to run: judged by the bounds)
                verdict += " (episodes failed to run: judged by their bounds)"
            halves = _fmt(c["halving_budget"], 1) if clear else "–"
            out.append(
                f"| {_md(c['better'])} | {_md(c['worse'])} | {_md(_short(c['group']))} | {at_max} | "
                f"{verdict} | {c['peak_advantage']:.2f} ({c['peak_t']}) | {halves} |"
            )
        out.append("")

    out += ["## Pass@(K,T) grids", ""]
    for lbl, r in runs.items():
        for group, entry in r["groups"].items():
            for mode in ("truncate", "rerun"):
                if mode in entry:
                    out += [
                        f"### {lbl} · {_md(_short(group))} · {mode}",
                        "",
                        *_grid_table(entry[mode]),
                        "",
                    ]
            if "gap" in entry:
                failed = entry["gap"].get("episodes_failed")
                out += [
                    f"Rerun minus truncate: max |gap| {entry['gap']['max_abs']:.3f}, "
                    f"mean |gap| {entry['gap']['mean_abs']:.3f}."
                    + (
                        f" {failed} episodes failed to run, and each mode is scored on the "
                        "episodes that ran in it: the gap holds which failed, beside any "
                        "reading of the budget."
                        if isinstance(failed, int) and failed
                        else ""
                    ),
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
                "after an error; recovery rate. An error still open when the budget runs out "
                "counts as not recovered (censored: one opened on the last turns had no time), "
                "so the rate grows with T for any agent; a win recovers every error, so the "
                "won episodes' rate is 1 by construction.",
                "",
            ]
        out += [
            f"**{lbl}** ({_md(_short(group))})",
            "",
            "| T | episodes (won) | all: on track / after error | won: on track / after error "
            "| lost: on track / after error | recovery rate (won / lost) | wasted / turn |",
            "|---|---|---|---|---|---|---|",
        ]
        for t, cell in sorted(table.items(), key=lambda item: int(item[0])):  # (JSON: "16" < "8")
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


def _ratio_label(lo: float, hi: float | None) -> str:
    return f"≥ {lo:g}" if hi is None else f"< {hi:g}" if lo == 0 else f"{lo:g}–{hi:g}"


def _feasibility_section(runs: Mapping[str, Any]) -> list[str]:
    """Per run (group "all"), Pass@(1,T) over the tasks the budget made feasible, and
    Pass@K against T / d* (from the oracle's optimal lengths; `feasibility_analysis`)."""
    out: list[str] = []
    for lbl, r in runs.items():
        group = ALL if ALL in r["analysis"] else next(iter(r["analysis"]))
        f = r["analysis"][group].get("feasibility")
        if not f:
            continue
        if not out:
            out += [
                "## Feasibility (from the oracle)",
                "",
                "A task is *feasible* at T when its optimal solution length d* is at most T; "
                "below it no agent can succeed, so a failure there is the budget's, never a "
                "skill gap. Pass@(1,T) over all tasks and over those feasible at T (95% "
                "bootstrap interval over them), then Pass@K against the budget in units of "
                "the optimal length, c = T / d* (each cell a task at one T).",
                "",
            ]
        _, grid = _primary(r["groups"][group])
        all_row = _pass1_row(grid)
        i = f["ks"].index(1)
        out += [
            f"**{lbl}** ({_md(_short(group))}, {f['tasks']} tasks with a known d*)",
            "",
            "| T | feasible tasks | Pass@(1,T), all | Pass@(1,T), feasible |",
            "|---|---|---|---|",
        ]
        for j, cell in enumerate(f["feasible"]):
            shown = (
                "–"
                if cell["mean"] is None
                else _ci({k: cell[k][i] for k in ("mean", "low", "high")})
            )
            out.append(f"| {cell['t']} | {cell['tasks']} | {all_row[j]:.2f} | {shown} |")
        out += [
            "",
            "| T / d* | cells (tasks) | " + " | ".join(f"Pass@{k}" for k in f["ks"]) + " |",
            "|---" * (len(f["ks"]) + 2) + "|",
        ]
        for row in f["by_ratio"]:
            if row["cells"]:
                out.append(
                    f"| {_ratio_label(*row['ratio'])} | {row['cells']} ({row['tasks']}) | "
                    + " | ".join(_fmt(x) for x in row["mean"])
                    + " |"
                )
        regret = f["step_regret"]
        if regret["successes"]:
            out.append("")
            out.append(
                f"Step regret of the {regret['successes']} successes (turns beyond d*): "
                f"mean {_fmt(regret['mean'], 1)}, median {_fmt(regret['median'], 1)}, "
                f"max {regret['max']}."
            )
        out.append("")
    return out


def _probe_section(summary: Mapping[str, Any]) -> list[str]:
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
            "skills on fixed probe states: single-step skill normalized so that RandomAgent "
            "scores 0, recovery-specific skill against the matched on-track control.",
            "",
            "| run | optimal on track | optimal after error | recovery rate | single-step skill "
            "| no-op rate | recovery-specific skill | win after error / control (probes) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in pairs:
            out.append(
                f"| {_md(row['run'])} | {_fmt(row['optimal_on_track'])} | "
                f"{_fmt(row['optimal_after_error'])} | {_fmt(row['recovery_rate'])} | "
                f"{_ci(row['single_step_skill'])} | {_ci(row['noop_rate'])} | "
                f"{_ci(row['recovery_specific_skill'])} | "
                f"{_fmt(row['probe_win_rate'])} / {_fmt(row['probe_control_win_rate'])} |"
            )
        out.append("")
    return out


def render_probe_markdown(summary: Mapping[str, Any]) -> str:
    """The probe tables: skills with intervals, raw rates against the random baseline.

    Raises:
        ValueError: ``summary`` is no probe summary (`check_probe_summary`), naming the field.
    """
    check_probe_summary(summary)
    cfg = summary["config"]
    out = [
        "## Probes: single-step and recovery skill",
        "",
        f"Teacher-forced probes on {len(cfg['tasks'])} tasks per env, prefixes at "
        f"{', '.join(f'{f:g}' for f in cfg['prefixes'])} of the optimal plan, errors "
        f"{', '.join(cfg['kinds'])}, budgets ceil({cfg['budget_factor']:g} × d) + "
        f"{cfg['budget_slack']} (d: the plan's length, or the distance after the error). "
        "Single-step skill = (p − p_random) / (1 − p_random) over the answers that change the "
        "state (0 chance, 1 perfect); no-ops (valid answers that change nothing) are counted "
        "apart. Recovery-specific skill = the win share after an error − the win share from the "
        "matched on-track state as far from the goal, with the same budget (the share of "
        "budgets from the distance to B within which the agent won): 0 for any memoryless "
        "agent. 95% intervals (bootstrap over tasks, widened to score intervals).",
        "",
        "| agent | group | single-step skill | optimal answers (random, exact chance) "
        "| no-op rate | recovery-specific skill | win after error | win, control "
        "| recovered (random) | prompt | turns to recover | pairs (skipped) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, groups in summary["agents"].items():
        for group in sorted(groups, key=lambda g: (g == ALL, g)):  # JSON sorts "all" first
            g = groups[group]
            s, r = g["single_step"], g["recovery"][ALL]
            out.append(
                f"| {_md(label)} | {_md(group.split('/')[-1])} | {_ci(s['skill'])} | {_fmt(s['rate'])} "
                f"({_fmt(s['baseline_rate'])}, {_fmt(s['chance_rate'])}) | "
                f"{_ci(s['noop_rate'])} | {_ci(r['recovery_specific'])} | "
                f"{_ci(r['win_rate'])} | {_ci(r['control_win_rate'])} | "
                f"{_fmt(r['recovery_rate'])} ({_fmt(r['baseline_recovery_rate'])}) | "
                f"{_fmt(r['prompt_recovery_rate'])} | {_fmt(r['turns_to_recover_mean'], 1)} | "
                f"{r['pairs']} ({r['skipped']}) |"
            )
    out.append("")
    out += probe_failure_lines(summary)
    return "\n".join(out)


def probe_failure_lines(summary: Mapping[str, Any]) -> list[str]:
    """Lines on the probes that failed to run (a probe summary's ``failed_to_run`` and
    ``failed_to_run_bounds``): how many per agent, and each skill with them counted against
    the agent, then for it. None when every probe ran."""
    failed = summary.get("failed_to_run") or {}
    if not any(failed.values()):
        return []
    counts = ", ".join(f"{_md(str(who))}: {n}" for who, n in failed.items() if n)
    lines = [
        f"*Failed to run* ({counts}): probes whose agent or env raised, whose worker died or "
        "that timed out on every attempt, left out of the skills. Those are unbiased only when "
        "failing does not depend on the answer (an agent that raises on the states it would "
        "get wrong fails to run exactly those); with each counted against the agent, then "
        "for it, the means would be:",
        "",
    ]
    for label, group, cells in probe_failure_bounds(summary):
        lines.append(f"- {_md(label)}, {group}: {cells}")
    lines.append("")
    return lines


def probe_failure_bounds(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(agent label, env group, its skills' bounds as text)`` of each agent and group of a
    probe summary's ``failed_to_run_bounds`` (the labels as given: escape them for where they
    go)."""
    rows = []
    for label, groups in (summary.get("failed_to_run_bounds") or {}).items():
        for group in sorted(groups, key=lambda g: (g == ALL, g)):
            cells = "; ".join(
                f"{skill.replace('_', ' ')} {_fmt(against)} to {_fmt(for_)}"
                for skill, (against, for_) in groups[group].items()
            )
            rows.append((str(label), group.split("/")[-1], cells))
    return rows
