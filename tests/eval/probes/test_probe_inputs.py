"""The probe engine on agents, games and arguments at the edge of what it documents."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from _wrapper_stub import LineWorld

from turnbudget.agents import OracleAgent, RandomAgent
from turnbudget.eval import probe
from turnbudget.wrappers import TurnBudget

MAZE = "turnbudget/Maze-Easy-v0"

SMALL = dict(tasks=3, n_bootstrap=0, baseline_repeats=1)


def _register(name: str, game: type) -> str:
    env_id = f"turnbudget-test/{name}-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=lambda **kw: TurnBudget(game(length=6), 60),
                     disable_env_checker=True)  # fmt: skip
    return env_id


class NoSetback(LineWorld):
    inject_setback = None


class RefusedOracle(LineWorld):
    def optimal_actions(self):  # (lists a command the game refuses)
        return [] if self.won or self.lost else ["fly forward"]


class BatchOracle:
    """A batch agent with neither ``max_batch_size`` nor ``end_episode``, both optional."""

    needs_oracle = True

    def reset_episode(self, episode_id, seed):
        pass

    def act_batch(self, episode_ids, observations, infos):
        return [info["oracle_actions"][0] for info in infos]


@pytest.mark.timeout(120, method="thread")
def test_a_batch_agent_needs_neither_max_batch_size_nor_end_episode():
    """Without ``max_batch_size`` the driver failed with AttributeError; without
    ``end_episode`` it spun forever once the first episode ended."""
    from turnbudget.eval import evaluate

    result = probe("turnbudget/Maze-Easy-v0", BatchOracle(), tasks=2, n_bootstrap=0,
                   baseline_repeats=1)  # fmt: skip
    single = [r for r in result.records if r["role"] == "agent" and r["probe"] == "single"]
    assert single and all(r["optimal"] for r in single) and not result.failed
    run = evaluate("turnbudget/Maze-Easy-v0", BatchOracle(), ks=[1], ts=[30], tasks=2)
    assert all(e["success"] for e in run.episodes)


def test_slip_probes_need_no_setback_from_the_game():
    """A slip-only run was refused: 'Probes need the oracle methods ['inject_setback']'."""
    env_id = _register("NoSetbackLine", NoSetback)
    result = probe(env_id, OracleAgent(0.0), kinds=["slip"], **SMALL)
    assert {r["kind"] for r in result.records if r["probe"] == "recovery"} == {"slip"}
    with pytest.raises(ValueError, match=r"oracle methods \['inject_setback'\]"):
        probe(env_id, OracleAgent(0.0), kinds=["setback"], **SMALL)


def test_an_oracle_listing_a_command_the_game_refuses_is_refused_naming_it():
    """Every probe's state is a prefix of the oracle's plan: a refused 'optimal' command left
    every state at the start while the records said otherwise, and was judged optimal."""
    env_id = _register("RefusedOracleLine", RefusedOracle)
    with pytest.raises(ValueError, match=r"RefusedOracle's oracle listed 'fly forward' as optimal"):
        probe(env_id, RandomAgent(), **SMALL)


def test_endless_prefixes_or_kinds_are_refused_not_built():
    env_id = _register("ProbeLine", LineWorld)
    with pytest.raises(ValueError, match="at most 1000 `prefixes`"):
        probe(env_id, RandomAgent(), prefixes=itertools.repeat(0.5), **SMALL)
    with pytest.raises(ValueError, match="Expect `kinds` to be distinct kinds"):
        probe(env_id, RandomAgent(), kinds=itertools.repeat("slip"), **SMALL)


def test_an_aborted_probe_run_does_not_promise_a_resume(tmp_path):
    """Probes keep nothing until every probe has run: the abort said 'Finished episodes are
    kept; ... rerun the same command to resume'."""
    from turnbudget.eval.run.backends import EvaluationAborted

    class Numbers:
        def reset(self, seed):
            pass

        def act(self, observation, info):
            return 42

    with pytest.raises(EvaluationAborted, match="No probe result is saved") as caught:
        probe("turnbudget/Maze-Easy-v0", Numbers(), tasks=2, n_bootstrap=0, retries=0,
              baseline_repeats=1, out=tmp_path / "run")  # fmt: skip
    assert "resume" not in str(caught.value)


