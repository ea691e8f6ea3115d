"""Estimates and run plans that cannot be are refused by name, never read as if they could."""

from __future__ import annotations

import pytest

from turnbudget.eval.analysis import RunTally
from turnbudget.eval.estimator import GridEstimate, difference_interval


def _grid(low: float, mean: float, high: float) -> dict:
    return {"ks": [1], "ts": [5], "mean": [[mean]], "low": [[low]], "high": [[high]],
            "n_tasks": 3, "n_per_task": 1, "confidence": 0.95}  # fmt: skip


def test_a_grid_whose_interval_does_not_hold_its_estimate_is_refused():
    with pytest.raises(ValueError, match=r"low <= mean <= high"):
        GridEstimate.from_dict(_grid(0.9, 0.5, 0.1))
    with pytest.raises(ValueError, match=r"low <= mean <= high"):
        GridEstimate.from_dict(_grid(0.1, 0.5, 0.4))
    # (rounded to 6 decimals by `to_dict`: an estimate a rounding past its bound is read)
    assert GridEstimate.from_dict(_grid(0.5000004, 0.5, 0.6)).mean.item() == 0.5


def test_a_difference_of_estimates_outside_their_intervals_is_refused():
    """(0.9 in [0.1, 0.2]) minus (0.1 in [0, 0.2]) was 0.8 in [-0.006, 1.0]."""
    with pytest.raises(ValueError, match=r"`a` to be \(estimate, low, high\).*low <= estimate"):
        difference_interval((0.9, 0.1, 0.2), (0.1, 0.0, 0.2))
    with pytest.raises(ValueError, match=r"`b` to be"):
        difference_interval((0.1, 0.0, 0.2), (0.05, 0.1, 0.2))
    d, low, high = difference_interval((0.5, 0.4, 0.6), (0.3, 0.2, 0.4))
    assert low < d < high and d == pytest.approx(0.2)


def test_a_run_plan_with_fewer_episodes_a_task_than_its_largest_k_is_refused():
    """It was accepted, then every task was dropped and the error blamed failures to run
    (there were none)."""
    config = {"label": "a", "envs": ["e"], "ks": [1, 4], "ts": [5, 10], "n": 2,
              "tasks": [0, 1], "mode": "truncate"}  # fmt: skip
    with pytest.raises(ValueError, match=r"n \(2\) to be at least max\(ks\) \(4\)"):
        RunTally(config)
    assert RunTally({**config, "n": 4}).config["n"] == 4


def test_runs_summarized_at_different_confidences_are_not_compared():
    """The verdict read each run's own intervals: at 0.5 the same agent was clearly ahead of
    itself, in a row the report calls 95%."""
    from turnbudget.eval.analysis import compare_runs, summarize_run

    config = {"label": "x", "envs": ["e"], "ks": [1], "ts": [5, 10], "n": 4,
              "tasks": list(range(6)), "mode": "truncate"}  # fmt: skip

    def run(label, fsts, confidence):
        episodes = [
            {"episode_id": f"e|{seed}|{rep}", "env_id": "e", "seed": seed, "turn_budget": 10,
             "rep": rep, "success": fst is not None, "first_success_turn": fst,
             "turns_used": fst or 10}
            for seed in range(6) for rep, fst in enumerate(fsts[seed])
        ]  # fmt: skip
        return summarize_run({**config, "label": label}, episodes, n_bootstrap=0,
                             confidence=confidence)  # fmt: skip

    good = [[3, 4, None, 6]] * 6
    bad = [[None, 4, None, None]] * 6
    runs = {"a": run("a", good, 0.95), "b": run("b", bad, 0.5)}
    with pytest.raises(ValueError, match=r"one confidence .* at 0\.95 and .* at 0\.5"):
        compare_runs(runs)
    runs["b"] = run("b", bad, 0.95)
    assert compare_runs(runs)[0]["better"] == "a"
