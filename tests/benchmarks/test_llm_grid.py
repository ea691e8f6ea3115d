"""benchmarks/llm_grid.py: its design check and its baselines in the default suite; the model's
grid at a tiny size in the ``llm`` suite (the real Gemma 3 270M in process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "llm_grid.py"


@pytest.fixture
def grid(load_script):
    return load_script(SCRIPT)


def test_design_check_refuses_a_budget_below_a_tasks_optimal_length(grid):
    lengths = {"turnbudget/Maze-Easy-v0": {0: 6, 3: 7}, "turnbudget/Shop-Easy-v0": {0: 5, 3: 5}}
    grid.check_design(lengths, [7, 10])  # every T >= every d*
    with pytest.raises(
        ValueError, match=r"T = 6 below d\* = 7 of task turnbudget/Maze-Easy-v0 seed 3"
    ):
        grid.check_design(lengths, [10, 6])
    with pytest.raises(ValueError, match="at least one budget"):
        grid.check_design(lengths, [])


def test_default_design_draws_40_tasks_none_longer_than_any_budget(grid):
    config = grid.Config()
    lengths = grid.draw_tasks(config.envs, config.tasks, config.max_optimal)
    assert sum(len(seeds) for seeds in lengths.values()) >= 40
    assert len({tuple(sorted(seeds)) for seeds in lengths.values()}) == 1  # one seed set
    grid.check_design(lengths, config.ts)
    assert max(d for seeds in lengths.values() for d in seeds.values()) <= min(config.ts)


def test_draw_tasks_says_when_too_few_seeds_qualify(grid):
    with pytest.raises(ValueError, match="Expect 3 seeds with d\\* <= 1"):
        grid.draw_tasks(["turnbudget/Maze-Easy-v0"], 3, 1, scan=20)


def test_baselines_separate_at_two_budgets_or_more(grid, tmp_path):
    """Random and OracleAgent(0.3) on the default design: disjoint 95% intervals at >= 2 T."""
    from agent_runs import evaluate_runs  # the script's sibling, on sys.path via load_script

    config = grid.Config(progress=False)
    lengths = grid.draw_tasks(config.envs, config.tasks, config.max_optimal)
    seeds = sorted(lengths[config.envs[0]])
    played = evaluate_runs(grid.baseline_runs(config, seeds), tmp_path, ts=config.ts, seed=0)
    rows = {label: grid.cells(run.result.grid(None, "truncate")) for label, run in played.items()}
    assert sum(grid.separated(rows["random"], rows["oracle-eps0.3"])) >= 2, rows
    # The report of a grid stopped after its baselines says what it has, and no more.
    summary = grid.summarize(config, lengths, played, {})
    assert summary["finished"] == ["random", "oracle-eps0.3"]
    assert "visible_minus_hidden" not in summary
    grid.write_report(summary, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "disjoint intervals at 3 of 3 budgets" in report
    assert "Not run yet" in report


def test_paired_gap_pairs_by_task_and_repeat(grid):
    ts = [7, 14]
    episodes = [  # one task, two repeats: a run at 14 (truncate) and one per T (rerun)
        {"env_id": "e", "seed": 0, "rep": 0, "turn_budget": 14, "first_success_turn": 9, "success": True},
        {"env_id": "e", "seed": 0, "rep": 1, "turn_budget": 14, "first_success_turn": None, "success": False},
        {"env_id": "e", "seed": 0, "rep": 0, "turn_budget": 7, "first_success_turn": 6, "success": True},
        {"env_id": "e", "seed": 0, "rep": 1, "turn_budget": 7, "first_success_turn": None, "success": False},
        {"env_id": "e", "seed": 1, "rep": 0, "turn_budget": 7, "failed_to_run": True},
    ]  # fmt: skip
    truncate = grid.successes(episodes, ts, "truncate")
    rerun = grid.successes(episodes, ts, "rerun")
    assert truncate == {("e", 0, 0): [0, 1], ("e", 0, 1): [0, 0]}
    assert rerun == {("e", 0, 0): [1, 1], ("e", 0, 1): [0, 0]}
    gap = grid.paired_gap(rerun, truncate, len(ts))
    assert gap[0][0] == 0.5 and gap[1][0] == 0.0
    assert all(low <= mean <= high for mean, low, high in gap)


@pytest.mark.llm
def test_llm_grid_tiny_on_the_local_model(grid, tmp_path):
    pytest.importorskip("llama_cpp")
    out = tmp_path / "grid"
    config = grid.Config(
        out=str(out), results=str(tmp_path / "results"), tasks=1, ts=(7,), ks=(1,), n=1,
        probe_tasks=1, progress=False,
    )  # fmt: skip
    summary = grid.main(config)
    assert set(summary["finished"]) == {"random", "oracle-eps0.3", "llm-hidden", "llm-visible",
                                        "probes"}  # fmt: skip
    for key in ("llm_minus_random", "visible_minus_hidden", "rerun_minus_truncate"):
        ((mean, low, high),) = summary[key]
        assert low <= mean <= high
    assert summary["timing"]["model_decisions"] > 0
    assert summary["probes"]["tasks"] == config.probe_tasks * len(config.envs)  # one per env
    assert "single_step_skill" in summary["probes"]
    saved = json.loads((tmp_path / "results" / "summary.json").read_text())
    assert saved["pass_at_1"] == summary["pass_at_1"]
    rebuilt = grid.main(grid.Config(out=str(out), report_only=True))
    assert rebuilt["pass_at_1"] == summary["pass_at_1"]
    assert "Regenerate" in (out / "report.md").read_text()


def test_partial_scores_only_the_tasks_a_stopped_run_finished(grid, tmp_path):
    def episode(seed, rep, budget, first):
        return {
            "record": "episode",
            "env_id": "e",
            "seed": seed,
            "rep": rep,
            "turn_budget": budget,
            "first_success_turn": first,
            "success": first is not None,
        }

    lines = [episode(0, 0, 14, 5), episode(0, 1, 14, None), episode(1, 0, 14, 3)]  # seed 1: 1 of 2
    (tmp_path / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    part = grid.partial(tmp_path, [7, 14], 2, "truncate")
    assert part["tasks"] == ["e seed 0"] and part["episodes"] == 3
    assert [row[0] for row in part["pass_at_1"]] == [0.5, 0.5]
    assert all(low <= mean <= high for mean, low, high in part["pass_at_1"])