def test_the_team_step_probe_refuses_an_answer_that_is_not_text():
    """A non-str answer was scored as a wrong command (skill -1) where `probe` fails it."""
    from turnbudget.eval.probes.team import team_step_probe

    class Numbers:
        def reset(self, seed):
            pass

        def act(self, observation, info):
            return 7

    with pytest.raises(TypeError, match="Expect the agent of 'operator' to answer a str, got 7"):
        team_step_probe("vault_v0", {"operator": Numbers(), "runner": "random"}, tasks=2)


@pytest.fixture(scope="module")
def two_probed():
    from turnbudget.agents import OracleAgent
    from turnbudget.eval import probe

    result = probe(
        "turnbudget/Maze-Easy-v0", [OracleAgent(0.3), OracleAgent(0.1)], tasks=2,
        baseline_repeats=1, n_bootstrap=0,
    )  # fmt: skip
    return result.config.to_dict(), result.records


@pytest.mark.parametrize(
    "base,other", [("random", "oracle-eps0.1"), ("oracle-eps0.3", "oracle-eps0.01")]
)
def test_compare_probes_refuses_a_label_never_probed(two_probed, base, other):
    """A label that named no probed agent (a typo, or "random" meaning the baseline) gave
    contrasts of None, silently."""
    from turnbudget.eval import compare_probes

    config, records = two_probed
    with pytest.raises(
        ValueError,
        match=r"to be the label of a probed agent, one of \['oracle-eps0.3', 'oracle-eps0.1'\]",
    ):
        compare_probes(config, records, base, other, n_bootstrap=0)
    gain = compare_probes(config, records, "oracle-eps0.3", "oracle-eps0.1", n_bootstrap=0)
    assert gain["turnbudget/Maze-Easy-v0"]["single_step_skill"]["mean"] is not None


@pytest.mark.parametrize("n_bootstrap", [10**9, -1, 2.5, "100"])
def test_the_probe_summaries_check_n_bootstrap(two_probed, n_bootstrap):
    """summarize_probes and compare_probes took any n_bootstrap: 1e9 asked for 29.8 GiB (a
    MemoryError), "100" was a TypeError from inside."""
    from turnbudget.eval import compare_probes
    from turnbudget.eval.probes.summary import summarize_probes

    config, records = two_probed
    with pytest.raises(ValueError, match=r"Expect `n_bootstrap` to be an int from 0 to 100,000"):
        summarize_probes(config, records, n_bootstrap=n_bootstrap)
    with pytest.raises(ValueError, match=r"Expect `n_bootstrap` to be an int from 0 to 100,000"):
        compare_probes(config, records, "oracle-eps0.3", "oracle-eps0.1", n_bootstrap=n_bootstrap)


@pytest.mark.parametrize("confidence", [0.0, 1.0, 95, float("nan"), "0.95", None])
def test_the_probe_summaries_check_confidence(two_probed, confidence):
    """The summaries take the intervals' coverage (`validate` asks for simultaneous ones):
    anything but a number in (0, 1) is a ValueError naming it."""
    from turnbudget.eval import compare_probes
    from turnbudget.eval.probes.summary import summarize_probes

    config, records = two_probed
    with pytest.raises(ValueError, match=r"Expect `confidence` in \(0, 1\)"):
        summarize_probes(config, records, n_bootstrap=0, confidence=confidence)
    with pytest.raises(ValueError, match=r"Expect `confidence` in \(0, 1\)"):
        compare_probes(config, records, "oracle-eps0.3", "oracle-eps0.1", confidence=confidence)


