"""Probes on the ray backend (marker ``ray``; needs the ray extra): the same files as in-process
with two workers, on a local Ray instance the backend starts for the run and shuts down."""

from __future__ import annotations

from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from turnbudget.agents import OracleAgent  # noqa: E402
from turnbudget.eval.probes.run import PROBES_FILE, probe  # noqa: E402

pytestmark = pytest.mark.ray

ENVS = ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"]
FILES = ("probe.json", PROBES_FILE, "probe_summary.json")  # (probe_report.md is the caller's)


def test_ray_and_local_give_the_same_probe_files(tmp_path: Path):
    if ray.is_initialized():  # another module's instance: this test starts its own
        ray.shutdown()
    kwargs = dict(tasks=3, baseline_repeats=2, n_bootstrap=50)
    agents = [OracleAgent(0.3), OracleAgent(0.6)]
    local = probe(ENVS, agents, out=tmp_path / "local", **kwargs)
    on_ray = probe(ENVS, agents, out=tmp_path / "ray", backend="ray", workers=2, **kwargs)
    assert not ray.is_initialized()  # the backend's own instance is gone
    assert local.records and on_ray.records == local.records and not on_ray.failed
    for name in FILES:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
