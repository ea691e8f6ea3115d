"""Shared fixtures. `llm_server`: a real local LLM server (llm extra), one per test session.

Hypothesis runs without its wall-clock checks (the 200 ms deadline per example, the
"data generation is too slow" health check): a busy machine trips them, not a bug.
Stable-Baselines3 models built without a logger of their own write a log folder per `learn`
call; `SB3_LOGDIR` sends those into one temporary folder, removed when the session ends.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("turnbudget", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("turnbudget")


_SB3_LOGDIR_OWNED: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # Set here, not per test: docs snippets train in child processes, which inherit it.
    if "SB3_LOGDIR" not in os.environ:
        os.environ["SB3_LOGDIR"] = tempfile.mkdtemp(prefix="turnbudget-sb3-logs-")
        _SB3_LOGDIR_OWNED.append(os.environ["SB3_LOGDIR"])


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _SB3_LOGDIR_OWNED:
        shutil.rmtree(folder, ignore_errors=True)
        del os.environ["SB3_LOGDIR"]


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
