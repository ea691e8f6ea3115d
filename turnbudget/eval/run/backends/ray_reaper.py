"""Stop a local Ray instance's processes once the process that started it is gone.

Ray ties its head processes (GCS, raylet, ...) to the driver that started a
local instance, but when that driver is SIGKILLed (an OOM kill, ``kill -9``, a
CI timeout), the raylet's own children (its dashboard and runtime-env agents,
and actors busy in a task) outlive it for good. `RayBackend` therefore starts
this script next to an instance it owns::

    python ray_reaper.py SESSION_DIR RAY_DIR

in a session of its own (a signal to the driver's process group leaves it
alone), with a pipe from the driver on stdin. When the pipe closes (the driver
closed it after ``ray.shutdown()``, or died), it SIGKILLs every process left
of that instance: a Ray process (titled ``ray::...`` or run from ``RAY_DIR``)
holding a file open under ``SESSION_DIR``, which is unique to the instance.
Nothing else is touched: not the driver, not another instance, not a user's
``tail -f`` on the logs. Linux only (it reads ``/proc``); it uses the standard
library alone, so it starts fast and imports neither Ray nor turnbudget.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

__all__ = ["instance_processes", "main", "reap"]

#: Rounds of kills (a process spawned while its parent was dying shows up in the next).
ROUNDS = 10


def instance_processes(session_dir: str, ray_dir: str, spare: set[int]) -> list[int]:
    """The ids of the live Ray processes that hold a file under ``session_dir``."""
    session = os.path.realpath(session_dir) + os.sep
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spare:
            continue
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to read
            with open(f"/proc/{name}/cmdline", "rb") as f:
                command = f.read().decode(errors="replace")
            if not (command.startswith("ray::") or ray_dir in command):
                continue
            for fd in os.listdir(f"/proc/{name}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{name}/fd/{fd}").startswith(session):
                        found.append(int(name))
                        break
    return found


def reap(session_dir: str, ray_dir: str, spare: set[int]) -> None:
    """SIGKILL the instance's processes (`instance_processes`), in rounds until none is left."""
    for _ in range(ROUNDS):
        left = instance_processes(session_dir, ray_dir, spare)
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def main(argv: list[str]) -> None:
    session_dir, ray_dir = argv
    spare = {os.getpid(), os.getppid()}  # never the driver, even one that closed the pipe
    while sys.stdin.buffer.read(1 << 16):  # EOF: the driver is done or dead
        pass
    reap(session_dir, ray_dir, spare)


if __name__ == "__main__":
    main(sys.argv[1:])
