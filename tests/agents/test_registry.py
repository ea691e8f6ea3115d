"""The agent registry: specs, lazy built-ins, and third-party agents through entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import HANG_GUARD

from turnbudget.agents import (
    OracleAgent,
    RandomAgent,
    list_agents,
    make_agent,
    register_agent,
    registry,
)
from turnbudget.agents.registry import BUILTIN_AGENTS, ENTRY_POINT_GROUP

AGENT_MODULE = '''
"""A third-party agent package: it repeats one command."""


class RepeatAgent:
    needs_oracle = False
    budget_aware = False

    def __init__(self, command):
        self.command = command

    @property
    def name(self):
        return f"repeat-{self.command}"

    def reset(self, seed):
        pass

    def act(self, observation, info):
        return self.command

    def __repr__(self):
        return f"RepeatAgent({self.command!r})"


def make(arg):
    if not arg:
        raise ValueError("Expect `myagent:COMMAND`")
    return RepeatAgent(arg)
'''


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch):
    """Each test registers into a copy, so no name leaks into other tests."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def install_distribution(root: Path) -> Path:
    """A distribution as pip would leave it: a package and its ``*.dist-info`` with entry points."""
    site = root / "site"
    (site / "myagents").mkdir(parents=True)
    (site / "myagents" / "__init__.py").write_text(textwrap.dedent(AGENT_MODULE))
    info = site / "myagents-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myagents\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nmyagent = myagents:make\n")
    return site


def test_builtin_specs_resolve_lazily():
    assert set(BUILTIN_AGENTS) == {"random", "oracle", "control", "house", "policy", "llm"}
    assert set(BUILTIN_AGENTS) <= set(list_agents())
    assert isinstance(make_agent("random"), RandomAgent)
    assert isinstance(make_agent(" Oracle:0.5 "), OracleAgent)
    assert make_agent("oracle:0.5").epsilon == 0.5
    with pytest.raises(ValueError, match=r"Unknown agent 'smart'.*random"):
        make_agent("smart")
    with pytest.raises(ValueError, match="agent name"):
        make_agent(":0.1")


def test_a_name_whose_module_is_absent_fails_only_when_used():
    register_agent("ghost", "turnbudget.agents.ghost:make_ghost_agent")
    assert "ghost" in list_agents()
    with pytest.raises(ValueError, match=r"reserved for turnbudget\.agents\.ghost"):
        make_agent("ghost:anything")


def test_a_missing_dependency_names_it(tmp_path, monkeypatch):
    (tmp_path / "needs_dep.py").write_text("import not_a_real_dependency_xyz\nmake = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    register_agent("needs-dep", "needs_dep:make")
    with pytest.raises(ImportError, match="not_a_real_dependency_xyz"):
        make_agent("needs-dep")


def test_register_agent_by_callable_and_refuse_silent_overwrite():
    register_agent("echo-test", lambda arg: OracleAgent(float(arg or 0)))
    assert make_agent("echo-test:0.25").epsilon == 0.25
    with pytest.raises(ValueError, match="already registered"):
        register_agent("echo-test", "x:y")
    register_agent("echo-test", lambda arg: RandomAgent(), overwrite=True)
    assert isinstance(make_agent("echo-test"), RandomAgent)
    for bad in ("", "a:b", None):
        with pytest.raises(ValueError):
            register_agent(bad, lambda arg: RandomAgent())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="callable"):
        register_agent("bad-factory", 3)  # type: ignore[arg-type]


def test_entry_point_agents_are_listed_and_built(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(install_distribution(tmp_path)))
    assert "myagent" in list_agents()
    assert repr(make_agent("myagent:north")) == "RepeatAgent('north')"
    with pytest.raises(ValueError, match="myagent:COMMAND"):
        make_agent("myagent")


def test_turnbudget_eval_runs_a_third_party_agent(tmp_path):
    site = install_distribution(tmp_path)
    out = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "turnbudget", "eval", "--env", "turnbudget/Maze-Easy-v0",
         "--agent", "myagent:look", "--k", "1", "--t", "3", "--tasks", "2", "--out", str(out),
         "--no-plots", "--quiet"],
        capture_output=True, text=True, timeout=HANG_GUARD, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "repeat-look: 2 episodes" in proc.stdout
    config = json.loads((out / "run.json").read_text())
    assert config["agent"] == "RepeatAgent('look')" and config["label"] == "repeat-look"
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == 6 and {s["action"] for s in steps} == {"look"}
    # Without the distribution on the path, the name is unknown and the error says so.
    bare = subprocess.run(
        [sys.executable, "-m", "turnbudget", "eval", "--env", "turnbudget/Maze-Easy-v0",
         "--agent", "myagent:look", "--out", str(tmp_path / "bare"), "--no-plots"],
        capture_output=True, text=True, timeout=HANG_GUARD,
    )  # fmt: skip
    assert bare.returncode == 2 and "Unknown agent 'myagent'" in bare.stderr


