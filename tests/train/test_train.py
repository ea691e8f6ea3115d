"""A tiny ``turnbudget train`` run, BC then PPO from it, whose policy `PolicyAgent` plays (rl extra)."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

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
    """``turnbudget train SMALL args`` in this process (an option in ``args`` in place of
    SMALL's: one given twice is refused); its exit code."""
    given = {part for part in args.split() if part.startswith("--")}
    small = SMALL.split()
    pairs = zip(small[::2], small[1::2], strict=True)
    kept = [part for name, value in pairs if name not in given for part in (name, value)]
    return main(["train", *kept, *args.split()])


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


def test_init_of_other_features_is_refused_naming_them(tmp_path, capsys):
    """``--init``'s encoding was never read: features of the same length but another meaning
    (the budget shown on other turns) were taken silently, and another length was blamed on
    ``--net-arch``. Another game is allowed: a policy may start from one of another game."""
    bc = tmp_path / "bc"
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --reveal final=3 --out {bc}") == 0
    capsys.readouterr()
    assert train(f"--init {bc} --total-steps 64 --out {tmp_path / 'always'}") == 2
    err = capsys.readouterr().err
    assert "trained on other features than this run's (reveal: " in err and "--net-arch" not in err
    assert train(f"--reveal final=3 --text-dim 16 --init {bc} --total-steps 64 "
                 f"--out {tmp_path / 'dim'}") == 2  # fmt: skip
    assert "text_features: " in capsys.readouterr().err
    assert not (tmp_path / "always").exists() and not (tmp_path / "dim").exists()
    other_game = f"--env-id turnbudget/KeyQuest-Easy-v0 --reveal final=3 --init {bc}"
    assert train(f"{other_game} --total-steps 64 --out {tmp_path / 'keyquest'}") == 0


def test_a_policy_whose_weights_diverged_is_not_saved(tmp_path):
    """A NaN weight (a minibatch of one sample did it) was saved and its run summarised as
    finished: `PolicyAgent` then refused it, or every turn failed."""
    import math

    import torch

    from turnbudget.train import TrainConfig, _sb3

    config = TrainConfig(n_envs=1, n_steps=8, batch_size=8, out=str(tmp_path / "run"))
    model = _sb3.new_model(config, _sb3.vec_env(config))
    with torch.no_grad():
        next(model.policy.parameters())[0, 0] = math.nan
    with pytest.raises(ValueError, match=r"Training diverged: .* not finite, so nothing was saved"):
        _sb3.save_policy(model, config)
    assert not (tmp_path / "run").exists()


def test_training_that_diverges_says_so_in_one_line(tmp_path, capsys):
    """A learning rate of 1e20 turned the weights to NaN within one update, and torch's refusal
    of the NaN logits that followed was the error: a dump of the tensor that named neither
    the divergence nor what to change."""
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), "--n-envs", "2", "--n-steps", "32",
                 "--batch-size", "32", "--total-steps", "256", "--learning-rate", "1e20"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith("turnbudget train: error: Training diverged: ") and "tensor" not in err
    assert "a smaller learning_rate" in err and err.count("\n") == 1
    assert not (out / "policy.zip").exists() and not (out / "summary.json").exists()


def test_out_holding_another_run_is_refused_unless_overwrite(tmp_path, capsys):
    """``--out`` over another training run replaced its policy silently, and over an
    evaluation run its summary.json (which the run then took as current). The same run
    again is taken (a killed run started over)."""
    bc = tmp_path / "bc"
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --out {bc}") == 0
    policy = (bc / "policy.zip").read_bytes()
    capsys.readouterr()
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --seed 3 --out {bc}") == 2
    err = capsys.readouterr().err
    assert "holds another training run (its config.json differs in seed)" in err
    assert (bc / "policy.zip").read_bytes() == policy
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --out {bc}") == 0  # (the same run)
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --seed 3 --overwrite --out {bc}") == 0
    assert (bc / "policy.zip").read_bytes() != policy

    evaluation = tmp_path / "eval"
    assert main(["eval", "--env", "turnbudget/Maze-Easy-v0", "--agent", "random", "--tasks", "1",
                 "--t", "4", "--quiet", "--out", str(evaluation)]) == 0  # fmt: skip
    summary = (evaluation / "summary.json").read_bytes()
    capsys.readouterr()
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --out {evaluation}") == 2
    assert "holds an evaluation run (run.json, episodes.jsonl)" in capsys.readouterr().err
    assert (evaluation / "summary.json").read_bytes() == summary
    # With --overwrite too: training replaced the evaluation's summary.json and left its
    # logs beside its own policy, two runs in one directory.
    before = sorted(p.name for p in evaluation.iterdir())
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --overwrite --out {evaluation}") == 2
    assert "holds an evaluation run (run.json, episodes.jsonl)" in capsys.readouterr().err
    assert (evaluation / "summary.json").read_bytes() == summary
    assert sorted(p.name for p in evaluation.iterdir()) == before


