"""turnbudget: text-based long-horizon Gymnasium environments with turn budgets.

Importing the package registers every environment under the ``turnbudget/``
namespace, so ``gymnasium.make("turnbudget/Maze-Easy-v0")`` works afterwards.
Heavy optional dependencies (textworld, torch, an LLM client) are imported only
when the feature that needs them is used.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

__all__ = ["__version__", "make", "register_envs"]
__version__ = "0.1.0"


def _started_as_the_command() -> bool:
    """Whether this process is the ``turnbudget`` command: its script, or ``python -m
    turnbudget`` (or ``turnbudget.cli``), whose module ``sys.orig_argv`` names just before
    the command's arguments while it is found (``sys.argv[0]`` is ``-m`` meanwhile)."""
    if not sys.argv:
        return False
    if sys.argv[0] != "-m":
        return Path(sys.argv[0]).stem in ("turnbudget", "turnbudget-script")
    if len(sys.orig_argv) < len(sys.argv):  # (an embedding program's own argv)
        return False
    given = sys.orig_argv[-len(sys.argv)]  # ("turnbudget", or "-mturnbudget", "-Im...")
    module = re.sub(r"^-[^m]*m", "", given) if given.startswith("-") else given
    return module.partition(".")[0] == "turnbudget"


try:
    from turnbudget.registration import register_envs
    from turnbudget.wrappers.stack import make

    register_envs()
except KeyboardInterrupt:
    # Ctrl-C in the command's first fraction of a second, while it imports the library, came
    # before its own handler (`turnbudget.cli.main`) and printed a traceback of whatever was
    # loading: one line and 130 instead, as the handler says it. (A program that imports the
    # library gets its KeyboardInterrupt as ever.)
    if not _started_as_the_command():
        raise
    print("turnbudget: interrupted", file=sys.stderr)
    raise SystemExit(130) from None  # (`turnbudget.cli.INTERRUPTED`)
