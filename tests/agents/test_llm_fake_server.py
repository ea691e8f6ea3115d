"""ChatAgent against fake OpenAI-compatible servers: a real ``http.server`` on loopback
that answers what a hostile or broken server would.

- Secrets are values, not shapes: a key of any form that a server echoes in an error
  body, and the password and query key of the base URL, reach no file of the run, no
  log record, no error, no repr, no pickle and no lock file.
- A 200 answer without a reply (no ``choices``, an empty list, not JSON) is a server
  fault: retried, then the episode fails to run; never the agent's empty reply.

Marker ``llm``: needs the ``openai`` client (the llm extra), not a model.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from _fake_openai import FakeServer, as_json, reply_body
from _support import HANG_GUARD

from turnbudget.eval.run.evaluate import evaluate
from turnbudget.eval.run.lock import HOLDER_FILE, OutputDirInUse, hold_output_dir
from turnbudget.records import EPISODES_FILE, STEPS_FILE, read_jsonl

pytestmark = pytest.mark.llm
pytest.importorskip("openai")

from turnbudget.agents.llm import ChatAgent, RequestRejected, ServerUnavailable  # noqa: E402

ENV = "turnbudget/Maze-Easy-v0"
REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "TURNBUDGET_TEST_FAKE_SERVER_KEY"
# Keys no shape rule knows (OpenAI echoes the key it was sent in its 401 body).
KEYS = ["gsk_Wq3v8TnR2xLp0Yc5Hd7Jf", "hf_XbNp4Rt8Lq2Wz6Kd9Mv3", "Zq8vK2mXr7TpLw4Nd9BcHfJs"]
PASSWORD, QUERY_KEY = "Pa5s-w0rd-Kx81-NOT-TO-BE-SEEN", "qk-Mv62-NOT-TO-BE-SEEN"


def _agent(url: str, **kwargs: Any) -> ChatAgent:
    options = dict(constrain="none", max_retries=1, backoff=0.0, timeout=HANG_GUARD)
    return ChatAgent("fake", base_url=url, **{**options, **kwargs})


def _secret_forms(secrets: list[str]) -> list[bytes]:
    """Each secret as bytes, and its first 12 characters (a truncated message)."""
    return [form.encode() for s in secrets for form in (s, s[:12])]


def _assert_nowhere(secrets: list[str], where: dict[str, bytes]) -> None:
    for form in _secret_forms(secrets):
        for name, data in where.items():
            assert form not in data, f"{form!r} leaked into {name}"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every log record of the process at DEBUG (httpx and openai log request URLs)."""
    with caplog.at_level(logging.DEBUG):
        yield caplog