def test_bc_starts_from_init_and_reports_its_demonstrations_success(tmp_path, capsys):
    """``--init`` was ignored with ``--algo bc`` (the fit always started from fresh weights),
    and BC's summary said ``"demo_success": null`` whatever its demonstrations did."""
    from turnbudget.agents.policy import policy_tensors, zip_weights

    base = "--algo bc --bc-episodes 4 --bc-epochs 1"
    assert train(f"{base} --out {tmp_path / 'first'}") == 0
    assert train(f"{base} --seed 1 --init {tmp_path / 'first'} --out {tmp_path / 'on'}") == 0
    assert train(f"{base} --seed 1 --out {tmp_path / 'fresh'}") == 0
    on, fresh = (policy_tensors(tmp_path / name / "policy.zip") for name in ("on", "fresh"))
    assert any(not on[k].equal(fresh[k]) for k in on)  # the init's weights were the start
    # BC fits with its own Adam: a PPO init's optimizer moments are not saved with BC's policy.
    assert train(f"--init {tmp_path / 'first'} --total-steps 64 --out {tmp_path / 'ppo'}") == 0
    assert train(f"{base} --init {tmp_path / 'ppo'} --out {tmp_path / 'bc_on_ppo'}") == 0
    moments = [zip_weights(tmp_path / name / "policy.zip", "policy.optimizer.pth")["state"]
               for name in ("ppo", "bc_on_ppo")]  # fmt: skip
    assert moments[0] and not moments[1]
    capsys.readouterr()
    assert train(f"{base} --reveal final=3 --init {tmp_path / 'first'} --out {tmp_path / 'x'}") == 2
    assert "trained on other features than this run's (reveal: " in capsys.readouterr().err
    assert train(f"{base} --init {tmp_path / 'nosuch'} --out {tmp_path / 'y'}") == 2
    assert "Expect `init` (--init) to be a directory holding" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()  # refused up front

    def demo_success(epsilon: str, budget: str, out: str) -> float:
        args = f"--algo bc --bc-episodes 20 --bc-epochs 1 --bc-epsilon {epsilon} --turn-budget "
        args += f"{budget} --out {tmp_path / out}"
        small = SMALL.split()
        small[small.index("--budget-mix") + 1] = ""  # (no mix: the --turn-budget given)
        assert main(["train", *small, *args.split()]) == 0
        return json.loads(capsys.readouterr().out)["demo_success"]

    assert demo_success("0", "60", "oracle") == 1.0
    assert demo_success("1", "4", "random") < 0.5


def _stop_before_saving(monkeypatch) -> None:
    """Ctrl-C as a run ends: its checkpoints and progress written, its policy not."""
    from turnbudget.train import _sb3

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_sb3, "save_policy", interrupted)


