"""Wrong turns fail fast, once, with the fix in the message (issue 25).

A missing extra is named when the agent is built (not once per episode), a
server that is down is found before the first episode (not after every
episode's retries), and a run refused before it starts leaves no empty
output directory.
"""

from __future__ import annotations

import json
import socket
import sys

import pytest

from turnbudget.agents import make_agent
from turnbudget.agents.llm import ChatAgent, ServerUnavailable
from turnbudget.cli import main
from turnbudget.eval import evaluate

ENV = "turnbudget/Maze-Easy-v0"
SMALL = dict(ks=(1,), ts=(3,), tasks=2, n=1)


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: a connect is refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_policy_without_torch_names_the_rl_extra_when_built(tmp_path, monkeypatch):
    from turnbudget.agents.policy import ENCODING_FORMAT

    encoding = {
        "format": ENCODING_FORMAT, "env_id": ENV, "max_actions": 4, "history": 1,
        "command_dim": 4, "budget": False, "reveal": None,
        "text_features": {"dim": 8, "ngrams": 1, "include_goal": True, "include_admissible": False},
    }  # fmt: skip
    (tmp_path / "encoding.json").write_text(json.dumps(encoding))
    (tmp_path / "policy.zip").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "torch", None)  # as on a machine without the rl extra
    with pytest.raises(
        ImportError, match=r"'torch' \(pip install -e '\.\[rl\]' in the turnbudget checkout\)"
    ):
        make_agent(f"policy:{tmp_path}")


def test_llm_without_the_extra_fails_once_before_any_episode(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "openai", None)
    agent = make_agent("llm:some-model")  # built offline: prompts render without a client
    with pytest.raises(ImportError, match=r"pip install -e '\.\[llm\]' in the turnbudget checkout"):
        agent.preflight()  # what evaluate and probe call once, before the first episode
    out = tmp_path / "run"
    assert main(["eval", "--env", ENV, "--agent", "llm:some-model", "--out", str(out),
                 "--no-plots", "--quiet"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install -e '.[llm]' in the turnbudget checkout" in err[0]
    assert not out.exists()


@pytest.mark.llm  # the llm extra's client (no server: the one asked is down)
def test_a_server_that_is_down_fails_before_the_first_episode(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    agent = ChatAgent("m", base_url=url, max_retries=4, backoff=30.0)  # retries would take minutes
    with pytest.raises(ServerUnavailable, match=r"did not answer GET /models.*Is it running"):
        evaluate(ENV, agent, out=tmp_path / "run", **SMALL)
    assert not (tmp_path / "run").exists()  # no episode ran, nothing was written


def test_a_server_down_without_a_base_url_says_the_agent_asked_openai(monkeypatch):
    """With no --base-url and no $OPENAI_BASE_URL the agent asks OpenAI's API: the hint said
    "Is it running? (`turnbudget serve-local` starts a local one.)", and a server started
    so was never asked."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    hint = ChatAgent("m")._running_hint()
    assert "OpenAI's API" in hint and "--base-url http://127.0.0.1:8080/v1" in hint
    assert "Is it running" in ChatAgent("m", base_url="http://127.0.0.1:9/v1")._running_hint()


def test_a_refused_run_leaves_no_empty_output_directory(tmp_path):
    fresh = tmp_path / "runs" / "nope"
    with pytest.raises(ValueError, match="Cannot make"):
        evaluate("turnbudget/Nope-v0", "random", out=fresh, **SMALL)
    assert not (tmp_path / "runs").exists()
    existing = tmp_path / "mine"
    existing.mkdir()
    with pytest.raises(ValueError, match="Cannot make"):
        evaluate("turnbudget/Nope-v0", "random", out=existing, **SMALL)
    assert existing.is_dir()  # a folder the user made is never removed
