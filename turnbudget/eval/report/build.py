"""Reports: ``report.md``, ``summary.json`` and the plots, rebuilt from the run logs alone.

A *report directory* is either one run directory (``run.json`` +
``episodes.jsonl`` + ``steps.jsonl``, as `evaluate` writes) or a directory
whose immediate subdirectories are run directories (as the main job writes).
`build_report` reads every run in it and writes, at its top:

- ``summary.json`` — ``{"runs": {label: run summary}, "comparisons": [...]}``;
- ``report.md`` — the tables;
- ``heatmap_<label>_<group>.png`` — a K x T heatmap per run and env group (the names
  sanitised and cut short; a short hash keeps two runs' names apart);
- ``pass_at_1_curve.png`` — Pass@(1,T) against T per run, one panel per group;
- ``recovery.png`` — optimal-step rates on track / right after an error, and
  recovery rates, per run;
- ``recovery_by_budget.png`` — the same rates at every budget T (runs with step records).

When the report directory also holds probe results (``probe_summary.json``,
written by `turnbudget.eval.probe`, at its top or in a subdirectory), the
report adds the probe tables and pairs each run's observational numbers with
the probe skills of the same agent.

Each file is written whole or not at all (a temporary file, then a rename), so a
failed rebuild leaves the previous report in place. Text that UTF-8 cannot hold
(a label with a lone surrogate) is written as backslash escapes.

The Markdown is `turnbudget.eval.report.markdown`'s; the plots
(`turnbudget.eval.report.plots`) need matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

import functools
import json
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from turnbudget._checks import (
    Each,
    Maybe,
    brief,
    check_bool,
    check_dir_path,
    field_problem,
    is_finite,
)
from turnbudget.agents.secrets import redact
from turnbudget.eval.analysis import ALL, StepCountsError, compare_runs, summarize_run
from turnbudget.eval.probes.summary import PROBE_SUMMARY_FILE, check_probe_summary
from turnbudget.eval.report._atomic import write_text_atomic
from turnbudget.eval.report.markdown import (
    REPORT_HEADING,
    check_report_summary,
    render_markdown,
    render_probe_markdown,
)
from turnbudget.eval.report.plots import PASS1_CURVE_FILE, check_plotting, write_plots
from turnbudget.eval.run.evaluate import load_run
from turnbudget.eval.run.lock import foreign_files, writer_of
from turnbudget.records import (
    EPISODES_FILE,
    RUN_FILE,
    STEPS_FILE,
    LogError,
    folders_below,
    iter_episodes,
    present,
    read_config_dict,
    read_steps,
    run_dirs_below,
)
from turnbudget.records.files import REPORT_FILES, REPORT_HEATMAPS, open_regular

__all__ = [
    "PROBE_REPORT_FILE",
    "REPORT_FILE",
    "SUMMARY_FILE",
    "build_report",
    "find_probe_summaries",
    "find_runs",
    "load_run_summary",
    "pair_with_runs",
    "read_probe_summary",
    "report_is_current",
    "write_probe_report",
    "write_run_summary",
]

SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
PROBE_REPORT_FILE = "probe_report.md"


def find_runs(root: str | Path) -> list[Path]:
    """The run directories of a report directory: itself, or the directories below it with
    ``run.json``, at any depth (`run_dirs_below`: a label with a slash nests its run)."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise FileNotFoundError(f"{root} is a file, not a run directory")
    if not root.is_dir():
        raise FileNotFoundError(f"No such run directory: {root}")
    if present(root / RUN_FILE):
        # (a run moved into another's directory: the report read the outer one, and left
        # the one inside out without a word; `evaluate` refuses to make such a nesting)
        nested = run_dirs_below(root)[0]
        if nested:
            raise FileNotFoundError(
                f"{root} is a run's directory and holds another run, {nested[0]}: a report "
                "reads one or the other; move the inner run out, or report each one"
            )
        return [root]
    # (only the subdirectories were read: a run two levels down, runs/team/a of the label
    # "team/a", was left out of the report and its comparisons without a word)
    runs, lost = run_dirs_below(root)
    # A run that lost its run.json was passed over: the report and its comparisons left it
    # out without a word.
    if lost:
        raise FileNotFoundError(
            f"{lost[0]} holds {EPISODES_FILE} but no {RUN_FILE}: its run cannot be "
            f"read (restore its {RUN_FILE}, or move it out of {root})"
        )
    if not runs:
        raise FileNotFoundError(
            f"{root} holds no evaluation run (no {RUN_FILE} in it or in the directories below it)"
        )
    return runs