def test_a_stopped_run_leaves_nothing_the_next_run_takes_for_its_own(tmp_path, capsys, monkeypatch):
    """A stopped run wrote its progress and checkpoints but no config.json: a run of other
    settings was then taken into its ``--out`` without ``--overwrite`` and kept its 124
    checkpoints, and a stopped ``--overwrite`` run left the older run's policy, config and
    summary, which read as finished, beside its own checkpoints."""
    out = tmp_path / "run"
    ppo = f"--total-steps 128 --checkpoint-every 64 --out {out}"
    assert train(ppo) == 0
    finished = {name: (out / name).read_bytes() for name in ("policy.zip", "summary.json")}
    with monkeypatch.context() as patch:
        _stop_before_saving(patch)
        stopped = f"--total-steps 512 --checkpoint-every 64 --out {out} --seed 5 --overwrite"
        assert train(stopped) == 130  # (Ctrl-C: one line)
    assert json.loads((out / "config.json").read_text())["seed"] == 5  # known for what it is
    assert not any((out / name).exists() for name in finished)  # nothing reads as finished
    assert sorted(p.name for p in (out / "checkpoints").iterdir())  # its own, seed 5's
    capsys.readouterr()
    assert train(ppo) == 2  # (seed 0 over the stopped seed-5 run: refused, named)
    assert "its config.json differs in seed" in capsys.readouterr().err
    assert train(f"{ppo} --overwrite") == 0
    checkpoints = {int(p.name.split("_")[1]) for p in (out / "checkpoints").iterdir()}
    assert checkpoints == {64, 128, 192, 256}  # (its own: none of the stopped run's 320-512)


def test_a_stopped_run_of_an_older_version_is_refused_by_its_files(tmp_path, capsys):
    """Progress and checkpoints without a config.json (a run that wrote its config only at
    its end) are a run's, not unrelated files."""
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    (out / "progress.csv").write_text("time/total_timesteps\n64\n")
    assert train(f"--total-steps 64 --out {out}") == 2
    assert "holds a policy or a run (progress.csv, checkpoints)" in capsys.readouterr().err


