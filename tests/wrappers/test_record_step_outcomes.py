"""RecordStepOutcomes: the schema, error and recovery accounting, sinks, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import typing
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from _faults import wait_until
from _wrapper_stub import STUB_ID

from turnbudget.records import RecordSink, repair_torn_tail
from turnbudget.wrappers import EpisodeRecord, InjectErrors, RecordStepOutcomes, StepRecord

STEP_KEYS = set(typing.get_type_hints(StepRecord))
EPISODE_KEYS = set(typing.get_type_hints(EpisodeRecord))
# Names the evaluator reads: they must never disappear.
REQUIRED_STEP = {
    "record", "episode_id", "env_id", "env_index", "seed", "turn", "turn_budget", "action",
    "valid_action", "optimal", "distance_before", "distance_after", "progress", "reward",
    "injected_error", "terminated", "truncated", "won",
}  # fmt: skip
REQUIRED_EPISODE = {
    "record", "episode_id", "env_id", "env_index", "seed", "success", "first_success_turn",
    "turns_used", "turn_budget", "initial_distance", "n_errors_injected", "n_errors_self",
    "n_recovered", "turns_to_recover", "optimal_step_rate", "optimal_step_rate_on_track",
    "optimal_step_rate_after_error",
}  # fmt: skip


def stub(**kwargs) -> gym.Env:
    return gym.make(STUB_ID, **{"length": 6, "turn_budget": 20, "trap": False, **kwargs})


def run(env: gym.Env, actions: list[str], seed: int = 0, options=None) -> list[dict]:
    env.reset(seed=seed, options=options)
    for action in actions:
        *_, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return env.get_wrapper_attr("records")


def test_schema_keeps_the_agreed_names():
    assert REQUIRED_STEP <= STEP_KEYS
    assert REQUIRED_EPISODE <= EPISODE_KEYS


def test_records_follow_the_schema_and_are_json():
    env = RecordStepOutcomes(InjectErrors(stub(), rate=0.5))
    records = run(env, ["forward", "back", "dance", "wait"] * 5 + ["forward"] * 20)
    assert [r["record"] for r in records].count("episode") == 1
    for r in records:
        assert set(r) == (STEP_KEYS if r["record"] == "step" else EPISODE_KEYS)
        assert json.loads(json.dumps(r)) == r


def test_step_records_keep_the_schema_order_and_are_their_own_dicts():
    """The JSON line of a step keeps `StepRecord`'s key order, and no two records (nor two
    episodes') share a dict: changing one record changes no other."""
    env = RecordStepOutcomes(InjectErrors(stub(turn_budget=6), rate=0.5))
    steps = [r for r in run(env, ["forward", "dance"] * 3, seed=1) if r["record"] == "step"]
    assert all(list(r) == list(typing.get_type_hints(StepRecord)) for r in steps)
    assert [r["turn"] for r in steps] == [1, 2, 3, 4, 5, 6]
    steps[0]["turn"] = steps[0]["seed"] = -1
    assert [r["turn"] for r in steps[1:]] == [2, 3, 4, 5, 6]
    assert {r["seed"] for r in steps[1:]} == {1}
    second = [r for r in run(env, ["wait"] * 6, seed=2)[7:] if r["record"] == "step"]
    assert [(r["seed"], r["turn"], r["episode_index"]) for r in second[:2]] == [
        (2, 1, 1),
        (2, 2, 1),
    ]