def test_higher_confidence_widens_every_probe_interval_around_the_same_mean(two_probed):
    from turnbudget.eval import compare_probes
    from turnbudget.eval.probes.summary import summarize_probes

    config, records = two_probed
    env = config["envs"][0]

    def intervals(confidence: float) -> list[dict]:
        agents = summarize_probes(config, records, n_bootstrap=200, confidence=confidence)
        gain = compare_probes(
            config, records, "oracle-eps0.3", "oracle-eps0.1", n_bootstrap=200,
            confidence=confidence,
        )[env]  # fmt: skip
        out = [gain["single_step_skill"], gain["recovery_specific_skill"]]
        for by_env in agents["agents"].values():
            g = by_env[env]
            out += [g["single_step_skill"], g["recovery_specific_skill"], g["noop_rate"]]
        return [v for v in out if v["mean"] is not None]

    narrow, wide = intervals(0.95), intervals(0.999)
    assert len(narrow) == len(wide) >= 6
    for a, b in zip(narrow, wide, strict=True):
        assert a["mean"] == b["mean"] and b["low"] <= a["low"] and b["high"] >= a["high"], (a, b)
    assert any(b["high"] - b["low"] > a["high"] - a["low"] for a, b in zip(narrow, wide))


def test_probe_on_the_command_line_keeps_other_probes_results_unless_overwrite(tmp_path, capsys):
    """``turnbudget probe --out DIR`` replaced the results of other probes there silently
    (the one command that did: eval, train and export-policy refuse without --overwrite)."""
    import json

    from turnbudget.cli import main

    out = tmp_path / "probe"
    command = ["probe", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "1",
               "--baseline-repeats", "1", "--quiet", "--out", str(out)]  # fmt: skip
    assert main([*command, "--agent", "oracle:0.3"]) == 0
    first = (out / "probes.jsonl").read_bytes()
    capsys.readouterr()
    assert main([*command, "--agent", "oracle:0.1"]) == 2
    err = capsys.readouterr().err
    assert "holds the results of other probes (its probe.json differs in agents, labels)" in err
    assert (out / "probes.jsonl").read_bytes() == first
    assert main([*command, "--agent", "oracle:0.3"]) == 0  # (the same probes again)
    assert main([*command, "--agent", "oracle:0.1", "--overwrite"]) == 0
    assert json.loads((out / "probe.json").read_text())["labels"] == ["oracle-eps0.1"]


def test_probe_results_beside_no_probe_json_are_kept_unless_overwrite(tmp_path, capsys):
    """Results of probes whose probe.json is gone (deleted, or a write cut short: it is
    written last), or a probe_report.md of the user's, were deleted and replaced without a
    word: whose probes they were could not be told, so none differed."""
    from turnbudget.cli import main

    out = tmp_path / "probe"
    out.mkdir()
    (out / "probes.jsonl").write_text('{"earlier": "probes"}\n')
    (out / "probe_report.md").write_text("# my notes on them\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    command = ["probe", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "1", "--agent",
               "oracle:0.3", "--baseline-repeats", "1", "--quiet", "--out", str(out)]  # fmt: skip
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "holds probes.jsonl, probe_report.md but no probe.json" in err, err
    assert {name: (out / name).read_bytes() for name in before} == before
    assert not (out / "probe.json").exists()
    assert main([*command, "--overwrite"]) == 0
    assert (out / "probe.json").is_file() and (out / "probes.jsonl").read_bytes() != before[
        "probes.jsonl"
    ]


_PROBE_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # (a read of /dev/zero: MemoryError)
from turnbudget.agents import OracleAgent
from turnbudget.eval import probe
try:
    probe("turnbudget/Maze-Easy-v0", OracleAgent(0.3), tasks=1, baseline_repeats=1, n_bootstrap=0,
          out=sys.argv[1], overwrite=False)
except ValueError as exc:
    print("ValueError:", exc)
