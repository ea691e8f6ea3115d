"""The probe metrics pass their null, positive and negative controls (`turnbudget validate`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from turnbudget.agents.controls import RecoveryControl
from turnbudget.eval.probes.validate import (
    BUILT_IN_CHECKS,
    EPSILONS,
    MIN_TASKS_TO_RESOLVE,
    NULL_PAIRS,
    REFLEX_MARGIN,
    VALIDATION_FILE,
    Check,
    format_checks,
    validate,
)

EASY = ("turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0")


def _check(checks: list[Check], group: str, control: str, metric: str) -> Check:
    (check,) = [c for c in checks if (c.group, c.control, c.metric) == (group, control, metric)]
    return check


def _value(checks: list[Check], group: str, control: str, metric: str) -> dict[str, Any]:
    return dict(_check(checks, group, control, metric).value)


def _assert_controls(checks: list[Check], group: str) -> None:
    """Null, positive, negative and monotone controls, written out (not only ``passed``)."""
    rs = "recovery-specific skill"
    for e in EPSILONS:  # memoryless: no recovery-specific skill, whatever epsilon
        v = _value(checks, group, f"oracle-eps{e:g}", rs)
        assert v["low"] <= 0.0 <= v["high"], (e, v)
    for a, b in NULL_PAIRS:  # the finding-2 contrast between two of them: none either
        v = _value(checks, group, f"oracle-eps{a:g} → oracle-eps{b:g}", f"Δ {rs}")
        assert v["low"] <= 0.0 <= v["high"], (a, b, v)
    for reflex in ("random", "ping-pong", "undo-reflex"):  # goal-free reflexes
        v = _value(checks, group, reflex, rs)
        assert v["high"] >= 0.0 and v["low"] <= REFLEX_MARGIN, (reflex, v)
    # Maze's and KeyQuest's commands have inverses: undoing the probe's last optimal command
    # lies below chance (the check's own form, "≤0", holds on games without them too).
    pingpong = _value(checks, group, "ping-pong", "single-step skill")
    assert pingpong["high"] < 0.0, pingpong
    assert _value(checks, group, "recovery-positive", rs)["low"] > 0.0
    assert _value(checks, group, "recovery-negative", rs)["high"] < 0.0
    single = [_value(checks, group, f"oracle-eps{e:g}", "single-step skill") for e in EPSILONS]
    assert [s["mean"] for s in single] == sorted((s["mean"] for s in single), reverse=True)
    assert single[0]["mean"] == 1.0 and single[0]["low"] < 1.0
    for e in EPSILONS[1:]:  # each ε-oracle's interval holds its exact skill, about 1 - ε
        check = _check(checks, group, f"oracle-eps{e:g}", "single-step skill")
        assert check.expected == "exact" and abs(check.truth - (1 - e)) < 0.15, (e, check)
        assert check.value["low"] <= check.truth <= check.value["high"], (e, check)
    for look in ("look-first", "look-last"):
        assert _value(checks, group, look, "single-step skill")["mean"] >= 0.9
        assert _value(checks, group, look, "no-op rate")["mean"] is not None


def _impostor(monkeypatch: pytest.MonkeyPatch, control: str, epsilon: float) -> None:
    """Put an ε-oracle (memoryless) in place of the control named ``control``, under its name."""
    from turnbudget.agents import OracleAgent
    from turnbudget.eval.probes import validate as module

    class Impostor(OracleAgent):
        name = control

    agents = module.control_agents
    monkeypatch.setattr(
        module,
        "control_agents",
        lambda: [Impostor(epsilon) if a.name == control else a for a in agents()],
    )


def _impostor_of(monkeypatch: pytest.MonkeyPatch, control: str, cls: type, *args: Any) -> None:
    """Put ``cls(*args)`` in place of the control named ``control``, under its name."""
    from turnbudget.eval.probes import validate as module

    class Impostor(cls):
        name = control

    agents = module.control_agents
    monkeypatch.setattr(
        module,
        "control_agents",
        lambda: [Impostor(*args) if a.name == control else a for a in agents()],
    )


def test_reduced_controls_pass_on_maze(tmp_path):
    """The default suite's null / positive / negative check (12 tasks; the slow test has 40)."""
    result = validate(EASY[0], tasks=12, n_bootstrap=300, out=tmp_path)
    _assert_controls(result.checks, EASY[0])
    assert result.passed
    rows = json.loads((tmp_path / VALIDATION_FILE).read_text())
    assert len(rows) == len(result.checks) and (tmp_path / "probes.jsonl").exists()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", EASY)
def test_controls_pass_at_40_tasks(env_id):
    result = validate(env_id, tasks=40)
    _assert_controls(result.checks, env_id)
    assert result.passed, [c for c in result.checks if c.ok is False]


