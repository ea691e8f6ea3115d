"""Pass@(K,T) evaluation: one core, in wings that point one way.

- `turnbudget.eval.estimator` and `turnbudget.eval.analysis`: the maths at the
  centre (the unbiased Pass@(K,T) estimator, its intervals and the score
  intervals of every rate and skill; grids and the single-step / recovery
  analysis from episode records);
- `turnbudget.eval.run`: running: the plan, the one episode driver, the
  backends (local, pool, Ray), locks, what agents see, sealed agents (`seal`);
  `evaluate` and `evaluate_team` are its front doors;
- `turnbudget.eval.probes`: teacher-forced probes (plan, run, summary): `probe`,
  `compare_probes` (contrasts between agents), and `validate` (the metrics
  checked on control agents whose true skills are known);
- `turnbudget.eval.report`: summaries, Markdown and plots, built by the caller.

An import-linter contract keeps them apart (report <- probes <- run <- analysis
<- estimator). The names below load their wing on first use, so importing this
package stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from turnbudget.eval.estimator import (
    GridEstimate,
    bootstrap_seeds_tasks,
    check_grid_values,
    clustered_rate,
    estimate_grid,
    pass_at_k,
    pass_at_kt,
    wilson_interval,
)

__all__ = [
    "EvalResult",
    "GridEstimate",
    "ProbeResult",
    "SealedAgentError",
    "TeamEvalResult",
    "baseline_teams",
    "bootstrap_seeds_tasks",
    "build_report",
    "check_grid_values",
    "clustered_rate",
    "compare_probes",
    "estimate_grid",
    "evaluate",
    "evaluate_team",
    "load_run",
    "pass_at_k",
    "pass_at_kt",
    "probe",
    "seal",
    "team_step_probe",
    "validate",
    "wilson_interval",
]

# name -> the module that defines it, imported on first use (evaluate pulls in tqdm and the
# wrapper stack; evaluate_team needs the multiagent extra, pettingzoo).
_LAZY = {
    "evaluate": "turnbudget.eval.run.evaluate",
    "EvalResult": "turnbudget.eval.run.evaluate",
    "load_run": "turnbudget.eval.run.evaluate",
    "evaluate_team": "turnbudget.eval.run.team",
    "TeamEvalResult": "turnbudget.eval.run.team",
    "baseline_teams": "turnbudget.eval.run.team",
    "probe": "turnbudget.eval.probes.run",
    "ProbeResult": "turnbudget.eval.probes.run",
    "team_step_probe": "turnbudget.eval.probes.team",
    "compare_probes": "turnbudget.eval.probes.summary",
    "validate": "turnbudget.eval.probes.validate",
    "build_report": "turnbudget.eval.report",
    "seal": "turnbudget.eval.run.sealed",
    "SealedAgentError": "turnbudget.eval.run.sealed",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
