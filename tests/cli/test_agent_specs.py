"""``--agent MODULE:ATTR`` and ``--agent PATH.py:ATTR`` in ``turnbudget eval`` and ``probe``:
a user's agent class or factory, sealed by default (``--no-sealed`` keeps it in-process);
a spec that names nothing usable is one line with exit code 2."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from turnbudget.cli import main

MAZE = "turnbudget/Maze-Easy-v0"
EVAL = ["eval", "--env", MAZE, "--k", "1", "--t", "4", "--tasks", "2", "--quiet", "--no-plots"]
PROBE = ["probe", "--env", MAZE, "--tasks", "1", "--baseline-repeats", "1", "--quiet"]

AGENTS = '''
import os


class PidAgent:
    """Looks every turn and notes the process it runs in."""

    name = "pid-agent"

    def __init__(self, command="look"):
        self.command = command

    def __repr__(self):
        return f"PidAgent({self.command!r})"

    def reset(self, seed):
        pass

    def act(self, observation, info):
        return self.command

    def step_note(self):
        return {"pid": os.getpid()}


def make(arg):
    return PidAgent(arg or "wait")


class OracleReader(PidAgent):
    """A submission that grants itself the oracle's actions and its budget."""

    name = "oracle-reader"
    needs_oracle = True
    budget_aware = True

    def act(self, observation, info):
        return info["oracle_actions"][0]


class SaysYes(PidAgent):
    budget_aware = "yes"


class ExitsWhenBuilt(PidAgent):
    def __init__(self):
        import sys

        sys.exit(0)


class NoRepr(PidAgent):
    def __repr__(self):
        raise RuntimeError("no repr today")


class NoName(PidAgent):
    @property
    def name(self):
        raise RuntimeError("no name today")


class DeafObserver(PidAgent):
    observe = 5
