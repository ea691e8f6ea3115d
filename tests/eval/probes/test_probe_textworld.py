"""Probes on TextWorld end every interpreter process they start: each env the planner and
the probe episodes make (a copy of a task's start, which forks an interpreter of its own) is
closed by whoever made it, whatever holds a reference to it afterwards.

The collector is off while each run goes (`_no_collector`): an env left for garbage
collection to close would then stay, so the count checks closing, not the collector's timing.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

pytest.importorskip("textworld")

from _support import child_pids, copy_shipped_textworld_games

from turnbudget.agents import OracleAgent
from turnbudget.eval.probes.run import probe
from turnbudget.eval.probes.validate import validate

# The shipped games are game 0 of each variant: task 0 of two families.
ENVS = ("turnbudget/CoinCollector-Easy-v0", "turnbudget/Cooking-Easy-v0")


@pytest.fixture(autouse=True)
def _shipped_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    cache = copy_shipped_textworld_games(tmp_path_factory.mktemp("textworld-cache"))
    monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", os.fspath(cache))


@pytest.fixture
def _no_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _FailsMidway:
    """Fails on its second command: its recovery and control episodes are abandoned midway."""

    name = "fails-midway"
    needs_oracle = False
    budget_aware = False

    def reset(self, seed: int) -> None:
        self._calls = 0

    def act(self, observation: str, info: dict) -> str:
        self._calls += 1
        if self._calls == 2:
            raise RuntimeError("gave up")
        return "look"


@pytest.mark.usefixtures("_no_collector")
def test_probe_ends_every_interpreter_it_starts():
    before = child_pids()
    result = probe(
        ENVS[0], [OracleAgent(0.0), _FailsMidway()], tasks=[0], prefixes=(0.5,),
        baseline_repeats=1, n_bootstrap=10, retries=0,
    )  # fmt: skip
    assert result.records and result.failed  # played, and some episodes were abandoned
    assert child_pids() - before == set()


@pytest.mark.slow  # (every control, on every probe state: ~13 s)
@pytest.mark.usefixtures("_no_collector")
def test_validate_ends_every_interpreter_it_starts():
    before = child_pids()
    validate(ENVS[0], tasks=[0], baseline_repeats=1, n_bootstrap=10)
    assert child_pids() - before == set()


class _Says:
    """Answers every turn with one command."""

    needs_oracle = False
    budget_aware = False

    def __init__(self, command: str):
        self.name, self.command = f"says-{command}", command

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation: str, info: dict) -> str:
        return self.command


@pytest.mark.parametrize("command", ["inventory", "look"])
def test_looking_and_taking_stock_are_no_ops_not_errors(command):
    """The no-op test compared the observation's last paragraph, which in TextWorld is the
    reply to the command itself: `inventory` and `look` were judged non-optimal answers, an
    error in the single-step skill. TextWorld's state is its logic state's facts."""
    result = probe(
        ENVS[1], _Says(command), tasks=[0], prefixes=(0.0, 0.5), kinds=(),
        baseline_repeats=1, n_bootstrap=0,
    )  # fmt: skip
    answers = [r for r in result.records if r["probe"] == "single" and r["role"] == "agent"]
    assert len(answers) == 2
    assert all(r["valid"] and r["noop"] and r["optimal"] is None for r in answers), answers


def test_a_setback_shows_its_narration_not_a_refusal_of_a_command_never_given():
    """The setback's turn plays an empty command, and its refusal was dropped only when the
    game wrote the state below it: TextWorld's one-paragraph refusal ("One command per
    turn, ...") reached the agent on the turn its recovery is measured from."""
    seen: list[str] = []

    class Watching(OracleAgent):
        def act(self, observation: str, info: dict) -> str:
            if info.get("injected_error"):
                seen.append(observation)
            return super().act(observation, info)

    probe(ENVS[1], Watching(0.0), tasks=[0], prefixes=(0.5,), kinds=("setback",),
          baseline_repeats=1, n_bootstrap=0)  # fmt: skip
    assert seen
    for observation in seen:
        assert "One command per turn" not in observation and "You can't" not in observation
