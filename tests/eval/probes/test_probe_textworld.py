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