'''


@pytest.fixture
def agents_file(tmp_path, monkeypatch):
    path = tmp_path / "cli_user_agents.py"
    path.write_text(AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path
    sys.modules.pop("cli_user_agents", None)


def _pids(out) -> set[int]:
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    return {s["agent"]["pid"] for s in steps}


def test_eval_runs_a_module_attr_agent_sealed_by_default(tmp_path, agents_file, capsys):
    out = tmp_path / "sealed"
    assert main([*EVAL, "--agent", "cli_user_agents:PidAgent:north", "--out", str(out)]) == 0
    assert "pid-agent: 2 episodes" in capsys.readouterr().out
    config = json.loads((out / "run.json").read_text())
    # (with where it came from: its arguments' and its code's digests, `agent_origin`)
    assert re.fullmatch(
        r"PidAgent\('north'\) \[PidAgent:args sha256:[0-9a-f]{16} code sha256:[0-9a-f]{16}\]",
        config["agent"],
    )
    assert config["label"] == "pid-agent"
    assert os.getpid() not in _pids(out)  # it played in a process of its own
    # In-process on request: the same records but for the pid the agent noted.
    here = tmp_path / "here"
    args = [*EVAL, "--agent", "cli_user_agents:PidAgent:north", "--out", str(here)]
    assert main([*args, "--no-sealed"]) == 0
    assert _pids(here) == {os.getpid()}
    assert (here / "run.json").read_text() == (out / "run.json").read_text()


def test_eval_and_probe_run_an_agent_from_a_file(tmp_path, agents_file, capsys):
    out = tmp_path / "run"
    assert main([*EVAL, "--agent", f"{agents_file}:make", "--out", str(out)]) == 0
    config = json.loads((out / "run.json").read_text())
    assert re.fullmatch(r"PidAgent\('wait'\) \[make: code sha256:[0-9a-f]{16}\]", config["agent"])
    assert os.getpid() not in _pids(out)
    probes = tmp_path / "probes"
    assert main([*PROBE, "--agent", f"{agents_file}:PidAgent", "--out", str(probes)]) == 0
    assert "pid-agent: single_step_skill" in capsys.readouterr().out
    records = [json.loads(x) for x in (probes / "probes.jsonl").read_text().splitlines()]
    assert {r["agent"] for r in records} == {"pid-agent", "random"}


def _runs_row(out, label) -> list[str]:
    runs = (out / "report.md").read_text().split("## Runs")[1].split("\n\n")[1]
    header = runs.splitlines()[0].split(" | ")
    row = next(r for r in runs.splitlines() if r.startswith(f"| {label} "))
    return dict(zip(header, row.split(" | "), strict=True))


@pytest.mark.parametrize("sealed", ["--sealed", "--no-sealed"])
def test_an_agent_that_grants_itself_the_oracle_is_named_so(tmp_path, agents_file, capsys, sealed):
    """A sealed submission that declares ``needs_oracle`` (or ``budget_aware``) was handed the
    oracle's actions (or its budget) every turn, and nothing the run printed or reported said
    so: a leaderboard run read as a player's. `eval` now notes it, the Runs table lists it."""
    cheat, fair = tmp_path / "cheat", tmp_path / "fair"
    assert (
        main([*EVAL, "--agent", "cli_user_agents:OracleReader", "--out", str(cheat), sealed]) == 0
    )
    err = capsys.readouterr().err
    assert "declares needs_oracle = True" in err and "budget_aware = True" in err
    assert _runs_row(cheat, "oracle-reader")["beyond a player's view"] == "oracle actions, budget"
    assert main([*EVAL, "--agent", "cli_user_agents:PidAgent", "--out", str(fair), sealed]) == 0
    assert "declares" not in capsys.readouterr().err
    assert _runs_row(fair, "pid-agent")["beyond a player's view"] == "none"


def test_a_built_in_agent_runs_in_process_unless_sealed(tmp_path, capsys):
    plain, sealed = tmp_path / "plain", tmp_path / "sealed"
    assert main([*EVAL, "--agent", "oracle:0.2", "--out", str(plain)]) == 0
    assert main([*EVAL, "--agent", "oracle:0.2", "--out", str(sealed), "--sealed"]) == 0
    for name in ("run.json", "episodes.jsonl", "steps.jsonl"):
        assert (plain / name).read_bytes() == (sealed / name).read_bytes()
    assert main([*PROBE, "--agent", "oracle", "--sealed", "--out", str(tmp_path / "p")]) == 0


@pytest.mark.parametrize(
    "spec,message",
    [
        ("no_such_module_xyz:Agent", "Unknown agent 'no_such_module_xyz'"),
        ("cli_user_agents:Nope", "'cli_user_agents' has no attribute 'Nope'"),
        ("cli_user_agents:os", "Expect cli_user_agents:os to be an agent class or a factory"),
        ("missing_agents.py:Agent", "there is no file"),
        # An agent the engine cannot read (in process these were tracebacks):
        ("cli_user_agents:SaysYes", "TypeError: Expect `agent.budget_aware` to be True or False"),
        ("cli_user_agents:NoRepr", "RuntimeError: no repr today"),
        ("cli_user_agents:NoName", "RuntimeError: no name today"),
        ("cli_user_agents:DeafObserver", "TypeError: Expect `agent.observe` to be a method"),
        # (in process: exit code 0 and not a word, the run never made)
        ("cli_user_agents:ExitsWhenBuilt", "SystemExit"),
    ],
)
@pytest.mark.parametrize("command", [EVAL, PROBE])
@pytest.mark.parametrize("sealed", ["--sealed", "--no-sealed"])
def test_a_spec_that_names_no_agent_is_one_line(
    tmp_path, agents_file, capsys, spec, message, command, sealed
):
    assert main([*command, "--agent", spec, sealed, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"turnbudget {command[0]}: error: ") and message in err
    assert err.count("\n") == 1


@pytest.mark.timeout(300, method="thread")  # (a guard: the old code waited for ever)
@pytest.mark.parametrize("hook", ["HangsInReady", "HangsInPreflight"])
@pytest.mark.parametrize("command", [EVAL, PROBE])
@pytest.mark.parametrize("sealed", ["--sealed", "--no-sealed"])
def test_an_agent_that_hangs_in_ready_or_preflight_is_one_line_naming_it(
    tmp_path, capsys, monkeypatch, hook, command, sealed
):
    """docs/guides/agents.md: past READY_SECONDS, the run ends with one line naming the agent.
    Sealed, it was a traceback ending in SealedAgentError, which named no agent; in process,
    the run waited for ever."""
    from turnbudget.eval.run import sealed as module

    monkeypatch.setattr(module, "READY_SECONDS", 1.0)
    assert main([*command, "--agent", f"_faults:{hook}", sealed, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    name = "hangs-in-ready" if hook == "HangsInReady" else "hangs-in-preflight"
    assert err.startswith(f"turnbudget {command[0]}: error: ") and f"'{name}'" in err, err
    assert f"{'ready' if name == 'hangs-in-ready' else 'preflight'}() in 1s" in err, err


def test_a_policy_on_another_game_is_noted(tmp_path, capsys):
    """Allowed (a transfer), but nothing in the run said which game the policy learned."""
    argv = ["--agent", "policy:zoo/maze-easy/base/seed0", "--k", "1", "--t", "4", "--n", "1",
            "--tasks", "1", "--quiet", "--no-plots"]  # fmt: skip
    out = tmp_path / "other"
    assert main(["eval", "--env", "KeyQuest-Easy-v0,Maze-Easy-v0", *argv, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err == (
        "turnbudget: note: policy:zoo/maze-easy/base/seed0 was trained on "
        "turnbudget/Maze-Easy-v0, and plays turnbudget/KeyQuest-Easy-v0 here\n"
    )
    assert main(["eval", "--env", "Maze-Easy-v0", *argv, "--out", str(tmp_path / "own")]) == 0
    assert "note" not in capsys.readouterr().err


def test_a_subclass_of_a_built_in_agent_from_a_file_carries_its_origin(tmp_path):
    """Its factory is the inherited ``OracleAgent.from_spec``, whose module is the library's:
    the run recorded ``OracleAgent(epsilon=0.3)`` as if built in, resumed into a run made
    with other code, and paired with a real ``oracle:0.3`` run in the report."""
    from turnbudget.agents.registry import make_agent
    from turnbudget.eval.run.plan import _agent_repr

    path = tmp_path / "flaky_agents.py"
    path.write_text(
        "from turnbudget.agents import OracleAgent\n\n"
        "class Flaky(OracleAgent):\n"
        "    def act(self, observation, info):\n"
        "        return super().act(observation, info)\n"
    )
    try:
        shown = _agent_repr(make_agent(f"{path}:Flaky:0.3"))
        assert re.fullmatch(
            r"OracleAgent\(epsilon=0\.3\) \[Flaky:args sha256:[0-9a-f]{16} "
            r"code sha256:[0-9a-f]{16}\]",
            shown,
        ), shown
        assert _agent_repr(make_agent("oracle:0.3")) == "OracleAgent(epsilon=0.3)"
    finally:
        sys.modules.pop("flaky_agents", None)