# ----------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    "key",
    # (and a key holding both quotes: the client's error quotes the body's repr, where its
    # ' is escaped, a form the blanking did not know)
    [*KEYS, "it's\"Kx7-quoted-key-0123"],
    ids=["gsk", "hf", "no-prefix", "quotes"],
)
def test_a_key_echoed_in_an_error_body_is_written_nowhere(key, tmp_path, monkeypatch, debug_logs):
    monkeypatch.setenv(KEY_ENV, key)

    def reject(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        sent = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        error = {"message": f"Incorrect API key provided: {sent}.", "code": "invalid_api_key"}
        return as_json({"error": error}, status=401)

    with FakeServer(reject) as server:
        agent = _agent(server.url(), api_key_env=KEY_ENV)
        with pytest.raises(RequestRejected, match=r"Incorrect API key provided: \*\*\*") as err:
            agent.reset(0)
            agent.act("A hall.", {"admissible_actions": ["look"]})
        with pytest.raises(ValueError, match=r"2 failed to run") as no_result:
            evaluate(ENV, agent, ks=[1], ts=[3], tasks=2, out=tmp_path / "run", retries=1)
    assert server.chat_requests > 1  # the key really went out and came back
    failed = read_jsonl(tmp_path / "run" / EPISODES_FILE)[0]
    assert len(failed) == 2 and all(e["failed_to_run"] for e in failed)
    assert all("Incorrect API key provided: ***" in e["error"] for e in failed)
    _assert_nowhere(
        [key],
        {
            **_files(tmp_path),
            "the logs": debug_logs.text.encode(),
            "the errors": f"{err.value} {no_result.value}".encode(),
            "the repr": repr(agent).encode(),
            "the pickle": pickle.dumps(agent),
        },
    )
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no echo in a traceback


def test_base_url_credentials_are_written_nowhere_and_still_reach_the_server(
    tmp_path, monkeypatch, debug_logs
):
    """A full `turnbudget eval` run against a server behind basic auth and a query key, with
    a key in the default variable too (not sent: the URL's user info takes the one
    Authorization header; written nowhere all the same)."""
    from turnbudget.agents import make_agent
    from turnbudget.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", KEYS[2])
    out = tmp_path / "run"
    basic = "Basic " + base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    seen: dict[str, Any] = {}

    def guarded(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        if handler.headers.get("Authorization") != basic or f"api-key={QUERY_KEY}" not in (
            handler.path
        ):
            return as_json({"error": {"message": f"denied {handler.path}"}}, status=401)
        if "holder" not in seen:  # while the run holds its directory
            seen["holder"] = (out / HOLDER_FILE).read_bytes()
            try:
                with hold_output_dir(out):
                    pass
            except OutputDirInUse as exc:
                seen["in_use"] = str(exc)
        return as_json(reply_body())

    with FakeServer(guarded) as server:
        url = server.url(f"bob:{PASSWORD}@", f"?api-key={QUERY_KEY}")
        argv = ["eval", "--env", ENV, "--agent", "llm:fake", "--base-url", url,
                "--constrain", "none", "--k", "1", "--t", "3",
                "--tasks", "2", "--out", str(out), "--no-plots", "--quiet"]  # fmt: skip
        monkeypatch.setattr(sys, "argv", ["turnbudget", *argv])
        assert main(argv) == 0
        agent = make_agent("llm:fake", base_url=url, constrain="none")
        blob = pickle.dumps(agent)
        # A worker process that inherits this environment connects from the pickle alone.
        act = (
            "import pickle, sys; agent = pickle.loads(sys.stdin.buffer.read()); agent.reset(0); "
            "print(agent.act('A hall.', {'admissible_actions': ['look']}))"
        )
        worker = subprocess.run(
            [sys.executable, "-c", act], input=blob, capture_output=True, timeout=HANG_GUARD,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        assert worker.returncode == 0 and worker.stdout.strip() == b"look", worker.stderr
    assert len(read_jsonl(out / STEPS_FILE)[0]) == 6  # it connected: 2 episodes of 3 turns
    assert "in use by another evaluation" in seen["in_use"]
    _assert_nowhere(
        [PASSWORD, QUERY_KEY, KEYS[2]],
        {
            **_files(tmp_path),
            "the lock file while held": seen["holder"],
            "the in-use error": seen["in_use"].encode(),
            "the logs": debug_logs.text.encode(),
            "the repr": repr(agent).encode(),
            "the pickle": blob,
            "the worker's output": worker.stdout + worker.stderr,
        },
    )
    assert agent.base_url == server.url()


def test_a_key_named_beside_url_credentials_is_refused_not_dropped(monkeypatch):
    """One Authorization header: the URL's user info went as Basic auth and the key named on
    purpose was silently never sent (a server wanting both answered 401 to every turn)."""
    monkeypatch.setenv(KEY_ENV, KEYS[0])
    with FakeServer(lambda handler, request: as_json(reply_body())) as server:
        agent = _agent(server.url(f"bob:{PASSWORD}@"), api_key_env=KEY_ENV)
        with pytest.raises(ValueError, match=r"Give one of the two") as err:
            agent.reset(0)
            agent.act("A hall.", {"admissible_actions": ["look"]})
    assert server.chat_requests == 0
    _assert_nowhere([KEYS[0], PASSWORD], {"the error": str(err.value).encode()})


def test_a_key_in_the_default_variable_beside_url_credentials_is_a_warning_once(
    monkeypatch, caplog
):
    monkeypatch.setenv("OPENAI_API_KEY", KEYS[1])
    with FakeServer(lambda handler, request: as_json(reply_body())) as server:
        agent = _agent(server.url(f"bob:{PASSWORD}@"))
        with caplog.at_level(logging.WARNING, logger="turnbudget.agents.llm"):
            for seed in (0, 1):
                agent.reset(seed)
                assert agent.act("A hall.", {"admissible_actions": ["look"]}) == "look"
    said = [r.getMessage() for r in caplog.records if "is not sent" in r.getMessage()]
    assert len(said) == 1 and "'OPENAI_API_KEY'" in said[0], said
    _assert_nowhere([KEYS[1], PASSWORD], {"the logs": caplog.text.encode()})


def test_a_query_without_credentials_reaches_the_server_and_blanks_nothing():
    """``?format=json`` was registered as a secret: "json" was blanked in every log record,
    error and step note of the process. It still goes with every request."""
    from turnbudget.agents.secrets import redact

    with FakeServer(lambda handler, request: as_json(reply_body("look json"))) as server:
        agent = _agent(server.url(query="?format=json&api-version=2024-06-01"))
        agent.reset(0)
        assert agent.act("A hall.", {"admissible_actions": ["look", "look json"]}) == "look json"
    assert server.paths[-1].endswith("/chat/completions?format=json&api-version=2024-06-01")
    assert agent.step_note()["reply"] == "look json" and agent.base_url == server.url()
    assert redact("json 2024-06-01") == "json 2024-06-01"
    assert "format=json" not in repr(agent) and b"format=json" not in pickle.dumps(agent)


@pytest.mark.parametrize("constrain", ["grammar", "guided_choice", "json_schema", "none"])
def test_a_constrained_request_leaves_room_for_the_longest_admissible_command(constrain):
    """Its reply was cut at ``max_tokens`` like any other: an admissible command longer than
    that came back as an inadmissible start. A plain request keeps ``max_tokens``."""
    sent: list[int] = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        sent.append(request["max_tokens"])
        return as_json(reply_body("look"))

    longest = "take the small brass key from the table and the café's lamp"
    with FakeServer(answer) as server:
        agent = _agent(server.url(), constrain=constrain, max_tokens=2)
        agent.reset(0)
        assert agent.act("A hall.", {"admissible_actions": ["look", longest]}) == "look"
    assert agent.step_note()["constraint"] == constrain
    room = len(longest.encode()) + 1  # (a token holds at least one byte)
    assert sent == [2] if constrain == "none" else sent[0] >= room, sent


@pytest.mark.parametrize("how", ["object", "spec-default-url"])
def test_a_sealed_llm_agent_still_gets_its_urls_credentials(how, monkeypatch):
    """A sealed agent's process gets no variable holding a URL with credentials, but the one
    its own agent reads: a sealed `ChatAgent` (its URL in the variable its pickle names) and
    ``llm:`` sealed without ``base_url`` (``OPENAI_BASE_URL``) still reach their server."""
    from turnbudget.eval.run.sealed import seal

    basic = "Basic " + base64.b64encode(f"bob:{PASSWORD}".encode()).decode()

    def guarded(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        if handler.headers.get("Authorization") != basic:
            return as_json({"error": {"message": "denied"}}, status=401)
        return as_json(reply_body())

    with FakeServer(guarded) as server:
        url = server.url(f"bob:{PASSWORD}@")
        if how == "object":
            sealed = seal(_agent(url))
        else:
            monkeypatch.setenv("OPENAI_BASE_URL", url)
            sealed = seal("llm:fake", options={"constrain": "none", "max_retries": 0})
        with sealed as agent:  # (a batch agent: the child drives the async one)
            agent.reset_episode("e", 0)
            assert agent.act_batch(["e"], ["A hall."], [{"admissible_actions": ["look"]}]) == [
                "look"
            ]
    assert server.chat_requests == 1


def test_a_worker_without_the_credentials_gets_a_clear_error(monkeypatch):
    agent = _agent(f"http://bob:{PASSWORD}@127.0.0.1:9/v1")
    clone = pickle.loads(pickle.dumps(agent))
    monkeypatch.delenv(clone._url_env)  # a Ray node that does not share this environment
    with pytest.raises(ValueError, match=r"Set OPENAI_BASE_URL to the URL with its credentials"):
        clone.reset(0)
        clone.act("A hall.", {"admissible_actions": ["look"]})


def test_the_async_path_gives_the_same_clear_error(monkeypatch):
    """One decision for both paths: a missing credential is no server fault on either (the
    async copy used to call it a request the server rejected)."""
    agent = _agent(f"http://bob:{PASSWORD}@127.0.0.1:9/v1", constrain="auto")
    clone = pickle.loads(pickle.dumps(agent))
    monkeypatch.delenv(clone._url_env)
    clone.reset(0)
    with pytest.raises(ValueError, match=r"Set OPENAI_BASE_URL to the URL with its credentials"):
        asyncio.run(clone.act_async("A hall.", {"admissible_actions": ["look"]}))


# ----------------------------------------------------------------------------- no reply


NO_REPLY = {
    "no-choices": (200, "application/json", b'{"id": "x", "object": "chat.completion"}'),
    "empty-choices": as_json({**reply_body(), "choices": []}),
    "choice-without-message": as_json({**reply_body(), "choices": [{"index": 0}]}),
    "html": (200, "text/html", b"<html><body>502 Bad Gateway</body></html>"),
    "broken-json": (200, "application/json", b'{"choices": [{"mess'),
}


@pytest.mark.parametrize("answer", NO_REPLY.values(), ids=NO_REPLY.keys())
def test_a_200_answer_without_a_reply_is_retried_then_a_clear_error(answer):
    with FakeServer(lambda handler, request: answer) as server:
        agent = _agent(server.url(), max_retries=2)
        agent.reset(0)
        with pytest.raises(ServerUnavailable, match=r"answered without a reply after 3 attempt"):
            agent.act("A hall.", {"admissible_actions": ["look"]})
    assert server.chat_requests == 3
    assert agent.step_note() is None  # no decision was made, so none is recorded


def test_an_episode_the_server_answers_without_a_reply_fails_to_run(tmp_path):
    """Never an empty reply blamed on the agent (an invalid move, Pass@1 = 0)."""
    with FakeServer(lambda handler, request: NO_REPLY["empty-choices"]) as server:
        agent = _agent(server.url())
        with pytest.raises(ValueError, match=r"no task .* has 1 episodes that ran"):
            evaluate(ENV, agent, ks=[1], ts=[3], tasks=2, retries=1, out=tmp_path / "run")
    episodes, _, _ = read_jsonl(tmp_path / "run" / EPISODES_FILE)
    assert len(episodes) == 2 and all(e["failed_to_run"] for e in episodes)
    assert all("answered without a reply" in e["error"] for e in episodes)
    assert read_jsonl(tmp_path / "run" / STEPS_FILE)[0] == []
    assert server.chat_requests >= 2 * 2 * 2  # 2 episodes x 2 attempts x (1 + 1 retry)


def test_a_reply_with_null_content_is_the_models_empty_reply(tmp_path):
    """The model said nothing: that decision is the agent's (an invalid command)."""
    body = reply_body()
    body["choices"][0]["message"]["content"] = None
    with FakeServer(lambda handler, request: as_json(body)) as server:
        agent = _agent(server.url())
        agent.reset(0)
        agent.act("A hall.", {"admissible_actions": ["look"]})
    note = agent.step_note()
    assert note["reply"] == "" and note["requests"] == 1 and note["retries"] == 0


@pytest.mark.parametrize(
    "answer, said",
    [((204, "application/json", b""), "a 204 answer with no body"),
     ((203, "text/html", b"<html>cached</html>"), "a 203 answer that is not JSON"),
     ((201, "application/json", b'{"id": "x"}'), "a 201 answer without `choices`"),
     ((203, "application/json", b"[1, 2]"), "a 203 answer without `choices`"),
     ((206, "application/json", b'{"choices": [{"message": {"content": 7}}]}'),
      "a 206 answer whose message content is not text")],
)  # fmt: skip
def test_an_answer_without_a_reply_names_its_own_status(answer, said):
    """Every such answer was "a 200 answer that is not JSON: b''", a 204 No Content too."""
    with FakeServer(lambda handler, request: answer) as server:
        agent = _agent(server.url(), max_retries=0)
        agent.reset(0)
        with pytest.raises(ServerUnavailable, match=said):
            agent.act("A hall.", {"admissible_actions": ["look"]})
