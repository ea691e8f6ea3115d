"""PolicyAgent on policies trained by `turnbudget.train` (real sb3-contrib MaskablePPO, the rl extra)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import turnbudget
from turnbudget.agents import make_agent
from turnbudget.agents.policy import PolicyAgent
from turnbudget.eval import evaluate, probe
from turnbudget.train import TrainConfig, behaviour_clone, make_env, train

pytestmark = pytest.mark.rl
pytest.importorskip("sb3_contrib")

MAZE = "turnbudget/Maze-Easy-v0"


def _config(tmp: Path, name: str, **kwargs) -> TrainConfig:
    base = dict(env_id=MAZE, out=str(tmp / name), budget_mix="uniform:8-30", n_envs=4,
                n_steps=64, batch_size=64, n_epochs=2, log="none", bc_episodes=30, bc_epochs=5,
                text_dim=32, command_dim=8, history=3)  # fmt: skip
    return TrainConfig(**{**base, **kwargs})


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("policies")
    behaviour_clone(_config(tmp, "bc", algo="bc"))
    train(_config(tmp, "ppo", init=str(tmp / "bc"), total_steps=512))
    return tmp / "ppo"


@pytest.mark.parametrize("env_id", [MAZE, "turnbudget/KeyQuest-Easy-v0"])
@pytest.mark.parametrize(
    "reveal, eval_reveal", [("always", "always"), ("always", None), ("final=3", "final=3"),
                            ("final=3", None)],
)  # fmt: skip
def test_agent_features_equal_the_training_stack(tmp_path, env_id, reveal, eval_reveal):
    """The agent rebuilds, from text and the info an evaluator gives it, the vector PPO saw
    (with ``final=3``, the budget's numbers too only in the last 3 turns)."""
    config = _config(
        tmp_path, "bc", algo="bc", env_id=env_id, bc_episodes=5, bc_epochs=1, reveal=reveal
    )
    behaviour_clone(config)
    agent = PolicyAgent(tmp_path / "bc")
    train_env = make_env(config)  # text_observation carries RevealBudget's text
    shown = turnbudget.make(env_id, budget_mix=config.budget_mix, reveal=eval_reveal)
    for seed in range(4):
        obs, info = train_env.env.reset(seed=1000 + seed)  # past TaskSeeds: this exact world
        text, text_info = shown.reset(seed=1000 + seed)
        agent.reset(seed)
        done = False
        while not done:
            features, commands = agent._see(text, text_info)
            np.testing.assert_array_equal(features, obs)
            assert commands == info["action_commands"]
            index = int(np.flatnonzero(info["action_mask"])[seed % int(info["action_mask"].sum())])
            agent._pending = commands[index]
            obs, _, terminated, truncated, info = train_env.step(index)
            text, _, _, _, text_info = shown.step(commands[index])
            done = terminated or truncated


def test_saved_policy_gives_identical_results_across_loads_and_workers(policy_dir):
    kwargs = dict(ks=(1, 2), ts=(5, 12, 30), tasks=4, reveal="always", record_steps=False)
    one = evaluate(MAZE, PolicyAgent(policy_dir), workers=1, **kwargs)
    again = evaluate(MAZE, PolicyAgent(policy_dir), workers=1, **kwargs)
    two = evaluate(MAZE, make_agent(f"policy:{policy_dir}"), workers=2, **kwargs)
    assert one.config.mode == "rerun"  # budget_aware: each T is its own run
    for other in (again, two):
        assert other.episodes == one.episodes
        assert other.summary["groups"] == one.summary["groups"]
    det = [evaluate(MAZE, PolicyAgent(policy_dir, deterministic=True), **kwargs).episodes
           for _ in range(2)]  # fmt: skip
    assert det[0] == det[1]


def test_the_weights_only_network_is_sb3s_actor(policy_dir):
    """PolicyAgent's NumPy network (rebuilt from policy.pth's tensors and encoding.json,
    nothing unpickled) scores every action as the trained SB3 policy does."""
    import torch
    from sb3_contrib import MaskablePPO

    agent = PolicyAgent(policy_dir)
    assert agent.encoding["activation"] == "Tanh"  # written by turnbudget.train
    policy = MaskablePPO.load(policy_dir / "policy.zip", device="cpu").policy  # our own file
    x = np.random.default_rng(0).normal(size=(5, *policy.observation_space.shape))
    with torch.no_grad():
        latent = policy.mlp_extractor.forward_actor(torch.as_tensor(x, dtype=torch.float32))
        expected = policy.action_net(latent).numpy()
    np.testing.assert_allclose([agent.logits(v) for v in x], expected, rtol=1e-4, atol=1e-4)


def test_agent_samples_from_its_seed_and_pickles(policy_dir):
    agent = PolicyAgent(policy_dir)
    assert agent.budget_aware and not agent.needs_oracle
    clone = pickle.loads(pickle.dumps(agent))
    env = turnbudget.make(MAZE, turn_budget=30, reveal="always")

    def play(a, seed):
        obs, info = env.reset(seed=7)
        a.reset(seed)
        commands, done = [], False
        while not done:
            commands.append(a.act(obs, info))
            obs, _, terminated, truncated, info = env.step(commands[-1])
            done = terminated or truncated
        return commands

    assert play(agent, 1) == play(clone, 1)
    assert len({tuple(play(agent, s)) for s in range(6)}) > 1  # sampled: seeds differ


def test_budget_hidden_in_training_means_not_budget_aware(tmp_path):
    config = _config(tmp_path, "bc", algo="bc", reveal="never", bc_episodes=3, bc_epochs=1)
    behaviour_clone(config)
    agent = PolicyAgent(tmp_path / "bc")
    assert not agent.budget_aware and agent.encoding["reveal"] is None


def test_bad_paths_say_what_a_saved_policy_is(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"policy\.zip"):
        PolicyAgent(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a saved policy"):
        make_agent(f"policy:{tmp_path / 'missing'}")


def test_bc_on_oracle_demonstrations_learns_single_steps_on_its_tasks(tmp_path):
    """The imitation step works: clean oracle labels on a small task pool -> mostly optimal."""
    pool = 6
    config = _config(tmp_path, "bc", algo="bc", bc_epsilon=0.0, bc_episodes=120, bc_epochs=30,
                     task_pool=pool, text_dim=64, command_dim=16, history=4)  # fmt: skip
    behaviour_clone(config)
    agent = PolicyAgent(tmp_path / "bc", deterministic=True)
    env = turnbudget.make(MAZE, turn_budget=30, reveal="always")
    optimal = total = 0
    for task in range(config.task_seed_base, config.task_seed_base + pool):
        obs, info = env.reset(seed=task)
        agent.reset(0)
        done = False
        while not done:  # along the oracle's own path: single steps, teacher-forced
            best = env.unwrapped.optimal_actions()
            optimal += agent.act(obs, info) in best
            total += 1
            agent._pending = best[0]
            obs, _, terminated, truncated, info = env.step(best[0])
            done = terminated or truncated
    assert optimal / total >= 0.85, f"BC single-step optimal rate {optimal / total:.2f}"


def test_fixed_seed_training_is_reproducible(tmp_path):
    import torch
    from sb3_contrib import MaskablePPO

    params = []
    for name in ("a", "b", "c"):
        config = _config(tmp_path, name, total_steps=512, seed=1 if name == "c" else 0)
        train(config)
        params.append(MaskablePPO.load(tmp_path / name / "policy.zip").policy.state_dict())
    same = all(torch.equal(params[0][k], params[1][k]) for k in params[0])
    assert same, "same seed, same torch build, one thread: training is bit-for-bit reproducible"
    assert not all(torch.equal(params[0][k], params[2][k]) for k in params[0])


def test_bc_single_step_skill_through_the_probes(tmp_path):
    """The same, measured as the probes do: skill normalized against RandomAgent."""
    pool = 6
    config = _config(tmp_path, "bc", algo="bc", bc_epsilon=0.0, bc_episodes=120, bc_epochs=30,
                     task_pool=pool, text_dim=64, command_dim=16, history=4)  # fmt: skip
    behaviour_clone(config)
    tasks = list(range(config.task_seed_base, config.task_seed_base + pool))
    agent = PolicyAgent(tmp_path / "bc", deterministic=True)
    result = probe(MAZE, agent, tasks=tasks, kinds=("slip",), n_bootstrap=100)
    (summary,) = result.summary["agents"].values()
    skill = summary[MAZE]["single_step_skill"]["mean"]
    assert skill >= 0.7, f"BC single-step skill on its training tasks: {skill:.2f}"


def test_an_export_into_another_training_run_is_refused(policy_dir, tmp_path):
    """``--overwrite`` replaced the export's three files only: the run's policy.zip stayed
    (what ``train --init`` loads) beside the exported weights.npz (what is played), and the
    run's config and summary described another policy. Onto itself a run still exports."""
    import shutil

    from turnbudget.agents.policy import WEIGHTS_FILE, export_policy

    run = tmp_path / "run"
    shutil.copytree(policy_dir, run)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    other = export_policy("zoo/maze-easy/base/seed0", tmp_path / "other")
    for overwrite in (False, True):  # (without it, the advice was to pass it: refused then)
        with pytest.raises(ValueError, match=r"holds a training run \(policy\.zip[,)]"):
            export_policy(other, run, overwrite=overwrite)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    export_policy(run / "policy.zip", run, overwrite=True)  # (its own run: the same weights)
    assert PolicyAgent(run).digest == PolicyAgent(run / "policy.zip").digest
    assert (run / WEIGHTS_FILE).exists()


def test_an_export_into_an_evaluation_or_a_stopped_training_run_is_refused(tmp_path):
    """Only a policy.zip was taken for a run: the weights went in beside an evaluation's logs,
    or beside the config.json of a training run stopped before its policy (another run's
    settings), and ``policy:DIR`` played them."""
    from turnbudget.agents.policy import export_policy
    from turnbudget.cli import main

    evaluation, stopped = tmp_path / "eval", tmp_path / "stopped"
    assert main(["eval", "--env", MAZE, "--agent", "random", "--tasks", "1", "--t", "4",
                 "--quiet", "--no-plots", "--out", str(evaluation)]) == 0  # fmt: skip
    stopped.mkdir()
    (stopped / "config.json").write_text('{"algo": "ppo", "reveal": "final=3"}')
    for destination, what in ((evaluation, "an evaluation run"), (stopped, "a training run")):
        before = sorted(p.name for p in destination.iterdir())
        for overwrite in (False, True):
            with pytest.raises(ValueError, match=f"holds {what}"):
                export_policy("zoo/maze-easy/base/seed0", destination, overwrite=overwrite)
        assert sorted(p.name for p in destination.iterdir()) == before


@pytest.mark.parametrize("deterministic", [False, True])
def test_the_zoo_format_plays_the_actions_of_the_torch_policy(policy_dir, tmp_path, deterministic):
    """export_policy keeps the zip's float32 weights: every episode, every action is the same
    (budget-aware policy: each T rerun), and the files hold the actor only."""
    from turnbudget.agents.policy import WEIGHTS_FILE, export_policy

    zoo = export_policy(policy_dir, tmp_path / "zoo", card={"arm": "test"})
    assert sorted(p.name for p in zoo.iterdir()) == ["card.json", "encoding.json", WEIGHTS_FILE]
    with np.load(zoo / WEIGHTS_FILE, allow_pickle=False) as arrays:
        assert all(arrays[k].dtype == np.float32 for k in arrays.files)
        assert not any(k.startswith(("value_net", "mlp_extractor.value_net")) for k in arrays.files)
    kwargs = dict(ks=(1, 2), ts=(5, 12, 30), tasks=6, reveal="always", record_steps=True)
    torch_run = evaluate(MAZE, PolicyAgent(policy_dir, deterministic), **kwargs)
    zoo_run = evaluate(MAZE, PolicyAgent(zoo, deterministic), **kwargs)
    assert zoo_run.episodes == torch_run.episodes
    assert [s["action"] for s in zoo_run.steps] == [s["action"] for s in torch_run.steps]
    assert (zoo / WEIGHTS_FILE).stat().st_size < (policy_dir / "policy.zip").stat().st_size


def test_export_policy_without_torch_says_how_to_install_it(policy_dir, tmp_path):
    """Where torch is not installed, `turnbudget export-policy` of a policy.zip said "No module
    named 'torch'" and no more (`train` and `eval --agent policy:` say how to install it)."""
    import subprocess
    import sys

    without_torch = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "from turnbudget.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", without_torch, "export-policy", str(policy_dir), str(tmp_path / "zoo")],
        capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(
        "turnbudget export-policy: error: Reading a policy.zip needs torch"
    )
    assert "pip install -e '.[rl]'" in proc.stderr and not (tmp_path / "zoo").exists()
