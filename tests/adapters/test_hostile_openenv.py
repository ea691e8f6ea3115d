"""Hostile input at the OpenEnv door (`turnbudget serve-env`): the server answers each bad
request with an error that says what was wrong (never the input echoed back, never a 500),
keeps the session where the request allows it, keeps serving, and hides a budget whose
visibility is off however it is spelt."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from _openenv import idle, module_server
from _support import HANG_GUARD

pytestmark = pytest.mark.llmrl
pytest.importorskip("openenv")

from websockets.sync.client import connect  # noqa: E402

from turnbudget._checks import MAX_SEED  # noqa: E402
from turnbudget.adapters.openenv import (  # noqa: E402
    MAX_MESSAGE_BYTES,
    EnvServer,
    RequestError,
    TextGameAction,
    TextGameEnv,
    TextGameEnvironment,
)
from turnbudget.agents.base import BUDGET_KEYS  # noqa: E402

ENV = "turnbudget/Maze-Easy-v0"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvServer]:
    yield from module_server(tmp_path_factory, "openenv-hostile", 2)


def _connection(server: EnvServer) -> http.client.HTTPConnection:
    url = urlsplit(server.base_url)
    return http.client.HTTPConnection(url.hostname, url.port, timeout=HANG_GUARD)


def _post(server: EnvServer, path: str, body: bytes) -> tuple[int, Any]:
    conn = _connection(server)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


# -- in process ----------------------------------------------------------------------


@pytest.mark.parametrize("reveal", ["NEVER", " never", "Never", "never "])
def test_a_hidden_budget_stays_hidden_however_never_is_spelt(reveal):
    env = TextGameEnvironment(ENV)
    observations = [env.reset(seed=0, turn_budget=5, reveal=reveal)]
    observations.append(env.step(TextGameAction(command="look")))
    for obs in observations:
        assert obs.turns_left is None and obs.metadata["turns_left"] is None
        assert not set(BUDGET_KEYS) & obs.info.keys()
        assert "turns left" not in obs.text
    env.close()


@pytest.mark.parametrize("host", ["", "  ", None])
def test_serve_refuses_a_blank_host_before_binding(host):
    """``serve(host="")`` bound every interface, unannounced, to a server with no
    authentication (the command line refuses it as well)."""
    from turnbudget.adapters.openenv import serve

    with pytest.raises(ValueError, match="Expect `host` to be an address to bind"):
        serve(host=host, port=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"port": 70000}, "Expect `port` to be an int in 0..65535"),
        ({"port": -1}, "Expect `port` to be an int in 0..65535"),
        ({"port": True}, "Expect `port` to be an int in 0..65535"),
        ({"port": "8000"}, "Expect `port` to be an int in 0..65535"),
        ({"port": 0, "log_level": "loud"}, "Expect `log_level` to be one of"),
        ({"port": 0, "ready": "print"}, "Expect `ready` to be a callable"),
    ],
)
def test_serve_refuses_a_port_log_level_or_ready_it_cannot_use_before_binding(kwargs, message):
    """A port out of range was bind()'s OverflowError, True bound port 1, and a log level or
    a ready that uvicorn could not use failed once the port was bound."""
    from turnbudget.adapters.openenv import serve

    with pytest.raises(ValueError, match=message):
        serve(**kwargs)


@pytest.mark.parametrize(
    "body,status",
    [(b'{"seed": 3}', None), (b'{"seed": true}', 422), (b"[" * 100_000, 400)],
)
def test_a_reset_body_in_one_byte_chunks_is_checked_whole_and_passed_on_as_sent(body, status):
    """The /reset seed check reads a chunked body chunk by chunk (an ASGI server hands each
    on as it comes) and checks it whole: a good body reaches OpenEnv as the same chunks, a
    bad seed or a body that is no JSON it reads is refused. (It added each chunk to the body
    read so far, copying it whole every time: 1 MiB in 1-byte chunks kept the one event loop
    busy for minutes; the chunks are now joined once.)"""
    import asyncio

    from turnbudget.adapters.openenv import _StrictResetSeed

    chunks = [body[i : i + 1] for i in range(len(body))]
    answered, passed_on = [], []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            passed_on.append(message["body"])
            if not message["more_body"]:
                return

    async def run() -> None:
        sent = iter(range(len(chunks)))

        async def receive() -> dict[str, Any]:
            i = next(sent)
            return {"type": "http.request", "body": chunks[i], "more_body": i < len(chunks) - 1}

        async def send(message: dict[str, Any]) -> None:
            answered.append(message)

        scope = {"type": "http", "method": "POST", "path": "/reset", "headers": []}
        await _StrictResetSeed(app)(scope, receive, send)

    asyncio.run(run())
    if status is None:
        assert passed_on == chunks and not answered
    else:
        assert answered[0]["status"] == status and not passed_on


def test_seeds_past_a_64_bit_word_and_non_actions_are_refused():
    env = TextGameEnvironment(ENV)
    env.reset(seed=1)
    for seed in (MAX_SEED + 1, 2**70):
        with pytest.raises(RequestError, match="Expect `seed` to be an int >= 0"):
            env.reset(seed=seed)
        with pytest.raises(RequestError, match="No episode to step"):
            env.step(TextGameAction(command="look"))  # a refused reset leaves no episode
    first = env.reset(seed=MAX_SEED, turn_budget=3, reveal="always")
    for action in ("look", None, {"command": "look"}):
        with pytest.raises(RequestError, match="Expect a TextGameAction with a str `command`"):
            env.step(action)
    assert env.step(TextGameAction(command="look")).turns_left == first.turns_left - 1
    env.close()


def test_a_budget_mix_mapping_survives_json_string_keys():
    env = TextGameEnvironment(ENV)  # JSON has only string keys: {"8": 2} is {8: 2}
    budgets = {
        env.reset(seed=seed, budget_mix={"8": 2, "32": 1}, reveal="always").turns_left
        for seed in range(20)
    }
    assert budgets == {8, 32}
    for bad in ({"eight": 1}, {"0": 1}, {"8": "heavy"}, {"9" * 5000: 1}):
        with pytest.raises(RequestError, match="Cannot reset"):
            env.reset(seed=0, budget_mix=bad)
    env.close()


def test_a_budget_mix_key_past_any_t_names_budget_mix():
    env = TextGameEnvironment(ENV)  # (int() of 5,000 digits: Python's own limit was the message)
    for bad in ({"9" * 5000: 1}, {"8": 1, "9" * 11: 1}):
        with pytest.raises(RequestError, match="Expect every T of `budget_mix` to be at most"):
            env.reset(seed=0, budget_mix=bad)
    env.close()


def test_a_budget_mix_naming_one_t_twice_is_refused():
    """{"5": 1, "05": 0, "9": 1} became {5: 0, 9: 1}: T=5's weight was lost, and T=5 never
    drawn, without a word."""
    env = TextGameEnvironment(ENV)
    for bad in ({"5": 1, "05": 0, "9": 1}, {"08": 1, "8": 1}):
        with pytest.raises(
            RequestError, match=r"Expect each T of `budget_mix` once, got '0?[58]' and"
        ):
            env.reset(seed=0, budget_mix=bad)
    env.close()


def test_an_episode_id_no_answer_can_carry_is_refused():
    # JSON's "\ud800" is a lone surrogate: taken, it failed every `state` answer of the episode
    env = TextGameEnvironment(ENV)
    for episode_id in ("\ud800", "run-\udfff-1"):
        with pytest.raises(RequestError, match="Expect `episode_id` to be text UTF-8 can carry"):
            env.reset(seed=0, episode_id=episode_id)
        with pytest.raises(RequestError, match="No episode to step"):
            env.step(TextGameAction(command="look"))
    env.reset(seed=0, episode_id="run-é-1")
    assert env.state.model_dump_json()
    env.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"default_env_id": 5}, "Expect `default_env_id` to be a registered turnbudget/ id"),
        ({"default_env_id": "--help"}, "Expect `default_env_id` to be a registered"),
        (
            {"default_env_id": "turnbudget/Maze\x00-v0"},
            "Expect `default_env_id` to be a registered",
        ),
        ({"startup_timeout": None}, "Expect `startup_timeout` to be a positive number"),
        ({"log_path": 5}, "Expect `log_path` to be a path or None, got 5"),
    ],
)
def test_env_server_refuses_what_its_command_line_cannot_take(kwargs, message):
    # (the id went on the command line: subprocess's TypeError, an option of the command or
    # an "embedded null byte"; a startup_timeout of None waited 0 s, so every start failed)
    with pytest.raises(ValueError, match=message):
        EnvServer(**kwargs)


def test_a_step_after_the_episode_ended_says_it_ended_and_spends_no_turn():
    """It said to use the WebSocket client (plain HTTP /step is stateless) to a session on
    one, whose episode had simply ended."""
    env = TextGameEnvironment(ENV)
    env.reset(seed=0, turn_budget=2)
    env.step(TextGameAction(command="look"))
    assert env.step(TextGameAction(command="look")).truncated
    for _ in range(2):
        with pytest.raises(RequestError) as refused:
            env.step(TextGameAction(command="look"))
        message = str(refused.value)
        assert "the last one ended (truncated at turn 2); call reset() for the next" in message
        assert "HTTP" not in message and "WebSocket" not in message
    assert env.state.step_count == 2  # no turn spent
    with pytest.raises(RequestError, match="Expect `seed`"):
        env.reset(seed=-1)  # a refused reset: no episode, and none that ended
    with pytest.raises(RequestError, match="none has started, or the last was refused"):
        env.step(TextGameAction(command="look"))
    env.reset(seed=0, turn_budget=2)
    assert not env.step(TextGameAction(command="look")).done  # a new episode plays
    env.close()


def test_env_server_sessions_before_start_is_a_clear_error():
    server = EnvServer()  # (its sessions() was a bare AssertionError)
    with pytest.raises(RuntimeError, match=r"not running: start\(\) it"):
        server.sessions()
    server.stop()  # (stopping one never started does nothing)
    with pytest.raises(RuntimeError, match="not running"):
        server.sessions()


# -- through the server ----------------------------------------------------------------


@pytest.mark.timeout(600, method="thread")
def test_bad_http_bodies_are_422s_that_never_echo_the_input(server: EnvServer):
    secret = "hostile-input-" + "z" * 300
    bad = [
        ("/reset", b"[1, 2]"),
        ("/reset", b'"just a string"'),
        ("/reset", b"null"),
        ("/reset", b'{"env_id": "turnbudget/Maze-Easy-v0", "seed": NaN}'),  # was a 500
        ("/reset", json.dumps({"env_id": ENV, "episode_id": secret}).encode()),
        ("/step", json.dumps({"action": {"command": 5}, "note": secret}).encode()),
        ("/step", b'{"action": {"command": NaN}}'),  # was a 500
        ("/step", json.dumps({"action": [secret]}).encode()),
    ]
    for path, body in bad:
        status, answer = _post(server, path, body)
        assert status == 422, (path, body[:60], answer)
        assert answer["detail"] and all(
            {"type", "loc", "msg"} == e.keys() for e in answer["detail"]
        )
        assert "hostile-input" not in json.dumps(answer) and "NaN" not in json.dumps(answer)
    status, answer = _post(server, "/reset", json.dumps({"env_id": ENV, "seed": 2}).encode())
    assert status == 200 and answer["observation"]["seed"] == 2  # it keeps serving


@pytest.mark.timeout(600, method="thread")
def test_a_body_over_the_limit_is_a_413_before_it_is_read(server: EnvServer):
    conn = _connection(server)  # declared too large: refused on the headers alone
    try:
        conn.putrequest("POST", "/reset")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(2 * MAX_MESSAGE_BYTES))
        conn.endheaders()
        response = conn.getresponse()
        assert response.status == 413
        assert "at most 1048576 bytes" in json.loads(response.read())["detail"]
    finally:
        conn.close()

    def chunks() -> Iterator[bytes]:  # no length declared: counted as it arrives
        yield b'{"env_id": "turnbudget/Maze-Easy-v0", "episode_id": "'
        for _ in range(MAX_MESSAGE_BYTES // 65536 + 1):
            yield b"x" * 65536
        yield b'"}'

    conn = _connection(server)
    try:
        conn.request("POST", "/reset", body=chunks(), encode_chunked=True,
                     headers={"Content-Type": "application/json"})  # fmt: skip
        response = conn.getresponse()
        assert response.status == 413, response.read()[:200]
    finally:
        conn.close()


@pytest.mark.timeout(600, method="thread")
def test_a_websocket_message_that_is_not_an_object_keeps_the_session(server: EnvServer):
    url = "ws" + server.base_url.removeprefix("http") + "/ws"
    reset = {"type": "reset", "data": {"env_id": ENV, "seed": 5, "turn_budget": 4}}
    with connect(url, max_size=None, open_timeout=HANG_GUARD) as ws:
        ws.send(json.dumps(reset))
        first = json.loads(ws.recv(timeout=HANG_GUARD))
        assert first["type"] == "observation"
        for message in ("[1]", '"step"', "42", "null", b"\x00\xffbinary", " [ ]"):
            ws.send(message)
            answer = json.loads(ws.recv(timeout=HANG_GUARD))
            assert answer["type"] == "error" and answer["data"]["code"] == "INVALID_JSON"
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        step = json.loads(ws.recv(timeout=HANG_GUARD))  # the same session, the same episode
        assert step["type"] == "observation" and not step["data"]["done"]
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["data"]["step_count"] == 1
        ws.send(json.dumps({"type": "close"}))
    assert idle(server)


@pytest.mark.timeout(600, method="thread")
def test_hostile_commands_replay_identically_under_one_seed(server: EnvServer):
    commands = ["lo\x00ok", "\ud800 go north", "\x1b[2J", "", "   ", "go  north\ngo east",
                "x" * 4096, "look"]  # fmt: skip

    def play() -> list[tuple]:
        with TextGameEnv(base_url=server.base_url).sync() as env:
            out = [env.reset(env_id=ENV, seed=11, turn_budget=20, reveal="NEVER").observation]
            out += [env.step(command).observation for command in commands]
        return [(o.text, o.reward, o.terminated, o.truncated, o.turns_left, o.info) for o in out]

    first, second = play(), play()
    assert first == second
    assert all(turns_left is None for *_, turns_left, _ in first)  # "NEVER" hides the budget
    assert idle(server)


# -- slow and idle clients -------------------------------------------------------------


def _closed_by_server(sock: socket.socket) -> bool:
    """Wait (at most `HANG_GUARD`) for the server to close ``sock``: True when it did."""
    sock.settimeout(HANG_GUARD)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _trickle(
    server: EnvServer, start: bytes = b"GET /health HTTP/1.1\r\nHost: x\r\n"
) -> socket.socket:
    url = urlsplit(server.base_url)
    sock = socket.create_connection((url.hostname, url.port), timeout=HANG_GUARD)
    # (and never the blank line that ends the headers; on a machine slow enough the deadline
    # may pass before this send, and the server's close is what the callers wait for anyway)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(start)
    return sock


@pytest.mark.timeout(600, method="thread")
def test_a_client_that_never_finishes_its_headers_is_dropped_and_connections_are_capped(
    tmp_path,
):
    """uvicorn has no deadline for a request's headers: a client that sent half of them held
    its socket for good, and enough such clients ran the server out of file descriptors (no
    one else was served; its log grew by hundreds of MB of EMFILE tracebacks)."""
    with EnvServer(log_path=tmp_path / "log", header_timeout=1.0, max_connections=3) as server:
        ws_url = server.base_url.replace("http", "ws", 1) + "/ws"
        # A WebSocket session opened first: its upgrade disarms its deadline, which would
        # otherwise expire before those of the connections made after it.
        with connect(ws_url, open_timeout=HANG_GUARD) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 1}}))
            assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
            held = [_trickle(server) for _ in range(3)]
            extra = _trickle(server)  # (past the cap: closed at once, not held)
            assert _closed_by_server(extra)
            assert all(_closed_by_server(sock) for sock in held)  # (at the header deadline)
            ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
            assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        for sock in [*held, extra]:
            sock.close()
        silent = _trickle(server, b"")  # (connected, nothing sent)
        assert _closed_by_server(silent)
        silent.close()
        status, _ = _post(server, "/reset", json.dumps({"env_id": ENV, "seed": 1}).encode())
        assert status == 200  # it kept serving


@pytest.mark.parametrize("seed", [True, "1", "hostile-seed", 1.0, -1, 2**70, [1]])
def test_an_http_reset_takes_only_an_int_seed_as_a_websocket_reset_does(server, seed):
    """OpenEnv's request model turned ``true``, ``"1"`` and ``1.0`` into seed 1."""
    status, answer = _post(server, "/reset", json.dumps({"env_id": ENV, "seed": seed}).encode())
    assert status == 422, answer
    (error,) = answer["detail"]
    assert error["loc"] == ["body", "seed"] and error["msg"].startswith("Expect `seed` to be an")
    assert "hostile" not in error["msg"] and str(2**70) not in error["msg"]  # (not the input)


