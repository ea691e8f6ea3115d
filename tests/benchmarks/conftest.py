"""The smoke tests of the benchmark scripts, one file per script (``test_<script>.py``).

Research scripts live in ``benchmarks/``, speed scripts in ``benchmarks/speed/``.
`load_script` imports one as its own run does (its folder on ``sys.path``, so it
finds the helpers beside it); `shipped_cache` is the TextWorld games shipped in
``tests/data``, copied to a temporary cache.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from _support import copy_shipped_textworld_games


@pytest.fixture
def load_script(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], ModuleType]:
    """Import a benchmark script as a module named after its file."""

    def load(path: Path) -> ModuleType:
        monkeypatch.syspath_prepend(str(path.parent))  # the helpers beside it
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, path.stem, module)  # dataclasses need it
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def _shipped_games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_shipped_textworld_games(tmp_path_factory.mktemp("textworld-cache"))


@pytest.fixture
def shipped_cache(_shipped_games: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped TextWorld games, also the default cache (nothing is generated)."""
    pytest.importorskip("textworld")
    monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", os.fspath(_shipped_games))
    return _shipped_games
