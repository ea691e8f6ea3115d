"""The OpenEnv server (`turnbudget serve-env`) through the real server and client.

One server (a subprocess, `EnvServer`) for the module, at most `MAX_SESSIONS`
sessions; every test leaves no session open (`idle` waits for that). Waits are on
events (a pipe line, the server's own session count), each under a timeout mark
that only guards a bug.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _openenv import idle, module_server
from _support import HANG_GUARD, native_env_ids

pytestmark = pytest.mark.llmrl
pytest.importorskip("openenv")

import turnbudget  # noqa: E402
from turnbudget.adapters.openenv import (  # noqa: E402
    MAX_COMMAND_CHARS,
    MAX_MESSAGE_BYTES,
    EnvServer,
    GymSession,
    RequestError,
    TextGameAction,
    TextGameEnv,
    TextGameEnvironment,
)
from turnbudget.envs.core import get_oracle  # noqa: E402

MAX_SESSIONS = 4
ENV_IDS = native_env_ids()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvServer]:
    yield from module_server(tmp_path_factory, "openenv", MAX_SESSIONS)


def in_process(env_id: str, seed: int, commands: list[str], **reset: Any) -> list[tuple]:
    """(text, reward, terminated, truncated) of a reset and ``commands``, played in process."""
    env = turnbudget.make(env_id, reveal=reset.pop("reveal", None))
    text, _ = env.reset(seed=seed, options=reset or None)
    out = [(text, 0.0, False, False)]
    for command in commands:
        text, reward, terminated, truncated, _ = env.step(command)
        out.append((text, float(reward), terminated, truncated))
    return out


def served(result: Any) -> tuple:
    obs = result.observation
    return (obs.text, obs.reward, obs.terminated, obs.truncated)


def oracle_plan(env_id: str, seed: int) -> list[str]:
    """The commands of a shortest win from the seed's start, found in process."""
    env = turnbudget.make(env_id)
    env.reset(seed=seed)
    oracle, plan = get_oracle(env), []
    while True:
        plan.append(oracle.optimal_actions()[0])
        *_, terminated, truncated, info = env.step(plan[-1])
        assert not truncated, f"{env_id} seed {seed}: the oracle ran out of turns"
        if terminated:
            assert info["won"]
            return plan


def random_commands(env_id: str, seed: int, n: int) -> list[str]:
    """At most ``n`` commands a seeded random agent plays in process, until its episode ends."""
    env = turnbudget.make(env_id)
    _, info = env.reset(seed=seed)
    rng, commands = np.random.default_rng(seed), []
    for _ in range(n):
        actions = info["admissible_actions"] or ["look"]
        commands.append(actions[int(rng.integers(len(actions)))])
        *_, terminated, truncated, info = env.step(commands[-1])
        if terminated or truncated:
            break
    return commands


# -- the environment in process (no server) --------------------------------------


def test_metadata_repeats_the_flags_the_wire_keeps_in_fields():
    env = TextGameEnvironment("turnbudget/Maze-Easy-v0")
    obs = env.reset(seed=3, turn_budget=2, reveal="always")
    obs = env.step(TextGameAction(command="look"))
    obs = env.step(TextGameAction(command="look"))
    assert (obs.done, obs.terminated, obs.truncated, obs.turns_left) == (True, False, True, 0)
    assert obs.metadata == {"terminated": False, "truncated": True, "turns_left": 0, "seed": 3,
                            "env_id": "turnbudget/Maze-Easy-v0"}  # fmt: skip
    with pytest.raises(RequestError, match="No episode to step"):
        env.step(TextGameAction(command="look"))  # the episode is over
    env.close()


def test_a_refused_reset_leaves_no_episode_running():
    """... and `state` says so: it named the previous episode (its id, seed and steps)."""
    env = TextGameEnvironment("turnbudget/Maze-Easy-v0")
    env.reset(seed=3)
    env.step(TextGameAction(command="look"))
    with pytest.raises(RequestError, match="Expect `turn_budget` to be a positive int, got -1"):
        env.reset(seed=0, turn_budget=-1)
    with pytest.raises(RequestError, match="No episode to step"):
        env.step(TextGameAction(command="look"))
    state = env.state
    assert (state.episode_id, state.step_count, state.env_id, state.seed) == (None, 0, None, None)
    assert env.reset(seed=0).text == in_process("turnbudget/Maze-Easy-v0", 0, [])[0][0]
    env.close()