def _ws_url(server: EnvServer) -> str:
    return "ws" + server.base_url.removeprefix("http") + "/ws"


def test_websocket_errors_never_repeat_the_input(server: EnvServer):
    """OpenEnv's validation errors carried each failing value whole, and an unknown message
    type was quoted in full: 900 KB of input came back in the error."""
    big = "S" * 900_000
    messages = [
        {"type": big},
        {"type": "reset", "data": big},
        {"type": "step", "data": {"command": [big]}},
        {"type": "step", "data": {"command": "look", "x": big}},
        {"type": "reset", "data": {"env_id": ENV, big: 1}},
        {"type": "reset", "data": {"env_id": ENV, "reveal": "final=" + big}},
    ]
    with connect(_ws_url(server), max_size=None, open_timeout=HANG_GUARD) as ws:
        for message in messages:
            ws.send(json.dumps(message))
            answer = ws.recv(timeout=HANG_GUARD)
            assert json.loads(answer)["type"] == "error" and len(answer) < 2_000, answer[:300]
        ws.send(json.dumps({"type": "close"}))
    assert idle(server)


@pytest.mark.parametrize(
    "message",
    ['{"type": "step", "data": {"command": ' + "[" * 100_000 + "]" * 100_000 + "}}",
     '{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}"],
    ids=["nested-too-deep", "5000-digit-seed"],
)  # fmt: skip
def test_json_openenv_cannot_read_is_an_error_that_keeps_the_session(server, message):
    """OpenEnv caught only malformed JSON: a message nested 100k deep (RecursionError) or an
    int of 5,000 digits (ValueError) ended the session, and its episode with it."""
    with connect(_ws_url(server), max_size=None, open_timeout=HANG_GUARD) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 5}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(message)
        answer = json.loads(ws.recv(timeout=HANG_GUARD))
        assert answer["type"] == "error" and answer["data"]["code"] == "INVALID_JSON"
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "close"}))
    assert idle(server)


