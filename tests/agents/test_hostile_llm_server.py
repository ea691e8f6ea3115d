"""ChatAgent against what a broken or hostile OpenAI-compatible server sends, beyond
``test_llm_fake_server.py`` (a real ``http.server`` on loopback, `_fake_openai`).

- A 200 answer that is not UTF-8, or whose ``message`` is not an object, is a server
  fault (retried, then "answered without a reply"): never "the server rejected the
  request", never the model's empty reply.
- A ``usage`` no token count can be (1e308, a bool, negative) is recorded as 0.
- A reply far past ``max_tokens`` is read and recorded bounded (`MAX_REPLY_CHARS`).
- A server that holds the request is a timeout, then a clear error (the test's hold is
  an event, released when the test ends); so is one that sends its answer a byte at a
  time and never finishes (the client's own timeout bounds each read, not the request).
- An API key that cannot travel in a header (a trailing newline, a control or non-ASCII
  character) is a clear error before any request, the key not shown; it used to read as
  "did not answer ... Is it running?" after every retry.
- A redirect to another host carries none of the credentials (the key, the URL's user
  info and query key).

Marker ``llm``: needs the ``openai`` client (the llm extra), not a model.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from _fake_openai import FakeServer, as_json, reply_body
from _support import HANG_GUARD

pytestmark = pytest.mark.llm
pytest.importorskip("openai")

from turnbudget.agents.llm import MAX_REPLY_CHARS, ChatAgent, ServerUnavailable  # noqa: E402

INFO = {"admissible_actions": ["look", "north"]}
KEY_ENV = "TURNBUDGET_TEST_HOSTILE_KEY"


def _agent(url: str, **kwargs: Any) -> ChatAgent:
    options = dict(constrain="none", max_retries=1, backoff=0.0, timeout=HANG_GUARD)
    agent = ChatAgent("fake", base_url=url, **{**options, **kwargs})
    agent.reset(0)
    return agent


def _body_with(**changes: Any) -> dict[str, Any]:
    body = reply_body()
    for path, value in changes.items():
        where: Any = body
        *parents, last = path.split("__")
        for key in parents:
            where = where[int(key)] if isinstance(where, list) else where[key]
        where[last] = value
    return body


NOT_A_REPLY = {
    "not-utf8": (200, "application/json", json.dumps(reply_body("look")).encode().replace(b"look", b"lo\xff\xfek")),
    "gzip-magic-not-gzip": (200, "application/json", b"\x1f\x8b\x08 not gzip"),
    "message-is-text": as_json(_body_with(choices__0__message="look")),
    "message-is-a-list": as_json(_body_with(choices__0__message=["look"])),
}  # fmt: skip


@pytest.mark.parametrize("answer", NOT_A_REPLY.values(), ids=NOT_A_REPLY.keys())
@pytest.mark.parametrize("path", ["sync", "async"])
def test_an_answer_that_is_no_reply_is_retried_then_a_clear_error(answer, path):
    with FakeServer(lambda handler, request: answer) as server:
        agent = _agent(server.url())
        with pytest.raises(ServerUnavailable, match=r"answered without a reply after 2 attempt"):
            if path == "sync":
                agent.act("A hall.", INFO)
            else:
                asyncio.run(agent.act_async("A hall.", INFO))
    assert server.chat_requests == 2
    assert agent.step_note() is None


@pytest.mark.parametrize("count", [1e308, True, -5, "many", None, [3]])
def test_a_token_count_no_count_can_be_is_recorded_as_zero(count):
    body = _body_with(usage={"prompt_tokens": count, "completion_tokens": count})
    with FakeServer(lambda handler, request: as_json(body)) as server:
        agent = _agent(server.url())
        assert agent.act("A hall.", INFO) == "look"
    note = agent.step_note()
    assert note["tokens_in"] == 0 and note["tokens_out"] == 0


def test_a_reply_far_past_max_tokens_is_read_and_recorded_bounded(monkeypatch, caplog):
    key = "Vb7Qm2Xr9TkLw4Pz8NcHd"
    monkeypatch.setenv(KEY_ENV, key)
    # The key straddles the cut, and a command only past the cut is not read.
    filler = "x" * (MAX_REPLY_CHARS - 5)
    reply = f"{filler} {key} " + "north " * 200_000
    with FakeServer(lambda handler, request: as_json(reply_body(reply))) as server:
        agent = _agent(server.url(), api_key_env=KEY_ENV)
        with caplog.at_level(logging.WARNING):
            command = agent.act("A hall.", INFO)
    note = agent.step_note()
    assert len(note["reply"]) < MAX_REPLY_CHARS + 100
    assert note["reply"].endswith(f"[cut: the reply had {len(reply)} characters]")
    assert key[:8] not in note["reply"] and key[:8] not in command
    assert command != "north"  # (only past the cut)
    assert f"answered {len(reply)} characters (max_tokens=32)" in caplog.text


def test_a_server_that_holds_the_request_times_out_then_a_clear_error():
    release = threading.Event()

    def hold(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        release.wait(HANG_GUARD)
        return as_json(reply_body())

    with FakeServer(hold) as server:
        try:
            agent = _agent(server.url(), timeout=0.2)
            with pytest.raises(ServerUnavailable, match=r"did not answer after 2 attempt.*Timeout"):
                agent.act("A hall.", INFO)
        finally:
            release.set()
    assert server.chat_requests == 2


def test_an_episode_timeout_on_local_ends_a_blocking_request_as_a_timeout(tmp_path):
    """The local backend's timeout (a signal's handler, raised where the main thread waits
    for the request) ends the episode as a timeout: never read as the request's failure
    (then "rejected", or retried past the episode's time)."""
    from turnbudget.eval.run.evaluate import evaluate

    release = threading.Event()

    def hold(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        release.wait(HANG_GUARD)
        return as_json(reply_body())

    out = tmp_path / "run"
    with FakeServer(hold) as server:
        try:
            agent = _agent(server.url(), constrain="none")  # (the request's timeout: HANG_GUARD)
            with pytest.raises(ValueError, match="no task"):  # (its one episode failed to run)
                evaluate(
                    "turnbudget/Maze-Easy-v0", agent, concurrency=1, backend="local",
                    timeout=2.0, out=out, ks=[1], ts=[5], tasks=1, n_bootstrap=0, retries=0,
                )  # fmt: skip
        finally:
            release.set()
    (episode,) = [json.loads(line) for line in (out / "episodes.jsonl").open()]
    assert episode["failure"] == "timeout", episode["error"]


class _Trickle(BaseHTTPRequestHandler):
    """Answers every request with a 200 whose body never ends: a space every 10 ms (each
    wait for data is short, so the client's own timeout never fires) until ``release`` is
    set or `HANG_GUARD` passes, then it hangs up."""

    release = threading.Event()

    def _trickle(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        for _ in range(HANG_GUARD * 100):
            if self.release.wait(0.01):
                return
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:  # (the client gave up and closed the connection)
                return

    do_GET = do_POST = _trickle

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("how", ["act", "act_async", "preflight"])
def test_a_server_that_never_finishes_its_answer_times_out_then_a_clear_error(how):
    """The client's own timeout bounds each wait for data; the agent's bounds the request."""
    from http.server import ThreadingHTTPServer

    release = threading.Event()
    handler = type("Trickle", (_Trickle,), {"release": release})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        agent = _agent(f"http://127.0.0.1:{httpd.server_address[1]}/v1", timeout=2.0)
        with pytest.raises(ServerUnavailable, match=r"did not answer.*Timeout"):
            if how == "act":
                agent.act("A hall.", INFO)
            elif how == "act_async":
                asyncio.run(agent.act_async("A hall.", INFO))
            else:
                agent.preflight()
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize(
    "key",
    ["Qw7sk9Lm2Xv8Tz4\n", "Qw7sk9Lm2Xv8Tz4\r\nX-Injected: 1", "Qw7sk9Lm2Xv8Tz4\u00e9", " Qw7sk9Lm2Xv8Tz4", ""],
    ids=["newline", "header-injection", "non-ascii", "leading-space", "empty"],
)  # fmt: skip
def test_a_key_that_cannot_travel_in_a_header_is_a_clear_error_before_any_request(
    key, monkeypatch, caplog
):
    monkeypatch.setenv(KEY_ENV, key)
    with FakeServer(lambda handler, request: as_json(reply_body())) as server:
        agent = _agent(server.url(), api_key_env=KEY_ENV, max_retries=3)
        with caplog.at_level(logging.DEBUG), pytest.raises(ValueError) as err:
            agent.act("A hall.", INFO)
        with pytest.raises(ValueError, match=r"cannot be sent in an HTTP header"):
            agent.preflight()
    assert f"environment variable {KEY_ENV!r}" in str(err.value)
    assert "cannot be sent in an HTTP header" in str(err.value)
    assert server.chat_requests == 0
    assert "Qw7sk9Lm2Xv8" not in str(err.value) + caplog.text


def test_an_empty_default_key_variable_is_no_key(monkeypatch):
    """``OPENAI_API_KEY=`` is as unset: the placeholder goes out (local servers need none)."""
    monkeypatch.setenv("OPENAI_API_KEY", "")
    seen = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        seen.append(handler.headers.get("Authorization"))
        return as_json(reply_body())

    with FakeServer(answer) as server:
        assert _agent(server.url()).act("A hall.", INFO) == "look"
    assert seen == ["Bearer no-key"]


def test_a_redirect_to_another_host_carries_no_credential(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "Zr4Kp8Wm2Qx6Vn3Tb9Lc")
    seen: list[tuple[str, dict[str, str]]] = []

    def elsewhere(
        handler: BaseHTTPRequestHandler, request: dict[str, Any]
    ) -> tuple[int, str, bytes]:
        seen.append((handler.path, dict(handler.headers)))
        return as_json(reply_body())

    with FakeServer(elsewhere) as other:

        def redirect(
            handler: BaseHTTPRequestHandler, request: dict[str, Any]
        ) -> tuple[int, str, bytes]:
            # "localhost", not 127.0.0.1: another origin for the client
            location = f"http://localhost:{other.port}/v1/chat/completions"
            handler.send_response(307)
            handler.send_header("Location", location)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            handler.wfile = io.BytesIO()  # (the answer is sent: what the fake adds goes nowhere)
            return 307, "", b""

        with FakeServer(redirect) as server:
            url = server.url("bob:Pw-Hq3Xn8Lr5@", "?api-key=Qk-Mz7Vb2Np4")
            assert _agent(url, api_key_env=KEY_ENV).act("A hall.", INFO) == "look"
    assert len(seen) == 1
    path, headers = seen[0]
    sent = f"{path} {headers}"
    assert "Authorization" not in headers and "authorization" not in headers
    for secret in ("Zr4Kp8Wm2Qx6Vn3Tb9Lc", "Pw-Hq3Xn8Lr5", "Qk-Mz7Vb2Np4", "Ym9iOlB3"):
        assert secret not in sent