def test_a_session_plays_a_bounded_set_of_generated_textworld_games(tmp_path, monkeypatch):
    """A client's seeds chose which TextWorld games the server generated and kept on disk:
    every new seed, and every unseeded reset (a random 32-bit game id), added one for good.
    A session plays games 0..N-1 (the games `turnbudget.make` plays for those seeds), refuses
    a larger seed before generating anything, and draws an unseeded reset among them."""
    monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", str(tmp_path))
    env_id = "turnbudget/CoinCollector-Easy-v0"
    env = TextGameEnvironment(textworld_games=3)
    assert env.reset(env_id=env_id, seed=2).text == in_process(env_id, 2, [])[0][0]
    with pytest.raises(RequestError, match=r"Expect `seed` to be below 3 .* --textworld-games"):
        env.reset(env_id=env_id, seed=3)
    for _ in range(4):
        env.reset(env_id=env_id)
    games = {int(p.stem) for p in tmp_path.glob("*/*.z8")}
    assert games <= {0, 1, 2} and 2 in games
    assert env.reset(env_id="turnbudget/Maze-Easy-v0", seed=10**6).text  # native ids: any seed
    env.close()
    for bad in (0, -1, 2**32 + 1, 2.0, True):
        with pytest.raises(ValueError, match=r"Expect `textworld_games` to be an int in 1\.\."):
            TextGameEnvironment(textworld_games=bad)
    out = subprocess.run(
        [sys.executable, "-m", "turnbudget", "serve-env", "--textworld-games", "0", "--port", "0"],
        capture_output=True, text=True, timeout=HANG_GUARD, check=False,
    )  # fmt: skip
    assert out.returncode == 2 and "Expect `textworld_games` to be an int" in out.stderr


# -- through the server ------------------------------------------------------------


@pytest.mark.timeout(600, method="thread")
def test_two_resets_with_one_seed_give_the_same_observation(server: EnvServer):
    with TextGameEnv(base_url=server.base_url).sync() as env:
        for env_id in ENV_IDS:
            first = env.reset(env_id=env_id, seed=7)
            env.step("look")
            again = env.reset(env_id=env_id, seed=7)
            assert first.observation == again.observation, env_id
            assert first.observation.text == in_process(env_id, 7, [])[0][0], env_id
            assert (first.observation.seed, first.observation.env_id) == (7, env_id)
            assert not first.done and first.reward == 0.0
    assert idle(server)


@pytest.mark.timeout(600, method="thread")
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_replaying_the_oracle_wins_terminated_not_truncated(server: EnvServer, env_id: str):
    plan = oracle_plan(env_id, seed=11)
    with TextGameEnv(base_url=server.base_url).sync() as env:
        # T is the plan's length: the win comes on the last budgeted turn.
        env.reset(env_id=env_id, seed=11, turn_budget=len(plan), reveal="always")
        results = [env.step(command) for command in plan]
    last = results[-1].observation
    assert (last.done, last.terminated, last.truncated, last.reward) == (True, True, False, 1.0)
    assert last.info["won"] and last.turns_left == 0
    assert not any(r.done for r in results[:-1])
    assert idle(server)


@pytest.mark.timeout(600, method="thread")
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_t_idle_commands_truncate_without_terminating(server: EnvServer, env_id: str):
    budget = 5
    with TextGameEnv(base_url=server.base_url).sync() as env:
        env.reset(env_id=env_id, seed=2, turn_budget=budget)
        results = [env.step(TextGameAction(command="look")) for _ in range(budget)]
    last = results[-1].observation
    assert (last.done, last.terminated, last.truncated, last.reward) == (True, False, True, 0.0)
    assert not any(r.done for r in results[:-1])
    assert last.turns_left is None and "turns_left" not in last.info  # the budget is hidden
    assert idle(server)


