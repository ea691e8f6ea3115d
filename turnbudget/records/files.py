"""A run directory's files: ``run.json``, ``episodes.jsonl`` and ``steps.jsonl``.

Every kind of run (`turnbudget.eval.evaluate`, team evaluations, probes)
writes and reads its records here, so the format has one owner.

**Writing.** Each finished episode is written as its step lines, then its
episode line; the episode line is what marks the episode complete.

**Reading** checks what it reads. Every line must be a JSON object (nested no
deeper than the parser allows); every record must carry the fields the
analysis reads, of the right type and range (finite, no count below 0 or above
`MAX_COUNT`: `episode_problem`, `step_problem`), and belong to the run's plan
(``run.json``, described to this module as a `RunPlan`): its
``episode_id`` is a planned episode, and its ``env_id``, ``seed``, ``rep`` and
``turn_budget`` are that episode's. A successful episode has a
``first_success_turn`` from 1 to ``turns_used``, at most the budget; a failed
one has none. Fields the analysis does not read are left alone (records may
gain fields). An episode logged twice with the same content is kept once; with
different content it is an error. Any problem raises `LogError` (a
``ValueError``) naming the file, the line and what is wrong. The one line
that is not a problem is a torn last line (one without its newline that is no
whole JSON object): what a writer killed mid-write leaves. It is left out. A
last line that is a whole record but for its newline (an editor strips it) is
read as any other, and resume adds the newline.

**Resume** (`repair_logs`) removes only what it can account for before a
resumed run appends: the torn last line, the steps of episodes without their
episode line (killed mid-episode), the records of episodes that *failed to
run* (they have no steps; the resumed run tries them again) and identical
copies of a record. Anything else, such as a corrupt line in the middle of a
file, a complete episode short of a step record per turn (in a run that records
steps: `RunPlan.steps`) or a log that is a link to nothing, is refused with
`LogError` before anything is changed.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import secrets
import stat
import warnings
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnbudget._checks import MAX_LABEL_PARTS, brief, is_int
from turnbudget.records.schema import (
    BUDGET_COUNTERS,
    MAX_COUNT,
    dumps,
    format_episode_id,
    usage_number,
)

__all__ = [
    "EPISODES_FILE",
    "EVALUATION_FILES",
    "MAX_JSON_BYTES",
    "MAX_LINE_BYTES",
    "MAX_RUN_DEPTH",
    "REPORT_FILES",
    "REPORT_HEADING",
    "REPORT_HEATMAPS",
    "RUN_FILE",
    "STEPS_FILE",
    "EpisodeLog",
    "LogError",
    "LogWriter",
    "RunPlan",
    "budget_counts_problem",
    "episode_fields_problem",
    "episode_problem",
    "folders_below",
    "iter_episodes",
    "iter_records",
    "prepare_run_dir",
    "present",
    "read_config_dict",
    "read_episodes",
    "read_jsonl",
    "read_steps",
    "repair_logs",
    "run_dirs_below",
    "step_fields_problem",
    "step_problem",
    "write_json",
    "write_jsonl",
]

RUN_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"
STEPS_FILE = "steps.jsonl"
#: What marks a directory as an evaluation's: a run's (``run.json``, its episode log) or a
#: probe run's (`turnbudget.eval.probes`: its ``probe.json``, records and summary). A
#: training run or an exported policy never shares one.
EVALUATION_FILES = (RUN_FILE, EPISODES_FILE, "probe.json", "probes.jsonl", "probe_summary.json")
#: What a report made of a run's records leaves in its directory (`turnbudget.eval.report`:
#: its summary, its tables, its plots), which starting the run afresh discards with them.
REPORT_FILES = ("summary.json", "report.md", "pass_at_1_curve.png", "recovery.png",
                "recovery_by_budget.png")  # fmt: skip
#: The report's heatmaps, one per run label and env group.
REPORT_HEATMAPS = "heatmap_*.png"
#: The first line of every report.md `turnbudget.eval.report` writes: what tells it from
#: another program's (the main job's), which neither a report nor a run may overwrite.
REPORT_HEADING = "# Pass@(K,T) report"


class LogError(ValueError):
    """A run log that cannot be read as records; the message names the file, line and problem."""


# -- one line --------------------------------------------------------------------------

# orjson (the ``fast`` extra) reads a line in a third of json's time (issue 26: reading a
# log back is most of a report's time) and reads it as json does, but for an int past 64
# bits (a float to orjson): a line with 19 digits in a row is json's to read, and so is any
# line orjson refuses (NaN, a lone surrogate, a number past a float's range), which keeps
# json's values and error messages, and one with many brackets (json refuses nesting that
# orjson reads). Used only if it reads these edges as json does.
try:
    import orjson as _orjson
except ImportError:  # (the fast extra is not installed)
    _orjson = None

# A line's digits as 0 and its opening braces as brackets (a regex finds 19 digits 10x slower).
_SHAPE = bytes.maketrans(b"123456789{", b"000000000[")
_LONG_NUMBER = b"0" * 19
_MAX_BRACKETS = 64  # (a record's line holds a few; json reads any nesting this deep)
_READ_PROBES = (
    b'{"a":[0.1,-0.0,5e-324,2.2250738585072011e-308,1.7976931348623157e308,1e-400,123456789]}',
    b'{"s":"\\u00e9\\n\\"\\\\\\u0000\xc3\xa9","t":true,"f":false,"n":null,"o":{},"l":[]}',
    b'{"i":9223372036854775807,"j":-9223372036854775808,"a":1,"a":2,"x":1E5}\r\n',
)


def _orjson_reads_as_json() -> bool:
    try:
        return all(
            repr(_orjson.loads(line)) == repr(json.loads(line.decode())) for line in _READ_PROBES
        )
    except Exception:  # (any failure: keep to the standard library)
        return False


if _orjson is not None and not _orjson_reads_as_json():
    _orjson = None


def _loads(data: bytes | str) -> Any:
    """``json.loads``, with a ``ValueError`` that says what is wrong on one line."""
    shape = data.translate(_SHAPE) if _orjson is not None and type(data) is bytes else None
    if shape is not None and _LONG_NUMBER not in shape and shape.count(b"[") <= _MAX_BRACKETS:
        try:
            return _orjson.loads(data)
        except ValueError:  # (orjson refuses it: json reads it, or says what is wrong)
            pass
    try:
        return json.loads(data.decode() if isinstance(data, bytes) else data)
    except RecursionError:
        raise ValueError("not JSON we can read (nested too deeply)") from None
    except json.JSONDecodeError as exc:
        multiline = "\n" in exc.doc.rstrip("\n")
        at = f"line {exc.lineno} column {exc.colno}" if multiline else f"character {exc.pos + 1}"
        msg = exc.msg.removesuffix(" at")  # ("Unterminated string starting at": one "at")
        raise ValueError(f"not JSON ({msg} at {at})") from None
    except ValueError as exc:  # (bad UTF-8, an int of over 4300 digits)
        raise ValueError(f"not JSON ({str(exc).split(';')[0]})") from None


def _kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    names = {dict: "an object", list: "an array", str: "a string"}
    return names.get(type(value), "a number")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def open_regular(path: str | os.PathLike[str], mode: str = "rb") -> Any:
    """``path`` opened in ``mode`` (``"rb"``, or ``"a"`` to append text, created if missing)
    if it is a regular file; else `LogError`: a FIFO would block the run for ever, and a
    device such as /dev/zero fill its memory. (Opened without blocking, then checked.)"""
    # (appending never follows a link: it may point at another run's log, which this run
    # then wrote past that run's lock; resume makes a linked log a file of its own first)
    flags = os.O_RDONLY if mode == "rb" else os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NO_FOLLOW
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP and mode != "rb":
            raise LogError(
                f"{path}: a symbolic link, not a log of this run's own (it may point at "
                "another run's log): remove it, or resume the run to copy what it holds"
            ) from None
        if exc.errno != errno.ENXIO:  # (a FIFO that no process reads, opened to write)
            raise
        fd = None
    kind = None if fd is None else os.fstat(fd).st_mode
    if kind is None or not stat.S_ISREG(kind):
        if fd is not None:
            os.close(fd)
        if kind is not None and stat.S_ISDIR(kind):  # (as open() reports it)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        raise LogError(f"{path}: not a regular file (a FIFO, a device or a socket)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, mode)


_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

#: The longest line a log may hold, its newline included (a record's line is a few KiB:
#: its strings are capped, `cap_text`); a longer one is refused before it is read whole.
MAX_LINE_BYTES = 64 << 20

#: The largest ``run.json`` (or probe summary) `read_config_dict` reads.
MAX_JSON_BYTES = 256 << 20


def iter_records(
    path: str | os.PathLike[str],
    problem: Callable[[dict[str, Any]], str | None] | None = None,
) -> Iterator[tuple[int, bytes, dict[str, Any] | None]]:
    """``(line number, line, record)`` for each line of a JSONL log (none when it is missing).

    The record is None for a torn last line (one without its newline that is no
    whole JSON object, as a killed writer leaves it; no part of a record's line but
    the whole is one). Any other line that is not a JSON object, or for which
    ``problem(record)`` returns a reason, raises `LogError`.
    """
    path = Path(path)
    if not path.exists():
        if path.is_symlink():  # (read as no log, resume took the other log's lines for orphans)
            raise LogError(f"{path}: a link to nothing (or a loop of links), not a log")
        return
    with open_regular(path) as f:
        # (read at most a line's limit at a time: a line of GiBs, or a file with no newline
        # such as a sparse one, was read whole into memory)
        for number, line in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(line) > MAX_LINE_BYTES:
                raise LogError(
                    f"{path}, line {number}: Expect a line of at most {MAX_LINE_BYTES} bytes "
                    "(a record's line is a few KiB), got a longer one"
                )
            if not line.endswith(b"\n") and not _is_json_object(line):
                yield number, line, None
                return
            if not line.strip():
                raise LogError(f"{path}, line {number}: Expect a JSON object, got an empty line")
            try:
                record = _loads(line)
            except ValueError as exc:
                raise LogError(f"{path}, line {number}: {exc}") from None
            reason = (
                f"Expect a JSON object, got {_kind(record)}: {_show(record)}"
                if not isinstance(record, dict)
                else problem(record) if problem is not None else None
            )  # fmt: skip
            if reason:
                raise LogError(f"{path}, line {number}: {reason}")
            yield number, line, record


def _is_json_object(line: bytes) -> bool:
    """Whether ``line`` holds one whole JSON object (what a log's last line, its newline
    stripped by an editor, still holds, and a torn one never does)."""
    try:
        return isinstance(_loads(line), dict)
    except (ValueError, RecursionError):
        return False


def read_jsonl(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int, bool]:
    """Read a JSONL log: ``(records, good_bytes, torn)``.

    A last line without its newline that is no whole JSON object is what a killed
    writer leaves behind: it is reported as ``torn`` and excluded, and ``good_bytes`` is where the good
    part ends. Any other line that is not a JSON object raises `LogError`.
    """
    records: list[dict[str, Any]] = []
    good = 0
    for _, line, record in iter_records(path):
        if record is None:
            return records, good, True
        records.append(record)
        good += len(line)
    return records, good, False


# -- what a record must hold -----------------------------------------------------------

Rule = tuple[Callable[[Any], bool], str]


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _counts(values: list[Any]) -> bool:
    """Every value a `_count` (the type test and the bounds each in one pass, in C)."""
    return not values or (
        set(map(type, values)) == {int} and min(values) >= 0 and max(values) <= MAX_COUNT
    )


COUNT: Rule = (_count, f"an int from 0 to {MAX_COUNT}")
COUNT_OR_NULL: Rule = (lambda v: v is None or _count(v), f"null or an int from 0 to {MAX_COUNT}")
SIGNED_OR_NULL: Rule = (
    lambda v: v is None or (type(v) is int and abs(v) <= MAX_COUNT),
    f"null or an int from -{MAX_COUNT} to {MAX_COUNT}",
)
BOOL: Rule = (lambda v: isinstance(v, bool), "true or false")
BOOL_OR_NULL: Rule = (lambda v: v is None or isinstance(v, bool), "true, false or null")
STRING: Rule = (lambda v: isinstance(v, str), "a string")
RATE: Rule = (
    lambda v: v is None or (type(v) in (int, float) and 0 <= v <= 1),
    "null or a number from 0 to 1",
)
COUNTS: Rule = (lambda v: isinstance(v, list) and _counts(v), "a list of such ints")
NUMBERS: Rule = (
    lambda v: isinstance(v, dict) and all(map(usage_number, v.values())),
    "an object of finite numbers (at most 1e15 in size)",
)
EVENT: Rule = (
    lambda v: v is None or (isinstance(v, dict) and isinstance(v.get("applied", True), bool)),
    'null or an object (its "applied" true or false)',
)

#: Why an episode failed to run: a word (the report prints it as it is).
FAILURE_KIND: Rule = (
    lambda v: isinstance(v, str) and re.fullmatch(r"[a-z][a-z_]{0,31}", v) is not None,
    "a kind of failure (a word: exception, worker_lost, timeout)",
)

# Fields the analysis reads (older records may lack the counts): checked when present.
_EPISODE_FIELDS: dict[str, Rule] = {
    "failed_to_run": BOOL, "failure": FAILURE_KIND, "error": STRING, "attempts": COUNT,
    "initial_distance": COUNT_OR_NULL, "final_distance": COUNT_OR_NULL,
    "feasible": BOOL_OR_NULL, "step_regret": SIGNED_OR_NULL,
    "n_errors_injected": COUNT, "n_errors_injected_increasing": COUNT, "n_errors_self": COUNT,
    "n_wasted": COUNT, "n_invalid": COUNT, "n_recovered": COUNT, "n_unrecovered": COUNT,
    "turns_to_recover": COUNTS, "optimal_step_rate": RATE, "optimal_step_rate_on_track": RATE,
    "optimal_step_rate_after_error": RATE, "n_steps_on_track": COUNT,
    "n_steps_after_error": COUNT, "n_steps_judged": COUNT, "n_optimal_steps": COUNT,
    "n_optimal_on_track": COUNT, "n_optimal_after_error": COUNT, "agent": NUMBERS,
}  # fmt: skip
# ... and those every episode that ran must have.
_OUTCOME_FIELDS: dict[str, Rule] = {
    "success": BOOL, "first_success_turn": COUNT_OR_NULL, "turns_used": COUNT
}  # fmt: skip
# The recorder's integer counts come together.
_JUDGED = ("n_steps_judged", "n_optimal_steps", "n_optimal_on_track", "n_optimal_after_error")
# (part, whole): a part never exceeds its whole.
_AT_MOST = (
    ("n_steps_judged", "turns_used"), ("n_optimal_steps", "n_steps_judged"),
    ("n_steps_on_track", "turns_used"), ("n_steps_after_error", "turns_used"),
    ("n_errors_self", "turns_used"), ("n_errors_injected", "turns_used"),
    ("n_wasted", "turns_used"), ("n_invalid", "turns_used"),
    ("n_optimal_on_track", "n_steps_on_track"), ("n_optimal_after_error", "n_steps_after_error"),
    ("n_errors_injected_increasing", "n_errors_injected"),
)  # fmt: skip
# A step's key (what resume reads), then the fields the analysis reads.
_STEP_KEY: dict[str, Rule] = {"episode_id": STRING, "turn": COUNT}
_TEAM_KEY: dict[str, Rule] = {"team_episode_id": STRING}
_STEP_FIELDS: dict[str, Rule] = {
    "turn_budget": COUNT, "action": STRING,
    "valid_action": BOOL, "optimal": BOOL_OR_NULL, "phase": STRING, "error_self": BOOL,
    "injection_increased": BOOL, "wasted": BOOL, "errors_opened": COUNT, "recoveries": COUNTS,
    "injected_error": EVENT, "won": BOOL,
}  # fmt: skip


def _missing(
    record: Mapping[str, Any], rules: Mapping[str, Rule], required: Iterable[str]
) -> str | None:
    for key in required:
        if key not in record:
            return f"Expect `{key}` to be {rules[key][1]}, but it is missing"
    return None


def _fields_problem(
    record: Mapping[str, Any], rules: Mapping[str, Rule], required: Iterable[str] = ()
) -> str | None:
    problem = _missing(record, rules, required)
    if problem:
        return problem
    for key, (ok, what) in rules.items():
        if key in record and not ok(record[key]):
            return f"Expect `{key}` to be {what}, got {_show(record[key])}"
    return None


@dataclass(frozen=True)
class RunPlan:
    """The episodes a run plans, checked field by field rather than listed (a hand-edited
    ``run.json`` may plan billions): every (env, task seed, repeat, budget) combination.

    Args:
        envs: the env ids (a team run: its game's id).
        tasks: the task seeds.
        n: repeats per task (``rep`` from 0 to ``n - 1``).
        budgets: the budgets episodes run at.
        ts: the budgets T the analysis reads (the keys of ``budget_counts``).
        steps: whether each episode that ran logs one step record per turn it used, under
            its own ``episode_id`` (an evaluation that records steps), which resume checks.
        agent_seed: the agent's seed of an episode ``(env_id, task seed, rep)`` under the
            run's seed (None: not checked): a record carrying another ``agent_seed`` was
            played under another run's seed, and resume kept it as this run's.
    """

    envs: Collection[str]
    tasks: Collection[int]
    n: int
    budgets: Collection[int]
    ts: Collection[int]
    steps: bool = False
    agent_seed: Callable[[str, int, int], int] | None = field(default=None, compare=False)

    _ID = re.compile(r"(.+)\|seed=(\d{1,30})\|rep=(\d{1,30})\|T=(\d{1,30})")

    @functools.cached_property
    def rules(self) -> dict[str, Rule]:
        """The identity fields' rules (built once: every record read is checked against them)."""
        envs, tasks, n, budgets = set(self.envs), set(self.tasks), self.n, set(self.budgets)
        return {
            "env_id": (
                lambda v: isinstance(v, str) and v in envs,
                f"one of the run's envs {_show(sorted(envs))}",
            ),
            "seed": (lambda v: type(v) is int and v in tasks, "one of the run's task seeds"),
            "rep": (lambda v: _count(v) and v < n, f"an int from 0 to {n - 1}"),
            "turn_budget": (
                lambda v: _count(v) and v in budgets,
                f"a budget the run plays ({_show(sorted(budgets))})",
            ),
        }

    def episode_problem(self, record: Mapping[str, Any]) -> str | None:
        """What is wrong with the record's identity (None: a planned episode)."""
        episode_id = record.get("episode_id")
        if not isinstance(episode_id, str):
            return f"Expect `episode_id` to be a string, got {_show(episode_id)}"
        problem = _fields_problem(record, self.rules, self.rules)
        if problem:
            return problem
        expected = format_episode_id(*(record[k] for k in ("env_id", "seed", "rep", "turn_budget")))
        if episode_id != expected:
            return (
                "Expect `episode_id` to agree with `env_id`, `seed`, `rep` and `turn_budget` "
                f"({expected!r}), got {_show(episode_id)}"
            )
        if self.agent_seed is not None and "agent_seed" in record:  # (older logs lack it)
            seed = self.agent_seed(record["env_id"], record["seed"], record["rep"])
            if record["agent_seed"] != seed:
                return (
                    f"Expect `agent_seed` to be {seed}, the seed run.json's seed gives this "
                    f"episode, got {_show(record['agent_seed'])} (a record of another run?)"
                )
        return None

    def has(self, episode_id: Any) -> bool:
        """Whether ``episode_id`` names a planned episode."""
        match = self._ID.fullmatch(episode_id) if isinstance(episode_id, str) else None
        envs, tasks, budgets = self._members
        return match is not None and (
            match[1] in envs and int(match[2]) in tasks
            and int(match[3]) < self.n and int(match[4]) in budgets
        )  # fmt: skip

    @functools.cached_property
    def _members(self) -> tuple[set[str], set[int], set[int]]:
        return set(self.envs), set(self.tasks), set(self.budgets)


def episode_problem(record: Mapping[str, Any], plan: RunPlan) -> str | None:
    """What is wrong with one episode record of the run ``plan`` describes (None: nothing)."""
    if record.get("record") != "episode":
        return f'Expect an episode record ("record": "episode"), got {_show(record.get("record"))}'
    problem = plan.episode_problem(record)
    problem = problem or _fields_problem(record, _EPISODE_FIELDS)
    if problem or record.get("failed_to_run"):
        return problem
    problem = _fields_problem(record, _OUTCOME_FIELDS, _OUTCOME_FIELDS)
    if problem:
        return problem
    used, budget, first = record["turns_used"], record["turn_budget"], record["first_success_turn"]
    if not 1 <= used <= budget:
        return f"Expect `turns_used` to be from 1 to the turn budget {budget}, got {used}"
    if record["success"] and (first is None or not 1 <= first <= used):
        return (
            "Expect `first_success_turn` of a successful episode to be from 1 to "
            f"`turns_used` ({used}), got {_show(first)}"
        )
    if not record["success"] and first is not None:
        return f"Expect `first_success_turn` of a failed episode to be null, got {first}"
    if "n_steps_judged" in record:  # (their values were checked with the other fields)
        problem = _missing(record, _EPISODE_FIELDS, _JUDGED)
        if problem:
            return problem
    for part, whole in _AT_MOST:
        if part in record and whole in record and record[part] > record[whole]:
            return f"Expect `{part}` ({record[part]}) to be at most `{whole}` ({record[whole]})"
    if "budget_counts" not in record:
        return None
    problem = budget_counts_problem(record["budget_counts"], plan.ts)
    if problem:
        return problem
    for budget, row in record["budget_counts"].items():  # (every turn within T is counted)
        if row[_TURNS] != min(int(budget), used):
            return (
                f"Expect `budget_counts[{budget!r}]` to count {min(int(budget), used)} turns, "
                f"the episode's turns within {budget} (`turns_used` {used}), got {row[_TURNS]}"
            )
    return None


#: An episode's identity where no run plan checks it (`episode_fields_problem`).
_IDENTITY: dict[str, Rule] = {
    "env_id": STRING, "seed": (lambda v: type(v) is int, "an int"), "turn_budget": COUNT,
}  # fmt: skip


def episode_fields_problem(
    record: Any,
    ts: Iterable[int] | None = None,
    *,
    identity: bool = True,
    missing: Iterable[str] = (),
) -> str | None:
    """What is wrong with the fields of an episode record that no log's reader checked (one
    made in memory, given to `turnbudget.eval.analysis`), None: nothing. Checked: that it is
    a dict; the fields ``missing`` (those it knows of what a reader did not find) and, with
    ``identity``, ``env_id``, ``seed`` and ``turn_budget`` are there; each field the
    analysis reads has the type `episode_problem` expects; ``budget_counts`` has a row of
    counts for each budget of ``ts`` (when given). Not checked: how the counts agree."""
    if not isinstance(record, Mapping):
        return f"Expect an episode record (a dict), got {_show(record)}"
    rules = {"episode_id": STRING, **_IDENTITY, **_EPISODE_FIELDS, **_OUTCOME_FIELDS}
    problem = _missing(record, rules, [key for key in missing if key in rules])
    if problem is not None:
        return problem
    problem = _fields_problem(record, rules, _IDENTITY if identity else ())
    if problem is None and ts is not None and "budget_counts" in record:
        problem = _budget_counts_shape(record["budget_counts"], ts)
    return problem


def _budget_counts_shape(counts: Any, ts: Iterable[int]) -> str | None:
    keys = sorted(str(t) for t in ts)
    width = len(BUDGET_COUNTERS)
    if (
        not isinstance(counts, dict) or sorted(counts) != keys
        or not all(isinstance(c, list) and len(c) == width and _counts(c) for c in counts.values())
    ):  # fmt: skip
        return (
            f"Expect `budget_counts` to map each budget {keys} to {width} ints from 0 to "
            f"{MAX_COUNT}, got {_show(counts)}"
        )
    return None


def budget_counts_problem(counts: Any, ts: Iterable[int]) -> str | None:
    """What is wrong with an episode's ``budget_counts`` for the budgets ``ts`` (None:
    nothing): its shape, a count of turns past T, a part past its whole."""
    problem = _budget_counts_shape(counts, ts)
    if problem is not None:
        return problem
    for budget, row in counts.items():  # (a part never exceeds its whole, nor turns T)
        if row[_TURNS] > int(budget):
            return f"Expect `budget_counts[{budget!r}]` to count at most {budget} turns, got {row}"
        for (part, i), (whole, j) in _COUNTS_AT_MOST:
            if row[i] > row[j]:
                return (
                    f"Expect `budget_counts[{budget!r}]` to count {part} ({row[i]}) at most "
                    f"{whole} ({row[j]})"
                )
    return None


# (part, whole) of a `budget_counts` row, as `_AT_MOST` of the episode's own counts, each
# with its place in the row (read once per record and budget: no dict built per row).
_COUNT_PAIRS = (
    ("judged", "turns"), ("optimal", "judged"), ("on_track", "turns"),
    ("optimal_on_track", "on_track"), ("after_error", "turns"),
    ("optimal_after_error", "after_error"), ("errors_self", "turns"),
    ("errors_injected", "turns"), ("errors_injected_increasing", "errors_injected"),
    ("wasted", "turns"), ("invalid", "turns"), ("recovered", "errors_opened"),
)  # fmt: skip
_COUNTS_AT_MOST = tuple(
    ((part, BUDGET_COUNTERS.index(part)), (whole, BUDGET_COUNTERS.index(whole)))
    for part, whole in _COUNT_PAIRS
)
_TURNS = BUDGET_COUNTERS.index("turns")


def step_problem(record: Mapping[str, Any], key_only: bool = False) -> str | None:
    """What is wrong with one step record (None: nothing); ``key_only`` checks only its
    episode id and turn (what resume reads)."""
    if record.get("record") != "step":
        return f'Expect a step record ("record": "step"), got {_show(record.get("record"))}'
    problem = _fields_problem(record, _STEP_KEY, _STEP_KEY) or _fields_problem(record, _TEAM_KEY)
    if problem is None and record["turn"] < 1:
        problem = "Expect `turn` to be at least 1, got 0"
    return problem or (None if key_only else _fields_problem(record, _STEP_FIELDS))


def step_fields_problem(record: Any) -> str | None:
    """What is wrong with a step record that no log's reader checked (one made in memory,
    given to `turnbudget.eval.analysis`: its ``"record"`` tag may be missing); None: nothing.
    Its ``turn`` (at least 1) and, when present, its ``episode_id`` are checked, and the
    fields the analysis reads as `step_problem` checks them."""
    if not isinstance(record, Mapping):
        return f"Expect a step record (a dict), got {_show(record)}"
    return step_problem({**record, "record": "step", "episode_id": record.get("episode_id", "")})


# -- the run's files -------------------------------------------------------------------


def read_config_dict(
    path: str | os.PathLike[str], check: Callable[[dict[str, Any]], Any] | None = None
) -> dict[str, Any]:
    """A run's ``run.json`` as written, once ``check(config)`` accepts it (it raises
    ``ValueError`` on a bad one); else `LogError` naming the file and the problem."""
    path = Path(path)
    try:
        with open_regular(path) as f:
            text = f.read(MAX_JSON_BYTES + 1)  # (a sparse file of GiBs was read whole)
        if len(text) > MAX_JSON_BYTES:
            raise ValueError(f"Expect a file of at most {MAX_JSON_BYTES} bytes, got a larger one")
        data = _loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"Expect a JSON object, got {_kind(data)}: {_show(data)}")
        if check is not None:
            check(data)
    except LogError:  # (it names the file already)
        raise
    except ValueError as exc:
        raise LogError(f"{path}: {exc}") from None
    return data


