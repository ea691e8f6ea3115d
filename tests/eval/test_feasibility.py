"""Feasibility from the oracle (issue 21): every episode record says whether its task fitted in
the budget and a success's step regret; the analysis scores Pass@(K,T) over the tasks the
budget made feasible and against T / d*, so a failure the budget made certain is never read
as a skill gap."""

from __future__ import annotations

import json

import pytest

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.eval.analysis import RATIO_BINS, summarize_run
from turnbudget.eval.report.markdown import render_markdown
from turnbudget.eval.run.evaluate import evaluate

ENVS = ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"]
TS = [4, 6, 8, 10, 14, 24]


@pytest.fixture(scope="module")
def oracle_run():
    """The perfect agent, no errors: it fails exactly where the budget made success impossible."""
    return evaluate(ENVS, OracleAgent(0.0), ks=[1, 2], ts=TS, n=2, tasks=15, n_bootstrap=50)


def test_every_episode_record_states_feasibility_and_step_regret():
    run = evaluate(
        ENVS, OracleAgent(0.3), ks=[1], ts=[6, 12], n=2, tasks=6, mode="rerun", errors=0.2,
        n_bootstrap=0,
    )  # fmt: skip
    assert {e["feasible"] for e in run.episodes} == {True, False}
    for e in run.episodes:
        assert e["feasible"] == (e["initial_distance"] <= e["turn_budget"])
        if e["success"]:
            assert e["step_regret"] == e["first_success_turn"] - e["initial_distance"] >= 0
        else:
            assert e["step_regret"] is None
        if not e["feasible"]:
            assert not e["success"]


def test_a_perfect_agent_passes_every_feasible_task_and_none_below_its_optimal_length(oracle_run):
    for group, analysis in oracle_run.summary["analysis"].items():
        f = analysis["feasibility"]
        assert f["tasks"] == (30 if group == "all" else 15)
        all_tasks = oracle_run.summary["groups"][group]["truncate"]["mean"][0]
        for j, cell in enumerate(f["feasible"]):
            assert cell["tasks"] == f["feasible_tasks"][j]
            if cell["tasks"]:  # no skill gap where success was possible
                assert cell["mean"] == [1.0, 1.0]
            assert all_tasks[j] == pytest.approx(cell["tasks"] / f["tasks"], abs=1e-6)
        assert 0 in f["feasible_tasks"] and f["feasible_tasks"][-1] == f["tasks"]
        for row, (lo, _) in zip(f["by_ratio"], RATIO_BINS, strict=True):
            if row["cells"]:
                assert row["mean"] == ([0.0, 0.0] if lo < 1 else [1.0, 1.0])
        assert f["step_regret"]["max"] == 0 and f["step_regret"]["successes"] > 0


def test_feasibility_separates_the_budget_from_skill():
    """Random play fails at small T either way; over feasible tasks its Pass@1 stays below the
    oracle's 1.0, and c = T / d* below 1 is 0 for any agent."""
    run = evaluate(ENVS, RandomAgent(), ks=[1], ts=TS, n=2, tasks=15, n_bootstrap=0)
    f = run.summary["analysis"]["all"]["feasibility"]
    assert f["by_ratio"][0]["cells"] and f["by_ratio"][0]["mean"] == [0.0]
    assert all(c["mean"] is None or c["mean"][0] < 1.0 for c in f["feasible"])


def test_the_report_shows_feasibility_and_old_records_still_summarize(oracle_run):
    report = render_markdown({"runs": {"oracle": oracle_run.summary}, "comparisons": []})
    assert "## Feasibility (from the oracle)" in report
    assert "| T / d* | cells (tasks) | Pass@1 | Pass@2 |" in report
    assert "| < 1 |" in report and "Step regret of the" in report
    # Records without the oracle's lengths (or written before these fields): no table, no error.
    config = oracle_run.config.to_dict()
    old = [
        {k: v for k, v in e.items() if k not in ("feasible", "step_regret", "initial_distance")}
        for e in json.loads(json.dumps(oracle_run.episodes))
    ]
    summary = summarize_run(config, old, n_bootstrap=0)
    assert all(a["feasibility"] is None for a in summary["analysis"].values())
    assert "Feasibility" not in render_markdown({"runs": {"old": summary}, "comparisons": []})
    # Records that lack only the new fields summarize as before.
    kept = [{k: v for k, v in e.items() if k not in ("feasible", "step_regret")} for e in old]
    assert summarize_run(config, kept, n_bootstrap=0)["groups"] == summary["groups"]


def test_team_episode_records_state_feasibility():
    pytest.importorskip("pettingzoo")
    from turnbudget.eval.run.team import evaluate_team

    run = evaluate_team("vault_v0", dict.fromkeys(("operator", "runner"), "oracle"),
                        ks=[1], ts=[6, 30], tasks=6, n=1, mode="rerun", n_bootstrap=0)  # fmt: skip
    assert {e["feasible"] for e in run.episodes} == {True, False}
    for e in run.episodes:
        assert e["feasible"] == (e["initial_distance"] <= e["turn_budget"]) == e["success"]
        assert e["step_regret"] == (0 if e["success"] else None)
    f = run.summary["analysis"]["turnbudget/vault_v0"]["feasibility"]
    assert all(c["mean"] in (None, [1.0]) for c in f["feasible"])


def test_the_step_regret_is_the_same_in_truncate_and_rerun_for_a_budget_blind_agent(tmp_path):
    """Rerun mode pooled the successes of every budget's runs: one play that fit in three
    budgets counted three times, and short wins (all a small T allows) weighed more (35
    successes and a mean regret of 6.49 where truncate, on the same plays, had 18 and 6.67)."""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval import evaluate

    kwargs = dict(ks=[1], ts=[12, 20, 30], n=1, tasks=20, n_bootstrap=0)
    regrets = {
        mode: evaluate(
            "turnbudget/KeyQuest-Easy-v0", OracleAgent(0.4), mode=mode, **kwargs
        ).summary["analysis"]["turnbudget/KeyQuest-Easy-v0"]["feasibility"]["step_regret"]
        for mode in ("truncate", "rerun")
    }
    assert regrets["truncate"] == regrets["rerun"]
    assert regrets["truncate"]["successes"] <= 20  # (one play a task)
