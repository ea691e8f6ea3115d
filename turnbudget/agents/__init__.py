"""Agents behind one small protocol (`base`), the baselines, the controls (agents whose
true skill is known: `controls`), and a registry of specs.

``make_agent("oracle:0.1")`` builds an agent from a spec; `registry` lists the
names and how to add one (``register_agent`` or a ``turnbudget.agents`` entry point).
"""

from __future__ import annotations

from turnbudget.agents.base import (
    BUDGET_KEYS,
    EXECUTED_KEY,
    ORACLE_KEY,
    Agent,
    AsyncAgent,
    AsyncBatch,
    BatchAgent,
    agent_flags,
    in_flight,
)
from turnbudget.agents.baselines import OracleAgent, RandomAgent
from turnbudget.agents.controls import (
    LookOracle,
    PingPong,
    RecoveryControl,
    UndoReflex,
    make_control,
)
from turnbudget.agents.registry import list_agents, make_agent, register_agent

__all__ = [
    "BUDGET_KEYS",
    "EXECUTED_KEY",
    "ORACLE_KEY",
    "Agent",
    "AsyncAgent",
    "AsyncBatch",
    "BatchAgent",
    "LookOracle",
    "OracleAgent",
    "PingPong",
    "RandomAgent",
    "RecoveryControl",
    "UndoReflex",
    "agent_flags",
    "in_flight",
    "list_agents",
    "make_agent",
    "make_control",
    "register_agent",
]
