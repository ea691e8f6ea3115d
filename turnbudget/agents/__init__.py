"""Agents behind one small protocol: baselines here; policy and LLM agents load lazily."""

from __future__ import annotations

from typing import Any

from turnbudget.agents.base import (
    ORACLE_KEY,
    Agent,
    AsyncAgent,
    AsyncBatch,
    BatchAgent,
    agent_flags,
    in_flight,
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
    "in_flight",
    "make_agent",
]


def make_agent(spec: str, **options: Any) -> Agent:
    """Build an agent from a short spec: ``random``, ``oracle[:EPSILON]`` or ``llm:MODEL``.

    ``options`` go to the LLM agent (`turnbudget.agents.llm.ChatAgent`:
    ``base_url``, ``api_key_env``, ``concurrency``, ...); None values are
    ignored. The LLM agent is imported only when asked for.

    Example:
        >>> make_agent("oracle:0.1")
        OracleAgent(epsilon=0.1)
    """
    name, _, arg = spec.strip().partition(":")
    name = name.lower()
    if name == "llm":
        from turnbudget.agents.llm import make_llm_agent

        return make_llm_agent(arg, **options)
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise ValueError(f"Options {given} apply to `llm:MODEL` agents only, not {spec!r}")
    if name == "random" and not arg:
        return RandomAgent()
    if name == "oracle":
        try:
            epsilon = float(arg) if arg else 0.0
        except ValueError:
            raise ValueError(f"Expect `oracle:EPSILON` with a number, got {spec!r}") from None
        return OracleAgent(epsilon)
    raise ValueError(
        f"Unknown agent spec {spec!r}; expect `random`, `oracle[:EPSILON]` or `llm:MODEL`"
    )
