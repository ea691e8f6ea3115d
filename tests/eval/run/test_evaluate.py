from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _faults import GATED_CLI, wait_until

from turnbudget.agents import ORACLE_KEY, OracleAgent, RandomAgent
from turnbudget.eval.estimator import pass_at_kt
from turnbudget.eval.report import write_run_summary
from turnbudget.eval.run.evaluate import EPISODES_FILE, STEPS_FILE, evaluate, read_jsonl

MAZE = "turnbudget/Maze-Easy-v0"
KEYQUEST = "turnbudget/KeyQuest-Easy-v0"
REPO = Path(__file__).resolve().parents[3]


class HurryAgent:
    """Budget-aware: wanders at random while many turns are left, then follows the oracle.

    It reads the turns left from the observation, where ``reveal="always"``
    (`RevealBudget`) writes "[N turns left]".
    """

    needs_oracle = True
    budget_aware = True
    name = "hurry"

    def __init__(self, slack: int = 12):
        self.slack = slack
        self._random = RandomAgent()

    def reset(self, seed: int) -> None:
        self._random.reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        turns_left = int(re.search(r"\[(\d+) turns? left\]", observation).group(1))
        if turns_left > self.slack:
            return self._random.act(observation, info)
        return info[ORACLE_KEY][0]


def summary_text(out: Path) -> str:
    return (out / "summary.json").read_text()


def episode_lines(out: Path) -> list[str]:
    return sorted((out / EPISODES_FILE).read_text().splitlines())


def step_keys(out: Path) -> list[tuple[str, int]]:
    return sorted((r["episode_id"], r["turn"]) for r in read_jsonl(out / STEPS_FILE)[0])


def test_grid_matches_the_episode_records():
    result = evaluate(
        [MAZE, KEYQUEST], OracleAgent(0.4), ks=[1, 2, 4], ts=[4, 8, 16], n=4, tasks=3,
        n_bootstrap=50,
    )  # fmt: skip
    assert len(result.episodes) == 2 * 3 * 4
    assert result.config.mode == "truncate"
    by_task: dict[tuple[str, int], list[int | None]] = {}
    for e in result.episodes:
        assert e["turn_budget"] == 16 and e["turns_used"] <= 16
        fst = e["first_success_turn"] if e["success"] else None
        by_task.setdefault((e["env_id"], e["seed"]), []).append(fst)
    expected = np.mean([pass_at_kt(v, [1, 2, 4], [4, 8, 16]) for v in by_task.values()], axis=0)
    np.testing.assert_allclose(result.grid("all")["mean"], np.round(expected, 6))
    maze = [v for (env, _), v in by_task.items() if env == MAZE]
    expected_maze = np.mean([pass_at_kt(v, [1, 2, 4], [4, 8, 16]) for v in maze], axis=0)
    np.testing.assert_allclose(result.grid(MAZE)["mean"], np.round(expected_maze, 6))
    # Steps come back in memory when there is no output directory.
    assert len(result.steps) == sum(e["turns_used"] for e in result.episodes)


@pytest.mark.parametrize("agent", [RandomAgent(), OracleAgent(0.3)], ids=repr)
def test_truncate_and_rerun_agree_exactly_for_a_budget_blind_agent(agent):
    result = evaluate(
        [MAZE, KEYQUEST], agent, ks=[1, 2], ts=[3, 6, 10, 20], n=3, tasks=4, mode="both",
        errors=0.1, n_bootstrap=50,
    )  # fmt: skip
    for group in (MAZE, KEYQUEST, "all"):
        entry = result.summary["groups"][group]
        assert entry["truncate"]["mean"] == entry["rerun"]["mean"]
        assert entry["gap"]["max_abs"] == 0.0
    # And they are not trivially zero: success does depend on T here.
    if isinstance(agent, OracleAgent):
        means = np.array(result.grid("all", "truncate")["mean"])
        assert means[0, 0] < means[0, -1]