@pytest.mark.timeout(600, method="thread")
def test_the_budget_shows_only_when_visible_and_never_the_oracle(server: EnvServer):
    budget_keys = {"turn_budget", "turns_used", "turns_left", "sampled_turn_budget"}
    with TextGameEnv(base_url=server.base_url).sync() as env:
        hidden = env.reset(env_id="turnbudget/KeyQuest-Easy-v0", seed=1).observation
        final = [env.reset(env_id="turnbudget/KeyQuest-Easy-v0", seed=1, reveal="final=2",
                           budget_mix="uniform:5-9").observation]  # fmt: skip
        while not final[-1].done:
            final.append(env.step("look").observation)
    assert hidden.turns_left is None and not budget_keys & hidden.info.keys()
    # "final=2": the budget shows on the last two turns only, in the text and nowhere else.
    budget = len(final) - 1
    assert 5 <= budget <= 9
    for turns_used, observation in enumerate(final):
        left = budget - turns_used
        if left <= 2:  # (the last observation too: 0 left)
            assert observation.turns_left == observation.info["turns_left"] == left
            assert observation.info["turn_budget"] == budget
        else:
            assert observation.turns_left is None, (turns_used, observation)
            assert not budget_keys & observation.info.keys(), (turns_used, observation.info)
    assert "oracle_actions" not in hidden.info and all(
        "oracle_actions" not in observation.info for observation in final
    )
    assert idle(server)


@pytest.mark.timeout(300, method="thread")
def test_the_client_s_observations_carry_the_flags_seed_and_id_in_metadata(server: EnvServer):
    with TextGameEnv(base_url=server.base_url).sync() as env:
        env.reset(env_id="turnbudget/Maze-Easy-v0", seed=3, turn_budget=1, reveal="always")
        shown = env.step("look").observation
        hidden = env.reset(env_id="turnbudget/Sokoban-Easy-v0", seed=4).observation
    assert shown.metadata == {"terminated": False, "truncated": True, "turns_left": 0, "seed": 3,
                              "env_id": "turnbudget/Maze-Easy-v0"}  # fmt: skip
    assert hidden.metadata == {"terminated": False, "truncated": False, "turns_left": None,
                               "seed": 4, "env_id": "turnbudget/Sokoban-Easy-v0"}  # fmt: skip
    assert idle(server)


async def _play(base_url: str, env_id: str, seed: int, commands: list[str]) -> list[tuple]:
    async with TextGameEnv(base_url=base_url) as env:
        out = [served(await env.reset(env_id=env_id, seed=seed))]
        for command in commands:
            out.append(served(await env.step(command)))
        return out


@pytest.mark.timeout(600, method="thread")
def test_concurrent_sessions_are_each_deterministic_and_bounded(server: EnvServer):
    jobs = [(ENV_IDS[(3 * i) % len(ENV_IDS)], 100 + i) for i in range(MAX_SESSIONS)]
    scripts = [random_commands(env_id, seed, 40) for env_id, seed in jobs]

    async def main() -> list[list[tuple]]:
        return await asyncio.gather(*(
            _play(server.base_url, env_id, seed, commands)
            for (env_id, seed), commands in zip(jobs, scripts)
        ))  # fmt: skip

    for _ in range(2):
        transcripts = asyncio.run(main())
        for (env_id, seed), commands, transcript in zip(jobs, scripts, transcripts):
            assert transcript == in_process(env_id, seed, commands), (env_id, seed)
        assert idle(server)

    # The bound: with every slot taken, one more session is refused; the others go on.
    clients = [TextGameEnv(base_url=server.base_url).sync() for _ in range(MAX_SESSIONS + 1)]
    try:
        for client in clients[:MAX_SESSIONS]:
            client.reset(env_id="turnbudget/Maze-Easy-v0", seed=0)
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            clients[-1].reset(env_id="turnbudget/Maze-Easy-v0", seed=0)
        assert server.sessions().active_sessions == MAX_SESSIONS
        assert not clients[0].step("look").done
        clients[0].close()  # a slot frees: the refused client gets it on its next call
        assert idle(server, MAX_SESSIONS - 1)
        assert not clients[-1].reset(env_id="turnbudget/Maze-Easy-v0", seed=0).done
    finally:
        for client in clients:
            client.close()
    assert idle(server)


