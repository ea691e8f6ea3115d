"""Sealed agents: the agent in its own process, seeing only its view of each turn.

In-process, an agent that walks its caller's frames plays the env's oracle and wins every
episode with a hidden budget (the threat, shown here); sealed, it finds nothing and plays at
its honest level. A sealed agent that plays by the rules gives the in-process records byte
for byte, on every backend and through every part of the protocol; its faults (raising,
``sys.exit``, a dead process, a hang, an unsendable reply) end only their episodes.
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import pickle
import time
from pathlib import Path
from typing import Any

import pytest
from _faults import ExitingAgent, HangingAgent, RaisingAgent, seeds_of, timeout_clear_of
from _spies import (
    AsyncNotingOracle,
    BatchNotingOracle,
    DyingOracle,
    LoadsInReady,
    NotingOracle,
    SnoopingAgent,
    UnsendableOracle,
)

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.agents.secrets import redact
from turnbudget.eval.probes.run import probe
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.eval.run.sealed import (
    SealedAgent,
    SealedAgentError,
    SealedBatchAgent,
    seal,
)

MAZE = "turnbudget/Maze-Easy-v0"
KEYQUEST = "turnbudget/KeyQuest-Easy-v0"
RUN_FILES = ("run.json", "episodes.jsonl", "steps.jsonl")


def _without_notes(episodes: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "agent"} for e in episodes]


def test_an_agent_that_walks_its_frames_cheats_in_process_and_gets_nothing_sealed():
    """The threat: in-process, the snooping agent reaches the env through its caller's frames
    and every live env through gc, and wins every episode with a hidden budget. Sealed, it
    finds no env and plays exactly as the random agent it falls back on."""
    grid = dict(ks=[1], ts=[30], n=2, tasks=4, n_bootstrap=0)  # the budget is hidden
    cheat = evaluate(MAZE, SnoopingAgent(), **grid)
    assert cheat.grid()["mean"] == [[1.0]]  # Pass@1 = 1.0: it played the oracle
    for e in cheat.episodes:
        assert e["agent"]["found"] == e["agent"]["steps"] == e["turns_used"]
        assert e["agent"]["envs"] >= e["turns_used"]  # (at least one env alive every turn)
    sealed = evaluate(MAZE, SnoopingAgent(), sealed=True, **grid)
    honest = evaluate(MAZE, RandomAgent(), **grid)
    for e in sealed.episodes:
        assert e["agent"]["found"] == 0 and e["agent"]["envs"] == 0
        assert e["agent"]["pid"] != os.getpid() * e["agent"]["steps"]
    assert _without_notes(sealed.episodes) == honest.episodes
    assert sealed.grid()["mean"] == honest.grid()["mean"] < [[1.0]]


@pytest.mark.slow  # (~14 s: probes in sealed processes; the evaluation case runs by default)
def test_a_snooping_agent_gets_nothing_in_sealed_probes():
    """Probes: the in-process snoop answers every single-step probe optimally; sealed, its
    records are the random agent's."""
    kwargs = dict(tasks=2, prefixes=[0.0, 0.5], baseline_repeats=1, n_bootstrap=0)
    cheat = probe(MAZE, SnoopingAgent(), **kwargs)
    single = [r for r in cheat.records if r["probe"] == "single" and r["role"] == "agent"]
    assert single and all(r["optimal"] for r in single)
    sealed = probe(MAZE, SnoopingAgent(), sealed=True, **kwargs)
    honest = probe(MAZE, RandomAgent(), label="snooping", **kwargs)
    assert sealed.records == honest.records


@pytest.mark.parametrize(
    "make",
    [
        lambda: NotingOracle(0.3),  # an Agent with step_note and observe
        lambda: BatchNotingOracle(0.3),  # a BatchAgent with step_notes and observe_batch
        lambda: AsyncNotingOracle(0.3),  # an AsyncAgent (in_flight, in its process)
    ],
    ids=["agent", "batch", "async"],
)
def test_a_sealed_agent_gives_the_same_records_byte_for_byte(tmp_path, make):
    grid = dict(ks=[1, 2], ts=[6, 12], n=2, tasks=3, errors=0.1, n_bootstrap=0)
    evaluate([MAZE, KEYQUEST], make(), out=tmp_path / "in", **grid)
    evaluate([MAZE, KEYQUEST], make(), out=tmp_path / "sealed", sealed=True, **grid)
    for name in RUN_FILES:
        assert filecmp.cmp(tmp_path / "in" / name, tmp_path / "sealed" / name, shallow=False)
    # Probes drive the observe hooks (the forced prefix) and the notes.
    kwargs = dict(tasks=2, prefixes=[0.0, 0.5], baseline_repeats=1, n_bootstrap=0)
    plain, sealed = probe(MAZE, make(), **kwargs), probe(MAZE, make(), sealed=True, **kwargs)
    assert sealed.records == plain.records and sealed.summary == plain.summary


