"""The agent's preflight runs once, before the first episode, on every road in (issue 25):
`evaluate_team`, and an agent run sealed (``--agent MODULE:ATTR``), as `evaluate` already did."""

from __future__ import annotations

import pytest
from _preflight_agents import PreflightSpy

from turnbudget.cli import main
from turnbudget.eval import evaluate, evaluate_team
from turnbudget.eval.run.sealed import seal

ENV = "turnbudget/Maze-Easy-v0"
TEAM = dict(ks=[1], ts=[3], tasks=2, n_bootstrap=0)


def test_evaluate_team_asks_every_agent_once_before_any_episode(tmp_path):
    operator, runner = PreflightSpy(), PreflightSpy()
    evaluate_team("vault_v0", {"operator": operator, "runner": runner}, **TEAM)
    assert (operator.preflights, runner.preflights) == (1, 1)
    assert operator.episodes == runner.episodes == 2
    both = PreflightSpy()  # one agent in two roles: asked once
    evaluate_team("vault_v0", {"operator": both, "runner": both}, **TEAM)
    assert both.preflights == 1

    down = PreflightSpy(ConnectionError("the server is down"))
    with pytest.raises(ConnectionError, match="the server is down"):
        evaluate_team("vault_v0", {"operator": "oracle", "runner": down}, out=tmp_path / "run",
                      **TEAM)  # fmt: skip
    assert down.episodes == 0 and not (tmp_path / "run").exists()


def test_a_sealed_agent_runs_its_preflight_in_its_process_and_its_refusal_crosses_back(tmp_path):
    down = pytest.raises(ConnectionError, match=r"ConnectionError: .*is down")
    with seal("_preflight_agents:down") as agent, down:
        evaluate(ENV, agent, ks=(1,), ts=(3,), tasks=2, n=1, out=tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before the first episode
    missing = pytest.raises(
        ImportError, match=r"pip install -e '\.\[llm\]' in the turnbudget checkout"
    )
    with seal("_preflight_agents:missing_extra") as agent, missing:
        agent.preflight()
    with seal(PreflightSpy()) as agent:
        agent.preflight()  # nothing to refuse: it plays on
        assert evaluate(ENV, agent, ks=(1,), ts=(3,), tasks=1, n=1).episodes


def test_the_command_line_refuses_a_sealed_agent_whose_server_is_down(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["eval", "--env", ENV, "--agent", "_preflight_agents:down", "--tasks", "2",
                 "--out", str(out), "--no-plots", "--quiet"])  # fmt: skip
    assert code == 1  # a server down, as for an agent run in-process
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is down" in err[0], err
    assert not out.exists()
