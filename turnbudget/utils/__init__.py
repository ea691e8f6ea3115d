"""What users run on their own envs: `check_text_env`, the contract checker."""

from __future__ import annotations

from turnbudget.utils.check_text_env import HOSTILE_COMMANDS, CheckReport, check_text_env

__all__ = ["HOSTILE_COMMANDS", "CheckReport", "check_text_env"]
