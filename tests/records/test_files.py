"""Reading run logs: hand-edited logs through ``turnbudget report``, and resume that never
deletes what it cannot account for.

Every case starts from a real small run written by `evaluate` and breaks one thing. The
report must then either stop with exit code 2 and one line that names the file, the line
and the problem (never a traceback), or, for the documented acceptances, build the report.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import turnbudget
from turnbudget.agents import OracleAgent
from turnbudget.cli import main
from turnbudget.eval.run.evaluate import evaluate, load_run
from turnbudget.eval.run.plan import record_plan
from turnbudget.records import EPISODES_FILE, RUN_FILE, STEPS_FILE, LogError, files

MAZE = "turnbudget/Maze-Easy-v0"
RUN = dict(ks=[1, 2], ts=[5, 10], n=2, tasks=2, mode="both", errors=0.2, n_bootstrap=10)
REPO = Path(turnbudget.__file__).resolve().parents[1]  # the package under test


class NotingOracle(OracleAgent):
    """The oracle with an LLM agent's kind of step note (a reply, tokens, a flag, latency)."""

    name = "noting"

    def act(self, observation: str, info: Any) -> str:
        self._command = super().act(observation, info)
        return self._command

    def step_note(self) -> dict[str, Any]:
        reply = f"I will {self._command}"
        return {"reply": reply, "tokens_in": 12, "admissible": True, "latency_s": 0.25}


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """A finished run (both modes, injected errors, agent notes) and its summary."""
    out = tmp_path_factory.mktemp("base") / "run"
    result = evaluate(MAZE, NotingOracle(0.3), out=out, **RUN)
    outcomes = {e["success"] for e in result.episodes}
    assert outcomes == {True, False} and all("agent" in e for e in result.episodes)
    return out, json.loads(json.dumps(result.summary))


# -- edits: each changes a copy of the run and returns (file, line) it broke, or None ----

DELETE = object()  # a field to remove


@dataclass(frozen=True)
class Raw:
    """A value written as this JSON text (``1e400``, ``NaN``, a 400-digit int)."""

    text: str


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _pick(lines: list[bytes], which: int | str) -> int:
    """A line index: a number, or the first episode that is a "success" / "failure"."""
    if isinstance(which, int):
        return which
    return next(
        i for i, line in enumerate(lines) if json.loads(line)["success"] == (which == "success")
    )


def _dump(record: dict[str, Any]) -> bytes:
    raws = {f"@raw{i}@": v.text for i, v in enumerate(record.values()) if isinstance(v, Raw)}
    keys = iter(raws)
    text = json.dumps({k: next(keys) if isinstance(v, Raw) else v for k, v in record.items()})
    for marker, raw in raws.items():
        text = text.replace(json.dumps(marker), raw)
    return text.encode() + b"\n"


def _change(record: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for key, value in changes.items():
        if value is DELETE:
            record.pop(key, None)
        else:
            record[key] = value
    return record


def episode(which: int | str = 2, **changes: Any) -> Callable[[Path], tuple[str, int]]:
    def edit(run: Path) -> tuple[str, int]:
        path = run / EPISODES_FILE
        lines = _lines(path)
        i = _pick(lines, which)
        lines[i] = _dump(_change(json.loads(lines[i]), changes))
        path.write_bytes(b"".join(lines))
        return EPISODES_FILE, i + 1

    return edit


def line(
    text: bytes, file: str = EPISODES_FILE, index: int = 2
) -> Callable[[Path], tuple[str, int]]:
    def edit(run: Path) -> tuple[str, int]:
        path = run / file
        lines = _lines(path)
        lines[index] = text + b"\n"
        path.write_bytes(b"".join(lines))
        return file, index + 1

    return edit


def duplicate(index: int = 2, **changes: Any) -> Callable[[Path], tuple[str, int] | None]:
    """Log episode ``index`` again at the end (changed by ``changes``)."""

    def edit(run: Path) -> tuple[str, int] | None:
        path = run / EPISODES_FILE
        lines = _lines(path)
        lines.append(_dump(_change(json.loads(lines[index]), changes)))
        path.write_bytes(b"".join(lines))
        return (EPISODES_FILE, len(lines)) if changes else None

    return edit


def run_json(text: str | None = None, **changes: Any) -> Callable[[Path], tuple[str, None]]:
    def edit(run: Path) -> tuple[str, None]:
        path = run / RUN_FILE
        if text is None:
            path.write_text(json.dumps(_change(json.loads(path.read_text()), changes), indent=2))
        else:
            path.write_text(text)
        return RUN_FILE, None

    return edit


def without_budget_counts(then: Callable[[Path], Any] | None = None) -> Callable[[Path], Any]:
    """Episode records as older logs wrote them (no ``budget_counts``: the report then reads
    the steps), and then ``then``."""

    def edit(run: Path) -> Any:
        path = run / EPISODES_FILE
        lines = [_dump(_change(json.loads(x), {"budget_counts": DELETE})) for x in _lines(path)]
        path.write_bytes(b"".join(lines))
        return then(run) if then else None

    return edit


def without_feasibility(run: Path) -> None:
    """Episode records as logs written before issue 21 were: no ``feasible``, ``step_regret``."""
    path = run / EPISODES_FILE
    drop = {"feasible": DELETE, "step_regret": DELETE}
    path.write_bytes(b"".join(_dump(_change(json.loads(x), drop)) for x in _lines(path)))


def drop_step(run: Path) -> tuple[str, None]:
    path = run / STEPS_FILE
    lines = _lines(path)
    del lines[3]
    path.write_bytes(b"".join(lines))
    return STEPS_FILE, None


def steps_recovering_unopened_errors(run: Path) -> tuple[str, None]:
    """Every step valid alone, their sums not: 20 recoveries of 1 error a turn (the report
    showed a recovery rate of 20 and a negative count of unrecovered errors)."""
    path = run / STEPS_FILE
    steps = [
        _change(json.loads(x), {"errors_opened": 1, "recoveries": [1] * 20}) for x in _lines(path)
    ]
    path.write_bytes(b"".join(_dump(s) for s in steps))
    return STEPS_FILE, None


def drop_episode(run: Path) -> None:
    path = run / EPISODES_FILE
    path.write_bytes(b"".join(_lines(path)[:-1]))


def tear_last_episode(run: Path) -> None:
    path = run / EPISODES_FILE
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])


def failed_to_run(run: Path) -> None:
    """Episode 2 as an episode that failed to run (what the retry loop logs)."""
    path = run / EPISODES_FILE
    lines = _lines(path)
    e = json.loads(lines[2])
    keep = ("record", "episode_id", "env_id", "seed", "rep", "turn_budget", "agent_seed")
    failed = {k: e[k] for k in keep}
    failed.update(failed_to_run=True, failure="exception", error="RuntimeError: boom", attempts=3)
    lines[2] = _dump(failed)
    path.write_bytes(b"".join(lines))


@dataclass(frozen=True)
class Case:
    id: str
    edit: Callable[[Path], Any]
    expect: str | None  # a part of the one-line error; None: the report is built
    located: bool = True  # the error names the file (and line) the edit broke