def read_episodes(path: str | os.PathLike[str], plan: RunPlan) -> list[dict[str, Any]]:
    """The checked episode records of a run's ``episodes.jsonl`` (see the module doc),
    one per episode id, in the file's order (`iter_episodes`, listed)."""
    return list(iter_episodes(path, plan))


def iter_episodes(path: str | os.PathLike[str], plan: RunPlan) -> Iterator[dict[str, Any]]:
    """One record at a time (`read_episodes` lists them): the checked episode records of a run's
    ``episodes.jsonl``, one per episode id, in the file's order, none held once yielded
    (what it keeps is a byte per planned episode of each task it has seen, and a digest
    per record logged again, each checked against its first copy in one more pass at the
    end: `LogError` if they differ)."""
    path = Path(path)
    slots = {budget: i for i, budget in enumerate(sorted(plan.budgets))}
    width = plan.n * len(slots)  # (a hand-edited run.json may plan billions: then a set)
    seen: dict[tuple[str, int], bytearray | set[int]] = {}
    again: dict[str, list[tuple[int, bytes]]] = {}  # id -> (line, digest) of each later copy
    for number, _, record in iter_records(path, lambda r: episode_problem(r, plan)):
        if record is None:  # a torn last line
            continue
        task = (record["env_id"], record["seed"])
        flags = seen.get(task)
        if flags is None:
            flags = seen[task] = bytearray(width) if width <= _FLAGS_MAX else set()
        slot = record["rep"] * len(slots) + slots[record["turn_budget"]]
        if slot in flags if isinstance(flags, set) else flags[slot]:
            again.setdefault(record["episode_id"], []).append((number, _digest(record)))
            continue
        if isinstance(flags, set):
            flags.add(slot)
        else:
            flags[slot] = 1
        yield record
    if again:
        _check_copies(path, plan, again)


