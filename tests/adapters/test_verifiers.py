"""The games through verifiers (its v1 API), against a fake OpenAI-compatible server whose
answers a scripted player writes (half the rollouts follow the oracle, half waste turns).

- verifiers' own view of pass@k (the reward of each rollout, grouped by verifiers'
  task key) equals the suite's Pass@(K,T), read from the episode records of the same
  rollouts.
- Every rollout of a row starts from the same first observation, and the row's T is
  the turn cap: a rollout that does not win ends truncated after exactly T turns.
- The plugin id resolves through verifiers' own loaders; bad rows and settings are
  clear errors.

Marker ``llmrl``: needs the ``verifiers`` extra (no model).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

pytestmark = pytest.mark.llmrl
pytest.importorskip("verifiers.v1")

import verifiers.v1 as vf  # noqa: E402
from _fake_openai import FakeServer, as_json, reply_body  # noqa: E402
from _scripted_player import ScriptedPlayer, oracle_plan  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from verifiers.v1.utils.loaders import default_harness_id, environment_class  # noqa: E402

from turnbudget.adapters.verifiers import (  # noqa: E402
    TASKSET_ID,
    ChatHarness,
    GameEnv,
    GameEnvConfig,
    GameTaskset,
    GameTasksetConfig,
    evaluate_rows,
    pass_at_kt,
    rewards_pass_at_k,
)

ENV = "turnbudget/Maze-Easy-v0"
N = 4


def _rows() -> list[dict[str, Any]]:
    """Three tasks, each with its own T: the oracle's plan plus 1, 2 or 3 turns."""
    return [
        {"env_id": ENV, "seed": seed, "T": len(oracle_plan(ENV, seed)) + extra}
        for seed, extra in zip((0, 1, 2), (1, 2, 3), strict=True)
    ]


def _user_texts(trace: vf.Trace) -> list[str]:
    return [node.message.content for node in trace.nodes if node.message.role == "user"]


@pytest.fixture(scope="module")
def played() -> tuple[list[dict[str, Any]], list[vf.Episode]]:
    rows = _rows()
    player = ScriptedPlayer(rows, seed=1)

    def answer(handler: Any, request: dict[str, Any]) -> tuple[int, str, bytes]:
        messages = request["messages"]
        conversation = "\n".join(str(m.get("content") or "") for m in messages)
        mine = [str(m["content"]) for m in messages if m["role"] == "assistant"]
        return as_json(reply_body(player.next_command(conversation, mine) or "look"))

    with FakeServer(answer) as server:
        episodes = evaluate_rows(rows, model="fake", base_url=server.url(), n=N)
    return rows, episodes


def test_verifiers_pass_at_k_equals_the_suites_pass_at_kt(played):
    rows, episodes = played
    assert len(episodes) == len(rows) * N
    wins = [e.traces[0].reward for e in episodes]
    assert 0 < sum(wins) < len(wins)  # the estimators see successes and failures
    budget = min(row["T"] for row in rows)
    for k in range(1, N + 1):
        ours = pass_at_kt(episodes, ks=[k], ts=[budget], n_bootstrap=0).mean[0, 0]
        assert rewards_pass_at_k(episodes, k) == pytest.approx(ours, abs=1e-12)
    grid = pass_at_kt(episodes, ks=[1, N], ts=[1, budget], n_bootstrap=0)
    assert grid.mean[:, 0].tolist() == [0.0, 0.0]  # no plan is one command long


def test_a_group_shares_its_start_and_its_rows_t_is_the_cap(played):
    rows, episodes = played
    by_task: dict[str, list[vf.Trace]] = defaultdict(list)
    for episode in episodes:
        by_task[episode.task.data.name].append(episode.traces[0])
    assert len(by_task) == len(rows)
    for row in rows:
        traces = by_task[f"{row['env_id']}|seed={row['seed']}|T={row['T']}"]
        assert len(traces) == N
        assert len({_user_texts(trace)[0] for trace in traces}) == 1
        plan = oracle_plan(row["env_id"], row["seed"])
        for trace in traces:
            outcome = trace.info["turnbudget"]["outcome"]
            record = trace.info["turnbudget"]["episode"]
            assert outcome in ("won", "truncated")
            assert trace.metrics["truncated"] == float(outcome == "truncated")
            assert trace.metrics["terminated"] == float(outcome == "won")
            turns = len(plan) if outcome == "won" else row["T"]
            assert trace.metrics["turns_used"] == turns == record["turns_used"]
            assert record["turn_budget"] == row["T"] and record["seed"] == row["seed"]
            assert len(_user_texts(trace)) == turns  # one model turn per game turn


