"""The layer contracts in pyproject.toml hold, and the checker catches an import that points up."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from _support import HANG_GUARD

REPO = Path(__file__).resolve().parents[1]
LINT = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(no_cache=True, no_logo=True))"
)


def lint(root: Path) -> subprocess.CompletedProcess:
    """Run import-linter on the package under ``root`` with ``root``'s pyproject.toml."""
    return subprocess.run(
        [sys.executable, "-c", LINT], cwd=root, capture_output=True, text=True, timeout=HANG_GUARD
    )


def test_the_package_keeps_its_layers():
    out = lint(REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 2 kept, 0 broken." in out.stdout


def test_a_wrapper_importing_the_evaluator_breaks_the_contract(tmp_path):
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    shutil.copytree(REPO / "turnbudget", tmp_path / "turnbudget",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    module = tmp_path / "turnbudget" / "wrappers" / "turn_budget.py"
    module.write_text(module.read_text() + "\nfrom turnbudget.eval import estimator  # noqa\n")
    out = lint(tmp_path)
    assert out.returncode == 1
    assert "turnbudget.wrappers is not allowed to import turnbudget.eval" in out.stdout
    assert "turnbudget.wrappers.turn_budget -> turnbudget.eval" in out.stdout


def test_evaluation_and_training_stay_apart(tmp_path):
    """eval and train share a layer as independent siblings: neither may import the other."""
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    shutil.copytree(REPO / "turnbudget", tmp_path / "turnbudget",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    module = tmp_path / "turnbudget" / "eval" / "estimator.py"
    module.write_text(module.read_text() + "\nfrom turnbudget.train import config  # noqa\n")
    out = lint(tmp_path)
    assert out.returncode == 1
    assert "turnbudget.eval is not allowed to import turnbudget.train" in out.stdout


def _copy(tmp_path: Path) -> Path:
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    shutil.copytree(REPO / "turnbudget", tmp_path / "turnbudget",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return tmp_path / "turnbudget"


def test_running_importing_a_report_breaks_the_eval_wings(tmp_path):
    """Inside eval, running never depends on reporting (evaluate returns results and writes
    records; reports are the caller's)."""
    module = _copy(tmp_path) / "eval" / "run" / "evaluate.py"
    module.write_text(
        module.read_text() + "\nfrom turnbudget.eval.report import markdown  # noqa\n"
    )
    out = lint(tmp_path)
    assert out.returncode == 1
    assert "turnbudget.eval.run is not allowed to import turnbudget.eval.report" in out.stdout


def test_records_importing_a_wrapper_breaks_the_layers(tmp_path):
    """The record format sits below the wrappers that write it."""
    module = _copy(tmp_path) / "records" / "schema.py"
    module.write_text(
        module.read_text() + "\nfrom turnbudget.wrappers import turn_budget  # noqa\n"
    )
    out = lint(tmp_path)
    assert out.returncode == 1
    assert "turnbudget.records is not allowed to import turnbudget.wrappers" in out.stdout