"""


def test_a_probe_json_of_gibs_is_not_read_whole(tmp_path):
    """The probe.json compared without ``overwrite`` was read whole: a sparse file of 8 GiB
    (no disk) filled the memory. (A child process under a 4 GiB limit.)"""
    from _support import run_child

    out = tmp_path / "probe"
    out.mkdir()
    with open(out / "probe.json", "wb") as f:
        f.truncate(8 << 30)
    done = run_child(_PROBE_CHILD, str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "holds the results of other probes (its probe.json differs in all of it)" in (
        done.stdout
    )


@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
def test_a_probe_json_that_is_not_a_regular_file_is_refused(tmp_path, special):
    """Without ``overwrite`` the probe.json already in ``out`` is read to compare: a FIFO there
    blocked the probe for ever, and a link to /dev/zero read until the memory ran out.
    (A child process: a regression hangs it, which `HANG_GUARD` reports.)"""

    from _support import make_not_regular, run_child

    out = tmp_path / "probe"
    out.mkdir()
    make_not_regular(out / "probe.json", special)
    done = run_child(_PROBE_CHILD, str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{out / 'probe.json'}: not a regular file" in done.stdout


def test_repeated_prefixes_are_refused_as_on_the_command_line():
    """``prefixes=[0.5, 0.5]`` ran (the probes once) while ``--prefixes 0.5,0.5`` was refused,
    and its probe.json differed from ``[0.5]``'s, so the same probes again were "other probes"."""
    env_id = _register("ProbeLine", LineWorld)
    with pytest.raises(ValueError, match=r"Expect distinct `prefixes`, got \[0.5, 0.5\]"):
        probe(env_id, RandomAgent(), prefixes=[0.5, 0.5], **SMALL)


@pytest.mark.parametrize(
    "t0s,message",
    [(range(1001), r"at most 1,000 `t0s`, got 1,001"), ([3, 3], r"distinct `t0s`, got \[3, 3\]")],
)
def test_the_team_step_probe_refuses_endless_or_repeated_rounds(t0s, message):
    """``t0s=range(10**12)`` ran for ever (an env built per round, most past the plan), and a
    round given twice counted its states twice in the rates."""
    from turnbudget.eval.probes.team import team_step_probe

    with pytest.raises(ValueError, match=message):
        team_step_probe("vault_v0", {"operator": "oracle", "runner": "random"}, tasks=1, t0s=t0s)


def test_the_baselines_failures_are_not_counted_as_a_probed_random_agents(monkeypatch):
    """`validate` probes a `RandomAgent` as an agent, under the baseline's label "random": the
    baseline's failed probes were counted in ``failed_to_run["random"]``, the agent's."""
    from turnbudget.agents import baselines

    act = baselines.RandomAgent.act

    class Probed(RandomAgent):
        def act(self, observation, info):
            return act(self, observation, info)

    def flaky(self, observation, info):  # the baseline fails its single-step probes
        if "executed_action" not in info:
            raise RuntimeError("baseline down")
        return act(self, observation, info)

    monkeypatch.setattr(baselines.RandomAgent, "act", flaky)
    result = probe("turnbudget/Maze-Easy-v0", Probed(), tasks=2, n_bootstrap=0,
                   baseline_repeats=1, retries=0)  # fmt: skip
    baseline = sum(r["role"] == "baseline" for r in result.failed)
    assert baseline and not any(r["role"] == "agent" for r in result.failed)
    assert result.summary["failed_to_run"] == {"random": 0, "random (baseline)": baseline}


def test_the_probe_summaries_name_the_field_of_a_malformed_config_or_record(two_probed):
    """summarize_probes, compare_probes and per_task read a config dict and probe records: a
    missing or mistyped field was a bare KeyError ('kinds', 'task_seed'), a TypeError
    (int(None), 'NoneType' object is not iterable) or an OverflowError; each is now a
    ValueError naming the field."""
    from turnbudget.eval import compare_probes
    from turnbudget.eval.probes.summary import per_task, summarize_probes

    config, records = two_probed
    bad = [dict(r) for r in records]
    bad[3]["task_seed"] = None
    for call in (
        lambda c, r: summarize_probes(c, r, n_bootstrap=0),
        lambda c, r: compare_probes(c, r, "oracle-eps0.3", "oracle-eps0.1", n_bootstrap=0),
        lambda c, r: per_task(r, "oracle-eps0.3"),
    ):
        with pytest.raises(ValueError, match=r"records\[3\]\['task_seed'\] to be an int >= 0"):
            call(config, bad)
        with pytest.raises(ValueError, match="Expect `records` to be a list"):
            call(config, None)
    with pytest.raises(ValueError, match=r"config\['kinds'\] to be a list, got None"):
        summarize_probes({**config, "kinds": None}, records, n_bootstrap=0)
    with pytest.raises(ValueError, match=r"config\['envs'\] to be a non-empty list"):
        compare_probes({**config, "envs": []}, records, "oracle-eps0.3", "oracle-eps0.1")
    won = next(i for i, r in enumerate(records) if r.get("won"))
    bad = [dict(r) for r in records]
    del bad[won]["budget"]
    with pytest.raises(ValueError, match=rf"records\[{won}\]\['budget'\] to be set"):
        summarize_probes(config, bad, n_bootstrap=0)