def test_a_gap_over_episodes_that_failed_to_run_says_so(tmp_path):
    """Each mode scores the episodes that ran in it: where some failed, the gap holds which
    failed beside any reading of the budget, and it was shown as if it measured only that."""
    from _faults import RaisingAgent, seeds_of

    from turnbudget.eval.report import build_report

    agent = RaisingAgent(0.3, seeds_of(0, [(MAZE, 1, 0), (MAZE, 2, 1)]))
    result = evaluate(MAZE, agent, ks=[1], ts=[6, 12], n=2, tasks=4, mode="both", retries=0,
                      n_bootstrap=0, out=tmp_path / "run")  # fmt: skip
    failed = result.summary["failed_to_run"]["episodes"]
    assert failed > 0 and result.summary["groups"][MAZE]["gap"]["episodes_failed"] == failed
    build_report(tmp_path, plots=False, n_bootstrap=0)
    assert (
        f"{failed} episodes failed to run, and each mode is scored"
        in (tmp_path / "report.md").read_text()
    )
    clean = evaluate(MAZE, OracleAgent(0.3), ks=[1], ts=[6, 12], n=2, tasks=4, mode="both",
                     n_bootstrap=0)  # fmt: skip
    assert "episodes_failed" not in clean.summary["groups"][MAZE]["gap"]


def test_truncate_and_rerun_differ_for_a_budget_aware_agent():
    result = evaluate(
        MAZE,
        HurryAgent(),
        ks=[1, 2],
        ts=[14, 20, 30, 60],
        n=2,
        tasks=6,
        mode="both",
        reveal="always",
        n_bootstrap=50,
    )
    gap = result.summary["groups"][MAZE]["gap"]
    assert gap["max_abs"] > 0.2
    truncate = np.array(result.grid(MAZE, "truncate")["mean"])
    rerun = np.array(result.grid(MAZE, "rerun")["mean"])
    # Rerun at T: the agent hurries in time; truncated from T=60 it is still wandering at T=20.
    assert rerun[0, 1] > truncate[0, 1]


def test_a_grid_the_run_has_not_is_a_clear_error_and_all_is_a_one_env_run_s_own():
    """grid("all"), as the guide writes it, was a KeyError on a one-env run (its only group
    is its env's), and so were a mode or group the run has no grid of."""
    result = evaluate(MAZE, OracleAgent(0.0), ks=[1], ts=[30], n=1, tasks=3, n_bootstrap=0)
    assert result.grid("all") == result.grid(MAZE) == result.grid()
    for group, mode, named in (("nope", None, "group"), (None, "rerun", "mode"),
                               (None, "both", "mode"), ([1], None, "group")):  # fmt: skip
        with pytest.raises(ValueError, match=f"Expect `{named}` to be one of this run's"):
            result.grid(group, mode)


def test_auto_mode_reruns_when_the_budget_is_visible():
    common = dict(ks=[1], ts=[5, 10], n=1, tasks=2, n_bootstrap=0)
    assert evaluate(MAZE, RandomAgent(), **common).config.mode == "truncate"
    visible = evaluate(MAZE, RandomAgent(), reveal="always", **common)
    assert visible.config.mode == "rerun"
    assert sorted({e["turn_budget"] for e in visible.episodes}) == [5, 10]
    assert evaluate(MAZE, HurryAgent(), reveal="always", **common).config.mode == "rerun"
    assert (
        evaluate(MAZE, RandomAgent(), reveal={"mode": "never"}, **common).config.mode == "truncate"
    )
    assert (
        evaluate(MAZE, RandomAgent(), reveal={"mode": "final=2"}, **common).config.mode == "rerun"
    )


class PlainAgent:
    """An agent with the default repr (it holds a memory address)."""

    def reset(self, seed: int) -> None:
        self.agent = RandomAgent()
        self.agent.reset(seed)

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        return self.agent.act(observation, info)


def test_an_agent_with_a_default_repr_still_resumes(tmp_path):
    kwargs = dict(ks=[1], ts=[5], n=1, tasks=2, out=tmp_path, n_bootstrap=0)
    first = evaluate(MAZE, PlainAgent(), **kwargs)
    again = evaluate(MAZE, PlainAgent(), **kwargs)
    assert first.config.agent.endswith("PlainAgent") and again.n_run == 0