#: The most episodes per task `iter_episodes` keeps one byte each for.
_FLAGS_MAX = 1 << 20


def _digest(record: dict[str, Any]) -> bytes:
    """What a record holds, whatever the order of its keys (two equal records agree)."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _check_copies(path: Path, plan: RunPlan, again: dict[str, list[tuple[int, bytes]]]) -> None:
    """Records logged again (``again``: the line and digest of each later copy by id): an
    identical copy passes, else `LogError` naming both lines. (One pass: a log appended to
    itself was read again from the start for each copy, quadratic in its length.)"""
    for first, _, record in iter_records(path, lambda r: episode_problem(r, plan)):
        copies = again.pop(record["episode_id"], None) if record is not None else None
        if copies is None:
            continue
        digest = _digest(record)
        for number, copy in copies:
            if copy != digest:
                raise LogError(
                    f"{path}, line {number}: episode {record['episode_id']!r} is logged again "
                    f"with different content (first at line {first}); which one holds?"
                )
        if not again:
            return


class EpisodeLog(Sequence[dict[str, Any]]):
    """A run's episode records as a sequence that reads ``episodes.jsonl`` when first used.

    Indexing, ``len`` and iteration read and check the whole log once (`read_episodes`),
    then hold its records sorted by episode id, as a list would; `stream` reads them one
    at a time in the file's order and holds none (what a run's summary uses, so a run of
    millions of episodes is summarised without holding them). Compares equal to any
    sequence of the same records.
    """

    def __init__(self, path: str | os.PathLike[str], plan: RunPlan):
        self.path = Path(path)
        self.plan = plan
        self._records: list[dict[str, Any]] | None = None

    def stream(self) -> Iterator[dict[str, Any]]:
        """The checked records one at a time, in the file's order (`iter_episodes`).

        Raises:
            FileNotFoundError: The log is gone (the run directory was removed before its
                episodes were first read): never an empty run.
        """
        if not self.path.exists():  # (a directory or a FIFO: its reader says what it is)
            link = " (a link to nothing)" if self.path.is_symlink() else ""
            raise FileNotFoundError(
                f"The run's episode log {self.path} is missing{link}: a result's episodes are "
                "read from it on first use (list(result.episodes) keeps a copy before the run "
                "directory is removed)"
            )
        return iter_episodes(self.path, self.plan)

    def _loaded(self) -> list[dict[str, Any]]:
        if self._records is None:
            self._records = sorted(self.stream(), key=lambda e: e["episode_id"])
        return self._records

    def __len__(self) -> int:
        return len(self._loaded())

    def __getitem__(self, index: Any) -> Any:
        return self._loaded()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._loaded())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return self._loaded() == list(other)

    __hash__ = None  # type: ignore[assignment]  # (mutable, like a list)

    def __repr__(self) -> str:
        return f"EpisodeLog({str(self.path)!r})"


def read_steps(
    path: str | os.PathLike[str], episodes: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The checked step records of ``episodes`` (episodes that ran) from a ``steps.jsonl``,
    by episode id and turn. Each episode must have one step record per turn it used;
    steps of other episodes are skipped."""
    path = Path(path)
    used = {e["episode_id"]: e["turns_used"] for e in episodes}
    rows: dict[str, list[dict[str, Any]]] = {episode_id: [] for episode_id in used}
    for _, _, record in iter_records(path, step_problem):
        if record is not None and record["episode_id"] in rows:
            rows[record["episode_id"]].append(record)
    steps = []
    for episode_id in sorted(rows):
        turns = sorted(s["turn"] for s in rows[episode_id])
        if turns != list(range(1, used[episode_id] + 1)):
            raise LogError(
                f"{path}: episode {episode_id!r} has step records for turns {_show(turns)}, "
                f"expect turns 1 to {used[episode_id]} (its turns_used), once each"
            )
        steps += sorted(rows[episode_id], key=lambda s: s["turn"])
    return steps