def _first(records, where):
    return next(i for i, r in enumerate(records) if where(r))


@pytest.mark.parametrize(
    "where, change, says",
    [
        (lambda r: r["probe"] == "recovery" and r.get("won") is False,
         {"won": "False", "turns": 5}, r"\['won'\] to be true or false"),
        (lambda r: r["probe"] == "single" and r.get("optimal") is False, {"optimal": "False"},
         r"\['optimal'\] to be true or false"),
        (lambda r: r.get("applied") is not None, {"applied": 1}, r"\['applied'\]"),
        (lambda r: r.get("n_admissible"), {"n_optimal": 10**6}, r"'n_optimal'\] to be at most"),
        (lambda r: r["probe"] == "recovery" and r.get("won") is True,
         {"budget": 10, "turns": 10, "distance_after": 11}, r"'distance_after'\] to be at most"),
        (lambda r: r["probe"] == "recovery" and r.get("won") is True,
         {"budget": 4, "turns": 9}, r"'turns'\] to be at most"),
    ],
)  # fmt: skip
def test_a_probe_record_is_read_for_what_it_holds_not_what_it_looks_like(
    two_probed, where, change, says
):
    """ "False" was a win or an optimal step; n_optimal past n_admissible made a chance rate of
    15; a win from farther than its budget divided by zero."""
    from turnbudget.eval.probes.summary import summarize_probes
    from turnbudget.eval.probes.validate import exact_single_step_skill

    config, records = two_probed
    bad = [dict(r) for r in records]
    bad[_first(bad, where)].update(change)
    with pytest.raises(ValueError, match=says):
        summarize_probes(config, bad, n_bootstrap=0)
    with pytest.raises(ValueError, match=says):
        exact_single_step_skill(bad, 0.1)


@pytest.mark.parametrize("epsilon", [1.5, -1, float("nan"), True, "0.1", None])
def test_exact_single_step_skill_needs_an_epsilon_in_0_1(two_probed, epsilon):
    from turnbudget.eval.probes.validate import exact_single_step_skill

    with pytest.raises(ValueError, match="`epsilon` to be a number in"):
        exact_single_step_skill(two_probed[1], epsilon)


def test_exact_single_step_skill_reads_a_record_without_n_changing_as_all_changing():
    from turnbudget.eval.probes.validate import exact_single_step_skill

    state = {"env_id": "e", "task_seed": 0, "probe": "single", "kind": None, "role": "agent",
             "agent": "a", "n_admissible": 4, "n_optimal": 1}  # fmt: skip
    assert exact_single_step_skill([state], 0.1) == exact_single_step_skill(
        [{**state, "n_changing": 4}], 0.1
    )
    assert exact_single_step_skill([{**state, "n_changing": 0}], 0.1) is None  # (was 1/0)


