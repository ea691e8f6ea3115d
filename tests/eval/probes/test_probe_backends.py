"""Probes on the evaluation backends: the same files from every backend and worker count, and
a probe that fails to run is left out of the skills and counted apart."""

from __future__ import annotations

import os
from pathlib import Path

from _faults import RaisingAgent

from turnbudget.agents import OracleAgent
from turnbudget.cli import main
from turnbudget.eval.probes.run import PROBE_FAILURES_FILE, PROBES_FILE, probe

ENVS = ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"]
SMALL = dict(tasks=3, baseline_repeats=2, n_bootstrap=50)
FILES = ("probe.json", PROBES_FILE, "probe_summary.json")  # (probe_report.md is the caller's)


def files(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in FILES}


def test_local_and_pool_give_the_same_files(tmp_path):
    agents = [OracleAgent(0.3), OracleAgent(0.6)]
    local = probe(ENVS, agents, out=tmp_path / "local", **SMALL)
    pooled = probe(ENVS, agents, out=tmp_path / "pool", backend="pool", workers=2, **SMALL)
    assert local.records and pooled.records == local.records
    assert files(tmp_path / "pool") == files(tmp_path / "local")
    assert not local.failed and local.summary["failed_to_run"] == {
        "oracle-eps0.3": 0, "oracle-eps0.6": 0, "random": 0,
    }  # fmt: skip
    assert not (tmp_path / "local" / PROBE_FAILURES_FILE).exists()


def test_a_probe_that_fails_to_run_is_left_out_and_counted(tmp_path):
    clean = probe(ENVS[0], OracleAgent(0.3), label="agent", **SMALL)
    mine = [r for r in clean.records if r["role"] == "agent"]
    bad = {mine[0]["agent_seed"], mine[-1]["agent_seed"]}
    out = tmp_path / "faulty"
    faulty = probe(
        ENVS[0], RaisingAgent(0.3, bad), label="agent", out=out, backend="pool", workers=2,
        retries=1, **SMALL,
    )  # fmt: skip
    failed_keys = {(r["task_seed"], r["prefix"], r["probe"], r["kind"]) for r in faulty.failed}
    assert len(faulty.failed) == sum(r["agent_seed"] in bad for r in mine) >= 2
    assert all(r["failed_to_run"] and r["attempts"] == 2 for r in faulty.failed)
    assert all("agent bug" in r["error"] and r["failure"] == "exception" for r in faulty.failed)
    # Every other probe is the clean run's, in the same order; the failed ones are gone.
    kept = [
        r for r in clean.records
        if r["role"] == "baseline" or (r["task_seed"], r["prefix"], r["probe"], r["kind"])
        not in failed_keys
    ]  # fmt: skip
    assert faulty.records == kept
    assert faulty.summary["failed_to_run"] == {"agent": len(faulty.failed), "random": 0}
    assert faulty.summary["n_records"] == len(clean.records) - len(faulty.failed)
    assert (out / PROBE_FAILURES_FILE).read_text().count("\n") == len(faulty.failed)


def test_cli_takes_the_backend_flags(tmp_path, capsys):
    out = tmp_path / "cli"
    args = ["probe", "--env", ENVS[0], "--agent", "oracle:0.3", "--tasks", "2", "--quiet"]
    assert main([*args, "--backend", "pool", "--workers", "2", "--out", os.fspath(out)]) == 0
    probe(ENVS[0], OracleAgent(0.3), tasks=2, out=tmp_path / "api")
    assert (out / PROBES_FILE).read_bytes() == (tmp_path / "api" / PROBES_FILE).read_bytes()
    assert main([*args, "--ray-address", "auto", "--out", os.fspath(out)]) == 2
    assert "--ray-address needs --backend ray" in capsys.readouterr().err


def test_eval_probe_is_the_function_whatever_was_imported_first():
    import subprocess
    import sys

    code = (
        "import turnbudget.eval.probes.run, turnbudget.cli.probe\n"
        "from turnbudget.eval import probe\n"
        "import turnbudget.eval as ev\n"
        "print(callable(probe), callable(ev.probe), ev.probe.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "turnbudget.eval.probes.run"]