def test_an_eps_oracle_that_plays_perfectly_by_chance_passes():
    """Over KeyQuest-Easy's 6 tasks at seed 4 the ε = 0.1 oracle answers every judged probe
    optimally: its single-step skill ties ε = 0's 1.000. A check of "below the previous row"
    failed that sound metric (1 run in 30 at the default 40 tasks, seeds 0-29); its interval
    holds the ε = 0.1 oracle's exact skill, which is what is checked now."""
    env_id = "turnbudget/KeyQuest-Easy-v0"
    result = validate(env_id, tasks=6, seed=4, n_bootstrap=300)
    check = _check(result.checks, env_id, "oracle-eps0.1", "single-step skill")
    assert check.value["mean"] == 1.0 and check.truth < 0.95 and check.ok, check
    assert not result.failed, [c for c in result.checks if c.ok is False]
    # (6 tasks are below MIN_TASKS_TO_RESOLVE: a built-in check whose interval holds 0, as
    # the recovery-specific skills' do over 6 tasks since their floor counts tasks, not every
    # pair, is inconclusive)
    assert all(c.expected in BUILT_IN_CHECKS for c in result.inconclusive)
    assert "=+0.9" in format_checks(result.checks)


def test_an_exact_check_fails_a_metric_off_its_truth(monkeypatch):
    """An ε = 0.5 oracle under the ε = 0.1 oracle's name: its single-step skill (about 0.5)
    lies far below the exact skill of ε = 0.1 (about 0.9), and its exact check fails."""
    _impostor(monkeypatch, "oracle-eps0.1", 0.5)
    result = validate(EASY[0], tasks=12, n_bootstrap=300)
    check = _check(result.checks, EASY[0], "oracle-eps0.1", "single-step skill")
    assert check.ok is False and check.simultaneous["high"] < check.truth, check
    assert not result.passed


