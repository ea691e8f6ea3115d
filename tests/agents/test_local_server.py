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


def test_the_server_keeps_no_logits_for_prompt_tokens_and_no_prompt_cache_by_default():
    flags = _flags(LocalServer(model_path="m.gguf"))
    assert flags["--logits_all"] == "false"  # the server's default keeps n_tokens x 262k floats
    assert "--cache" not in flags and "--cache_size" not in flags


def test_a_prompt_cache_is_opt_in_and_sized_in_mib():
    flags = _flags(LocalServer(model_path="m.gguf", cache_mb=64))
    assert flags["--cache"] == "true" and flags["--cache_size"] == str(64 * 2**20)
    assert flags["--logits_all"] == "false"


@pytest.mark.llm
def test_a_server_with_the_prompt_cache_chooses_as_one_without(llm_server, tmp_path):
    """The patched cache (contexts without logits) changes what is recomputed, not what is
    chosen: 4 episodes in flight against a cached server play as against the plain one."""
    from turnbudget.agents import make_agent
    from turnbudget.eval import evaluate

    played = []
    with LocalServer(cache_mb=64, log_path=tmp_path / "server.log") as cached:
        for server, concurrency in ((llm_server, 1), (cached, 4)):
            agent = make_agent(f"llm:{server.model}", base_url=server.base_url, history=2)
            result = evaluate(
                "turnbudget/Maze-Easy-v0", agent, ks=(1,), ts=(3,), n=1, tasks=4,
                concurrency=concurrency,
            )  # fmt: skip
            played.append([(s["episode_id"], s["action"]) for s in result.steps])
    assert played[0] == played[1]