def _step_lines(
    path: Path, plan: RunPlan, done: Collection[str], kept: dict[str, list[int]] | None = None
) -> Iterator[tuple[bytes, bool]]:
    """Each line of ``steps.jsonl`` and whether resume keeps it: a step of a complete
    episode, once (counted in ``kept`` once every line is read: episode id -> [steps kept,
    last turn]). A line it cannot account for raises `LogError`.

    A team member's step belongs to its ``team_episode_id`` (its own ``episode_id`` is
    ``f"{team_episode_id}#{agent}"``). What it holds is a hash of each kept line, in an array
    per episode by turn (8 bytes a step, where a dict of (episode, turn) keys took ~250):
    resume of a long run held more than the run itself."""
    # (a turn past the longest budget is in no complete episode's count; such odd ones go
    # in a dict, so a hostile turn number allocates nothing)
    longest = max(plan.budgets, default=0)
    hashes: dict[str, array] = {}  # episode id -> its kept lines' hashes by turn (0: none)
    beyond: dict[tuple[str, int], int] = {}
    for number, line, record in iter_records(path, lambda r: step_problem(r, key_only=True)):
        if record is None:  # a torn last line
            yield line, False
            continue
        episode_id, turn = record["episode_id"], record["turn"]
        owner = record.get("team_episode_id", episode_id)
        if owner not in done:  # (done ones are planned)
            if not plan.has(owner):
                raise LogError(
                    f"{path}, line {number}: Expect `episode_id` to be one of the run's "
                    f"episodes (run.json), got {_show(owner)}"
                )
            yield line, False  # a step of an episode that never completed
            continue
        digest = hash(line) or 1
        if turn <= longest:
            turns = hashes.get(episode_id)
            if turns is None:
                turns = hashes[episode_id] = array("q")
            if len(turns) < turn:
                turns.frombytes(bytes(turns.itemsize * (turn - len(turns))))
            first = turns[turn - 1]
            if not first:
                turns[turn - 1] = digest
        else:
            first = beyond.setdefault((episode_id, turn), 0)
            if not first:
                beyond[(episode_id, turn)] = digest
        if not first:
            yield line, True
        elif first != digest:
            raise LogError(
                f"{path}, line {number}: step {turn} of episode {episode_id!r} is logged again "
                f"with different content (first at line {_first_step_line(path, record)}); "
                "which one holds?"
            )
        else:  # an identical copy
            yield line, False
    if kept is not None:
        for episode_id, turns in hashes.items():
            logged = [turn for turn, digest in enumerate(turns, 1) if digest]
            kept[episode_id] = [len(logged), logged[-1]]
        for episode_id, turn in beyond:
            count = kept.setdefault(episode_id, [0, 0])
            count[0], count[1] = count[0] + 1, max(count[1], turn)


