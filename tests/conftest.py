"""Shared fixtures. `llm_server`: a real local LLM server (llm extra), one per test session.

Hypothesis runs without its wall-clock checks (the 200 ms deadline per example, the
"data generation is too slow" health check): a busy machine trips them, not a bug.
Stable-Baselines3 models built without a logger of their own write a log folder per `learn`
call; `SB3_LOGDIR` sends those into one temporary folder, removed when the session ends, and
`TURNBUDGET_TEXTWORLD_CACHE` the TextWorld games tests make without a cache of their own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from turnbudget.envs.textworld.cache import CACHE_ENV_VAR

settings.register_profile("turnbudget", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("turnbudget")


#: Folders this session made for the variables it set (removed when it ends).
_OWNED: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    # Set here, not per test: docs snippets train and play in child processes, which inherit
    # them. The game cache too: a test that made a TextWorld game without a cache fixture of
    # its own wrote it into the user's cache (~/.cache/turnbudget), outside the session.
    for variable, prefix in (("SB3_LOGDIR", "sb3-logs"), (CACHE_ENV_VAR, "textworld-cache")):
        if variable not in os.environ:
            os.environ[variable] = _OWNED[variable] = tempfile.mkdtemp(
                prefix=f"turnbudget-{prefix}-"
            )


def pytest_unconfigure(config: pytest.Config) -> None:
    for variable, folder in _OWNED.items():
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(variable, None)
    _OWNED.clear()


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
