"""Team wrappers: the single-agent budget, visibility, error and record logic, per agent."""

from __future__ import annotations

from turnbudget.multiagent.wrappers.team_turn_budget import TeamTurnBudget

__all__ = ["TeamTurnBudget"]
