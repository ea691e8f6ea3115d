"""The doors of LLM-RL trainers: the games served to OpenEnv clients, TRL's and verifiers'
environment classes, GEM registration; each behind its own extra and imported on use.

Every adapter keeps what trainers tend to lose: a row (or a reset) carries
``{env_id, seed, turn_budget}``, so K attempts of a GRPO group share one start
state and each row can carry its own budget, and ``terminated`` stays apart
from ``truncated``. `turnbudget.utils.check_group_seeding` checks those
properties in anyone's environment.
"""
