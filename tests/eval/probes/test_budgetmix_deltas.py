"""The BudgetMix report's finding-2 gains from probe records (`per_task`, `probe_deltas`)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from turnbudget.agents import OracleAgent
from turnbudget.eval import probe
from turnbudget.eval.probes.summary import per_task

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
MAZE = "turnbudget/Maze-Easy-v0"


class _Named(OracleAgent):
    """An ε-oracle under a policy label of the BudgetMix run (``policy:ARM-sSEED``)."""

    def __init__(self, epsilon: float, label: str) -> None:
        super().__init__(epsilon)
        self._label = label

    @property
    def name(self) -> str:
        return self._label


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(BENCHMARKS))
        spec = importlib.util.spec_from_file_location("budgetmix_report", BENCHMARKS / "budgetmix_report.py")  # fmt: skip
        module = importlib.util.module_from_spec(spec)
        mp.setitem(sys.modules, "budgetmix_report", module)
        spec.loader.exec_module(module)
    out = tmp / "run"
    agents = [_Named(0.5, "policy:base-s0"), _Named(0.0, "policy:budgetmix-s0")]
    result = probe(MAZE, agents, tasks=4, out=out / "probe" / "Maze-Easy" / "s0", n_bootstrap=50)
    return module, out, result


def test_per_task_counts_are_the_summary_ratios(report):
    _, _, result = report
    rows = per_task(result.records, "policy:budgetmix-s0")
    assert sorted(rows) == [(MAZE, t) for t in range(4)]
    assert all(r["judged"] > 0 and r["optimal"] == r["judged"] for r in rows.values())
    assert all(r["pairs"] > 0 and r["specific"] == 0.0 for r in rows.values())  # the oracle
    baseline = per_task(result.records, "", role="baseline")
    assert sum(r["judged"] for r in baseline.values()) > sum(r["judged"] for r in rows.values())


def test_probe_deltas_single_gain_without_a_recovery_specific_gain(report):
    module, out, _ = report
    config = SimpleNamespace(seeds=(0,))
    d = module.probe_deltas(out, config, "Maze-Easy", "budgetmix")
    assert d["single"].shape == d["recovery"].shape == (1, 4)
    assert np.nanmean(d["single"]) > 0  # ε 0.5 -> 0: a better single step
    assert 0.0 < d["single_chance"] < 1.0
    # Both memoryless: what the oracle gains in single-step skill is no recovery-specific gain.
    assert abs(np.nanmean(d["recovery"])) < 0.25


def test_probe_deltas_leave_a_task_without_judged_answers_nan(report, tmp_path):
    """A task whose single-step answers were all no-ops (or never ran) is NaN, not a crash."""
    module, out, _ = report
    src = out / "probe" / "Maze-Easy" / "s0"
    dst = tmp_path / "probe" / "Maze-Easy" / "s0"
    dst.mkdir(parents=True)
    lines = []
    for line in (src / "probes.jsonl").read_text().splitlines():
        r = json.loads(line)
        if (
            r.get("agent") == "policy:base-s0"
            and r.get("probe") == "single"
            and r["task_seed"] == 1
        ):
            continue  # the base never answered a single-step probe on task 1
        lines.append(line + "\n")
    (dst / "probes.jsonl").write_text("".join(lines))
    d = module.probe_deltas(tmp_path, SimpleNamespace(seeds=(0,)), "Maze-Easy", "budgetmix")
    assert np.isnan(d["single"][0, 1])
    assert not np.isnan(d["single"][0, [0, 2, 3]]).any()
    assert not np.isnan(d["recovery"]).any()