def test_a_failure_while_the_results_are_written_leaves_no_other_probes_results(
    tmp_path, monkeypatch
):
    """probe.json was written first: a failure before the summary (a full disk, Ctrl-C) left
    this call's probe.json beside the other probes' summary, which `turnbudget report` showed
    as this call's, and their probe_report.md stayed even when every file was written."""
    import json

    from turnbudget.eval.probes import run as probe_run
    from turnbudget.eval.report import write_probe_report

    out = tmp_path / "probe"
    first = probe("turnbudget/Maze-Easy-v0", OracleAgent(0.3), tasks=1, n_bootstrap=0,
                  baseline_repeats=1, out=out)  # fmt: skip
    write_probe_report(out, first.summary)

    def full_disk(*args, **kwargs):
        raise OSError("No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(probe_run, "write_probe_summary", full_disk)
        with pytest.raises(OSError, match="No space left"):
            probe("turnbudget/Maze-Easy-v0", OracleAgent(0.1), tasks=1, n_bootstrap=0,
                  baseline_repeats=1, out=out)  # fmt: skip
    left = {p.name for p in out.iterdir()} - {".turnbudget.lock"}
    assert left == {"probes.jsonl"}  # (this call's, and no probe.json to claim them whole)
    assert {json.loads(line)["agent"] for line in (out / "probes.jsonl").open()} == {
        "oracle-eps0.1", "random"
    }  # fmt: skip
    write_probe_report(out, first.summary)
    probe("turnbudget/Maze-Easy-v0", OracleAgent(0.1), tasks=1, n_bootstrap=0,
          baseline_repeats=1, out=out)  # fmt: skip
    assert not (out / "probe_report.md").exists()
    assert json.loads((out / "probe_summary.json").read_text())["config"]["labels"] == [
        "oracle-eps0.1"
    ]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"repeats": np.timedelta64(2)}, r"`repeats` to be an int >= 1, got np.timedelta64"),
        ({"baseline_repeats": np.timedelta64(2)}, r"`baseline_repeats` to be an int >= 1"),
        ({"budget_slack": np.timedelta64(2)}, r"`budget_slack` to be an int >= 0"),
        ({"budget_factor": 10**5000}, r"`budget_factor` to be a number >= 1, got <int: too"),
    ],
)
def test_probe_counts_refuse_a_numpy_duration_and_quote_a_huge_factor(kwargs, message):
    # (np.integer took np.timedelta64: "cannot be interpreted as an integer" named nothing;
    # repr() of an int of 5,000 digits raised while building the refusal)
    with pytest.raises(ValueError, match=message):
        probe("turnbudget/Maze-Easy-v0", OracleAgent(), **{**SMALL, **kwargs})


@pytest.mark.parametrize("field,probe", [("won", "recovery"), ("won", "control"),
                                         ("recovered", "recovery")])  # fmt: skip
def test_the_probe_summaries_name_a_missing_outcome_of_an_applied_pair(two_probed, field, probe):
    """A recovery or control record that says it applied but has no ``won`` (or, for a
    recovery, no ``recovered``), as an edited probes.jsonl has, was a bare KeyError from
    summarize_probes, compare_probes and per_task; it is now a ValueError naming the field."""
    from turnbudget.eval import compare_probes
    from turnbudget.eval.probes.summary import per_task, summarize_probes

    config, records = two_probed
    i = next(
        i for i, r in enumerate(records)
        if r["probe"] == probe and r.get("applied", True) and r["agent"] == "oracle-eps0.3"
    )  # fmt: skip
    bad = [dict(r) for r in records]
    del bad[i][field]
    for call in (
        lambda: summarize_probes(config, bad, n_bootstrap=0),
        lambda: compare_probes(config, bad, "oracle-eps0.3", "oracle-eps0.1", n_bootstrap=0),
        lambda: per_task(bad, "oracle-eps0.3"),
    ):
        with pytest.raises(ValueError, match=rf"records\[{i}\]\['{field}'\] to be set"):
            call()
    # (a pair that did not apply has no outcome, and needs none)
    skipped = [{**r, "applied": False} if r["probe"] != "single" else r for r in bad]
    summarize_probes(config, skipped, n_bootstrap=0)


class InfiniteDistance(LineWorld):
    """Answers inf where the documented answer for "no win" is None."""

    def distance_to_goal(self):
        return float("inf") if self.pos == 0 else super().distance_to_goal()


def test_an_oracle_distance_that_is_no_count_is_refused_naming_the_game():
    """A custom game's inf was int()'s OverflowError deep in the plan, naming nothing."""
    env_id = _register("InfiniteDistanceLine", InfiniteDistance)
    with pytest.raises(
        ValueError, match=r"Expect InfiniteDistance\.distance_to_goal\(\) to return"
    ):
        probe(env_id, RandomAgent(), **SMALL)


