"""The loop the research scripts share: one `turnbudget.eval.evaluate` call per labelled run.

`llm_agent.py` and `llm_grid.py` describe their job as a list of `Run`s (a
label, an agent, the `evaluate` settings that differ per run), play them with
`evaluate_runs` (each into ``OUT/<label>/``, timed), then build one report over
``OUT`` with ``turnbudget.eval.report.build_report``. A script imports this
module as a sibling: its own folder is on ``sys.path`` when it runs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from turnbudget.eval import evaluate

__all__ = ["Played", "Run", "evaluate_runs"]


@dataclasses.dataclass(frozen=True)
class Run:
    """One `evaluate` call of a job: ``agent`` under ``label``, with its own ``settings``."""

    label: str
    agent: Any
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Played:
    """What a run gave: `evaluate`'s result, and the wall seconds it took."""

    result: Any
    seconds: float


def evaluate_runs(runs: Iterable[Run], out: Path, **common: Any) -> dict[str, Played]:
    """Evaluate each run into ``out / label``, in order, with ``common`` settings and its own.

    ``common`` and a run's ``settings`` are `evaluate` keyword arguments (``envs``
    included); ``out`` and ``label`` are the run's.
    """
    played = {}
    for run in runs:
        started = time.perf_counter()
        result = evaluate(
            agent=run.agent, out=out / run.label, label=run.label, **common, **run.settings
        )
        played[run.label] = Played(result, time.perf_counter() - started)
    return played
