from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from _faults import RaisingAgent, seeds_of

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.cli import main
from turnbudget.eval.analysis import advantage_halving_budget, compare_runs, length_buckets
from turnbudget.eval.report import REPORT_FILE, SUMMARY_FILE, build_report, find_runs
from turnbudget.eval.run.evaluate import STEPS_FILE, evaluate, read_jsonl

MAZE = "turnbudget/Maze-Easy-v0"
KEYQUEST = "turnbudget/KeyQuest-Easy-v0"


def test_analysis_agrees_with_the_step_records(tmp_path):
    result = evaluate(
        [MAZE, KEYQUEST], OracleAgent(0.3), ks=[1], ts=[30], n=2, tasks=6, errors=0.15,
        out=tmp_path, n_bootstrap=0,
    )  # fmt: skip
    steps = read_jsonl(tmp_path / STEPS_FILE)[0]
    a = result.summary["analysis"]["all"]
    assert a["steps_judged"] == len(steps) == a["turns"]
    for key, phase in (
        ("optimal_step_rate_on_track", "on_track"),
        ("optimal_step_rate_after_error", "after_error"),
    ):
        judged = [s["optimal"] for s in steps if s["phase"] == phase]
        assert a[key] == pytest.approx(sum(judged) / len(judged), abs=1e-6)
    assert a["optimal_step_rate"] == pytest.approx(np.mean([s["optimal"] for s in steps]), abs=1e-6)
    assert a["errors_self"] == sum(s["error_self"] for s in steps)
    injected = [s for s in steps if s["injected_error"] and s["injected_error"]["applied"]]
    assert a["errors_injected"] == len(injected) > 0
    assert a["recovered"] > 0 and 0 < a["recovery_rate"] <= 1
    assert len(a["turns_to_recover"]) == a["recovered"]
    # An epsilon-0 oracle never errs on its own and takes only optimal steps.
    clean = evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[40], n=1, tasks=4, n_bootstrap=0)
    c = clean.summary["analysis"][MAZE]
    assert c["optimal_step_rate"] == 1.0 and c["errors_self"] == 0 and c["success_rate"] == 1.0
    # Records with only the rates (before the recorder stored its counts) give the same figures.
    from turnbudget.eval.analysis import step_stats

    counts = ("n_steps_judged", "n_optimal_steps", "n_optimal_on_track", "n_optimal_after_error")
    episodes = [e for e in result.episodes if e["env_id"] == MAZE]
    stripped = [{k: v for k, v in e.items() if k not in counts} for e in episodes]
    assert step_stats(stripped) == step_stats(episodes)


def test_success_by_optimal_length_uses_each_modes_runs():
    result = evaluate(
        [MAZE, KEYQUEST], OracleAgent(0.3), ks=[1], ts=[8, 12, 30], n=3, tasks=8, mode="both",
        n_bootstrap=0,
    )  # fmt: skip
    rows = result.summary["analysis"]["all"]["by_optimal_length"]
    length = {(e["env_id"], e["seed"]): e["initial_distance"] for e in result.episodes}
    assert sum(r["tasks"] for r in rows) == len(length) == 16
    for row in rows:
        lo, hi = row["optimal_length"]
        for t in (8, 12, 30):
            runs = [
                e for e in result.episodes
                if lo <= length[(e["env_id"], e["seed"])] <= hi and e["turn_budget"] == t
            ]  # fmt: skip
            # "both" reports the rerun view: the runs made with budget T.
            assert row["success_rate"][str(t)] == pytest.approx(
                np.mean([e["success"] for e in runs]), abs=1e-6
            )
    # A budget-blind agent: the truncate view from the runs at max(T) agrees.
    truncate = evaluate(
        [MAZE, KEYQUEST], OracleAgent(0.3), ks=[1], ts=[8, 12, 30], n=3, tasks=8, n_bootstrap=0
    )
    assert truncate.summary["analysis"]["all"]["by_optimal_length"] == rows