def test_compare_probes_gain_is_the_difference_of_the_skills_it_compares():
    """The gain was over the tasks where both agents were judged, with the baseline pooled
    over them: 0.296 beside reported skills of 1.0 and 0.722, a difference of 0.278, for an
    agent that answered with no-ops on every state of some tasks (its answers here are
    made no-ops on tasks 1, 3 and 9)."""
    from turnbudget.eval import compare_probes
    from turnbudget.eval.probes.summary import summarize_probes

    result = probe(MAZE, [OracleAgent(0.3), OracleAgent(0.0)], tasks=12)
    config = result.config.to_dict()
    base, other = config["labels"]
    records = [
        {**r, "action": "look", "noop": True, "optimal": None}
        if r["agent"] == other and r["probe"] == "single" and r["task_seed"] in (1, 3, 9)
        else r
        for r in result.records
    ]
    summary = summarize_probes(config, records)
    skills = [summary["agents"][who][MAZE]["single_step_skill"] for who in (base, other)]
    single = compare_probes(config, records, base, other)[MAZE]["single_step_skill"]
    assert single["mean"] == pytest.approx(skills[1]["mean"] - skills[0]["mean"])
    assert single["low"] <= single["mean"] <= single["high"]


def test_a_win_in_fewer_turns_than_its_distance_is_read_as_a_win_in_d1(two_probed):
    """A TextWorld distance is an upper bound: a random walk won TreasureHunter-Medium in 3
    turns from a d1 of 4, and the summary refused the engine's own record, which failed the
    probe run (and `validate`) after every probe had run, with nothing saved."""
    from turnbudget.eval.probes.summary import _win_share, summarize_probes

    config, records = two_probed
    faster = [dict(r) for r in records]
    won = _first(faster, lambda r: r["probe"] == "recovery" and r.get("won") is True)
    faster[won].update(distance_after=faster[won]["turns"] + 1)
    assert faster[won]["distance_after"] <= faster[won]["budget"]
    summarize_probes(config, faster, n_bootstrap=0)
    assert _win_share(faster[won]) == 1.0


def test_the_single_step_skill_follows_from_the_rates_printed_beside_it():
    """The baseline rate was over every task, the skill's over the tasks where the agent had
    a judged answer: (rate - baseline_rate) / (1 - baseline_rate) read 0.037 beside a skill
    of 0 on Crafting-Easy, where one task's answers were all no-ops."""
    from turnbudget.agents import RandomAgent
    from turnbudget.eval import probe
    from turnbudget.eval.probes.summary import summarize_probes

    env_id = "turnbudget/Crafting-Easy-v0"
    result = probe(env_id, RandomAgent(), tasks=8, baseline_repeats=2, n_bootstrap=0)
    single = result.summary["agents"]["random"][env_id]["single_step"]
    p, q = single["rate"], single["baseline_rate"]
    assert single["skill"]["mean"] == pytest.approx((p - q) / (1 - q), abs=1e-5)

    def made(role: str, task: int, optimal: bool | None) -> dict:
        agent = {"agent": "a"} if role == "agent" else {}
        return dict(env_id="E", task_seed=task, role=role, probe="single", kind=None,
                    optimal=optimal, noop=optimal is None, valid=True, **agent)  # fmt: skip

    # (the baseline's answers on task 1 all no-ops: the skill compares task 0 alone)
    records = [made("agent", 0, False), *[made("agent", 1, True)] * 3, made("baseline", 0, True),
               made("baseline", 0, False), made("baseline", 1, None), made("baseline", 1, None)]  # fmt: skip
    config = {"envs": ["E"], "labels": ["a"], "kinds": ["setback"]}
    single = summarize_probes(config, records, n_bootstrap=0)["agents"]["a"]["E"]["single_step"]
    assert (single["rate"], single["baseline_rate"], single["skill"]["mean"]) == (0.0, 0.5, -1.0)


def test_a_directory_where_a_result_goes_is_refused_before_any_probe_runs(tmp_path, monkeypatch):
    """Every probe ran, then writing the results failed on it ("Is a directory"), and the
    whole run was lost."""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval import probe
    from turnbudget.eval.probes import run

    (tmp_path / "probes.jsonl").mkdir()
    monkeypatch.setattr(run, "plan_probes", lambda *a: pytest.fail("a probe was planned"))
    with pytest.raises(ValueError, match=r"probes\.jsonl': it is a directory"):
        probe("turnbudget/Maze-Easy-v0", OracleAgent(0.3), tasks=2, out=tmp_path)
