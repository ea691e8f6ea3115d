"""Smoke test: benchmarks/speed/eval_overhead.py runs with tiny settings and reports every ratio."""

from __future__ import annotations

import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "eval_overhead.py"


def test_eval_overhead_runs_with_tiny_settings(load_script, tmp_path, capsys):
    module = load_script(SCRIPT)
    out = tmp_path / "figures.json"
    config = module.parse_args(
        ["--envs", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--n", "1", "--t", "8",
         "--rounds", "1", "--json-out", str(out)]
    )  # fmt: skip
    figures = module.main(config)
    assert figures == json.loads(out.read_text())
    (row,) = figures["rows"]
    assert row["episodes"] == 2
    for clock in ("cpu_ms_per_episode", "wall_ms_per_episode"):
        assert set(row[clock]) == {"bare", "stack", "stack+log", "evaluate"}
        assert all(v > 0 for v in row[clock].values())
    printed = capsys.readouterr().out
    assert "stack/bare" in printed and "eval/stack" in printed and "eval/log" in printed


def test_eval_overhead_compares_versions(load_script, tmp_path):
    module = load_script(SCRIPT)
    root = str(SCRIPT.parents[2])
    config = module.parse_args(
        ["--envs", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--n", "1", "--t", "8",
         "--rounds", "1", "--roots", root, "--no-warmup"]
    )  # fmt: skip
    figures = module.main(config)
    assert figures["config"]["warmup"] is False
    (row,) = figures["versions"][root]
    assert row["episodes"] == 2 and set(row["cpu_ms_per_episode"]) == {
        "bare",
        "stack",
        "stack+log",
        "evaluate",
    }
