"""Agents behind one small protocol (`base`), the baselines, and a registry of specs.

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
from turnbudget.agents.registry import list_agents, make_agent, register_agent

__all__ = [
    "BUDGET_KEYS",
    "EXECUTED_KEY",
    "ORACLE_KEY",
    "Agent",
    "AsyncAgent",
    "AsyncBatch",
    "BatchAgent",
    "OracleAgent",
    "RandomAgent",
    "agent_flags",
    "in_flight",
    "list_agents",
    "make_agent",
    "register_agent",
]
