"""Truncate mode reads each T off the episodes played at max(T): exact only for an agent that
cannot see its budget. Asked for one that can, it says so."""

from __future__ import annotations

import pytest

from turnbudget.agents import OracleAgent
from turnbudget.eval import evaluate


@pytest.mark.parametrize("how", ["budget_aware", "reveal"])
def test_truncate_mode_for_an_agent_that_sees_its_budget_is_warned(how):
    """Its grid below max(T) is what it did in the first T turns of a longer budget (0.9 at
    T = 7 where it wins 0.3 under T = 7): it was read as exact without a word."""
    from turnbudget.agents.controls import LookOracle

    agent = LookOracle("last") if how == "budget_aware" else OracleAgent()
    reveal = "always" if how == "reveal" else None
    with pytest.warns(UserWarning, match=r"mode='truncate' .* use mode='rerun' \(or 'both'"):
        evaluate("turnbudget/Maze-Easy-v0", agent, ks=[1], ts=[6, 30], n=1, tasks=2,
                 mode="truncate", reveal=reveal, n_bootstrap=0)  # fmt: skip


class _Hurry:
    """Waits while more than 15 turns are left, then plays the oracle's command."""

    needs_oracle = True
    budget_aware = True

    def reset(self, seed):
        pass

    def act(self, observation, info):
        return "wait" if info["turns_left"] > 15 else (info["oracle_actions"] or ["wait"])[0]


@pytest.mark.parametrize("how", ["budget_aware", "reveal"])
def test_a_team_in_truncate_mode_that_sees_its_budget_is_warned(how, recwarn):
    """`evaluate_team` measures as `evaluate` does, and said nothing: its truncate grid read
    0.0 at T = 15 for a team that wins every task under T = 15 (rerun: 1.0)."""
    from turnbudget.eval import evaluate_team

    team = {"operator": _Hurry(), "runner": _Hurry()}
    if how == "reveal":
        team = dict.fromkeys(team, "oracle")
    kwargs = dict(ks=[1], ts=[15, 40], tasks=3, n_bootstrap=0)
    reveal = "always" if how == "reveal" else None
    with pytest.warns(UserWarning, match=r"mode='truncate' .* use mode='rerun'") as caught:
        evaluate_team("vault_v0", team, mode="truncate", reveal=reveal, **kwargs)
    assert caught[0].filename == __file__  # (the caller's line, past the run-dir lock)
    # (it advised 'both' too, which `evaluate_team` refuses)
    assert "'both'" not in str(caught[0].message)
    if how == "budget_aware":
        assert "operator is budget_aware" in str(caught[0].message)
        rerun = evaluate_team("vault_v0", team, mode="rerun", **kwargs)
        assert rerun.grid.mean.tolist() == [[1.0, 1.0]]