def test_results_are_identical_for_one_and_two_workers(tmp_path):
    kwargs = dict(
        ks=[1, 2, 4], ts=[4, 8, 16, 32], n=4, tasks=5, errors=0.1, n_bootstrap=200, mode="both"
    )
    one = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), workers=1, out=tmp_path / "w1", **kwargs)
    two = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), workers=2, out=tmp_path / "w2", **kwargs)
    assert one.summary == two.summary
    for result in (one, two):  # the report is the caller's: its summary.json, byte for byte
        write_run_summary(result.out, result.summary)
    assert summary_text(tmp_path / "w1") == summary_text(tmp_path / "w2")
    assert episode_lines(tmp_path / "w1") == episode_lines(tmp_path / "w2")
    assert sorted((tmp_path / "w1" / STEPS_FILE).read_text().splitlines()) == sorted(
        (tmp_path / "w2" / STEPS_FILE).read_text().splitlines()
    )


def test_rerunning_a_finished_run_resumes_without_running_anything(tmp_path):
    kwargs = dict(ks=[1, 2], ts=[5, 10], n=2, tasks=3, out=tmp_path, n_bootstrap=50)
    first = evaluate(MAZE, RandomAgent(), **kwargs)
    before = episode_lines(tmp_path)
    again = evaluate(MAZE, RandomAgent(), **kwargs)
    assert first.n_run == 6 and again.n_run == 0
    assert episode_lines(tmp_path) == before
    assert again.summary == first.summary


def test_resume_with_a_different_configuration_is_refused(tmp_path):
    evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], n=1, tasks=2, out=tmp_path, n_bootstrap=0)
    with pytest.raises(ValueError, match="differs in: ts"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[6], n=1, tasks=2, out=tmp_path, n_bootstrap=0)
    redo = evaluate(
        MAZE, RandomAgent(), ks=[1], ts=[6], n=1, tasks=2, out=tmp_path, overwrite=True,
        n_bootstrap=0,
    )  # fmt: skip
    assert redo.n_run == 2


def test_torn_logs_are_repaired_on_resume(tmp_path):
    kwargs = dict(ks=[1, 2], ts=[5, 20], n=2, tasks=3, out=tmp_path, errors=0.1, n_bootstrap=50)
    clean = evaluate(MAZE, OracleAgent(0.3), **kwargs).summary
    eps_path, steps_path = tmp_path / EPISODES_FILE, tmp_path / STEPS_FILE
    lines = eps_path.read_text().splitlines(keepends=True)
    dropped = json.loads(lines[-1])["episode_id"]
    # What a kill mid-write leaves: the last episode line torn, its steps whole,
    # and the first lines of the next episode's steps, the last one torn.
    eps_path.write_text("".join(lines[:-1]) + lines[-1][:25])
    step_lines = steps_path.read_text().splitlines(keepends=True)
    with steps_path.open("a") as f:
        f.write("".join(step_lines[:3]) + step_lines[3][:40])
    resumed = evaluate(MAZE, OracleAgent(0.3), **kwargs)
    assert resumed.n_run == 1 and resumed.summary == clean
    assert len(episode_lines(tmp_path)) == len(lines)
    keys = step_keys(tmp_path)
    assert len(keys) == len(set(keys)) == sum(e["turns_used"] for e in resumed.episodes)
    assert any(k[0] == dropped for k in keys)


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="n >= max"):
        evaluate(MAZE, RandomAgent(), ks=[1, 4], ts=[5], n=2, tasks=1)
    with pytest.raises(ValueError, match="mode"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, mode="fast")
    with pytest.raises(ValueError, match="ts"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[0, 5], tasks=1)
    with pytest.raises(ValueError, match="workers"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, workers=0)
    with pytest.raises(ValueError, match="turnbudget list"):
        evaluate("turnbudget/Nope-v0", RandomAgent(), ks=[1], ts=[5], tasks=1)
    with pytest.raises(ValueError, match="Cannot build"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, errors={"rate": 2.0})
    with pytest.raises(ValueError, match="Cannot build"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, reveal="sometimes")
    with pytest.raises(ValueError, match="JSON"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, errors={"rate": {0.1}})


