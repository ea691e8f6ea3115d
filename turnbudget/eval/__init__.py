"""Pass@(K,T) evaluation: the estimator, `evaluate` and its backends, probes, the analysis and the reports.

`plan` turns `evaluate`'s arguments into episodes, `runner` plays them,
`backends` decide where (this process, a process pool, ...); `probe` runs
teacher-forced probes of single-step and recovery skill.
"""

from __future__ import annotations

from typing import Any

from turnbudget.eval.estimator import (
    GridEstimate,
    bootstrap_seeds_tasks,
    estimate_grid,
    pass_at_k,
    pass_at_kt,
)

# Imported here, not lazily: a submodule named like the function would otherwise replace
# the function on this package as soon as anything imports ``turnbudget.eval.probe``.
from turnbudget.eval.probe import probe

__all__ = [
    "GridEstimate",
    "bootstrap_seeds_tasks",
    "estimate_grid",
    "evaluate",
    "evaluate_team",
    "pass_at_k",
    "pass_at_kt",
    "probe",
]


def __getattr__(name: str) -> Any:  # evaluate pulls in tqdm and the wrapper stack: load it on use
    if name == "evaluate":
        from turnbudget.eval.rollout import evaluate

        return evaluate
    if name == "evaluate_team":  # needs the multiagent extra (pettingzoo)
        from turnbudget.eval.team import evaluate_team

        return evaluate_team
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
