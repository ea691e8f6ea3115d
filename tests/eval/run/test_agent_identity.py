"""A run records its agent so that a rerun resumes only the same agent: a policy retrained
in place, or an agent of outside code built with other arguments or edited, is another run
(its repr named only the path, or only the class, and the rerun mixed the two)."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from turnbudget.agents import make_agent
from turnbudget.agents.policy import PolicyAgent
from turnbudget.eval import evaluate
from turnbudget.eval.run.plan import _agent_repr
from turnbudget.eval.run.sealed import seal

MAZE = "turnbudget/Maze-Easy-v0"
SMALL = dict(ks=[1], ts=[6], n=1, tasks=2, n_bootstrap=0)
ZOO = resources.files("turnbudget") / "zoo/maze-easy/base"

AGENT_CODE = """
from turnbudget.agents import RandomAgent


class EpsAgent(RandomAgent):
    def __init__(self, eps):
        super().__init__()
        self.eps = float(eps)

    def __repr__(self):  # (the default: names the class only)
        return object.__repr__(self)


def make(arg):
    return EpsAgent(arg)
"""


def test_a_policy_retrained_in_place_is_another_run(tmp_path):
    policy, out = tmp_path / "policy", tmp_path / "run"
    shutil.copytree(ZOO / "seed0", policy)
    first = evaluate(MAZE, PolicyAgent(policy), **SMALL, out=out)
    assert first.n_run == 2
    again = evaluate(MAZE, PolicyAgent(policy), **SMALL, out=out)  # (the same weights)
    assert again.n_run == 0
    shutil.rmtree(policy)
    shutil.copytree(ZOO / "seed3", policy)  # (retrained: other weights, the same path)
    with pytest.raises(ValueError, match=r"differs in: agent"):
        evaluate(MAZE, PolicyAgent(policy), **SMALL, out=out)
    assert repr(PolicyAgent(policy)) != repr(PolicyAgent(ZOO / "seed0"))
    assert repr(PolicyAgent(ZOO / "seed0")) == repr(PolicyAgent(ZOO / "seed0"))


def test_an_outside_agent_is_recorded_with_its_arguments_and_code(tmp_path):
    code = tmp_path / "myagent.py"
    code.write_text(AGENT_CODE)
    spec = f"{code}:make"
    low, high = make_agent(f"{spec}:0.1"), make_agent(f"{spec}:0.9")
    assert _agent_repr(low) != _agent_repr(high) and "make:args sha256:" in _agent_repr(low)
    assert _agent_repr(make_agent(f"{spec}:0.1")) == _agent_repr(low)
    sealed = seal(f"{spec}:0.1")  # (its own process builds it: the same record)
    try:
        assert repr(sealed) == _agent_repr(low)
    finally:
        sealed.close()
    out = tmp_path / "run"
    evaluate(MAZE, low, **SMALL, out=out)
    with pytest.raises(ValueError, match=r"differs in: agent"):
        evaluate(MAZE, high, **SMALL, out=out)


def test_an_outside_agent_s_arguments_are_recorded_by_their_digest_only(tmp_path):
    """The spec's arguments went into run.json (then the summary and the report) as typed,
    blanked only where they looked like a known key (``sk-...``): a GitHub token or an AWS
    key given as an argument was written to disk. The lock file's command line, read by
    whoever finds the directory in use, held it too."""
    import sys

    from turnbudget.eval.run import lock

    code = tmp_path / "keyagent.py"
    code.write_text(AGENT_CODE + "\n\ndef keyed(key):\n    return EpsAgent(0.5)\n")
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    agent = make_agent(f"{code}:keyed:{token}")
    assert token not in _agent_repr(agent)
    out = tmp_path / "run"
    evaluate(MAZE, agent, **SMALL, out=out)
    for path in out.rglob("*"):
        if path.is_file():
            assert token not in path.read_text(errors="replace"), path
    argv = [
        "turnbudget",
        "eval",
        "--agent",
        f"{code}:keyed:{token}",
        f"--agent={code}:keyed:{token}",
        # (argparse's abbreviations of --agent: the lock file showed their arguments)
        "--ag",
        f"{code}:keyed:{token}",
        f"--agen={code}:keyed:{token}",
    ]
    shown = " ".join(lock._without_agent_args(argv))
    assert token not in shown and shown.count(f"{code}:keyed:...") == 4
    assert lock._without_agent_args(["x", "--agent", "oracle:0.1"]) == [
        "x",
        "--agent",
        "oracle:0.1",
    ]
    assert sys.argv  # (the lock reads the process's own)


def test_an_outside_agent_whose_code_changed_is_another_agent(tmp_path):
    code = tmp_path / "myagent.py"
    code.write_text(AGENT_CODE)
    records = []
    for text in (AGENT_CODE, AGENT_CODE + "\n# tuned\n"):
        code.write_text(text)
        sealed = seal(f"{code}:make:0.1")  # (a fresh process: the code as it is now)
        try:
            records.append(repr(sealed))
        finally:
            sealed.close()
    assert records[0] != records[1] and all("make:args sha256:" in r for r in records)


def test_the_librarys_own_agents_are_recorded_alike_by_name_or_by_module():
    """Their reprs say their settings; spelt by module they are the same agent as by name."""
    by_name = make_agent("oracle:0.25")
    by_module = make_agent("turnbudget.agents.baselines:OracleAgent:0.25")
    assert _agent_repr(by_name) == _agent_repr(by_module) == "OracleAgent(epsilon=0.25)"


KEYED_DATACLASS = """
import random
from dataclasses import dataclass


