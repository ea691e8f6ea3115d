"""The main job's report (benchmarks/pass_at_kt_report.py) on records made by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_ratios_that_give_a_task_one_budget_read_the_same_column(load_script):
    """``--ratios 1.0,1.1,2.0`` gives a task of d* = 6 the budgets 6, 6 and 12: the report
    asked `pass_at_kt` for T = [6, 6, 12], which refuses a T twice, after every evaluation
    of the job had run."""
    report = load_script(BENCHMARKS / "pass_at_kt_report.py")
    episodes = [
        {"seed": seed, "first_success_turn": turn, "initial_distance": distance}
        for seed, distance, turns in [(0, 6, [6, 9, None]), (1, 10, [10, 11, 20])]
        for turn in turns
    ]
    grids = report.per_task_grids(episodes, ks=[1, 2], ts=[6, 12], ratios=[1.0, 1.1, 2.0])
    relative = grids["rel"]  # [k, c, task]
    assert relative.shape == (2, 3, 2)
    np.testing.assert_array_equal(relative[:, 0, 0], relative[:, 1, 0])  # (6 and 6)
    np.testing.assert_allclose(relative[0, :, 0], [1 / 3, 1 / 3, 2 / 3])  # (T = 6, 6, 12)
    np.testing.assert_allclose(relative[0, :, 1], [1 / 3, 2 / 3, 1])  # (T = 10, 11, 20)