@pytest.mark.timeout(600, method="thread")
def test_more_clients_at_once_than_the_bound_leave_no_session(server: EnvServer):
    """3x the bound connect at once: exactly the bound get a session (one start state for
    the group), the rest are refused, and once every client closes the count is back to 0."""
    assert idle(server)

    async def main() -> tuple[list[Any], int]:
        clients = [TextGameEnv(base_url=server.base_url) for _ in range(3 * MAX_SESSIONS)]
        try:
            results = await asyncio.gather(
                *(client.reset(env_id="turnbudget/KeyQuest-Easy-v0", seed=5) for client in clients),
                return_exceptions=True,
            )  # fmt: skip
            # Every admitted session is still open here: none has been released.
            active = await asyncio.to_thread(lambda: server.sessions().active_sessions)
        finally:
            await asyncio.gather(*(client.close() for client in clients))
        return results, active

    results, active = asyncio.run(main())
    admitted = [r.observation.text for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(admitted) == active == MAX_SESSIONS
    assert len(set(admitted)) == 1  # one seed, one start state
    assert len(refused) == 2 * MAX_SESSIONS
    assert all(isinstance(r, RuntimeError) and "CAPACITY_REACHED" in str(r) for r in refused)
    assert idle(server)


def test_plain_http_cannot_hold_a_session(server: EnvServer):
    """OpenEnv's HTTP ``/mcp`` would open a session per ``openenv/session/create`` that only
    an idle timeout (off by default) ends; these games have no MCP tools, so it is not served."""
    create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    for _ in range(MAX_SESSIONS + 1):
        status, _ = _http(server, "/mcp", create)
        assert status == 404
    assert server.sessions().active_sessions == 0
    with TextGameEnv(base_url=server.base_url).sync() as env:  # every slot is still free
        assert env.reset(env_id="turnbudget/Maze-Easy-v0", seed=0).observation.text
    assert idle(server)


_DROPPED_CLIENT = """
import json, sys, time
from websockets.sync.client import connect
ws = connect(sys.argv[1])
ws.send(json.dumps({"type": "reset", "data": {"env_id": "turnbudget/Maze-Easy-v0", "seed": 0}}))
assert json.loads(ws.recv())["type"] == "observation"
print("playing", flush=True)
time.sleep(3600)
"""


def _drop_a_playing_client(server: EnvServer) -> None:
    """Start a client process that resets a session, then kill it while it holds the session
    (no close frame: the process dies), once the server counts it."""
    ws_url = "ws" + server.base_url.removeprefix("http") + "/ws"
    client = subprocess.Popen([sys.executable, "-c", _DROPPED_CLIENT, ws_url],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert client.stdout is not None and client.stdout.readline() == "playing\n"
        assert server.sessions().active_sessions == 1
        client.kill()
        client.wait()
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        client.stdout.close()


@pytest.mark.timeout(300, method="thread")
def test_a_session_dropped_by_its_client_is_reclaimed(server: EnvServer):
    assert idle(server)
    _drop_a_playing_client(server)
    assert idle(server)
    with TextGameEnv(base_url=server.base_url).sync() as env:  # the server goes on serving
        assert env.reset(env_id="turnbudget/Maze-Easy-v0", seed=0).observation.text
    assert idle(server)


@pytest.mark.timeout(300, method="thread")
def test_a_message_over_the_limit_closes_only_its_session(server: EnvServer):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    ws_url = "ws" + server.base_url.removeprefix("http") + "/ws"
    with connect(ws_url, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": "turnbudget/Maze-Easy-v0"}}))
        assert json.loads(ws.recv())["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"command": "x" * MAX_MESSAGE_BYTES}}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # too big
    assert idle(server)


def _http(server: EnvServer, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(server.base_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=HANG_GUARD) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.timeout(600, method="thread")
def test_bad_input_is_a_clear_error_and_the_server_keeps_serving(server: EnvServer):
    bad = [
        ({"env_id": "turnbudget/NoSuchGame-v0"}, "Expect `env_id` to be a registered turnbudget/ id"),
        ({"env_id": "os:system"}, "Expect `env_id` to be a registered turnbudget/ id"),
        ({"env_id": None}, "got None \\(this server has no default id"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "turn_budget": 0}, "Expect `turn_budget` to be a positive int, got 0"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "turn_budget": "ten"}, "Expect `turn_budget` to be a positive int, got 'ten'"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "turn_budget": 2**40}, "Expect `turn_budget` to be at most"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "turn_budget": 5, "budget_mix": [5]}, "not both"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "budget_mix": "sometimes"}, "Cannot parse budget mix .sometimes.: expect"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "reveal": "sometimes"}, "Expect `mode` to be one of"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "seed": -1}, "Expect `seed` to be an int >= 0"),
        ({"env_id": "turnbudget/Maze-Easy-v0", "tunr_budget": 5}, "Unexpected reset argument\\(s\\) 'tunr_budget'"),
    ]  # fmt: skip
    with TextGameEnv(base_url=server.base_url).sync() as env:
        with pytest.raises(RuntimeError, match="No episode to step: call reset"):
            env.step("look")
        for kwargs, message in bad:
            with pytest.raises(RuntimeError, match=message):
                env.reset(**kwargs)
            with pytest.raises(RuntimeError, match="No episode to step"):
                env.step("look")  # a refused reset leaves no episode
        first = env.reset(env_id="turnbudget/Maze-Easy-v0", seed=4, turn_budget=3, reveal="always")
        with pytest.raises(
            RuntimeError, match=f"at most {MAX_COMMAND_CHARS} characters, got 100000"
        ):
            env.step("go north" * 12500)
        after = env.step("look").observation  # the huge command spent no turn
        assert after.turns_left == first.observation.turns_left - 1 == 2
        assert not env.step("\x00\x1b[2J;rm -rf /").done  # nonsense within the limit: a turn
    assert idle(server)
    # Plain HTTP: a reset is answered (stateless), a bad one is a 422 with the message.
    status, body = _http(server, "/reset", {"env_id": "turnbudget/Maze-Easy-v0", "seed": 4})
    assert status == 200
    assert body["observation"]["text"] == in_process("turnbudget/Maze-Easy-v0", 4, [])[0][0]
    assert body["observation"]["terminated"] is False and body["observation"]["seed"] == 4
    status, body = _http(server, "/reset", {"env_id": "turnbudget/Nope-v0"})
    assert status == 422 and "Expect `env_id` to be a registered" in body["detail"]
    status, body = _http(server, "/step", {"action": {"command": "look"}})
    assert status == 422 and "plain HTTP /step is stateless" in body["detail"]


