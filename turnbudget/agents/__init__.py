"""Agents behind one small protocol: baselines here; policy and LLM agents load lazily."""

from __future__ import annotations

from turnbudget.agents.base import (
    ORACLE_KEY,
    Agent,
    AsyncAgent,
    AsyncBatch,
    BatchAgent,
    agent_flags,
)
from turnbudget.agents.baselines import OracleAgent, RandomAgent

__all__ = [
    "ORACLE_KEY",
    "Agent",
    "AsyncAgent",
    "AsyncBatch",
    "BatchAgent",
    "OracleAgent",
    "RandomAgent",
    "agent_flags",
    "make_agent",
]


def make_agent(spec: str) -> Agent:
    """Build an agent from a short spec: ``random``, ``oracle[:EPSILON]`` or ``policy:PATH[:det]``.

    ``policy:PATH`` loads a saved policy (`turnbudget.agents.policy.PolicyAgent`,
    needs the ``rl`` extra); ``:det`` plays its most likely command.

    Example:
        >>> make_agent("oracle:0.1")
        OracleAgent(epsilon=0.1)
    """
    name, _, arg = spec.strip().partition(":")
    name = name.lower()
    if name == "random" and not arg:
        return RandomAgent()
    if name == "oracle":
        try:
            epsilon = float(arg) if arg else 0.0
        except ValueError:
            raise ValueError(f"Expect `oracle:EPSILON` with a number, got {spec!r}") from None
        return OracleAgent(epsilon)
    if name == "policy":
        from turnbudget.agents.policy import make_policy_agent

        return make_policy_agent(arg)
    raise ValueError(
        f"Unknown agent spec {spec!r}; expect `random`, `oracle[:EPSILON]` or `policy:PATH[:det]`"
    )
