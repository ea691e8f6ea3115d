"""A tiny ``turnbudget train`` run, BC then PPO from it, whose policy `PolicyAgent` plays (rl extra)."""

from __future__ import annotations

import json

import pytest

from turnbudget.agents import make_agent
from turnbudget.cli import main
from turnbudget.eval import evaluate

pytestmark = pytest.mark.rl
pytest.importorskip("sb3_contrib")

SMALL = (
    "--env-id turnbudget/Maze-Easy-v0 --budget-mix uniform:8-30 --n-envs 4 --n-steps 64 "
    "--batch-size 64 --n-epochs 2 --text-dim 32 --command-dim 8 --history 3 --log none"
)


def train(args: str) -> int:
    """``turnbudget train SMALL args`` in this process; its exit code."""
    return main(["train", *SMALL.split(), *args.split()])


def test_bc_then_ppo_on_the_command_line_writes_a_policy_agents_play(tmp_path, capsys):
    bc, ppo = tmp_path / "bc", tmp_path / "ppo"
    assert train(f"--algo bc --bc-episodes 10 --bc-epochs 2 --out {bc}") == 0
    assert json.loads(capsys.readouterr().out)["algo"] == "bc"
    assert train(f"--init {bc} --total-steps 256 --process-reward --out {ppo}") == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["algo"], summary["steps"]) == ("ppo", 256)
    assert summary["bootstrap_at_budget"] is False  # the budget is shown: no bootstrap at its end
    for name in ("policy.zip", "encoding.json", "config.json", "summary.json"):
        assert (ppo / name).is_file()
    assert json.loads((ppo / "config.json").read_text())["init"] == str(bc)

    agent = make_agent(f"policy:{ppo}")
    assert agent.budget_aware and agent.encoding["activation"] == "Tanh"
    result = evaluate(
        "turnbudget/Maze-Easy-v0",
        agent,
        ks=(1,),
        ts=(8, 30),
        tasks=2,
        reveal="always",
        record_steps=False,
    )
    assert result.config.mode == "rerun"
    assert len(result.episodes) == 4 and all(e["turns_used"] >= 1 for e in result.episodes)


class _Marker:
    """Unpickled, it writes a file: what a policy someone sent you could run."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_init_reads_the_policy_as_weights_and_takes_this_runs_settings(tmp_path, capsys):
    """``--init`` loaded the zip with ``MaskablePPO.load``, which unpickles its ``data``: a
    file someone sent could run code. It is read as weights only (the network's and the
    optimizer's), as `PolicyAgent` reads it, so this run's rollout settings apply too (they
    were refused: the loaded model kept the init's)."""
    import base64
    import pickle
    import zipfile

    bc = tmp_path / "bc"
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --out {bc}") == 0
    marker = tmp_path / "ran"
    with zipfile.ZipFile(bc / "policy.zip") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data["evil"] = {
        ":type:": "<class 'Marker'>",
        ":serialized:": base64.b64encode(pickle.dumps(_Marker(str(marker)))).decode(),
    }
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(bc / "policy.zip", "w") as archive:
        for name, raw in members.items():
            archive.writestr(name, raw)
    capsys.readouterr()
    assert train(f"--n-steps 32 --init {bc} --total-steps 64 --out {tmp_path / 'ppo'}") == 0
    assert not marker.exists()
    with zipfile.ZipFile(tmp_path / "ppo" / "policy.zip") as archive:
        assert json.loads(archive.read("data"))["n_steps"] == 32
    assert train(f"--net-arch 8 --init {bc} --total-steps 64 --out {tmp_path / 'other'}") == 2
    assert "its network is not this run's (--net-arch 8)" in capsys.readouterr().err
    assert not marker.exists()