@pytest.mark.parametrize(
    "message",
    ['{"type": "step", "data": {"command": "look", "x": "\\ud800"}}',
     '{"type": "step", "data": {"command": ["\\ud800"]}}',
     '{"type": "step", "data": {"command": "look", "\\ud800": 1}}',
     '{"type": "state", "\\ud800": 1}'],
    ids=["value", "list", "data-key", "state-key"],
)  # fmt: skip
def test_a_lone_surrogate_in_a_message_is_an_error_that_keeps_the_session(server, message):
    """An error that quoted a lone surrogate (JSON's "\\ud800") could not be sent: OpenEnv
    answered SESSION_ERROR and closed the socket, and the episode was lost."""
    with connect(_ws_url(server), max_size=None, open_timeout=HANG_GUARD) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 0}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(message)
        answer = json.loads(ws.recv(timeout=HANG_GUARD))
        assert answer["type"] in ("error", "state", "observation"), answer
        assert answer["type"] != "error" or answer["data"]["code"] != "SESSION_ERROR", answer
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "close"}))
    assert idle(server)


def test_a_websocket_reset_with_an_episode_id_no_answer_can_carry_is_refused(server):
    """Over the WebSocket every lone surrogate was read as "?" before the env saw it: a reset
    with episode_id "\\ud800" started an episode named "?", as did one with "\\ud801"."""
    reset = {"type": "reset", "data": {"env_id": ENV, "seed": 1, "episode_id": "\ud800"}}
    with connect(_ws_url(server), max_size=None, open_timeout=HANG_GUARD) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 3}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps(reset))  # (JSON's "\\ud800")
        answer = json.loads(ws.recv(timeout=HANG_GUARD))
        assert answer["type"] == "error", answer
        assert "Expect `episode_id` to be text UTF-8 can carry" in answer["data"]["message"]
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        step = json.loads(ws.recv(timeout=HANG_GUARD))
        assert step["type"] == "error" and "reset" in step["data"]["message"]  # no episode
        ws.send(json.dumps({**reset, "data": {**reset["data"], "episode_id": "run-1"}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"command": "look\ud800"}}))  # (read "?")
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "close"}))
    assert idle(server)


