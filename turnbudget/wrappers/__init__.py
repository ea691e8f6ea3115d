"""Composable wrappers that turn any turnbudget env into a turn-budget experiment.

Stacking order, innermost first (what `make`, also `turnbudget.make`, builds):
`TurnBudget` (inside every registered id) → `SampleTurnBudget` → `InjectErrors`
→ `RecordStepOutcomes` → `ProcessReward` → `RevealBudget` → `DiscreteActions`
→ `TextFeatures` → `NumericInfo`; `HistoryFeatures` (memory and action-slot features for
classic RL) goes outside `TextFeatures` and inside `NumericInfo`.
"""

from __future__ import annotations

from turnbudget.records import EpisodeRecord, InjectedError, OutcomeRecord, StepRecord
from turnbudget.wrappers.discrete_actions import DiscreteActions
from turnbudget.wrappers.history_features import HistoryFeatures
from turnbudget.wrappers.inject_errors import ERROR_KINDS, InjectErrors
from turnbudget.wrappers.numeric_info import NumericInfo
from turnbudget.wrappers.process_reward import ProcessReward
from turnbudget.wrappers.record_step_outcomes import RecordStepOutcomes
from turnbudget.wrappers.reveal_budget import RevealBudget
from turnbudget.wrappers.sample_turn_budget import BudgetMix, SampleTurnBudget
from turnbudget.wrappers.stack import STACK_ORDER, make, set_turn_budget
from turnbudget.wrappers.text_features import TextFeatures
from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = [
    "ERROR_KINDS",
    "STACK_ORDER",
    "BudgetMix",
    "DiscreteActions",
    "EpisodeRecord",
    "HistoryFeatures",
    "InjectErrors",
    "InjectedError",
    "NumericInfo",
    "OutcomeRecord",
    "ProcessReward",
    "RecordStepOutcomes",
    "RevealBudget",
    "SampleTurnBudget",
    "StepRecord",
    "TextFeatures",
    "TurnBudget",
    "make",
    "set_turn_budget",
]
