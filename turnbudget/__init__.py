"""turnbudget: text-based long-horizon Gymnasium environments with turn budgets.

Importing the package registers every environment under the ``turnbudget/``
namespace, so ``gymnasium.make("turnbudget/Maze-Easy-v0")`` works afterwards.
Heavy optional dependencies (textworld, torch, an LLM client) are imported only
when the feature that needs them is used.
"""

from __future__ import annotations

from turnbudget.registration import register_envs
from turnbudget.wrappers.stack import make

__all__ = ["__version__", "make", "register_envs"]
__version__ = "0.1.0"

register_envs()
