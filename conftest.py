"""Collecting the package's doctests: a module that subclasses an optional library's types
(so imports it at the top) is left out when its extra is not installed. Its tests, marked
with the extra's suite, skip then; .ci/run installs the extras and runs them."""

from __future__ import annotations

import importlib.util

#: Package modules -> the library each imports at the top.
_NEEDS = {"turnbudget/adapters/verifiers.py": "verifiers"}

collect_ignore = [
    path for path, library in _NEEDS.items() if importlib.util.find_spec(library) is None
]