def load_run_summary(run_dir: str | Path, n_bootstrap: int = 1000) -> dict[str, Any]:
    """Summarise one run directory (an evaluation's or a team evaluation's) from its logs
    (``by_budget`` when it has step records).

    The logs are checked as they are read (`turnbudget.records`): a malformed
    record raises `turnbudget.records.LogError` naming the file, the line and the problem.
    """
    run_dir = Path(run_dir)
    writer = writer_of(run_dir)
    if writer is not None:  # (its missing episodes were read as a run left incomplete)
        raise ValueError(
            f"Run {str(run_dir)!r} is being written by another evaluation: {writer}. Wait for "
            "it to finish, then report it."
        )
    raw = read_config_dict(run_dir / RUN_FILE)
    if "game" in raw:  # a team run (`evaluate_team`): its steps are the members', per agent
        from turnbudget.eval.run.team import TeamConfig, team_plan  # (needs pettingzoo)

        team = TeamConfig.from_dict(read_config_dict(run_dir / RUN_FILE, TeamConfig.from_dict))
        episodes = iter_episodes(run_dir / EPISODES_FILE, team_plan(team))
        return summarize_run(team, episodes, n_bootstrap=n_bootstrap, checked=True)
    config, log = load_run(run_dir)  # (streamed: a run's records are never all held)
    steps = None  # read only for logs whose episode records lack `budget_counts`
    if config.record_steps and present(run_dir / STEPS_FILE):
        steps = functools.partial(_read_steps, run_dir / STEPS_FILE)
    try:
        return summarize_run(
            config, log.stream(), n_bootstrap=n_bootstrap, steps=steps, checked=True
        )
    except StepCountsError as exc:
        raise LogError(f"{run_dir / STEPS_FILE}: {exc}") from None