@pytest.mark.parametrize("name", ["self", "func", "session_id"])
def test_a_reset_argument_named_as_openenvs_own_is_refused_and_ends_the_episode(server, name):
    """A reset with `self`, `func` or `session_id` failed in OpenEnv's dispatch before the env
    ran: over a WebSocket the next step played on the previous episode, over HTTP a 500."""
    with connect(_ws_url(server), max_size=None, open_timeout=HANG_GUARD) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 3, "turn_budget": 4}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 3, name: 1}}))
        answer = json.loads(ws.recv(timeout=HANG_GUARD))
        assert (
            answer["type"] == "error" and "Unexpected reset argument" in answer["data"]["message"]
        )
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        step = json.loads(ws.recv(timeout=HANG_GUARD))
        assert step["type"] == "error" and "reset" in step["data"]["message"]  # no episode
        ws.send(json.dumps({"type": "close"}))
    status, body = _post(server, "/reset", json.dumps({"env_id": ENV, name: 1}).encode())
    assert status == 422 and "Unexpected reset argument" in json.dumps(body)
    assert idle(server)


@pytest.mark.parametrize("name", ["self", "func", "session_id", "note"])
def test_an_http_step_argument_that_is_not_a_steps_is_a_422_naming_it(server, name):
    """OpenEnv passes an HTTP /step's extra fields on as keywords: `self` and `func` failed in
    its own dispatch ("got multiple values for argument 'func'"), a 500 and a traceback."""
    body = json.dumps({"action": {"command": "look"}, name: 1}).encode()
    status, answer = _post(server, "/step", body)
    assert status == 422, answer
    assert f"Unexpected step argument(s) '{name}'" in json.dumps(answer)
    status, answer = _post(server, "/step", b'{"action": {"command": "look"}, "timeout_s": 5}')
    assert status == 422 and "plain HTTP /step is stateless" in answer["detail"]  # as before
    status, answer = _post(server, "/step", b'{"action": ')  # FastAPI's own answer
    assert status == 422 and answer["detail"][0]["type"] == "json_invalid"