def test_the_plugin_id_resolves_through_verifiers_loaders():
    assert environment_class(TASKSET_ID) is GameEnv
    assert default_harness_id(TASKSET_ID) == TASKSET_ID
    env = GameEnv(GameEnvConfig(taskset=GameTasksetConfig(rows=_rows()[:1])))
    assert isinstance(env.taskset, GameTaskset)
    assert isinstance(env._harnesses["agent"], ChatHarness)
    (task,) = list(env.taskset)
    assert task.data.info == _rows()[0] and task.data.prompt is None


def test_bad_rows_and_settings_are_clear_errors():
    env = GameEnv(GameEnvConfig(taskset=GameTasksetConfig(rows=[{"env_id": ENV, "seed": 0}])))
    with pytest.raises(ValueError, match="Expect a row with keys 'env_id', 'seed' and 'T'"):
        list(env.taskset)
    with pytest.raises(ValidationError, match="Expect `mode` to be one of"):
        GameEnvConfig(reveal="sometimes")
    with pytest.raises(ValidationError, match="Expect `parse` to be one of"):
        GameEnvConfig(parse="loose")
    with pytest.raises(ValueError, match="Expect `n` to be a positive int"):
        evaluate_rows(_rows(), model="fake", base_url="http://127.0.0.1:9/v1", n=0)
    # (a model that is no name failed every episode inside verifiers; a str sampling was
    # unpacked as keywords)
    with pytest.raises(ValueError, match="Expect `model` to be the model's name"):
        evaluate_rows(_rows(), model=5, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="Expect `sampling` to be a mapping"):
        evaluate_rows(_rows(), model="fake", base_url="http://127.0.0.1:9/v1", sampling="hot")
    with pytest.raises(ValueError, match=r"Expect `sampling` to be a mapping .*str keys"):
        evaluate_rows(_rows(), model="fake", base_url="http://127.0.0.1:9/v1", sampling={1: 0.7})
    # (a repeated row was two tasks of one key, which verifiers needs unique: 2n rollouts of
    # one task, where `n` asks for them)
    twice = [_rows()[0], dict(_rows()[0])]
    with pytest.raises(ValueError, match=r"Expect distinct rows .* row 1 repeating row 0"):
        evaluate_rows(twice, model="fake", base_url="http://127.0.0.1:9/v1")  # no server needed
    env = GameEnv(GameEnvConfig(taskset=GameTasksetConfig(rows=twice)))
    with pytest.raises(ValueError, match=r"Expect distinct rows .* row 1 repeating row 0"):
        list(env.taskset)
    nowhere = [{"env_id": "turnbudget/Nowhere-v0", "seed": 0, "T": 3}]
    with pytest.raises(ValueError, match="Cannot make 'turnbudget/Nowhere-v0'"):
        evaluate_rows(nowhere, model="fake", base_url="http://127.0.0.1:9/v1")  # no server needed
    # The taskset (vf-eval's path) as evaluate_rows: no rows ran "0/0 · reward —", and an
    # unknown id failed every rollout
    for rows, refused in (([], "Expect at least one row"), (nowhere, "Cannot make")):
        env = GameEnv(GameEnvConfig(taskset=GameTasksetConfig(rows=rows)))
        with pytest.raises(ValueError, match=refused):
            list(env.taskset)


def test_a_visible_budget_gives_pass_at_kt_only_at_the_budget_it_ran_under(played):
    _, episodes = played
    with pytest.raises(ValueError, match="Expect `ts` to hold at least one budget"):
        pass_at_kt(episodes, ks=[1], ts=[])
    with pytest.raises(ValueError, match="at least max\\(ts\\)=99"):
        pass_at_kt(episodes, ks=[1], ts=[99])
    row = {"env_id": ENV, "seed": 0, "T": 2}
    with FakeServer(lambda handler, request: as_json(reply_body("look"))) as server:
        shown = evaluate_rows([row], model="fake", base_url=server.url(), reveal="always")
    (trace,) = shown[0].traces
    assert "[2 turns left]" in _user_texts(trace)[0]
    assert pass_at_kt(shown, ks=[1], ts=[2], n_bootstrap=0).mean.tolist() == [[0.0]]
    with pytest.raises(ValueError, match="showed the agent its budget"):
        pass_at_kt(shown, ks=[1], ts=[1, 2])