def test_cli_validate_prints_the_table_and_fails_when_a_metric_misbehaves(capsys, monkeypatch):
    from turnbudget.cli import main

    args = ["validate", "--env", EASY[0], "--tasks", str(MIN_TASKS_TO_RESOLVE), "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "recovery-positive" in out and "expected" in out and "checks passed" in out
    _impostor(monkeypatch, "recovery-positive", 0.5)  # a memoryless oracle under its name
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "checks FAILED" in out
    assert main(["validate", "--env", "turnbudget/Nope-v0", "--quiet"]) == 2


def test_too_few_tasks_to_resolve_a_built_in_skill_is_inconclusive_not_a_failure(
    capsys, monkeypatch
):
    """Over 2 tasks the built-in skills (+, −, +mean) of sound controls failed at every seed,
    and the command line blamed the metric ("a defect misses at every seed"). Below
    `MIN_TASKS_TO_RESOLVE` tasks such a check whose interval holds 0 is inconclusive (exit
    3); one whose interval lies on the wrong side of 0 still fails."""
    from turnbudget.cli import main

    result = validate(EASY[0], tasks=2, n_bootstrap=200)
    few = result.inconclusive
    assert few and all(c.expected in BUILT_IN_CHECKS and c.ok is None for c in few)
    assert all(c.value["low"] <= 0.0 <= c.value["high"] for c in few if c.expected != "+mean")
    assert not result.failed and not result.passed
    assert main(["validate", "--env", EASY[0], "--tasks", "2", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "too few tasks" in out and "inconclusive" in out and "FAIL" not in out
    # (a wrong sign is no lack of tasks: the recovery-negative agent under the positive's name)
    _impostor_of(monkeypatch, "recovery-positive", RecoveryControl, 0.0, 0.8, 3)
    result = validate(EASY[0], tasks=6, n_bootstrap=200)  # (over 4 its interval holds 0)
    wrong = [c for c in result.checks if c.control == "recovery-positive" and c.expected == "+"]
    assert wrong[0].value["high"] < 0.0 and wrong[0].ok is False and not wrong[0].inconclusive


def test_a_ping_pong_above_chance_fails_its_check(monkeypatch):
    """The ping-pong's single-step skill is checked: an impostor that plays the oracle under its
    name lies above 0, and its check (and no other) fails. (10 tasks: a null check reads its
    simultaneous interval, and over 6 tasks the impostor's skill of 1 reached down to -0.22,
    at 9 to -0.02.)"""
    _impostor(monkeypatch, "ping-pong", 0.0)
    result = validate(EASY[0], tasks=10, n_bootstrap=200)
    failed = [(c.control, c.metric, c.expected) for c in result.checks if c.ok is False]
    assert failed == [("ping-pong", "single-step skill", "≤0")], failed


def _exact_win_share(starts: Any, spec: Any, first: float, rest: float) -> float:
    """The expected win share (`summary._win_share`) of an ε-oracle with ε ``first`` on its
    first 3 turns and ``rest`` after, from the state of a recovery or control probe."""
    import copy

    import numpy as np
    from _support import eps_oracle_reach

    env, _, _ = starts.fresh(spec.env_id, spec.task_seed, 10**6)
    try:
        for command in spec.plan[: spec.start]:
            env.step(command)
        if spec.probe == "recovery" and spec.kind == "slip":
            env.step(spec.error)
        elif spec.probe == "recovery":
            env.unwrapped.inject_setback(np.random.default_rng(spec.error))
        game, d1, budget = env.unwrapped, spec.distance_after, spec.budget
        assert game.distance_to_goal() == d1
        seen = copy.deepcopy(game).step("look")[0]  # (what the player sees there)
        reached = eps_oracle_reach(game, seen, [first] * 3 + [rest] * (budget - 3))
    finally:
        starts.release(env)
    return sum(reached[t - 1] for t in range(d1, budget + 1)) / (budget - d1 + 1)


def test_the_controls_skills_hold_their_exact_values():
    """The memoryless ε-oracle and the recovery-positive and -negative controls, whose skills on
    the probed states are known exactly (a Markov chain over Maze's rooms; single-step from the
    counts of optimal and state-changing commands): each interval holds its exact value, and
    the recovery-specific skill's mean lies near it. (Over 200 runs of 40 random tasks each such interval covered
    96-100%.)"""
    from turnbudget.agents import OracleAgent
    from turnbudget.agents.controls import make_control
    from turnbudget.eval import probe
    from turnbudget.eval.probes.plan import TaskStarts
    from turnbudget.eval.probes.validate import exact_single_step_skill

    env_id = EASY[0]
    controls = {
        "oracle-eps0.5": (0.5, 0.5),
        "recovery-positive": (0.5, 0.0),
        "recovery-negative": (0.0, 0.8),
    }  # fmt: skip  (ε on track, after an error)
    agents = [
        OracleAgent(0.5),
        make_control("recovery-positive"),
        make_control("recovery-negative"),
    ]
    result = probe(env_id, agents, tasks=16, seed=1, n_bootstrap=300)
    specs = {s.key: s for s in result.specs}
    singles = [s for s in result.specs if s.probe == "single"]
    chance = sum(s.n_optimal / s.n_admissible for s in singles) / sum(
        s.n_changing / s.n_admissible for s in singles
    )
    pairs = [
        (s, specs[(s.env_id, s.task_seed, s.prefix, "control", s.kind)])
        for s in result.specs
        if s.probe == "recovery" and s.applied
    ]
    starts = TaskStarts()
    for label, (on_track, after_error) in controls.items():
        hits = sum(1 - on_track + on_track * s.n_optimal / s.n_admissible for s in singles)
        judged = sum(1 - on_track + on_track * s.n_changing / s.n_admissible for s in singles)
        specific = sum(
            _exact_win_share(starts, error, after_error, on_track)
            - _exact_win_share(starts, control, on_track, on_track)
            for error, control in pairs
        ) / len(pairs)
        exact = {"single_step_skill": (hits / judged - chance) / (1 - chance),
                 "recovery_specific_skill": specific}  # fmt: skip
        if label == "oracle-eps0.5":  # what validate's exact check reads, from the records
            mine = [r for r in result.records if r["agent"] == label]
            assert exact_single_step_skill(mine, 0.5) == pytest.approx(
                exact["single_step_skill"], abs=1e-12
            )
        for metric, value in exact.items():
            got = result.summary["agents"][label][env_id][metric]
            assert got["low"] <= value <= got["high"], (label, metric, value, got)
        # (the single-step skill's interval is wide at 16 tasks, the recovery skill's is not)
        got = result.summary["agents"][label][env_id]["recovery_specific_skill"]
        assert abs(got["mean"] - specific) < 0.05, (label, specific, got)
    starts.close()
    assert abs(exact["recovery_specific_skill"] + 0.46) < 0.1  # (recovery-negative's, about)


def test_cli_validate_keeps_other_probes_results_unless_overwrite(tmp_path, capsys):
    """``turnbudget validate --out DIR`` replaced the results of other probes there silently
    (``turnbudget probe`` refuses them without --overwrite): a probe run of an agent was lost
    to the controls' run."""
    from turnbudget.cli import main

    out = tmp_path / "probe"
    small = ["--env", EASY[0], "--tasks", "2", "--baseline-repeats", "1", "--quiet", "--out"]
    assert main(["probe", "--agent", "oracle:0.3", *small, str(out)]) == 0
    first = (out / "probes.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["validate", *small, str(out)]) == 2
    assert "holds the results of other probes" in capsys.readouterr().err
    assert (out / "probes.jsonl").read_bytes() == first
    assert not (out / VALIDATION_FILE).exists()
    assert main(["validate", *small, str(out), "--overwrite"]) == 3  # (2 tasks: too few)
    assert (out / VALIDATION_FILE).exists()
    assert main(["validate", *small, str(out)]) == 3  # (the same probes again)
    with pytest.raises(ValueError, match="holds the results of other probes"):
        validate(EASY[0], tasks=3, baseline_repeats=1, n_bootstrap=0, out=out, overwrite=False)


def test_the_directory_is_held_until_validation_json_is_written(tmp_path, monkeypatch):
    """`probe` released the directory before validate wrote validation.json: a run taking it
    in between had this run's checks written beside its own probes."""
    from turnbudget.eval.probes import validate as module
    from turnbudget.eval.run.lock import OutputDirInUse, hold_output_dir

    checks = module.control_checks
    held = []

    def check_then_try_the_lock(*args, **kwargs):
        try:
            with hold_output_dir(tmp_path):
                held.append(False)
        except OutputDirInUse:
            held.append(True)
        return checks(*args, **kwargs)

    monkeypatch.setattr(module, "control_checks", check_then_try_the_lock)
    validate(EASY[0], tasks=2, n_bootstrap=0, out=tmp_path)
    assert held == [True] and (tmp_path / VALIDATION_FILE).exists()


def test_null_checks_are_judged_on_simultaneous_intervals():
    """Judged on its own 95% interval, each of a run's 26 null checks missed now and then, and
    61 of 200 sound runs failed (`benchmarks/validate_error_rate.py`; 1 of 200 now). Seed 37 of
    Maze-Easy at 40 tasks is such a run: the random control's single-step skill has a 95%
    interval above 0. A null check now reads its simultaneous interval (Bonferroni over the
    run's null checks), which holds the 95% one; the other checks read their 95% intervals."""
    from turnbudget.eval.probes.validate import NULL_CHECKS, family_confidence, judge

    result = validate(EASY[0], tasks=40, seed=37)
    nulls = [c for c in result.checks if c.expected in NULL_CHECKS]
    assert len(nulls) == 17 and family_confidence(len(nulls)) == 1 - 0.05 / 17
    missed = [c for c in nulls if judge(c.expected, c.value, c.truth) is False]
    assert [(c.control, c.metric) for c in missed] == [("random", "single-step skill")]
    assert result.passed
    for check in result.checks:
        if check.expected in NULL_CHECKS:
            wide, value = check.simultaneous, check.value
            assert wide["mean"] == value["mean"], check
            assert wide["low"] < value["low"] and wide["high"] >= value["high"], check
            assert check.ok is judge(check.expected, wide, check.truth), check
        else:
            assert check.simultaneous is None, check
    assert "simultaneous" in format_checks(result.checks).splitlines()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0,), "`n_checks` to be a positive int"),
        (("26",), "`n_checks` to be a positive int"),
        ((True,), "`n_checks` to be a positive int"),
        ((26, 0.0), r"`family_error` in \(0, 1\)"),
        ((26, 1.5), r"`family_error` in \(0, 1\)"),
        ((26, float("nan")), r"`family_error` in \(0, 1\)"),
    ],
)
def test_family_confidence_refuses_what_is_no_family(args, message):
    from turnbudget.eval.probes.validate import family_confidence

    with pytest.raises(ValueError, match=message):
        family_confidence(*args)
    assert family_confidence(26) == 1 - 0.05 / 26 and family_confidence(1, 0.1) == 0.9


