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
    with pytest.warns(UserWarning, match=r"mode='truncate' .* use mode='rerun'"):
        evaluate("turnbudget/Maze-Easy-v0", agent, ks=[1], ts=[6, 30], n=1, tasks=2,
                 mode="truncate", reveal=reveal, n_bootstrap=0)  # fmt: skip
