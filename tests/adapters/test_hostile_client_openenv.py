"""Hostile conditions at the client end of the OpenEnv door (`TextGameEnv`, `GymSession`): a
server that is not there or misbehaves, and a caller that sends what is not a command. Each is
a clear error that never shows the URL's credentials, never a crash deep in a library, never
an answer read as another request's, and a session that is either kept or visibly dropped.

The real server (`EnvServer`) serves every case it can produce; a server that breaks OpenEnv's
protocol cannot be made from it, so those cases use a bare WebSocket server that answers as told.
"""

from __future__ import annotations

import gc
import json
import logging
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pytest
from _faults import wait_until
from _openenv import idle, module_server

pytestmark = pytest.mark.llmrl
pytest.importorskip("openenv")

from websockets.sync.server import serve  # noqa: E402

from turnbudget.adapters.openenv import (  # noqa: E402
    MAX_COMMAND_CHARS,
    MAX_MESSAGE_BYTES,
    EnvServer,
    GymSession,
    TextGameAction,
    TextGameEnv,
)

ENV = "turnbudget/Maze-Easy-v0"
SECRET = "hunter2-secret"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvServer]:
    yield from module_server(tmp_path_factory, "openenv-client", 2)


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback port bound but not listening: every connection is refused, and no other
    process can take the port while the test runs."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://player:{SECRET}@127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def _everything_said(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)) + repr(error)


# -- a server that is not there, a URL that is not one ------------------------------------


@pytest.mark.parametrize(
    "userinfo", [f"alice:pa ss{SECRET}", f"al ice:{SECRET}", f"alice:x@{SECRET}"],
    ids=["space-in-password", "space-in-user", "at-in-password"],
)  # fmt: skip
def test_credentials_with_spaces_or_ats_are_blanked_whole(userinfo):
    """The blanking stopped at a space: `ws://alice:pa ss...@` showed in the repr and in
    the ConnectionError; an `@` in the password left its end showing."""
    client = TextGameEnv(base_url=f"http://{userinfo}@127.0.0.1:1")
    assert SECRET not in repr(client) and "alice" not in repr(client)
    with pytest.raises(ValueError) as info:
        TextGameEnv(base_url=f"http://alice:pa/{SECRET}@127.0.0.1:1")  # (no host: refused)
    assert SECRET not in _everything_said(info.value)


def test_a_server_that_is_not_running_is_a_clear_error_without_credentials(refused_url, caplog):
    caplog.set_level(logging.DEBUG)
    client = TextGameEnv(base_url=refused_url)
    assert SECRET not in repr(client)
    env = client.sync()
    with pytest.raises(ConnectionError, match=r"Cannot open a session at ws://\*\*\*@127") as info:
        env.reset(env_id=ENV, seed=0)
    env.close()
    with pytest.raises(ConnectionError, match="Cannot open a session") as gym_info:
        GymSession(refused_url, env_id=ENV)
    for error in (info.value, gym_info.value):
        assert SECRET not in _everything_said(error) and "player" not in str(error)
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    "base_url",
    [
        None,
        5,
        "",
        "127.0.0.1:8000",
        "ftp://127.0.0.1:8000",
        "http://",
        "http://:80",
        "http://host:port",
        f"file://user:{SECRET}@/etc",
    ],
)
def test_a_base_url_that_is_not_a_server_url_is_refused_before_connecting(base_url):
    for make in (lambda: TextGameEnv(base_url=base_url), lambda: GymSession(base_url)):
        with pytest.raises(ValueError, match="Expect `base_url` to be an http://") as info:
            make()
        assert SECRET not in _everything_said(info.value)