def test_self_error_recovery_and_optimal_rates():
    env = RecordStepOutcomes(stub())
    env.reset(seed=0)
    start = env.unwrapped.pos  # the stub starts at 0 or 1
    actions = ["forward", "back", "back", "forward", "forward", "wait"] + ["forward"] * 6
    records = run(env, actions, seed=0)
    steps, episode = records[:-1], records[-1]
    assert [s["turn"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["optimal"] for s in steps[:6]] == [True, False, False, True, True, False]
    assert [s["error_self"] for s in steps[:6]] == [False, True, True, False, False, False]
    assert [s["phase"] for s in steps[:6]] == [
        "on_track", "on_track", "after_error", "after_error", "recovering", "on_track",
    ]  # fmt: skip
    assert steps[0]["distance_before"] == 6 - start == episode["initial_distance"]
    assert episode["success"] and episode["first_success_turn"] == len(steps)
    assert episode["n_errors_self"] == 2 and episode["n_errors_injected"] == 0
    # Distances after turns 1-5: D, D+1 (error at turn 2), D+2 (error at turn 3), D+1 (the
    # turn-3 error recovered: 1 turn), D (the turn-2 error recovered: turns 3-5, 3 turns).
    # turns_to_recover lists errors in the order they were recovered.
    assert episode["n_recovered"] == 2 and episode["turns_to_recover"] == [1, 3]
    assert episode["n_unrecovered"] == 0
    judged = len(steps)
    assert episode["optimal_step_rate"] == pytest.approx(sum(s["optimal"] for s in steps) / judged)
    on_track = [s["optimal"] for s in steps if s["phase"] == "on_track"]
    after = [s["optimal"] for s in steps if s["phase"] == "after_error"]
    assert episode["optimal_step_rate_on_track"] == pytest.approx(sum(on_track) / len(on_track))
    assert after == [False, True]  # turns 3 and 4
    assert episode["optimal_step_rate_after_error"] == pytest.approx(0.5)
    assert episode["n_steps_after_error"] == 2
    assert (episode["n_steps_judged"], episode["n_optimal_steps"]) == (
        judged,
        sum(s["optimal"] for s in steps),
    )
    assert (episode["n_optimal_on_track"], episode["n_steps_on_track"]) == (
        sum(on_track),
        len(on_track),
    )
    assert (episode["n_optimal_after_error"], episode["n_steps_after_error"]) == (1, 2)


def test_injected_setback_is_not_a_self_error_and_recovers():
    env = RecordStepOutcomes(InjectErrors(stub(length=30, turn_budget=6), schedule={2: "setback"}))
    records = run(env, ["forward"] * 6)
    steps, episode = records[:-1], records[-1]
    event = steps[1]["injected_error"]
    assert event["kind"] == "setback" and steps[1]["distance_before"] == event["distance_before"]
    lost = event["distance_after"] - event["distance_before"]
    assert not any(s["error_self"] for s in steps)
    assert episode["n_errors_injected"] == 1 and episode["n_errors_self"] == 0
    # The setback fires at the start of turn 2; forward on turns 2.. wins the distance back.
    assert episode["turns_to_recover"] == [lost] and episode["n_recovered"] == 1
    assert steps[1]["optimal"] is True  # judged on what the agent saw before the turn
    assert steps[2]["phase"] == "after_error"


def test_slip_is_injected_not_self():
    env = RecordStepOutcomes(InjectErrors(stub(length=30, turn_budget=3), schedule={1: "slip"}))
    steps = run(env, ["forward"] * 3)[:3]
    assert steps[0]["injected_error"]["kind"] == "slip" and steps[0]["error_self"] is False
    assert steps[0]["optimal"] is True and steps[0]["action"] == "forward"


def test_synonym_of_an_optimal_command_counts_as_optimal():
    env = RecordStepOutcomes(gym.make("turnbudget/Maze-Easy-v0"))
    env.reset(seed=0)
    best = env.unwrapped.optimal_actions()[0]  # "go <direction>"
    env.step(best.split()[1][0])  # "n", "s", "e" or "w"
    env.step("look")
    env.close()
    assert env.n_abandoned == 1 and env.records == []


def test_synonym_record():
    records = []
    env = RecordStepOutcomes(
        gym.make("turnbudget/Maze-Easy-v0", turn_budget=2), callback=records.append
    )
    env.reset(seed=0)
    env.step(env.unwrapped.optimal_actions()[0].split()[1][0])
    env.step("look")
    assert [r.get("optimal") for r in records] == [True, False, None]


@pytest.mark.parametrize("kind", ["slip", "transient", "setback"])
@pytest.mark.parametrize(
    ("env_id", "spell"),
    [("turnbudget/Maze-Easy-v0", lambda c: c.split()[1][0]),  # "n" for "go north"
     ("turnbudget/Maze-Easy-v0", str.upper), ("turnbudget/KeyQuest-Easy-v0", str.upper)],
    ids=["maze-letter", "maze-upper", "keyquest-upper"],
)  # fmt: skip
def test_another_spelling_of_an_optimal_command_is_judged_as_it_on_error_turns(env_id, spell, kind):
    """On quiet turns "n" or "GO NORTH" counted as the optimal "go north"; on a turn with an
    injected error it was invalid, not optimal, or a self-inflicted error (an oracle playing
    upper-cased commands had 8-16 self-errors and 115-181 invalid commands in 40 episodes
    at rate 0.3, none with the listed spelling)."""
    import turnbudget

    records: list = []
    env = turnbudget.make(
        env_id, turn_budget=3, errors={"schedule": {1: kind}}, record={"callback": records.append}
    )
    env.reset(seed=0)
    best = env.unwrapped.optimal_actions()[0]
    _, _, _, _, info = env.step(spell(best))
    assert info["valid_action"] is True and info["injected_error"]["applied"] is True
    while not records or records[-1]["record"] != "episode":
        env.step("look")
    first = records[0]
    assert (first["valid_action"], first["optimal"], first["error_self"]) == (True, True, False)
    assert records[-1]["n_invalid"] == 0 and records[-1]["n_errors_self"] == 0


def test_episode_id_option_env_index_and_unseeded_resets():
    env = RecordStepOutcomes(stub(turn_budget=1), env_index=3)
    run(env, ["wait"], seed=5)
    run(env, ["wait"], seed=None, options={"episode_id": "task-a/run-1"})
    run(env, ["wait"], seed=None)
    ids = [r["episode_id"] for r in env.records if r["record"] == "episode"]
    # (an unseeded reset goes by the last seed given; its record's seed stays None)
    assert ids == [f"{STUB_ID}/3/5/0", "task-a/run-1", f"{STUB_ID}/3/5/2"]
    assert [r["seed"] for r in env.records if r["record"] == "episode"] == [5, None, None]
    assert {r["env_index"] for r in env.records} == {3}


@pytest.mark.parametrize(
    "bad", [10**5000, "x" * 10_000_000, 5, ["run"]], ids=["huge-int", "10-MB", "int", "list"]
)
def test_an_episode_id_option_that_is_no_short_str_is_refused_and_the_reset_with_it(bad):
    """Any object went through str() into every record (a 10 MB id: 30 MB for a 2-turn
    episode); a huge int failed in str() after the game had reset, and the steps after it
    played on with nothing recorded."""
    env = RecordStepOutcomes(stub(turn_budget=2))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Expect the `episode_id` option to be a str of at"):
        env.reset(seed=1, options={"episode_id": bad})
    with pytest.raises(gym.error.ResetNeeded):
        env.step("wait")
    run(env, ["wait", "wait"], seed=1, options={"episode_id": np.str_("task-b")})
    assert [r["episode_id"] for r in env.records if r["record"] == "episode"] == ["task-b"]


def test_a_vector_env_s_sub_envs_record_distinct_episode_ids(tmp_path):
    """gym.make_vec seeds its sub-envs apart once, then autoresets them unseeded: every
    sub-env's later episodes were named ``<id>/None/<k>``, the same ids from each."""
    path = tmp_path / "records.jsonl"
    envs = gym.make_vec("turnbudget/Maze-Easy-v0", num_envs=3, vectorization_mode="sync",
                        turn_budget=2, record=str(path))  # fmt: skip
    envs.reset(seed=0)
    for _ in range(6):  # three episodes each (next-step autoreset)
        envs.step(["look"] * 3)
    envs.close()
    episodes = [r for r in map(json.loads, path.read_text().splitlines())
                if r["record"] == "episode"]  # fmt: skip
    ids = [r["episode_id"] for r in episodes]
    assert len(ids) >= 6 and len(set(ids)) == len(ids), ids


def test_oracle_off_for_envs_without_one():
    with pytest.raises(TypeError, match="oracle=False"):
        RecordStepOutcomes(stub(oracle=False))
    env = RecordStepOutcomes(stub(oracle=False), oracle=False)
    records = run(env, ["forward"] * 10)
    assert all(r["optimal"] is None and r["distance_after"] is None for r in records[:-1])
    assert records[-1]["success"] and records[-1]["optimal_step_rate"] is None


@pytest.mark.parametrize("kind", ["setback", "slip"])
def test_records_without_the_oracle_open_no_error_that_nothing_could_close(kind):
    """Injected errors beside records without the oracle: a setback (judged by the injector's
    own distances) and every turn after it ("no distance after" read as "no way left to
    win") opened errors no distance could close, and an oracle that won was logged with
    n_unrecovered 1. The errors injected are still counted."""
    env = gym.make("turnbudget/Maze-Easy-v0", errors={"schedule": {1: kind, 3: kind}},
                   record={"oracle": False}, turn_budget=30)  # fmt: skip
    env.reset(seed=0)
    while True:
        *_, terminated, truncated, _ = env.step(env.unwrapped.optimal_actions()[0])
        if terminated or truncated:
            break
    (episode,) = [r for r in env.get_wrapper_attr("records") if r["record"] == "episode"]
    assert episode["success"] and episode["n_errors_injected"] == 2
    assert episode["n_unrecovered"] == episode["n_recovered"] == episode["n_errors_self"] == 0
    steps = [r for r in env.get_wrapper_attr("records") if r["record"] == "step"]
    assert all(s["errors_opened"] == 0 for s in steps)


def test_steps_off_keeps_only_summaries():
    env = RecordStepOutcomes(stub(), record_steps=False)
    assert [r["record"] for r in run(env, ["forward"] * 10)] == ["episode"]


def test_sinks_agree(tmp_path):
    seen = []
    path = tmp_path / "records.jsonl"
    env = RecordStepOutcomes(
        InjectErrors(stub(), rate=0.3), path=path, callback=seen.append, memory=True
    )
    for seed in range(3):
        run(env, ["forward", "back", "wait"] * 10, seed=seed)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == seen == env.records
    assert len([r for r in lines if r["record"] == "episode"]) == 3


def test_abandoned_episode_is_dropped(tmp_path):
    path = tmp_path / "r.jsonl"
    env = RecordStepOutcomes(stub(), path=path)
    env.reset(seed=0)
    env.step("wait")
    run(env, ["forward"] * 10, seed=1)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert env.n_abandoned == 1 and {r["seed"] for r in lines} == {1}


def test_bad_sinks_raise_at_construction(tmp_path):
    with pytest.raises(ValueError, match="Cannot append records"):
        RecordStepOutcomes(stub(), path=tmp_path)  # a folder
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="Cannot append records"):
        RecordStepOutcomes(stub(), path=tmp_path / "file" / "r.jsonl")  # under a file
    with pytest.raises(ValueError, match="does not exist"):  # never created silently
        RecordStepOutcomes(stub(), path=tmp_path / "new" / "dir" / "r.jsonl")
    assert not (tmp_path / "new").exists()
    RecordStepOutcomes(stub(), path=tmp_path / "r.jsonl")
    assert (tmp_path / "r.jsonl").exists()
    with pytest.raises(ValueError, match="callable"):
        RecordStepOutcomes(stub(), callback="print")
    with pytest.raises(ValueError, match="env_index"):
        RecordStepOutcomes(stub(), env_index=-1)