def test_a_sealed_agent_gives_the_same_records_on_a_pool(tmp_path):
    grid = dict(ks=[1, 2], ts=[6, 12], n=2, tasks=3, errors=0.1, n_bootstrap=0)
    evaluate([MAZE, KEYQUEST], NotingOracle(0.3), out=tmp_path / "in", **grid)
    with seal(NotingOracle(0.3)) as agent:  # one proxy, copied into each worker
        evaluate([MAZE, KEYQUEST], agent, out=tmp_path / "pool", workers=2, **grid)
    for name in RUN_FILES:  # (the same lines; a pool writes episodes in the order they end)
        lines = [sorted((tmp_path / run / name).read_text().splitlines()) for run in ("in", "pool")]
        assert lines[0] == lines[1]
    # Each worker runs its own agent process (never the one this process started and forked).
    with seal(SnoopingAgent()) as agent:
        result = evaluate(MAZE, agent, workers=2, backend="pool", **grid)
        mine = agent._child.proc.pid
    pids = {step["agent"]["pid"] for step in result.steps}
    assert len(pids) == 2 and not pids & {mine, os.getpid()}


def test_a_sealed_team_gives_the_same_results():
    from turnbudget.eval.run.team import evaluate_team

    kwargs = dict(ks=[1], ts=[4, 30], tasks=3, n_bootstrap=0, record=True)
    team = {"operator": NotingOracle(0.2), "runner": "oracle:0.2"}
    plain = evaluate_team("vault_v0", team, **kwargs)
    sealed = evaluate_team("vault_v0", team, sealed=True, **kwargs)
    assert sealed.episodes == plain.episodes and sealed.records == plain.records


def test_the_proxy_speaks_the_protocol_and_pickles_without_its_process():
    agent = seal(NotingOracle(0.0))
    assert isinstance(agent, SealedAgent) and not hasattr(agent, "act_batch")
    assert (agent.name, repr(agent), agent.needs_oracle) == (
        "oracle-eps0",
        "OracleAgent(epsilon=0)",
        True,
    )
    info = {"oracle_actions": ["north"], "admissible_actions": ["north", "look"]}
    agent.reset(0)
    agent.observe("a room", info, "look")
    assert agent.act("a room", info) == "north"
    assert agent.step_note() == {"decisions": 1, "heard": 1, "p": 0.5}
    pid = agent._child.proc.pid
    copy = pickle.loads(pickle.dumps(agent))
    assert copy._child is None  # it starts its own process on its first call
    copy.reset(1)
    assert copy._child.proc.pid != pid
    copy.close()
    agent.close()
    assert agent._child is None
    batch = seal(BatchNotingOracle(0.0, max_batch_size=5))
    assert isinstance(batch, SealedBatchAgent) and batch.max_batch_size == 5
    batch.reset_episode("e1", 0)
    assert batch.act_batch(["e1"], ["a room"], [info]) == ["north"]
    assert batch.step_notes(["e1"]) == [{"decisions": 1, "heard": 0, "p": 0.5}]
    batch.end_episode("e1")
    batch.close()
    assert seal(batch) is batch


def test_a_sealed_specs_url_credentials_are_in_no_pickle_and_blanked_in_this_process():
    """A spec's ``base_url`` travelled whole in the proxy's pickle (what a pool or Ray
    sends to workers), and this process, which builds no agent from it, never registered
    its credentials: ``?code=...`` went into the run's lock file and its "in use" error."""
    import hashlib

    secret = "Jc4Vn8Rt2Wq6Zk9Lp3Xm"
    url = f"http://127.0.0.1:9/v1?code={secret}"
    agent = seal("_spies:UrlDigestAgent", options={"base_url": url})
    expected = "url-" + hashlib.sha256(url.encode()).hexdigest()[:12]
    assert agent.name == expected  # (the child got the URL whole)
    data = pickle.dumps(agent)
    assert secret.encode() not in data
    copy = pickle.loads(data)
    copy.ready()  # a worker's copy starts its own child, which gets the URL too
    assert copy._profile.name == expected
    copy.close()
    agent.close()
    assert redact(f"turnbudget eval --base-url {url}") == (
        "turnbudget eval --base-url http://127.0.0.1:9/v1?code=***"
    )


