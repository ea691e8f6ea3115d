"""Check a story file before the interpreter loads it: a bad file is an exception, not an exit.

The Z-machine interpreter under TextWorld (jericho's frotz) runs inside the
Python process and, on a file it cannot read, prints ``Fatal error: Story file
read error`` and calls ``exit(1)``: the whole process ends and no ``except``
can catch it. `check_story_file` therefore

1. validates the header (`validate_story_file`): the file holds the format
   its name promises (a ``.ulx`` is Glulx, anything else Z-machine: a Glulx
   file named ``.z8`` is refused, not handed to the Z-machine interpreter), is
   no larger than that format allows (`max_story_bytes`: checked on the size
   alone, before anything is read), is long enough for a header, the version
   byte is a Z-machine version (1-8), the file holds at least the length the
   header declares, and the bytes in that length add up to the header's
   checksum (so a truncated, corrupted or renamed file is caught); Glulx files
   need their magic number and declared length;
2. loads every Z-machine file once in a forked child process
   (`probe_story_file`, POSIX only), so whatever else makes the interpreter
   give up ends the child and comes back as a `StoryFileError` carrying the
   interpreter's own message.

The env then runs the interpreter in a process of its own as well
(`turnbudget.envs.textworld.interpreter`), so a story that fails only later in
the game cannot end or hang the caller either.

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
    "MAX_GLULX_BYTES",
    "PROBE_TIMEOUT",
    "StoryFileError",
    "check_story_file",
    "max_story_bytes",
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

#: The largest Glulx story file accepted (TextWorld < 1.7 only; its games are well under 1 MiB).
MAX_GLULX_BYTES = 64 * 2**20


class StoryFileError(ValueError):
    """A story file the interpreter cannot run (truncated, corrupted, not a story file)."""


def max_story_bytes(version: int) -> int:
    """The largest file a Z-machine story of ``version`` can be: what its header can declare.

    Example:
        >>> max_story_bytes(3), max_story_bytes(5), max_story_bytes(8)
        (131072, 262144, 524288)
    """
    return _Z_LENGTH_SCALE[version] * 0x10000


def _is_glulx_name(path: Path) -> bool:
    """TextWorld (< 1.7) gives ``.ulx`` files to a Glulx interpreter, all others to jericho."""
    return path.suffix.lower() == ".ulx"


def validate_story_file(path: str | os.PathLike[str]) -> None:
    """Raise `StoryFileError` unless ``path`` has a sound header for the format its name says.

    A ``.ulx`` file must be Glulx (at most `MAX_GLULX_BYTES`), any other a
    Z-machine story (at most `max_story_bytes` of its version); the size is
    checked before the file is read.

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
    where = f"Story file {str(path)!r}"
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(_Z_HEADER)
    if _is_glulx_name(path):
        if head[:4] != _GLULX_MAGIC:
            raise StoryFileError(
                f"{where} is not a Glulx story: expect it to begin with {_GLULX_MAGIC!r}, "
                f"got {head[:4]!r}"
            )
        if size > MAX_GLULX_BYTES:
            raise StoryFileError(
                f"{where} is {size} bytes: expect a Glulx story of at most "
                f"{MAX_GLULX_BYTES} bytes (MAX_GLULX_BYTES)"
            )
        if size < 36:
            raise StoryFileError(f"{where} is too short for a Glulx header ({size} bytes)")
        declared = struct.unpack(">I", head[12:16])[0]
        if size < declared:
            raise StoryFileError(
                f"{where} is truncated: its header declares {declared} bytes, it has {size}"
            )
        return
    if head[:4] == _GLULX_MAGIC:
        raise StoryFileError(
            f"{where} is a Glulx story (it begins with {_GLULX_MAGIC!r}): expect a Z-machine "
            "story (version byte 1-8) in a file not named .ulx (a Glulx game needs the .ulx "
            "name, and TextWorld < 1.7)"
        )
    if size < _Z_HEADER:
        raise StoryFileError(f"{where} is too short for a Z-machine header ({size} bytes)")
    version = head[0]
    if version not in _Z_LENGTH_SCALE:
        raise StoryFileError(
            f"{where} is not a Z-machine story: its version byte is {version}, expected 1-8"
        )
    if size > max_story_bytes(version):
        raise StoryFileError(
            f"{where} is {size} bytes: a version-{version} Z-machine story is at most "
            f"{max_story_bytes(version)} bytes"
        )
    data = path.read_bytes()
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


#: The longest the check's child may run by its own clock (seconds; about three years).
_LONGEST_ALARM = 1e8


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

    timeout = PROBE_TIMEOUT if timeout is None else timeout
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # Python >= 3.12 warns about forking a threaded process; the child only
        # runs the interpreter's C code and exits, taking no lock another thread may hold.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child: report through the pipe, never return into the caller's code
        code = 0
        try:
            # Ends the child by itself past the timeout, even when the parent that would
            # have killed it is gone (the default action works while frotz loops in C).
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            # (capped: an infinite or huge timeout overflowed the timer, and the story was
            # blamed for it)
            signal.setitimer(signal.ITIMER_REAL, min(timeout + 1.0, _LONGEST_ALARM))
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
    deadline = time.monotonic() + timeout
    done: tuple[int, int] = (0, 0)
    try:
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:  # a child still loading (timed out, or the wait was interrupted) is killed
        if done[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
    if done[0] == 0:
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
    """`validate_story_file`, then `probe_story_file` (every file not named as Glulx: jericho,
    the Z-machine interpreter, loads those), once per file version."""
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    if key in _checked:
        return
    validate_story_file(path)
    if not _is_glulx_name(Path(path)):
        probe_story_file(path)
    _checked.add(key)