@dataclass
class KeyedAgent:
    api_key: str = ""

    def reset(self, seed=None):
        self._rng = random.Random(seed)

    def act(self, observation, info):
        if self.api_key.startswith("refused"):
            raise RuntimeError(f"the server refused key {self.api_key}")
        return self._rng.choice(info["admissible_actions"])


def make(arg=""):
    return KeyedAgent(api_key=arg)


def make_parsed(arg=""):  # (``api_key=...,other=...``: the factory keeps the key alone)
    return KeyedAgent(**dict(p.split("=", 1) for p in arg.split(",")))
"""


def _evaluate_keyed(tmp_path: Path, attr_args: str, sealed: bool, **kwargs: Any) -> Path:
    """Evaluate the agent ``keyed.py:ATTR:ARGS`` (sealed or not) into ``tmp_path / "run"``;
    the code's path."""
    code = tmp_path / "keyed.py"
    code.write_text(KEYED_DATACLASS)
    spec = f"{code}:{attr_args}"
    agent = seal(spec) if sealed else make_agent(spec)
    try:
        evaluate(MAZE, agent, **SMALL, **kwargs, out=tmp_path / "run")
    finally:
        if sealed:
            agent.close()
    return code


def _assert_written_nowhere(secret: str, run: Path) -> None:
    for path in run.rglob("*"):
        assert secret not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("sealed", [False, True])
def test_an_outside_agent_whose_repr_echoes_its_argument_writes_it_nowhere(tmp_path, sealed):
    """A dataclass agent's repr shows the key it was given (``KeyedAgent(api_key='...')``):
    run.json, the summary and the report held it. And a dataclass is unhashable, so its
    origin was lost: two keys were one run."""
    token = "tok3nV4lue9x"
    code = _evaluate_keyed(tmp_path, f"make:{token}", sealed)
    _assert_written_nowhere(token, tmp_path / "run")
    assert "make:args sha256:" in (tmp_path / "run" / "run.json").read_text()
    with pytest.raises(ValueError, match=r"differs in: agent"):
        evaluate(MAZE, make_agent(f"{code}:make:other-key-0"), **SMALL, out=tmp_path / "run")