def test_agents_that_cannot_be_sealed_say_why():
    class Local(OracleAgent):  # defined in a function: its class cannot be found by name
        pass

    with pytest.raises(ValueError, match="picklable"):
        seal(Local(0.0))
    with pytest.raises(ValueError, match=r"Cannot start the sealed agent.*Unknown agent"):
        seal("no_such_module_xyz:Agent")
    with pytest.raises(ValueError, match="no attribute 'Nope'"):
        seal("turnbudget.agents.baselines:Nope")
    with pytest.raises(ValueError, match="sealed already"):
        seal(seal("random"), concurrency=2)
    with pytest.raises(ValueError, match="Expect `sealed` to be"):
        evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[4], tasks=1, sealed="yes")


def test_a_registered_name_cannot_be_sealed_by_spec(monkeypatch):
    from turnbudget.agents import registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.register_agent("mine-xyz", lambda arg: OracleAgent(0.0))
    with pytest.raises(ValueError, match="register_agent in this process"):
        seal("mine-xyz")


# ------------------------------------------------------------------------------ faults

GRID = dict(ks=[1, 2], ts=[8], n=2, tasks=3, n_bootstrap=0)
BAD = [(MAZE, 1, 0), (KEYQUEST, 2, 1)]
# The hang test's per-episode timeout follows its clean run in process (`timeout_clear_of`): a
# sealed agent's process starts outside the clock (`Driver` calls ready() first), and each of its
# few messages per turn costs far less than the margin.


def _check_faults(result, clean, kind: str, error: str) -> None:
    failed = {e["episode_id"]: e for e in result.episodes if e.get("failed_to_run")}
    assert {(e["env_id"], e["seed"], e["rep"]) for e in failed.values()} == set(BAD)
    for e in failed.values():
        assert e["failure"] == kind and error in e["error"], e["error"]
    assert [e for e in result.episodes if e["episode_id"] not in failed] == [
        e for e in clean.episodes if e["episode_id"] not in failed
    ]


@pytest.mark.parametrize(
    "agent,error",
    [
        (RaisingAgent(0.3, seeds_of(0, BAD)), "SealedAgentError: RuntimeError: agent bug"),
        (ExitingAgent(0.3, seeds_of(0, BAD)), "SystemExit: sys.exit(3) was called"),
        (DyingOracle(0.3, seeds_of(0, BAD)), "process ended during act()"),
        (UnsendableOracle(0.3, seeds_of(0, BAD)), "act() returned what cannot be sent as JSON"),
    ],
    ids=["raises", "sys.exit", "dies", "unsendable"],
)
def test_a_faulty_sealed_agent_fails_only_its_episodes(agent, error):
    clean = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), **GRID)
    result = evaluate([MAZE, KEYQUEST], agent, sealed=True, retries=1, **GRID)
    _check_faults(result, clean, "exception", error)


@pytest.mark.timeout(600, method="thread")  # a guard: the hanging episodes end only by the timeout
@pytest.mark.parametrize(
    "backend,workers",
    [("local", 1), pytest.param("pool", 1, marks=pytest.mark.slow)],  # (pool: ~11 s of waiting)
)
def test_a_hanging_sealed_agent_hits_the_timeout(backend, workers):
    start = time.perf_counter()
    clean = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), **GRID)
    timeout = timeout_clear_of(time.perf_counter() - start)
    result = evaluate(
        [MAZE, KEYQUEST], HangingAgent(0.3, seeds_of(0, BAD)), sealed=True, backend=backend,
        workers=workers, timeout=timeout, retries=1, **GRID,
    )  # fmt: skip
    _check_faults(result, clean, "timeout", "timeout")


