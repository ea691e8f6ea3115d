"""Shared fixtures. `llm_server`: a real local LLM server (llm extra), one per test session.

Hypothesis runs without its wall-clock checks (the 200 ms deadline per example, the
"data generation is too slow" health check): a busy machine trips them, not a bug.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("turnbudget", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("turnbudget")


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``llama_cpp.server`` with Gemma 3 270M on a free loopback port, stopped at the end.

    Skips only when the ``llm`` extra is not installed.
    """
    pytest.importorskip("openai")
    pytest.importorskip("llama_cpp.server")
    from turnbudget.agents.local_server import LocalServer

    log = tmp_path_factory.mktemp("llm-server") / "server.log"
    server = LocalServer(log_path=log)
    server.start()
    try:
        yield server
    finally:
        server.stop()
