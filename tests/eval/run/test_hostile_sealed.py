"""Hostile sealed agents: what they start ends with the run, and what they raise is recorded.

The agents live in a module written to ``tmp_path`` (the child imports it through the
evaluator's ``sys.path``). Nothing here waits on the clock: a spawned process reports its
pid through a file written before the agent answers, and the one hang ends by a timeout
sized from a clean run (`timeout_clear_of`).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path

import pytest
from _faults import timeout_clear_of

from turnbudget.agents import OracleAgent
from turnbudget.eval.run.evaluate import evaluate

MAZE = "turnbudget/Maze-Easy-v0"
GRID = dict(ks=[1], ts=[10], tasks=2, n_bootstrap=0, retries=0)

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

HOSTILE = '''
import ctypes, os, signal, subprocess, sys
from turnbudget.agents import OracleAgent


class Spawner(OracleAgent):
    """Starts a long-lived process on its first command (``how``: plain, own session, or a
    double fork whose middle process exits) and notes its pid in ``path`` first."""

    def __init__(self, path, how, then_exit=False):
        super().__init__(0.0)
        self.path, self.how, self.done, self.then_exit = path, how, False, then_exit

    def act(self, observation, info):
        if not self.done:
            self.done = True
            if self.how == "double_fork":
                r, w = os.pipe()
                middle = os.fork()
                if middle == 0:
                    os.setsid()
                    pid = os.fork()
                    if pid == 0:
                        signal.pause()
                        os._exit(0)
                    os.write(w, str(pid).encode())
                    os._exit(0)
                os.close(w)
                pid = int(os.read(r, 64))
                os.waitpid(middle, 0)
            else:
                pid = subprocess.Popen(
                    [sys.executable, "-c", "import signal; signal.pause()"],
                    start_new_session=self.how == "session",
                ).pid
            with open(self.path, "a") as f:
                f.write(f"{pid}\\n")
            if self.then_exit:  # (its process ends first: what it started is an orphan)
                os._exit(3)
        return super().act(observation, info)


class Undying(OracleAgent):
    """Undoes its process's safeguards on its first command (its death signal, the
    watcher's exit), notes its pid in ``path``, and keeps a thread that is no daemon."""

    def __init__(self, path):
        super().__init__(0.0)
        self.path = path

    def act(self, observation, info):
        if not os.path.exists(self.path):
            import threading

            ctypes.CDLL(None).prctl(1, 0)  # PR_SET_PDEATHSIG 0
            os._exit = lambda code: None
            threading.Thread(target=signal.pause, daemon=False).start()
            with open(self.path, "w") as f:
                f.write(str(os.getpid()))
        return super().act(observation, info)


class Snoop(OracleAgent):
    """Notes which of ``names`` its process's environment holds."""

    def __init__(self, names):
        super().__init__(0.0)
        self.names = names

    def step_note(self):
        return {"held": sorted(n for n in self.names if n in os.environ)}


def make_snoop(arg, api_key_env=None):
    return Snoop(arg.split(","))


class SelfKilled(OracleAgent):
    """Its process dies by SIGKILL on its first command (as the kernel's OOM killer does)."""

    def act(self, observation, info):
        os.kill(os.getpid(), signal.SIGKILL)


class Shouting(OracleAgent):
    """Raises with ESC sequences in its message (a terminal's title set, its screen cleared)."""

    def act(self, observation, info):
        raise ValueError("\x1b]0;PWNED\x07\x1b[2J boom")


class Deep(OracleAgent):
    def step_note(self):
        note = {}
        for _ in range(500):
            note = {"v": note}
        return note


class _Batch:
    needs_oracle = budget_aware = False
    max_batch_size = 2

    def reset_episode(self, episode_id, seed):
        pass


class OneString(_Batch):
    def act_batch(self, ids, observations, infos):
        return "ns"[: len(ids)]  # (one str: its characters were the episodes' commands)


class Looker(_Batch):  # (no end_episode: it is optional)
    def act_batch(self, ids, observations, infos):
        return ["look"] * len(ids)