def test_report_builds_from_the_logs_alone(tmp_path):
    kwargs = dict(ks=[1, 2], ts=[5, 10, 20], n=2, tasks=4, errors=0.1, n_bootstrap=100)
    for agent, label in ((RandomAgent(), "random"), (OracleAgent(0.2), "oracle")):
        result = evaluate([MAZE, KEYQUEST], agent, label=label, out=tmp_path / label, **kwargs)
    # evaluate writes records only; the report is the caller's
    assert not list((tmp_path / "oracle").glob("*.md")) and not list(tmp_path.glob("*.json"))
    single = json.loads(json.dumps({"runs": {"oracle": result.summary}, "comparisons": []}))
    assert find_runs(tmp_path) == [tmp_path / "oracle", tmp_path / "random"]
    summary = build_report(tmp_path, n_bootstrap=100)
    assert set(summary["runs"]) == {"random", "oracle"}
    assert json.loads(json.dumps(summary["runs"]["oracle"])) == single["runs"]["oracle"]
    assert summary["comparisons"] and summary["comparisons"][0]["better"] == "oracle"
    report = (tmp_path / "report.md").read_text()
    assert "## Pass@(1,T) by run" in report and "| oracle |" in report
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert "pass_at_1_curve.png" in pngs and "recovery.png" in pngs
    assert "heatmap_oracle_all.png" in pngs and "heatmap_random_Maze-Easy.png" in pngs
    assert all((tmp_path / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)
    # A single run directory rebuilds in place, to the same tables.
    again = build_report(tmp_path / "oracle", plots=False, n_bootstrap=100)
    assert json.loads(json.dumps(again)) == single


def test_report_refuses_incomplete_or_missing_runs(tmp_path):
    with pytest.raises(FileNotFoundError, match="no evaluation run"):
        build_report(tmp_path)
    evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], n=1, tasks=3, out=tmp_path, n_bootstrap=0)
    eps = tmp_path / "episodes.jsonl"
    eps.write_text("".join(eps.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(ValueError, match="incomplete"):
        build_report(tmp_path, plots=False)


def test_two_runs_of_one_agent_are_named_with_the_way_out(tmp_path):
    """A run's default label is its agent's name, so two runs of one agent collided with
    "labels must be unique", naming neither run nor how to tell them apart."""
    for env in (MAZE, "turnbudget/KeyQuest-Easy-v0"):
        evaluate(env, RandomAgent(), ks=[1], ts=[8], tasks=2, n_bootstrap=0,
                 out=tmp_path / "runs" / env.split("/")[1])  # fmt: skip
    with pytest.raises(ValueError) as error:
        build_report(tmp_path / "runs", plots=False)
    message = str(error.value)
    assert "share the label 'RandomAgent'" in message or "share the label 'random'" in message
    assert "Maze-Easy-v0" in message and "KeyQuest-Easy-v0" in message and "--label" in message


def test_a_run_still_being_written_is_named_as_such_not_as_incomplete(tmp_path):
    """A report of a run another evaluation was still writing said "it is incomplete (rerun
    the same command to resume it)", and the rerun was refused: the directory was in use."""
    import json as json_module

    from filelock import FileLock

    from turnbudget.eval.run.lock import HOLDER_FILE, LOCK_FILE

    run = tmp_path / "run"
    evaluate(MAZE, RandomAgent(), ks=[1], ts=[8], tasks=2, n_bootstrap=0, out=run)
    writer = FileLock(str(run / LOCK_FILE), timeout=0, thread_local=False, is_singleton=False)
    writer.acquire()  # (as another process's evaluation holds it)
    try:
        holder = {"pid": 4242, "host": "here", "started": "now", "command": "turnbudget eval"}
        (run / HOLDER_FILE).write_text(json_module.dumps(holder))
        with pytest.raises(ValueError, match=r"is being written by another evaluation: pid 4242"):
            build_report(run, plots=False)
    finally:
        writer.release()
    (run / HOLDER_FILE).unlink()
    assert build_report(run, plots=False)["runs"]  # (done: it reads as it is)


def test_report_of_a_run_without_step_records(tmp_path):
    """`record_steps=False` leaves an empty steps.jsonl and no `budget_counts`: the report
    has no per-budget table, and builds (it failed with a KeyError)."""
    result = evaluate(
        MAZE, RandomAgent(), ks=[1], ts=[5], n=1, tasks=2, out=tmp_path, record_steps=False,
        n_bootstrap=0,
    )  # fmt: skip
    summary = build_report(tmp_path, plots=False, n_bootstrap=0)
    assert summary["runs"][result.config.label] == json.loads(json.dumps(result.summary))
    assert "by_budget" not in result.summary["analysis"][MAZE]


def test_a_run_that_lost_its_run_json_is_named_not_left_out_of_the_report(tmp_path, capsys):
    """A directory of runs, one of them without its run.json: the report (and its
    comparisons) left that run out without a word."""
    from turnbudget.cli import main

    kwargs = dict(ks=[1], ts=[5], n=1, tasks=2, n_bootstrap=0)
    for agent, label in ((RandomAgent(), "random"), (OracleAgent(0.2), "oracle")):
        evaluate(MAZE, agent, label=label, out=tmp_path / label, **kwargs)
    (tmp_path / "random" / "run.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"holds episodes\.jsonl but no run\.json"):
        find_runs(tmp_path)
    assert main(["report", str(tmp_path), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / "random") in err, err
    assert not (tmp_path / "report.md").exists()


def test_advantage_halving_budget():
    ts = [10, 20, 30, 40]
    assert advantage_halving_budget(
        ts, [0.0, 0.2, 0.6, 0.8], [0.0, 0.0, 0.0, 0.0]
    ) == pytest.approx(25.0)
    assert advantage_halving_budget(ts, [0.5, 0.6, 0.7, 0.8], [0.0, 0.0, 0.0, 0.0]) is None
    assert advantage_halving_budget(ts, [0.1, 0.1, 0.1, 0.1], [0.2, 0.2, 0.2, 0.2]) is None
    # Exactly half at a grid point.
    assert advantage_halving_budget(ts, [0.0, 0.4, 0.6, 0.8], [0.0] * 4) == pytest.approx(20.0)
    # Budgets in another order are the same budgets (the last given was taken for max(T): 12.5).
    assert advantage_halving_budget(
        [40, 10, 30, 20], [0.8, 0.0, 0.6, 0.2], [0.0] * 4
    ) == pytest.approx(25.0)
    with pytest.raises(ValueError, match="`ts` values to be distinct"):  # (it gave None)
        advantage_halving_budget([20, 40, 40], [0.5, 0.9, 0.2], [0.2, 0.1, 0.1])


def test_compare_runs_pairs_only_comparable_runs():
    def run(label, pass1, errors=None):
        grid = {"ks": [1], "ts": [10, 20], "mean": [pass1], "low": [pass1], "high": [pass1]}
        cfg = {
            "envs": ["e"],
            "tasks": [0],
            "ts": [10, 20],
            "errors": errors,
            "reveal": None,
            "n": 1,
        }
        return {"config": cfg, "groups": {"e": {"truncate": grid}}}

    runs = {
        "a": run("a", [0.1, 0.9]),
        "b": run("b", [0.0, 0.1]),
        "c": run("c", [0.0, 0.0], errors=0.1),
    }
    rows = compare_runs(runs)
    assert [(r["better"], r["worse"]) for r in rows] == [("a", "b")]
    assert rows[0]["advantage_at_max_t"] == pytest.approx(0.8)
    assert rows[0]["halving_budget"] == pytest.approx(10 + 10 * (0.4 - 0.1) / (0.8 - 0.1))


def test_compare_runs_reads_max_t_wherever_the_config_lists_it():
    """Budgets listed [20, 10]: the advantage 'at max(T)' was the last listed, T = 10's."""

    def run(pass1):
        grid = {"ks": [1], "ts": [20, 10], "mean": [pass1], "low": [pass1], "high": [pass1]}
        cfg = {"envs": ["e"], "tasks": [0], "ts": [20, 10], "errors": None, "reveal": None, "n": 1}
        return {"config": cfg, "groups": {"e": {"truncate": grid}}}

    (row,) = compare_runs({"a": run([0.5, 0.9]), "b": run([0.5, 0.1])})
    assert row["advantage_at_max_t"] == 0.0 and not row["clear_at_max_t"]
    assert row["advantage_at_max_t_interval"] == row["advantage_interval_by_t"]["20"]
    for bad in (float("nan"), "x", None, -0.1, True):
        with pytest.raises(ValueError, match="min_advantage"):  # (NaN kept every pair)
            compare_runs({"a": run([0.5, 0.9])}, min_advantage=bad)


def test_compare_runs_gives_a_verdict_when_the_lower_mean_is_clearly_ahead_at_max_t(tmp_path):
    """Curves that cross: the row named the run with the higher mean over budgets, and read
    *no clear difference* though the other run was clearly ahead at max(T) (and a pair
    whose curves differ by min_advantage only at max(T), below it, was left out)."""

    class Sprinter(OracleAgent):
        """The oracle in half its episodes (fast), stuck on 'look' in the other half."""

        @property
        def name(self) -> str:
            return "sprinter"

        def reset(self, seed: int) -> None:
            super().reset(seed)
            self.stuck = np.random.default_rng(seed).random() < 0.5

        def act(self, observation: str, info: dict) -> str:
            return "look" if self.stuck else super().act(observation, info)

    settings = dict(ks=[1], ts=[4, 6, 8, 10, 12, 60], n=4, tasks=30, n_bootstrap=200)
    sprinter = evaluate(MAZE, Sprinter(0.0), label="sprinter", out=tmp_path / "a", **settings)
    slow = evaluate(MAZE, OracleAgent(0.7), label="slow", out=tmp_path / "b", **settings)
    (row,) = compare_runs({"sprinter": sprinter.summary, "slow": slow.summary})
    assert row["better"] == "sprinter" and row["advantage_at_max_t_interval"][1] < 0
    assert row["lower_at_max_t"] and not row["clear_at_max_t"]
    build_report(tmp_path, plots=False, n_bootstrap=200)
    assert "lower at max T (the curves cross)" in (tmp_path / REPORT_FILE).read_text()

    def run(pass1):
        grid = {"ks": [1], "ts": [1, 2, 3], "mean": [pass1], "low": [pass1], "high": [pass1]}
        cfg = {"envs": ["e"], "tasks": [0], "ts": [1, 2, 3], "errors": None, "reveal": None, "n": 1}
        return {"config": cfg, "groups": {"e": {"truncate": grid}}}

    (row,) = compare_runs({"a": run([0.54, 0.54, 0.3]), "b": run([0.5, 0.5, 0.38])})
    assert row["better"] == "a" and row["lower_at_max_t"] and row["advantage_at_max_t"] == -0.08


def test_length_buckets_cover_all_lengths():
    buckets = length_buckets([5, 6, 7, 8, 9, 10, 11, 12, 13])
    assert buckets[0][0] == 5 and buckets[-1][1] == 13 and len(buckets) == 3
    assert all(hi + 1 == lo for (_, hi), (lo, _) in itertools.pairwise(buckets))
    assert length_buckets([4, 4, 4]) == [(4, 4)]
    assert length_buckets([]) == []
    # No more lengths than buckets: one each (the lowest quantile edge repeated the shortest,
    # and two lengths, 5 and 9, made one row)
    assert length_buckets([5] * 10 + [9] * 10) == [(5, 5), (9, 9)]
    assert length_buckets([5, 6, 7]) == [(5, 5), (6, 6), (7, 7)]
    assert length_buckets([0, 1], 5) == [(0, 0), (1, 1)]


def test_cli_eval_and_report(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "eval", "--env", MAZE, "--agent", "oracle:0.2", "--k", "1,2", "--t", "5,10,20", "--n", "2",
        "--tasks", "0-3", "--errors", "0.1", "--out", str(out), "--quiet",
    ]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "oracle-eps0.2: 8 episodes (8 run now)" in printed and "Pass@(1,T)" in printed
    assert (out / "heatmap_oracle-eps0.2_Maze-Easy.png").exists()
    assert json.loads((out / "run.json").read_text())["tasks"] == [0, 1, 2, 3]
    (out / "report.md").unlink()
    assert main(["report", str(out), "--no-plots"]) == 0
    assert (out / "report.md").exists()
    assert (
        main(
            [
                "eval",
                "--env",
                MAZE,
                "--k",
                "1,4",
                "--n",
                "2",
                "--out",
                str(tmp_path / "x"),
                "--quiet",
            ]
        )
        == 2
    )
    assert "n >= max(K)" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nothing")]) == 2


def test_eval_cli_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, turnbudget.cli.eval, turnbudget.cli.report;"
        "print(sorted(m for m in ('matplotlib', 'tqdm', 'turnbudget.eval.run.evaluate') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_matplotlib_fails_before_running(tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were absent
    out = tmp_path / "run"
    argv = [
        "eval",
        "--env",
        MAZE,
        "--k",
        "1",
        "--t",
        "5",
        "--tasks",
        "1",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 2
    assert "pip install -e '.[plot]' in the turnbudget checkout" in capsys.readouterr().err
    assert not out.exists()
    assert main([*argv, "--no-plots"]) == 0


def test_missing_matplotlib_writes_no_part_of_the_report(tmp_path, monkeypatch, capsys):
    """`turnbudget report` without matplotlib wrote report.md and summary.json, then failed
    on the first plot: exit 2 beside a new report whose plots were an older run's or none."""
    import sys

    out = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[8], n=1, tasks=1, out=out, n_bootstrap=0,
             progress=False)  # fmt: skip
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were absent
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install -e '.[plot]' in the turnbudget checkout" in err
    assert not (out / REPORT_FILE).exists() and not (out / SUMMARY_FILE).exists()
    assert main(["report", str(out), "--no-plots"]) == 0
    assert (out / REPORT_FILE).exists() and not list(out.glob("*.png"))


def _assert_rows_keep_their_columns(report: str) -> None:
    """Every row of each table in ``report`` has its header's column count (an unescaped
    ``|`` splits a row)."""
    import re

    table: list[str] = []
    for line in [*report.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            cells = [len(re.split(r"(?<!\\)\|", row)) for row in table]
            assert len(set(cells)) == 1, table
        table = []


def test_a_label_with_markdown_in_it_neither_splits_a_table_row_nor_becomes_html(tmp_path):
    """A label may be any printable text (an agent's name): in report.md a ``|`` split the
    rows of every table it stood in, and ``<script>`` went into the page as HTML."""

    class Piped(RandomAgent):  # (an agent's repr goes into the runs table too)
        def __repr__(self) -> str:
            return "Piped(x='a|b', y=`c`)"

    hostile = "a|b <script>x</script> *c*"
    for label, agent in ((hostile, Piped()), ("plain", OracleAgent(0.0))):
        evaluate(
            MAZE, agent, ks=[1], ts=[3, 6], tasks=2, label=label, out=tmp_path / label.split("|")[0]
        )
    build_report(tmp_path, plots=False, n_bootstrap=50)
    report = (tmp_path / "report.md").read_text()
    assert "<script>" not in report and "&lt;script&gt;" in report
    _assert_rows_keep_their_columns(report)
    assert "a\\|b" in report


def test_hand_edited_settings_and_env_ids_stay_text_in_the_report(tmp_path):
    """A hand-edited run.json's ``errors`` closed its code span with a backtick (the rest,
    ``<img ... onerror>``, went into the page as HTML, and a ``|`` split the row), an env id
    went into every heading raw, and a label's ``![x](url)`` became a remote image."""
    import re

    from turnbudget.eval.run.plan import agent_seed
    from turnbudget.records import EPISODES_FILE, RUN_FILE, STEPS_FILE

    run = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[4], tasks=1, out=run)
    config = json.loads((run / RUN_FILE).read_text())
    env = "x<img src=x onerror=alert(1)>"
    config.update(
        errors="`<img src=x onerror=alert(2)>|", envs=[env], label="![x](https://e.example/b.png)"
    )
    (run / RUN_FILE).write_text(json.dumps(config))
    for name in (EPISODES_FILE, STEPS_FILE):
        lines = []
        for line in (run / name).read_text().splitlines():
            record = json.loads(line.replace(MAZE, env))
            if "agent_seed" in record:
                record["agent_seed"] = agent_seed(
                    config["seed"], record["env_id"], record["seed"], record["rep"]
                )
            lines.append(json.dumps(record) + "\n")
        (run / name).write_text("".join(lines))
    assert main(["report", "--no-plots", str(run)]) == 0
    report = (run / "report.md").read_text()
    outside_code = re.sub(r"(`+) .*? \1|`[^`]*`", "", report)
    assert "<img" not in outside_code and "x&lt;img" in report
    assert "![x](" not in report and "\\!\\[x\\](" in report
    assert '`` "`<img src=x onerror=alert(2)>\\|" ``' in report
    _assert_rows_keep_their_columns(report)


def test_a_run_json_setting_nested_past_the_report_is_one_line(tmp_path, capsys):
    """JSON's reader takes ``errors`` nested 600 deep; the report then failed with a
    RecursionError's traceback (exit 1), where `eval` refused the directory in one line."""
    from turnbudget.records import RUN_FILE

    run = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[4], tasks=1, out=run)
    config = json.loads((run / RUN_FILE).read_text())
    nested: list = []
    for _ in range(600):
        nested = [nested]
    (run / RUN_FILE).write_text(json.dumps({**config, "errors": nested}))
    assert main(["report", "--no-plots", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Expect `errors` to nest at most" in err


def test_a_label_starting_with_an_underscore_is_in_the_legend(tmp_path):
    """matplotlib leaves out of a legend the labels that start with ``_``: run ``_baseline``'s
    curve was drawn with no name."""
    pytest.importorskip("matplotlib")
    from turnbudget.eval.report.plots import _plot_text

    assert not _plot_text("_baseline").startswith("_") and "_baseline" in _plot_text("_baseline")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots()
    ax.plot([1, 2], [0, 1], label=_plot_text("_baseline"))
    assert [t.get_text() for t in ax.legend().get_texts()] == [_plot_text("_baseline")]
    plt.close(figure)


def test_a_logged_label_with_line_breaks_or_controls_stays_on_its_row(tmp_path):
    """`evaluate` refuses such a label, but a run logged before labels were checked (or a
    hand-edited ``run.json``) may hold one: its line break split the rows of report.md, and
    its ESC went into the page raw. Each is written as its escape instead."""
    import re

    from turnbudget.records import RUN_FILE

    run = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[3], tasks=2, out=run)
    config = json.loads((run / RUN_FILE).read_text())
    hostile = "evil\n| injected | row |\x1b[31m\u2028end"
    (run / RUN_FILE).write_text(json.dumps({**config, "label": hostile}))

    class Piped(RandomAgent):  # (an agent's repr goes into the runs table)
        def __repr__(self) -> str:
            return "Piped(\n| x |)"

    evaluate(MAZE, Piped(), ks=[1], ts=[3], tasks=2, label="piped", out=tmp_path / "piped")
    assert main(["report", "--no-plots", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text()
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u2028]", report)
    assert "evil\\n\\| injected \\| row \\|\\x1b\\[31m\\u2028end" in report  # ([: a link's)
    _assert_rows_keep_their_columns(report)


def test_a_label_with_dollar_signs_is_plotted_as_written(tmp_path):
    """A printable label such as ``run $\\foo$`` went to matplotlib's math parser, which
    failed the report's plots (and `turnbudget eval` and `report` exited 2)."""
    pytest.importorskip("matplotlib")
    for label in ("run $\\foo$", "cost $5"):
        evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[3, 6], tasks=2, label=label,
                 out=tmp_path / label.split()[0])  # fmt: skip
    build_report(tmp_path, plots=True, n_bootstrap=20)
    assert sorted(p.name for p in tmp_path.glob("*.png"))  # the plots were drawn


def test_a_logged_label_with_controls_is_plotted_as_its_escapes(tmp_path, recwarn):
    """The plots drew a hand-edited ``run.json``'s label as it was: matplotlib then warned
    "Glyph 27 ... missing from font", and the warning carried the raw ESC to stderr. Each
    control is drawn as its escape, as report.md writes it."""
    pytest.importorskip("matplotlib")
    from turnbudget.records import RUN_FILE

    run = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[3, 6], tasks=2, out=run)
    config = json.loads((run / RUN_FILE).read_text())
    (run / RUN_FILE).write_text(json.dumps({**config, "label": "red\x1b[31m\nrow"}))
    build_report(tmp_path, plots=True, n_bootstrap=20)
    assert sorted(p.name for p in tmp_path.glob("*.png"))
    shown = [str(w.message) for w in recwarn]
    assert not any("\x1b" in text or "Glyph" in text for text in shown), shown


def test_a_credential_in_a_hand_edited_run_json_stays_out_of_the_report(tmp_path):
    """`evaluate` writes run.json redacted, but the report read a hand-edited one as it was:
    a password in the agent's URL and API keys in the agent and the label went into
    report.md and summary.json. They are blanked; the summary stays JSON."""
    from turnbudget.records import RUN_FILE

    run = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[3], tasks=2, out=run)
    config = json.loads((run / RUN_FILE).read_text())
    agent = "LLMAgent(base_url='http://me:hunter22@host/v1', key='sk-abcdef123456')"
    (run / RUN_FILE).write_text(json.dumps({**config, "agent": agent, "label": "a sk-zz99zz99"}))
    assert main(["report", "--no-plots", str(tmp_path)]) == 0
    for name in ("report.md", "summary.json"):
        text = (tmp_path / name).read_text()
        for secret in ("hunter22", "abcdef123456", "zz99zz99"):
            assert secret not in text, (name, secret)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert list(summary["runs"]) == ["a sk-***"]
    assert "LLMAgent(base_url='http://***@host/v1'" in (tmp_path / "report.md").read_text()


def test_two_labels_never_share_a_row_of_the_report(tmp_path):
    """``x<y`` and ``x&lt;y`` both read ``x&lt;y`` in Markdown: one run was missing from
    every table of report.md (summary.json held both)."""
    for label, agent in (("x<y", OracleAgent(0.0)), ("x&lt;y", RandomAgent())):
        evaluate(MAZE, agent, ks=[1], ts=[3, 6], tasks=2, label=label, out=tmp_path / agent.name)
    build_report(tmp_path, plots=False, n_bootstrap=20)
    runs = (tmp_path / "report.md").read_text().split("## Runs")[1].split("\n\n")[1]
    rows = [row for row in runs.splitlines() if row.startswith("| x")]
    assert len(rows) == 2 and {row.split(" | ")[1][:7] for row in rows} == {"`Oracle", "`Random"}


def test_a_comparison_names_a_higher_run_only_when_its_interval_says_so(tmp_path):
    """Two runs of one agent that differ only in their seeds were reported as "better" and
    "worse", with an advantage and a halving budget, and no interval: noise read as a
    finding. The verdict now needs the interval at max T above 0; the oracle against random
    has one."""
    kwargs = dict(ks=[1], ts=[10, 12, 15, 20, 30], n=4, tasks=10, n_bootstrap=200)
    key = "turnbudget/KeyQuest-Easy-v0"
    for label, agent, seed in (("a", OracleAgent(0.3), 0), ("b", OracleAgent(0.3), 1),
                               ("random", RandomAgent(), 0)):  # fmt: skip
        evaluate(key, agent, seed=seed, label=label, out=tmp_path / label, **kwargs)
    summary = build_report(tmp_path, plots=False, n_bootstrap=200)
    rows = {(r["better"], r["worse"]): r for r in summary["comparisons"]}
    for row in rows.values():
        low, high = row["advantage_at_max_t_interval"]
        assert low <= row["advantage_at_max_t"] <= high
        assert row["clear_at_max_t"] == (low > 0)
        for t, (low_t, high_t) in row["advantage_interval_by_t"].items():
            assert low_t <= row["advantage_by_t"][t] <= high_t
    same = rows.get(("a", "b")) or rows.get(("b", "a"))
    assert same is not None  # (listed: their means differ by 0.05 somewhere, by chance)
    assert not same["clear_at_max_t"]
    assert rows[("a", "random")]["clear_at_max_t"] and rows[("b", "random")]["clear_at_max_t"]
    report = (tmp_path / "report.md").read_text()
    assert "higher at max T" in report and "*no clear difference*" in report


def test_a_run_without_k_1_still_reports_its_pass_at_1(tmp_path):
    """A run of ``ks=[2, 4]`` had no K = 1 row, and every Pass@(1,T) reader fell back to its
    first row: its Pass@(2,T) was shown as Pass@(1,T) and compared with other runs (an agent
    credited with +0.27 over the same episodes run with K = 1 among its ks). Every summary
    now estimates K = 1, which needs only one episode a task."""
    kwargs = dict(ts=[4, 8, 12], n=4, tasks=6, seed=3, n_bootstrap=50)
    with_1 = evaluate(
        MAZE, OracleAgent(0.4), ks=[1, 2, 4], label="with", out=tmp_path / "a", **kwargs
    )
    without = evaluate(
        MAZE, OracleAgent(0.4), ks=[2, 4], label="without", out=tmp_path / "b", **kwargs
    )
    assert without.grid()["ks"] == [1, 2, 4] == with_1.grid()["ks"]
    assert without.grid()["mean"] == with_1.grid()["mean"]
    assert without.grid()["mean"][0] != without.grid()["mean"][1]  # (K = 1 is its own row)
    comparisons = compare_runs({"with": with_1.summary, "without": without.summary})
    assert comparisons == []  # (the same episodes: no advantage to report)
    build_report(tmp_path, plots=False, n_bootstrap=50)
    report = (tmp_path / "report.md").read_text()
    pass_1 = report.split("## Pass@(1,T) by run")[1].split("\n\n")[2]
    rows = {row.split(" | ")[0]: row.split(" | ")[1:] for row in pass_1.splitlines()[2:]}
    assert rows["| with"] == rows["| without"]


def test_analysis_arguments_are_checked_by_name():
    """n_buckets=10**12 allocated 7 TiB of quantiles (0 and -1 were taken); budgets fewer than
    the values were an IndexError (more: a quiet None); no budget was 'max() arg is an empty
    sequence' and no K an empty grid."""
    from turnbudget.eval.analysis import feasibility_analysis, task_grid_arrays

    assert length_buckets([1, 2, 3], 10**12) == length_buckets([1, 2, 3], 3)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="`n_buckets`"):
            length_buckets([1, 2, 3], bad)
    for ts in ([10], [10, 20, 30]):
        with pytest.raises(ValueError, match="one budget in `ts` per value"):
            advantage_halving_budget(ts, [0.5, 0.6], [0.1, 0.1])
    episodes = [{"env_id": "e", "seed": 0, "turn_budget": 10, "success": False,
                 "first_success_turn": None, "turns_used": 10, "initial_distance": 4}]  # fmt: skip
    for call in (task_grid_arrays, feasibility_analysis):
        for ks, ts, mode, says in (
            ([1], [], "truncate", "`ts` to hold at least one"),
            ([], [10], "truncate", "`ks` to hold at least one"),
            ([0], [10], "truncate", "`ks` to hold positive ints"),
            ([1], [10], ["truncate"], "mode `truncate` or `rerun`"),
        ):
            with pytest.raises(ValueError, match=says):
                call(episodes, ks, ts, mode)


def test_build_report_and_load_run_check_their_arguments_by_name(tmp_path, monkeypatch):
    """``build_report("")`` reported the working directory (its report.md and summary.json
    written there), ``plots="no"`` drew the plots, and ``load_run`` of an int, bytes, ""
    or a file said pathlib's or the OS's error, naming no argument."""
    from turnbudget.eval import load_run

    run = tmp_path / "run"
    evaluate(MAZE, RandomAgent(), ks=[1], ts=[3], tasks=1, out=run, n_bootstrap=0)
    monkeypatch.chdir(run)  # (a run's own folder: "" was it)
    for bad, says in (
        ("", "`root` to be a directory path, got an empty one"),
        (5, "`root` to be a directory path"),
        (b"run", "`root` to be a directory path"),
    ):
        with pytest.raises(ValueError, match=says):
            build_report(bad, plots=False)
    assert not (run / REPORT_FILE).exists()
    for bad in ("no", 1, None):
        with pytest.raises(ValueError, match="`plots` to be True or False"):
            build_report(run, plots=bad)
    assert not (run / REPORT_FILE).exists()
    for bad, says in (
        ("", "`out` to be a directory path, got an empty one"),
        (5, "`out` to be a directory path"),
        (None, "`out` to be a directory path"),
    ):
        with pytest.raises(ValueError, match=says):
            load_run(bad)
    with pytest.raises(ValueError, match=r"`out` to be a run directory, got .*episodes\.jsonl"):
        load_run(run / "episodes.jsonl")


def test_the_report_writers_refuse_an_empty_path_naming_it(tmp_path, monkeypatch):
    """``write_run_summary("", ...)``, ``write_probe_report("", ...)`` and ``write_plots("",
    ...)`` wrote into the working directory (Path("") is ".")."""
    from turnbudget.eval import probe
    from turnbudget.eval.report import write_plots, write_probe_report, write_run_summary

    result = evaluate(MAZE, RandomAgent(), ks=[1], ts=[3], tasks=1, n_bootstrap=0)
    probed = probe(MAZE, RandomAgent(), tasks=1, kinds=["slip"], baseline_repeats=1,
                   n_bootstrap=0)  # fmt: skip
    summary = {"runs": {result.summary["label"]: result.summary}, "comparisons": []}
    monkeypatch.chdir(tmp_path)
    for write, name, value in (
        (write_run_summary, "out", result.summary),
        (write_probe_report, "out", probed.summary),
        (write_plots, "root", summary),
    ):
        with pytest.raises(ValueError, match=f"`{name}` to be a directory path, got an empty"):
            write("", value)
    assert list(tmp_path.iterdir()) == []


def _comparable_run(pass1, ts=(10, 20)):
    grid = {"ks": [1], "ts": list(ts), **{c: [list(pass1)] for c in ("mean", "low", "high")}}
    cfg = {"envs": ["e"], "tasks": [0], "ts": list(ts), "errors": None, "reveal": None, "n": 1}
    return {"config": cfg, "groups": {"e": {"truncate": grid}}}


@pytest.mark.parametrize(
    "spoil,says",
    [
        (lambda r: r.pop("config"), r"runs\['a'\]\['config'\] to be a mapping, but it is missing"),
        (lambda r: r.update(groups="e"), r"runs\['a'\]\['groups'\] to be a non-empty mapping, got str"),
        (lambda r: r.update(groups={}), r"runs\['a'\]\['groups'\] to be a non-empty mapping, got dict"),
        (lambda r: r["groups"]["e"]["truncate"]["mean"][0].__setitem__(0, float("nan")),
         r"\['truncate'\]\['mean'\]\[0\]\[0\] to be a finite number, got float nan"),
        (lambda r: r["groups"]["e"]["truncate"]["mean"][0].__setitem__(0, 10**400),
         r"\['mean'\]\[0\]\[0\] to be a finite number"),
        (lambda r: r["groups"]["e"]["truncate"]["low"][0].__setitem__(0, -0.5),
         r"\['low'\]\[0\]\[0\] to be in \[0, 1\], got -0.5"),
        (lambda r: r["groups"]["e"]["truncate"]["mean"][0].pop(),
         r"\['mean'\]\[0\] to hold one value per budget"),
        (lambda r: r["groups"]["e"]["truncate"].update(ks=[]), r"\['ks'\] to be a non-empty list"),
        (lambda r: r["groups"]["e"]["truncate"].update(ks=[2]), r"\['ks'\] to hold 1"),
        (lambda r: r["groups"]["e"]["truncate"].update(ts=[10, 40]),
         r"\['ts'\] to be the budgets of runs\['a'\]\['config'\]\['ts'\]"),
        (lambda r: r["groups"]["e"].pop("truncate"), r"with a 'truncate' or 'rerun' grid"),
        (lambda r: r["groups"].update(f=r["groups"].pop("e")), r"runs\['b'\]\['groups'\] to hold"),
    ],
)  # fmt: skip
def test_compare_runs_names_the_field_of_a_malformed_summary(spoil, says):
    """A malformed run summary was a bare KeyError ('config', 'mean'), a TypeError ('str'
    indices, None not subscriptable), a StopIteration (no group), an OverflowError, or quietly
    compared NaN cells; each is now a ValueError naming the run and the field."""
    bad = _comparable_run([0.1, 0.9])
    spoil(bad)
    with pytest.raises(ValueError, match=says):
        compare_runs({"a": bad, "b": _comparable_run([0.0, 0.1])})
    assert len(compare_runs({"a": _comparable_run([0.1, 0.9]), "b": _comparable_run([0.0, 0.1])}))


def test_mode_gap_refuses_grids_it_cannot_subtract():
    """mode_gap gave a bare KeyError for a grid without `mean`, numpy's UFuncTypeError for text,
    an OverflowError for a huge int, and broadcast grids over other budgets into a quiet gap."""
    from turnbudget.eval.analysis import mode_gap

    grid = {"ks": [1, 2], "ts": [5, 9], "mean": [[0.5, 0.6], [0.7, 0.8]]}
    assert mode_gap(grid, grid)["max_abs"] == 0.0
    for truncate, says in (
        ({"ks": [1, 2], "ts": [5, 9]}, r"truncate\['mean'\] to be a list, but it is missing"),
        ({**grid, "mean": "x"}, r"truncate\['mean'\] to be a list, got str"),
        ({**grid, "mean": [[10**400, 0.6], [0.7, 0.8]]}, r"truncate\['mean'\]\[0\]\[0\]"),
        ({**grid, "mean": [[0.5], [0.7]], "ts": [5]}, "the same ts"),
        (None, "truncate to be a mapping, got None"),
    ):
        with pytest.raises(ValueError, match=says):
            mode_gap(truncate, grid)


def test_the_report_names_the_field_of_a_malformed_summary(tmp_path):
    """render_markdown, render_probe_markdown, pair_with_runs and write_run_summary read
    summaries given as dicts: a missing or mistyped field was a bare KeyError or TypeError
    from inside a table."""
    from turnbudget.eval.report import pair_with_runs, render_markdown, write_run_summary
    from turnbudget.eval.report.markdown import render_probe_markdown

    result = evaluate(MAZE, OracleAgent(0.2), ks=[1], ts=[6, 12], n=1, tasks=2, n_bootstrap=0)
    good = result.summary
    render_markdown({"runs": {"a": good}, "comparisons": []})
    bad = json.loads(json.dumps(good))
    bad["analysis"][MAZE]["recovery_rate"] = "high"
    with pytest.raises(ValueError, match=r"\['analysis'\]\[.*\]\['recovery_rate'\] to be a finite"):
        render_markdown({"runs": {"a": bad}, "comparisons": []})
    bad = json.loads(json.dumps(good))
    del bad["config"]["agent"]
    with pytest.raises(
        ValueError, match=r"summary\['runs'\]\['run'\]\['config'\]\['agent'\] to be a str"
    ):
        write_run_summary(tmp_path, {**bad, "label": "run"})
    bad = json.loads(json.dumps(good))  # (an open lower end: a raw TypeError in a table)
    bad["analysis"][MAZE]["feasibility"]["by_ratio"][0]["ratio"] = [None, 1.0]
    with pytest.raises(ValueError, match=r"\['ratio'\] to start at a number, got None"):
        render_markdown({"runs": {"a": bad}, "comparisons": []})
    failed = evaluate(MAZE, RaisingAgent(0.2, seeds_of(0, [(MAZE, 1, 0)])), ks=[1], ts=[6, 12],
                      n=1, tasks=2, n_bootstrap=0, retries=0).summary  # fmt: skip
    render_markdown({"runs": {"a": failed}, "comparisons": []})
    for spoil, says in (
        (lambda b: b["mean"][0].__setitem__(0, None), r"\['as_losses'\]\['mean'\]\[0\]\[0\]"),
        (lambda b: b.update(ks=[2]), r"\['as_losses'\]\['ks'\] to hold K = 1"),
    ):  # (a raw TypeError, and "1 is not in list", from the bounds' lines)
        bad = json.loads(json.dumps(failed))
        spoil(bad["analysis"][MAZE]["failed_to_run"]["bounds"]["truncate"]["as_losses"])
        with pytest.raises(ValueError, match=says):
            render_markdown({"runs": {"a": bad}, "comparisons": []})
    for field in ("groups", "analysis"):  # (an int group: a raw TypeError in the sort)
        bad = json.loads(json.dumps(good))
        bad[field][7] = bad[field][MAZE]
        with pytest.raises(ValueError, match=rf"keys of .*\['{field}'\] to be env groups"):
            render_markdown({"runs": {"a": bad}, "comparisons": []})
    with pytest.raises(ValueError, match=r"run_summary\['label'\] to be a str, got None"):
        write_run_summary(tmp_path, {**good, "label": None})
    with pytest.raises(ValueError, match=r"summary\['config'\] to be a mapping, got None"):
        render_probe_markdown({"config": None, "agents": {}})
    with pytest.raises(ValueError, match=r"probe_summaries\[0\] to be a mapping, got str"):
        pair_with_runs(["probe_summary.json"], {})
    assert not (tmp_path / REPORT_FILE).exists()


def test_a_team_run_beside_probe_results_is_reported(tmp_path, capsys):
    """pair_with_runs read every run's config['agent'], which a team run's config has not
    (it has `agents`): `turnbudget report` on a directory with a team run and a
    probe_summary.json refused the probe file ('Expect a probe summary the report can read;
    KeyError: 'agent''). A team run is now not paired, and the report is written."""
    pytest.importorskip("pettingzoo")
    from turnbudget.eval import probe
    from turnbudget.eval.run.team import evaluate_team

    evaluate_team("vault_v0", {"operator": "random", "runner": "random"}, ks=[1], ts=[5, 10],
                  tasks=2, n=1, n_bootstrap=0, out=tmp_path / "team")  # fmt: skip
    evaluate(MAZE, OracleAgent(0.1), ks=[1], ts=[6, 12], n=1, tasks=2, n_bootstrap=0,
             out=tmp_path / "solo")  # fmt: skip
    probe(MAZE, [OracleAgent(0.1)], tasks=2, baseline_repeats=1, n_bootstrap=0, out=tmp_path)
    assert main(["report", str(tmp_path), "--no-plots"]) == 0
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert [row["run"] for row in summary["paired"]] == ["oracle-eps0.1"]


def test_a_run_is_paired_only_with_probes_of_the_same_envs(tmp_path):
    """Runs and probes were paired by the agent alone: an evaluation on Maze-Easy sat beside
    probe skills from KeyQuest-Easy in one row, read as one agent's comparison."""
    from turnbudget.eval import probe

    settings = dict(ks=[1], ts=[6], n=1, tasks=2, n_bootstrap=0)
    evaluate(MAZE, OracleAgent(0.1), **settings, label="maze", out=tmp_path / "maze")
    evaluate(KEYQUEST, OracleAgent(0.1), **settings, label="keyquest", out=tmp_path / "kq")
    probe(KEYQUEST, [OracleAgent(0.1)], tasks=2, baseline_repeats=1, n_bootstrap=0,
          out=tmp_path)  # fmt: skip
    build_report(tmp_path, plots=False, n_bootstrap=0)
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert [row["run"] for row in summary["paired"]] == ["keyquest"]


def test_a_paired_runs_label_is_escaped_as_in_every_other_table(tmp_path):
    """The table of observational rates beside probe skills wrote the run's label raw: a ``|``
    in it split the row and ``<b>`` went into the page as HTML."""
    from turnbudget.eval import probe

    evaluate(MAZE, OracleAgent(0.1), ks=[1], ts=[6], n=1, tasks=2, n_bootstrap=0,
             label="a|b <b>x</b>", out=tmp_path / "solo")  # fmt: skip
    probe(MAZE, [OracleAgent(0.1)], tasks=2, baseline_repeats=1, n_bootstrap=0, out=tmp_path)
    build_report(tmp_path, plots=False, n_bootstrap=0)
    report = (tmp_path / REPORT_FILE).read_text()
    section = report.split("### Observational rates beside probe skills")[1]
    row = next(line for line in section.splitlines() if line.startswith("| a"))
    assert row.startswith("| a\\|b &lt;b&gt;x&lt;/b&gt; |") and "<b>" not in report


@pytest.mark.parametrize(
    "spoil,says",
    [
        (lambda g: g["single_step"].update(rate=10**400), r"\['single_step'\]\['rate'\] to be a rate from 0 to 1"),
        # (each reached the report's tables as it was: 7.50, -0.30, -0.50)
        (lambda g: g["recovery"]["all"].update(recovery_rate=7.5), r"\['recovery_rate'\] to be a rate from 0 to 1"),
        (lambda g: g["noop_rate"].update(mean=-0.3, low=-0.5), r"\['noop_rate'\]\['mean'\] to be a rate from 0 to 1"),
        (lambda g: g["recovery"]["all"]["win_rate"].update(mean=-0.5, low=-0.9), r"\['win_rate'\]\['mean'\] to be a rate"),
        (lambda g: g["single_step_skill"].update(low=0.9, mean=0.5, high=0.95), r"\['single_step_skill'\] to hold low <= mean <= high"),
        (lambda g: g["recovery"]["all"].update(pairs=None), r"\['pairs'\] to be an int >= 0, got None"),
        (lambda g: g.pop("recovery"), r"\['recovery'\] to be a mapping, but it is missing"),
    ],
)  # fmt: skip
def test_report_cli_names_the_field_of_a_malformed_probe_summary(tmp_path, capsys, spoil, says):
    """A probe_summary.json holding an int past a float's range made `turnbudget report` end in
    a traceback (OverflowError); other damage was refused naming only the exception. Each is
    now one error line naming the file and the field, and exit status 2."""
    from turnbudget.eval import probe

    evaluate(
        MAZE, OracleAgent(0.1), ks=[1], ts=[6], n=1, tasks=2, n_bootstrap=0, out=tmp_path / "run"
    )
    result = probe(MAZE, [OracleAgent(0.1)], tasks=2, baseline_repeats=1, n_bootstrap=0)
    summary = json.loads(json.dumps(result.summary))
    spoil(summary["agents"]["oracle-eps0.1"][MAZE])
    (tmp_path / "probe_summary.json").write_text(json.dumps(summary))
    assert main(["report", str(tmp_path), "--no-plots"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "probe_summary.json" in err and "Traceback" not in err
    assert re.search(says, err)


def test_report_of_a_file_says_it_is_a_file(tmp_path, capsys):
    """A file given as the run directory was reported as 'No such run directory'."""
    (tmp_path / "afile").write_text("x")
    assert main(["report", str(tmp_path / "afile")]) == 2
    assert "afile is a file, not a run directory" in capsys.readouterr().err


def test_a_negative_seed_in_a_hand_edited_run_json_is_named(tmp_path, capsys):
    """NumPy's bare "expected non-negative integer" came out, naming no file nor field."""
    from turnbudget.records import RUN_FILE

    run = tmp_path / "run"
    evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[3], tasks=2, out=run)
    config = json.loads((run / RUN_FILE).read_text())
    (run / RUN_FILE).write_text(json.dumps({**config, "seed": -1}))
    assert main(["report", "--no-plots", str(run)]) == 2
    assert "run.json: Expect `seed` to be an int >= 0, got -1" in capsys.readouterr().err


def test_runs_at_other_budgets_get_a_pass_at_1_table_of_their_own(tmp_path):
    """One run at other budgets dropped the whole group's table: the runs that shared theirs
    (and were compared under Advantages) had no Pass@(1,T) row."""
    from turnbudget.eval import build_report

    for label, agent, ts in (("a", OracleAgent(0.0), [6, 10, 20]), ("b", RandomAgent(), [6, 10, 20]),
                             ("c", RandomAgent(), [6, 10, 30])):  # fmt: skip
        evaluate(MAZE, agent, ks=[1], ts=ts, tasks=3, n=1, out=tmp_path / label, label=label,
                 n_bootstrap=0)  # fmt: skip
    build_report(tmp_path, plots=False, n_bootstrap=0)
    text = (tmp_path / "report.md").read_text()
    section = text[text.index("## Pass@(1,T) by run") :].split("\n## ", 1)[0]
    assert "| run | T=6 | T=10 | T=20 |" in section and "| run | T=6 | T=10 | T=30 |" in section
    assert all(f"| {label} |" in section for label in "abc")


def test_runs_written_differently_under_the_same_conditions_are_compared(tmp_path):
    """Envs in another order, or errors=0.1 against {"rate": 0.1}: the same run, not compared."""
    envs = [MAZE, "turnbudget/KeyQuest-Easy-v0"]
    settings = {"ks": [1], "ts": [8, 16], "tasks": 3, "n": 1, "n_bootstrap": 0}
    runs = {
        "a": evaluate(envs, OracleAgent(0.0), errors=0.1, label="a", **settings).summary,
        "b": evaluate(envs[::-1], RandomAgent(), errors={"rate": 0.1}, label="b", **settings).summary,
    }  # fmt: skip
    rows = compare_runs(runs, min_advantage=0)
    assert [(r["better"], r["worse"]) for r in rows] == [("a", "b")]
    runs["b"] = evaluate(envs, RandomAgent(), errors=0.2, label="b", **settings).summary
    assert compare_runs(runs, min_advantage=0) == []  # (other errors: other conditions)


def test_a_summary_read_back_from_json_lists_its_budgets_in_order(tmp_path):
    """summary.json sorts its keys: "16" came before "8" in the per-budget table."""
    from turnbudget.eval.report import render_markdown

    result = evaluate(MAZE, RandomAgent(), ks=[1], ts=[8, 16, 24], tasks=2, n=1, label="r",
                      n_bootstrap=0)  # fmt: skip
    summary = json.loads(json.dumps({"runs": {"r": result.summary}, "comparisons": []},
                                    sort_keys=True))  # fmt: skip
    text = render_markdown(summary)
    table = text[text.index("| T | episodes (won) |") :].split("\n\n", 1)[0]
    rows = [
        line.split("|")[1].strip()
        for line in table.splitlines()
        if line[:3] in ("| 8", "| 1", "| 2")
    ]
    assert rows[:3] == ["8", "16", "24"], rows


@pytest.mark.parametrize(
    "first, second",
    [({"errors": 0.0}, {"errors": None}), ({"errors": {"rate": 0}}, {"errors": 0.0}),
     ({"reveal": "never"}, {"reveal": None}), ({"errors": 0.1}, {"errors": {"rate": 0.10}})],
)  # fmt: skip
def test_one_setting_spelt_two_ways_is_one_condition(first, second):
    """errors 0 against 0.0, or reveal "never" against None, play alike, but the runs were
    never compared (their conditions were compared as written)."""
    settings = {"ks": [1], "ts": [8, 16], "tasks": 3, "n": 1, "n_bootstrap": 0}
    runs = {
        "a": evaluate(MAZE, OracleAgent(0.0), label="a", **settings, **first).summary,
        "b": evaluate(MAZE, RandomAgent(), label="b", **settings, **second).summary,
    }
    assert [(r["better"], r["worse"]) for r in compare_runs(runs, min_advantage=0)] == [("a", "b")]


def test_team_runs_at_other_difficulties_are_not_compared():
    """The same team at easy and at hard was "made under the same conditions" (a team run's
    envs name only its game) and given a verdict: higher at max T."""
    pytest.importorskip("pettingzoo")
    from turnbudget.eval import evaluate_team

    settings = {"ks": [1], "ts": [10, 40], "tasks": 4, "n": 1, "n_bootstrap": 0}
    runs = {
        difficulty: evaluate_team(
            "vault_v0", dict.fromkeys(("operator", "runner"), OracleAgent(0.0)),
            difficulty=difficulty, label=difficulty, **settings,
        ).summary
        for difficulty in ("easy", "hard")
    }  # fmt: skip
    assert compare_runs(runs, min_advantage=0) == []
    from turnbudget.eval.report import render_markdown

    text = render_markdown({"runs": runs, "comparisons": []})
    assert "vault_v0 (easy)" in text and "vault_v0 (hard)" in text


def test_the_plots_show_a_single_budgets_interval_and_the_recovery_tail(tmp_path, monkeypatch):
    """At one T the Pass@(1,T) band had no width (the interval a hairline, the axis in tenths
    of a turn), and the turns-to-recover box plot hid its outliers (a tail up to 8 turns read
    as a maximum of 3)."""
    pytest.importorskip("matplotlib")
    from matplotlib.container import ErrorbarContainer

    from turnbudget.eval.report import plots

    drawn = {}
    save = plots.save_figure
    monkeypatch.setattr(
        plots,
        "save_figure",
        lambda fig, path: drawn.setdefault(Path(path).name, fig) and save(fig, path),
    )
    evaluate(MAZE, RandomAgent(), ks=[1], ts=[10], n=4, tasks=8, errors=0.3, n_bootstrap=50,
             out=tmp_path / "run")  # fmt: skip
    build_report(tmp_path / "run", plots=True, n_bootstrap=50)
    pass1 = next(fig for name, fig in drawn.items() if name == plots.PASS1_CURVE_FILE)
    (ax,) = pass1.axes
    (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert all(float(t).is_integer() for t in ax.get_xticks()), ax.get_xticks()
    recovery = next(fig for name, fig in drawn.items() if name.startswith("recovery"))
    fliers = [line for ax in recovery.axes for line in ax.lines if line.get_marker() == "o"]
    assert fliers, "the box plot draws its outliers"
    assert bars.lines[2]  # (the interval's bar at the one T)


def test_the_longest_labels_leave_the_figures_readable(tmp_path, monkeypatch):
    """Labels run to 128 bytes; from about 60 characters the Pass@(1,T) legend ran off the
    figure and hid the curves, and from 90 the panels collapsed to a sliver (matplotlib's
    "axes sizes collapsed to zero" warning). Each label is now cut round an ellipsis, two
    that read alike once cut each with a short hash, and the legend sits beside the panels."""
    pytest.importorskip("matplotlib")
    import warnings

    from turnbudget.eval.report import plots

    result = evaluate(MAZE, OracleAgent(0.2), ks=[1], ts=[4, 8], tasks=2, errors=0.2,
                      n_bootstrap=0, progress=False)  # fmt: skip
    labels = ["L" * 127 + "1", "L" * 127 + "2", "short"]
    summary = {"runs": {label: result.summary for label in labels}, "comparisons": []}
    figures = []
    real_save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or real_save(fig, path))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the collapse is a warning: now a failure)
        plots.plot_pass1_curves(summary, tmp_path / "p1.png")
        plots.plot_recovery_by_budget(summary, tmp_path / "rb.png")
        plots.plot_recovery(summary, tmp_path / "rec.png")
    for figure in figures[:2]:
        (legend,) = figure.legends
        shown = [t.get_text() for t in legend.get_texts()]
        assert len(set(shown)) == 3 and "short" in shown
        assert all(len(text) <= plots.SHOWN_LABEL for text in shown)
    ticks = [t.get_text() for t in figures[2].axes[0].get_xticklabels()]
    assert len(set(ticks)) == 3 and max(map(len, ticks)) <= plots.SHOWN_LABEL


def test_a_run_keeps_its_colour_in_every_panel_and_in_the_legend(tmp_path, monkeypatch):
    """Colours followed matplotlib's cycle, which restarts in each panel: with a run missing
    from one env's panel the others' colours shifted there, and the one legend beside the
    panels gave two runs one colour, pointing at the wrong curve."""
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    from turnbudget.eval.report import plots

    grid = dict(ks=[1], ts=[4, 8], tasks=2, errors=0.2, n_bootstrap=0, progress=False)
    both = ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"]
    runs = {
        "A": evaluate(both, OracleAgent(0.9), **grid).summary,
        "B": evaluate(both[0], OracleAgent(0.0), **grid).summary,
        "C": evaluate(both, OracleAgent(0.3), **grid).summary,
    }
    summary = {"runs": runs, "comparisons": []}
    figures = []
    real_save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or real_save(fig, path))  # fmt: skip
    plots.plot_pass1_curves(summary, tmp_path / "p1.png")
    plots.plot_recovery_by_budget(summary, tmp_path / "rb.png")
    for figure in figures:
        (legend,) = figure.legends
        named = {
            text.get_text(): to_hex(handle.get_color())
            for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
        }
        assert len(set(named.values())) == len(named) == 3
        for ax in figure.axes:
            for line in ax.get_lines():
                if line.get_label() in named:
                    assert to_hex(line.get_color()) == named[line.get_label()], line.get_label()


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_summary_json_that_is_no_file_is_replaced_not_read(tmp_path, kind):
    """The report read the old summary.json whole to tell whether it changed: a FIFO there
    blocked `report` (and `eval` after its last episode, holding its lock) for ever, and a
    link to /dev/zero filled its memory."""
    from _support import make_not_regular, run_child

    run = tmp_path / "run"
    evaluate(MAZE, RandomAgent(), ks=[1], ts=[4], n=1, tasks=2, n_bootstrap=0, out=run)
    assert main(["report", str(run), "--no-plots"]) == 0
    expected = (run / SUMMARY_FILE).read_text()
    (run / SUMMARY_FILE).unlink()
    make_not_regular(run / SUMMARY_FILE, kind)
    code = "import sys; from turnbudget.cli import main; sys.exit(main(sys.argv[1:]))"
    done = run_child(code, "report", str(run), "--no-plots")
    assert done.returncode == 0, done.stderr
    assert (run / SUMMARY_FILE).is_file() and not (run / SUMMARY_FILE).is_symlink()
    assert (run / SUMMARY_FILE).read_text() == expected
