"""A run directory whose logs lost their ``run.json`` is refused, never taken in as this run's.

The issue: an oracle run, its ``run.json`` removed, then a random agent's run into the same
directory reported the oracle's successes as the random agent's.
"""

from __future__ import annotations

import pytest

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.cli import main
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.records import EPISODES_FILE, RUN_FILE, STEPS_FILE, LogError

MAZE = "turnbudget/Maze-Easy-v0"
RUN = dict(ks=[1], ts=[20], n=1, tasks=2, n_bootstrap=10)
CLI = ["eval", "--env", MAZE, "--k", "1", "--t", "20", "--tasks", "2", "--n", "1",
       "--quiet", "--no-plots"]  # fmt: skip


@pytest.mark.parametrize("kept", [(EPISODES_FILE, STEPS_FILE), (EPISODES_FILE,), (STEPS_FILE,)])
def test_logs_without_run_json_are_refused_and_left_as_they_are(kept, tmp_path, capsys):
    out = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), out=out, **RUN)
    (out / RUN_FILE).unlink()
    for name in {EPISODES_FILE, STEPS_FILE} - set(kept):
        (out / name).unlink()
    before = {name: (out / name).read_bytes() for name in kept}
    with pytest.raises(LogError, match=r"Cannot tell whether the run in .* has the same settings"):
        evaluate(MAZE, RandomAgent(), out=out, **RUN)
    code = main([*CLI, "--agent", "random", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Cannot tell whether the run" in err and "--overwrite" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert {name: (out / name).read_bytes() for name in kept} == before
    assert not (out / RUN_FILE).exists()


def test_overwrite_starts_afresh_where_run_json_is_missing(tmp_path, capsys):
    out = tmp_path / "run"
    oracle = evaluate(MAZE, OracleAgent(0.0), out=out, **RUN)
    assert all(e["success"] for e in oracle.episodes)
    (out / RUN_FILE).unlink()
    fresh = evaluate(MAZE, RandomAgent(), out=out, overwrite=True, **RUN)
    assert fresh.n_run == 2 and len(fresh.episodes) == 2
    assert '"random"' in (out / RUN_FILE).read_text()