def test_a_token_in_the_url_s_query_is_never_shown(refused_url, caplog):
    """Only the user info was blanked: a ``?token=`` showed in the repr, in every error, and
    in the message refusing a URL that is not a server's."""
    caplog.set_level(logging.DEBUG)
    url = refused_url.replace(f"player:{SECRET}@", "") + f"/?token={SECRET}&v=2"
    client = TextGameEnv(base_url=url)
    assert SECRET not in repr(client) and "v=2" in repr(client)
    env = client.sync()
    with pytest.raises(ConnectionError, match="Cannot open a session") as info:
        env.reset(env_id=ENV, seed=0)
    env.close()
    with pytest.raises(ValueError, match="Expect `base_url`") as refused:
        TextGameEnv(base_url=f"ftp://127.0.0.1/?api_key={SECRET}")
    for error in (info.value, refused.value):
        assert SECRET not in _everything_said(error)
    assert SECRET not in caplog.text


@pytest.mark.parametrize("spelling", ["HTTP://{}", "Ws://{}", "http://{}/?v=2", "http://{}/#top"])
def test_a_base_url_in_capitals_or_with_a_query_or_fragment_reaches_the_server(server, spelling):
    """OpenEnv turned only a lower-case ``http://`` into ``ws://`` (``HTTP://h`` became
    ``ws://HTTP://h``, no such host), and appended ``/ws`` after the query or fragment (the
    server answered 403): each such URL, which `TextGameEnv` accepts, failed to connect."""
    url = spelling.format(server.base_url[len("http://") :])
    with TextGameEnv(base_url=url).sync() as env:
        assert env.reset(env_id=ENV, seed=0).observation.env_id == ENV
    assert idle(server)


@pytest.mark.parametrize(
    ("option", "value"),
    [("message_timeout_s", "60"), ("message_timeout_s", -1), ("message_timeout_s", float("nan")),
     ("connect_timeout_s", 0), ("connect_timeout_s", "x"), ("max_message_size_mb", 0),
     ("max_message_size_mb", float("inf")), ("max_message_size_mb", "8"),
     ("max_message_size_mb", None),
     # (under a byte refused every answer; past a C ssize_t each was an OverflowError inside
     # websockets, the session closed as an "internal error")
     ("max_message_size_mb", 1e-9), ("max_message_size_mb", 1e300)],
)  # fmt: skip
def test_client_options_that_are_no_positive_number_are_refused_by_name(option, value):
    # (OpenEnv took them as they came: a str failed inside each call, inf or NaN as the size
    # was an OverflowError or ValueError naming nothing, and 0 refused every answer)
    with pytest.raises(ValueError, match=f"Expect `{option}` to be a positive number"):
        TextGameEnv(base_url="http://127.0.0.1:9", **{option: value})


# -- what a caller sends ------------------------------------------------------------------


@pytest.mark.parametrize("action", [5, None, {"command": "look"}, b"look", ["look"]])
def test_a_step_that_is_not_a_command_is_a_clear_error_and_keeps_the_episode(server, action):
    with TextGameEnv(base_url=server.base_url).sync() as env:
        env.reset(env_id=ENV, seed=0, turn_budget=2, reveal="always")
        with pytest.raises(TypeError, match="Expect a command str or a TextGameAction"):
            env.step(action)
        assert env.step(TextGameAction(command="look")).observation.turns_left == 1
    assert idle(server)


def test_a_command_too_long_to_send_spends_no_turn_and_keeps_the_episode(server):
    with TextGameEnv(base_url=server.base_url).sync() as env:
        env.reset(env_id=ENV, seed=0, turn_budget=2, reveal="always")
        with pytest.raises(RuntimeError, match="no turn was spent"):  # the server's refusal
            env.step("x" * (MAX_COMMAND_CHARS + 1))
        with pytest.raises(ValueError, match="no turn was spent"):  # over a message: not sent
            env.step("x" * MAX_MESSAGE_BYTES)
        assert env.step("look").observation.turns_left == 1
    assert idle(server)


def test_numpy_integers_reset_as_ints_and_other_non_json_is_a_clear_error(server):
    with TextGameEnv(base_url=server.base_url).sync() as env:
        plain = env.reset(env_id=ENV, seed=3, turn_budget=4).observation
        numpy = env.reset(env_id=ENV, seed=np.int64(3), turn_budget=np.int32(4)).observation
        assert (numpy.text, numpy.seed) == (plain.text, 3)
        with pytest.raises(TypeError, match="Expect reset argument `budget_mix` to be JSON"):
            env.reset(env_id=ENV, seed=3, budget_mix=object())
        assert env.step("look").observation.text  # the episode of the last good reset goes on
    assert idle(server)