@pytest.mark.parametrize(
    ("key", "bad"),
    [(key, bad) for key, name in [("mode", "rerun"), ("error_draws", "shared")]
     for bad in (np.array([name]), "x" * 10**6)],
)  # fmt: skip
def test_settings_that_are_no_name_are_refused_briefly(key, bad):
    """As `evaluate_team`'s: a NumPy array of one name passed the ``in`` check (``mode``
    raised "unhashable type", ``error_draws`` went into the run's configuration), and a
    hostile string was quoted whole (a 1 MB message)."""
    with pytest.raises(ValueError, match=f"Expect `{key}` to be one of") as caught:
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, **{key: bad})
    assert len(str(caught.value)) < 300


def _eval_args(out: Path, agent: str = "oracle:0.3") -> list[str]:
    return [
        "eval", "--env", f"{MAZE},{KEYQUEST}", "--agent", agent, "--k", "1,2,4",
        "--t", "10,20,40,80", "--n", "4", "--tasks", "50", "--errors", "0.1", "--workers", "2",
        "--out", str(out), "--quiet", "--no-plots",
    ]  # fmt: skip


@pytest.mark.timeout(600, method="thread")  # a guard: the wait for the gate has no deadline
def test_resume_after_kill_gives_the_same_tables(tmp_path):
    killed, clean, gate = tmp_path / "killed", tmp_path / "clean", tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    cli = [sys.executable, "-m", "turnbudget.cli"]
    # The oracle, except that one worker stops for good once 100 episodes are logged: the
    # run cannot end before the kill, while the other worker goes on playing and logging.
    eps = killed / EPISODES_FILE
    gated = f"gated:0.3,{gate},{eps},100"
    proc = subprocess.Popen([*GATED_CLI, *_eval_args(killed, gated)], env=env,
                            start_new_session=True)  # fmt: skip
    try:
        assert wait_until((gate / "blocked").exists, proc), "the run ended before the kill"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its workers, mid-run
        proc.wait()
    n_before = eps.read_bytes().count(b"\n")
    assert 100 <= n_before < 400  # of 2 ids x 50 tasks x n=4
    subprocess.run([*cli, *_eval_args(killed)], env=env, check=True)
    subprocess.run([*cli, *_eval_args(clean)], env=env, check=True)
    assert summary_text(killed) == summary_text(clean)
    assert episode_lines(killed) == episode_lines(clean)
    keys = step_keys(killed)
    assert len(keys) == len(set(keys)) and keys == step_keys(clean)


class AsyncOracle:
    """The coroutine form of OracleAgent, to drive the engine's batch path."""

    needs_oracle = True

    def __init__(self) -> None:
        self.agent = OracleAgent(0.3)

    async def reset_async(self, seed: int) -> None:
        self.agent.reset(seed)

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str:
        return self.agent.act(observation, info)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_batch_agent_gives_the_same_results_as_its_per_episode_form(workers):
    from turnbudget.agents import AsyncBatch

    kwargs = dict(ks=[1, 2], ts=[6, 12, 24], n=3, tasks=4, errors=0.1, n_bootstrap=50)
    single = evaluate([MAZE, KEYQUEST], OracleAgent(0.3), label="x", **kwargs)
    batch = evaluate(
        [MAZE, KEYQUEST], AsyncBatch(AsyncOracle, max_batch_size=5), label="x", workers=workers,
        **kwargs,
    )  # fmt: skip
    assert batch.config.needs_oracle
    assert batch.summary["groups"] == single.summary["groups"]
    assert batch.episodes == single.episodes


COMMAND = "go north " + "x" * 2_000_000  # one 2 MB command, sent every turn
REPLY = "y" * 5_000_000  # one 5 MB model reply, noted every turn


