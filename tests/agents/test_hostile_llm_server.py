"""ChatAgent against what a broken or hostile OpenAI-compatible server sends, beyond
``test_llm_fake_server.py`` (a real ``http.server`` on loopback, `_fake_openai`).

- A 200 answer that is not UTF-8, or whose ``message`` is not an object, is a server
  fault (retried, then "answered without a reply"): never "the server rejected the
  request", never the model's empty reply.
- A ``usage`` no token count can be (1e308, a bool, negative) is recorded as 0.
- A reply far past ``max_tokens`` is read and recorded bounded (`MAX_REPLY_CHARS`).
- An answer of many choices, tool calls and logprobs is read as its first choice: only
  what is read is built (every part was built as a model: 25 s on the event loop).
- A server that holds the request is a timeout, then a clear error (the test's hold is
  an event, released when the test ends); so is one that sends its answer a byte at a
  time and never finishes (the client's own timeout bounds each read, not the request).
- An API key that cannot travel in a header (a trailing newline, a control or non-ASCII
  character) is a clear error before any request, the key not shown; it used to read as
  "did not answer ... Is it running?" after every retry.
- A redirect to another host carries none of the credentials (the key, the URL's user
  info and query key).
- An answer past ``max_answer_bytes`` (1 GiB of spaces without a Content-Length, a gzip
  bomb that expands to 1 GiB, as a 200, a 500 or a redirect, a Content-Length past it) is
  read no further: a clear error naming the URL and the bound, not retried, for ``act``,
  ``act_async``, ``preflight`` and ``GET /models``; the process's peak memory grows by
  little more than the bound (measured in a child process). The bound counts the answer
  decompressed, to the byte; gzip and deflate answers are read as before, error answers
  under the bound still reach the agent's errors, and a coding that was not asked for
  (``br``, ``zstd``, compressed twice over) is refused unread. The bounded client takes
  its proxy from the environment, as the ``openai`` client's own does.

- Bytes that are no HTTP answer (a garbage status line, a bad Content-Length, a body cut
  short) are named so, with what came and a hint, not "did not answer ... Is it running?";
  a server that did not answer is named with what the connection met.

Marker ``llm``: needs the ``openai`` client (the llm extra), not a model.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import io
import itertools
import json
import logging
import os
import socket as socketlib
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _fake_openai import FakeServer, as_json, reply_body
from _support import HANG_GUARD

pytestmark = pytest.mark.llm
openai = pytest.importorskip("openai")

from turnbudget.agents.llm import (  # noqa: E402
    MAX_ANSWER_BYTES,
    MAX_REPLY_CHARS,
    ChatAgent,
    RequestRejected,
    ServerUnavailable,
)
from turnbudget.agents.secrets import redact  # noqa: E402

INFO = {"admissible_actions": ["look", "north"]}
KEY_ENV = "TURNBUDGET_TEST_HOSTILE_KEY"
REPO = Path(__file__).resolve().parents[2]


def _agent(url: str, **kwargs: Any) -> ChatAgent:
    options = dict(constrain="none", max_retries=1, backoff=0.0, timeout=HANG_GUARD)
    agent = ChatAgent("fake", base_url=url, **{**options, **kwargs})
    agent.reset(0)
    return agent


def _act(agent: ChatAgent, path: str) -> str:
    """The agent's command for one turn, through its sync or its async client (``path``)."""
    if path == "sync":
        return agent.act("A hall.", INFO)
    return asyncio.run(agent.act_async("A hall.", INFO))


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
    "content-parts-not-objects": as_json(_body_with(choices__0__message__content=["look"])),
    "content-part-text-no-str": as_json(_body_with(choices__0__message__content=[{"type": "text", "text": 5}])),
}  # fmt: skip


@pytest.mark.parametrize("path", ["sync", "async"])
def test_content_given_as_parts_is_read_from_its_text_parts(path):
    """Some servers give a message's content as parts (a reasoning model's thinking, then its
    text): it was "not text", retried, and every episode failed to run."""
    parts = [{"type": "thinking", "thinking": "west is a wall"}, {"type": "text", "text": "nor"},
             {"type": "text", "text": "th"}]  # fmt: skip
    answer = as_json(_body_with(choices__0__message__content=parts))
    with FakeServer(lambda handler, request: answer) as server:
        agent = _agent(server.url())
        assert _act(agent, path) == "north"
    assert server.chat_requests == 1
    assert "west is a wall" not in agent.step_note()["reply"]


RETRY_AFTER = {  # the header a 429 carries -> the wait before the retry (backoff 0.5, cap 8)
    "seconds": ({"Retry-After": "3"}, 3.0),
    "openai-ms": ({"retry-after-ms": "2500"}, 2.5),
    "past-the-cap": ({"Retry-After": "3600"}, 8.0),
    # (past a float's range: a longer wait than any, not none; it was retried at the backoff)
    "past-a-float": ({"Retry-After": "9" * 400}, 8.0),
    "ms-infinite": ({"retry-after-ms": "inf"}, 8.0),
    "ms-not-a-number": ({"retry-after-ms": "nan"}, 0.5),
    "no-delta-seconds": ({"Retry-After": "1e9"}, 0.5),
    "shorter-than-backoff": ({"Retry-After": "0.1"}, 0.5),
    "not-a-number": ({"Retry-After": "abc"}, 0.5),
    "negative": ({"Retry-After": "-5"}, 0.5),
    "a-date-past": ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.5),
}