def test_a_reset_argument_nested_past_the_interpreter_is_a_clear_error():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    # (json.dumps's RecursionError escaped; refused before anything is sent or connected)
    with pytest.raises(TypeError, match="Expect reset argument `budget_mix` to be JSON"):
        GymSession("http://127.0.0.1:9", budget_mix=deep)


def test_a_closed_client_refuses_calls_instead_of_opening_a_session(server):
    env = TextGameEnv(base_url=server.base_url).sync()
    env.reset(env_id=ENV, seed=0)
    env.close()
    assert idle(server)
    for call in (lambda: env.reset(env_id=ENV, seed=0), lambda: env.step("look")):
        with pytest.raises(RuntimeError, match="is closed"):
            call()
    assert server.sessions().active_sessions == 0
    env.connect()  # an explicit connect opens a new session
    assert env.reset(env_id=ENV, seed=0).observation.text
    env.close()

    session = GymSession(server.base_url, env_id=ENV, turn_budget=np.int64(3))
    session.reset(seed=0)
    session.close()
    session.close()  # twice is fine
    assert idle(server)
    for call in (lambda: session.reset(seed=0), lambda: session.step("look")):
        with pytest.raises(RuntimeError, match="GymSession is closed"):
            call()
    assert server.sessions().active_sessions == 0


def test_a_gym_session_closes_at_the_end_of_a_with_block(server):
    """A Gymnasium env is a context manager: ``with GymSession(url) as env`` was a TypeError."""
    with GymSession(server.base_url, env_id=ENV, turn_budget=3) as session:
        assert session.reset(seed=0)[0]
    assert idle(server)
    with pytest.raises(RuntimeError, match="GymSession is closed"):
        session.step("look")


def _gym_session(url: str, seed: int) -> Any:
    session = GymSession(url, env_id=ENV, turn_budget=3)
    session.reset(seed=seed)
    return session


def _sync_client(url: str, seed: int) -> Any:
    client = TextGameEnv(base_url=url).sync()
    assert client.connect() is client  # (kept alone, OpenEnv's own was collected under it)
    client.reset(env_id=ENV, seed=seed)
    return client


@pytest.mark.timeout(300, method="thread")
@pytest.mark.parametrize("open_one", [_gym_session, _sync_client], ids=["gym-session", "sync"])
def test_a_client_dropped_unclosed_frees_its_server_session(server, open_one):
    """One dropped without close() held its session, and its client's thread, until the
    process ended (a loop of them locked every client out at --max-sessions): OpenEnv's sync
    client runs on a thread of its own, which keeps it alive."""
    threads = threading.active_count()
    for seed in range(3):  # more than the server's sessions
        client = open_one(server.base_url, seed)
        del client
        gc.collect()
        assert idle(server)
    # (its client's loop thread is joined with a 5 s bound: on a busy machine it may end later)
    assert wait_until(lambda: threading.active_count() <= threads)


@pytest.mark.timeout(300, method="thread")
def test_a_refusal_that_arrives_before_the_first_call_is_the_server_s_error(server):
    """At capacity the server refuses a session with an error right after the handshake. When
    it had arrived before the first call, that call took it for a second answer to an earlier
    request: a ConnectionError ("answered a request more than once"), where the guide promises
    the RuntimeError naming CAPACITY_REACHED that a trainer catches to retry."""
    from turnbudget.adapters.openenv import _unasked

    with (
        TextGameEnv(base_url=server.base_url).sync() as first,
        TextGameEnv(base_url=server.base_url).sync() as second,
    ):
        first.reset(env_id=ENV, seed=0)
        second.reset(env_id=ENV, seed=1)
        for _ in range(2):
            late = TextGameEnv(base_url=server.base_url).sync()
            try:
                late.connect()
                assert wait_until(lambda c=late: _unasked(c.async_client._ws))  # (refusal in)
                with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                    late.reset(env_id=ENV, seed=2)
            finally:
                late.close()
    assert idle(server)


