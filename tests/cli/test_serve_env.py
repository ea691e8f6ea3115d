"""``turnbudget serve-env`` without its extra, and its argument checks made before importing it
(the server itself: tests/adapters/test_openenv_server.py, the llmrl suite)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _support import HANG_GUARD

# Runs the command with `openenv` unimportable, as in a venv without the extra.
_WITHOUT_OPENENV = "import sys; sys.modules['openenv'] = None; from turnbudget.cli import main; sys.exit(main(sys.argv[1:]))"


def _serve_env(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_OPENENV, "serve-env", *args],
        capture_output=True, text=True, timeout=HANG_GUARD, check=False,
    )  # fmt: skip


def test_without_the_extra_it_says_what_to_install():
    out = _serve_env("--port", "0")
    assert out.returncode == 1
    assert (
        "serve-env: error:" in out.stderr
        and "pip install -e '.[openenv]' in the turnbudget checkout" in out.stderr
    )
    assert out.stderr.count("pip install") == 1  # (the adapter's hint, then the command's)


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_a_port_out_of_range_is_refused(port: str):
    out = _serve_env("--port", port)
    assert out.returncode == 2
    assert f"Expect `--port` to be in 0..65535, got {port}" in out.stderr


@pytest.mark.parametrize("port", ["-1", "65536", "99999"])
def test_serve_local_says_the_port_range_its_flag_takes(port: str):
    """``serve-local --port 99999`` said "an int in 1..65535", where its flag takes 0 (any
    free port), as serve-env's does."""
    out = subprocess.run(
        [sys.executable, "-m", "turnbudget", "serve-local", "--port", port],
        capture_output=True, text=True, timeout=HANG_GUARD, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert (
        out.stderr
        == f"turnbudget serve-local: error: Expect `--port` to be in 0..65535, got {port}\n"
    )


@pytest.mark.parametrize("host", ["", " "])
def test_a_blank_host_is_refused(host: str):
    """``--host "$HOST"`` with HOST unset bound every interface, unannounced, to a server with
    no authentication (and printed ``http://:8000``); serve-local refuses it too."""
    out = _serve_env("--port", "0", "--host", host)
    assert out.returncode == 2
    assert out.stderr == (
        f"turnbudget serve-env: error: Expect `--host` to be an address to bind, got {host!r}\n"
    )


# Runs the command with a stand-in for the adapter whose `serve` fails to bind, as
# `socket.bind` does for a host that does not resolve.
_BIND_FAILS = """
import socket, sys, types
adapter = types.ModuleType("turnbudget.adapters.openenv")
def serve(*args, **kwargs):
    raise socket.gaierror(-2, "Name or service not known")
adapter.serve = serve
sys.modules["turnbudget.adapters.openenv"] = adapter
from turnbudget.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_an_address_it_cannot_bind_is_named_in_the_error():
    """The bare "[Errno -2] Name or service not known" named neither --host nor --port."""
    out = subprocess.run(
        [sys.executable, "-c", _BIND_FAILS, "serve-env", "--host", "nohost.invalid", "--port", "0"],
        capture_output=True, text=True, timeout=HANG_GUARD, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr == (
        "turnbudget serve-env: error: Cannot bind --host 'nohost.invalid' --port 0: "
        "Name or service not known\n"
    )