class OneNote(_Batch):
    def act_batch(self, ids, observations, infos):
        return ["look"] * len(ids)

    def step_notes(self, ids):
        return [{"why": "one note for the batch"}]


class Stubborn(OracleAgent):
    """On the run's first command (the one that creates ``path``): notes its pid, ignores
    SIGTERM and blocks in C holding the GIL (no Python thread of its process runs again).
    Every other command is the oracle's."""

    def __init__(self, path):
        super().__init__(0.0)
        self.path = path

    def act(self, observation, info):
        try:  # (creating the file is the one atomic test: two workers may both ask first)
            with open(self.path, "x") as f:
                f.write(str(os.getpid()))
        except FileExistsError:
            return super().act(observation, info)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        ctypes.PyDLL(None).pause()


class Unreadable(Exception):
    def __str__(self):
        raise RuntimeError("no message")


class Code:
    def __repr__(self):
        raise RuntimeError("no repr")


class SplitRaises(str):
    def split(self, *args, **kwargs):
        raise ValueError("no split")


class Unsplittable(Exception):
    def __str__(self):
        return SplitRaises("a message  that cannot be split")


Painted = type("Painted\x1b]0;pwned\x07", (Exception,), {})


class BadMessages(OracleAgent):
    """Raises what cannot be printed: an exception whose ``__str__`` raises, or returns a
    str whose own ``split`` raises, or whose class name holds a terminal's escapes, or
    ``sys.exit`` with a code whose ``__repr__`` raises."""

    def __init__(self, how):
        super().__init__(0.0)
        self.how = how

    def act(self, observation, info):
        if self.how == "exit":
            sys.exit(Code())
        if self.how == "split":
            raise Unsplittable()
        if self.how == "name":
            raise Painted("painted")
        raise Unreadable()
