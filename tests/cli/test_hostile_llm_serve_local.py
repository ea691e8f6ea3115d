"""``turnbudget serve-local`` leaves no server behind when its terminal closes, or when it is
killed outright.

The server runs in its own session (so ``stop()`` can end its whole process group),
which means a closed terminal's SIGHUP reaches only ``serve-local``: its default end
left the llama.cpp server running, orphaned, holding its port and the model's memory.

Marker ``llm``: needs the llm extra (llama-cpp-python's server and the Gemma model).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from _faults import wait_until
from _support import HANG_GUARD

pytestmark = pytest.mark.llm
pytest.importorskip("llama_cpp.server")

REPO = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _serve_local(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """``serve-local`` once its server answers, and the server's pid."""
    command = [sys.executable, "-m", "turnbudget", "serve-local", "--port", "0",
               "--log", str(tmp_path / "server.log")]  # fmt: skip
    serve = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    line = serve.stdout.readline()  # printed once the server answers
    found = re.search(r"\(pid (\d+)\)", line)
    if not found:
        serve.kill()
        pytest.fail(f"serve-local did not start: {line!r} {serve.stderr.read()!r}")
    return serve, int(found.group(1))


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="SIGHUP is POSIX")
def test_a_hangup_stops_the_server_it_started(tmp_path):
    serve, pid = _serve_local(tmp_path)
    try:
        assert _alive(pid)
        serve.send_signal(signal.SIGHUP)
        assert serve.wait(HANG_GUARD) == 0
        assert "stopped" in serve.stdout.read()
        assert not _alive(pid)  # `stop()` waited for it before serve-local exited
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)


@pytest.mark.timeout(600, method="thread")  # a guard: the wait below has no deadline
def test_a_killed_serve_local_leaves_no_server_running(tmp_path):
    """SIGKILL runs no handler of serve-local's: the server notices its parent is gone."""
    serve, pid = _serve_local(tmp_path)
    try:
        serve.kill()
        serve.wait()
        wait_until(lambda: not _alive(pid))  # it ends by itself, or the guard fails the test
    finally:
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
