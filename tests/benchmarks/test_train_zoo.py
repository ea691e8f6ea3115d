"""Smoke test of benchmarks/train_zoo.py: a one-seed zoo, trained briefly and exported (``rl``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.rl
pytest.importorskip("sb3_contrib")

from turnbudget.agents.policy import PolicyAgent  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "train_zoo.py"


def test_train_zoo_trains_and_exports_every_arm_with_its_card(tmp_path):
    zoo = tmp_path / "zoo"
    command = [sys.executable, str(SCRIPT), "--out", str(tmp_path / "train"), "--zoo", str(zoo),
               "--seeds", "0", "--steps", "256", "--bc-episodes", "3"]  # fmt: skip
    subprocess.run(command, check=True, timeout=3600, capture_output=True)  # a hang guard
    for arm in ("base", "fixed-tight", "fixed-generous", "budgetmix"):
        root = zoo / "maze-easy" / arm / "seed0"
        assert sorted(p.name for p in root.iterdir()) == [
            "card.json",
            "encoding.json",
            "weights.npz",
        ]
        card = json.loads((root / "card.json").read_text())
        assert (card["arm"], card["seed"], card["env_id"]) == (arm, 0, "turnbudget/Maze-Easy-v0")
        assert card["command"].startswith("nice -n 10 python benchmarks/train_zoo.py")
        assert "--steps 256" in card["command"] and "--seeds 0" in card["command"]
        assert not PolicyAgent(root).budget_aware  # budget hidden in training
        source = PolicyAgent(tmp_path / "train" / "maze-easy" / (
            "base-s0" if arm == "base" else f"{arm}-s0"))  # fmt: skip
        x = np.random.default_rng(0).normal(size=(4, source._layers[0][0].shape[0]))
        np.testing.assert_array_equal(
            [PolicyAgent(root).logits(v) for v in x], [source.logits(v) for v in x]
        )
    # Rerunning resumes: nothing is trained again.
    zips = sorted((tmp_path / "train").rglob("policy.zip"))
    before = [p.stat().st_mtime_ns for p in zips]
    subprocess.run([*command, "--stages", "train"], check=True, timeout=600, capture_output=True)
    assert [p.stat().st_mtime_ns for p in zips] == before
    # Rerun with other settings: refused (the old policies were reused, their cards saying the
    # new settings).
    other = [*command[:-4], "--steps", "512", "--bc-episodes", "3", "--stages", "train"]
    refused = subprocess.run(other, timeout=600, capture_output=True, text=True, check=False)
    assert refused.returncode != 0 and "trained with other settings" in refused.stderr
    assert "total_steps" in refused.stderr and "Traceback" not in refused.stderr
    assert [p.stat().st_mtime_ns for p in zips] == before
