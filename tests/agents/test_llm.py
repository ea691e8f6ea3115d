"""ChatAgent against a real local model (llama_cpp.server + Gemma 3 270M), through the openai client.

Marker ``llm``: run with ``pytest -m llm`` (CI does). Every figure that depends
on speed is printed, never asserted.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

import pytest

import turnbudget
from turnbudget.agents.llm import EXECUTED_KEY, ChatAgent, ServerUnavailable
from turnbudget.eval.run.evaluate import evaluate, plan_episodes
from turnbudget.eval.run.plan import agent_seed
from turnbudget.records import EPISODES_FILE, STEPS_FILE, read_jsonl

pytestmark = pytest.mark.llm

ENV = "turnbudget/Maze-Easy-v0"
FAKE_KEY = "sk-turnbudget-FAKE-0123456789abcdef-DO-NOT-LEAK"
KEY_ENV = "TURNBUDGET_TEST_FAKE_KEY"


def _agent(server, **kwargs) -> ChatAgent:
    kwargs.setdefault("history", 2)
    kwargs.setdefault("max_tokens", 8)
    return ChatAgent(server.model, base_url=server.base_url, **kwargs)


def _check_logs(out: Path) -> tuple[list[dict], list[dict]]:
    """Every logged episode that ran has exactly its steps 1..turns_used, one that failed to
    run has none, and nothing else is logged."""
    episodes, _, torn_e = read_jsonl(out / EPISODES_FILE)
    steps, _, torn_s = read_jsonl(out / STEPS_FILE)
    assert not torn_e and not torn_s
    ids = [e["episode_id"] for e in episodes]
    assert len(ids) == len(set(ids)), "duplicated episode records"
    ran = [e for e in episodes if not e.get("failed_to_run")]
    by_episode: dict[str, list[int]] = {}
    for s in steps:
        by_episode.setdefault(s["episode_id"], []).append(s["turn"])
    assert set(by_episode) == {e["episode_id"] for e in ran}, (
        "steps without their episode, or an episode that ran without steps"
    )
    for e in ran:
        assert by_episode[e["episode_id"]] == list(range(1, e["turns_used"] + 1))
    return episodes, steps


# ----------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def cli_run(llm_server, tmp_path_factory, monkeypatch_module):
    """One `turnbudget eval --agent llm:...` run with a planted fake key and DEBUG logs to a file."""
    from turnbudget.cli import main

    monkeypatch_module.setenv(KEY_ENV, FAKE_KEY)
    root = tmp_path_factory.mktemp("llm-e2e")
    out, log_file = root / "run", root / "debug.log"
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    logger = logging.getLogger()
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        code = main(
            [
                "eval", "--env", ENV, "--agent", f"llm:{llm_server.model}",
                "--base-url", llm_server.base_url, "--api-key-env", KEY_ENV,
                "--k", "1", "--t", "3", "--tasks", "2", "--reveal", "always",
                "--concurrency", "2", "--out", str(out), "--no-plots", "--quiet",
            ]
        )  # fmt: skip
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        handler.close()
    assert code == 0
    return root, out


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_end_to_end_evaluation_through_the_openai_client(cli_run):
    _, out = cli_run
    episodes, steps = _check_logs(out)
    assert len(episodes) == 2 and len(steps) == 6  # 2 tasks x 3 turns (Maze-Easy needs >= 5)
    for s in steps:
        note = s["agent"]
        assert set(note) >= {"reply", "parse", "admissible", "tokens_in", "tokens_out",
                             "latency_s", "retries", "requests", "constraint"}  # fmt: skip
        assert note["tokens_in"] > 0 and note["tokens_out"] > 0 and note["latency_s"] > 0
        assert note["retries"] == 0 and note["requests"] == 1
        assert note["constraint"] == "grammar"  # auto-detected: llama.cpp
        assert s["action"] in note["reply"]
    for e in episodes:
        totals = e["agent"]
        assert totals["steps"] == e["turns_used"] == 3
        mine = [s["agent"] for s in steps if s["episode_id"] == e["episode_id"]]
        assert totals["tokens_in"] == sum(n["tokens_in"] for n in mine)
    summary = json.loads((out / "summary.json").read_text())
    usage = summary["runs"][next(iter(summary["runs"]))]["agent_usage"]
    assert usage["steps"] == 6 and usage["tokens_in"] == sum(s["agent"]["tokens_in"] for s in steps)
    assert "LLM usage" in (out / "report.md").read_text()
    run = json.loads((out / "run.json").read_text())
    assert "ChatAgent(model='gemma-3-270m'" in run["agent"] and KEY_ENV in run["agent"]


def test_no_key_or_authorization_header_in_any_written_file(cli_run):
    root, _ = cli_run
    files = [p for p in root.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"run.json", EPISODES_FILE, STEPS_FILE, "summary.json",
                                       "report.md", "debug.log"}  # fmt: skip
    debug = (root / "debug.log").read_text()
    assert "chat/completions" in debug  # the client's DEBUG lines were captured
    for path in files:
        data = path.read_bytes()
        assert FAKE_KEY.encode() not in data, f"the API key leaked into {path}"
        assert FAKE_KEY[:20].encode() not in data, f"part of the API key leaked into {path}"
        assert b"authorization" not in data.lower(), f"an Authorization header in {path}"
        # A bearer token is "Bearer <token>"; openai's debug lines name the option
        # `'security': {'bearer_auth': True}`, which carries none.
        assert not re.search(rb"bearer\s+\S", data, re.IGNORECASE), f"a bearer token in {path}"


# ----------------------------------------------------------------------------- decoding


def test_constrained_decoding_yields_only_admissible_commands(llm_server):
    env = turnbudget.make("turnbudget/KeyQuest-Easy-v0")
    agent = _agent(llm_server, constrain="grammar", parse="strict", temperature=1.0)
    seen = set()
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        agent.reset(seed)
        for _ in range(3):
            command = agent.act(obs, info)
            note = agent.step_note()
            assert command in info["admissible_actions"], note
            assert note["parse"] == "exact" and note["constraint"] == "grammar"
            seen.add(command)
            obs, _, terminated, truncated, info = env.step(command)
            assert info["valid_action"]
    print(f"\ncommands chosen under the grammar: {sorted(seen)}")


def test_an_admissible_command_longer_than_max_tokens_comes_back_whole(llm_server):
    """Under the grammar a reply was cut at ``max_tokens`` like any other: "take the small"
    (inadmissible, an invalid turn) where the model had chosen a longer command."""
    commands = ["open the heavy wooden door slowly", "take the small brass key from the table"]
    agent = _agent(llm_server, constrain="grammar", parse="strict", max_tokens=2, temperature=1.0)
    for seed in range(3):
        agent.reset(seed)
        assert agent.act("A hall.", {"admissible_actions": commands}) in commands
        assert agent.step_note()["parse"] == "exact", agent.step_note()


def test_a_rejected_constraint_falls_back_to_plain_requests(llm_server, caplog):
    # llama-cpp-python's server answers 422 to an OpenAI json_schema response_format.
    env = turnbudget.make(ENV)
    obs, info = env.reset(seed=0)
    agent = _agent(llm_server, constrain="json_schema")
    agent.reset(0)
    with caplog.at_level(logging.WARNING, logger="turnbudget.agents.llm"):
        agent.act(obs, info)
    note = agent.step_note()
    assert note["constraint"] == "none" and note["requests"] == 2 and note["retries"] == 0
    assert "rejected the 'json_schema' constraint" in caplog.text


def test_history_holds_the_executed_command_and_forced_turns(llm_server):
    env = turnbudget.make(ENV)
    obs, info = env.reset(seed=0)
    agent = _agent(llm_server, history=4)
    agent.reset(0)
    own = agent.act(obs, info)
    executed = next(a for a in info["admissible_actions"] if a != own)
    obs, _, _, _, info = env.step(executed)  # a slip replaced the agent's command
    agent.act(obs, {**info, EXECUTED_KEY: executed})
    assert agent._history[-1] == (agent._history[-1][0], executed)
    forced_obs = obs
    agent.observe(forced_obs, info, "look")  # a probe forced "look"
    assert agent._history[-1] == (agent._render(forced_obs, info), "look")
    assert [a for _, a in agent._history][-2:] == [agent._history[-2][1], "look"]


def test_probes_drive_the_llm_through_the_cli(llm_server, tmp_path, capsys):
    from turnbudget.cli import main

    out = tmp_path / "probe"
    code = main(
        [
            "probe", "--env", ENV, "--agent", f"llm:{llm_server.model}",
            "--base-url", llm_server.base_url, "--concurrency", "2", "--tasks", "1",
            "--prefixes", "0.5", "--kinds", "slip", "--budget-factor", "1",
            "--budget-slack", "0", "--baseline-repeats", "2", "--out", str(out), "--quiet",
        ]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "probe_summary.json").read_text())
    records = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    mine = [r for r in records if r["agent"] == "llm-gemma-3-270m"]
    assert {r["probe"] for r in mine} >= {"single", "control"} and len(mine) >= 2
    skills = summary["agents"]["llm-gemma-3-270m"][ENV]
    print(f"\nGemma 3 270M probe skills (1 task): {skills['single_step_skill']['mean']}")


# ----------------------------------------------------------------------------- failures


def test_server_stopped_mid_run_retries_then_fails_clearly_and_resumes(tmp_path, caplog):
    """The client retries, then each episode the server no longer serves is logged as failed
    to run with the error naming the server (the run itself finishes, as for any agent
    fault); rerunning the same evaluation against a live server completes the rest."""
    pytest.importorskip("llama_cpp.server")
    from turnbudget.agents.local_server import LocalServer

    out = tmp_path / "run"
    server = LocalServer(log_path=tmp_path / "server.log").start()
    # The server stops as the third (last) episode starts: the engine starts an episode only
    # on a slot that an ended episode freed (and handed over to the log), so at least one
    # episode ran whole and the third cannot, whatever the machine's speed.
    third, stopped = agent_seed(0, ENV, 2, 0), []

    class StopsTheServer(ChatAgent):
        async def reset_async(self, seed: int) -> None:
            if seed == third and not stopped:
                stopped.append(seed)
                server.stop()
            await super().reset_async(seed)

    # A slow live server is no failure here (timeout); a stopped one refuses at once.
    agent = StopsTheServer(server.model, base_url=server.base_url, history=2, max_tokens=8,
                           max_retries=2, backoff=0.2, timeout=120)  # fmt: skip
    settings = dict(ks=(1,), ts=(3,), tasks=3, n=1, out=out, concurrency=2)
    try:
        with caplog.at_level(logging.INFO, logger="turnbudget.agents.llm"):
            first = evaluate(ENV, agent, **settings)
    finally:
        server.stop()
    assert stopped
    assert "retry 1" in caplog.text and "retry 2" in caplog.text
    logged, _ = _check_logs(out)
    done = [e for e in logged if not e.get("failed_to_run")]
    failed = [e for e in logged if e.get("failed_to_run")]
    assert 1 <= len(done) < 3 and len(failed) == 3 - len(done)
    for e in failed:
        assert e["failure"] == "exception" and e["error"].startswith(ServerUnavailable.__name__)
        assert server.base_url in e["error"] and "after 3 attempt(s)" in e["error"]
    assert first.summary["failed_to_run"]["episodes"] == len(failed)

    # Same port again: rerunning the same evaluation resumes the rest, duplicating nothing.
    with LocalServer(server.port, log_path=tmp_path / "server2.log"):
        result = evaluate(ENV, agent, **settings)
    episodes, _ = _check_logs(out)
    assert result.n_run == 3 - len(done)
    assert sorted(e["episode_id"] for e in episodes) == sorted(
        s.episode_id for s in plan_episodes(result.config)
    )


def test_an_unreachable_server_is_a_clear_error():
    agent = ChatAgent("m", base_url="http://127.0.0.1:9/v1", max_retries=1, backoff=0.01, timeout=2)
    agent.reset(0)
    with pytest.raises(ServerUnavailable, match=r"127\.0\.0\.1:9/v1.*after 2 attempt\(s\)"):
        agent.act("A hall.", {"admissible_actions": ["look"]})


# ----------------------------------------------------------------------------- concurrency


def test_decisions_per_second_at_concurrency_4_and_1(llm_server, tmp_path):
    figures = {}
    for concurrency in (1, 4):
        agent = _agent(llm_server)
        start = time.perf_counter()
        result = evaluate(ENV, agent, ks=(1,), ts=(2,), tasks=4, n=1, concurrency=concurrency,
                          out=tmp_path / f"c{concurrency}")  # fmt: skip
        wall = time.perf_counter() - start
        _, steps = _check_logs(tmp_path / f"c{concurrency}")
        assert len(result.episodes) == 4 and len(steps) == 8
        tokens = sum(s["agent"]["tokens_in"] + s["agent"]["tokens_out"] for s in steps)
        figures[concurrency] = (len(steps) / wall, tokens / wall)
    print()
    for concurrency, (dps, tps) in figures.items():
        print(f"concurrency {concurrency}: {dps:.2f} decisions/s, {tps:.0f} tokens/s")
    print(f"ratio 4 vs 1: {figures[4][0] / figures[1][0]:.2f}x decisions/s")
