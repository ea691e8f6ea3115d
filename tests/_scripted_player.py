"""A scripted player for the adapters' end-to-end tests: half the attempts follow the oracle.

Whatever drives the model (TRL's forced decoding, a fake OpenAI server) hands it
the conversation so far; `ScriptedPlayer.next_command` answers from it. The
first attempt of a conversation draws whether it plays the oracle's plan
(computed up front from the row, with the suite's own oracle) or wastes its turns
on ``look``: a group then holds wins and truncations, so rewards vary within it.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from turnbudget.adapters.session import GameSession
from turnbudget.wrappers.stack import make

OVER = "[The episode is over"
WASTE = "look"


def oracle_plan(env_id: str, seed: int) -> list[str]:
    """The commands of one shortest solution of the task (the oracle's first choice each turn)."""
    env = make(env_id)
    env.reset(seed=seed, options={"turn_budget": 10_000})
    plan = []
    while True:
        action = env.unwrapped.optimal_actions()[0]
        plan.append(action)
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            assert info["won"], f"the oracle did not win {env_id} seed {seed}"
            return plan


class ScriptedPlayer:
    """Plays rows: each conversation is recognised by the game's first text.

    Args:
        rows: The rows whose conversations it will see.
        seed: Seeds the draw of who follows the oracle.
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]], seed: int = 0):
        session = GameSession()
        self.plans: dict[str, list[str]] = {}
        for row in rows:
            first = session.start(row["env_id"], row["seed"], row["T"])
            self.plans[first] = oracle_plan(row["env_id"], row["seed"])
        session.close()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def plan_for(self, conversation: str) -> list[str]:
        found = [plan for first, plan in self.plans.items() if first in conversation]
        assert len(found) == 1, "the conversation does not hold exactly one known first text"
        return found[0]

    def next_command(self, conversation: str, played: list[str]) -> str | None:
        """The next command, given the conversation's text and the commands played so far;
        None once the game says the episode is over."""
        if OVER in conversation:
            return None
        plan = self.plan_for(conversation)
        if not played:
            with self._lock:
                return plan[0] if self._rng.random() < 0.5 else WASTE
        if played == plan[: len(played)] and len(played) < len(plan):
            return plan[len(played)]
        return WASTE


#: A tool call's arguments as the chat template renders them (the Qwen3 format).
TOOL_CALL = re.compile(r'"arguments": \{"command": "([^"]*)"\}')