def test_a_dead_process_is_an_error_of_the_call_and_the_next_call_starts_afresh():
    agent = seal(DyingOracle(0.0, [5]))
    info = {"oracle_actions": ["north"], "admissible_actions": ["north"]}
    agent.reset(5)
    first = agent._child
    with pytest.raises(SealedAgentError, match=r"process ended during act\(\)"):
        agent.act("a room", info)
    assert not first.alive
    agent.reset(6)  # a fresh process
    assert agent.act("a room", info) == "north" and agent._child is not first
    agent.close()


def test_a_reply_that_is_too_long_is_refused(monkeypatch):
    from turnbudget.eval.run import sealed as module

    monkeypatch.setattr(module, "MAX_REPLY", 1000)
    agent = seal(OracleAgent(0.0))
    agent.reset(0)
    with pytest.raises(SealedAgentError, match="over 1,000 bytes"):
        agent.act("a room", {"oracle_actions": ["n" * 5000], "admissible_actions": []})
    agent.close()


def test_the_child_holds_no_env_and_none_of_the_evaluators_file_descriptors(tmp_path):
    """A fresh interpreter, not a fork: nothing of the evaluator's memory, and only the pipe."""
    import turnbudget

    env = turnbudget.make(MAZE)
    env.reset(seed=0)
    held = open(tmp_path / "open.txt", "w")  # noqa: SIM115 (held open on purpose)
    try:
        agent = seal(SnoopingAgent())
        agent.reset(0)
        agent.act("a room", {"admissible_actions": ["look"]})
        assert agent.step_note()["envs"] == 0
        warden = agent._child.proc.pid  # (the agent's process runs below it)
        if Path(f"/proc/{warden}/fd").is_dir():  # (Linux)
            (runs_agent,) = Path(f"/proc/{warden}/task/{warden}/children").read_text().split()
            for pid, sockets in ((int(runs_agent), 1), (warden, 0)):  # the pipe, only
                targets = set()
                for fd in Path(f"/proc/{pid}/fd").iterdir():
                    with contextlib.suppress(FileNotFoundError):  # (one closed while listed)
                        targets.add(os.readlink(fd))
                assert str(tmp_path / "open.txt") not in targets
                assert sum(t.startswith("socket:") for t in targets) == sockets, pid
        agent.close()
    finally:
        held.close()
        env.close()


@pytest.mark.parametrize("sealed", [False, True], ids=["in-process", "sealed"])
def test_an_agents_key_in_its_step_notes_is_not_written(tmp_path, sealed):
    """A step note goes into steps.jsonl, and an agent's own key in one (a client's raw request
    kept for debugging) was written there as it was: only errors were blanked."""
    from _spies import NOTED_KEY, KeyInNotesAgent

    from turnbudget.records import STEPS_FILE, read_jsonl

    out = tmp_path / "run"
    evaluate(MAZE, KeyInNotesAgent(), ks=[1], ts=[3], tasks=1, n=1, out=out, sealed=sealed)
    assert NOTED_KEY[:12] not in (out / STEPS_FILE).read_text()
    notes = [step["agent"] for step in read_jsonl(out / STEPS_FILE)[0]]
    assert notes and all(note["raw"].startswith("called with sk-***") for note in notes)


def test_a_sealed_agents_own_ready_is_called_in_its_process(tmp_path):
    """`Sealed.ready` only started the process: an agent that loads its model in ``ready()``
    (the command line's default for MODULE:ATTR agents is sealed) failed every episode
    sealed, and played in process. It is called there as in process, before each episode."""
    runs = {}
    for sealed in (False, True):
        out = tmp_path / str(sealed)
        evaluate(MAZE, LoadsInReady(), ks=[1], ts=[5], tasks=2, retries=0, out=out,
                 sealed=sealed, n_bootstrap=0)  # fmt: skip
        runs[sealed] = [(out / name).read_bytes() for name in ("episodes.jsonl", "steps.jsonl")]
    assert runs[True] == runs[False]
    assert b'"failed_to_run"' not in runs[True][0] and b'"readied":0' not in runs[True][1]