@pytest.mark.timeout(300, method="thread")
def test_serve_env_refuses_an_unknown_default_id():
    out = subprocess.run(
        [sys.executable, "-m", "turnbudget", "serve-env", "--env", "turnbudget/Nope-v0", "--port", "0"],
        capture_output=True, text=True, timeout=HANG_GUARD, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert "serve-env: error: Expect `env_id` to be a registered turnbudget/ id" in out.stderr


@pytest.mark.timeout(600, method="thread")
def test_group_seeding_runs_on_a_served_env_and_names_what_breaks(server: EnvServer):
    """`check_group_seeding` through `GymSession`: a served game passes (the RNG checks are
    skipped, the env's RNG being in the server's process); a session that drops its seed
    fails same_start."""
    from turnbudget.utils import check_group_seeding

    game = {"env_id": "turnbudget/KeyQuest-Easy-v0", "turn_budget": 6}
    report = check_group_seeding(
        lambda: GymSession(server.base_url, **game), group_size=2, steps=3, turn_cap=6
    )
    assert report.passed, str(report)
    assert report.checks == {
        "same_start": "passed",
        "seeds_differ": "passed",
        "own_rng": "skipped",
        "leaves_global_rng": "skipped",
        "clean_reset": "passed",
        "cap_truncates": "passed",
    }

    class SeedDropped(GymSession):
        def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
            return super().reset(seed=None)

    broken = check_group_seeding(
        lambda: SeedDropped(server.base_url, **game), group_size=2, steps=3, turn_cap=6
    )
    assert broken.checks["same_start"] == "failed"
    assert "same_start" in str(broken.failures[0])
    assert idle(server)  # every session the checks opened is closed


def test_gym_session_refuses_an_unknown_reset_argument():
    with pytest.raises(TypeError, match="tunr_budget"):
        GymSession("http://127.0.0.1:1", tunr_budget=5)


def test_sessions_that_end_leave_no_traceback_in_the_server_s_log(tmp_path):
    """Every way a session ends (the client's context manager, `GymSession.close`, a client
    that drops its socket) is quiet in the log: OpenEnv's close of a socket the client had
    already closed was logged as an "Exception in ASGI application" each time. The log is
    read once the server has stopped, so it is whole."""
    log = tmp_path / "server.log"
    with EnvServer(max_sessions=2, log_path=log) as server:
        with TextGameEnv(base_url=server.base_url).sync() as env:
            env.reset(env_id="turnbudget/Maze-Easy-v0", seed=0)
            env.step(TextGameAction(command="look"))
        assert idle(server)
        session = GymSession(server.base_url, env_id="turnbudget/Maze-Easy-v0")
        session.reset(seed=1)
        session.step("look")
        session.close()
        assert idle(server)
        _drop_a_playing_client(server)
        assert idle(server)
        for seed in range(20):  # (dropped while its answer is on its way: logged 6 times in 20)
            _drop_while_answered(server, seed)
        assert idle(server)
    text = log.read_text()
    assert "Traceback" not in text and "Exception in ASGI" not in text, text[-3000:]


def _drop_while_answered(server: EnvServer, seed: int) -> None:
    """A client that asks for a step and drops its socket (no close frame) before the answer."""
    import socket

    from websockets.sync.client import connect

    with connect("ws" + server.base_url.removeprefix("http") + "/ws", open_timeout=HANG_GUARD,
                 close_timeout=0) as ws:  # fmt: skip
        ws.send(json.dumps({"type": "reset", "data": {"env_id": "turnbudget/Maze-Easy-v0",
                                                      "seed": seed}}))  # fmt: skip
        assert json.loads(ws.recv(timeout=HANG_GUARD))["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"command": "look"}}))
        ws.socket.shutdown(socket.SHUT_RDWR)  # (the client's own close then goes nowhere)


@pytest.mark.timeout(300, method="thread")
def test_ready_is_called_once_the_server_takes_ctrl_c():
    """``ready`` was called before uvicorn took SIGINT and SIGTERM: a Ctrl-C sent as soon as
    the caller saw the server up could land while asyncio built its loop (a traceback on
    stderr, once in CI under load). Here ``ready`` reads the handlers, then sends the Ctrl-C."""
    import signal

    from turnbudget.adapters.openenv import serve

    handlers: list[Any] = []

    def ready(url: str) -> None:
        handlers.extend([signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)])
        signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):  # (uvicorn raises it again once it has shut down)
        serve(port=0, ready=ready)
    assert handlers and signal.default_int_handler not in handlers


@pytest.mark.timeout(300, method="thread")
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_serve_env_stops_cleanly_on_sigterm_as_on_ctrl_c(stop):
    """uvicorn raises the signal it caught again once it has shut down: SIGTERM's default
    then ended the process by the signal (exit -15, no "stopped"), where Ctrl-C's ends it
    cleanly."""
    import signal

    server = subprocess.Popen(
        [sys.executable, "-m", "turnbudget", "serve-env", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stdout.readline().startswith("serving")
        server.send_signal(getattr(signal, stop))
        out, err = server.communicate(timeout=HANG_GUARD)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert server.returncode == 0 and out.strip() == "stopped", (server.returncode, out, err)
    assert "Traceback" not in err
