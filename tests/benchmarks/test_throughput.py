"""Smoke test: benchmarks/speed/throughput.py runs with tiny settings, peers absent or present."""

from __future__ import annotations

from pathlib import Path

import pytest

SPEED = Path(__file__).resolve().parents[2] / "benchmarks" / "speed"


@pytest.fixture
def bench(load_script):
    return load_script(SPEED / "throughput.py")  # it imports random_agent beside it


def test_every_figure_is_measured_with_tiny_settings(bench, capsys, tmp_path):
    config = bench.Config(
        seconds=0.02,
        env_ids=("turnbudget/Sokoban-Medium-v0", "turnbudget/Shop-Medium-v0"),
        solver_episodes=1,
        peers_python=str(tmp_path / "no-such-python"),
    )
    rows = bench.measure(config)
    assert [r["env_id"] for r in rows] == list(config.env_ids)
    for row in rows:
        assert row["step_only"] > 0 and 0 < row["ratio"] <= 1.0
        assert row["reset_us"] > 0 and row["episode_us"] > 0
    bench.print_table(rows)
    solver = bench.time_sokoban_solver(config)
    assert solver["calls"] > 0 and solver["max_ms"] >= solver["mean_ms"] > 0
    peers = bench.compare_peers(config)
    assert len(peers) == 4 and "skipped" in peers[-1]  # ours, then the peers skipped cleanly
    bench.print_peers(peers)
    out = capsys.readouterr().out
    assert "Sokoban-Medium-v0" in out and "skipped" in out


def test_the_peer_script_imports_no_peer_here():
    source = (SPEED / "throughput.py").read_text()
    assert "import gem" not in source and "import textarena" not in source


def test_a_split_measures_a_reset_however_short_its_window(bench):
    """A window that closes before any episode ends (tiny settings on a busy machine) still
    measures a reset: the rollout goes on to the end of its first episode."""
    # Crafting-Hard needs 35 turns or more: no episode ends within the first 20 steps.
    split = bench.rollout_split(bench.bare_env("turnbudget/Crafting-Hard-v0"), 0.0, 0, cap=21)
    assert split.reset_us > 0 and split.episode_step_us > 0


def test_the_cpu_time_ratio_against_the_trivial_env_is_measured(bench):
    assert 0 < bench.vs_trivial_cpu("turnbudget/Maze-Easy-v0", 0.02, 0, slices=2) < 10
