"""Standard streams that are closed or whose reader has gone end a command quietly.

``play`` with stdin or stdout closed (``<&-``, ``>&-``: Python sets the stream to None) ends
as at the end of input; it raised ``RuntimeError: input(): lost sys.stdin``. Output piped
into a reader that stops early (``turnbudget list | head -1``) ends with `BROKEN_PIPE`, as
SIGPIPE would; it was ``error: [Errno 32] Broken pipe`` and exit code 2, or, with buffered
output, a BrokenPipeError at exit and code 120.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _support import HANG_GUARD

from turnbudget.cli import BROKEN_PIPE, main


@pytest.mark.parametrize("stream", ["stdin", "stdout"])
def test_play_ends_as_at_end_of_input_when_a_stream_is_closed(monkeypatch, capsys, stream):
    monkeypatch.setattr(sys, stream, None)
    assert main(["play", "Maze-Easy-v0", "--seed", "0"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(os.name != "posix", reason="a pipe with no reader is POSIX's EPIPE")
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_output_into_a_pipe_nobody_reads_ends_quietly_with_141(buffered):
    read_end, write_end = os.pipe()
    os.close(read_end)  # (before the command starts: its first write fails, whatever its pace)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:  # (each print is a write: the error comes inside the command)
        env["PYTHONUNBUFFERED"] = "1"
    try:
        out = subprocess.run(
            [sys.executable, "-m", "turnbudget", "list", "--seeds", "0", "--family", "Maze"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, env=env, timeout=HANG_GUARD,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert (out.returncode, out.stderr) == (BROKEN_PIPE, "")
    assert BROKEN_PIPE == 141  # (128 + SIGPIPE: what a shell reports)
