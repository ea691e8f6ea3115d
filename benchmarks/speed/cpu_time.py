"""CPU time of this process and of its live child processes (imported by the scripts here).

TextWorld envs run their interpreter in a child process, so ``time.process_time()``
alone misses part of a step's work. Children are read from Linux's /proc; where
there is none, they count as 0.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["children_cpu_seconds", "cpu_seconds"]


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's live children (not of exited ones)."""
    total = 0.0
    for listing in Path("/proc/self/task").glob("*/children"):
        for pid in listing.read_text().split():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:  # it ended meanwhile
                continue
            fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def cpu_seconds() -> float:
    """CPU seconds of this process and of its live children."""
    return time.process_time() + children_cpu_seconds()
