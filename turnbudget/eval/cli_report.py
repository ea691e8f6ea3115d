"""``turnbudget report RUN_DIR``: rebuild report.md, summary.json and the plots from the logs."""

from __future__ import annotations

from turnbudget.eval.cli import add_report_arguments as add_arguments
from turnbudget.eval.cli import run_report as run

__all__ = ["add_arguments", "run"]