class FloodingAgent:
    """Sends a 2 MB command every turn and notes a 5 MB raw reply, as a runaway LLM would."""

    name = "flooding"

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        return COMMAND

    def step_note(self) -> dict[str, Any]:
        return {"reply": REPLY, "parse": "none", "tokens_out": 5, "extra": {"echo": [REPLY]}}


def test_huge_commands_and_replies_are_capped_in_the_logs(tmp_path):
    """Every recorded string is cut to MAX_RECORD_TEXT characters (the issue: 2 MB commands
    made 200 MB of step records for 10 episodes, a 5 MB reply 77 MB for 16 steps)."""
    from turnbudget.records import MAX_RECORD_TEXT

    result = evaluate(MAZE, FloodingAgent(), ks=[1], ts=[4], tasks=2, out=tmp_path, n_bootstrap=0)
    steps = read_jsonl(tmp_path / STEPS_FILE)[0]
    assert len(steps) == 8 and not any(s["valid_action"] for s in steps)  # spent turns
    for step in steps:
        note = step["agent"]
        for text in (step["action"], note["reply"], note["extra"]["echo"][0]):
            assert len(text) == MAX_RECORD_TEXT and "characters in all, sha256" in text
        assert note["tokens_out"] == 5
    assert result.episodes[0]["agent"] == {"tokens_out": 20, "steps": 4}
    size = (tmp_path / STEPS_FILE).stat().st_size + (tmp_path / EPISODES_FILE).stat().st_size
    assert size < len(steps) * 4 * MAX_RECORD_TEXT


@pytest.mark.parametrize(
    "errors",
    [{"rate": 0.2, "kinds": ("slip", "transient")}, {"schedule": {2: "slip"}}],
    ids=["a-tuple", "int-keys"],
)
def test_the_same_call_again_resumes_whatever_json_makes_of_its_settings(tmp_path, errors):
    """run.json reads a tuple back as a list and an int key as a string: the same call again
    was refused as "a run with a different configuration (differs in: errors)"."""

    def call():
        return evaluate(
            "turnbudget/Maze-Easy-v0", OracleAgent(0.1), ks=[1], ts=[5, 10], tasks=2,
            errors=errors, n_bootstrap=0, out=tmp_path / "run",
        )  # fmt: skip

    first = call()
    again = call()
    assert first.n_run == 2 and again.n_run == 0
    assert again.summary == first.summary


def test_a_result_prints_short():
    """The dataclass repr printed every episode and step record (about 1 MB for the README's
    example) in a notebook cell or a REPL."""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval import probe

    result = evaluate(MAZE, OracleAgent(0.3), ks=[1], ts=[8], tasks=3, n_bootstrap=0)
    assert repr(result) == (
        "EvalResult(label='oracle-eps0.3', episodes=3, n_run=3, "
        f"steps in memory={len(result.steps)}, out=None)"
    )
    probes = probe(MAZE, OracleAgent(0.3), tasks=2)
    assert len(repr(probes)) < 200 and f"records={len(probes.records)}" in repr(probes)
    from turnbudget.eval import evaluate_team

    team = evaluate_team("race_v0", {"player_0": "oracle", "player_1": "house"}, ks=[1],
                         ts=[30], tasks=3, n_bootstrap=0)  # fmt: skip
    assert len(repr(team)) < 200 and "episodes=3" in repr(team)


def test_an_id_without_its_namespace_is_named_with_the_one_meant():
    """Gymnasium's "Environment `Maze-Easy` doesn't exist" named the wrong cause: it does,
    under the turnbudget/ namespace."""
    from turnbudget.agents import RandomAgent
    from turnbudget.eval import probe

    for name in ("Maze-Easy-v0", "Maze-Easy"):  # (an unversioned id too)
        with pytest.raises(ValueError, match=r"did you mean 'turnbudget/Maze-Easy-v0'\?"):
            evaluate(name, RandomAgent(), ts=[5], tasks=2)
        with pytest.raises(ValueError, match=r"did you mean 'turnbudget/Maze-Easy-v0'\?"):
            probe(name, RandomAgent(), tasks=1)