@pytest.mark.parametrize(
    "refused",
    [
        {"data": {"env_id": ENV, "seed": 3}, "extra": 1},
        {"data": {"env_id": ENV, "seed": 3}, "metadata": {}},
        {"data": [1]},
        {"data": "x"},
        {"data": None},
    ],
    ids=["extra-key", "metadata-key", "list-data", "str-data", "null-data"],
)
def test_a_reset_openenv_would_refuse_unread_ends_the_episode_too(server, refused):
    """A reset that failed OpenEnv's own message validation (data that is not an object, a
    key beside type and data) never reached the env: the next step played on the previous
    episode, and its state still said so."""
    with connect(_ws_url(server), max_size=None, open_timeout=HANG_GUARD) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 3, "turn_budget": 4}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "reset", **refused}))
        answer = json.loads(ws.recv(timeout=HANG_GUARD))
        assert answer["type"] == "error" and "reset argument" in answer["data"]["message"]
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        step = json.loads(ws.recv(timeout=HANG_GUARD))
        assert step["type"] == "error" and "reset" in step["data"]["message"]  # no episode
        ws.send(json.dumps({"type": "close"}))
    assert idle(server)


def test_an_http_reset_body_nested_too_deep_is_a_400(server: EnvServer):
    """json.loads raised RecursionError in the seed check: a 500 and a traceback in the log."""
    body = b'{"seed": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, answer = _post(server, "/reset", body)
    assert status == 400 and "nested too deeply" in json.dumps(answer)