def test_a_reply_that_calls_a_tool_is_a_turn_not_the_end_of_the_rollout():
    """A reply carrying a tool call (no text) is a spent turn, and the rollout plays on to its
    T: the next turn resent the conversation in verifiers' model dump, which its own server
    could not read (KeyError 'function'), and the rollout failed with pass@k refusing it."""
    import json

    def answer(handler, request):
        body = reply_body("look")
        if not any(m["role"] == "assistant" for m in request["messages"]):
            message = body["choices"][0]["message"]
            message["content"] = None
            message["tool_calls"] = [{
                "id": "call_0", "type": "function",
                "function": {"name": "command", "arguments": json.dumps({"command": "look"})},
            }]  # fmt: skip
            body["choices"][0]["finish_reason"] = "tool_calls"
        return as_json(body)

    with FakeServer(answer) as server:
        (episode,) = evaluate_rows([{"env_id": ENV, "seed": 0, "T": 4}], model="fake",
                                   base_url=server.url(), timeout=60)  # fmt: skip
    (trace,) = episode.traces
    assert episode.ok and not trace.errors, [e.message[:200] for e in trace.errors]
    assert trace.info["turnbudget"]["outcome"] == "truncated"
    assert trace.metrics["turns_used"] == 4
    assert rewards_pass_at_k([episode], 1) == 0.0


@pytest.mark.timeout(600, method="thread")
def test_a_model_server_that_never_answers_ends_the_rollout_at_the_timeout():
    """verifiers' model client waits for a read forever by default (and the harness's client
    600 s, twice over): a server that took the request and stalled hung the rollout."""
    import threading

    release = threading.Event()

    def stall(handler, request):
        release.wait(300)
        return as_json(reply_body("look"))

    row = {"env_id": ENV, "seed": 1, "T": 3}
    with FakeServer(stall) as server:
        try:
            (episode,) = evaluate_rows([row], model="fake", base_url=server.url(), timeout=1.0)
        finally:
            release.set()
    (trace,) = episode.traces
    assert not episode.ok and trace.info["turnbudget"]["outcome"] == "unfinished"
    assert [(e.type, e.status_code) for e in trace.errors] == [("ProviderError", 504)]
    for bad in (0, -1.0, float("nan"), float("inf"), "10"):
        with pytest.raises(ValueError, match="Expect `timeout` to be a positive number"):
            evaluate_rows([row], model="fake", base_url=server.url(), timeout=bad)


@pytest.mark.parametrize("ts", [[2.7], ["3"], [True], [float("nan")], [0], [2, 2], None, 3])
def test_pass_at_kt_checks_ts_as_estimate_grid_does(played, ts):
    """ts=[2.7] was floored to T=2 (a grid at a budget nobody asked for), "3" and True were
    budgets, and a value that is no list a bare TypeError."""
    _, episodes = played
    with pytest.raises(ValueError, match="Expect `ts` "):
        pass_at_kt(episodes, ks=[1], ts=ts, n_bootstrap=0)
    assert pass_at_kt(episodes, ks=[1], ts=(2.0,), n_bootstrap=0).ts == (2,)  # as estimate_grid


@pytest.mark.parametrize("threshold", [float("nan"), float("inf"), -float("inf"), "1", True])
def test_rewards_pass_at_k_needs_a_finite_threshold(played, threshold):
    _, episodes = played  # (nan: no reward ever reached it, pass@k 0 whatever the rollouts)
    with pytest.raises(ValueError, match="Expect `threshold` to be a finite number"):
        rewards_pass_at_k(episodes, 1, threshold=threshold)


@pytest.mark.parametrize("episodes", [None, 5, "episodes", [None], [{"ok": True}]])
def test_the_readings_need_verifiers_episodes(played, episodes):
    # (None was a bare TypeError, and an entry that is no episode an AttributeError from inside)
    _, real = played
    for bad in (episodes, [*real, *episodes] if isinstance(episodes, list) else episodes):
        with pytest.raises(ValueError, match="Expect `episodes` to "):
            rewards_pass_at_k(bad, 1)
        with pytest.raises(ValueError, match="Expect `episodes` to "):
            pass_at_kt(bad, ks=[1], ts=[1], n_bootstrap=0)


def test_a_rollout_that_failed_on_the_server_is_refused_with_its_error():
    """verifiers 0.4 records a provider's error on the trace, not on the episode: the message
    said "error: None"."""
    row = {"env_id": ENV, "seed": 1, "T": 2}
    overloaded = as_json({"error": {"message": "model overloaded"}}, status=503)
    with FakeServer(lambda handler, request: overloaded) as server:
        (episode,) = evaluate_rows([row], model="fake", base_url=server.url(), timeout=5)
    assert not episode.ok and episode.last_error is None and episode.traces[0].errors
    for score in (lambda: rewards_pass_at_k([episode], 1), lambda: pass_at_kt([episode], [1], [2])):
        with pytest.raises(
            ValueError, match=r"error: ProviderError: upstream 503: .*model overloaded"
        ):
            score()


