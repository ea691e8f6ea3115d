"""Smoke test of benchmarks/speed/llm_path.py with tiny settings (starts its own servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.llm

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "llm_path.py"


def test_llm_path_smoke(load_script, tmp_path, capsys):
    pytest.importorskip("llama_cpp.server")
    script = load_script(SCRIPT)
    out = tmp_path / "llm_path.json"
    flags = ["--rounds", "1", "--tasks", "1", "--turns", "2", "--concurrency", "1,2",
             "--long-decisions", "2", "--out", str(out)]  # fmt: skip
    figures = script.main(script.parse_args(flags))
    assert json.loads(out.read_text())["table"] == figures["table"]
    assert set(figures["table"]) == {f"{p} x{c}" for p in script.PATHS for c in (1, 2)}
    for row in figures["table"].values():
        assert row["decisions"] == 2 and row["cpu_s_per_decision"] > 0
        assert row["same_commands_every_round"] and "same_commands_as_first_path" in row
    assert set(figures["server_rss_mib"]) == {
        "serve-local",
        "serve-local cache",
        "serve-local (old)",
    }
    assert "| in-process | 1 |" in capsys.readouterr().out
