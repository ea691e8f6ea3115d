"""Smoke test: benchmarks/speed/eval_workers.py runs with tiny settings, alone and against a
second version of the library (here: this tree twice)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "speed" / "eval_workers.py"


def test_eval_workers_runs_with_tiny_settings(load_script, tmp_path, capsys):
    module = load_script(SCRIPT)
    out = tmp_path / "figures.json"
    tiny = ["--envs", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--n", "2", "--ks", "1",
            "--ts", "4,8", "--rounds", "1"]  # fmt: skip
    figures = module.main(module.parse_args([*tiny, "--json-out", str(out)]))
    assert figures == json.loads(out.read_text())
    for workers in ("1", "2"):
        row = figures["rows"][workers]
        assert row["episodes"] == 4 and row["wall_s"] > 0 and row["workers_cpu_ms_per_episode"] > 0
    assert figures["speedup_2_workers"] > 0
    assert "1w/2w wall" in capsys.readouterr().out
    both = module.main(module.parse_args([*tiny, "--roots", f"{ROOT},{ROOT}"]))
    assert set(both["versions"]) == {str(ROOT)}  # (one key per root)
