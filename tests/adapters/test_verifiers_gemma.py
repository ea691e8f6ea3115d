"""A verifiers evaluation against a real local model (`turnbudget serve-local`'s Gemma 3 270M)
that reports Pass@(K,T): small (two tasks, K=2, T=3) since the model takes about a
second per decision on this CPU.

Marker ``llmrl`` (the trainers' doors, run in their own venv: verifiers and the compat
extra cannot share one); needs the ``llm`` extra too (a real llama.cpp server).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.llmrl
pytest.importorskip("verifiers.v1")

from turnbudget.adapters.rows import task_rows  # noqa: E402
from turnbudget.adapters.verifiers import evaluate_rows, pass_at_kt, rewards_pass_at_k  # noqa: E402

K, T = 2, 3


def test_a_verifiers_evaluation_of_gemma_reports_pass_at_kt(llm_server):
    rows = task_rows("turnbudget/Maze-Easy-v0", seeds=2, turn_budget=T)
    episodes = evaluate_rows(
        rows, model=llm_server.model, base_url=llm_server.base_url, n=K,
        sampling={"temperature": 1.0, "max_tokens": 16}, max_concurrent=2,
    )  # fmt: skip
    assert len(episodes) == len(rows) * K and all(e.ok for e in episodes)
    for episode in episodes:
        (trace,) = episode.traces
        turns = trace.info["turnbudget"]["episode"]["turns_used"]
        assert 1 <= turns <= T and trace.num_turns == turns  # one model call per game turn
        assert trace.info["turnbudget"]["outcome"] in ("won", "lost", "truncated")
    grid = pass_at_kt(episodes, ks=[1, K], ts=[1, 2, T], n_bootstrap=200)
    print(f"\nGemma 3 270M through verifiers, Pass@(K,T) over {grid.n_tasks} tasks:")
    for i, k in enumerate(grid.ks):
        print(
            f"  K={k}: " + "  ".join(f"T={t}: {grid.mean[i, j]:.2f}" for j, t in enumerate(grid.ts))
        )
    assert grid.mean.shape == (2, 3) and ((grid.mean >= 0) & (grid.mean <= 1)).all()
    assert (grid.mean[:, :-1] <= grid.mean[:, 1:]).all()  # more turns never hurt
    for i, k in enumerate(grid.ks):
        assert rewards_pass_at_k(episodes, k) == pytest.approx(grid.mean[i, -1], abs=1e-12)
