"""``turnbudget report RUN_DIR``: rebuild report.md, summary.json and the plots from the logs."""

from __future__ import annotations

import argparse
import sys

from turnbudget._checks import escaped_controls
from turnbudget.cli.flags import directory_path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", type=directory_path, help="a run directory, or a directory of run directories"
    )
    parser.add_argument(
        "--no-plots", action="store_true", help="write report.md and summary.json only"
    )


def run(args: argparse.Namespace) -> int:
    from turnbudget.cli import error_line
    from turnbudget.eval.report import build_report

    try:
        summary = build_report(args.run_dir, plots=not args.no_plots)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(error_line("report", exc), file=sys.stderr)
        return 2
    print(f"{len(summary['runs'])} run(s): {escaped_controls(str(args.run_dir / 'report.md'))}")
    return 0
