"""Check a story file before the interpreter loads it: a bad file is an exception, not an exit.

The Z-machine interpreter under TextWorld (jericho's frotz) runs inside the
Python process and, on a file it cannot read, prints ``Fatal error: Story file
read error`` and calls ``exit(1)``: the whole process ends and no ``except``
can catch it. `check_story_file` therefore

1. validates the header (`validate_story_file`): the file is long enough for
   one, the version byte is a Z-machine version (1-8), the file holds at least
   the length the header declares, and the bytes in that length add up to the
   header's checksum (so a truncated, corrupted or renamed file is caught);
   Glulx files need their magic number and declared length;
2. loads the file once in a forked child process (`probe_story_file`, POSIX
   only), so whatever else makes the interpreter give up ends the child and
   comes back as a `StoryFileError` carrying the interpreter's own message.

A file that passed is remembered by path, size and modification time, so the
checks run once per file and process.
"""

from __future__ import annotations

import os
import signal
import struct
import time
import warnings
from pathlib import Path

__all__ = [
    "PROBE_TIMEOUT",
    "StoryFileError",
    "check_story_file",
    "probe_story_file",
    "validate_story_file",
]

_Z_HEADER = 64
_Z_LENGTH_SCALE = {1: 2, 2: 2, 3: 2, 4: 4, 5: 4, 6: 8, 7: 8, 8: 8}
_GLULX_MAGIC = b"Glul"
_HALTED = "Emulator halted due to runtime error"
_checked: set[tuple[str, int, int]] = set()

#: Seconds a story file may take to load and start in the probe (loading takes milliseconds).
PROBE_TIMEOUT = 30.0


class StoryFileError(ValueError):
    """A story file the interpreter cannot run (truncated, corrupted, not a story file)."""


def validate_story_file(path: str | os.PathLike[str]) -> None:
    """Raise `StoryFileError` unless ``path`` has a sound Z-machine or Glulx header.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "notes.z8"
        >>> _ = path.write_text("not a story file, renamed .z8" * 4)
        >>> try:
        ...     validate_story_file(path)
        ... except StoryFileError as e:
        ...     print(str(e).split(": ", 1)[1])
        its version byte is 110, expected 1-8
    """
    path = Path(path)
    data = path.read_bytes()
    where = f"Story file {str(path)!r}"
    if data[:4] == _GLULX_MAGIC:
        if len(data) < 36:
            raise StoryFileError(f"{where} is too short for a Glulx header ({len(data)} bytes)")
        declared = struct.unpack(">I", data[12:16])[0]
        if len(data) < declared:
            raise StoryFileError(
                f"{where} is truncated: its header declares {declared} bytes, it has {len(data)}"
            )
        return
    if len(data) < _Z_HEADER:
        raise StoryFileError(f"{where} is too short for a Z-machine header ({len(data)} bytes)")
    version = data[0]
    if version not in _Z_LENGTH_SCALE:
        raise StoryFileError(
            f"{where} is not a Z-machine story: its version byte is {version}, expected 1-8"
        )
    declared = struct.unpack(">H", data[0x1A:0x1C])[0] * _Z_LENGTH_SCALE[version]
    if declared and len(data) < declared:
        raise StoryFileError(
            f"{where} is truncated: its header declares {declared} bytes, it has {len(data)}"
        )
    if declared and declared < _Z_HEADER:
        raise StoryFileError(f"{where} declares an impossible length of {declared} bytes")
    checksum = struct.unpack(">H", data[0x1C:0x1E])[0]
    if declared and checksum and sum(data[_Z_HEADER:declared]) % 0x10000 != checksum:
        raise StoryFileError(f"{where} is corrupted: its checksum does not match its header")


def probe_story_file(path: str | os.PathLike[str], timeout: float | None = None) -> None:
    """Load ``path`` in the interpreter in a forked child; raise `StoryFileError` if it dies.

    A child that has not finished loading after ``timeout`` seconds (default:
    `PROBE_TIMEOUT`) is killed and reported the same way: a corrupted game can
    send the interpreter into an endless loop as well as end it. Does nothing where ``os.fork`` is unavailable
    (the header check still ran).
    """
    if not hasattr(os, "fork"):
        return
    import jericho  # imported before forking: the child must not import anything

    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # Python >= 3.12 warns about forking a threaded process; the child only
        # runs the interpreter's C code and exits, taking no lock another thread may hold.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child: report through the pipe, never return into the caller's code
        code = 0
        try:
            os.dup2(write_end, 1)
            os.dup2(write_end, 2)
            game = jericho.FrotzEnv(os.fspath(path))
            observation = game.reset()[0] + game.step("look")[0]
            if _HALTED in observation:
                os.write(write_end, _HALTED.encode())
                code = 4
        except BaseException as e:
            os.write(write_end, repr(e).encode()[:1000])
            code = 3
        os._exit(code)
    os.close(write_end)
    timeout = PROBE_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_end)
        raise StoryFileError(
            f"The interpreter did not finish loading story file {str(path)!r} in {timeout:g} s"
        )
    os.set_blocking(read_end, False)
    with os.fdopen(read_end, "rb") as pipe:
        output = (pipe.read() or b"").decode("utf-8", "replace")
    if os.waitstatus_to_exitcode(done[1]) != 0:
        message = " ".join(output.split())[-300:] or f"exit status {done[1]}"
        raise StoryFileError(f"The interpreter cannot run story file {str(path)!r}: {message}")


def check_story_file(path: str | os.PathLike[str]) -> None:
    """`validate_story_file`, then `probe_story_file` (Z-machine files), once per file version."""
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    if key in _checked:
        return
    validate_story_file(path)
    with open(path, "rb") as f:
        if f.read(4) != _GLULX_MAGIC:  # jericho runs Z-machine files only
            probe_story_file(path)
    _checked.add(key)
