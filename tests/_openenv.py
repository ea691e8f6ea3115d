"""What the OpenEnv server tests share: one `EnvServer` subprocess per test module, and a
wait until it counts a number of sessions (events, never a sleep).

Nothing here imports openenv until a server is made: the modules that use it skip first
when the openenv extra is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _faults import wait_until


def module_server(
    tmp_path_factory: pytest.TempPathFactory, name: str, max_sessions: int
) -> Iterator[Any]:
    """A running `EnvServer` logging to a fresh folder ``name``, stopped afterwards (use it
    in a module-scoped fixture: ``yield from module_server(...)``)."""
    from turnbudget.adapters.openenv import EnvServer

    log = tmp_path_factory.mktemp(name) / "server.log"
    with EnvServer(max_sessions=max_sessions, log_path=log) as server:
        yield server


def idle(server: Any, active: int = 0) -> bool:
    """Wait until the server counts ``active`` sessions (a closed client's session ends
    on the server a moment after its socket closes)."""
    return wait_until(lambda: server.sessions().active_sessions == active)