@pytest.mark.parametrize("header, wait", RETRY_AFTER.values(), ids=RETRY_AFTER.keys())
def test_a_rate_limits_retry_after_is_waited_up_to_max_backoff(header, wait, monkeypatch):
    """A 429's Retry-After was ignored: the agent retried at its own backoff (1 s, 2 s...)
    into the same rate limit, and its episodes failed once the retries were spent. (The
    agent's sleeps are recorded, not slept.)"""
    import turnbudget.agents.llm as llm

    slept: list[float] = []
    monkeypatch.setattr(llm, "time", type("Clock", (), {
        "sleep": staticmethod(slept.append), "perf_counter": staticmethod(llm.time.perf_counter),
        "time": staticmethod(llm.time.time)}))  # fmt: skip
    answers = iter([(429, "application/json", b'{"error": {"message": "slow down"}}', header)])

    def answer(handler: Any, request: Any) -> Any:
        return next(answers, as_json(reply_body("north")))

    with FakeServer(answer) as server:
        agent = _agent(server.url(), backoff=0.5, max_backoff=8.0)
        assert _act(agent, "sync") == "north"
    assert slept == [wait]


@pytest.mark.parametrize("answer", NOT_A_REPLY.values(), ids=NOT_A_REPLY.keys())
@pytest.mark.parametrize("path", ["sync", "async"])
def test_an_answer_that_is_no_reply_is_retried_then_a_clear_error(answer, path):
    with FakeServer(lambda handler, request: answer) as server:
        agent = _agent(server.url())
        with pytest.raises(ServerUnavailable, match=r"answered without a reply after 2 attempt"):
            _act(agent, path)
    assert server.chat_requests == 2
    assert agent.step_note() is None


ECHOED_KEY = "Hx5Tq9Lw3Rz7Mk2Vb8Np4Yc6"  # (no key shape: only its value can find it)
# An answer that is no reply, with the key where an 80-character excerpt of it would cut it.
ECHOING = {
    "not-json": (200, "text/plain", b"<" * 70 + ECHOED_KEY.encode() + b">" * 40),
    "message-is-text": as_json(_body_with(choices__0__message="m" * 70 + ECHOED_KEY)),
}


@pytest.mark.parametrize("answer", ECHOING.values(), ids=ECHOING.keys())
def test_a_key_echoed_across_the_cut_of_an_error_excerpt_is_blanked_whole(
    answer, monkeypatch, caplog
):
    """The excerpt was cut to 80 characters before its secrets were blanked: the key's first
    10 to 13 characters reached the episode's error, the records and stderr."""
    monkeypatch.setenv(KEY_ENV, ECHOED_KEY)
    with FakeServer(lambda handler, request: answer) as server:
        agent = _agent(server.url(), api_key_env=KEY_ENV)
        with caplog.at_level(logging.DEBUG), pytest.raises(ServerUnavailable) as err:
            agent.act("A hall.", INFO)
    seen = str(err.value) + caplog.text
    assert "without a reply" in str(err.value)
    pieces = {ECHOED_KEY[i : i + 6] for i in range(len(ECHOED_KEY) - 5)}
    assert not [piece for piece in pieces if piece in seen]


