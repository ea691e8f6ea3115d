"""Team evaluation on the one episode driver: backends, run directories, resume, faults, reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from _faults import RaisingAgent
from _support import BytesOracle

from turnbudget.agents import OracleAgent
from turnbudget.cli import main
from turnbudget.eval import evaluate_team
from turnbudget.eval.report import build_report, load_run_summary, write_run_summary
from turnbudget.eval.run.plan import derive_seed
from turnbudget.records import EPISODES_FILE, RUN_FILE, STEPS_FILE, LogError

ROLES = ("operator", "runner")
SMALL = dict(ks=[1, 2], ts=[6, 12], n=2, tasks=3, errors=0.2, n_bootstrap=50)


def team(epsilon: float = 0.3) -> dict[str, OracleAgent]:
    return {role: OracleAgent(epsilon) for role in ROLES}


def lines(out: Path, name: str) -> list[str]:
    return sorted((out / name).read_text().splitlines())


def test_a_team_run_writes_the_same_records_on_local_and_pool(tmp_path):
    local = evaluate_team("vault_v0", team(), out=tmp_path / "local", **SMALL)
    pooled = evaluate_team(
        "vault_v0", team(), out=tmp_path / "pool", backend="pool", workers=2, **SMALL
    )
    assert local.episodes == pooled.episodes and local.summary == pooled.summary
    assert local.n_run == len(local.episodes) == 3 * 2  # truncate: one run per (task, repeat)
    for name in (EPISODES_FILE, STEPS_FILE):
        assert lines(tmp_path / "local", name) == lines(tmp_path / "pool", name)
    steps = [json.loads(line) for line in lines(tmp_path / "local", STEPS_FILE)]
    assert {s["agent"] for s in steps} == set(ROLES)
    assert all(s["episode_id"] == f"{s['team_episode_id']}#{s['agent']}" for s in steps)
    # every member's summary rides with its team episode
    assert all(set(e["roles"]) == set(ROLES) for e in local.episodes)


def test_the_records_of_a_team_run_do_not_depend_on_where_it_ran(tmp_path):
    """In memory (record=True) and in a run directory, the same episodes and member steps."""
    memory = evaluate_team("vault_v0", team(), record=True, **SMALL)
    on_disk = evaluate_team("vault_v0", team(), out=tmp_path / "run", **SMALL)
    assert memory.episodes == on_disk.episodes
    steps = sorted(json.dumps(r, sort_keys=True) for r in memory.records if r["record"] == "step")
    disk_steps = sorted(
        json.dumps(json.loads(line), sort_keys=True) for line in lines(tmp_path / "run", STEPS_FILE)
    )
    assert steps == disk_steps


def test_a_finished_team_run_resumes_to_itself_and_a_changed_one_is_refused(tmp_path):
    out = tmp_path / "run"
    first = evaluate_team("vault_v0", team(), out=out, **SMALL)
    before = (out / EPISODES_FILE).read_bytes(), (out / STEPS_FILE).read_bytes()
    again = evaluate_team("vault_v0", team(), out=out, **SMALL)
    assert again.n_run == 0 and again.episodes == first.episodes
    assert ((out / EPISODES_FILE).read_bytes(), (out / STEPS_FILE).read_bytes()) == before
    with pytest.raises(ValueError, match="different configuration"):
        evaluate_team("vault_v0", team(0.1), out=out, **SMALL)


def test_a_half_logged_team_run_resumes_to_the_clean_run(tmp_path):
    """Cut the logs as a killed run leaves them (whole episodes, then a torn tail and the
    member steps of an episode without its record): the rerun completes them exactly."""
    clean = evaluate_team("vault_v0", team(), out=tmp_path / "clean", **SMALL)
    out = tmp_path / "cut"
    evaluate_team("vault_v0", team(), out=out, **SMALL)
    episodes = (out / EPISODES_FILE).read_text().splitlines(keepends=True)
    kept = episodes[:2]
    done = {json.loads(line)["episode_id"] for line in kept}
    steps = (out / STEPS_FILE).read_text().splitlines(keepends=True)
    orphan = next(json.loads(s)["team_episode_id"] for s in steps
                  if json.loads(s)["team_episode_id"] not in done)  # fmt: skip
    (out / EPISODES_FILE).write_text("".join(kept) + episodes[2][:17])  # a torn last line
    (out / STEPS_FILE).write_text(
        "".join(s for s in steps if json.loads(s)["team_episode_id"] in done | {orphan})
    )
    resumed = evaluate_team("vault_v0", team(), out=out, **SMALL)
    assert resumed.n_run == len(clean.episodes) - 2
    assert resumed.episodes == clean.episodes
    for name in (EPISODES_FILE, STEPS_FILE):
        assert lines(out, name) == lines(tmp_path / "clean", name)


def test_a_team_episode_that_raises_fails_to_run_and_is_counted_apart(tmp_path):
    """A member that raises on one episode: that episode is retried, then logged as failed
    to run; every other episode is the clean run's."""
    bad_seed = derive_seed(0, "vault_v0:runner", 1, 0)  # task 1, repeat 0
    faulty = {"operator": OracleAgent(0.3), "runner": RaisingAgent(0.3, {bad_seed})}
    result = evaluate_team("vault_v0", faulty, out=tmp_path / "run", retries=1, **SMALL)
    failed = [e for e in result.episodes if e.get("failed_to_run")]
    assert len(failed) == 1 and failed[0]["seed"] == 1 and failed[0]["rep"] == 0
    assert failed[0]["attempts"] == 2 and "agent bug" in failed[0]["error"]
    assert result.summary["failed_to_run"]["episodes"] == 1
    clean = evaluate_team("vault_v0", team(), **SMALL)
    ok = [e for e in result.episodes if not e.get("failed_to_run")]
    assert ok == [e for e in clean.episodes if e["episode_id"] != failed[0]["episode_id"]]