def _first_step_line(path: Path, step: Mapping[str, Any]) -> int:
    """The number of the first line of ``path`` that logs ``step``'s episode and turn (read
    again for an error's sake, rather than held for every step)."""
    key = (step["episode_id"], step["turn"])
    for number, _, record in iter_records(path, lambda r: step_problem(r, key_only=True)):
        if record is not None and (record["episode_id"], record["turn"]) == key:
            return number
    raise AssertionError("unreachable: the step was read from this file")


def _kept_prefix(lines: Iterable[tuple[bytes, bool]]) -> tuple[int | None, bool]:
    """How much of a log resume keeps, read line by line (each is checked on the way): the
    bytes of the lines kept when every line dropped comes after them (None when one is
    dropped before a kept one), and whether every line is kept."""
    size, dropped, prefix = 0, False, True
    for line, kept in lines:
        if not kept:
            dropped = True
        elif dropped:
            prefix = False
        else:
            size += len(line)
    return (size if prefix else None), not dropped


def _rewrite(path: Path, lines: Iterable[bytes]) -> None:
    """Replace ``path`` with ``lines`` at once (a kill leaves the old file or the new one).
    A symlink at ``path`` is replaced, never written through (it may point at another run's
    log), and the temporary file is new (``x``: never one planted in its place)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with naming_errors(path, tmp):
            with tmp.open("xb") as f:
                f.writelines(lines)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
    finally:
        # (a read-only file system refuses the removal too: its error hid the first one)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _named(exc: OSError, path: Path, tmp: Path | None = None, hint: str = "") -> OSError | None:
    """``exc``, raised writing ``path`` (or its temporary ``tmp``), as an error that names
    ``path`` (with ``hint`` after its reason); None for one to raise as it is: one with no
    errno, or about another file."""
    named = {str(name) for name in (exc.filename, exc.filename2) if name is not None}
    if exc.errno is None or (named and (tmp is None or str(tmp) not in named)):
        return None
    return OSError(exc.errno, f"{exc.strerror or os.strerror(exc.errno)}{hint}", str(path))


@contextlib.contextmanager
def naming_errors(path: Path, tmp: Path | None = None, hint: str = "") -> Iterator[None]:
    """An `OSError` raised in the block, writing ``path`` (or its temporary ``tmp``), raised
    as one that names ``path``: a failed write to an open file (a full disk) names no file,
    and one about the temporary names a file the caller never asked for."""
    try:
        yield
    except OSError as exc:
        named = _named(exc, path, tmp, hint)
        if named is None:
            raise
        raise named from exc


def write_json(path: str | os.PathLike[str], data: Any, **dumps_options: Any) -> None:
    """Replace ``path`` with ``json.dumps(data, **dumps_options)`` and a newline, at once, as
    `write_jsonl` does (a run's or a probe's ``.json`` files)."""
    _rewrite(Path(path), [(json.dumps(data, **dumps_options) + "\n").encode()])


def repair_logs(out: Path, plan: RunPlan) -> set[str]:
    """Keep only whole, complete episodes in the logs of ``out``; return their ids.

    Everything is read and checked before anything is removed: a line that resume
    cannot account for (see the module doc) raises `LogError` and changes nothing.
    """
    episodes_path, steps_path = out / EPISODES_FILE, out / STEPS_FILE
    try:
        episodes, clean = _resume_scan(episodes_path, plan)
        # An episode that failed to run is tried again: its record goes.
        done = {k for k, (_, _, members) in episodes.items() if members is not None}
        counts: dict[str, list[int]] = {}
        steps_kept = _kept_prefix(_step_lines(steps_path, plan, done, counts))
        if plan.steps:
            _check_steps_kept(episodes_path, steps_path, episodes, counts)
    except LogError as exc:
        # (a problem of a whole file, a link to nothing or an episode's lost steps, names no line)
        what = "that line" if ", line " in str(exc) else "what it names"
        raise LogError(
            f"Cannot resume the run in {out}: {exc}. Resume deletes nothing it cannot account "
            f"for: fix or remove {what}, or start afresh (--overwrite / overwrite=True)."
        ) from None
    kept_size, all_kept = steps_kept
    if all_kept and _ends_whole(steps_path) and not steps_path.is_symlink():
        pass
    elif kept_size is not None and not steps_path.is_symlink():
        # (steps dropped at the end only, as a kill or a full disk leaves them: cut in place,
        # with no copy of the log, so a resume after a full disk needs no room for one; a
        # symlink is rewritten, never written through: it may point at another run's log)
        with naming_errors(steps_path):
            os.truncate(steps_path, kept_size)
            if not _ends_whole(steps_path):  # (the newline an editor stripped)
                with open_regular(steps_path, "a") as f:
                    f.write("\n")
    else:
        _rewrite(
            steps_path, (_ended(line) for line, kept in _step_lines(steps_path, plan, done) if kept)
        )
    # (a linked log is copied into a file of the run's own: appending wrote through the
    # link into another run's log, past its lock)
    linked = episodes_path.is_symlink()
    if not clean or len(done) != len(episodes) or not _ends_whole(episodes_path) or linked:
        _rewrite(episodes_path, _kept_episode_lines(episodes_path, plan, episodes))
    return done


def _resume_scan(
    path: Path, plan: RunPlan
) -> tuple[dict[str, tuple[int, int, list[tuple[str, int]] | None]], bool]:
    """What resume needs of an episode log, holding no record (it held every one): by
    episode id, in the file's order, its first line's number and hash, and whose
    step records it accounts for (`_members`, an empty list in a run without steps; None
    for an episode that failed to run); and whether the file is clean: no torn last line,
    no record twice. A copy with other content raises `LogError`."""
    episodes: dict[str, tuple[int, int, list[tuple[str, int]] | None]] = {}
    again: dict[str, list[tuple[int, bytes]]] = {}  # id -> (line, digest) of each later copy
    clean = True
    for number, line, record in iter_records(path, lambda r: episode_problem(r, plan)):
        if record is None:
            clean = False
            continue
        episode_id, digest = record["episode_id"], hash(line)
        first = episodes.get(episode_id)
        if first is not None:
            clean = False  # a copy: dropped if identical
            if first[1] != digest:  # (other bytes may still be the same record)
                again.setdefault(episode_id, []).append((number, _digest(record)))
            continue
        members = None
        if not record.get("failed_to_run"):
            members = _members(path, number, record) if plan.steps else []
        episodes[episode_id] = (number, digest, members)
    if again:
        _check_copies(path, plan, again)
    return episodes, clean


def _kept_episode_lines(
    path: Path, plan: RunPlan, episodes: dict[str, tuple[int, int, list[tuple[str, int]] | None]]
) -> Iterator[bytes]:
    """The lines of the episode log at ``path`` that resume keeps (``episodes``, from
    `_resume_scan`): each complete episode's first line, ended."""
    for number, line, record in iter_records(path, lambda r: episode_problem(r, plan)):
        if record is not None:
            first, _, members = episodes[record["episode_id"]]
            if first == number and members is not None:
                yield _ended(line)