WRITER = textwrap.dedent(
    """
    import sys
    import gymnasium as gym
    import _wrapper_stub
    import turnbudget
    from turnbudget.wrappers import InjectErrors, RecordStepOutcomes
    env = RecordStepOutcomes(
        InjectErrors(gym.make(_wrapper_stub.STUB_ID, length=5, turn_budget=40), rate=0.3),
        path=sys.argv[1], fsync=False)
    seed = 0
    while True:
        env.reset(seed=seed)
        seed += 1
        done = False
        while not done:
            *_, terminated, truncated, _ = env.step(["forward", "back", "wait"][seed % 3])
            done = terminated or truncated
    """
)


@pytest.mark.timeout(600, method="thread")  # a guard: the wait for 200 kB has no deadline
def test_killed_writer_leaves_whole_lines_and_whole_episodes_after_the_next_open(tmp_path):
    """SIGKILL at any moment, then the file opened for records again: whole lines and
    whole episodes only. (A kill can land inside a write of several pages, which Linux
    then cuts short; the reopen removes that torn episode.)"""
    path = tmp_path / "killed.jsonl"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    tests = str(Path(__file__).parents[1])  # (where _wrapper_stub is)
    path_list = os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)], env={**os.environ, "PYTHONPATH": path_list}
    )
    try:
        # The writer never stops: wait for 200 kB however slowly it gets there.
        big = lambda: path.exists() and path.stat().st_size >= 200_000  # noqa: E731
        assert wait_until(big, proc) and proc.poll() is None, "the writer died on its own"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    size = path.stat().st_size
    RecordSink(path)  # what the next writer does first
    data = path.read_bytes()
    assert size - len(data) < 200_000  # at most the torn episode went
    assert data.endswith(b"\n")
    records = [json.loads(line) for line in data.decode().splitlines()]
    assert records[-1]["record"] == "episode"
    steps = 0
    for r in records:
        if r["record"] == "step":
            steps += 1
        else:
            assert steps == r["turns_used"] > 0
            steps = 0


