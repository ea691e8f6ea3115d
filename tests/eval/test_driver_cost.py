"""What the driver process does once per run rather than once per episode (issue 26): the
checks a record read back is held to are built once, Pass@k is computed once per distinct
(n, c, k), and the faster checks accept and refuse exactly what the old ones did."""

from __future__ import annotations

import pytest

from turnbudget.agents import make_agent
from turnbudget.eval import analysis
from turnbudget.eval.run.evaluate import evaluate, load_run
from turnbudget.records import MAX_COUNT, RunPlan
from turnbudget.records.files import _count, _counts


def test_a_plans_record_checks_are_built_once():
    plan = RunPlan(["e"], range(1000), 4, [8], [8])
    assert plan.rules is plan.rules  # (were rebuilt, with sets of every task, per record)
    assert plan.has("e|seed=999|rep=3|T=8") and not plan.has("e|seed=1000|rep=3|T=8")
    assert plan.episode_problem(
        {"episode_id": "e|seed=5|rep=0|T=8", "env_id": "e", "seed": 5, "rep": 0, "turn_budget": 8}
    ) is None  # fmt: skip


def test_pass_at_k_is_computed_once_per_distinct_count(tmp_path):
    result = evaluate(
        ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"], make_agent("random"),
        ks=[1, 2, 4], ts=[4, 8, 16, 32], n=4, tasks=12, out=tmp_path / "run", n_bootstrap=0,
    )  # fmt: skip
    analysis._pass_at_k.cache_clear()
    config, log = load_run(tmp_path / "run")
    assert analysis.summarize_run(config, log.stream(), n_bootstrap=0) == result.summary
    info = analysis._pass_at_k.cache_info()
    # n = 4, c in 0..4, k in (1, 2, 4): at most 15 values, asked for 3 groups x 24 tasks' cells
    assert info.misses <= 15 and info.hits > 10 * info.misses


@pytest.mark.parametrize(
    "values",
    [
        [], [0], [0, 1, 2], [MAX_COUNT], [MAX_COUNT + 1], [-1, 2], [True], [1, False],
        [1.0], [1, 2.5], [None], ["1"], [3, 2, 1, MAX_COUNT, 0],
    ],
    ids=repr,
)  # fmt: skip
def test_the_list_check_is_the_element_check(values):
    assert _counts(values) == all(map(_count, values))