def _ends_whole(path: Path) -> bool:
    """Whether the log at ``path`` is missing, empty or ends with a newline: a resumed run's
    first line is then a line of its own."""
    try:
        with open_regular(path) as f:
            size = f.seek(0, os.SEEK_END)
            return size == 0 or (f.seek(size - 1), f.read(1))[1] == b"\n"
    except FileNotFoundError:
        return True


def _ended(line: bytes) -> bytes:
    return line if line.endswith(b"\n") else line + b"\n"


def _check_steps_kept(
    episodes_path: Path,
    steps_path: Path,
    episodes: dict[str, tuple[int, int, list[tuple[str, int]] | None]],
    counts: dict[str, list[int]],
) -> None:
    """`LogError` for a complete episode without a step record for each turn it used: its
    steps were lost after it was logged (a step line cut or removed, the step log deleted),
    which no kill leaves (steps are written before their episode). The resumed run kept the
    episode and finished without a word, its step log short of an uninterrupted run's."""
    for number, _, members in episodes.values():  # (in the file's order)
        for member, used in members or ():
            count, last = counts.get(member, (0, 0))
            if count != used or last > used:
                raise LogError(
                    f"{episodes_path}, line {number}: episode {member!r} is logged complete, "
                    f"but {steps_path} holds step records for {count} of its turns (the last "
                    f"{last}), expect turns 1 to {used} (its turns_used): they were lost after "
                    "it was logged (remove this line to run the episode again)"
                )


