"""`LocalServer`'s command line: the llama_cpp.server settings that matter for speed and memory.

No server is started here (the real one is the ``llm_server`` fixture of the llm suite).
"""

from __future__ import annotations

from turnbudget.agents.local_server import LocalServer


def _flags(server: LocalServer) -> dict[str, str]:
    command = server.command()
    start = command.index("llama_cpp.server") + 1
    return dict(zip(command[start::2], command[start + 1 :: 2]))


def test_the_server_keeps_no_logits_for_prompt_tokens_and_no_prompt_cache_by_default():
    flags = _flags(LocalServer(model_path="m.gguf"))
    assert flags["--logits_all"] == "false"  # the server's default keeps n_tokens x 262k floats
    assert "--cache" not in flags and "--cache_size" not in flags


def test_a_prompt_cache_is_opt_in_and_sized_in_mib():
    flags = _flags(LocalServer(model_path="m.gguf", cache_mb=64))
    assert flags["--cache"] == "true" and flags["--cache_size"] == str(64 * 2**20)
    assert flags["--logits_all"] == "false"
