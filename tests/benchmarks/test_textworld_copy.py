"""Smoke test: benchmarks/speed/textworld_copy.py runs with tiny settings on the shipped games."""

from __future__ import annotations

from pathlib import Path

SPEED = Path(__file__).resolve().parents[2] / "benchmarks" / "speed"


def test_copy_benchmark_runs_with_tiny_settings(shipped_cache, capsys, load_script):
    bench = load_script(SPEED / "textworld_copy.py")
    rc = bench.main(["--histories", "1", "--rounds", "1", "--env-ids",
                     "turnbudget/CoinCollector-Easy-v0", "--cache-dir", str(shipped_cache),
                     "--error-episodes", "1", "--error-id", "turnbudget/CoinCollector-Easy-v0"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    (row,) = [line for line in out.splitlines() if line.endswith("x")]
    assert row.startswith("turnbudget/CoinCollector-Easy-v0") and row.split()[1] == "1"
    runs = {line.split()[1]: line.split()[-2] for line in out.splitlines() if "copies" in line}
    assert runs["moved"] == runs["replayed"]  # (the same episodes, copied two ways)