def test_a_team_run_is_reported_like_any_run(tmp_path, capsys):
    out = tmp_path / "run"
    result = evaluate_team("vault_v0", team(), out=out, label="oracle-team", **SMALL)
    assert json.loads((out / RUN_FILE).read_text())["game"] == "vault_v0"
    assert load_run_summary(out, n_bootstrap=50) == result.summary  # from the logs alone
    write_run_summary(out, result.summary)
    assert "oracle-team" in (out / "report.md").read_text()
    summary = build_report(out, plots=False, n_bootstrap=50)
    assert summary["runs"]["oracle-team"] == json.loads(json.dumps(result.summary))
    assert main(["report", str(out), "--no-plots"]) == 0
    # a hand-edited team log is refused, naming the file and line
    (out / EPISODES_FILE).write_text((out / EPISODES_FILE).read_text() + '{"record": 1}\n')
    with pytest.raises(LogError, match=f"{EPISODES_FILE}, line 7"):
        load_run_summary(out)


@pytest.mark.timeout(600, method="thread")  # a guard: the run is held open by its gated agent
def test_a_team_run_killed_midway_resumes_with_nothing_lost_or_duplicated(tmp_path):
    """SIGKILL a pool team run (its driver and workers) while one worker is held inside an
    episode: the rerun completes the logs to exactly the clean run's."""
    import os
    import signal
    import subprocess
    import sys

    from _faults import wait_until

    grid = dict(SMALL, tasks=4)
    clean = evaluate_team("vault_v0", team(), out=tmp_path / "clean", **grid)
    out, gate = tmp_path / "killed", tmp_path / "gate"
    gate.mkdir()
    script = (
        "import sys, _faults\n"
        "from turnbudget.agents import OracleAgent\n"
        "from turnbudget.eval import evaluate_team\n"
        "out, gate = sys.argv[1], sys.argv[2]\n"
        "team = {'operator': OracleAgent(0.3),\n"
        "        'runner': _faults.GatedOracle(0.3, gate, out + '/episodes.jsonl', 3)}\n"
        f"evaluate_team('vault_v0', team, out=out, backend='pool', workers=2, **{grid!r})\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), *sys.path])}
    proc = subprocess.Popen([sys.executable, "-c", script, str(out), str(gate)], env=env,
                            start_new_session=True)  # fmt: skip
    try:
        assert wait_until((gate / "blocked").exists, proc), "the run ended before its gate"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its workers, mid-run
        proc.wait()
    logged = (out / EPISODES_FILE).read_bytes().count(b"\n")
    assert 3 <= logged < len(clean.episodes)
    resumed = evaluate_team("vault_v0", team(), out=out, **grid)
    assert resumed.n_run == len(clean.episodes) - logged
    assert resumed.episodes == clean.episodes
    for name in (EPISODES_FILE, STEPS_FILE):
        assert lines(out, name) == lines(tmp_path / "clean", name)


@pytest.mark.parametrize(
    "edit",
    [{"label": 7}, {"label": ["a"]}, {"agents": {"operator": 1, "runner": "x"}}, {"game": ""},
     {"success": "nobody"}, {"ts": [2**40]}, {"record_steps": "yes"}, {"seed": "0"},
     {"grants": {"operator": [["needs_oracle"]]}}, {"grants": {"runner": [{}]}}],
    ids=["label-int", "label-list", "agent-int", "game-empty", "success", "huge-t", "flag", "seed",
         "grant-list", "grant-object"],
)  # fmt: skip
def test_a_hand_edited_team_run_json_is_one_line_naming_it(tmp_path, capsys, edit):
    """A team run's run.json was checked far less than a solo run's: a label of 7 or a list,
    or an agent's repr of 1, was a traceback in `turnbudget report` (AttributeError,
    TypeError: unhashable type)."""
    out = tmp_path / "run"
    evaluate_team("vault_v0", team(), out=out, **SMALL)
    config = json.loads((out / RUN_FILE).read_text())
    (out / RUN_FILE).write_text(json.dumps({**config, **edit}))
    assert main(["report", str(out), "--no-plots"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith(f"turnbudget report: error: {out / RUN_FILE}: ") and err.count("\n") == 1


@pytest.mark.parametrize("sealed", [False, True], ids=["in_process", "sealed"])
def test_a_member_answering_bytes_fails_its_episode_sealed_or_not(sealed):
    """As `evaluate`'s env refuses a non-str command: the team game took bytes as a spent turn
    in process, while sealed they could not be sent back (not JSON) and failed the episode,
    so one agent scored differently by where it ran."""
    bad_seed = derive_seed(0, "vault_v0:runner", 1, 0)  # task 1, repeat 0
    faulty = {"operator": OracleAgent(0.3), "runner": BytesOracle(0.3, {bad_seed})}
    result = evaluate_team("vault_v0", faulty, retries=0, sealed=sealed, **SMALL)
    failed = [e for e in result.episodes if e.get("failed_to_run")]
    assert [(e["seed"], e["rep"]) for e in failed] == [(1, 0)]
    assert "TypeError" in failed[0]["error"]
    clean = evaluate_team("vault_v0", team(), **SMALL)
    ok = [e for e in result.episodes if not e.get("failed_to_run")]
    assert ok == [e for e in clean.episodes if e["episode_id"] != failed[0]["episode_id"]]


def test_a_sealed_member_is_shown_the_house_s_moves_only_if_planned_so(tmp_path):
    """The engine read `needs_house` again in the worker, where a sealed agent's own process
    answers: a player whose flag turned on there was handed the next step of its own role's
    shortest plan (Pass@(1,30) 0.45 where random play scores 0), the record saying nothing.
    The house is now the roles whose flag was read where the run was planned (run.json's
    ``house``)."""
    from _faults import ShippedHouseAgent

    trace = tmp_path / "trace"
    trace.mkdir()
    agents = {"player_1": ShippedHouseAgent(str(trace)), "player_0": "house"}
    result = evaluate_team(
        "race_v0", agents, ks=[1], ts=[30], tasks=3, n_bootstrap=0, sealed=True,
        out=tmp_path / "run",
    )  # fmt: skip
    assert list(trace.iterdir()) == []
    assert result.config["house"] == ["player_0"] and result.n_run == 3
    assert not any(e.get("failed_to_run") for e in result.episodes)
    assert json.loads((tmp_path / "run" / RUN_FILE).read_text())["house"] == ["player_0"]


def test_the_mode_follows_the_budget_flag_the_record_holds():
    """`mode="auto"` read `budget_aware` on its own, apart from the grants: a flag that
    changed between the reads gave a truncate run (every T scored from one episode at the
    largest) whose record said the member saw its budget."""
    from turnbudget.agents import RandomAgent

    class OnceAware(RandomAgent):  # aware at its first two reads (its check, its grants)
        reads = 0

        @property
        def budget_aware(self) -> bool:
            OnceAware.reads += 1
            return OnceAware.reads <= 2

    result = evaluate_team(
        "vault_v0", {"operator": OnceAware(), "runner": "random"}, ks=[1], ts=[6, 12],
        tasks=1, n_bootstrap=0,
    )  # fmt: skip
    aware = "budget_aware" in result.config["grants"].get("operator", [])
    assert (result.config["mode"] == "rerun") is aware, result.config


def test_the_team_step_probe_probes_the_roles_its_house_check_left():
    """The step probe checked the house (`needs_house`) in one read and chose the roles to
    probe in another: a flag that changed between them probed as a player a role the check
    had taken for the house."""
    from turnbudget.agents.house import HouseAgent
    from turnbudget.eval.probes.team import team_step_probe

    class HouseForTwoReads(HouseAgent):  # the house at its first two reads (its check, the house's)
        reads = 0

        @property
        def needs_house(self) -> bool:
            HouseForTwoReads.reads += 1
            return HouseForTwoReads.reads <= 2

    out = team_step_probe(
        "race_v0", {"player_0": HouseForTwoReads(), "player_1": "oracle"}, tasks=2
    )
    assert set(out) == {"player_1"}, out


def test_the_race_step_probe_scores_a_second_player_by_its_own_optimal_commands():
    """Both race players probed: the plan is player_0's best response, and player_1's command
    in it the house's, at times a take that fails (medium task 13, round 10: "take wood" with
    no wood there). An always-`wait` player_1 matched that failed take: an optimal rate of
    0.053 for a command never among its optimal ones."""
    from turnbudget.eval.probes.team import team_step_probe

    class Wait:
        def reset(self, seed):
            pass

        def act(self, observation, info):
            return "wait"

    out = team_step_probe("race_v0", {"player_0": Wait(), "player_1": Wait()},
                          difficulty="medium", tasks=20, t0s=[0, 2, 4, 6, 8, 10])  # fmt: skip
    assert out["player_1"]["n"] > 0 and out["player_1"]["optimal_rate"] == 0.0, out
    assert out["player_0"]["optimal_rate"] == 0.0, out
    both = team_step_probe("race_v0", {"player_0": "oracle", "player_1": "oracle"},
                           difficulty="medium", tasks=5, t0s=[0, 4, 8])  # fmt: skip
    assert both["player_0"]["skill"] == both["player_1"]["skill"] == 1.0, both


def test_a_local_team_run_closes_every_env_it_made(monkeypatch):
    """The team kind had no close: its games stayed open after the run (the driver closes
    the envs of evaluate's and probe's kinds)."""
    from turnbudget.eval.run import team as team_module

    made, closed = [], []
    build = team_module._build

    def spied_build(config, sink):
        env = build(config, sink)
        if sink is not None:  # (not the settings check, which closes its own)
            made.append(env)
            close = env.close
            env.close = lambda: (closed.append(env), close())
        return env

    monkeypatch.setattr(team_module, "_build", spied_build)
    evaluate_team("vault_v0", team(), **SMALL)
    assert made and closed == made


@pytest.mark.parametrize("loss", ["a cut line", "the whole log"])
def test_a_team_run_whose_step_records_were_lost_is_not_resumed(loss, tmp_path):
    """Its plan did not say it records steps, and a team member's steps are its own
    (``ID#role``): the resume kept 7 of an episode's 8 steps, or none, without a word,
    where a single-agent run is refused."""
    out = tmp_path / "run"
    settings = dict(ks=[1], ts=[10], n=1, tasks=2, out=out, n_bootstrap=0)
    evaluate_team("vault_v0", team(0.2), **settings)
    steps = out / STEPS_FILE
    if loss == "a cut line":
        data = steps.read_bytes().splitlines(keepends=True)
        steps.write_bytes(b"".join(data[:-1]) + data[-1][:40])
    else:
        steps.unlink()
    with pytest.raises(LogError, match=r"is logged complete, but .* holds step records for"):
        evaluate_team("vault_v0", team(0.2), **settings)


def test_a_team_run_with_the_house_resumes_with_its_steps_checked(tmp_path):
    out = tmp_path / "run"
    settings = dict(ks=[1], ts=[10], n=1, tasks=2, out=out, n_bootstrap=0)
    players = {"player_0": OracleAgent(0.2), "player_1": "house"}
    first = evaluate_team("race_v0", players, **settings)
    again = evaluate_team("race_v0", players, **settings)
    assert again.n_run == 0 and again.summary["groups"] == first.summary["groups"]


@pytest.mark.parametrize(
    "setting",
    [
        {"reveal": {"mode": "final", "final_turns": np.int64(3)}},
        {"errors": {"rate": 0.1, "weights": np.array([1.0, 1.0, 1.0])}},
    ],
)
def test_a_setting_run_json_cannot_hold_is_refused_with_or_without_out(setting, tmp_path):
    """With `out`, json.dumps' own TypeError ("int64 is not JSON serializable") once the run
    had its directory; without, the same call ran: `evaluate` refuses both alike."""
    from turnbudget.eval import evaluate_team

    team = {"operator": "oracle", "runner": "oracle"}
    for out in (None, tmp_path / "run"):
        with pytest.raises(ValueError, match="to be JSON-serialisable"):
            evaluate_team("vault_v0", team, ks=[1], ts=[30], tasks=2, n_bootstrap=0, out=out,
                          **setting)  # fmt: skip
    assert not (tmp_path / "run").exists()