def _members(path: Path, number: int, record: dict[str, Any]) -> list[tuple[str, int]]:
    """Whose step records an episode record accounts for, with their turns: its own; a team
    episode's, each member's but the house's (``f"{team_episode_id}#{role}"``)."""
    roles = record.get("roles")
    if roles is None:
        return [(record["episode_id"], record["turns_used"])]
    house = record.get("house") or ()
    if not isinstance(roles, dict) or not isinstance(house, (list, tuple)) or not all(
        isinstance(r, dict) and is_int(r.get("turns_used")) and r["turns_used"] >= 0
        for r in roles.values()
    ):  # fmt: skip
        raise LogError(
            f"{path}, line {number}: Expect `roles` to map each role to its record, with its "
            f"turns_used, and `house` to list roles, got {_show(roles)}"
        )
    return [
        (f"{record['episode_id']}#{role}", int(r["turns_used"]))
        for role, r in roles.items()
        if role not in house
    ]


#: What an error writing a run's log adds: nothing written before is lost.
_KEPT = " (the episodes logged before are kept: free space or fix the cause, then rerun to resume)"


class LogWriter:
    """Appends finished episodes to the logs: step lines first, then the episode line.

    A failed write (a full disk) raises an `OSError` naming the log; the logs then end
    with at most a torn line and the steps of an episode without its episode line, which
    resume drops (`repair_logs`). A log removed while the run writes it (its directory
    deleted) raises `FileNotFoundError` at the episode after: its records would be lost.
    """

    def __init__(self, out: Path):
        self._paths = (out / STEPS_FILE, out / EPISODES_FILE)
        self._failed = False
        self._episodes = open_regular(out / EPISODES_FILE, "a")
        try:
            self._steps = open_regular(out / STEPS_FILE, "a")
        except BaseException:
            self._episodes.close()
            raise

    def write(self, episode: dict[str, Any], steps: list[dict[str, Any]] | str) -> None:
        if steps:
            self._append(
                0, steps if isinstance(steps, str) else "".join(dumps(s) + "\n" for s in steps)
            )
        self._append(1, dumps(episode) + "\n")
        for f, path in zip((self._steps, self._episodes), self._paths, strict=True):
            if os.fstat(f.fileno()).st_nlink == 0:  # (the files open are no longer the logs)
                self._failed = True
                raise FileNotFoundError(
                    errno.ENOENT,
                    "The run's log was removed during the run (its directory deleted?): the "
                    "episodes played since are lost, and the run stops here",
                    str(path),
                )

    def _append(self, which: int, text: str) -> None:
        f = (self._steps, self._episodes)[which]
        self._failed = True  # (until the write is done: an error leaves it so)
        with naming_errors(self._paths[which], hint=_KEPT):
            f.write(text)
            f.flush()
        self._failed = False

    def close(self) -> None:
        """Close both logs. After a failed write, what it left unwritten is dropped (the
        error said so: resume drops the torn episode); else an error closing one (its last
        lines not written) names it."""
        errors = []
        for f, path in zip((self._steps, self._episodes), self._paths, strict=True):
            try:
                f.close()
            except OSError as exc:
                errors.append(_named(exc, path, hint=_KEPT) or exc)
        if errors and not self._failed:
            raise errors[0]


