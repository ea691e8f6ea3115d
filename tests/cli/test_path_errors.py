"""A path the command line cannot use (an unwritable ``--out``, a folder where a file
should be) is one line naming the path and the reason, with exit code 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import turnbudget
from turnbudget.cli import main

MAZE = "turnbudget/Maze-Easy-v0"
EVAL = ["eval", "--env", MAZE, "--agent", "random", "--k", "1", "--t", "4", "--tasks", "1",
        "--quiet", "--no-plots"]  # fmt: skip
REPO = Path(turnbudget.__file__).resolve().parents[1]  # the package under test


@pytest.mark.parametrize(
    "name", ["run.json", "episodes.jsonl", "steps.jsonl", "report.md", "summary.json"]
)
def test_eval_names_the_path_it_cannot_write(tmp_path, capsys, name):
    out = tmp_path / "run"
    (out / name).mkdir(parents=True)  # a folder where the run writes a file
    assert main([*EVAL, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"turnbudget eval: error: Cannot use {str(out / name)!r}: Is a directory\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_eval_into_a_read_only_folder(tmp_path, capsys):
    tmp_path.chmod(0o555)
    try:
        assert main([*EVAL, "--out", str(tmp_path)]) == 2
    finally:
        tmp_path.chmod(0o755)
    err = capsys.readouterr().err
    assert err.startswith("turnbudget eval: error: Cannot use ") and "Permission denied" in err


def test_report_names_the_path_it_cannot_write(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*EVAL, "--out", str(out)]) == 0
    (out / "summary.json").unlink()
    (out / "summary.json").mkdir()
    capsys.readouterr()
    assert main(["report", str(out), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"turnbudget report: error: Cannot use {str(out / 'summary.json')!r}: Is a directory\n"
    )


def test_the_process_prints_no_traceback(tmp_path):
    out = tmp_path / ("x" * 300)  # a name too long for the file system
    proc = subprocess.run(
        [sys.executable, "-m", "turnbudget", *EVAL, "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.endswith("File name too long\n") and proc.stderr.count("\n") == 1
