"""Smoke test of benchmarks/llm_agent.py with tiny settings, against the session's local server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support import HANG_GUARD

pytestmark = pytest.mark.llm

REPO = Path(__file__).resolve().parents[2]


def test_llm_agent_benchmark_smoke(llm_server, tmp_path):
    out = tmp_path / "bench"
    proc = subprocess.run(
        [
            sys.executable, str(REPO / "benchmarks" / "llm_agent.py"), "--out", str(out),
            "--base-url", llm_server.base_url, "--model", llm_server.model,
            "--tasks", "1", "--n", "1", "--ks", "1", "--ts", "1", "--sweep", "1,2",
            "--sweep-episodes", "1", "--probe-tasks", "0", "--no-progress",
        ],
        capture_output=True, text=True, check=False, cwd=REPO, timeout=HANG_GUARD,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads((out / "llm_agent.json").read_text())
    assert set(figures["pass_at_1"]) == {
        f"{agent}-{suite}"
        for agent in ("llm-hidden", "llm-revealed", "random")
        for suite in ("native", "textworld")
    }
    assert figures["pass_at_1"]["llm-hidden-native"]["agent_usage"]["steps"] == 2
    assert set(figures["throughput"]) == {"1", "2"}
    assert "gap revealed - hidden (textworld)" in proc.stdout
    assert (out / "report.md").exists()
    assert figures["probes"].startswith("skipped")  # probes cost ~20 decisions per task and game