#: Settings run.json has held only since a later release (a team run's ``grants`` and
#: ``house``, derived from its agents): a run.json without one is resumed as if it held
#: today's value.
_ADDED_SETTINGS = ("grants", "house")


#: How deep below a folder of runs `run_dirs_below` looks (labels with a slash nest a run,
#: at most `MAX_LABEL_PARTS` deep).
MAX_RUN_DEPTH = MAX_LABEL_PARTS


def folders_below(root: str | os.PathLike[str]) -> Iterator[Path]:
    """The folders below ``root`` (``root`` itself not included), level by level to
    `MAX_RUN_DEPTH`, each sorted: a run's folder (it holds ``run.json`` or logs) is given
    but not looked into (its files are its own), hidden folders are skipped, and a folder
    reached twice (a link round a loop) is given once. A folder that cannot be listed, and
    folders deeper than `MAX_RUN_DEPTH`, are warned of (`UserWarning`): runs in them are
    not given, and a report without them said nothing."""
    seen: set[Path] = set()
    level = [Path(root)]
    for depth in range(MAX_RUN_DEPTH + 1):
        below = []
        for folder in level:
            try:
                children = sorted(
                    p for p in folder.iterdir() if not p.name.startswith(".") and p.is_dir()
                )
            except OSError as exc:  # (unreadable: its runs cannot be read either)
                warnings.warn(
                    f"Cannot look for runs in {folder}: {exc.strerror or exc}; any there are "
                    "left out",
                    UserWarning,
                    stacklevel=1,  # (this line: a report walks the folders twice, one warning)
                )
                continue
            if children and depth == MAX_RUN_DEPTH:
                warnings.warn(
                    f"Did not look for runs in the folders of {folder}: they are more than "
                    f"{MAX_RUN_DEPTH} folders below {root}; any there are left out",
                    UserWarning,
                    stacklevel=1,
                )
                continue
            for child in children:
                try:
                    real = child.resolve()
                except (OSError, RuntimeError):  # (a link round a loop)
                    continue
                if real in seen:
                    continue
                seen.add(real)
                yield child
                if not any(present(child / name) for name in (RUN_FILE, EPISODES_FILE)):
                    below.append(child)
        level = below


def run_dirs_below(root: str | os.PathLike[str]) -> tuple[list[Path], list[Path]]:
    """The run directories below ``root`` (`folders_below`: at any depth to `MAX_RUN_DEPTH`),
    sorted, and the folders below it that hold logs but no ``run.json`` (a run that lost it)."""
    runs: list[Path] = []
    lost: list[Path] = []
    for folder in folders_below(root):
        if present(folder / RUN_FILE):
            runs.append(folder)
        elif present(folder / EPISODES_FILE):
            lost.append(folder)
    return sorted(runs), sorted(lost)


def present(path: Path) -> bool:
    """Whether ``path`` is there, as a file or as a link that leads nowhere (to nothing, or
    round a loop: its reader names it; `Path.exists` said no, and a run was passed over)."""
    return path.exists() or path.is_symlink()


def prepare_run_dir(
    out: Path,
    config: Mapping[str, Any],
    overwrite: bool,
    check: Callable[[dict[str, Any]], Any] | None = None,
    files: Iterable[str] = (EPISODES_FILE, STEPS_FILE),
) -> None:
    """Create ``out`` and its ``run.json`` holding ``config``, or check that the run already
    there has the same configuration (``check`` validates the one on disk, see
    `read_config_dict`); ``overwrite`` starts afresh, removing ``run.json``, ``files`` and
    the report made of them (`REPORT_FILES`, `REPORT_HEATMAPS`: until the new run's own, it
    described the old run beside the new ``run.json``, and the old labels' heatmaps stayed).
    Logs (``files``) without a ``run.json`` are refused: their settings cannot be told, and
    resuming would take their episodes in as this run's."""
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    # As run.json will read back: a tuple is a list, an int key a string (the same call
    # again must find the same settings there).
    config = json.loads(json.dumps(dict(config)))
    if overwrite:
        for name in (RUN_FILE, *files, *REPORT_FILES):
            (out / name).unlink(missing_ok=True)
        for heatmap in out.glob(REPORT_HEATMAPS):
            heatmap.unlink(missing_ok=True)
    if run_file.exists():
        try:
            previous = read_config_dict(run_file, check)
        except LogError as exc:
            raise LogError(
                f"{exc}. Cannot tell whether the run in {out} has the same settings: fix "
                "run.json, or choose a new output directory (or pass overwrite=True / --overwrite)."
            ) from None
        # (a setting recorded since: a run.json written before has none, and resumes)
        previous.update(
            {k: config[k] for k in _ADDED_SETTINGS if k in config and k not in previous}
        )
        if previous != config:
            diff = sorted(
                k for k in set(previous) | set(config) if previous.get(k) != config.get(k)
            )
            raise ValueError(
                f"{out} holds a run with a different configuration (differs in: "
                f"{', '.join(diff)}). Resume only with the same settings, or choose "
                "a new output directory (or pass overwrite=True / --overwrite)."
            )
    else:
        logs = [name for name in files if (out / name).is_file()]
        if logs:
            raise LogError(
                f"{out} holds {' and '.join(logs)} but no {RUN_FILE}. Cannot tell whether the "
                f"run in {out} has the same settings: restore its {RUN_FILE}, or choose a new "
                "output directory (or pass overwrite=True / --overwrite)."
            )
        write_json(run_file, config, indent=2)


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> None:
    """Replace ``path`` with ``records``, one JSON line each, at once (a kill leaves the old
    file or the new one, as does a record that is not a mapping)."""
    # (a mapping or a str passed as the records was written a key or a character a line)
    if isinstance(records, (str, bytes, bytearray, Mapping)):
        raise TypeError(
            "Expect `records` to be an iterable of records (mappings), got "
            f"{type(records).__name__} {brief(records)}"
        )

    def lines() -> Iterator[bytes]:
        for i, record in enumerate(records):
            if not isinstance(record, Mapping):
                raise TypeError(
                    f"Expect every record to be a mapping, got {type(record).__name__} "
                    f"{brief(record)} at index {i}"
                )
            yield (dumps(record) + "\n").encode()

    _rewrite(Path(path), lines())
