"""Team wrappers: the single-agent budget, visibility, error and record logic, per agent, and
the classic-RL adapters (discrete actions with masks, text features, numeric info) per agent."""

from __future__ import annotations

from turnbudget.multiagent.wrappers.inject_team_errors import InjectTeamErrors
from turnbudget.multiagent.wrappers.record_team_outcomes import RecordTeamOutcomes
from turnbudget.multiagent.wrappers.reveal_team_budget import RevealTeamBudget
from turnbudget.multiagent.wrappers.team_discrete_actions import TeamDiscreteActions
from turnbudget.multiagent.wrappers.team_numeric_info import TeamNumericInfo
from turnbudget.multiagent.wrappers.team_text_features import TeamTextFeatures
from turnbudget.multiagent.wrappers.team_turn_budget import TeamTurnBudget

__all__ = [
    "InjectTeamErrors",
    "RecordTeamOutcomes",
    "RevealTeamBudget",
    "TeamDiscreteActions",
    "TeamNumericInfo",
    "TeamTextFeatures",
    "TeamTurnBudget",
]