@pytest.mark.timeout(600, method="thread")
def test_a_client_that_trickles_its_body_is_dropped_at_the_deadline(tmp_path):
    """The deadline held only a request's headers: clients that sent theirs whole, then a
    body byte every 2 s, held their sockets for good, and enough of them locked every
    HTTP and WebSocket client out."""
    with EnvServer(log_path=tmp_path / "log", header_timeout=1.0, max_connections=3) as server:
        started = (b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 1000\r\n\r\n{")  # fmt: skip
        held = [_trickle(server, started) for _ in range(3)]
        assert all(_closed_by_server(sock) for sock in held)  # (at the deadline)
        for sock in held:
            sock.close()
        status, _ = _post(server, "/reset", json.dumps({"env_id": ENV, "seed": 1}).encode())
        assert status == 200  # it kept serving


def test_openenvs_mcp_messages_are_not_served_and_never_echo_the_input(server: EnvServer):
    """``/ws`` still answered OpenEnv's ``mcp`` messages (the /mcp routes were removed), its
    errors quoting the whole input: 500 KB back for a 500 KB method name."""
    big = "Z" * 500_000
    messages = [
        {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": big}},
        {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 2, "method": "openenv/session/create"}},
    ]
    with connect(_ws_url(server), max_size=None, open_timeout=HANG_GUARD) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 5}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        for message in messages:
            ws.send(json.dumps(message))
            answer = ws.recv(timeout=HANG_GUARD)
            assert json.loads(answer)["data"]["code"] == "INVALID_JSON" and len(answer) < 2_000
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "close"}))
    assert idle(server)


