"""Agents with a ``preflight`` (the check the evaluator runs once, before the first episode),
importable by a sealed agent's process (``_preflight_agents:down``)."""

from __future__ import annotations

from typing import Any


class PreflightSpy:
    """Says ``wait`` every turn; counts its ``preflight`` calls and refuses there with ``error``."""

    name = "preflight-spy"

    def __init__(self, error: BaseException | None = None):
        self.error = error
        self.preflights = 0
        self.episodes = 0

    def preflight(self) -> None:
        self.preflights += 1
        if self.error is not None:
            raise self.error

    def reset(self, seed: int) -> None:
        self.episodes += 1

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return "wait"


def down() -> PreflightSpy:
    """An agent whose server is down: its preflight raises a ``ConnectionError``."""
    return PreflightSpy(ConnectionError("the agent's server at http://127.0.0.1:9/v1 is down"))


def missing_extra() -> PreflightSpy:
    """An agent whose client is not installed: its preflight raises an ``ImportError``."""
    return PreflightSpy(
        ImportError("No module named 'openai' (pip install -e '.[llm]' in the turnbudget checkout)")
    )
