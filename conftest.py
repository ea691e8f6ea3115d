"""Doctest collection (``--doctest-modules`` over ``turnbudget/``) leaves out the modules whose
extra is not installed: importing them would fail, which their own tests skip on cleanly."""

from __future__ import annotations

import importlib.util

#: Module path -> the package its extra brings.
_BEHIND_EXTRAS = {"turnbudget/adapters/gem.py": "gem"}

collect_ignore = [
    path for path, package in _BEHIND_EXTRAS.items() if importlib.util.find_spec(package) is None
]
