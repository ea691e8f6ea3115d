"""A team episode's records go out in one delivery (each member's steps, then its episode
record, member after member): a delivery torn by a killed writer goes whole, never leaving
a team episode with only some of its members."""

from __future__ import annotations

import json

import pytest

from turnbudget.multiagent.stack import make_team
from turnbudget.records import repair_torn_tail


def _deliveries(tmp_path, seeds):
    """The bytes of each seed's delivery: random commands, so every episode is a long one."""
    out = []
    for seed in seeds:
        path = tmp_path / f"team{seed}.jsonl"
        env = make_team("vault_v0", turn_budget=6, record=path)
        env.reset(seed=seed)
        while env.agents:
            env.step({a: "wait" for a in env.agents})
        env.close()
        out.append(path.read_bytes())
    return out


def _members(data: bytes) -> list[tuple[str, str]]:
    return [(r["record"], r["agent"]) for r in map(json.loads, data.splitlines())]


@pytest.mark.parametrize("into", ["first member's steps", "after first member", "last line"])
def test_a_torn_team_delivery_is_cut_whole(tmp_path, into):
    whole, last = _deliveries(tmp_path, [0, 1])
    lines = last.splitlines(keepends=True)
    first_episode = next(i for i, line in enumerate(lines) if b'"record":"episode"' in line)
    done = sum(map(len, lines[: first_episode + 1]))
    offset = {"first member's steps": len(lines[0]) + 9, "after first member": done + 30,
              "last line": len(last) - 3}[into]  # fmt: skip
    path = tmp_path / "torn.jsonl"
    path.write_bytes(whole + last[:offset])
    assert repair_torn_tail(path) == offset
    assert path.read_bytes() == whole  # (the runner's half was kept, the operator's gone)
    assert sorted(set(_members(whole))) == [
        ("episode", "operator"), ("episode", "runner"), ("step", "operator"), ("step", "runner")
    ]  # fmt: skip


def test_a_whole_team_delivery_before_a_torn_one_is_kept(tmp_path):
    """A new delivery's first line torn at any length: the whole one before it stays (torn
    before its id, it is told whole by having as many members as the delivery before it)."""
    first, second, third = _deliveries(tmp_path, [0, 1, 2])
    path = tmp_path / "torn.jsonl"
    for cut in (5, 40, 200):
        path.write_bytes(first + second + third[:cut])
        assert repair_torn_tail(path) == cut
        assert path.read_bytes() == first + second
    # Torn as soon after half of a delivery: that half goes.
    lines = second.splitlines(keepends=True)
    half = sum(map(len, lines[: next(i for i, x in enumerate(lines) if b'"episode"' in x) + 1]))
    path.write_bytes(first + second[: half + 5])
    assert repair_torn_tail(path) == half + 5
    assert path.read_bytes() == first
