"""The adapters of the trainer extras, imported without their extra: an ImportError that says
what to install (the openenv and verifiers adapters failed with a bare ModuleNotFoundError,
and PyPI's `openenv` is another package than the openenv-core they need)."""

from __future__ import annotations

import subprocess
import sys

import pytest

_WITHOUT = """
import sys
sys.modules[{package!r}] = None  # (an import of it fails, installed or not)
try:
    import {module}
except ImportError as error:
    print(error)
"""


@pytest.mark.parametrize(
    "module, package, says",
    [
        ("turnbudget.adapters.openenv", "openenv", "pip install -e '.[openenv]'"),
        ("turnbudget.adapters.verifiers", "verifiers", "pip install -e '.[verifiers]'"),
        ("turnbudget.adapters.gem", "gem", "pip install -e '.[gem]'"),
    ],
)
def test_an_adapter_without_its_extra_names_the_extra(module, package, says):
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(module=module, package=package)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert says in done.stdout, done.stdout + done.stderr
