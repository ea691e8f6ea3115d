"""Composable wrappers that turn any turnbudget env into a turn-budget experiment."""

from __future__ import annotations

from turnbudget.wrappers.turn_budget import TurnBudget

__all__ = ["TurnBudget"]