def test_an_unset_key_variable_is_named_only_when_it_looks_like_a_name(monkeypatch):
    """A key made of letters and digits passed where its variable's name goes was printed in
    the "not set" error, and blanked nowhere after."""
    monkeypatch.delenv(ECHOED_KEY, raising=False)
    agent = _agent("http://127.0.0.1:9/v1", api_key_env=ECHOED_KEY)
    with pytest.raises(ValueError, match="is not set") as err:
        agent.preflight()
    assert ECHOED_KEY not in str(err.value) and "not shown" in str(err.value)
    assert ECHOED_KEY not in redact(repr(agent))  # (registered: blanked wherever written)
    monkeypatch.delenv("TURNBUDGET_UNSET_KEY_VAR", raising=False)
    named = _agent("http://127.0.0.1:9/v1", api_key_env="TURNBUDGET_UNSET_KEY_VAR")
    with pytest.raises(ValueError, match=r"'TURNBUDGET_UNSET_KEY_VAR'.*is not set"):
        named.preflight()


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


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_server_that_holds_the_request_times_out_then_a_clear_error(path):
    """(The async path's deadline was ``asyncio.timeout``, which Python 3.10, still supported,
    has not: every async request failed there.)"""
    release = threading.Event()

    def hold(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        release.wait(HANG_GUARD)
        return as_json(reply_body())

    with FakeServer(hold) as server:
        try:
            agent = _agent(server.url(), timeout=0.2)
            with pytest.raises(ServerUnavailable, match=r"did not answer after 2 attempt.*Timeout"):
                _act(agent, path)
        finally:
            release.set()
    assert server.chat_requests == 2


def test_the_command_line_sets_the_request_timeout_and_retries(tmp_path, monkeypatch, capsys):
    """The request timeout (60 s) and retries (4) could be set in Python only: against a
    server that holds its answers one decision took five minutes from the command line."""
    from turnbudget.cli import main

    release = threading.Event()

    def hold(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
        release.wait(HANG_GUARD)
        return as_json(reply_body())

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run"
    with FakeServer(hold) as server:
        try:
            code = main([
                "eval", "--env", "turnbudget/Maze-Easy-v0", "--agent", "llm:fake",
                "--base-url", server.url(), "--constrain", "none",
                "--llm-timeout", "0.2", "--llm-retries", "1",
                "--tasks", "1", "--k", "1", "--t", "2", "--retries", "0", "--out", str(out),
                "--no-plots", "--quiet",
            ])  # fmt: skip
        finally:
            release.set()
    assert "1 failed to run" in capsys.readouterr().err and code == 2
    (episode,) = [json.loads(line) for line in (out / "episodes.jsonl").open()]
    assert "did not answer after 2 attempt(s)" in episode["error"], episode["error"]
    assert "0.2s" in episode["error"] and server.chat_requests == 2


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


class _TrickleCounting(_Trickle):
    """`_Trickle`, counting the requests still being answered: ``all_closed`` is set once
    every request opened has been dropped by its client."""

    lock = threading.Lock()
    open_now = 0
    all_closed = threading.Event()

    def _trickle(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.open_now += 1
        try:
            super()._trickle()
        finally:
            with cls.lock:
                cls.open_now -= 1
                if cls.open_now == 0 and not cls.release.is_set():
                    cls.all_closed.set()

    do_POST = _trickle

    def do_GET(self) -> None:  # (the preflight's GET /models: no model list served)
        self.send_error(404)


def test_an_episode_timeout_ends_its_request_too(tmp_path):
    """An episode's timeout left its request reading on its helper thread: more requests
    were then open than ``concurrency`` allows (a llama.cpp server answers one at a time),
    until the process ended. It is now dropped with the episode (the async path:
    tests/eval/run/test_evaluate_async.py)."""
    from turnbudget.eval.run.evaluate import evaluate

    handler = type(
        "TrickleCounting",
        (_TrickleCounting,),
        {"release": threading.Event(), "all_closed": threading.Event(), "lock": threading.Lock()},
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        agent = _agent(
            f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        )  # (its timeout: HANG_GUARD)
        with pytest.raises(ValueError, match="no task"):  # (every episode timed out)
            evaluate(
                "turnbudget/Maze-Easy-v0", agent, concurrency=1, backend="local",
                timeout=2.0, out=tmp_path / "run", ks=[1], ts=[5], tasks=2, n_bootstrap=0,
                retries=0,
            )  # fmt: skip
        assert handler.all_closed.wait(HANG_GUARD), f"{handler.open_now} requests still read"
    finally:
        handler.release.set()
        httpd.shutdown()
        httpd.server_close()
    failures = [
        json.loads(line)["failure"] for line in (tmp_path / "run" / "episodes.jsonl").open()
    ]
    assert failures == ["timeout", "timeout"]


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


@pytest.mark.parametrize("given", ["key", "url"])
def test_a_redirect_to_another_host_carries_no_credential(monkeypatch, given):
    """Neither the key (Bearer) nor the URL's user info (Basic) and query key reach another
    host. (The key and user info are given apart: one Authorization header carries one.)"""
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
            user = "bob:Pw-Hq3Xn8Lr5@" if given == "url" else ""
            url = server.url(user, "?api-key=Qk-Mz7Vb2Np4")
            key = {"api_key_env": KEY_ENV} if given == "key" else {}
            assert _agent(url, **key).act("A hall.", INFO) == "look"
    assert len(seen) == 1
    path, headers = seen[0]
    sent = f"{path} {headers}"
    assert "Authorization" not in headers and "authorization" not in headers
    for secret in ("Zr4Kp8Wm2Qx6Vn3Tb9Lc", "Pw-Hq3Xn8Lr5", "Qk-Mz7Vb2Np4", "Ym9iOlB3"):
        assert secret not in sent


@pytest.mark.parametrize("location", ["loop", "file:///etc/passwd"])
@pytest.mark.parametrize("how", ["sync", "async", "preflight"])
def test_a_redirect_the_client_cannot_follow_is_named_and_not_retried(location, how):
    """Redirects in a loop, or to a scheme the client cannot speak, are the server's answer:
    the error names them, once (the same request would get the same answer), where it said
    the server "did not answer ... Is it running?" after every retry."""
    paths: list[str] = []

    class Redirecting(BaseHTTPRequestHandler):
        def _redirect(self) -> None:
            paths.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(307)
            self.send_header("Location", self.path if location == "loop" else location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _redirect

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        agent = _agent(f"http://127.0.0.1:{httpd.server_address[1]}/v1", max_retries=3)
        with pytest.raises(ServerUnavailable, match="redirect the client cannot follow") as info:
            if how == "preflight":
                agent.preflight()
            else:
                _act(agent, how)
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()
    message = str(info.value)
    assert "Is it running" not in message and "Not retried" in message
    name = "TooManyRedirects" if location == "loop" else "UnsupportedProtocol"
    assert name in message
    # one request and the redirects it followed (the client's cap: 20), not four requests
    assert 1 <= len(paths) <= 21, len(paths)


# -- answers past `max_answer_bytes`: read no further, memory bounded ------------------

_MIB = 2**20
_SPACES = b" " * _MIB  # (JSON whitespace: a body of nothing but it is JSON to its end)


@functools.cache
def _gzip_bomb(mib: int = 1024) -> bytes:
    """A valid gzip body of about 1 KiB per MiB that expands to ``mib`` MiB of spaces (each
    MiB compressed once, after a full flush, so every one compresses the same)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = deflate.compress(_SPACES) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(_SPACES) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = functools.reduce(lambda crc, _: zlib.crc32(_SPACES, crc), range(mib), 0)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, mib * _MIB % 2**32)
    return header + first + again * (mib - 1) + deflate.flush() + trailer


class _Flood(BaseHTTPRequestHandler):
    """Under ``/flood/v1`` (``GET /models``, ``POST /chat/completions``) answers 1 GiB
    (``status``): spaces without a Content-Length (``flood = "plain"``), or the gzip bomb;
    elsewhere answers as a server should. ``flooded`` counts the flood's requests."""

    flood = "plain"
    status = 200
    flooded: ClassVar[list[str]] = []  # (a new list for each test's subclass)

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/flood/"):
            self.flooded.append(self.path)
            return self._flood()
        body = reply_body() if self.path.endswith("/chat/completions") else {"data": []}
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(json.dumps(body))))
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def _flood(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        if 300 <= self.status < 400:  # (a redirect the client would follow: to a sane answer)
            self.send_header("Location", self.path.removeprefix("/flood"))
        if self.flood == "gzip":
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        if self.flood == "gzip":
            bomb = _gzip_bomb()
            chunks: Iterable[bytes] = (bomb[at : at + _MIB] for at in range(0, len(bomb), _MIB))
        else:
            chunks = itertools.repeat(_SPACES, 1024)
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
        except OSError:  # (the client read what it would and hung up)
            pass

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


# Run in a child process, whose peak memory is its own: one normal answer first (every
# module loaded, every path taken once), then the flood. In case the bound is ever lost,
# the child may take at most 1 GiB more address space (the flood read whole took 4-5 GiB
# of memory), never past a hard limit already set: then a MemoryError, not a machine out
# of memory.
_MEASURE = """
import asyncio, json, resource, sys
from turnbudget.agents.llm import ChatAgent, ServerUnavailable

how, url = sys.argv[1:]


def run(url):
    agent = ChatAgent("fake", base_url=url, constrain="none", max_retries=2, backoff=0.0)
    agent.reset(0)
    if how == "act":
        return agent.act("A hall.", {"admissible_actions": ["look"]})
    if how == "act_async":
        return asyncio.run(agent.act_async("A hall.", {"admissible_actions": ["look"]}))
    return agent.preflight()


normal = run(url + "/v1")
with open("/proc/self/status") as status:
    vm_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
guard = vm_kib * 1024 + 2**30
resource.setrlimit(resource.RLIMIT_AS, (guard if hard == resource.RLIM_INFINITY else min(guard, hard), hard))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    run(url + "/flood/v1")
    error = None
except ServerUnavailable as exc:
    error = str(exc)
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"normal": normal, "error": error, "grew_mib": grew / 1024}))
"""


# The peak memory the flood may add: the bound, and the HTTP package's decompression step
# (httpx2, under openai >= 3, expands at most 1 MiB at a time: 17-21 MiB measured; httpx
# expands each 64 KiB it reads whole, some 64 MiB of this bomb: 127 MiB measured).
_ON_HTTPX2 = any(c.__module__.startswith("httpx2") for c in openai.DefaultHttpxClient.__mro__)
_MOST_GROWTH_MIB = 64 if _ON_HTTPX2 else 192


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; ru_maxrss in KiB")
@pytest.mark.parametrize(
    "flood",
    ["plain", "gzip", "gzip-500", "gzip-307"],
    ids=["endless-body", "gzip-bomb", "gzip-bomb-500", "gzip-bomb-redirect"],
)
@pytest.mark.parametrize("how", ["act", "act_async", "preflight"])
def test_an_answer_past_the_bound_is_a_clear_error_read_no_further(how, flood):
    """1 GiB, plain or expanded from a 1 MiB gzip body (a 200, a 500 the client reads to
    build its error, a redirect it reads before it follows it): the client stops at the bound (`MAX_ANSWER_BYTES`), not retried,
    its peak memory grows by little more than the bound (the unbounded client's grew by
    4-5 GiB and ended "without a reply")."""
    coding, _, status = flood.partition("-")
    handler = type(
        "Flood", (_Flood,), {"flood": coding, "status": int(status or 200), "flooded": []}
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        child = subprocess.run(
            [sys.executable, "-c", _MEASURE, how, url], capture_output=True, text=True,
            timeout=HANG_GUARD, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False,
        )  # fmt: skip
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert child.returncode == 0, child.stderr
    measured = json.loads(child.stdout)
    assert measured["normal"] == ("look" if how != "preflight" else None)
    assert measured["grew_mib"] < _MOST_GROWTH_MIB, measured  # far less than the 1 GiB sent
    request = "GET /flood/v1/models" if how == "preflight" else "POST /flood/v1/chat/completions"
    how_counted = "decompressed" if coding == "gzip" else "as sent"
    assert measured["error"] == (
        f"LLM server at {url}/flood/v1 answered {request} with more than {MAX_ANSWER_BYTES} "
        f"bytes ({how_counted}; the bound is `max_answer_bytes`), and was read no further. "
        f"Not retried ({'GET /models' if how == 'preflight' else 'the request'} would get "
        "the same answer). Is it an OpenAI-compatible server? Rerun the same evaluation to "
        "resume."
    )
    assert len(handler.flooded) == 1  # not retried


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_models_list_past_the_bound_is_a_clear_error_not_a_constraint_guess(path):
    """``constrain="auto"`` asks ``GET /models`` first: a flood there is refused as a
    chat answer is, never read on as "a server without /models"."""
    handler = type("Flood", (_Flood,), {"flooded": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/flood/v1"
    try:
        agent = _agent(url, constrain="auto", max_answer_bytes=_MIB, max_retries=3)
        with pytest.raises(ServerUnavailable, match=r"answered GET /flood/v1/models with more"):
            _act(agent, path)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert handler.flooded == ["/flood/v1/models"]


def _gzip(body: bytes) -> bytes:
    return gzip.compress(body)


def _zlib_deflate(body: bytes) -> bytes:
    return zlib.compress(body)


def _raw_deflate(body: bytes) -> bytes:
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return deflate.compress(body) + deflate.flush()


CODINGS = {
    "gzip": ("gzip", _gzip),
    "deflate-zlib": ("deflate", _zlib_deflate),
    "deflate-raw": ("deflate", _raw_deflate),
    "identity": ("identity", bytes),
    "unknown-passes-raw": ("utf-8", bytes),  # (as httpx passes it)
}


@pytest.mark.parametrize("coding", CODINGS.values(), ids=CODINGS.keys())
@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_compressed_answer_is_read_and_only_bounded_codings_are_asked_for(coding, path):
    name, compress = coding
    asked = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        asked.append(handler.headers.get("Accept-Encoding"))
        body = compress(json.dumps(reply_body("north")).encode())
        return 200, "application/json", body, {"Content-Encoding": name}

    with FakeServer(answer) as server:
        agent = _agent(server.url())
        assert _act(agent, path) == "north"
    assert asked == ["gzip, deflate"]  # (not br or zstd: httpx would expand them whole)
    assert agent.step_note()["tokens_in"] == 7  # (the answer's usage, read as before)


@pytest.mark.parametrize("coding", ["gzip", "identity"])
@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_bound_counts_the_answer_decompressed_to_the_byte(coding, path):
    """An answer of exactly ``max_answer_bytes`` is read; one byte more is refused (its
    gzip body far under the bound), at once: the request is not sent again."""
    bound = 4096
    size = {"fits": bound, "over": bound + 1}
    sent = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        body = json.dumps(reply_body("north")).encode()
        body += b" " * (size[sent[-1]] - len(body))  # (padded with JSON whitespace)
        if coding == "gzip":
            return 200, "application/json", gzip.compress(body), {"Content-Encoding": "gzip"}
        return 200, "application/json", body

    with FakeServer(answer) as server:
        agent = _agent(server.url(), max_answer_bytes=bound, max_retries=3)
        sent.append("fits")
        assert _act(agent, path) == "north"
        sent.append("over")
        with pytest.raises(ServerUnavailable) as err:
            _act(agent, path)
    assert server.chat_requests == 2
    how = "decompressed" if coding == "gzip" else "Content-Length: 4097"
    assert f"with more than {bound} bytes ({how}; the bound is `max_answer_bytes`)" in str(
        err.value
    )
    assert f"LLM server at {server.url()} " in str(err.value) and "Not retried" in str(err.value)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_without_a_bound_a_long_answer_is_read_whole(path):
    """``max_answer_bytes=None``: no bound (an answer of 4 MiB, compressed or not)."""
    body = json.dumps(reply_body("north")).encode() + b" " * (4 * _MIB)
    answers = iter([(200, "application/json", body),
                    (200, "application/json", gzip.compress(body), {"Content-Encoding": "gzip"})])  # fmt: skip
    with FakeServer(lambda handler, request: next(answers)) as server:
        agent = _agent(server.url(), max_answer_bytes=None)
        for _ in range(2):
            assert _act(agent, path) == "north"


@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, gzip", "deflate, gzip"])
@pytest.mark.parametrize("path", ["sync", "async"])
def test_an_answer_in_a_coding_that_was_not_asked_for_is_refused_unread(coding, path):
    """httpx would expand a brotli or zstd body whole, and a body compressed twice is a
    bomb's way past one bound: none is read, the request is not sent again."""

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        return 200, "application/json", b"\x00" * 64, {"Content-Encoding": coding}

    with FakeServer(answer) as server:
        agent = _agent(server.url(), max_retries=3)
        with pytest.raises(ServerUnavailable) as err:
            _act(agent, path)
    assert server.chat_requests == 1
    assert (
        f"answered POST /v1/chat/completions in Content-Encoding {coding!r}, which it was not "
        "asked for" in str(err.value)
    )


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_broken_gzip_answer_is_retried_as_before(path):
    """A gzip body that does not decompress is no bound's business: retried, then "did
    not answer", as when the client read the body itself."""
    answer = (200, "application/json", b"\x1f\x8b\x08 not gzip", {"Content-Encoding": "gzip"})
    with FakeServer(lambda handler, request: answer) as server:
        agent = _agent(server.url())
        with pytest.raises(ServerUnavailable, match=r"did not answer after 2 attempt"):
            _act(agent, path)
    assert server.chat_requests == 2


ERRORS = {  # status: (what the agent raises, what it says, requests sent)
    "429": (ServerUnavailable, "did not answer after 2 attempt(s) (RateLimitError", 2),
    "500": (ServerUnavailable, "did not answer after 2 attempt(s) (InternalServerError", 2),
    # (retried as the openai client retries them: the server's timeout or lock, not the request's)
    "408": (ServerUnavailable, "did not answer after 2 attempt(s) (APIStatusError", 2),
    "409": (ServerUnavailable, "did not answer after 2 attempt(s) (ConflictError", 2),
    "404": (RequestRejected, "rejected the request for model 'fake' (NotFoundError", 1),
}


@pytest.mark.parametrize("status", ERRORS.keys())
@pytest.mark.parametrize("coding", ["gzip", "identity"])
@pytest.mark.parametrize("path", ["sync", "async"])
def test_an_error_answer_under_the_bound_is_read_into_the_error(status, coding, path):
    """The error answers the client reads (read first by the bound's hook) reach the
    agent's errors as before: retried or not by their status, their message shown."""
    raised, expected, requests = ERRORS[status]
    body = json.dumps({"error": {"message": "Xq7 model not served here"}}).encode()

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        if coding == "gzip":
            compressed = gzip.compress(body)
            return int(status), "application/json", compressed, {"Content-Encoding": "gzip"}
        return int(status), "application/json", body

    with FakeServer(answer) as server:
        agent = _agent(server.url())
        with pytest.raises(raised) as err:
            _act(agent, path)
    assert expected in str(err.value) and "Xq7 model not served here" in str(err.value)
    assert server.chat_requests == requests
    # (a server that answered every attempt is no server that "is not running")
    if raised is ServerUnavailable:
        assert f"It answered HTTP {status} each time" in str(err.value), str(err.value)
        assert "Is it running?" not in str(err.value)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_long_error_answer_is_blanked_only_as_far_as_it_is_shown(path, monkeypatch):
    """An error answer under the bound is in the message of the client's exception, which was
    blanked whole before its first 200 characters were shown: a 15 MB answer took seconds and
    hundreds of MB per attempt, on the event loop of every episode in flight."""
    from turnbudget.agents import secrets

    monkeypatch.setenv(KEY_ENV, ECHOED_KEY)
    message = f"overloaded, key {ECHOED_KEY}, " + "ab " * (5 * _MIB)
    body = json.dumps({"error": {"message": message}}).encode()
    read: list[int] = []
    blank = secrets.redact
    monkeypatch.setattr(secrets, "redact", lambda text: read.append(len(text)) or blank(text))
    with FakeServer(lambda handler, request: (503, "application/json", body)) as server:
        agent = _agent(server.url(), api_key_env=KEY_ENV)
        with pytest.raises(ServerUnavailable, match=r"overloaded, key \*\*\*, ab ab") as err:
            _act(agent, path)
    assert ECHOED_KEY not in str(err.value) and max(read) < 2**16


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_5xx_naming_the_constraint_still_drops_it(path, caplog):
    """llama-cpp-python reports a constraint it does not take as a 500 naming it: read
    through the bound, it still makes the agent send plain requests."""
    seen = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        seen.append(sorted(request))
        if "grammar" in request:
            body = json.dumps({"error": {"message": "unexpected field: grammar"}}).encode()
            return 500, "application/json", gzip.compress(body), {"Content-Encoding": "gzip"}
        return as_json(reply_body("north"))

    with FakeServer(answer) as server, caplog.at_level(logging.WARNING):
        agent = _agent(server.url(), constrain="grammar")
        assert _act(agent, path) == "north"
    assert ["grammar" in keys for keys in seen] == [True, False]
    assert "rejected the 'grammar' constraint" in caplog.text


@pytest.mark.parametrize("path", ["sync", "async"])
def test_an_answer_with_keys_named_like_the_clients_own_arguments_is_read(path):
    """A key ``_fields_set`` was passed to the client's ``construct`` as its own argument: an
    AttributeError, reported as the server rejecting the request."""
    body = {**reply_body("north"), "_fields_set": 1, "_extra": {"x": 1}}
    with FakeServer(lambda handler, request: as_json(body)) as server:
        assert _act(_agent(server.url()), path) == "north"


def _crowded_answer(choices: int) -> dict[str, Any]:
    """A reply of "north" followed by ``choices - 1`` more choices, each with a tool call and
    a logprob, and a usage with parts nobody reads."""
    first = reply_body("north")["choices"][0]
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    logprobs = {"content": [{"token": "a", "logprob": 0.0, "bytes": [97], "top_logprobs": []}]}
    other = {"index": 1, "finish_reason": "stop", "logprobs": logprobs,
             "message": {"role": "assistant", "content": "look", "tool_calls": [call]}}  # fmt: skip
    usage = {"prompt_tokens": 7, "completion_tokens": 1, "prompt_tokens_details": {"x": [1] * 9}}
    return {**reply_body(), "choices": [{**first, "logprobs": logprobs}] + [other] * (choices - 1),
            "usage": usage}  # fmt: skip


def test_only_what_is_read_of_an_answer_is_built():
    """Every choice, tool call and logprob of an answer was built as a model: 400,000 choices
    in a 13 MB answer (under the bound) took 25 s and 750 MB, on the event loop of every
    episode in flight, far past the agent's timeout (it cannot interrupt work on the loop)."""
    from turnbudget.agents.llm import _Create, _parse_answer

    completion = _parse_answer(_Create({}), json.dumps(_crowded_answer(50_000)).encode())
    (choice,) = completion.choices
    assert choice.message.content == "north" and getattr(choice, "logprobs", None) is None
    assert completion.usage.prompt_tokens == 7 and completion.usage.completion_tokens == 1


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_reply_among_many_choices_is_read_as_the_first(path):
    with FakeServer(lambda handler, request: as_json(_crowded_answer(1000))) as server:
        agent = _agent(server.url())
        assert _act(agent, path) == "north"
    note = agent.step_note()
    assert (note["reply"], note["tokens_in"], note["tokens_out"]) == ("north", 7, 1)


def _prompt_text(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages"))


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_400_to_one_prompt_keeps_the_constraint_for_the_others(path, caplog):
    """Any 400 to a constrained request turned the constraint off for every episode sharing
    the agent: one prompt past the context window (vLLM's 400) and every later decision ran
    unconstrained, so records depended on which episodes ran first. The decision is now
    sent plain, and the constraint dropped only if that answers."""
    seen = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        seen.append("grammar" in request)
        if "A vast hall" in _prompt_text(request):  # (too long, constrained or not)
            return as_json({"error": {"message": "maximum context length is 2048 tokens"}}, 400)
        return as_json(reply_body("north"))

    with FakeServer(answer) as server, caplog.at_level(logging.WARNING):
        agent = _agent(server.url(), constrain="grammar")
        with pytest.raises(RequestRejected, match="maximum context length"):
            _act_on(agent, path, "A vast hall.")
        assert _act_on(agent, path, "A hall.") == "north"
    assert seen == [True, False, True]  # (the plain resend failed too: the prompt, not the grammar)
    assert "rejected the 'grammar' constraint" not in caplog.text


@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_plain_resend_asks_for_as_many_tokens_as_the_constrained_request(path, caplog):
    """A constrained request asks room for the longest command (70 tokens here), the plain
    resend asked for `max_tokens` (32): a window the prompt and 70 overran but 32 fitted
    answered the resend, and the constraint was dropped for every episode of the run."""
    long = "take the " + "very " * 9 + "small brass key"  # (69 bytes)
    info = {"admissible_actions": ["look", long]}
    seen = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        seen.append(("grammar" in request, request["max_tokens"]))
        if "A vast hall" in _prompt_text(request) and request["max_tokens"] > 40:
            return as_json({"error": {"message": "maximum context length is 2048 tokens"}}, 400)
        return as_json(reply_body("look"))

    def act(observation: str) -> str:
        if path == "sync":
            return agent.act(observation, info)
        return asyncio.run(agent.act_async(observation, info))

    with FakeServer(answer) as server, caplog.at_level(logging.WARNING):
        agent = _agent(server.url(), constrain="grammar", max_tokens=32)
        with pytest.raises(RequestRejected, match="maximum context length"):
            act("A vast hall.")
        assert act("A hall.") == "look"
    assert seen == [(True, 70), (False, 70), (True, 70)]
    assert "rejected the 'grammar' constraint" not in caplog.text


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_400_the_plain_resend_answers_drops_the_constraint_for_every_decision(path, caplog):
    seen = []

    def answer(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        seen.append("grammar" in request)
        if "grammar" in request:
            return as_json({"error": {"message": "unsupported request"}}, 400)
        return as_json(reply_body("north"))

    with FakeServer(answer) as server, caplog.at_level(logging.WARNING):
        agent = _agent(server.url(), constrain="grammar")
        assert _act_on(agent, path, "A hall.") == "north"
        assert _act_on(agent, path, "A hall.") == "north"
    assert seen == [True, False, False]
    assert "rejected the 'grammar' constraint" in caplog.text


def _act_on(agent: ChatAgent, path: str, observation: str) -> str:
    if path == "sync":
        return agent.act(observation, INFO)
    return asyncio.run(agent.act_async(observation, INFO))


@pytest.mark.parametrize("path", ["sync", "async"])
def test_the_bounded_client_still_takes_its_proxy_from_the_environment(path, monkeypatch):
    """The bound is read through the ``openai`` client's own default HTTP client (no
    transport of its own, for which httpx would read no proxy from the environment):
    ``HTTP_PROXY`` is honoured."""
    seen = []

    def proxy(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[Any, ...]:
        seen.append(handler.path)  # (a proxy is sent the absolute URL)
        return as_json(reply_body("north"))

    with FakeServer(proxy) as server:
        for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
        agent = _agent("http://llm.invalid/v1")
        assert _act(agent, path) == "north"
    assert seen == ["http://llm.invalid/v1/chat/completions"]


class _RawServer:
    """A loopback TCP server that reads a request's first bytes, sends ``answer`` (bytes,
    whatever they are) and closes, for every connection: what no HTTP server sends."""

    def __init__(self, answer: bytes):
        self.answer, self.connections = answer, 0
        self._socket = socketlib.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:  # (closed: the test is over)
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socketlib.socket) -> None:
        # Sent, then the request read to its end before the socket closes: closed with bytes
        # unread, the kernel resets the connection, and the client meets a reset (a
        # ReadError), not what was sent, as the race between them goes.
        with connection:
            connection.settimeout(HANG_GUARD)
            connection.sendall(self.answer)
            connection.shutdown(socketlib.SHUT_WR)
            with contextlib.suppress(OSError):
                while connection.recv(65536):
                    pass

    def __enter__(self) -> _RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        # (shut down first: on Linux, closing a listening socket does not wake an accept)
        self._socket.shutdown(socketlib.SHUT_RDWR)
        self._socket.close()
        self._thread.join(HANG_GUARD)


NOT_HTTP = {  # the bytes sent: what the error names
    "garbage-status-line": (b"HELLO WORLD\r\n\r\n", "illegal status line"),
    "bad-content-length": (b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n{}", "bad Content-Length"),
    "body-cut-short": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}", "without sending complete message body"),
}  # fmt: skip


@pytest.mark.parametrize("case", NOT_HTTP.keys())
@pytest.mark.parametrize("path", ["sync", "async", "preflight"])
def test_an_answer_that_is_not_http_is_named_so_not_a_server_that_did_not_answer(case, path):
    """A server that sends bytes that are no HTTP answer (another service on the port, a body
    cut short) answered: it read "did not answer ... (APIConnectionError: Connection error.).
    Is it running?", which named neither what came nor where to look."""
    sent, named = NOT_HTTP[case]
    with _RawServer(sent) as server:
        agent = _agent(server.url())
        with pytest.raises(ServerUnavailable) as err:
            agent.preflight() if path == "preflight" else _act(agent, path)
    message = str(err.value)
    assert "not valid HTTP" in message and named in message, message
    assert "Is an OpenAI-compatible HTTP server listening at this address?" in message
    assert "did not answer" not in message and "Is it running?" not in message
    assert server.connections == (1 if path == "preflight" else 2)  # (retried as before)


@pytest.mark.parametrize("path", ["sync", "preflight"])
def test_a_server_that_did_not_answer_is_named_with_what_the_connection_met(path):
    """A closed port, or a connection closed with nothing sent, still "did not answer", now
    with the HTTP package's cause (the openai client's own message is "Connection error.")."""
    closed = socketlib.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()
    with _RawServer(b"") as silent:
        for where, cause in ((url, "ConnectError"), (silent.url(), "RemoteProtocolError")):
            agent = _agent(where)
            with pytest.raises(ServerUnavailable) as err:
                agent.preflight() if path == "preflight" else _act(agent, path)
            message = str(err.value)
            assert "did not answer" in message and "Is it running?" in message, message
            assert f"Cause: {cause}: " in message, message
