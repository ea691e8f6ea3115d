"""`LocalServer`'s command line: the llama_cpp.server settings that matter for speed and memory.

No server is started here (the real one is the ``llm_server`` fixture of the llm suite).
"""

from __future__ import annotations

import pytest

from turnbudget.agents.local_server import LocalServer


def _flags(server: LocalServer) -> dict[str, str]:
    command = server.command()
    start = command.index("turnbudget.agents.llama_server") + 1  # llama_cpp.server, patched
    return dict(zip(command[start::2], command[start + 1 :: 2]))


def test_the_server_keeps_no_logits_for_prompt_tokens_and_a_bounded_prompt_cache():
    flags = _flags(LocalServer(model_path="m.gguf"))
    assert flags["--logits_all"] == "false"  # the server's default keeps n_tokens x 262k floats
    assert flags["--cache"] == "true" and flags["--cache_size"] == str(64 * 2**20)


def test_the_prompt_cache_is_sized_in_mib_or_off():
    flags = _flags(LocalServer(model_path="m.gguf", cache_mb=16))
    assert flags["--cache_size"] == str(16 * 2**20) and flags["--logits_all"] == "false"
    flags = _flags(LocalServer(model_path="m.gguf", cache_mb=0))
    assert "--cache" not in flags and "--cache_size" not in flags


@pytest.mark.llm
def test_a_server_with_the_prompt_cache_chooses_as_one_without(llm_server, tmp_path):
    """The patched cache (contexts without logits) changes what is recomputed, not what is
    chosen: 4 episodes in flight against a cached server play as 1 against the session's."""
    from turnbudget.agents import make_agent
    from turnbudget.eval import evaluate

    played = []
    with LocalServer(cache_mb=16, log_path=tmp_path / "server.log") as cached:
        for server, concurrency in ((llm_server, 1), (cached, 4)):
            agent = make_agent(f"llm:{server.model}", base_url=server.base_url, history=2)
            result = evaluate(
                "turnbudget/Maze-Easy-v0", agent, ks=(1,), ts=(3,), n=1, tasks=4,
                concurrency=concurrency,
            )  # fmt: skip
            played.append([(s["episode_id"], s["action"]) for s in result.steps])
    assert played[0] == played[1]


@pytest.mark.llm
def test_a_chat_format_llama_cpp_does_not_know_is_refused_before_a_process_starts(
    tmp_path, monkeypatch
):
    """``chat_format="nope"`` started a server that answered every chat request with a 500
    ("Invalid chat handler"), reported after every retry as a server that did not answer."""
    pytest.importorskip("llama_cpp.server")
    from turnbudget.agents import local_server

    expect = (
        r"Expect `chat_format` to be one of llama.cpp's chat formats \(.*gemma.*\).* got 'nope'"
    )
    with pytest.raises(ValueError, match=expect):
        LocalServer(model_path="m.gguf", chat_format="nope")
    for known in ("gemma", "llama-2", "chat_template.default"):  # (the last: the file's own)
        LocalServer(model_path="m.gguf", chat_format=known)
    # Built where llama_cpp was not found (it is checked then), started where it is:
    monkeypatch.setattr(local_server, "_llama_cpp_installed", lambda: False)
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + bytes(60))
    server = LocalServer(
        model_path=tmp_path / "m.gguf", chat_format="nope", log_path=tmp_path / "log"
    )
    with pytest.raises(ValueError, match=expect):
        server.start()
    assert server.pid is None and not server.running
    assert not (tmp_path / "log").exists()  # (checked before the log is made)


@pytest.mark.llm
def test_serve_local_takes_a_chat_format_and_refuses_one_llama_cpp_does_not_know(tmp_path, capsys):
    """serve-local had no --chat-format: a model other than Gemma could be served only from
    Python. An unknown format is one line, exit 2, before a process starts or a log is made."""
    pytest.importorskip("llama_cpp.server")
    from turnbudget.cli import main

    log = tmp_path / "log"
    for bad, says in (("nope", "got 'nope'"), ("", "to be a non-empty name")):
        assert main(["serve-local", "--port", "0", "--chat-format", bad, "--log", str(log)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("turnbudget serve-local: error: Expect `--chat-format`"), err
        assert says in err and err.count("\n") == 1 and not log.exists()