def _read_steps(path: Path, episodes: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`read_steps`, which reads a link that leads nowhere as an empty log (its error was
    "no step records for turns [...]")."""
    if not path.exists():
        raise FileNotFoundError(
            f"The run's step log {path} is a link to nothing (or a loop of links)"
        )
    return read_steps(path, episodes)


def write_run_summary(out: str | Path, run_summary: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``summary.json`` and ``report.md`` for a single run (no plots).

    Raises:
        ValueError: ``run_summary`` holds less than the report reads, naming the field.
    """
    problem = field_problem(run_summary, {"label": "str"}, "run_summary")
    if problem is not None:
        raise ValueError(problem)
    summary = {"runs": {run_summary["label"]: run_summary}, "comparisons": []}
    _write(check_dir_path(out, "out"), summary)  # ("" was the working directory)
    return summary


def _check_replaceable(root: Path) -> None:
    """A ValueError when ``root`` holds a ``report.md`` that is not one of ours (the main
    job's, the BudgetMix replication's: `turnbudget report runs/main` replaced its findings
    with a plain report, and its summary.json with ours), or, beside no run of its own, a
    training run or a summary.json of no report of ours (`foreign_files`: a training run's
    summary.json, its losses, was replaced by the report of an evaluation made inside it)."""
    path = root / REPORT_FILE
    if path.is_file():
        with path.open("rb") as f:
            first = f.readline(200).decode("utf-8", "replace").rstrip("\r\n")
        if first != REPORT_HEADING:
            raise ValueError(
                f"{path} is a report `turnbudget report` did not write (it starts "
                f"{first[:80]!r}), so it and its summary.json are left as they are: rebuild it "
                "with the command that wrote it (the main job's: python "
                "benchmarks/pass_at_kt.py --out DIR), or report its runs one by one"
            )
    held = [] if (root / RUN_FILE).exists() else foreign_files(root)
    if held:
        raise ValueError(
            f"{root} holds {', '.join(held)} of no report (a training run's or a policy's, or "
            "a summary.json `turnbudget report` did not write), which the report would "
            "overwrite: report the runs in a folder of their own"
        )


def _write(root: Path, summary: Mapping[str, Any]) -> bool:
    """``summary.json`` and ``report.md``, each written whole or not at all (`_atomic`), with
    whatever looks like a credential blanked (`without_secrets`); whether the summary differs
    from the one there before (or there was none)."""
    _check_replaceable(root)
    summary = without_secrets(summary)
    summary_text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
    report_text = render_markdown(summary) + "\n"  # (both rendered before either is written)
    changed = not _holds(root / SUMMARY_FILE, summary_text)
    # (report.md first: it is what marks the folder's summary.json as ours, `foreign_files`)
    write_text_atomic(root / REPORT_FILE, report_text)
    write_text_atomic(root / SUMMARY_FILE, summary_text)
    return changed


def _holds(path: Path, text: str) -> bool:
    """Whether the regular file ``path`` holds exactly ``text`` (read no further than that: a
    FIFO there blocked the report for ever, /dev/zero filled its memory)."""
    data = text.encode("utf-8")
    try:
        with open_regular(path) as f:
            return f.read(len(data) + 1) == data
    except (OSError, ValueError):  # (none there, or none that reads: LogError)
        return False


def _remove_plots(root: Path) -> None:
    """Remove the PNGs an earlier report wrote in ``root``: a report rebuilt without plots
    over changed records left them beside its tables, showing the old figures."""
    paths = [root / name for name in REPORT_FILES if name.endswith(".png")]
    for path in [*paths, *root.glob(REPORT_HEATMAPS)]:
        if path.is_file() or path.is_symlink():
            path.unlink()


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
    root = check_dir_path(root, "root")  # ("" was the working directory)
    # (before anything is written: report.md and summary.json were, then no plot)
    if check_bool(plots, "plots"):  # ("no" drew them)
        check_plotting()
    _check_replaceable(root)  # (before the runs are summarised: seconds to minutes)
    known = {Path(k).resolve(): v for k, v in (summaries or {}).items()}
    runs: dict[str, Any] = {}
    where: dict[str, Path] = {}  # label -> its run's directory
    for run_dir in find_runs(root):
        s = known.get(run_dir.resolve()) or load_run_summary(run_dir, n_bootstrap=n_bootstrap)
        problem = field_problem(s, {"label": "str"}, f"the summary of {run_dir}")
        if problem is not None:  # (one given in `summaries`: those read are checked)
            raise ValueError(problem)
        if s["label"] in runs:
            # (a run's default label is its agent's name: two runs of one agent collide)
            raise ValueError(
                f"Two runs in {root} share the label {s['label']!r}: {where[s['label']]} and "
                f"{run_dir}; a report names each run by its label, so give one of them another "
                "(rerun it with --label NAME, or evaluate(label=...), into a fresh directory)"
            )
        runs[s["label"]] = s
        where[s["label"]] = run_dir
    check_report_summary({"runs": runs})  # (before any probe file is judged by the runs)
    summary: dict[str, Any] = {"runs": runs, "comparisons": compare_runs(runs)}
    probes = [read_probe_summary(p, runs) for p in find_probe_summaries(root)]
    if probes:
        summary["probes"] = probes
        summary["paired"] = pair_with_runs(probes, runs)
    changed = _write(root, summary)
    if plots:
        write_plots(root, summary)
    elif changed:  # (unchanged, the plots there still show this summary: they stay)
        _remove_plots(root)
    return summary


def report_is_current(root: str | Path, *, plots: bool = True) -> bool:
    """Whether `build_report` on the run directory ``root`` would write what is there already:
    ``summary.json`` and ``report.md`` (and with ``plots`` the Pass@(1,T) curve, the last plot
    `write_plots` writes) were all written after the run's records last changed. A resumed run
    with nothing left to run skips the rebuild (seconds of plotting) when it is.
    """
    root = Path(root)
    outputs = [root / SUMMARY_FILE, root / REPORT_FILE]
    if plots:
        outputs.append(root / PASS1_CURVE_FILE)
    inputs = [root / name for name in (RUN_FILE, EPISODES_FILE, STEPS_FILE)]
    try:
        made = [path.stat() for path in outputs]
    except OSError:  # (missing, or a link round a loop: the rebuild says which)
        return False
    if not all(stat.S_ISREG(s.st_mode) for s in made):  # (a directory named report.md is no
        return False  # report: the resumed run announced it as its report)
    written = min(s.st_mtime_ns for s in made)
    inputs += find_probe_summaries(root)
    return all(not p.exists() or p.stat().st_mtime_ns <= written for p in inputs)


def write_probe_report(out: str | Path, summary: Mapping[str, Any]) -> Path:
    """Write ``probe_report.md`` of a probe summary (what `turnbudget.eval.probe` returns
    in ``ProbeResult.summary``) into ``out``; return its path."""
    out = check_dir_path(out, "out")  # ("" was the working directory)
    text = render_probe_markdown(without_secrets(summary)) + "\n"
    return write_text_atomic(out / PROBE_REPORT_FILE, text)


def without_secrets(value: Any) -> Any:
    """``value`` (a summary) with every str in it, keys too, `redact` ed: the runs' files are
    read as they are, and a hand-edited ``run.json`` (its agent a URL with a password in it, an
    API key in a label) went into the report and its summary as it was. (`evaluate` writes
    ``run.json`` redacted: a run's own strings come out unchanged.)

    Raises:
        ValueError: two keys read alike once blanked (two labels that differ in a key only).
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            shown = redact(key) if isinstance(key, str) else key
            if shown in out:
                raise ValueError(
                    f"Two names in the report read alike once their credentials are blanked: "
                    f"{shown!r}; rename one (its run's `label` in run.json)"
                )
            out[shown] = without_secrets(item)
        return out
    if isinstance(value, list | tuple):
        return [without_secrets(item) for item in value]
    return value


def find_probe_summaries(root: str | Path) -> list[Path]:
    """``probe_summary.json`` files in a report directory or the folders below it, at any
    depth as its runs (`folders_below`: a label with a slash nests a probe run too)."""
    root = Path(root)
    found = [root / PROBE_SUMMARY_FILE] if present(root / PROBE_SUMMARY_FILE) else []
    if root.is_dir():
        found += sorted(
            p / PROBE_SUMMARY_FILE for p in folders_below(root) if present(p / PROBE_SUMMARY_FILE)
        )
    return found


def read_probe_summary(
    path: str | Path, runs: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """A ``probe_summary.json`` that the report can show (with ``runs``, paired with them);
    else `turnbudget.records.LogError` naming the file (a damaged or hand-edited one was a
    traceback: ``KeyError: 'config'``, a ``TypeError``, a ``RecursionError``)."""

    def check(summary: dict[str, Any]) -> None:
        check_probe_summary(summary)  # (its labels, and the skills of each by env group)
        try:
            problem = _estimates_problem(summary["agents"], "agents")
        except RecursionError:  # (nested about as deep as the JSON reader allows)
            problem = "`agents` is nested too deep"
        if problem is not None:
            raise ValueError(f"Expect a probe summary of finite estimates: {problem}")
        try:  # (what the report reads of it: its section, and its pairs with the runs)
            paired = pair_with_runs([summary], runs or {})
            render_markdown({"runs": {}, "comparisons": [], "probes": [summary], "paired": paired})
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, StopIteration) as exc:
            raise ValueError(
                f"Expect a probe summary the report can read; {type(exc).__name__}: {exc}"
            ) from None

    return read_config_dict(path, check)


def _estimates_problem(value: Any, where: str) -> str | None:
    """What is wrong with the numbers of a probe summary's skills (None: nothing): each
    number finite, each estimate's ``low``, ``mean`` and ``high`` in order and at most 1 (a
    rate, a difference of rates, or a single-step skill, (p - base) / (1 - base), which
    has no lower bound but the baseline's)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    if isinstance(value, (int, float)):  # (an int past a float's range: OverflowError)
        return None if is_finite(value) else f"`{where}` is {brief(value)}"
    if not isinstance(value, (list, dict)):
        return None  # (the shapes are the report's own checks')
    for key, item in enumerate(value) if isinstance(value, list) else value.items():
        problem = _estimates_problem(item, f"{where}.{key}")
        if problem is not None:
            return problem
    if isinstance(value, dict) and {"mean", "low", "high"} <= value.keys():
        bounds = [value[k] for k in ("low", "mean", "high") if value[k] is not None]
        if not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and x <= 1 for x in bounds
        ) or bounds != sorted(bounds):
            shown = {k: value[k] for k in ("mean", "low", "high")}
            return f"`{where}` is {shown}: expect low <= mean <= high <= 1"
    return None