KEY = "Zq7-turnbudget-test-key-4kT9"  # no key-like prefix: blanked as a value, not a shape


def test_the_episodes_returned_hold_no_key_a_server_echoed(monkeypatch):
    """A server that echoes the key, in an error body (a failed rollout) or in its reply
    (a rollout that ran): no copy of it in the episodes returned, their records or the errors
    raised about them (docs/guides/llm-agents.md, "Keys")."""
    monkeypatch.setenv("TURNBUDGET_TEST_KEY", KEY)
    row = {"env_id": ENV, "seed": 1, "T": 2}

    def key(handler: Any) -> str:
        return str(handler.headers.get("Authorization")).removeprefix("Bearer ")

    def refuse(handler: Any, request: dict[str, Any]) -> tuple[int, str, bytes]:
        return as_json({"error": {"message": f"Incorrect API key: {key(handler)}"}}, 401)

    def echo(handler: Any, request: dict[str, Any]) -> tuple[int, str, bytes]:
        return as_json(reply_body(f"{key(handler)} look"))

    episodes = []
    for answer in (refuse, echo):
        with FakeServer(answer) as server:
            episodes += evaluate_rows(
                [row], model="fake", base_url=server.url(), api_key_env="TURNBUDGET_TEST_KEY"
            )
    refused, echoed = episodes
    assert not refused.ok and echoed.ok  # the server did see the key, and echoed it
    assert "Incorrect API key: ***" in refused.traces[0].errors[0].message
    assert _user_texts(echoed.traces[0])  # a game played, with the echoed replies
    for episode in episodes:
        for text in (episode.model_dump_json(), repr(episode), str(episode.to_record())):
            assert KEY not in text
    with pytest.raises(ValueError, match="Incorrect API key") as caught:
        rewards_pass_at_k([refused], 1)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    "base_url",
    [
        "http://alice:pa55word@127.0.0.1:9/v1",
        "http://tok3n-only@127.0.0.1:9/v1",
        "http://127.0.0.1:9/v1?api-key=pa55word",
    ],
)
def test_a_base_url_with_credentials_is_refused_without_showing_them(base_url):
    """verifiers keeps the client config, the URL verbatim, in every trace it returns: the
    credentials would be in every episode (and a query in the middle of every request path)."""
    with pytest.raises(ValueError, match="Expect `base_url` without credentials") as caught:
        evaluate_rows(_rows()[:1], model="fake", base_url=base_url)  # no server needed
    message = str(caught.value)
    assert "'http://127.0.0.1:9/v1'" in message and "api_key_env" in message
    assert not any(secret in message for secret in ("pa55word", "alice", "tok3n"))


def test_bad_keys_and_urls_are_clear_errors():
    with pytest.raises(ValueError, match="Expect `api_key_env`"):
        evaluate_rows(_rows()[:1], model="fake", base_url="http://127.0.0.1:9/v1", api_key_env=5)
    with pytest.raises(ValueError, match="not the key; got a value that is not a variable name"):
        evaluate_rows(
            _rows()[:1], model="fake", base_url="http://127.0.0.1:9/v1", api_key_env="sk-1/2"
        )
    for bad in (None, 5):
        with pytest.raises(TypeError, match="Expect `base_url`"):
            evaluate_rows(_rows()[:1], model="fake", base_url=bad)
    with pytest.raises(ValueError, match="Expect `base_url`"):
        evaluate_rows(_rows()[:1], model="fake", base_url="127.0.0.1:9/v1")


def _cut_short(reveal: str) -> list[vf.Episode]:
    """Two rollouts of one task (T=5) that verifiers' ``max_turns`` ends after 2 turns."""
    import asyncio

    # (unversioned, as gym.make takes it: the records name the id played, and so must this)
    rows = [{"env_id": "turnbudget/Maze-Easy", "seed": 0, "T": 5}]
    with FakeServer(lambda handler, request: as_json(reply_body("look"))) as server:
        env = GameEnv(
            GameEnvConfig(
                taskset=GameTasksetConfig(rows=rows),
                agent=vf.AgentConfig(runtime=vf.SubprocessConfig(), max_turns=2),
                reveal=reveal,
            )
        )
        context = vf.ModelContext(
            client=vf.EvalClientConfig(base_url=server.url(), api_key_var="OPENAI_API_KEY"),
            model="fake",
            sampling=vf.SamplingConfig(),
        )

        async def run() -> list[vf.Episode]:
            async with env.serving():
                slots = [slot for task in env.taskset for slot in env.slots(task, 2)]
                gate = asyncio.Semaphore(2)
                return list(await asyncio.gather(*(env.run_slot(s, context, gate) for s in slots)))

        return asyncio.run(run())