def _episode_lines(tmp_path, seeds):
    """The records file of whole episodes of the stub, one per seed, as bytes."""
    path = tmp_path / f"episodes-{'-'.join(map(str, seeds))}.jsonl"
    env = RecordStepOutcomes(gym.make(STUB_ID, length=5, turn_budget=12), path=path, fsync=False)
    for seed in seeds:
        env.reset(seed=seed)
        done = False
        while not done:
            *_, terminated, truncated, _ = env.step(["forward", "back", "wait"][seed % 3])
            done = terminated or truncated
    return path.read_bytes()


@pytest.mark.parametrize("whole_lines", [1, 2, 4])
def test_steps_of_an_episode_cut_where_a_line_ended_are_cut_off(tmp_path, whole_lines):
    """A write cut where a line ended (a short write of whole pages does so about once per
    line length) left the file ending in a newline after some of an episode's step records,
    and the file was taken as whole: those steps stayed, with no episode record."""
    whole = _episode_lines(tmp_path, [0, 1])
    last = _episode_lines(tmp_path, [2]).splitlines(keepends=True)
    assert len(last) > whole_lines and json.loads(last[whole_lines - 1])["record"] == "step"
    torn = b"".join(last[:whole_lines])
    path = tmp_path / "cut.jsonl"
    path.write_bytes(whole + torn)
    assert repair_torn_tail(path) == len(torn)
    assert path.read_bytes() == whole
    path.write_bytes(whole + torn)
    RecordSink(path)  # (an append cuts it first)
    assert path.read_bytes() == whole


