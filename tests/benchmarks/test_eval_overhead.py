"""Smoke test: benchmarks/speed/eval_overhead.py runs with tiny settings and reports every ratio."""

from __future__ import annotations

import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "eval_overhead.py"


def test_eval_overhead_runs_with_tiny_settings(load_script, tmp_path, capsys):
    module = load_script(SCRIPT)
    out = tmp_path / "figures.json"
    config = module.parse_args(
        ["--envs", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--n", "1", "--t", "8",
         "--rounds", "1", "--json-out", str(out)]
    )  # fmt: skip
    figures = module.main(config)
    assert figures == json.loads(out.read_text())
    (row,) = figures["rows"]
    assert row["episodes"] == 2
    for clock in ("cpu_ms_per_episode", "wall_ms_per_episode"):
        assert set(row[clock]) == {"bare", "stack", "stack+log", "stack+view+log", "evaluate"}
        assert all(v > 0 for v in row[clock].values())
    printed = capsys.readouterr().out
    assert "stack/bare" in printed and "eval/stack" in printed and "eval/log" in printed
    assert "eval/view" in printed


def test_eval_overhead_compares_versions(load_script, tmp_path):
    module = load_script(SCRIPT)
    root = str(SCRIPT.parents[2])
    config = module.parse_args(
        ["--envs", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--n", "1", "--t", "8",
         "--rounds", "1", "--roots", root, "--no-warmup"]
    )  # fmt: skip
    figures = module.main(config)
    assert figures["config"]["warmup"] is False
    (row,) = figures["versions"][root]
    assert row["episodes"] == 2 and set(row["cpu_ms_per_episode"]) == {
        "bare",
        "stack",
        "stack+log",
        "stack+view+log",
        "evaluate",
    }


def test_the_view_variant_shows_the_agent_what_evaluate_shows_it(load_script, tmp_path):
    """``stack+view+log`` is a fair yardstick only if its agent sees, turn by turn, the
    infos `evaluate` hands the same agent on the same episodes."""
    from turnbudget.agents.baselines import RandomAgent
    from turnbudget.eval.run.evaluate import evaluate

    module = load_script(SCRIPT)

    class Seeing(RandomAgent):
        def __init__(self, seen: list) -> None:
            super().__init__()
            self.seen = seen

        def act(self, observation, info):
            self.seen.append((observation, info))
            return super().act(observation, info)

    config = module.Config(envs="turnbudget/KeyQuest-Easy-v0", tasks=3, n=2, t=24, errors=0.3)
    settings = module._settings(config, config.envs)
    in_evaluate: list = []
    evaluate([config.envs], Seeing(in_evaluate), **settings, out=tmp_path / "run")
    in_loop: list = []
    eval_config = module.make_config(
        [config.envs], RandomAgent(), **settings, reveal=None, seed=0, label=None,
        record_steps=True,
    )  # fmt: skip
    env = module.build_env(config.envs, eval_config, lambda record: None)
    specs = module.plan_episodes(eval_config)
    per_repeat = eval_config.error_draws == "per_repeat"
    module._loop(env, module._PlayerView(Seeing(in_loop)), specs, per_repeat)
    assert len(in_loop) > 3 * 2 * 10
    assert in_loop == in_evaluate
    assert any("executed_action" in info for _, info in in_loop)
    assert any("injected_error" in info for _, info in in_loop)