# -- a server that breaks the protocol ----------------------------------------------------


_GOOD = {"type": "observation", "data": {"observation": {"text": "fresh"}, "done": False}}


class Close(NamedTuple):
    """A frame of `BadServer`'s answers: close the connection with this reason."""

    reason: str


class BadServer:
    """A WebSocket server on a loopback port: each connection's n-th message (from 1) is
    answered by ``answer(connection number, n)``: a list of frames to send (none: silence)."""

    def __init__(self, answer: Callable[[int, int], list[Any]]):
        self.answer, self.connections = answer, 0
        self._lock = threading.Lock()
        self._server = serve(self._handle, "127.0.0.1", 0)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.base_url = f"http://127.0.0.1:{self._server.socket.getsockname()[1]}"

    def _handle(self, ws: Any) -> None:
        with self._lock:
            self.connections += 1
            number = self.connections
        for n, _ in enumerate(ws, start=1):
            for frame in self.answer(number, n):
                if isinstance(frame, Close):
                    ws.close(1011, frame.reason)
                    return
                ws.send(frame if isinstance(frame, (str, bytes)) else json.dumps(frame))

    def __enter__(self) -> BadServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join()


@pytest.mark.parametrize(
    "frame, message",
    [
        ("<html>502 Bad Gateway</html>", "not JSON"),
        (b"\x00\xff", "not JSON"),
        # JSON nested past the parser's depth (it raised RecursionError)
        ('{"type": "observation", "data": ' + "[" * 100_000 + "]" * 100_000 + "}", "not JSON"),
        ([1, 2], "not an OpenEnv message"),
        ({"type": "observation"}, "with data None"),
        ({"type": "state", "data": {}}, "'state' answer"),
        ({"type": "observation", "data": {"observation": "text"}}, "does not validate"),
        (
            {"type": "observation", "data": {"observation": {"text": 5, "oracle": ["go"]}}},
            "does not validate",
        ),
    ],
)
def test_an_answer_that_is_not_openenv_s_drops_the_session_with_a_clear_error(frame, message):
    def answer(connection: int, n: int) -> list[Any]:
        return [frame] if connection == 1 else [_GOOD]

    with BadServer(answer) as bad, TextGameEnv(base_url=bad.base_url).sync() as env:
        with pytest.raises(ConnectionError, match=message) as info:
            env.reset(seed=0)
        assert "the next call opens a new one" in str(info.value)
        assert "oracle" not in str(info.value) or "extra_forbidden" in str(info.value)
        assert env.reset(seed=0).observation.text == "fresh"  # a new connection, a clean answer
        assert bad.connections == 2


_OBSERVED = '{"type": "observation", "data": {"observation": {"text": "x"}, %s}}'


@pytest.mark.parametrize(
    "frame, message",
    [
        (_OBSERVED % '"reward": NaN', "a reward that is not a finite number: nan"),
        (_OBSERVED % '"reward": Infinity', "a reward that is not a finite number: inf"),
        (_OBSERVED % '"reward": -Infinity', "a reward that is not a finite number: -inf"),
        (_OBSERVED % '"reward": "1"', "does not validate.*reward"),
        (_OBSERVED % '"done": "yes"', "does not validate.*done"),
        ('{"type": "observation", "data": {"reward": 1.0, "done": true}}', "not an object: None"),
        (
            '{"type": "observation", "data": {"observation": {"seed": "7"}}}',
            "does not validate.*seed",
        ),
    ],
)
def test_an_answer_s_nan_reward_or_loose_types_are_refused_never_read_as_numbers(frame, message):
    """JSON's NaN and Infinity parsed as the reward went on to the trainer as they came, a
    string became a reward of True or a done episode, and an answer without an observation
    was read as an empty one (text ""): each drops the session with a clear error now."""

    def answer(connection: int, n: int) -> list[Any]:
        return [frame] if connection == 1 else [_GOOD]

    with BadServer(answer) as bad, TextGameEnv(base_url=bad.base_url).sync() as env:
        with pytest.raises(ConnectionError, match=message) as info:
            env.reset(seed=0)
        assert f"The server at ws://{bad.base_url[len('http://') :]}/ws sent" in str(info.value)
        assert env.reset(seed=0).observation.text == "fresh"


