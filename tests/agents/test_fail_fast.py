"""Wrong turns fail fast, once, with the fix in the message (issue 25).

A missing extra is named when the agent is built (not once per episode), a
server that is down is found before the first episode (not after every
episode's retries), and a run refused before it starts leaves no empty
output directory.
"""

from __future__ import annotations

import socket

import pytest

from turnbudget.eval import evaluate

ENV = "turnbudget/Maze-Easy-v0"
SMALL = dict(ks=(1,), ts=(3,), tasks=2, n=1)


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: a connect is refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_run_leaves_no_empty_output_directory(tmp_path):
    fresh = tmp_path / "runs" / "nope"
    with pytest.raises(ValueError, match="Cannot make"):
        evaluate("turnbudget/Nope-v0", "random", out=fresh, **SMALL)
    assert not (tmp_path / "runs").exists()
    existing = tmp_path / "mine"
    existing.mkdir()
    with pytest.raises(ValueError, match="Cannot make"):
        evaluate("turnbudget/Nope-v0", "random", out=existing, **SMALL)
    assert existing.is_dir()  # a folder the user made is never removed
