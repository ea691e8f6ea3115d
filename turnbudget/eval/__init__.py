"""Pass@(K,T) evaluation: the estimator, `evaluate` and its backends, the analysis and the reports.

`plan` turns `evaluate`'s arguments into episodes, `runner` plays them,
`backends` decide where (this process, a process pool, ...).
"""

from __future__ import annotations

from typing import Any

from turnbudget.eval.estimator import GridEstimate, estimate_grid, pass_at_k, pass_at_kt

__all__ = ["GridEstimate", "estimate_grid", "evaluate", "evaluate_team", "pass_at_k", "pass_at_kt"]


def __getattr__(name: str) -> Any:  # evaluate pulls in tqdm and the wrapper stack: load it on use
    if name == "evaluate":
        from turnbudget.eval.rollout import evaluate

        return evaluate
    if name == "evaluate_team":  # needs the multiagent extra (pettingzoo)
        from turnbudget.eval.team import evaluate_team

        return evaluate_team
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