def test_a_state_with_loose_types_is_refused():
    """A state's step count sent as a string was read as an int."""
    state = {"type": "state", "data": {"step_count": "3"}}
    refused = pytest.raises(ConnectionError, match=r"a state that does not validate.*step_count")
    with (
        BadServer(lambda c, n: [state]) as bad,
        TextGameEnv(base_url=bad.base_url).sync() as env,
        refused,
    ):
        env.state()


def test_a_server_that_closes_the_connection_instead_of_answering_is_named():
    """The error said "The server closed this session", not which server."""

    def answer(connection: int, n: int) -> list[Any]:
        raise RuntimeError("the handler fails: the server closes the connection")

    with BadServer(answer) as bad, TextGameEnv(base_url=bad.base_url).sync() as env:
        with pytest.raises(ConnectionError, match=r"closed this session") as info:
            env.reset(seed=0)
        assert f"The server at ws://{bad.base_url[len('http://') :]}/ws closed" in str(info.value)


def test_an_answer_that_comes_too_late_is_never_read_as_the_next_one():
    def answer(connection: int, n: int) -> list[Any]:
        if connection == 1:  # silent on the first request, then both answers at once
            stale = {**_GOOD, "data": {**_GOOD["data"], "observation": {"text": "stale"}}}
            return [] if n == 1 else [stale, _GOOD]
        return [_GOOD]

    with BadServer(answer) as bad:
        with TextGameEnv(base_url=bad.base_url, message_timeout_s=0.2).sync() as env:
            with pytest.raises(TimeoutError, match=r"did not answer a reset within 0\.2 s"):
                env.reset(seed=0)
            assert env.step("look").observation.text == "fresh"
        assert bad.connections == 2


def test_a_second_answer_to_one_request_is_never_read_as_the_next_call_s():
    """A server that answered a request twice had its second answer read as the next call's
    (OpenEnv's messages carry no request id): the reset's stale observation came back as the
    step's. An answer waiting unread drops the session now, at the call it came with or at
    the next one."""
    stale = {**_GOOD, "data": {**_GOOD["data"], "observation": {"text": "stale"}}}

    def answer(connection: int, n: int) -> list[Any]:
        return [_GOOD, stale] if (connection, n) == (1, 1) else [_GOOD]

    twice = "answered a request more than once"
    with BadServer(answer) as bad, TextGameEnv(base_url=bad.base_url).sync() as env:
        try:
            first = env.reset(seed=0)
        except ConnectionError as error:  # (the second answer came with the first)
            assert twice in str(error)
        else:
            assert first.observation.text == "fresh"
            # (until the second answer has arrived: websockets queues it unread)
            wait_until(lambda: len(env._async._ws.recv_messages.frames) > 0)
            with pytest.raises(ConnectionError, match=twice):
                env.step("look")
        assert env.reset(seed=0).observation.text == "fresh"  # a new session, a clean answer
        assert bad.connections == 2


def test_an_error_whose_data_is_not_an_object_is_still_a_server_error():
    error = {"type": "error", "data": "boom"}
    with BadServer(lambda c, n: [error]) as bad, TextGameEnv(base_url=bad.base_url).sync() as env:
        refused = pytest.raises(RuntimeError, match=r"Server error: 'boom' \(code: UNKNOWN\)")
        with refused:
            env.reset(seed=0)