'''


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    folder = tmp_path / "agents"
    folder.mkdir()
    name = f"hostile_agents_{abs(hash(str(tmp_path)))}"
    (folder / f"{name}.py").write_text(HOSTILE)
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    return importlib.import_module(name)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


@linux
@pytest.mark.parametrize("how", ["plain", "session", "double_fork"])
@pytest.mark.parametrize("workers", [1, 2])
def test_what_a_sealed_agent_starts_ends_with_the_run(hostile, tmp_path, how, workers):
    pids_file = tmp_path / "pids"
    agent = hostile.Spawner(str(pids_file), how)
    result = evaluate(MAZE, agent, sealed=True, workers=workers, **GRID)
    assert result.summary["failed_to_run"]["episodes"] == 0
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids  # (each process the run used spawned one)
    assert [p for p in pids if _running(p)] == []


@linux
@pytest.mark.parametrize("how", ["session", "double_fork"])
@pytest.mark.parametrize("workers", [1, 2])
def test_what_a_sealed_agent_starts_ends_with_the_run_when_its_process_died_first(
    hostile, tmp_path, how, workers
):
    """The agent's process was the subreaper of what it started: once it died, a process in
    a session of its own (or a double fork's) was nobody's to end, and outlived the run."""
    pids_file = tmp_path / "pids"
    agent = hostile.Spawner(str(pids_file), how, then_exit=True)
    with pytest.raises(ValueError, match="no task"):  # (every episode's process died)
        evaluate(MAZE, agent, sealed=True, workers=workers, **GRID)
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 2
    assert [p for p in pids if _running(p)] == []


@linux
def test_a_sealed_agent_that_undoes_its_safeguards_ends_with_a_killed_evaluator(hostile, tmp_path):
    """An agent that cleared its death signal and its watcher's exit lived on after its
    evaluator was SIGKILLed; its warden process, which runs none of its code, ends it."""
    import subprocess

    pid_file = tmp_path / "undying.pid"
    evaluator = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; "
         f"from {hostile.__name__} import Undying; from turnbudget.eval.run.sealed import seal; "
         "agent = seal(Undying(sys.argv[1])); agent.reset(0); "
         "agent.act('a room', {'admissible_actions': ['look'], 'oracle_actions': ['look']}); "
         "print('acted', flush=True); time.sleep(600)", str(pid_file)],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},  # (this test's modules)
    )  # fmt: skip
    try:
        assert evaluator.stdout.readline() == "acted\n"  # (the agent has undone them)
        agent_pid = int(pid_file.read_text())
        assert _running(agent_pid)
    finally:
        evaluator.kill()
        evaluator.wait()
    deadline = time.monotonic() + 60  # (it ends within a second; a guard, not a race)
    while _running(agent_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(agent_pid)


def test_a_sealed_agents_process_gets_no_secret_but_the_key_its_options_name(hostile, monkeypatch):
    """The agent's process got the evaluator's whole environment: an agent under test read
    the evaluator's API keys, and wrote them into its step notes (the run's records)."""
    from turnbudget.eval.run.sealed import seal

    names = ["MY_LLM_KEY", "OPENAI_API_KEY", "HF_TOKEN", "DB_PASSWORD", "PLAIN_SETTING",
             "TOKENIZERS_PARALLELISM", "TIKTOKEN_CACHE_DIR"]  # fmt: skip
    for name in names:
        monkeypatch.setenv(name, "s3cret-value")
    spec = f"{hostile.__name__}:make_snoop:{','.join(names)}"
    with seal(spec, options={"api_key_env": "MY_LLM_KEY"}) as agent:
        agent.reset(0)
        agent.act("a room", {"admissible_actions": ["look"], "oracle_actions": ["look"]})
        held = ["MY_LLM_KEY", "PLAIN_SETTING", "TIKTOKEN_CACHE_DIR", "TOKENIZERS_PARALLELISM"]
        assert agent.step_note() == {"held": held}  # (a word of the name is a secret's)
    with seal(hostile.Snoop(names)) as agent:  # (an object names no key)
        agent.reset(0)
        agent.act("a room", {"admissible_actions": ["look"], "oracle_actions": ["look"]})
        assert agent.step_note() == {"held": held[1:]}


def test_a_sealed_agents_process_gets_no_llm_servers_credentials(hostile, monkeypatch):
    """An LLM server's URL with its credentials is in variables that no secret's word names
    (``OPENAI_BASE_URL``, and the one a `ChatAgent` sets for its worker processes): an agent
    under test read them and wrote them into its step notes (the run's records)."""
    from turnbudget.agents.llm import ChatAgent
    from turnbudget.eval.run.sealed import seal

    monkeypatch.setenv("OPENAI_BASE_URL", "http://bob:Pa5s-w0rd-Kx81@127.0.0.1:9/v1")
    monkeypatch.setenv("MIRROR_URL", "https://llm.example/v1?code=Qc7-unshaped-code")
    monkeypatch.setenv("INDEX_URL", "https://pypi.org/simple")  # (no credentials: kept)
    chat = ChatAgent("m", base_url="http://alice:Qw9-secret-Zx@127.0.0.1:9/v1")
    try:
        names = ["OPENAI_BASE_URL", "MIRROR_URL", "INDEX_URL", chat._url_env]
        with seal(f"{hostile.__name__}:make_snoop:{','.join(names)}") as agent:
            agent.reset(0)
            agent.act("a room", {"admissible_actions": ["look"], "oracle_actions": ["look"]})
            assert agent.step_note() == {"held": ["INDEX_URL"]}
    finally:
        os.environ.pop(chat._url_env, None)


def test_the_llm_agents_key_is_kept_however_its_spec_names_it():
    from turnbudget.eval.run.sealed import _secret_names_kept

    for spec in ("llm:gemma", "turnbudget.agents.llm:make_llm_agent:gemma"):
        assert _secret_names_kept(spec, None, ()) == {"OPENAI_API_KEY"}
    assert _secret_names_kept("mine.py:make", None, ()) == frozenset()


@linux
def test_an_agent_process_killed_by_sigkill_is_named_so(hostile, tmp_path):
    """Its warden could not set SIGKILL's handler to pass the signal on: "exit code 1" and a
    warden traceback, where it was "killed by signal 9"."""
    with pytest.raises(ValueError, match="no task"):
        evaluate(MAZE, hostile.SelfKilled(0.0), sealed=True, out=tmp_path / "run", **GRID)
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    assert all("ended during act() (killed by signal 9)" in e["error"] for e in episodes)


@pytest.mark.parametrize("sealed", [False, True])
def test_an_agents_error_reaches_the_terminal_escaped(hostile, tmp_path, caplog, sealed):
    """The failure line is logged (to a terminal): an agent's ESC sequences reached it raw."""
    with caplog.at_level("WARNING"), pytest.raises(ValueError, match="no task"):
        evaluate(MAZE, hostile.Shouting(0.0), sealed=sealed, out=tmp_path / "run", **GRID)
    assert (
        "failed to run" in caplog.text and "\x1b" not in caplog.text and "\x07" not in caplog.text
    )
    assert "\\x1b]0;PWNED\\x07" in caplog.text
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    assert all("\x1b" not in e["error"] for e in episodes)


@pytest.mark.parametrize("sealed", [False, True])
def test_a_step_note_nested_too_deep_fails_its_episode_by_name(hostile, tmp_path, sealed):
    """JSON took a note nested 500 deep; the records' writer then raised RecursionError."""
    with pytest.raises(ValueError, match="no task"):
        evaluate(MAZE, hostile.Deep(0.0), sealed=sealed, out=tmp_path / "run", **GRID)
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    assert all("step note nested at most 64 deep" in e["error"] for e in episodes), episodes


def test_a_sealed_batch_answer_of_the_wrong_shape_fails_as_in_process(hostile, tmp_path):
    """In the agent's process, list() played a str one character an episode (commands "n"
    and "s"); in process the episodes fail."""
    for sealed in (False, True):
        out = tmp_path / f"run-{sealed}"
        with pytest.raises(ValueError, match="no task"):
            evaluate(MAZE, hostile.OneString(), sealed=sealed, out=out, **GRID)
        episodes = [json.loads(line) for line in (out / "episodes.jsonl").open()]
        assert all("TypeError: Expect" in e["error"] for e in episodes), (sealed, episodes)


def test_a_sealed_batch_agents_notes_of_the_wrong_count_are_kept_as_in_process(hostile, tmp_path):
    """The proxy dropped every note of a batch whose count was wrong; in process the count
    fails the batch, which is played again an episode at a time, notes and all."""
    for sealed in (False, True):
        out = tmp_path / f"run-{sealed}"
        evaluate(MAZE, hostile.OneNote(), sealed=sealed, out=out, **GRID)
        steps = [json.loads(line) for line in (out / "steps.jsonl").open()]
        assert steps and all(s["agent"] == {"why": "one note for the batch"} for s in steps)


@pytest.mark.timeout(300, method="thread")  # a guard: the run spun for ever once
def test_a_sealed_batch_agent_without_end_episode_plays_as_in_process(hostile, tmp_path):
    """end_episode is optional; sealed, each call of it failed in the agent's process and
    lost its episode's slot, and with every slot lost the run spun for ever."""
    runs = [
        evaluate(MAZE, hostile.Looker(), sealed=sealed, **{**GRID, "tasks": 5}).episodes
        for sealed in (False, True)
    ]
    assert runs[0] == runs[1] and not any(e.get("failed_to_run") for e in runs[1])


@pytest.mark.slow  # (it waits out a timeout clear of a whole clean run: ~100 s)
@linux
def test_a_sealed_agent_that_ignores_sigterm_and_holds_the_gil_is_ended_by_a_pool_timeout(
    hostile, tmp_path
):
    start = time.monotonic()
    evaluate(MAZE, OracleAgent(0.0), sealed=True, workers=2, **GRID)
    timeout = timeout_clear_of(time.monotonic() - start)
    pid_file = tmp_path / "stubborn.pid"
    result = evaluate(
        MAZE, hostile.Stubborn(str(pid_file)), sealed=True, workers=2, timeout=timeout,
        out=tmp_path / "run", **GRID,
    )  # fmt: skip
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    failed = [e for e in episodes if e.get("failed_to_run")]
    assert len(episodes) == 2 and [e["failure"] for e in failed] == ["timeout"]
    assert result.summary["failed_to_run"]["episodes"] == 1
    assert not _running(int(pid_file.read_text()))  # its worker's death took it along


@pytest.mark.parametrize("sealed", [False, True])
@pytest.mark.parametrize("how", ["str", "exit"])
def test_an_exception_that_cannot_be_printed_is_a_recorded_failure(hostile, tmp_path, sealed, how):
    with pytest.raises(ValueError, match="no task"):  # (every episode failed to run)
        evaluate(MAZE, hostile.BadMessages(how), sealed=sealed, out=tmp_path / "run", **GRID)
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    assert len(episodes) == 2
    name = "SystemExit" if how == "exit" else "Unreadable"
    for e in episodes:
        assert e["failure"] == "exception"
        assert f"{name}: <its message could not be read: RuntimeError>" in e["error"]


@pytest.mark.parametrize("sealed", [False, True])
@pytest.mark.parametrize(
    ("how", "error"),
    [("split", "Unsplittable: a message that cannot be split"),
     ("name", "Painted\\x1b]0;pwned\\x07: painted")],
)  # fmt: skip
def test_an_exception_of_hostile_text_is_a_recorded_failure(
    hostile, tmp_path, capfd, sealed, how, error
):
    """In process, a message whose own ``split`` raised ended the whole run, and a class name
    holding a terminal's escapes reached the log and the terminal as it was."""
    with pytest.raises(ValueError, match="no task"):  # (every episode failed to run)
        evaluate(MAZE, hostile.BadMessages(how), sealed=sealed, out=tmp_path / "run", **GRID)
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").open()]
    assert len(episodes) == 2
    for e in episodes:
        assert e["failure"] == "exception" and error in e["error"], e["error"]
    assert "\x1b" not in "".join(capfd.readouterr())


def test_secret_names_beyond_key_token_and_password_are_withheld(monkeypatch):
    """A hostile agent file read these from its process's environment: the pattern knew only
    whole words KEY, TOKEN, SECRET, CREDENTIAL(S), AUTH and PASSW anywhere."""
    from turnbudget.eval.run.sealed import _agent_environment

    secrets = ["DB_PASS", "GITHUB_PAT", "MY_PASSPHRASE", "DB_SECRETS", "SERVICE_CREDS",
               "AWS_SECRETKEY", "SLACK_WEBHOOK_URL", "SENTRY_DSN", "SESSION_COOKIE",
               "MYSQL_PWD", "DB_PW", "CI_JOB_JWT", "SSHPASS"]  # fmt: skip
    plain = ["PATH_EXTRA", "BYPASS_CACHE", "COMPASS_HEADING", "TOKENIZERS_PARALLELISM",
             "PWD", "OLDPWD_SHOWN", "PYTHONPATH"]  # fmt: skip
    for name in [*secrets, *plain]:
        monkeypatch.setenv(name, "value-of-it")
    given = _agent_environment(frozenset())
    assert [n for n in secrets if n in given] == []
    assert [n for n in plain if n in given] == plain


def test_a_url_with_credentials_anywhere_in_a_value_is_withheld(monkeypatch):
    """Only a value that was one URL was read as one: pip's list of index URLs and uv's
    ``name=URL`` reached the agent with their passwords."""
    from turnbudget.eval.run.sealed import _agent_environment

    secrets = {
        "PIP_EXTRA_INDEX_URL": "https://pypi.org/simple https://bob:S3cretPipPw99@pypi.corp/simple",
        "UV_INDEX": "corp=https://bob:S3cretUvPw99@pypi.corp/simple",
        "ALONE_URL": "https://bob:S3cretAlone99@pypi.corp/simple",
        "MIRRORS": "http://a.example/x;https://mirror.example/y?api_key=S3cretQuery99",
        "DATABASE_URL": "postgres://app:s3cr;et-Pw-99@db.internal:5432/prod",
        "OTHER_URL": "https://bob:it's,a-S3cret@host.example/x",
    }
    plain = {"PIP_INDEX_URL": "https://pypi.org/simple https://mirror.example/simple"}
    for name, value in {**secrets, **plain}.items():
        monkeypatch.setenv(name, value)
    given = _agent_environment(frozenset())
    assert [n for n in secrets if n in given] == []
    assert {n: given.get(n) for n in plain} == plain