def test_a_whole_file_of_step_records_alone_is_kept(tmp_path):
    """A file of steps alone (`evaluate`'s steps.jsonl) that ends in a newline is whole: the
    check for an episode's steps cut where a line ended cut all of it."""
    whole = b"".join(
        line
        for line in _episode_lines(tmp_path, [0, 1]).splitlines(keepends=True)
        if json.loads(line)["record"] == "step"
    )
    path = tmp_path / "steps.jsonl"
    path.write_bytes(whole)
    assert repair_torn_tail(path) == 0 and path.read_bytes() == whole
    RecordSink(path)
    assert path.read_bytes() == whole


@pytest.mark.parametrize("cut", [1, 7, 30, "second line", "episode line", "episode's last byte"])
def test_a_torn_episode_is_cut_off_when_the_file_is_opened_again(tmp_path, cut):
    whole = _episode_lines(tmp_path, [0, 1])
    last = _episode_lines(tmp_path, [2])  # one more episode, to tear
    lines = last.splitlines(keepends=True)
    offsets = {
        "second line": len(lines[0]) + 5,
        "episode line": len(last) - len(lines[-1]) + 10,
        "episode's last byte": len(last) - 2,  # (the closing brace: the record is not JSON)
    }
    torn = last[: offsets.get(cut, cut)]
    path = tmp_path / "torn.jsonl"
    path.write_bytes(whole + torn)
    assert repair_torn_tail(path) == len(torn)
    assert path.read_bytes() == whole
    RecordSink(path)  # a whole file is left alone
    assert path.read_bytes() == whole


def test_an_episode_that_lost_only_its_newline_is_kept_whole(tmp_path):
    """A log whose last line, a whole episode record, lost its newline (an editor strips it,
    or a writer died before the last byte) was cut back to the episode before, and a log of
    one such episode to nothing: its newline is added, and nothing is cut."""
    for seeds in ([0, 1], [0]):
        whole = _episode_lines(tmp_path, seeds)
        path = tmp_path / "stripped.jsonl"
        path.write_bytes(whole[:-1])
        assert repair_torn_tail(path) == 0 and path.read_bytes() == whole
        path.write_bytes(whole[:-1])
        RecordStepOutcomes(gym.make(STUB_ID, length=5), path=path)
        assert path.read_bytes() == whole