#: What `pair_with_runs` reads of a run summary.
_PAIRED_RUN = {
    "config": {"agent?": "str"},
    "analysis": Each(
        dict.fromkeys(
            ("optimal_step_rate_on_track", "optimal_step_rate_after_error", "recovery_rate"),
            Maybe("number"),
        ),
        least=1,
    ),
}


def pair_with_runs(
    probe_summaries: Sequence[Mapping[str, Any]], runs: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Rows pairing each evaluation run with the probe skills of the same agent.

    An evaluation run and a probed agent are paired when their reprs match
    (``OracleAgent(epsilon=0.1)``) and they played the same envs; the group is "all" (or
    the only env). A team run has no one agent to pair.

    Raises:
        ValueError: a probe summary or a run summary holds less than is paired
            (`check_probe_summary`), naming the field.
    """
    if not isinstance(probe_summaries, (list, tuple)):
        raise ValueError(f"Expect `probe_summaries` to be a list, got {brief(probe_summaries)}")
    for i, summary in enumerate(probe_summaries):
        check_probe_summary(summary, f"probe_summaries[{i}]")
    problem = field_problem(runs, Each(_PAIRED_RUN), "runs")
    if problem is not None:
        raise ValueError(problem)
    # (paired by agent and envs: an evaluation on Maze-Easy beside probes on KeyQuest-Easy
    # read as one agent's comparison across two games)
    skills: dict[tuple[str, frozenset[str]], Mapping[str, Any]] = {}
    for summary in probe_summaries:
        cfg = summary["config"]
        for label, agent in zip(cfg["labels"], cfg["agents"], strict=True):
            groups = summary["agents"][label]
            group = groups[ALL if ALL in groups else next(iter(groups))]
            skills[agent, frozenset(cfg["envs"])] = group
    rows = []
    for label, run in runs.items():
        agent, envs = run["config"].get("agent"), run["config"].get("envs")
        if agent is None or not isinstance(envs, list | tuple):  # (a team run: `agents`)
            continue
        g = skills.get((agent, frozenset(envs)))
        if g is None:
            continue
        a = run["analysis"][ALL if ALL in run["analysis"] else next(iter(run["analysis"]))]
        rows.append(
            {
                "run": label,
                "optimal_on_track": a["optimal_step_rate_on_track"],
                "optimal_after_error": a["optimal_step_rate_after_error"],
                "recovery_rate": a["recovery_rate"],
                "single_step_skill": g["single_step_skill"],
                "noop_rate": g["noop_rate"],
                "recovery_specific_skill": g["recovery_specific_skill"],
                "probe_win_rate": g["recovery"][ALL]["win_rate"]["mean"],
                "probe_control_win_rate": g["recovery"][ALL]["control_win_rate"]["mean"],
            }
        )
    return rows
