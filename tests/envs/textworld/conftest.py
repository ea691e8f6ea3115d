"""TextWorld tests play the small games shipped in tests/data/textworld (game 0 of
every generated variant), copied to a temporary cache so no test writes there."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("textworld")

DATA = Path(__file__).resolve().parents[2] / "data" / "textworld"


@pytest.fixture(scope="session")
def shipped_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("textworld-cache")
    shutil.copytree(DATA, root, dirs_exist_ok=True)
    return root


@pytest.fixture(autouse=True)
def _use_shipped_cache(shipped_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the default cache at the shipped games for every TextWorld test."""
    monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", os.fspath(shipped_cache))
    return shipped_cache
