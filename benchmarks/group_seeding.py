"""Which text-game envs keep what a GRPO group needs? `check_group_seeding` side by side.

A GRPO group compares K attempts of one task: that needs K resets with one seed to
start in the same state, the env's randomness to be its own, a reset in mid-episode
to be clean and the turn cap to truncate without terminating
(`turnbudget.utils.check_group_seeding`). This script runs the check on our games
in-process and, with ``--peers-python``, on GEM's and TextArena's games through
``peer_group_seeding.py`` in the peers' own venv (never imported here; skipped with a
line when absent), and prints one table: a row per env, a column per check.

Run:
    python benchmarks/group_seeding.py                  # every native difficulty
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install gem-llm textarena -e .
    python benchmarks/group_seeding.py --peers-python /tmp/peers/bin/python
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import gymnasium as gym

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.cli.flags import parse_config
from turnbudget.utils import CHECKS, check_group_seeding

__all__ = ["Config", "main", "ours", "peers", "print_table"]

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Config:
    """The comparison (every field is a flag)."""

    env_ids: str = ""
    """Our ids to check, comma-separated (default: every registered native difficulty)."""
    seeds: int = 3
    """Reset seeds 0..N-1 (same_start runs on each)."""
    group_size: int = 4
    """K, the attempts per seed."""
    steps: int = 8
    """Turns per attempt."""
    peers_python: str = ""
    """Python of a venv with gem-llm, textarena and turnbudget: check their games too."""


def native_ids() -> list[str]:
    return sorted(
        env_id
        for env_id, spec in gym.registry.items()
        if str(spec.kwargs.get("game_entry_point", "")).startswith("turnbudget.envs.native")
        and "difficulty" in spec.kwargs  # the registered difficulties, not the free -v0 ids
    )


def ours(config: Config) -> list[dict]:
    """A row per id: the outcome of every check, and the failures' messages."""
    rows = []
    for env_id in [i for i in config.env_ids.split(",") if i] or native_ids():
        report = check_group_seeding(
            env_id,
            seeds=tuple(range(config.seeds)),
            group_size=config.group_size,
            steps=config.steps,
        )
        rows.append(
            {
                "env_id": env_id,
                "checks": report.checks,
                "failures": {f.check: f.message for f in report.failures},
                "skipped": report.skipped,
            }
        )
    return rows


def peers(config: Config) -> list[dict]:
    """GEM's and TextArena's rows, from ``peer_group_seeding.py`` run in the peers' venv."""
    python = Path(config.peers_python)
    if not python.exists():
        return [{"env_id": "GEM, TextArena", "skipped": f"no interpreter at {python}"}]
    script = Path(__file__).with_name("peer_group_seeding.py")
    flags = ["--seeds", str(config.seeds), "--group-size", str(config.group_size)]
    out = subprocess.run(
        [str(python), str(script), *flags, "--steps", str(config.steps)],
        capture_output=True,
        text=True,
        check=False,
        # The peers' venv imports this checkout's turnbudget (the checker).
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0:
        rows.append({"env_id": "peer_group_seeding.py", "skipped": out.stderr.strip()[-300:]})
    return rows


_CELL = {"passed": "pass", "failed": "**FAIL**", "skipped": "skip"}


def print_table(rows: list[dict]) -> None:
    """A Markdown table (a row per env, a column per check), then why each failure failed."""
    print("| env | " + " | ".join(CHECKS) + " |")
    print("|---" * (len(CHECKS) + 1) + "|")
    notes = []
    for row in rows:
        if isinstance(row.get("skipped"), str):
            notes.append(f"- {row['env_id']}: skipped: {row['skipped']}")
            continue
        cells = [_CELL[row["checks"][check]] for check in CHECKS]
        print(f"| {row['env_id']} | " + " | ".join(cells) + " |")
        for check, message in row["failures"].items():
            why = message.split(": ", 1)[1] if ": " in message else message
            notes.append(f"- {row['env_id']}, {check}: {why}")
        for check, why in row["skipped"].items():
            notes.append(f"- {row['env_id']}, {check} skipped: {why}")
    if notes:
        print()
        print("\n".join(notes))


def main(argv: list[str] | None = None) -> None:
    config = parse_config(Config, argv, __doc__ or "")
    rows = ours(config)
    if config.peers_python:
        rows += peers(config)
    print_table(rows)


if __name__ == "__main__":
    main()