@pytest.mark.timeout(600, method="thread")
def test_an_idle_session_is_closed_and_its_slot_freed(tmp_path):
    """``--session-timeout`` freed an idle session's slot and env but left its socket open:
    the client lost its episode to a misleading error, then played on outside
    ``--max-sessions`` (two sessions at once with a cap of 1)."""
    from websockets.exceptions import ConnectionClosed

    with EnvServer(log_path=tmp_path / "log", max_sessions=1, session_timeout=1.0) as server:
        with connect(_ws_url(server), open_timeout=HANG_GUARD) as idler:
            idler.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 5}}))
            assert json.loads(idler.recv(timeout=HANG_GUARD))["type"] == "observation"
            with pytest.raises(ConnectionClosed) as closed:  # (the server closes it, idle)
                idler.recv(timeout=HANG_GUARD)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert idle(server)
        with connect(_ws_url(server), open_timeout=HANG_GUARD) as other:  # (the slot is free)
            other.send(json.dumps({"type": "reset", "data": {"env_id": ENV, "seed": 6}}))
            assert json.loads(other.recv(timeout=HANG_GUARD))["type"] == "observation"
            other.send(json.dumps({"type": "close"}))
        assert idle(server)
    assert "Traceback" not in (tmp_path / "log").read_text()