def test_a_file_that_holds_no_record_is_refused_never_cut(tmp_path):
    """A file that is not a records log and does not end in a newline (a ``json.dump``) was
    cut to nothing when a sink was made on it, before any episode."""
    path = tmp_path / "results.json"
    data = json.dumps({"experiment": "important", "scores": list(range(100))}).encode()
    path.write_bytes(data)
    with pytest.raises(ValueError, match="not a records log"):
        RecordSink(path)
    with pytest.raises(ValueError, match="not a records log"):
        RecordStepOutcomes(gym.make(STUB_ID, length=5), path=path)
    with pytest.raises(ValueError, match="not a records log"):
        repair_torn_tail(path)
    assert path.read_bytes() == data


def test_a_torn_first_episode_leaves_an_empty_file(tmp_path):
    first = _episode_lines(tmp_path, [0])
    path = tmp_path / "torn.jsonl"
    path.write_bytes(first[: len(first) // 2])
    RecordStepOutcomes(gym.make(STUB_ID, length=5), path=path)
    assert path.read_bytes() == b""


@pytest.mark.parametrize("alias", [False, True])
def test_an_append_after_a_sharing_writer_died_mid_write_cuts_its_torn_episode_first(
    tmp_path, alias
):
    """Two processes share a records file (``alias``: the survivor names it by a symlink);
    one dies mid-write after the other opened it. The survivor's next episode must not
    glue onto the torn line: it cuts the dead writer's torn episode first, so the file
    holds whole episodes only."""
    path = tmp_path / "shared.jsonl"
    name = path
    if alias:
        name = tmp_path / "link.jsonl"
        name.symlink_to(path)
    survivor = RecordStepOutcomes(stub(length=3), path=name, fsync=False)
    run(survivor, ["forward"] * 3, seed=0)
    whole = path.read_bytes()
    torn = _episode_lines(tmp_path, [5])
    with path.open("ab") as f:  # what the other process left when it was killed
        f.write(torn[: len(torn) // 2])
    run(survivor, ["forward"] * 3, seed=1)
    data = path.read_bytes()
    assert data.startswith(whole) and data.endswith(b"\n")
    records = [json.loads(line) for line in data.splitlines()]  # whole lines only
    episodes = [r for r in records if r["record"] == "episode"]
    assert [e["seed"] for e in episodes] == [0, 1] and records[-1] == episodes[-1]
    assert len(records) == sum(e["turns_used"] + 1 for e in episodes)


@pytest.mark.parametrize("err", ["ENOSPC", "EIO"])
@pytest.mark.parametrize("short", [False, True], ids=["write-fails", "short-then-fails"])
def test_a_failed_append_names_the_file_and_the_next_writer_keeps_every_whole_episode(
    tmp_path, monkeypatch, err, short
):
    """A write or fsync that fails (a full disk) raised an OSError that named no file;
    it names the records file now, and what it left torn the next writer cuts: every
    episode delivered before stays whole and readable."""
    import errno

    path = tmp_path / "r.jsonl"
    env = RecordStepOutcomes(stub(length=3), path=path, fsync=True)
    run(env, ["forward"] * 3, seed=0)
    whole = path.read_bytes()
    real_write, calls = os.write, []

    def failing_write(fd, data):
        calls.append(fd)
        if short and len(calls) == 1:  # the kernel takes part of it, then the disk is full
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(getattr(errno, err), os.strerror(getattr(errno, err)))

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(OSError) as info:
        run(env, ["forward"] * 3, seed=1)
    monkeypatch.undo()
    assert info.value.errno == getattr(errno, err) and info.value.filename == str(path)
    assert path.read_bytes().startswith(whole)
    RecordSink(path)  # the next writer
    assert path.read_bytes() == whole

    def failing_fsync(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match=r"Input/output error: '.*r\.jsonl'$"):
        RecordSink(path).deliver([{"record": "episode", "episode_id": "x"}])


def test_records_to_dev_null_play_and_a_fifo_is_refused_when_built(tmp_path):
    """``path=os.devnull`` (records thrown away) was accepted, then the first episode's end
    failed inside the sink: fsync of a device, "[Errno 22] Invalid argument: '/dev/null'";
    a FIFO likewise, and with no reader its appends block once the pipe's buffer fills."""
    env = RecordStepOutcomes(stub(), path=os.devnull)
    run(env, ["forward"] * 10)
    run(env, ["forward"] * 10, seed=1)
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"Cannot append records to .*: it is a FIFO"):
        RecordStepOutcomes(stub(), path=fifo)


def test_a_folder_name_too_long_is_a_value_error(tmp_path):
    """``path.parent.is_dir()`` raised the OS's "File name too long" (an OSError) where a file
    name too long was a ValueError."""
    with pytest.raises(ValueError, match="Cannot append records to"):
        RecordSink(tmp_path / ("x" * 300) / "r.jsonl")


def _lock_waiters(path: Path) -> int:
    """Processes (threads) waiting for a lock on ``path`` (Linux's /proc/locks)."""
    inode = f":{path.stat().st_ino} "
    return sum(
        "->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines()
    )


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_an_append_waits_for_a_writer_still_writing(tmp_path):
    """A writer in the middle of its episode holds the file: the next append waits for
    it instead of taking its unfinished line for a dead writer's torn one."""
    import fcntl
    import threading

    path = tmp_path / "shared.jsonl"
    sink = RecordSink(path, fsync=False)
    other = _episode_lines(tmp_path, [5])
    mine = json.loads(_episode_lines(tmp_path, [6]).splitlines()[-1])
    with path.open("ab") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # the other writer, halfway through
        f.write(other[: len(other) // 2])
        f.flush()
        appender = threading.Thread(target=sink.deliver, args=([mine],))
        appender.start()
        deadline = time.monotonic() + 60  # (a failure guard: the wait ends on an event)
        while not _lock_waiters(path) and appender.is_alive() and time.monotonic() < deadline:
            time.sleep(0.001)
        assert appender.is_alive(), "the append did not wait for the writer holding the file"
        f.write(other[len(other) // 2 :])
        f.flush()
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    appender.join()
    assert path.read_bytes() == other + (json.dumps(mine, separators=(",", ":")) + "\n").encode()


def test_long_commands_are_capped_in_the_records(tmp_path):
    """A 2 MB command is a spent turn; its record keeps `MAX_RECORD_TEXT` characters:
    its start and end around its full length and a hash to match it by."""
    import hashlib

    from turnbudget.records import MAX_RECORD_TEXT

    command = "forward " + "x" * 2_000_000
    path = tmp_path / "r.jsonl"
    env = RecordStepOutcomes(stub(length=2), path=path, memory=True)
    records = run(env, [command] + ["forward"] * 2)
    step = records[0]
    digest = hashlib.sha256(command.encode()).hexdigest()[:16]
    assert step["valid_action"] is False and len(step["action"]) == MAX_RECORD_TEXT
    assert step["action"].startswith("forward xxx") and step["action"].endswith("xxx")
    assert f" [... {len(command)} characters in all, sha256 {digest} ...] " in step["action"]
    assert records[-1]["success"] and path.stat().st_size < 3 * MAX_RECORD_TEXT


def test_a_tracker_sets_every_attribute_it_will_hold_when_it_is_made():
    """Set first at an episode's start, the per-episode attributes would not fit CPython's fast
    layout once a vector env's trackers exist (see `MAX_FAST_ATTRIBUTES`): all are set when
    a tracker is made, and no episode is then in progress."""
    from turnbudget.envs.native.base import MAX_FAST_ATTRIBUTES
    from turnbudget.wrappers.record_step_outcomes import EpisodeTracker

    tracker = EpisodeTracker("turnbudget/Maze-Easy-v0", 3, budget_counts=[0, 2, 8])
    made = set(vars(tracker))
    assert not tracker.in_progress
    tracker.start(7, "episode", 0, 8, 4)
    info = {"turn_budget": 8, "injected_error": None, "won": False}
    for turn in range(3):
        tracker.step("go north", ["go north"], 3 - turn, 0.0, False, turn == 2, info)
    records = tracker.finish()
    assert set(vars(tracker)) <= made, sorted(set(vars(tracker)) - made)
    assert len(made) <= MAX_FAST_ATTRIBUTES
    assert [r["record"] for r in records] == ["step"] * 3 + ["episode"]
    assert records[-1]["episode_id"] == "episode" and records[-1]["budget_counts"]["2"][0] == 2