@pytest.mark.parametrize(
    ("expected", "value", "truth"),
    [
        ("bogus", {"mean": 0.0, "low": -1.0, "high": 1.0}, None),
        ("0", [0.0, -1.0, 1.0], None),
        ("0", {"mean": 0.0, "low": None, "high": 1.0}, None),
        ("0", {"mean": float("nan"), "low": -1.0, "high": 1.0}, None),
        ("+", {"mean": "0.5", "low": 0.1, "high": 0.9}, None),
        ("exact", {"mean": 0.5, "low": 0.1, "high": 0.9}, "0.9"),
        ("exact", {"mean": 0.5, "low": 0.1, "high": 0.9}, float("nan")),
    ],
)
def test_judge_refuses_what_it_cannot_judge(expected, value, truth):
    """`judge` is public (the error-rate benchmark reads the 95% verdicts with it): an unknown
    form was a KeyError, a None bound a TypeError, and a NaN passed or failed by its form."""
    from turnbudget.eval.probes.validate import judge

    with pytest.raises(ValueError, match=r"Expect `(expected|value)`"):
        judge(expected, value, truth)
    assert judge("0", {"mean": 0.0, "low": -1.0, "high": 1.0}) is True
    assert judge("info", {"mean": None}) is None and judge("+", {"mean": None}) is False
