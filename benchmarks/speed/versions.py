"""Run a speed script against several versions of the library, interleaved (before/after tables).

Each round runs the script once per source root (a checkout's top folder, or
``git archive COMMIT turnbudget | tar -x -C DIR``), in a fresh process with
that root first on ``PYTHONPATH``: the script is this tree's, the library
the root's. Rounds alternate the roots, so every version sees the same
neighbours' load. A script taking part accepts ``--json-out PATH`` and writes
its figures there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def run_versions(
    script: str, roots: list[str], rounds: int, argv: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """``{root: [figures of each round]}`` of ``script`` (a path) run with ``argv``."""
    out: dict[str, list[dict[str, Any]]] = {root: [] for root in roots}
    for _ in range(rounds):
        for root in roots:
            with tempfile.TemporaryDirectory() as tmp:
                target = Path(tmp) / "figures.json"
                path = os.pathsep.join(
                    [str(Path(root).resolve()), os.environ.get("PYTHONPATH", "")]
                )
                subprocess.run(
                    [sys.executable, script, *argv, "--json-out", str(target)],
                    env={**os.environ, "PYTHONPATH": path}, check=True, stdout=subprocess.DEVNULL,
                )  # fmt: skip
                out[root].append(json.loads(target.read_text()))
    return out
