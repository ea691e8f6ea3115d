"""Collection of the package's modules (doctests): a module behind an extra is collected only
where that extra is installed.

Such a module imports its framework at module level (its classes subclass the framework's),
and ``--doctest-modules`` imports every module of ``turnbudget/``; without this, a venv
without the extra (CI's first run, ``.[dev]`` only) fails at collection. Their tests are
under their suite's marker (``llmrl``) and skip on their own when the extra is missing.
"""

from __future__ import annotations

import importlib.util

# module (relative to this folder) -> the package its extra installs
_BEHIND_EXTRAS = {
    "turnbudget/adapters/openenv.py": "openenv",
    "turnbudget/adapters/verifiers.py": "verifiers",
    "turnbudget/adapters/gem.py": "gem",
}

collect_ignore = [
    path for path, package in _BEHIND_EXTRAS.items() if importlib.util.find_spec(package) is None
]
