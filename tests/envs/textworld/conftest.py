"""TextWorld tests play the small games shipped in tests/data/textworld (game 0 of
every generated variant), copied to a temporary cache so no test writes there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("textworld")

from _support import copy_shipped_textworld_games


@pytest.fixture(scope="session")
def shipped_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_shipped_textworld_games(tmp_path_factory.mktemp("textworld-cache"))


@pytest.fixture(autouse=True)
def _use_shipped_cache(shipped_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the default cache at the shipped games for every TextWorld test."""
    monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", os.fspath(shipped_cache))
    return shipped_cache