COUNT = "an int from 0 to 2147483647"
CASES = [
    # Lines that are not one JSON object.
    Case("not-json", line(b'{"record": "episode", "episode_id": '), "not JSON (Expecting value"),
    Case("blank-line", line(b""), "Expect a JSON object, got an empty line"),
    Case("array", line(b"[1, 2]"), "Expect a JSON object, got an array: [1, 2]"),
    Case("string", line(b'"episode"'), "Expect a JSON object, got a string"),
    Case("null", line(b"null"), "Expect a JSON object, got null"),
    Case("number", line(b"42"), "Expect a JSON object, got a number: 42"),
    Case("bad-utf8", line(b'{"episode_id": "\xff\xfe"}'), "not JSON ('utf-8' codec can't decode"),
    Case("deep-nesting", line(b"[" * 100_000 + b"]" * 100_000), "not JSON we can read (nested too deeply)"),
    # (Python's own words, which 3.10 spells "the limit (4300) for", 3.11 "(4300 digits)")
    Case("5000-digit-int", line(b'{"seed": 1' + b"0" * 5000 + b"}"), "not JSON (Exceeds the limit (4300"),
    # Records that are not episodes of this run.
    Case("no-episode-id", episode(episode_id=DELETE), "Expect `episode_id` to be a string, got None"),
    Case("int-episode-id", episode(episode_id=7), "Expect `episode_id` to be a string, got 7"),
    Case("unknown-episode-id", episode(episode_id=f"{MAZE}|seed=9|rep=0|T=5"), f"`turn_budget` ('{MAZE}|seed=0|rep=1|T=5'), got '{MAZE}|seed=9|rep=0|T=5'"),
    Case("a-step-record", episode(record="step"), 'Expect an episode record ("record": "episode"), got \'step\''),
    Case("no-record-kind", episode(record=DELETE), "Expect an episode record"),
    Case("seed-differs-from-id", episode(seed=1), f"Expect `episode_id` to agree with `env_id`, `seed`, `rep` and `turn_budget` ('{MAZE}|seed=1|rep=1|T=5'), got '{MAZE}|seed=0|rep=1|T=5'"),
    Case("seed-not-a-task", episode(seed=7), "Expect `seed` to be one of the run's task seeds, got 7"),
    Case("seed-as-string", episode(seed="0"), "Expect `seed` to be one of the run's task seeds, got '0'"),
    Case("seed-as-float", episode(seed=0.0), "Expect `seed` to be one of the run's task seeds, got 0.0"),
    Case("budget-not-played", episode(turn_budget=7), "Expect `turn_budget` to be a budget the run plays ([5, 10]), got 7"),
    Case("no-env-id", episode(env_id=DELETE), f"Expect `env_id` to be one of the run's envs ['{MAZE}'], but it is missing"),
    Case("env-id-a-list", episode(env_id=[MAZE]), "Expect `env_id` to be one of the run's envs"),
    Case("rep-out-of-range", episode(rep=2), "Expect `rep` to be an int from 0 to 1, got 2"),
    Case("no-rep", episode(rep=DELETE), "Expect `rep` to be an int from 0 to 1, but it is missing"),
    # The outcome.
    Case("no-success", episode(success=DELETE), "Expect `success` to be true or false, but it is missing"),
    Case("success-1", episode(success=1), "Expect `success` to be true or false, got 1"),
    Case("success-yes", episode(success="yes"), "Expect `success` to be true or false, got 'yes'"),
    Case("no-turns-used", episode(turns_used=DELETE), f"Expect `turns_used` to be {COUNT}, but it is missing"),
    Case("negative-turns-used", episode(turns_used=-1), f"Expect `turns_used` to be {COUNT}, got -1"),
    Case("float-turns-used", episode(turns_used=3.0), f"Expect `turns_used` to be {COUNT}, got 3.0"),
    Case("turns-used-over-budget", episode("failure", turns_used=99), "Expect `turns_used` to be from 1 to the turn budget"),
    Case("zero-turns-used", episode("failure", turns_used=0), "Expect `turns_used` to be from 1 to the turn budget"),
    Case("inf-turns-used", episode(turns_used=Raw("1e400")), f"Expect `turns_used` to be {COUNT}, got inf"),
    Case("infinity-turns-used", episode(turns_used=Raw("-Infinity")), "got -inf"),
    Case("nan-turns-used", episode(turns_used=Raw("NaN")), f"Expect `turns_used` to be {COUNT}, got nan"),
    Case("10^400-turns-used", episode(turns_used=Raw("1" + "0" * 400)), f"Expect `turns_used` to be {COUNT}, got 1000000"),
    Case("negative-first-success", episode("success", first_success_turn=-2), "Expect `first_success_turn` to be null or an int from 0 to 2147483647, got -2"),
    Case("first-success-over-budget", episode("success", first_success_turn=11), "Expect `first_success_turn` of a successful episode to be from 1 to `turns_used`"),
    Case("first-success-zero", episode("success", first_success_turn=0), "Expect `first_success_turn` of a successful episode"),
    Case("success-without-turn", episode("failure", success=True), "Expect `first_success_turn` of a successful episode to be from 1 to `turns_used` (5), got None"),
    Case("failure-with-a-turn", episode("failure", first_success_turn=2), "Expect `first_success_turn` of a failed episode to be null, got 2"),
    # The counts and rates behind the analysis.
    Case("rate-above-1", episode(optimal_step_rate=1.5), "Expect `optimal_step_rate` to be null or a number from 0 to 1, got 1.5"),
    Case("rate-infinity", episode(optimal_step_rate=Raw("Infinity")), "got inf"),
    Case("negative-count", episode(n_wasted=-1), f"Expect `n_wasted` to be {COUNT}, got -1"),
    Case("huge-count", episode(n_errors_self=2**40), f"Expect `n_errors_self` to be {COUNT}"),
    Case("judged-without-hits", episode(n_optimal_steps=DELETE), f"Expect `n_optimal_steps` to be {COUNT}, but it is missing"),
    Case("more-hits-than-judged", episode("failure", n_optimal_steps=6), "Expect `n_optimal_steps` (6) to be at most `n_steps_judged` (5)"),
    # (a count of turns past the turns played: the report showed 14 self-errors a turn)
    Case("wasted-past-turns", episode("failure", n_wasted=5000), "Expect `n_wasted` (5000) to be at most `turns_used` (5)"),
    Case("self-errors-past-turns", episode("failure", n_errors_self=6), "Expect `n_errors_self` (6) to be at most `turns_used` (5)"),
    Case("invalid-past-turns", episode("failure", n_invalid=6), "Expect `n_invalid` (6) to be at most `turns_used` (5)"),
    Case("after-error-past-turns", episode("failure", n_steps_after_error=6), "Expect `n_steps_after_error` (6) to be at most `turns_used` (5)"),
    Case("turns-to-recover-not-a-list", episode(turns_to_recover="x"), "Expect `turns_to_recover` to be a list of such ints, got 'x'"),
    Case("turns-to-recover-negative", episode(turns_to_recover=[-1]), "Expect `turns_to_recover` to be a list"),
    Case("budget-counts-missing-a-budget", episode(budget_counts={"5": [0] * 15}), "Expect `budget_counts` to map each budget ['10', '5'] to 15 ints"),
    Case("budget-counts-null", episode(budget_counts=None), "Expect `budget_counts` to map each budget"),
    Case("budget-counts-short", episode(budget_counts={"5": [0], "10": [0]}), "Expect `budget_counts` to map each budget"),
    # (a part past its whole: the report showed an optimal-step rate of 200 and a recovery rate of 6000)
    Case("budget-counts-optimal-past-judged", episode(budget_counts={"5": [5, 1, 2] + [0] * 12, "10": [5, 1, 1] + [0] * 12}), "to count optimal (2) at most judged (1)"),
    Case("budget-counts-recovered-unopened", episode(budget_counts={"5": [5] + [0] * 12 + [3, 0], "10": [5] + [0] * 14}), "to count recovered (3) at most errors_opened (0)"),
    Case("budget-counts-turns-past-t", episode(budget_counts={"5": [6] + [0] * 14, "10": [6] + [0] * 14}), "to count at most 5 turns"),
    Case("agent-usage-string", episode(agent={"steps": 5, "tokens_in": "many"}), "Expect `agent` to be an object of finite numbers"),
    Case("agent-usage-10^400", episode(agent=Raw('{"steps": 1' + "0" * 400 + "}")), "Expect `agent` to be an object of finite numbers"),
    Case("failed-to-run-yes", episode(failed_to_run="yes"), "Expect `failed_to_run` to be true or false, got 'yes'"),
    # (a kind with terminal escapes and a | reached report.md's table as it was)
    Case("failure-kind-escapes", episode(failed_to_run=True, failure="\x1b]0;PWNED\x07|x", error="x"), "Expect `failure` to be a kind of failure"),
    # (counts of other turns than the episode's: the per-budget tables read them)
    Case("budget-counts-turns-not-the-episode-s", episode(budget_counts={"5": [0] * 15, "10": [0] * 15}), "turns, the episode's turns within"),
    Case("feasible-yes", episode(feasible="yes"), "Expect `feasible` to be true, false or null, got 'yes'"),
    Case("step-regret-float", episode("success", step_regret=1.5), "Expect `step_regret` to be null or an int from -2147483647 to 2147483647, got 1.5"),
    Case("older-logs-without-feasibility", without_feasibility, None),  # before issue 21: read
    # The same episode twice.
    Case("conflicting-duplicate", duplicate(success=True, first_success_turn=1), "is logged again with different content (first at line 3); which one holds?"),
    Case("identical-duplicate", duplicate(), None),  # kept once
    # Missing episodes: the run is incomplete.
    Case("missing-episode", drop_episode, "has 7 episode records, expected 8: it is incomplete"),
    Case("torn-last-line", tear_last_episode, "has 7 episode records, expected 8: it is incomplete"),
    # run.json.
    Case("run-json-not-json", run_json('{"label": "x",\n "envs": [}'), "run.json: not JSON (Expecting value at line 2 column 11)"),
    Case("run-json-array", run_json("[]"), "run.json: Expect a JSON object, got an array: []"),
    Case("run-json-no-ts", run_json(ts=DELETE), "run.json: Expect the fields ['ts'] too: they are missing"),
    Case("run-json-zero-budget", run_json(ts=[0, 5]), "run.json: Expect `ts` to hold positive ints, got 0"),
    Case("run-json-ts-not-a-list", run_json(ts=5), "run.json: Expect `ts` to be a list, got 5"),
    Case("run-json-unknown-field", run_json(colour="red"), "got unknown ones: ['colour']"),
    Case("run-json-mode", run_json(mode="fast"), "run.json: Expect `mode` to be one of ('truncate', 'rerun', 'both'), got 'fast'"),
    Case("run-json-n-below-k", run_json(n=1), "run.json: Expect `n` to be an int >= max(ks) = 2, got 1"),
    # (another seed's episodes were kept as this run's on resume and in the report)
    Case("run-json-other-seed", run_json(seed=5), "Expect `agent_seed` to be", located=False),
    Case("run-json-other-env", run_json(envs=["turnbudget/KeyQuest-Easy-v0"]), "episodes.jsonl, line 1: Expect `env_id` to be one of the run's envs ['turnbudget/KeyQuest-Easy-v0'], got 'turnbudget/Maze-Easy-v0'", located=False),
    Case("run-json-billions-planned", run_json(n=10**12, tasks=list(range(1000))), "has 8 episode records, expected 2000000000000000: it is incomplete", located=False),
    Case("run-json-label-number", run_json(label=5), "run.json: Expect `label` to be a non-empty string, got 5"),
    # steps.jsonl, read only for episode records without `budget_counts` (older logs).
    Case("old-logs", without_budget_counts(), None),
    Case("old-logs-step-not-json", without_budget_counts(line(b"{", STEPS_FILE, 4)), "not JSON"),
    Case("old-logs-step-array", without_budget_counts(line(b"[]", STEPS_FILE, 4)), "Expect a JSON object, got an array"),
    Case("old-logs-step-turn-string", without_budget_counts(line(b'{"record": "step", "episode_id": "x", "turn": "1"}', STEPS_FILE, 4)), f"Expect `turn` to be {COUNT}, got '1'"),
    Case("old-logs-step-turn-0", without_budget_counts(line(b'{"record": "step", "episode_id": "x", "turn": 0}', STEPS_FILE, 4)), "Expect `turn` to be at least 1"),
    Case("old-logs-step-optimal-string", without_budget_counts(line(b'{"record": "step", "episode_id": "x", "turn": 1, "optimal": "yes"}', STEPS_FILE, 4)), "Expect `optimal` to be true, false or null"),
    Case("old-logs-missing-step", without_budget_counts(drop_step), "expect turns 1 to"),
    Case("old-logs-steps-sum-past-whole", without_budget_counts(steps_recovering_unopened_errors), "give counts that cannot be: Expect `budget_counts["),
    # Documented acceptances.
    Case("unknown-field", episode(note="hand-written", extra=Raw("NaN")), None),  # unread: left alone
    Case("failed-to-run-record", failed_to_run, None),  # counted apart, not the agent's failure
    Case("corrupt-steps-unread", line(b"{", STEPS_FILE, 4), None),  # records carry budget_counts
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_report_on_a_hand_edited_log(case, base_run, tmp_path, capsys):
    base, clean = base_run
    run = tmp_path / "run"
    shutil.copytree(base, run)
    where = case.edit(run)
    code = main(["report", str(run), "--no-plots"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if case.expect is None:
        assert code == 0, err
        (summary,) = json.loads((run / "summary.json").read_text())["runs"].values()
        if case.id in ("identical-duplicate", "old-logs", "unknown-field", "corrupt-steps-unread",
                       "older-logs-without-feasibility"):  # fmt: skip
            assert summary == clean
        if case.id == "failed-to-run-record":
            assert summary["failed_to_run"]["episodes"] == 1
        return
    assert code == 2, out
    assert err.startswith("turnbudget report: error: ") and err.count("\n") == 1, err
    assert case.expect in err, err
    if where is not None and case.located:
        file, number = where
        assert f"{run / file}" + (f", line {number}:" if number else ":") in err, err


def test_report_subprocess_exits_2_with_one_line(base_run, tmp_path):
    """The same through the ``turnbudget`` process: exit code 2, one line, no traceback."""
    run = tmp_path / "run"
    shutil.copytree(base_run[0], run)
    line(b"[" * 100_000 + b"]" * 100_000)(run)
    proc = subprocess.run(
        [sys.executable, "-m", "turnbudget", "report", str(run), "--no-plots"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"turnbudget report: error: {run / EPISODES_FILE}, line 3: not JSON we can read "
        "(nested too deeply)\n"
    )


# -- resume ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """A finished run that ``turnbudget eval`` can resume too (a registered agent)."""
    out = tmp_path_factory.mktemp("oracle") / "run"
    result = evaluate(MAZE, OracleAgent(0.3), out=out, **RUN)
    return out, json.loads(json.dumps(result.summary))


def _resume(out: Path) -> Any:
    return evaluate(MAZE, OracleAgent(0.3), out=out, **RUN)


EVAL = [
    "eval", "--env", MAZE, "--agent", "oracle:0.3", "--k", "1,2", "--t", "5,10", "--n", "2",
    "--tasks", "2", "--mode", "both", "--errors", "0.2", "--quiet", "--no-plots",
]  # fmt: skip


BREAKS = [
    ("steps-middle-not-json", line(b'{"record":"step","episode_id":"turnbudget/Ma', STEPS_FILE, 20), "not JSON"),
    ("steps-middle-array", line(b"[]", STEPS_FILE, 20), "Expect a JSON object"),
    ("steps-middle-no-turn", line(b'{"record":"step","episode_id":"x"}', STEPS_FILE, 20), "Expect `turn`"),
    ("steps-of-another-run", line(b'{"record":"step","episode_id":"x","turn":1}', STEPS_FILE, 20), "Expect `episode_id` to be one of the run's episodes (run.json), got 'x'"),
    ("steps-of-a-huge-seed", line(b'{"record":"step","episode_id":"x|seed=' + b"9" * 5000 + b'|rep=0|T=5","turn":1}', STEPS_FILE, 20), "Expect `episode_id` to be one of the run's episodes"),
    ("episodes-middle-not-json", line(b"{"), "not JSON"),
    ("episodes-middle-number", line(b"7"), "Expect a JSON object, got a number"),
    ("episode-of-another-run", episode(episode_id="x"), "Expect `episode_id` to agree with"),
    ("episode-without-success", episode(success=DELETE), "Expect `success`"),
    ("conflicting-duplicate", duplicate(success=True, first_success_turn=1), "logged again with different content"),
]  # fmt: skip


@pytest.mark.parametrize("edit,expect", [b[1:] for b in BREAKS], ids=[b[0] for b in BREAKS])
def test_resume_refuses_what_it_cannot_account_for_and_deletes_nothing(
    edit, expect, oracle_run, tmp_path, capsys
):
    """A corrupt line anywhere but a torn tail: a refusal naming the file and line, and
    both logs left byte for byte as they were (the issue: 1,858 step records cut to 618)."""
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    file, number = edit(run) or (EPISODES_FILE, len(_lines(run / EPISODES_FILE)))
    before = {name: (run / name).read_bytes() for name in (EPISODES_FILE, STEPS_FILE)}
    with pytest.raises(LogError, match="Cannot resume") as info:
        _resume(run)
    assert f"{run / file}, line {number}: " in str(info.value) and expect in str(info.value)
    assert "--overwrite" in str(info.value)
    assert {name: (run / name).read_bytes() for name in before} == before
    # The command line: exit code 2 and the same one line.
    code = main([*EVAL, "--out", str(run)])
    err = capsys.readouterr().err
    assert code == 2 and err == f"turnbudget eval: error: {info.value}\n"
    assert {name: (run / name).read_bytes() for name in before} == before


def test_resume_drops_identical_copies_and_torn_tails_only(oracle_run, tmp_path):
    """What resume can account for goes; every whole step of a complete episode stays."""
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    steps = (run / STEPS_FILE).read_bytes()
    duplicate()(run)
    with (run / STEPS_FILE).open("ab") as f:
        f.write(_lines(run / STEPS_FILE)[5] + b'{"record":"step","epis')  # a copy, then torn
    resumed = _resume(run)
    assert resumed.n_run == 0 and resumed.summary == oracle_run[1]
    assert (run / STEPS_FILE).read_bytes() == steps
    assert len(_lines(run / EPISODES_FILE)) == 8


def _step_copy(index: int, **changes: Any) -> Callable[[Path], tuple[str, int]]:
    """Log step line ``index`` again at the end, changed by ``changes``."""

    def edit(run: Path) -> tuple[str, int]:
        path = run / STEPS_FILE
        lines = _lines(path)
        lines.append(_dump(_change(json.loads(lines[index]), changes)))
        path.write_bytes(b"".join(lines))
        return STEPS_FILE, len(lines)

    return edit


@pytest.mark.parametrize(
    "changes,expect",
    [
        ({"command": "dance"}, "step {turn} of episode {episode!r} is logged again with different "
                               "content (first at line 6)"),
        ({"turn": 99}, "holds step records for {count} of its turns (the last 99)"),
        ({"turn": 2**31 - 1}, "holds step records for {count} of its turns (the last 2147483647)"),
    ],
    ids=["changed", "a turn past every budget", "a huge turn"],
)  # fmt: skip
def test_resume_refuses_a_step_logged_again_or_past_its_episode(
    changes, expect, oracle_run, tmp_path
):
    """A complete episode's step logged again with other content names the first copy's
    line (found again rather than held for every step); a step past the episode's turns
    (a turn no budget reaches, however large) is refused as a step it cannot account for."""
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    step = json.loads(_lines(run / STEPS_FILE)[5])
    episode = step["episode_id"]
    count = 1 + sum(json.loads(ln)["episode_id"] == episode for ln in _lines(run / STEPS_FILE))
    file, number = _step_copy(5, **changes)(run)
    before = {name: (run / name).read_bytes() for name in (EPISODES_FILE, STEPS_FILE)}
    with pytest.raises(LogError, match="Cannot resume") as info:
        _resume(run)
    assert expect.format(turn=step["turn"], episode=episode, count=count) in str(info.value)
    if "turn" not in changes:
        assert f"{run / file}, line {number}: " in str(info.value)
    assert {name: (run / name).read_bytes() for name in before} == before


def test_resume_holds_a_few_bytes_a_step_not_the_records(tmp_path):
    """Resume held every episode record and a (episode, turn) key per step: a resume of
    8,000 episodes peaked at 149 MiB where the run itself took 54. What it holds now is
    a hash per step and a few numbers per episode: 51 bytes a line of this run, where it
    was 485 (traced allocations, not timing)."""
    import tracemalloc

    run = tmp_path / "run"
    settings = dict(ks=[1], ts=[8, 16, 32], n=1, tasks=40, mode="rerun", n_bootstrap=10)
    evaluate(MAZE, turnbudget.agents.RandomAgent(), out=run, **settings)
    plan = record_plan(load_run(run)[0])
    logged = sum(len(_lines(run / name)) for name in (EPISODES_FILE, STEPS_FILE))
    tracemalloc.start()
    try:
        done = files.repair_logs(run, plan)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(done) == 120
    assert peak < 128 * logged, f"{peak} bytes traced for {logged} lines"  # (was 485 a line)


@pytest.mark.parametrize("stripped", [[STEPS_FILE], [EPISODES_FILE], [STEPS_FILE, EPISODES_FILE]])
def test_a_last_line_whose_newline_an_editor_stripped_is_kept(stripped, oracle_run, tmp_path):
    """A whole last record without its newline is no torn write: read, it is a record, and
    resume adds the newline. The last step line was dropped as torn, and resume refused
    the complete episode it belongs to ("its steps were lost"); a report left it out."""
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    logged = {name: (run / name).read_bytes() for name in (STEPS_FILE, EPISODES_FILE)}
    last = json.loads(_lines(run / EPISODES_FILE)[-1])["episode_id"]
    # The last episode goes (to be run again), and an editor strips the final newlines.
    for name in (STEPS_FILE, EPISODES_FILE):
        kept = [ln for ln in _lines(run / name) if json.loads(ln)["episode_id"] != last]
        text = b"".join(kept)
        (run / name).write_bytes(text.rstrip(b"\n") if name in stripped else text)
    assert files.read_jsonl(run / stripped[0])[2] is False  # (read whole, not torn)
    resumed = _resume(run)
    assert resumed.n_run == 1 and resumed.summary == oracle_run[1]
    assert {name: (run / name).read_bytes() for name in logged} == logged


def _cut_last_step(run: Path) -> None:
    path = run / STEPS_FILE
    path.write_bytes(path.read_bytes()[:-40])  # (its newline too: a torn last line)


def _drop_a_step(run: Path) -> None:
    lines = _lines(run / STEPS_FILE)
    (run / STEPS_FILE).write_bytes(b"".join(lines[:3] + lines[4:]))


STEPS_LOST = {
    "last-step-cut": _cut_last_step,
    "a-step-removed": _drop_a_step,
    "step-log-removed": lambda run: (run / STEPS_FILE).unlink(),
    "step-log-emptied": lambda run: (run / STEPS_FILE).write_bytes(b""),
}


@pytest.mark.parametrize("edit", list(STEPS_LOST.values()), ids=list(STEPS_LOST))
def test_resume_refuses_a_complete_episode_whose_steps_were_lost(edit, oracle_run, tmp_path):
    """A kill never leaves a complete episode without its steps (they are written before its
    episode line), but a step line cut or removed later did: resume kept the episode, ran
    nothing for it, and ended with a step log short of an uninterrupted run's, silently."""
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    edit(run)
    before = {name: (run / name).read_bytes() for name in (EPISODES_FILE, STEPS_FILE)
              if (run / name).exists()}  # fmt: skip
    with pytest.raises(LogError, match="Cannot resume") as info:
        _resume(run)
    assert f"{run / EPISODES_FILE}, line " in str(info.value)
    assert "is logged complete, but" in str(info.value) and "expect turns 1 to" in str(info.value)
    assert {name: (run / name).read_bytes() for name in before} == before
    assert (run / STEPS_FILE).exists() == (STEPS_FILE in before)


def test_resume_of_a_run_without_step_records_needs_none(tmp_path):
    """Only a run that records steps expects them of its complete episodes."""
    kwargs = {**RUN, "record_steps": False}
    first = evaluate(MAZE, OracleAgent(0.3), out=tmp_path / "run", **kwargs)
    again = evaluate(MAZE, OracleAgent(0.3), out=tmp_path / "run", **kwargs)
    assert again.n_run == 0 and again.summary == first.summary


@pytest.mark.parametrize("kind", ["dangling-link", "loop"])
def test_resume_refuses_an_episode_log_that_is_a_broken_link_and_keeps_the_steps(
    kind, oracle_run, tmp_path
):
    """An ``episodes.jsonl`` that was a link to nothing (or round a loop) read as no log:
    resume took every step for one of an unfinished episode and emptied ``steps.jsonl``,
    then failed to open the episode log."""
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    log = run / EPISODES_FILE
    log.unlink()
    log.symlink_to(log if kind == "loop" else tmp_path / "gone" / "episodes.jsonl")
    steps = (run / STEPS_FILE).read_bytes()
    with pytest.raises(LogError, match="Cannot resume") as info:
        _resume(run)
    assert f"{log}: a link to nothing" in str(info.value)
    # (it names no line: "fix or remove that line" sent the reader looking for one)
    assert "fix or remove what it names" in str(info.value)
    assert (run / STEPS_FILE).read_bytes() == steps


def test_resume_of_a_bad_line_says_to_fix_that_line(oracle_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    with (run / EPISODES_FILE).open("a") as f:
        f.write("not json\n")
    with pytest.raises(LogError, match=r", line \d+: .*fix or remove that line"):
        _resume(run)


class _FullDisk:
    """A log opened to append (by `LogWriter`) whose ``fail_at``-th write, counted over both
    logs, writes the first half of its text and then fails as a full disk does; its close
    then fails again, as Python's does for the bytes it could not write."""

    def __init__(self, f: Any, state: dict[str, int]):
        self._f, self._state, self._stuck = f, state, False

    def write(self, text: str) -> int:
        self._state["writes"] += 1
        if self._state["writes"] == self._state["fail_at"]:
            self._f.write(text[: len(text) // 2])
            self._f.flush()
            self._stuck = True
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._f.write(text)

    def flush(self) -> None:
        self._f.flush()

    def fileno(self) -> int:
        return self._f.fileno()

    def close(self) -> None:
        self._state["closed"] += 1
        self._f.close()
        if self._stuck:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("fail_at", [1, 4, 9], ids=["first-steps", "second-episode", "fifth-steps"])
def test_a_full_disk_mid_run_is_one_error_naming_the_log_and_resume_completes_the_run(
    fail_at, oracle_run, tmp_path, monkeypatch
):
    """A write that failed mid-run (a full disk) raised a bare "[Errno 28] No space left on
    device", naming no file, from closing the logs (the write's own error only its context)
    and left the episode log open. Now: one error naming the log; the episodes logged before
    stay whole, and the resumed run ends with the records of a run never interrupted."""
    from turnbudget.records import files

    state = {"writes": 0, "closed": 0, "fail_at": fail_at}
    real_open = files.open_regular
    monkeypatch.setattr(
        files, "open_regular", lambda path, mode="rb": _FullDisk(real_open(path, mode), state)
    )
    run = tmp_path / "run"
    with pytest.raises(OSError) as info:
        evaluate(MAZE, OracleAgent(0.3), out=run, **RUN)
    monkeypatch.undo()
    logs = {str(run / STEPS_FILE), str(run / EPISODES_FILE)}
    assert info.value.errno == errno.ENOSPC and info.value.filename in logs
    assert "episodes logged before are kept" in str(info.value)
    assert state["closed"] == 2  # both logs closed
    saved = sum(line.endswith(b"\n") for line in _lines(run / EPISODES_FILE))  # (not the torn)
    assert saved == (fail_at - 1) // 2
    resumed = _resume(run)
    assert resumed.n_run == 8 - saved
    assert json.loads(json.dumps(resumed.summary)) == oracle_run[1]
    for name in (EPISODES_FILE, STEPS_FILE):
        assert sorted(_lines(run / name)) == sorted(_lines(oracle_run[0] / name))


class _RemovingOracle(OracleAgent):
    """The oracle, that removes the run directory ``out`` as it starts its ``at``-th episode."""

    def __init__(self, epsilon: float, out: Path, at: int):
        super().__init__(epsilon)
        self.out, self.at, self.starts = out, at, 0

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.starts += 1
        if self.starts == self.at:
            shutil.rmtree(self.out)


def test_a_run_directory_removed_mid_run_stops_the_run_with_a_clear_error(tmp_path):
    """The logs' files stayed open once their directory was removed: every later episode
    was played and written to files no one could read, and the run returned as if all were
    saved. Now the episode after the removal stops the run, naming the log."""
    run = tmp_path / "run"
    with pytest.raises(FileNotFoundError, match="removed during the run") as info:
        evaluate(MAZE, _RemovingOracle(0.3, run, at=3), out=run, **RUN)
    assert info.value.filename in {str(run / STEPS_FILE), str(run / EPISODES_FILE)}


def test_an_unreadable_run_json_is_refused_on_resume(oracle_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    (run / RUN_FILE).write_text("{")
    with pytest.raises(LogError, match=r"run\.json: not JSON .* fix run\.json, or choose a new"):
        _resume(run)


_SPECIAL_FILE_CHILD = """
import os, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # (a read of /dev/zero: MemoryError)
from turnbudget.agents import OracleAgent
from turnbudget.eval.run.evaluate import evaluate, load_run
from turnbudget.records import LogError
out, what = Path(sys.argv[1]), sys.argv[2]
try:
    if what == "load":
        load_run(out)
    else:
        evaluate({maze!r}, OracleAgent(0.3), out=out, **{run!r})
except LogError as exc:
    print("LogError:", exc)
"""


@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
@pytest.mark.parametrize("name", [RUN_FILE, EPISODES_FILE, STEPS_FILE])
def test_a_run_file_that_is_not_a_regular_file_is_refused(oracle_run, tmp_path, name, special):
    """A FIFO in place of a run's file blocked the run (resume, load_run, report) for ever,
    and a link to /dev/zero read until the memory ran out: each is refused, naming the file.
    (A child process: a regression hangs it, which `HANG_GUARD` reports.)"""
    from _support import HANG_GUARD

    for what in ("resume", "load") if name != STEPS_FILE else ("resume",):
        run = tmp_path / f"{what}-run"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(oracle_run[0], run)
        (run / name).unlink()
        if special == "fifo":
            os.mkfifo(run / name)
        else:
            (run / name).symlink_to("/dev/zero")
        child = _SPECIAL_FILE_CHILD.format(maze=MAZE, run=RUN)
        done = subprocess.run(
            [sys.executable, "-c", child, str(run), what],
            capture_output=True, text=True, timeout=HANG_GUARD,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        if what == "load" and name == EPISODES_FILE:  # (read when first used: none read yet)
            continue
        assert f"{name}: not a regular file" in done.stdout, (what, done.stdout)


def test_a_new_run_refuses_a_fifo_in_place_of_its_log(tmp_path):
    """A fresh run opened a FIFO in place of episodes.jsonl to append, and blocked for ever."""
    from _support import HANG_GUARD

    out = tmp_path / "run"
    out.mkdir()
    os.mkfifo(out / EPISODES_FILE)
    child = _SPECIAL_FILE_CHILD.format(maze=MAZE, run=RUN)
    done = subprocess.run(
        [sys.executable, "-c", child, str(out), "resume"],
        capture_output=True, text=True, timeout=HANG_GUARD,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{EPISODES_FILE}: not a regular file" in done.stdout


@pytest.mark.parametrize("torn", [False, True])
@pytest.mark.parametrize("name", [EPISODES_FILE, STEPS_FILE])
def test_a_huge_line_is_refused_without_reading_it_whole(oracle_run, tmp_path, name, torn):
    """A line of hundreds of MiB (or a sparse file's tail of zeros, no newline in it) was read
    whole into memory, by a report and by resume alike: it is refused at `MAX_LINE_BYTES`,
    naming the file and the line, torn or not."""
    import tracemalloc

    from turnbudget.records.files import MAX_LINE_BYTES, iter_records

    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    log = run / name
    lines = len(_lines(log))
    with log.open("ab") as f:
        f.write(b'{"record": "')
        f.truncate(f.tell() + 4 * MAX_LINE_BYTES)  # (sparse: zeros that take no disk)
        if not torn:
            f.seek(0, os.SEEK_END)
            f.write(b'"}\n')
    tracemalloc.start()
    try:
        with pytest.raises(LogError) as caught:
            for _ in iter_records(log):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_LINE_BYTES, peak  # (the line read so far, and its copy)
    assert str(caught.value).startswith(f"{log}, line {lines + 1}: Expect a line of at most")
    with pytest.raises(LogError, match=rf"Cannot resume .*{name}, line {lines + 1}: Expect a line"):
        _resume(run)


def test_a_huge_run_json_is_refused_without_reading_it_whole(oracle_run, tmp_path, capsys):
    from turnbudget.records.files import MAX_JSON_BYTES

    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    with (run / RUN_FILE).open("r+b") as f:
        f.truncate(2 * MAX_JSON_BYTES)  # (sparse)
    assert main(["report", str(run), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{run / RUN_FILE}: Expect a file of at most" in err, err


def test_a_log_of_copies_is_read_in_two_passes_whatever_their_number(oracle_run, tmp_path):
    """Each record logged again was checked by reading the log from its start: a log
    appended to itself took 78 s for 2,000 episodes and 247 s for 4,000 (quadratic). The
    copies are checked in one more pass, and a copy that differs is still named."""
    from turnbudget.eval.run.evaluate import load_run
    from turnbudget.records import files

    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    log = run / EPISODES_FILE
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines * 3))  # every record three times
    opened = []
    real = files.open_regular

    def counting(path: Any, mode: str = "rb") -> Any:
        opened.append(Path(path).name)
        return real(path, mode)

    _, episodes = load_run(run)
    files.open_regular = counting
    try:
        records = list(episodes.stream())
    finally:
        files.open_regular = real
    assert len(records) == len(lines) and opened == [EPISODES_FILE] * 2
    changed = next(r for r in map(json.loads, lines) if not r["success"])
    changed.update(success=True, first_success_turn=1)  # (as the conflicting-duplicate case)
    log.write_bytes(b"".join(lines * 2) + (json.dumps(changed) + "\n").encode())
    with pytest.raises(LogError, match=rf"line {2 * len(lines) + 1}: .* logged again with "):
        list(load_run(run)[1].stream())


@pytest.mark.parametrize(
    "text",
    ["{}", "[]", '{"config": null}', '{"config": {"labels": ["a"], "agents": ["x"]}, "agents": {"a": 5}}',
     "[" * 100_000, '{"config": {"labels": ["a"]', "\udcff"],
    ids=["empty", "list", "null-config", "wrong-skills", "deep", "truncated", "bad-utf8"],
)  # fmt: skip
def test_report_on_a_damaged_probe_summary_names_it_in_one_line(oracle_run, tmp_path, capsys, text):
    """A ``probe_summary.json`` beside the runs was read with json.loads and indexed as it
    came: ``KeyError: 'config'``, a TypeError or a RecursionError, with a traceback."""
    shutil.copytree(oracle_run[0], tmp_path / "run")
    summary = tmp_path / "probe_summary.json"
    summary.write_bytes(text.encode("utf-8", "surrogateescape"))
    code = main(["report", str(tmp_path), "--no-plots"])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err
    assert err.startswith(f"turnbudget report: error: {summary}: ") and err.count("\n") == 1, err


def test_a_json_error_says_at_once():
    """json's "Unterminated string starting at" and our "at character N" read "at at"."""
    from turnbudget.records.files import _loads

    with pytest.raises(
        ValueError, match=r"^not JSON \(Unterminated string starting at character 2\)$"
    ):
        _loads('{"seed')


@pytest.mark.parametrize("writer", ["write_json", "write_text_atomic"])
def test_a_read_only_file_system_names_the_file_asked_for(writer, tmp_path, monkeypatch):
    """On a read-only file system the temporary's creation and its removal both fail: the
    error is the first, naming the file asked for (the removal's replaced it, naming the
    temporary)."""
    import errno
    from pathlib import Path

    from turnbudget.eval.report._atomic import write_text_atomic
    from turnbudget.records.files import write_json

    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(Path, "open", read_only)
    monkeypatch.setattr(Path, "unlink", read_only)
    target = tmp_path / "summary.json"
    with pytest.raises(OSError) as info:
        if writer == "write_json":
            write_json(target, {"a": 1})
        else:
            write_text_atomic(target, "{}")
    assert info.value.errno == errno.EROFS and info.value.filename == str(target)


@pytest.mark.parametrize(
    "writer", ["write_json", "write_jsonl", "write_text_atomic", "save_figure"]
)
@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_a_failed_write_names_the_file_asked_for_and_leaves_the_old_one_whole(
    writer, err, tmp_path, monkeypatch
):
    """A write or fsync of the temporary that failed (a full disk) raised an error naming no
    file ("[Errno 28] No space left on device"); it names the file asked for now. The file
    before stays whole, and no temporary is left."""
    from turnbudget.eval.report._atomic import save_figure, write_text_atomic
    from turnbudget.records.files import write_json, write_jsonl

    def failing(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    class Figure:  # (savefig writes part of the image, then the disk is full)
        def savefig(self, path, format=None):
            Path(path).write_bytes(b"\x89PNG")
            failing()

    target = tmp_path / ("plot.png" if writer == "save_figure" else "summary.json")
    target.write_bytes(b"the previous file\n")
    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError) as info:
        {
            "write_json": lambda: write_json(target, {"a": 1}),
            "write_jsonl": lambda: write_jsonl(target, [{"a": 1}] * 3),
            "write_text_atomic": lambda: write_text_atomic(target, "{}"),
            "save_figure": lambda: save_figure(Figure(), target),
        }[writer]()
    monkeypatch.undo()
    assert info.value.errno == err and info.value.filename == str(target)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    assert target.read_bytes() == b"the previous file\n"


@pytest.fixture(scope="module")
def probe_summary_text(tmp_path_factory):
    from turnbudget.eval.probes.run import probe

    out = tmp_path_factory.mktemp("probe")
    probe(MAZE, OracleAgent(0.2), tasks=[0, 1], baseline_repeats=1, n_bootstrap=20, out=out)
    return (out / "probe_summary.json").read_text()


def _damaged(text: str, edit: Callable[[dict[str, Any]], None]) -> str:
    summary = json.loads(text)
    edit(summary["agents"][summary["config"]["labels"][0]])
    return json.dumps(summary)  # (NaN and Infinity as Python's json writes them)


def _first_estimate(groups: dict[str, Any]) -> dict[str, Any]:
    return next(iter(groups.values()))["single_step_skill"]


@pytest.mark.parametrize(
    "edit,expect",
    [
        (lambda groups: groups.clear(), "['oracle-eps0.2'] to be a non-empty mapping, got dict {}"),
        (
            lambda groups: _first_estimate(groups).update(mean=float("nan")),
            "['single_step_skill']['mean'] to be a finite number, got float nan",
        ),
        (
            lambda groups: _first_estimate(groups).update(low=float("-inf")),
            "['single_step_skill']['low'] to be a finite number, got float -inf",
        ),
        (lambda groups: _first_estimate(groups).update(high=1e308), "high <= 1"),
        (lambda groups: _first_estimate(groups).update(low=0.9, high=0.1), "low <= mean <= high"),
    ],
    ids=["no-group", "nan-skill", "infinite-low", "huge-high", "interval-reversed"],
)
def test_a_probe_summary_with_impossible_skills_is_refused(
    probe_summary_text, oracle_run, tmp_path, capsys, edit, expect
):
    """An empty group ended the report in ``StopIteration`` with a traceback; a NaN skill
    and an interval of -inf to 1e308 were shown as ``nan [-inf, 1000...(309 digits).00]``."""
    shutil.copytree(oracle_run[0], tmp_path / "run")
    assert main(["report", str(tmp_path), "--no-plots"]) == 0  # (the probe's own summary)
    summary = tmp_path / "probe_summary.json"
    summary.write_text(probe_summary_text)
    assert main(["report", str(tmp_path), "--no-plots"]) == 0
    capsys.readouterr()
    summary.write_text(_damaged(probe_summary_text, edit))
    code = main(["report", str(tmp_path), "--no-plots"])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err
    assert err.startswith(f"turnbudget report: error: {summary}: ") and expect in err, err


@pytest.mark.parametrize("kind", ["directory", "fifo", "dangling-link"])
def test_an_episode_log_that_is_no_file_is_named_for_what_it_is(kind, base_run, tmp_path, capsys):
    """An ``episodes.jsonl`` that was a directory or a FIFO was reported "gone", with advice
    for the Python API (``list(result.episodes)``) to a user of the command line."""
    run = tmp_path / "run"
    shutil.copytree(base_run[0], run)
    log = run / EPISODES_FILE
    log.unlink()
    {"directory": log.mkdir, "fifo": lambda: os.mkfifo(log),
     "dangling-link": lambda: log.symlink_to(tmp_path / "nothing")}[kind]()  # fmt: skip
    code = main(["report", str(run), "--no-plots"])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err and err.count("\n") == 1, err
    expect = {"directory": "Is a directory", "fifo": "not a regular file",
              "dangling-link": "is missing (a link to nothing)"}[kind]  # fmt: skip
    assert str(log) in err and expect in err, err


def test_report_leaves_a_report_it_did_not_write(base_run, tmp_path, capsys):
    """`turnbudget report runs/main` (as the docs suggested) replaced the main job's report,
    its findings and verdicts, and its summary.json with a plain report of its runs."""
    root = tmp_path / "main"
    shutil.copytree(base_run[0], root / "run")
    theirs = {"report.md": b"# The main job: findings\n", "summary.json": b'{"findings": 1}\n'}
    for name, data in theirs.items():
        (root / name).write_bytes(data)
    assert main(["report", str(root), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a report `turnbudget report` did not write" in err, err
    assert {name: (root / name).read_bytes() for name in theirs} == theirs
    assert main(["report", str(root / "run"), "--no-plots"]) == 0  # (its runs, one by one)
    assert main(["report", str(root / "run"), "--no-plots"]) == 0  # (and again: its own)


@pytest.mark.parametrize("kind", ["loop", "dangling-link"])
def test_a_run_json_that_is_a_broken_link_is_named_not_passed_over(
    kind, base_run, tmp_path, capsys
):
    """A run.json that was a link round a loop (or to nothing) made its run no run at all:
    "holds no evaluation run", or in a directory of runs, a report without it."""
    root = tmp_path / "runs"
    shutil.copytree(base_run[0], root / "a")
    run_json = root / "a" / RUN_FILE
    run_json.unlink()
    run_json.symlink_to(run_json if kind == "loop" else tmp_path / "nothing")
    for target in (root / "a", root):
        assert main(["report", str(target), "--no-plots"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"'{run_json}'" in err, err


def test_a_step_log_that_is_a_broken_link_is_named_when_it_is_needed(base_run, tmp_path, capsys):
    """Episode records without ``budget_counts`` (older logs) are counted from the step log:
    one that was a link round a loop read as empty ("step records for turns []")."""
    run = tmp_path / "run"
    shutil.copytree(base_run[0], run)
    steps = run / STEPS_FILE
    steps.unlink()
    steps.symlink_to(steps)
    assert main(["report", str(run), "--no-plots"]) == 0  # (its records hold their counts)
    lines = [json.loads(line) for line in (run / EPISODES_FILE).read_text().splitlines()]
    for record in lines:
        record.pop("budget_counts", None)
    (run / EPISODES_FILE).write_text("".join(json.dumps(r) + "\n" for r in lines))
    capsys.readouterr()
    assert main(["report", str(run), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"step log {steps} is a link to nothing" in err, err


@pytest.mark.parametrize(
    "records",
    [{"a": 1}, "abc", b"ab", [{"a": 1}, "abc"], [{"a": 1}, None]],
    ids=["a-mapping", "a-str", "bytes", "a-str-among-them", "none-among-them"],
)
def test_write_jsonl_refuses_what_is_no_list_of_records_and_keeps_the_old_file(tmp_path, records):
    """A mapping passed as the records was written a key a line, a str a character a line:
    the records were lost with no error."""
    from turnbudget.records.files import write_jsonl

    target = tmp_path / "log.jsonl"
    target.write_text('{"old":1}\n')
    with pytest.raises(TypeError, match=r"Expect (`records` to be an iterable|every record)"):
        write_jsonl(target, records)
    assert target.read_text() == '{"old":1}\n' and [p.name for p in tmp_path.iterdir()] == [
        "log.jsonl"
    ]
    write_jsonl(target, ({"n": i} for i in range(2)))  # a generator of records: fine
    assert target.read_text() == '{"n":0}\n{"n":1}\n'


def test_resume_cuts_the_steps_of_unfinished_episodes_in_place(oracle_run, tmp_path, monkeypatch):
    """The steps a kill or a full disk leaves at the end of the log (an episode without its
    episode line, a torn line) were dropped by rewriting the whole log into a copy: after a
    full disk, resuming needed free space the size of the log, and failed again with "No
    space left on device". The log is now cut where they start."""
    run = tmp_path / "run"
    shutil.copytree(oracle_run[0], run)
    episodes = _lines(run / EPISODES_FILE)
    last = json.loads(episodes[-1])["episode_id"]
    (run / EPISODES_FILE).write_bytes(b"".join(episodes[:-1]))  # (its steps are the last)
    kept = b"".join(line for line in _lines(run / STEPS_FILE) if last.encode() not in line)
    with (run / STEPS_FILE).open("ab") as f:
        f.write(b'{"record":"step","epis')  # torn
    inode = (run / STEPS_FILE).stat().st_ino
    real_rewrite = files._rewrite
    rewritten = []

    def spied_rewrite(path, lines):
        rewritten.append(Path(path).name)
        return real_rewrite(path, lines)

    monkeypatch.setattr(files, "_rewrite", spied_rewrite)
    files.repair_logs(run, record_plan(load_run(run)[0]))
    monkeypatch.undo()
    assert (run / STEPS_FILE).read_bytes() == kept and STEPS_FILE not in rewritten
    assert (run / STEPS_FILE).stat().st_ino == inode
    resumed = _resume(run)
    assert resumed.n_run == 1 and json.loads(json.dumps(resumed.summary)) == oracle_run[1]


class _StopsAfterTwo(OracleAgent):
    """The oracle, stopped (as by a kill) once its run has logged two episodes."""

    def __init__(self, log: Path):
        super().__init__(0.2)
        self.log = log

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed=seed)
        if self.log.exists() and len(_lines(self.log)) >= 2:
            raise KeyboardInterrupt

    def __repr__(self) -> str:  # (the run's agent, as the resumed run names it)
        return "OracleAgent(epsilon=0.2)"


def test_a_resumed_run_whose_logs_link_to_another_run_writes_only_its_own(tmp_path):
    """A run directory whose logs are links into another's (``cp -rs``) resumed by
    appending through them: the other run's logs took this run's episodes, past the
    other's lock. Resume now copies a linked log into a file of its own; a new log never
    opens through a link."""
    settings = dict(ks=[1], ts=[20], tasks=6, n_bootstrap=20)
    first, linked = tmp_path / "first", tmp_path / "linked"
    with pytest.raises(KeyboardInterrupt):
        evaluate(MAZE, _StopsAfterTwo(first / EPISODES_FILE), out=first, **settings)
    logged = {name: (first / name).read_bytes() for name in (EPISODES_FILE, STEPS_FILE)}
    linked.mkdir()
    for name in (RUN_FILE, EPISODES_FILE, STEPS_FILE):
        (linked / name).symlink_to(first / name)
    resumed = evaluate(MAZE, OracleAgent(0.2), out=linked, **settings)
    assert resumed.n_run == 4 and len(resumed.episodes) == 6
    assert {name: (first / name).read_bytes() for name in logged} == logged
    for name in (EPISODES_FILE, STEPS_FILE):
        assert not (linked / name).is_symlink()
        assert (linked / name).read_bytes().startswith(logged[name])
    # Appending never follows a link, whoever asks.
    (tmp_path / "elsewhere").write_bytes(b"")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LogError, match="a symbolic link, not a log of this run's own"):
        files.open_regular(tmp_path / "link", "a")


def test_report_leaves_a_summary_json_of_another_program(base_run, tmp_path, capsys):
    """A summary.json beside no report.md of ours (a training run's, a script's) was replaced
    by the report of the runs below it, where `eval --out` refuses to write over one."""
    root = tmp_path / "study"
    shutil.copytree(base_run[0], root / "run")
    (root / "summary.json").write_bytes(b'{"losses": [1.0, 0.5]}\n')
    assert main(["report", str(root), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds summary.json of no report" in err, err
    assert (root / "summary.json").read_bytes() == b'{"losses": [1.0, 0.5]}\n'
    assert not (root / "report.md").exists()


def test_a_folder_report_whose_report_md_is_gone_is_rebuilt(base_run, tmp_path, capsys):
    """Its summary.json is the report's own: refused as "of no report" once report.md was
    deleted, or a write cut short between the two files (report.md is now written first)."""
    root = tmp_path / "runs"
    shutil.copytree(base_run[0], root / "a")
    assert main(["report", str(root), "--no-plots"]) == 0
    (root / "report.md").unlink()
    assert main(["report", str(root), "--no-plots"]) == 0, capsys.readouterr().err
    assert (root / "report.md").read_text().startswith("# Pass@(K,T) report")
