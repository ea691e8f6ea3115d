"""Smoke test: benchmarks/speed/eval_overhead.py runs with tiny settings and reports every ratio."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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


def test_ratios_are_the_median_of_each_rounds_ratio(load_script):
    """Each ratio pairs the variants of one round (run back to back, under the same load)."""
    module = load_script(SCRIPT)
    rounds = [
        {"bare": 1.0, "stack": 2.0, "stack+log": 2.5, "stack+view+log": 3.0, "evaluate": 3.3},
        {"bare": 2.0, "stack": 3.0, "stack+log": 4.0, "stack+view+log": 4.4, "evaluate": 4.4},
        {"bare": 1.5, "stack": 4.5, "stack+log": 5.0, "stack+view+log": 5.0, "evaluate": 6.0},
    ]
    summary = module._summary({"cpu": rounds})
    assert summary["cpu_rounds"] == rounds
    assert summary["cpu_ms_per_episode"]["bare"] == 1.5
    assert summary["cpu_ms_per_episode"]["stack"] == 3.0
    ratios = summary["cpu_ratios"]
    assert ratios["stack/bare"] == 2.0  # (rounds: 2.0, 1.5, 3.0; medians' ratio: 3.0 / 1.5)
    assert ratios["eval/stack"] == pytest.approx(1.4667, abs=1e-4)  # 1.65, 1.4667, 1.3333
    assert ratios["eval/view"] == pytest.approx(1.1)  # 1.1, 1.0, 1.2
    assert ratios["eval/bare"] == pytest.approx(3.3)  # 3.3, 2.2, 4.0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_instruction_counts_per_episode(load_script, tmp_path):
    """--instructions: callgrind counts per episode of every variant, in one process each."""
    module = load_script(SCRIPT)
    out = tmp_path / "counts.json"
    config = module.parse_args(
        ["--instructions", "--envs", "turnbudget/Maze-Easy-v0", "--count-tasks", "3",
         "--n", "1", "--t", "4", "--json-out", str(out)]
    )  # fmt: skip
    figures = module.main(config)
    assert figures == json.loads(out.read_text())
    (row,) = figures["versions"]["."]
    assert row["episodes"] == 1
    counts = row["instructions_per_episode"]
    assert set(counts) == set(module.VARIANTS)
    # Each variant adds work to the one before it; the counts of one process repeat to a few
    # thousand instructions (one BLAS thread, bytecode written before counting), far below
    # the ~70k the smallest step here adds.
    in_order = [counts[v] for v in module.VARIANTS]
    assert in_order[0] > 0 and in_order == sorted(in_order), counts
    assert row["instruction_ratios"]["stack/bare"] == counts["stack"] / counts["bare"]


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
        [config.envs], RandomAgent(), **settings, reveal=None, seed=0, label=None
    )  # (settings hold record_steps)
    env = module.build_env(config.envs, eval_config, lambda record: None)
    specs = module.plan_episodes(eval_config)
    per_repeat = eval_config.error_draws == "per_repeat"
    module._loop(env, module._PlayerView(Seeing(in_loop)), specs, per_repeat)
    assert len(in_loop) > 3 * 2 * 10
    assert in_loop == in_evaluate
    assert any("executed_action" in info for _, info in in_loop)
    assert any("injected_error" in info for _, info in in_loop)