def _init_with_optimizer_state(tmp_path, change) -> tuple[Any, Any]:
    """A trained policy folder, and a copy whose ``policy.optimizer.pth`` ``change`` edited
    in place; both paths."""
    import io
    import zipfile

    import torch

    init, damaged = tmp_path / "init", tmp_path / "damaged"
    assert train(f"--total-steps 64 --out {init}") == 0
    with zipfile.ZipFile(init / "policy.zip") as z:
        members = {name: z.read(name) for name in z.namelist()}
    state = torch.load(io.BytesIO(members["policy.optimizer.pth"]), weights_only=True)
    change(state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    damaged.mkdir()
    (damaged / "encoding.json").write_bytes((init / "encoding.json").read_bytes())
    with zipfile.ZipFile(damaged / "policy.zip", "w") as z:
        for name, data in members.items():
            z.writestr(name, buffer.getvalue() if name == "policy.optimizer.pth" else data)
    return init, damaged


def _damage(state, damage: str) -> None:
    import torch

    moments = next(iter(state["state"].values()))
    if damage == "moment-shape":
        moments["exp_avg"] = torch.zeros(3)
    elif damage == "step-not-scalar":
        moments["step"] = torch.tensor([1.0, 2.0])
    else:  # (torch's own reader failed on it with an AttributeError)
        state["state"] = [1]


@pytest.mark.parametrize("damage", ["moment-shape", "step-not-scalar", "state-a-list"])
def test_an_init_whose_optimizer_state_does_not_fit_is_one_line(tmp_path, capsys, damage):
    """torch loads an optimizer state without checking its moments' shapes or its step: a
    state that did not fit failed inside the first Adam step (a RuntimeError traceback, and an
    empty --out left behind); one whose ``state`` was no dict, inside torch's reader."""
    _, damaged = _init_with_optimizer_state(tmp_path, lambda state: _damage(state, damage))
    capsys.readouterr()
    assert train(f"--total-steps 64 --init {damaged} --out {tmp_path / 'next'}") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert f"`--init` {damaged / 'policy.zip'}: its " in err, err
    assert not (tmp_path / "next").exists()


@pytest.mark.parametrize(
    "setting",
    [("maximize", True), ("weight_decay", 1e6), ("betas", (5.0, 0.999)), ("capturable", True),
     ("lr", float("nan")), ("eps", 0.0)],
    ids=lambda s: s[0],
)  # fmt: skip
def test_an_init_trains_under_this_run_s_optimizer_settings(tmp_path, capsys, setting):
    """torch's reader takes each parameter group's settings from the file: an init whose
    file said maximize=True trained by gradient ascent (and saved it for the next --init),
    weight_decay 1e6 or betas of 5 trained silently so, and capturable=True failed inside
    Adam's first step with a traceback. The init's moments are kept; its settings are not."""
    from turnbudget.agents.policy import zip_weights

    name, value = setting
    init, damaged = _init_with_optimizer_state(
        tmp_path, lambda s: [g.update({name: value}) for g in s["param_groups"]]
    )
    capsys.readouterr()
    assert train(f"--total-steps 64 --init {damaged} --out {tmp_path / 'next'}") == 0
    fresh = zip_weights(init / "policy.zip", "policy.optimizer.pth")["param_groups"]
    after = zip_weights(tmp_path / "next" / "policy.zip", "policy.optimizer.pth")["param_groups"]
    assert [{k: v for k, v in g.items() if k not in ("params", "lr")} for g in after] == [
        {k: v for k, v in g.items() if k not in ("params", "lr")} for g in fresh
    ]
    assert all(math.isfinite(g["lr"]) for g in after)


def test_tensorboard_logs_without_the_package_are_refused_before_writing(
    tmp_path, capsys, monkeypatch
):
    """SB3 found out with an AssertionError traceback, after `out` held the run's config."""
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # (as if not installed)
    out = tmp_path / "tb"
    assert train(f"--total-steps 64 --n-envs 1 --log tensorboard --out {out}") == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget train: error: ") and "pip install tensorboard" in err
    assert not out.exists()


def test_an_init_whose_policy_zip_is_no_policy_says_so_not_another_network(tmp_path, capsys):
    """A policy.zip that is no SB3 zip was reported as "its network is not this run's
    (--net-arch ...)", a reason it did not have."""
    init = tmp_path / "init"
    assert train(f"--total-steps 64 --out {init}") == 0
    (init / "policy.zip").write_bytes(b"not a zip")
    capsys.readouterr()
    assert train(f"--total-steps 64 --init {init} --out {tmp_path / 'next'}") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert "`--init`" in err and "not this run's" not in err, err
    assert f"Cannot read {init / 'policy.zip'}: expect an SB3 model zip" in err, err
    assert not (tmp_path / "next").exists()


def test_training_over_an_exported_policy_replaces_it_whole(tmp_path, capsys):
    """With --overwrite the old weights.npz and card.json go: kept, `policy:` read the old
    weights (before the new policy.zip) under the new run's name."""
    import shutil
    from importlib import resources

    out = tmp_path / "policy"
    shutil.copytree(resources.files("turnbudget") / "zoo/maze-easy/base/seed0", out)
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --out {out}") == 2
    assert "holds a policy or a run (weights.npz" in capsys.readouterr().err
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --out {out} --overwrite") == 0
    assert not (out / "weights.npz").exists() and not (out / "card.json").exists()
    assert (out / "policy.zip").is_file()
    assert make_agent(f"policy:{out}") is not None  # (the new policy.zip, its own encoding)


def test_a_report_over_a_training_run_leaves_its_summary(tmp_path, capsys):
    """An evaluation inside a training run's folder is a run of its own; `turnbudget report`
    over the training folder then replaced the training run's summary.json (its losses and
    demonstration figures) with the report's, without a word."""
    bc = tmp_path / "bc"
    assert train(f"--algo bc --bc-episodes 2 --bc-epochs 1 --out {bc}") == 0
    training = (bc / "summary.json").read_bytes()
    evaluate("turnbudget/Maze-Easy-v0", make_agent("random"), ks=[1], ts=[4], tasks=1,
             out=bc / "eval", n_bootstrap=0, progress=False)  # fmt: skip
    capsys.readouterr()
    assert main(["report", str(bc), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.json" in err and "of no report" in err, err
    assert (bc / "summary.json").read_bytes() == training and not (bc / "report.md").exists()
    assert main(["report", str(bc / "eval"), "--no-plots"]) == 0  # (the run itself)
