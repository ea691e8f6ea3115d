"""A server that echoes the API key in its *reply* (not an error): the key reaches no file.

The reply's own words become the command when they match no admissible command
(``--parse strict``, or a lenient parse that finds nothing): that command is played and
recorded as the step's ``action`` (and a probe's ``action``), so `parse_command` blanks
every secret in it before the env or a record sees it, and the record shows the command
that was really played.

Marker ``llm``: needs the ``openai`` client (the llm extra), not a model.
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from _fake_openai import FakeServer, as_json, reply_body

from turnbudget.agents.chat_format import parse_command
from turnbudget.agents.secrets import remember
from turnbudget.records import STEPS_FILE, read_jsonl

pytestmark = pytest.mark.llm
pytest.importorskip("openai")

ENV = "turnbudget/Maze-Easy-v0"
KEY_ENV = "TURNBUDGET_TEST_ECHO_KEY"
# One key no shape rule knows, one that has the shape of an OpenAI project key.
KEYS = ["Zq8vK2mXr7TpLw4Nd9BcHfJsEcho", "sk-proj-Echo7Qm2Wx9Lr4Tz8Kp3Vb"]


def _echo_key(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> tuple[int, str, bytes]:
    """A reply that is the key the request was sent with (a hostile or broken server)."""
    sent = handler.headers.get("Authorization", "").removeprefix("Bearer ")
    return as_json(reply_body(f"go {sent}"))


def _assert_key_nowhere(key: str, root: Path) -> None:
    forms = [key.encode(), key[:12].encode()]
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for form in forms:
                assert form not in data, f"{form!r} leaked into {path}"


@pytest.mark.parametrize("parse", ["strict", "lenient"])
@pytest.mark.parametrize("key", KEYS, ids=["no-shape", "sk-proj"])
def test_eval_records_no_echoed_key_in_actions(key, parse, tmp_path, monkeypatch):
    from turnbudget.cli import main

    monkeypatch.setenv(KEY_ENV, key)
    out = tmp_path / "run"
    with FakeServer(_echo_key) as server:
        argv = ["eval", "--env", ENV, "--agent", "llm:fake", "--base-url", server.url(),
                "--api-key-env", KEY_ENV, "--constrain", "none", "--parse", parse,
                "--k", "1", "--t", "3", "--tasks", "2", "--out", str(out), "--no-plots",
                "--quiet"]  # fmt: skip
        monkeypatch.setattr(sys, "argv", ["turnbudget", *argv])
        assert main(argv) == 0
    assert server.chat_requests > 0  # the key really went out and came back
    steps = read_jsonl(out / STEPS_FILE)[0]
    assert steps and all(s["agent"]["reply"] == "go ***" for s in steps)
    own = [s["action"] for s in steps if s["agent"]["parse"] == "invalid"]  # the reply's words
    assert own and all(a == "go ***" for a in own)  # what was played, blanked
    _assert_key_nowhere(key, tmp_path)


@pytest.mark.parametrize("key", KEYS, ids=["no-shape", "sk-proj"])
def test_probe_records_no_echoed_key_in_actions(key, tmp_path, monkeypatch):
    from turnbudget.cli import main
    from turnbudget.eval.probes.run import PROBES_FILE

    monkeypatch.setenv(KEY_ENV, key)
    out = tmp_path / "probe"
    with FakeServer(_echo_key) as server:
        argv = ["probe", "--env", ENV, "--agent", "llm:fake", "--base-url", server.url(),
                "--api-key-env", KEY_ENV, "--constrain", "none", "--parse", "strict",
                "--tasks", "2", "--prefixes", "0,0.5", "--out", str(out), "--quiet"]  # fmt: skip
        monkeypatch.setattr(sys, "argv", ["turnbudget", *argv])
        assert main(argv) == 0
    assert server.chat_requests > 0
    records = read_jsonl(out / PROBES_FILE)[0]
    actions = [r["action"] for r in records if r.get("agent") == "llm-fake" and "action" in r]
    assert actions and all(a == "go ***" for a in actions)  # strict: the reply's own words
    _assert_key_nowhere(key, tmp_path)


def test_a_command_from_the_replys_own_words_is_blanked_before_it_is_cut():
    key = "Kx7Lw2Qm9Rt4Vz8Np3Bd6Hj1Echo"
    remember(key)
    reply = "x" * 190 + key  # the 200-character cap would cut the key in half
    for mode in ("strict", "lenient"):
        command, outcome = parse_command(reply, ["look"], mode)
        assert outcome == "invalid" and key[:8] not in command and command.endswith("***")
    assert parse_command(f"say {key}", []) == ("say ***", "free")
    # An admissible command is the env's text, played as the env wrote it.
    assert parse_command("give bearer bonds", ["give bearer bonds"], "strict").command == (
        "give bearer bonds"
    )