@pytest.mark.parametrize("sealed", [False, True])
def test_an_outside_agent_s_error_quoting_its_argument_is_blanked(tmp_path, sealed):
    """Sealed (the CLI's default for outside code), the arguments were registered as a secret
    only in the agent's own process: its error went into episodes.jsonl with the key."""
    token = f"refused-k3yV4lue-{'sealed' if sealed else 'in-process'}"
    with pytest.raises(ValueError, match="failed to run"):  # (every episode: no summary)
        _evaluate_keyed(tmp_path, f"make:{token}", sealed, retries=0)
    assert "the server refused key" in (tmp_path / "run" / "episodes.jsonl").read_text()
    _assert_written_nowhere(token, tmp_path / "run")


@pytest.mark.parametrize("sealed", [False, True])
def test_a_value_parsed_out_of_an_outside_agent_s_arguments_is_blanked(tmp_path, sealed):
    """``make_parsed:api_key=KEY,...``: the factory keeps the key alone, and the agent's repr
    (``KeyedAgent(api_key='KEY')``) went into run.json, the summary and the report: only the
    whole argument string was blanked."""
    token = f"ghp_Q8w2E4r6T8y0Zz{int(sealed)}"
    _evaluate_keyed(tmp_path, f"make_parsed:api_key={token}", sealed)
    assert "KeyedAgent(api_key=" in (tmp_path / "run" / "run.json").read_text()
    _assert_written_nowhere(token, tmp_path / "run")


def test_an_outside_agent_s_parsed_setting_not_named_like_a_key_stays_in_its_record(tmp_path):
    """Every value of 8 characters or more parsed out of the arguments was blanked: the run
    recorded ``model='***'``, not which model it evaluated, and runs recorded before could
    not be resumed."""
    code = tmp_path / "keyed.py"
    code.write_text(KEYED_DATACLASS.replace("api_key: str", "model: str = ''\n    api_key: str"))
    spec = f"{code}:make_parsed:model=gpt-4o-mini-2024,api_key=ghp_KeyValue12345"
    evaluate(MAZE, make_agent(spec), **SMALL, out=tmp_path / "run")
    run = (tmp_path / "run" / "run.json").read_text()
    assert "model='gpt-4o-mini-2024'" in run and "ghp_KeyValue12345" not in run


@pytest.mark.parametrize("sealed", [False, True])
def test_a_key_given_without_a_name_is_blanked_and_the_model_beside_it_kept(tmp_path, sealed):
    """``make_pair:MODEL,KEY``: a key with no name and no ``sk-`` shape (a Gemini key) went
    into run.json, the summary and the report, as the repr ``Pair(model=..., key=...)``."""
    code = tmp_path / "keyed.py"
    code.write_text(
        KEYED_DATACLASS.replace("api_key: str", "model: str = ''\n    api_key: str")
        + "\n\ndef make_pair(arg):\n    model, key = arg.split(',')\n"
        + "    return KeyedAgent(model=model, api_key=key)\n"
    )
    key = f"AIzaSyD3xAmPlEkEy0123456789abcdEFG{int(sealed)}"
    agent = (seal if sealed else make_agent)(f"{code}:make_pair:gemini-2.0-flash,{key}")
    try:
        evaluate(MAZE, agent, **SMALL, out=tmp_path / "run")
    finally:
        if sealed:
            agent.close()
    _assert_written_nowhere(key, tmp_path / "run")
    assert "model='gemini-2.0-flash'" in (tmp_path / "run" / "run.json").read_text()


def test_a_setting_whose_name_holds_a_credential_word_is_no_credential(tmp_path):
    """Argument names were matched by substring: ``tokenizer`` holds "token", so a model's
    name given as its tokenizer was blanked in run.json and in every log line, and runs
    recorded before were refused as another agent."""
    code = tmp_path / "keyed.py"
    code.write_text(
        KEYED_DATACLASS.replace("api_key: str", "tokenizer: str = ''\n    api_key: str")
    )
    spec = f"{code}:make_parsed:tokenizer=Qwen/Qwen2.5-0.5B-Instruct,api_key=ghp_KeyValue12345"
    evaluate(MAZE, make_agent(spec), **SMALL, out=tmp_path / "run")
    run = (tmp_path / "run" / "run.json").read_text()
    assert "tokenizer='Qwen/Qwen2.5-0.5B-Instruct'" in run and "ghp_KeyValue12345" not in run


