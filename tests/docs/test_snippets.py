"""Every code block in the README and the documentation runs as written.

Conventions (markers, chains, skips): `tests/_doc_blocks.py`, also in docs/contributing.md.
Each chain of Python blocks runs in a fresh process, each runnable bash block in
bash, both in a scratch folder, with this checkout's ``turnbudget`` first on the
path and the shipped TextWorld games (tests/data/textworld) as the game cache. A failure names the page and line of the block that failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _doc_blocks import REPO, Chain, chains, pages
from _support import HANG_GUARD, copy_shipped_textworld_games

RUNNER = Path(__file__).with_name("_run_chain.py")


def _params() -> list:
    params = []
    for page in pages():
        for chain in chains(page):
            marks = []
            if "skip" in chain.head.markers:
                marks.append(pytest.mark.skip(reason=chain.head.markers["skip"]))
            if "suite" in chain.head.markers:
                marks.append(getattr(pytest.mark, chain.head.markers["suite"]))
            params.append(pytest.param(chain, id=chain.head.where, marks=marks))
    return params


@pytest.fixture(scope="session")
def textworld_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped TextWorld games (game 0 of every variant) as the blocks' game cache: a
    block that makes a TextWorld env plays without generating its game (seconds each)."""
    return copy_shipped_textworld_games(tmp_path_factory.mktemp("textworld-cache"))


def _env(textworld_cache: Path) -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", TURNBUDGET_TEXTWORLD_CACHE=str(textworld_cache))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _scratch(tmp_path: Path) -> Path:
    """A working folder like the repository root: its top level linked, ``.venv`` this venv."""
    for entry in REPO.iterdir():
        if entry.name not in {".git", ".venv", "runs", "site"}:
            (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / ".venv").symlink_to(sys.prefix)
    return tmp_path


@pytest.mark.parametrize("chain", _params())
def test_block_runs(chain: Chain, tmp_path: Path, textworld_cache: Path) -> None:
    cwd = _scratch(tmp_path)
    if chain.lang == "bash":
        if not (Path(sys.prefix) / "bin" / "turnbudget").exists():
            pytest.skip("needs a venv with turnbudget installed (its `turnbudget` script)")
        out = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", chain.head.code],
            cwd=cwd, env=_env(textworld_cache), capture_output=True, text=True, timeout=HANG_GUARD, check=False,
        )  # fmt: skip
    else:
        blocks = [[str(b.page), b.line, b.code, b.markers.get("raises")] for b in chain.blocks]
        out = subprocess.run(
            [sys.executable, str(RUNNER)], input=json.dumps(blocks),
            cwd=cwd, env=_env(textworld_cache), capture_output=True, text=True, timeout=HANG_GUARD, check=False,
        )  # fmt: skip
    assert out.returncode == 0, (
        f"{chain.head.where} failed:\n{out.stdout[-2000:]}{out.stderr[-4000:]}"
    )


def _python_chains() -> list:
    return [
        pytest.param(chain, id=chain.head.where)
        for page in pages()
        for chain in chains(page)
        if chain.lang == "python"
    ]


@pytest.mark.parametrize("chain", _python_chains())
def test_every_python_block_names_only_what_it_defines_or_imports(chain: Chain) -> None:
    """Skipped blocks too (a GPU, a network install, a file of your own): a reader copies a
    block alone, and two skipped blocks used a name they never imported (`gym`,
    `check_group_seeding`). Pyflakes' undefined names, through ruff (in the dev extra)."""
    code = "\n".join(block.code for block in chain.blocks)
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F821",
         "--output-format", "concise", "--stdin-filename", "block.py", "-"],
        input=code, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{chain.head.where}:\n{done.stdout}{done.stderr}"
