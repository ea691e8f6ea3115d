"""``turnbudget eval``: run a Pass@(K,T) evaluation (see `turnbudget.eval.cli`)."""

from __future__ import annotations

from turnbudget.eval.cli import add_eval_arguments as add_arguments
from turnbudget.eval.cli import run_eval as run

__all__ = ["add_arguments", "run"]
