"""Smoke test: benchmarks/group_seeding.py runs with tiny settings, the peers absent; the
TextArena adapter of peer_group_seeding.py maps a TextArena-shaped env (a stub here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from turnbudget.utils import CHECKS, check_group_seeding

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str, monkeypatch: pytest.MonkeyPatch):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses need it
    spec.loader.exec_module(module)
    return module


def test_the_table_with_tiny_settings_and_no_peers(monkeypatch, capsys, tmp_path):
    bench = load("group_seeding", monkeypatch)
    config = bench.Config(
        env_ids="turnbudget/Maze-Easy-v0,turnbudget/Shop-Easy-v0",
        seeds=2,
        group_size=2,
        steps=2,
        peers_python=str(tmp_path / "no-such-python"),
    )
    rows = bench.ours(config)
    assert [r["env_id"] for r in rows] == ["turnbudget/Maze-Easy-v0", "turnbudget/Shop-Easy-v0"]
    assert all(r["checks"] == dict.fromkeys(CHECKS, "passed") for r in rows)
    peers = bench.peers(config)
    assert peers == [
        {"env_id": "GEM, TextArena", "skipped": f"no interpreter at {tmp_path / 'no-such-python'}"}
    ]
    bench.print_table(rows + peers)
    out = capsys.readouterr().out
    assert "| turnbudget/Maze-Easy-v0 | pass | pass | pass | pass | pass | pass |" in out
    assert "- GEM, TextArena: skipped: no interpreter at" in out


def test_a_failure_is_a_cell_and_a_line(monkeypatch, capsys):
    bench = load("group_seeding", monkeypatch)
    row = {
        "env_id": "Peer",
        "checks": {
            **dict.fromkeys(CHECKS, "passed"),
            "cap_truncates": "failed",
            "own_rng": "skipped",
        },
        "failures": {
            "cap_truncates": "check_group_seeding[cap_truncates] failed for Peer: both flags"
        },
        "skipped": {"own_rng": "remote"},
    }
    bench.print_table([row])
    out = capsys.readouterr().out
    assert "| Peer | pass | pass | skip | pass | pass | **FAIL** |" in out
    assert "- Peer, cap_truncates: both flags" in out and "- Peer, own_rng skipped: remote" in out


def test_the_scripts_import_no_peer_here():
    for name in ("group_seeding.py", "peer_group_seeding.py"):
        source = (BENCHMARKS / name).read_text()
        assert "\nimport gem" not in source and "\nimport textarena" not in source


class FakeTextArenaGame:
    """TextArena's single-player shape: reset(num_players, seed), get_observation, step ->
    (done, info), close -> (rewards, game_info); ends itself after ``max_turns`` moves."""

    max_turns = 3

    def reset(self, num_players, seed=None):
        assert num_players == 1
        self.turn, self.log = 0, [f"[GAME] board {seed}"]

    def get_observation(self):
        return 0, "\n".join(self.log)

    def step(self, action):
        self.turn += 1
        self.log.append(f"[Player] {action}")
        return self.turn >= self.max_turns, {}

    def close(self):
        return {0: 0.5}, {0: {"reason": "The turn limit has been reached."}}


def test_the_textarena_adapter_maps_done_to_terminated(monkeypatch):
    peer = load("peer_group_seeding", monkeypatch)
    env = peer.TextArenaAdapter(FakeTextArenaGame())
    assert env.reset(seed=4) == ("[GAME] board 4", {})
    assert env.step("[up]") == ("[GAME] board 4\n[Player] [up]", 0.0, False, False, {})
    env.step("[up]")
    assert env.step("[up]")[1:4] == (0.5, True, False)
    # One `done`: the cap looks like the game's end, as a trainer sees it.
    report = check_group_seeding(
        lambda: peer.TextArenaAdapter(FakeTextArenaGame()), idle_actions=["[up]"], turn_cap=3
    )
    assert [f.check for f in report.failures] == ["cap_truncates"]
    assert "terminated=True, truncated=False (the cap is folded into terminated)" in str(report)