USER_MODULE = '''
"""A user's agents, named by MODULE:ATTR or PATH.py:ATTR."""
import os


class Plain:
    def reset(self, seed):
        pass

    def act(self, observation, info):
        return "look"

    def step_note(self):
        return {"pid": os.getpid()}


class Repeat:
    def __init__(self, command="look"):
        self.command = command

    def reset(self, seed):
        pass

    def act(self, observation, info):
        return self.command


class Spec(Repeat):
    @classmethod
    def from_spec(cls, arg=""):
        return cls(arg.upper() or "LOOK")


def make(arg):
    return Repeat(arg or "wait")


def make_plain():
    return Plain()


class Holder:
    class Inner(Plain):
        pass


INSTANCE = Plain()
NUMBER = 3


def make_nothing_agentlike():
    return object()
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    path = tmp_path / "my_user_agents.py"
    path.write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path
    sys.modules.pop("my_user_agents", None)


def test_module_attr_specs_build_classes_and_factories(user_module, monkeypatch):
    """``MODULE:ATTR[:ARGS]``: a class (from ``from_spec`` when it has one, else its
    constructor, with ARGS or without), a factory (with ARGS when it takes one), nested."""
    from_module = {
        "my_user_agents:Plain": ("Plain", None),
        "my_user_agents:Repeat": ("Repeat", "look"),
        "my_user_agents:Repeat:north": ("Repeat", "north"),
        "my_user_agents:Spec:east": ("Spec", "EAST"),
        "my_user_agents:Spec": ("Spec", "LOOK"),
        "my_user_agents:make": ("Repeat", "wait"),
        "my_user_agents:make:west": ("Repeat", "west"),
        "my_user_agents:make_plain": ("Plain", None),
        "my_user_agents:Holder.Inner": ("Inner", None),
        "turnbudget.agents.baselines:OracleAgent:0.5": ("OracleAgent", None),
    }
    for spec, (kind, command) in from_module.items():
        agent = make_agent(spec)
        assert type(agent).__name__ == kind, spec
        assert getattr(agent, "command", None) == command, spec
    # A file, by relative or absolute path: loaded once, as a module of its own.
    monkeypatch.chdir(user_module.parent)
    relative = make_agent("my_user_agents.py:Repeat:up")
    absolute = make_agent(f"{user_module}:Repeat:down")
    assert (relative.command, absolute.command) == ("up", "down")
    assert type(relative) is type(absolute) and type(relative).__module__ != "my_user_agents"


def test_module_attr_specs_fail_clearly(user_module, tmp_path):
    (tmp_path / "broken_user_agents.py").write_text("import not_a_real_dependency_xyz\n")
    bad = {
        "no_such_module_xyz:Agent": (ValueError, r"Unknown agent 'no_such_module_xyz'.*PATH\.py"),
        "my_user_agents.sub:Agent": (ValueError, r"Unknown agent 'my_user_agents\.sub'"),
        "broken_user_agents:Agent": (ImportError, "not_a_real_dependency_xyz"),
        "my_user_agents:Nope": (ValueError, r"'my_user_agents' has no attribute 'Nope'"),
        "my_user_agents:NUMBER": (ValueError, r"agent class or a factory function, got int"),
        "my_user_agents:INSTANCE": (ValueError, r"is an agent object; expect its class"),
        "my_user_agents:Plain:x": (ValueError, r"Plain takes no arguments, got 'x'"),
        "my_user_agents:make_nothing_agentlike": (ValueError, r"built object, which is not an"),
        "missing_file.py:Agent": (ValueError, r"there is no file"),
        "smart:0.1": (ValueError, r"Unknown agent 'smart'; expect one of"),
    }
    for spec, (error, message) in bad.items():
        with pytest.raises(error, match=message):
            make_agent(spec)
    with pytest.raises(ValueError, match=r"takes no option\(s\) \['base_url'\]"):
        make_agent("my_user_agents:Plain", base_url="http://x")


def test_spec_source_says_where_the_code_comes_from(tmp_path, monkeypatch):
    register_agent("mine-xyz", lambda arg: RandomAgent())
    monkeypatch.syspath_prepend(str(install_distribution(tmp_path)))
    sources = {
        "random": "builtin", "Oracle:0.1": "builtin", "mine-xyz": "registered",
        "myagent:north": "entry_point", "pkg.mod:Agent": "module", "mod:Agent:3": "module",
        "dir/agents.py:make": "file", "smart": "unknown", "smart:0.1": "unknown",
    }  # fmt: skip
    assert {spec: registry.spec_source(spec) for spec in sources} == sources
    register_agent("random", lambda arg: OracleAgent(0.0), overwrite=True)
    assert registry.spec_source("random") == "registered"  # (no longer turnbudget's own)


@pytest.mark.parametrize(
    "spec",
    ["x" * 2**20, "control:" + "x" * 2**20, "oracle:" + "x" * 2**20, "random:" + "x" * 2**20,
     "house:" + "x" * 2**20, "a" * 2**20 + ":Agent", "turnbudget.nope:" + "x" * 2**20],
    ids=["name", "control", "oracle", "random", "house", "module", "module-attr"],
)  # fmt: skip
def test_an_agent_spec_of_a_megabyte_is_quoted_never_repeated(spec):
    """Each refusal repeated the whole spec (a megabyte of message for a mistyped --agent)."""
    with pytest.raises((ValueError, ImportError)) as refused:
        make_agent(spec)
    assert "characters)" in str(refused.value) and len(str(refused.value)) < 1000