def test_an_agent_object_s_repr_is_recorded_with_its_secrets_blanked(tmp_path):
    """The Python API: a dataclass agent holding a key and a URL with a password was
    written to run.json as its repr, unredacted (the report's docs say run.json is)."""
    import dataclasses

    from turnbudget.agents import RandomAgent

    @dataclasses.dataclass
    class Hosted(RandomAgent):
        api_key: str = "sk-proj-abcdefghijklmnopqrstuvwx"
        base_url: str = "https://alice:hunter2pass@llm.example/v1"

        def __post_init__(self):
            RandomAgent.__init__(self)

    evaluate(MAZE, Hosted(), **SMALL, out=tmp_path / "run")
    run = (tmp_path / "run" / "run.json").read_text()
    assert "Hosted(" in run
    assert "abcdefghijklmnopqrstuvwx" not in run and "hunter2pass" not in run


@pytest.mark.llm
def test_an_llm_agent_with_other_prompts_or_answer_cap_is_another_agent():
    """ChatAgent's repr left out its templates and its answer cap, LocalChatAgent's its chat
    format and context size: a run resumed with another prompt mixed two runs in one."""
    pytest.importorskip("openai")
    from turnbudget.agents.chat_format import PromptTemplates
    from turnbudget.agents.llm import ChatAgent
    from turnbudget.agents.local_llm import LocalChatAgent

    url = "http://127.0.0.1:9/v1"
    plain = ChatAgent("m", base_url=url)
    assert _agent_repr(plain) == _agent_repr(ChatAgent("m", base_url="http://127.0.0.1:8/v1"))
    others = [
        ChatAgent("m", base_url=url, templates=PromptTemplates(system="Always answer look.")),
        ChatAgent("m", base_url=url, max_answer_bytes=5),
    ]
    assert len({_agent_repr(a) for a in [plain, *others]}) == 3
    local = [LocalChatAgent(), LocalChatAgent(chat_format="chatml"), LocalChatAgent(n_ctx=512)]
    assert len({_agent_repr(a) for a in local}) == 3


_SET_AGENT = """
import sys
from dataclasses import dataclass, field
from turnbudget.agents import RandomAgent
from turnbudget.eval.run.plan import _agent_repr

@dataclass
class Avoiding(RandomAgent):
    avoid: frozenset = frozenset({"look", "inventory", "wait", "examine room", "north", "south"})
    moods: set = field(default_factory=lambda: {"calm", "bold", "wary", "keen", "glum"})
    nested: dict = field(default_factory=lambda: {"k": [frozenset({"a", "b", "c", "d"})]})

print(_agent_repr(Avoiding()))
"""


def test_a_dataclass_agent_holding_sets_is_one_agent_in_every_process():
    """A set's order follows the process's hash seed: the same command, rerun in a new
    process, was refused ("a different configuration (differs in: agent)")."""
    import os
    import subprocess
    import sys

    reprs = {
        subprocess.run(
            [sys.executable, "-c", _SET_AGENT],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
        ).stdout
        for hash_seed in range(6)
    }
    assert len(reprs) == 1, reprs
    assert "avoid=frozenset({'examine room', 'inventory', 'look', 'north', 'south', 'wait'})" in (
        reprs.pop()
    )
    # (a set of numbers is ordered alike in every process: its repr, as runs recorded it)
    assert _agent_repr(frozenset({1, 2, 3, 10, 100, 1000})) == repr(
        frozenset({1, 2, 3, 10, 100, 1000})
    )
