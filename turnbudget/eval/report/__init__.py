"""Reports: summaries, Markdown and plots, built by whoever asked for them from run logs.

`evaluate`, `probe` and `evaluate_team` return results and write records;
reports are the caller's (the CLI, a script, the user): `build_report` for a
directory of runs (and probes), `write_run_summary` for one run (a team run's too:
its summary has an evaluation's shape), `write_probe_report` for one probe run.
"""

from __future__ import annotations

from turnbudget.eval.report.build import (
    PROBE_REPORT_FILE,
    REPORT_FILE,
    SUMMARY_FILE,
    build_report,
    find_probe_summaries,
    find_runs,
    load_run_summary,
    pair_with_runs,
    report_is_current,
    write_probe_report,
    write_run_summary,
)
from turnbudget.eval.report.markdown import (
    failure_bounds_lines,
    render_markdown,
    render_probe_markdown,
)
from turnbudget.eval.report.plots import (
    check_plotting,
    plot_heatmap,
    plot_pass1_curves,
    plot_recovery,
    plot_recovery_by_budget,
    write_plots,
)

__all__ = [
    "PROBE_REPORT_FILE",
    "REPORT_FILE",
    "SUMMARY_FILE",
    "build_report",
    "check_plotting",
    "failure_bounds_lines",
    "find_probe_summaries",
    "find_runs",
    "load_run_summary",
    "pair_with_runs",
    "plot_heatmap",
    "plot_pass1_curves",
    "plot_recovery",
    "plot_recovery_by_budget",
    "render_markdown",
    "render_probe_markdown",
    "report_is_current",
    "write_plots",
    "write_probe_report",
    "write_run_summary",
]
