"""What users run on their own envs: `check_text_env`, the contract checker, and
`check_group_seeding`, whether an env keeps what a GRPO group needs."""

from __future__ import annotations

from turnbudget.utils.check_text_env import HOSTILE_COMMANDS, CheckReport, check_text_env
from turnbudget.utils.group_seeding import (
    CHECKS,
    GroupSeedingReport,
    SeedableEnv,
    SeedingFailure,
    check_group_seeding,
)

__all__ = [
    "CHECKS",
    "HOSTILE_COMMANDS",
    "CheckReport",
    "GroupSeedingReport",
    "SeedableEnv",
    "SeedingFailure",
    "check_group_seeding",
    "check_text_env",
]