def test_an_agent_made_from_a_python_file_can_be_sealed(tmp_path):
    """`make_agent("mine.py:Agent")` loads the file as a module no import finds: sealing the
    agent it made failed in the child ("No module named '_turnbudget_agent_mine_...'")."""
    from turnbudget.agents import make_agent

    (tmp_path / "mine.py").write_text(
        "from turnbudget.agents import OracleAgent\n\n"
        "class Agent(OracleAgent):\n"
        "    name = 'mine'\n"
    )
    agent = make_agent(f"{tmp_path / 'mine.py'}:Agent")
    # Another file loaded once and gone since: the child loads only what the agent names.
    (tmp_path / "scratch.py").write_text("from turnbudget.agents import RandomAgent as Agent\n")
    make_agent(f"{tmp_path / 'scratch.py'}:Agent")
    (tmp_path / "scratch.py").unlink()
    evaluate(MAZE, OracleAgent(), ks=[1], ts=[5], tasks=1, sealed=True, n_bootstrap=0)
    runs = {}
    for sealed in (False, True):
        out = tmp_path / str(sealed)
        evaluate(MAZE, agent, ks=[1], ts=[5], tasks=2, out=out, sealed=sealed, n_bootstrap=0)
        runs[sealed] = [(out / name).read_bytes() for name in ("episodes.jsonl", "steps.jsonl")]
    assert runs[True] == runs[False] and b'"failed_to_run"' not in runs[True][0]


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code hung here for ever)
@pytest.mark.parametrize("hook", ["ready", "preflight"])
def test_a_sealed_agent_that_hangs_in_ready_or_preflight_is_stopped(hook, monkeypatch):
    """Both run outside an episode's clock, with no limit: one that hung stalled the whole
    run (the CLI seals outside agents by default), --timeout or not."""
    from _faults import HangsInPreflight, HangsInReady

    from turnbudget.eval.run import sealed as module

    monkeypatch.setattr(module, "READY_SECONDS", 1.0)
    agent = seal((HangsInReady if hook == "ready" else HangsInPreflight)(0.0))
    _assert_stopped_in(agent, hook)
    hangs = seal((HangsInReady if hook == "ready" else HangsInPreflight)(0.0))  # (as the CLI's)
    with pytest.raises(SealedAgentError, match=rf"did not answer {hook}\(\) in 1s"):
        evaluate(MAZE, hangs, ks=[1], ts=[4], tasks=1, n_bootstrap=0, timeout=5)


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code waited for ever)
@pytest.mark.parametrize("hook", ["load", "ready", "preflight"])
def test_a_sealed_agent_that_sends_part_of_a_reply_is_stopped_at_its_deadline(hook, monkeypatch):
    """The parent read a reply with ``recv_bytes``, which reads a whole frame once any of
    it is there: a process that sent a frame's length and a few bytes, then nothing, held
    its caller past every limit, in its start and in ready() and preflight(), which no
    episode's clock covers."""
    from _faults import SendsPartOfAReply

    from turnbudget.eval.run import sealed as module

    if hook == "load":  # (its limit counts the process's start: three times a clean one's)
        began = time.monotonic()
        seal(OracleAgent(0.0)).close()
        monkeypatch.setattr(module, "START_SECONDS", 3 * (time.monotonic() - began))
        with pytest.raises(ValueError, match=r"did not answer load\(\) in "):
            seal(SendsPartOfAReply(hook))
        return
    monkeypatch.setattr(module, "READY_SECONDS", 1.0)
    agent = seal(SendsPartOfAReply(hook))
    _assert_stopped_in(agent, hook)


def _assert_stopped_in(agent: Any, hook: str) -> None:
    """``agent`` (sealed, `READY_SECONDS` at 1) is stopped in ``hook`` and its process killed,
    not left running."""
    try:
        with pytest.raises(SealedAgentError, match=rf"did not answer {hook}\(\) in 1s"):
            getattr(agent, hook)()
        assert not agent._child.alive
    finally:
        agent.close()


def test_a_sealed_agent_plays_under_a_default_socket_timeout():
    """The pipe to the agent's process is a socket pair: under `socket.setdefaulttimeout`
    its end was made non-blocking, and the process ended at its first read (exit code 0),
    failing every episode."""
    import socket

    before = socket.getdefaulttimeout()
    socket.setdefaulttimeout(30)
    agent = seal(OracleAgent(0.1))
    try:
        result = evaluate(MAZE, agent, ks=[1], ts=[8], tasks=2, n_bootstrap=0, retries=0)
    finally:
        agent.close()
        socket.setdefaulttimeout(before)
    assert len(result.episodes) == 2
    assert not any(e.get("failed_to_run") for e in result.episodes)