def test_a_server_error_that_echoes_the_credentials_shows_neither_them_nor_all_of_it():
    """The client sends the URL's ``user:password`` as basic auth, and a server's error text
    was raised as it came: a server that echoed them put them in the exception."""
    import base64

    pair = base64.b64encode(f"player:{SECRET}".encode()).decode()
    echo = f"user 'player:{SECRET}' not allowed (Basic {pair}) " + "x" * 100_000
    error = {"type": "error", "data": {"message": echo, "code": f"NO_{SECRET}"}}
    refused = pytest.raises(RuntimeError, match=r"Server error: user '\*\*\*' not allowed")
    with BadServer(lambda c, n: [error]) as bad:
        url = bad.base_url.replace("http://", f"http://player:{SECRET}@")
        with TextGameEnv(base_url=url).sync() as env, refused as info:
            env.reset(seed=0)
    said = _everything_said(info.value)
    assert SECRET not in said and pair not in said
    assert len(str(info.value)) < 1_000  # (cut: 100 KB of it were raised)


@pytest.mark.parametrize(
    "frame",
    [
        {"type": ["x " + SECRET], "data": {}},  # not an OpenEnv message
        {"type": "state", "data": {"note": SECRET}},  # a state answer to a reset
        {"type": "observation", "data": {"observation": "pw " + SECRET}},  # no observation
        Close("boom " + SECRET),  # a close whose reason echoes it
    ],
    ids=["not-a-message", "wrong-answer", "bad-observation", "close-reason"],
)
def test_an_answer_that_drops_the_session_never_shows_the_echoed_credentials(frame):
    """The errors of answers that drop the session quoted the server as it came: one that
    echoed the URL's password put it in the ConnectionError (a server's error message was
    blanked already)."""
    with BadServer(lambda c, n: [frame]) as bad:
        url = bad.base_url.replace("http://", f"http://player:{SECRET}@")
        with TextGameEnv(base_url=url).sync() as env, pytest.raises(ConnectionError) as info:
            env.reset(seed=0)
    assert SECRET not in _everything_said(info.value), _everything_said(info.value)


def test_an_answer_far_past_what_this_server_sends_closes_the_session_unread():
    """OpenEnv's client reads answers of up to 100 MB: one of 90 MiB cost 2.3 GiB."""
    huge = json.dumps({**_GOOD, "data": {**_GOOD["data"], "pad": "x" * (9 << 20)}})
    with (
        BadServer(lambda c, n: [huge] if c == 1 else [_GOOD]) as bad,
        TextGameEnv(base_url=bad.base_url).sync() as env,
    ):
        with pytest.raises(ConnectionError, match=r"message too big"):
            env.reset(seed=0)
        assert env.reset(seed=0).observation.text == "fresh"


def test_two_calls_at_once_on_one_client_are_refused_and_hold_no_session(server):
    """Two rollouts sharing one client raced its connection: an AssertionError and
    websockets' ConcurrencyError, and connections left open that held every session of the
    server (other clients were refused at capacity)."""
    import asyncio

    async def race() -> list[Any]:
        env = TextGameEnv(base_url=server.base_url)
        try:
            await env.reset(env_id=ENV, seed=0)
            return await asyncio.gather(env.step("look"), env.step("look"), return_exceptions=True)
        finally:
            await env.close()

    results = asyncio.run(race())
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], RuntimeError), results
    assert "in a call already" in str(refused[0])
    assert idle(server)
    session = GymSession(server.base_url, env_id=ENV, turn_budget=5)
    session.reset(seed=0)  # (a new client is served)
    session.close()


def test_a_connect_beside_a_call_opens_no_second_connection(server):
    """connect() while a call connected: the second connection replaced the first, which
    stayed open and held a session of the server after close()."""
    import asyncio

    async def race() -> list[Any]:
        env = TextGameEnv(base_url=server.base_url)
        try:
            return await asyncio.gather(
                env.connect(), env.reset(env_id=ENV, seed=0), return_exceptions=True
            )
        finally:
            await env.close()

    results = asyncio.run(race())
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(refused) == 1 and "connecting already" in str(refused[0]), results
    assert idle(server)