def test_a_rollout_cut_by_the_agents_limits_fails_within_the_turns_it_played():
    """verifiers' ``max_turns`` ended a rollout after 2 of T=5 turns (outcome
    ``unfinished``, no episode record): `pass_at_kt` called GameEnv's own traces "not
    GameEnv's", where `rewards_pass_at_k` scored them 0. It failed within T <= 2; past
    that its success is unknown, and the refusal says why."""
    episodes = _cut_short("never")
    ours = [episode.traces[0].info["turnbudget"] for episode in episodes]
    assert [(o["outcome"], o["episode"], o["turns_used"], o["env_id"]) for o in ours] == [
        ("unfinished", None, 2, ENV)
    ] * 2
    assert rewards_pass_at_k(episodes, 1) == 0.0
    assert pass_at_kt(episodes, ks=[1, 2], ts=[1, 2], n_bootstrap=0).mean.tolist() == [
        [0.0, 0.0],
        [0.0, 0.0],
    ]
    with pytest.raises(ValueError, match=r"unfinished after 2 turns.*within T=5 is unknown"):
        pass_at_kt(episodes, ks=[1], ts=[5], n_bootstrap=0)


def test_a_cut_short_rollout_that_saw_its_budget_gives_no_t():
    """Cut short, a rollout skipped the check that a finished one gets: with the budget
    shown, a smaller T was read off it. No T is known (its own: it stopped before), and one
    refusal says so, where two sent the user from one to the other."""
    episodes = _cut_short("always")
    for ts in ([1, 2], [2], [5]):
        with pytest.raises(ValueError, match=r"showed the agent its budget .* gives no T"):
            pass_at_kt(episodes, ks=[1], ts=ts, n_bootstrap=0)


def test_evaluate_rows_runs_inside_a_running_event_loop_as_a_notebook_cell_does():
    """A notebook's cell runs in its event loop, where asyncio.run refuses to start another:
    evaluate_rows failed there with asyncio's "cannot be called from a running event loop"."""
    import asyncio

    row = {"env_id": ENV, "seed": 0, "T": 3}
    with FakeServer(lambda handler, request: as_json(reply_body("look"))) as server:

        async def cell() -> list[vf.Episode]:  # (blocking, as a notebook's call is)
            return evaluate_rows([row], model="fake", base_url=server.url(), n=2)

        episodes = asyncio.run(cell())
    assert len(episodes) == 2
    for episode in episodes:
        (trace,) = episode.traces
        assert episode.ok and not trace.errors, [e.message[:200] for e in trace.errors]
        assert trace.metrics["turns_used"] == 3


@pytest.mark.timeout(120, method="thread")
def test_an_interrupt_of_evaluate_rows_inside_a_running_event_loop_cancels_its_rollouts():
    """Ctrl-C in a notebook's cell interrupts the wait for evaluate_rows' thread: it cancels
    the rollouts there, as asyncio.run does outside a loop. It waited for every rollout to end
    (here, a server that holds the request for minutes)."""
    import asyncio
    import signal
    import threading

    release, closed = threading.Event(), threading.Event()

    def interrupt_then_hold(handler, request):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # (Ctrl-C)
        release.wait(300)
        closed.set()  # (the client gone: this answer goes nowhere)
        return as_json(reply_body("look"))

    if threading.current_thread() is not threading.main_thread():  # (signals reach only it)
        pytest.skip("Ctrl-C reaches the main thread, and this test runs in another")
    row = {"env_id": ENV, "seed": 0, "T": 3}
    loop = asyncio.new_event_loop()  # (a notebook's: no asyncio.run, whose SIGINT is its own)
    # (Ctrl-C's KeyboardInterrupt, whatever the test runner set: a worker may ignore SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    with FakeServer(interrupt_then_hold) as server:

        async def cell() -> list[vf.Episode]:
            return evaluate_rows([row], model="fake", base_url=server.url(), timeout=300)

        try:
            with pytest.raises(KeyboardInterrupt):
                loop.run_until_complete(cell())
            assert not closed.is_set()  # (the interrupt ended it while the request was held)
        finally:
            signal.signal(signal.SIGINT, previous)
            release.set()
            loop.close()
    assert server.chat_requests == 1
