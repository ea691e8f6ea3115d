"""The record schema: what a step, an episode and an injected error record hold.

The evaluator, the reports and every benchmark read these names: add fields,
never rename. Strings are capped (`cap_text`) where records are made, and a
record is written as one compact JSON line (`dumps`).
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Literal, TypedDict

from turnbudget._checks import is_real

__all__ = [
    "BUDGET_COUNTERS",
    "MAX_COUNT",
    "MAX_RECORD_TEXT",
    "EpisodeRecord",
    "InjectedError",
    "OutcomeRecord",
    "StepRecord",
    "cap_strings",
    "cap_text",
    "dumps",
    "encodes_alike",
    "feasibility",
    "format_episode_id",
    "usage_number",
]

#: The largest count a record may hold (turns, steps, errors): far above any real
#: episode, and small enough that sums over a run fit in 64 bits.
MAX_COUNT = 2**31 - 1

#: The counters of an episode record's ``budget_counts`` (one list per budget T, in this
#: order: the episode's steps cut at T, counted by `RecordStepOutcomes` as the episode runs
#: when `turnbudget.eval` asks for its budgets).
BUDGET_COUNTERS = (
    "turns", "judged", "optimal", "on_track", "optimal_on_track", "after_error",
    "optimal_after_error", "errors_self", "errors_injected", "errors_injected_increasing",
    "wasted", "invalid", "errors_opened", "recovered", "recover_turns",
)  # fmt: skip


def format_episode_id(env_id: str, seed: int, rep: int, turn_budget: int) -> str:
    """The id of a planned episode: what its records carry.

    Example:
        >>> format_episode_id("turnbudget/Maze-Easy-v0", 3, 0, 20)
        'turnbudget/Maze-Easy-v0|seed=3|rep=0|T=20'
    """
    return f"{env_id}|seed={seed}|rep={rep}|T={turn_budget}"


def feasibility(
    optimal_length: int | None, turn_budget: int | None, first_success_turn: int | None
) -> dict[str, Any]:
    """An episode record's ``feasible`` and ``step_regret``, from the oracle's optimal length.

    ``feasible``: the task fitted in the budget (its optimal length at reset
    is at most T), so a failure was not made certain by the budget alone;
    ``step_regret``: for a success, the turns it took beyond the optimal
    length (None for a failure). Both are None without the oracle.

    Example:
        >>> feasibility(8, 10, 9), feasibility(12, 10, None), feasibility(None, 10, 4)
        ({'feasible': True, 'step_regret': 1}, {'feasible': False, 'step_regret': None}, {'feasible': None, 'step_regret': None})
    """
    if optimal_length is None or turn_budget is None:
        return {"feasible": None, "step_regret": None}
    regret = None if first_success_turn is None else int(first_success_turn) - int(optimal_length)
    return {"feasible": int(optimal_length) <= int(turn_budget), "step_regret": regret}


class InjectedError(TypedDict):
    """``info["injected_error"]`` on a turn where an error was scheduled (the key is absent otherwise)."""

    kind: str  # "slip" | "transient" | "setback"
    turn: int  # 1-based turn at whose start it fired
    applied: bool  # False when it could not apply (a slip with no safe alternative)
    distance_before: int | None  # distance to goal at the start of the turn
    distance_after: int | None  # right after the injection (a slip: after the replaced command)
    narration: str  # what the agent was told
    replaced_action: str | None  # a slip's substitute command


class StepRecord(TypedDict):
    """One step. ``distance_*`` and ``optimal`` are None without the oracle."""

    record: Literal["step"]
    episode_id: str  # f"{env_id}/{seed}/{episode_index}" (env_index inserted in vector envs) or options["episode_id"]
    env_id: str
    env_index: int | None  # the sub-env index in a vector env
    seed: int | None  # the seed passed to this episode's reset (None: continued stream)
    episode_index: int  # episodes this wrapper has started before this one
    turn: int  # 1-based
    turn_budget: int
    action: str
    valid_action: bool
    optimal: bool | None  # the command starts a shortest plan from the state seen (None: not
    # judged: no oracle, or no plan can win from that state)
    distance_before: int | None  # at the start of the turn: the state the agent saw
    distance_after: int | None
    # The injection's and the command's effects on the distance, judged apart:
    distance_injected: (
        int | None
    )  # after a setback fired, before the command (else distance_before)
    injection_increased: bool  # an injected error that raised the distance (or made it unsolvable)
    command_effect: int | None  # distance change caused by the agent's command (None: not executed)
    wasted: bool  # a valid, executed, non-optimal command that left the distance unchanged
    progress: float
    reward: float  # the env's own reward (wrap ProcessReward outside this wrapper)
    injected_error: (
        InjectedError | None
    )  # from InjectErrors; an error fires at the start of the turn
    error_self: bool  # a non-optimal command (for what the agent saw) that increased the distance
    errors_opened: int  # distance-increasing events this turn (injected, or after the command)
    recoveries: list[int]  # turns_to_recover of each error recovered this turn
    phase: (
        str  # "on_track" | "after_error" (right after a distance-increasing error) | "recovering"
    )
    terminated: bool
    truncated: bool
    won: bool


class EpisodeRecord(TypedDict):
    """One finished episode (written after its steps)."""

    record: Literal["episode"]
    episode_id: str
    env_id: str
    env_index: int | None
    seed: int | None
    episode_index: int
    success: bool
    first_success_turn: int | None
    turns_used: int
    turn_budget: int
    initial_distance: int | None  # optimal solution length at reset
    final_distance: int | None
    # From the oracle (`feasibility`; readers treat them as optional: older records lack them):
    feasible: bool | None  # the optimal length fits in the budget (d* <= T)
    step_regret: int | None  # a success's turns beyond d* (None: a failure)
    n_errors_injected: int  # injected errors that applied (any kind)
    n_errors_injected_increasing: int  # ... of which raised the distance
    n_errors_self: int  # non-optimal commands (for the state seen) that increased the distance
    n_wasted: int  # valid, executed, non-optimal commands that left the distance unchanged
    n_invalid: int  # commands that were not admissible (a spent turn)
    n_recovered: int  # distance-increasing errors after which the distance came back
    n_unrecovered: int  # ... and those still open at the episode's end
    turns_to_recover: list[int]  # per recovered error, turns from the error to the recovery
    optimal_step_rate: float | None
    optimal_step_rate_on_track: float | None  # steps taken with no open error
    optimal_step_rate_after_error: float | None  # steps right after an error
    n_steps_on_track: int
    n_steps_after_error: int
    # The integer counts behind the three rates (judged = steps with an oracle answer).
    n_steps_judged: int
    n_optimal_steps: int
    n_optimal_on_track: int
    n_optimal_after_error: int


OutcomeRecord = StepRecord | EpisodeRecord

#: The most characters a recorded string keeps (a command, an agent's note such as an
#: LLM's raw reply): a longer one keeps its start and end around a marker that gives
#: its full length and the start of its SHA-256, so a few huge strings cannot blow up
#: the records (the game itself treats a long command as a spent turn).
MAX_RECORD_TEXT = 4096


def cap_text(text: str, limit: int = MAX_RECORD_TEXT) -> str:
    """``text``, or when it is longer than ``limit`` characters, its start and end around a
    marker with its length and hash (``limit`` characters in all).

    Example:
        >>> cap_text("go north")
        'go north'
        >>> cap_text("go north " * 10_000, limit=80)
        'go north g [... 90000 characters in all, sha256 43ef6e8b6cd1272d ...]  go north '
    """
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    marker = f" [... {len(text)} characters in all, sha256 {digest} ...] "
    keep = max(0, limit - len(marker))
    return text[: keep - keep // 2] + marker + text[len(text) - keep // 2 :]


def cap_strings(value: Any, limit: int = MAX_RECORD_TEXT) -> Any:
    """``value`` with every string in it (keys too, in dicts and lists) cut by `cap_text`."""
    if isinstance(value, str):
        return cap_text(value, limit)
    if isinstance(value, Mapping):
        return {cap_text(str(k), limit): cap_strings(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [cap_strings(v, limit) for v in value]
    return value


#: Built once: ``json.dumps`` with separators builds a new encoder per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"))
# ``JSONEncoder.encode`` still builds its C encoder on every call; a record is encoded
# once per step, so the C encoder is built here once (the same output; records hold no
# cycles, so it skips the cycle check). None where the C accelerator is missing.
_C_ENCODE = (
    None
    if json.encoder.c_make_encoder is None
    else json.encoder.c_make_encoder(
        None,
        _ENCODER.default,
        json.encoder.encode_basestring_ascii,
        None,
        ":",
        ",",
        False,
        False,
        True,
    )
)


# orjson (the ``fast`` extra) encodes a step record in a third of the C encoder's time, and
# encoding is the largest cost `evaluate` adds per turn (issue 26). It is used only where its
# text is the standard library's byte for byte, so a log never depends on what is installed:
# values of exact JSON types only (orjson would also write dataclasses, dates, UUIDs and enums,
# which json.dumps refuses), every float 0 or in [1e-4, 1e16) in size (the two write other
# floats, NaN and infinities differently), ASCII text but DEL (the standard library escapes
# the rest), ints of 64 bits and str keys (orjson refuses others: the standard library then
# writes the record, or raises as before).
try:
    import orjson as _orjson
except ImportError:  # (the fast extra is not installed)
    _orjson = None

_PLAIN_ATOMS = frozenset({str, int, bool, type(None)})
_DICT_ONLY = frozenset({dict})
_FLOATS_OR_NONE = frozenset({float, type(None)})
# Types whose false values (0.0 and -0.0, empty containers) both encoders write alike.
_FALSE_ALIKE = _PLAIN_ATOMS | {float, list, tuple, dict}
# Values at the edges of what the fast path takes: a release of orjson that writes any of
# them otherwise is not used at all (checked once, at import).
_PROBES = [
    0.0, -0.0, 1e-4, -1e-4, 0.000123, 0.1, 1 / 3, 2.5, 1e15, 9999999999999998.0,
    123456789012345.67, 2**63 - 1, -(2**63), 2**64 - 1, True, False, None,
    "\x00\x1f \"\\/~<>&", [], {}, {"a": [1, 2.5, None], "b": {"c": "d"}}, (1, "x"),
]  # fmt: skip


def _orjson_agrees() -> bool:
    try:
        return all(
            _orjson.dumps(v).decode() == json.dumps(v, separators=(",", ":")) for v in _PROBES
        )
    except Exception:  # (any failure: keep to the standard library)
        return False


if _orjson is not None and not _orjson_agrees():
    _orjson = None

# orjson's options in `_lines`: it refuses (TypeError, and the standard library writes the
# record) a subclass of str, int, dict or list, a dataclass and a date, so a column the caller
# vouches for (``built_keys``) needs no look at its types: only a float, an enum or a UUID
# would be written otherwise, and a vouched column holds none.
_LINE_OPTIONS = 0
if _orjson is not None:
    _LINE_OPTIONS = (
        _orjson.OPT_APPEND_NEWLINE | _orjson.OPT_PASSTHROUGH_SUBCLASS
        | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
    )  # fmt: skip


def _plain(values: Any) -> bool:
    """Whether orjson writes ``values`` (nested lists, tuples and dicts included) as the
    standard library does."""
    for v in values:
        kind = type(v)
        if kind in _PLAIN_ATOMS:
            continue
        if kind is float:
            if not (v == 0.0 or 1e-4 <= v < 1e16 or -1e16 < v <= -1e-4):  # (NaN fails all)
                return False
        elif kind is list or kind is tuple:  # (both write a tuple as an array)
            if v and not _plain(v):
                return False
        elif kind is not dict or (v and not _plain(v.values())):
            return False
    return True


def encodes_alike(values: Iterable[Any]) -> bool:
    """Whether each of ``values`` (nested lists, tuples and dicts included) has a type and,
    for a float, a value that orjson writes as the standard library does: what the caller of
    `dumps_template_lines` vouches for the values under its ``built_keys``. Text and ints are
    not looked at here: the writer itself falls back to the standard library for non-ASCII
    text or DEL (orjson writes them raw) and for ints past 64 bits (orjson refuses them).

    Example:
        >>> encodes_alike([1, "go north", None, [0.5, {"d": 3}]]), encodes_alike([1e-5])
        (True, False)
    """
    return _plain(values)


def dumps(record: Mapping[str, Any]) -> str:
    """One record as a compact JSON line (without the newline): ``json.dumps(record,
    separators=(",", ":"))``, byte for byte, whichever encoder writes it."""
    if type(record) is dict:
        if _orjson is not None:
            try:
                data = _orjson.dumps(record) if _plain(record.values()) else None
            except (TypeError, ValueError, RecursionError):  # big ints, other types, nesting
                data = None
            if data is not None and data.isascii() and b"\x7f" not in data:
                return data.decode()
        if _C_ENCODE is not None:
            return "".join(_C_ENCODE(record, 0))
    return _ENCODER.encode(record)


def dumps_lines(records: Sequence[Mapping[str, Any]]) -> str:
    """Records as JSON lines, each ending in a newline: ``"".join(dumps(r) + "\n" for r in
    records)``, byte for byte, in about three quarters of its instructions for an episode's
    step records (one check per column of values, one join of orjson's bytes)."""
    return _lines(records, frozenset())


def dumps_template_lines(records: Sequence[Mapping[str, Any]], built_keys: AbstractSet[str]) -> str:
    """`dumps_lines` for records made from one template, whose ``built_keys`` the caller
    built itself: an episode's step records in the evaluator (`RecordStepOutcomes` copies one
    dict for each, and builds the values of its ``PLAIN_STEP_KEYS`` as str, int, bool, None
    or lists of ints). Those columns are not checked, which saves about half of the
    checking. The caller vouches for both: every record has the template's keys, and no
    value under ``built_keys`` is a float, an enum or a UUID (nothing else can differ:
    orjson refuses subclasses, dataclasses and dates, and the standard library then writes
    the record). Anything else: `dumps_lines`."""
    return _lines(records, built_keys)


def _lines(records: Sequence[Mapping[str, Any]], built_keys: AbstractSet[str]) -> str:
    # (types taken by map, in C: a generator costs more than the check it makes)
    if (
        _orjson is not None
        and set(map(type, records)) <= _DICT_ONLY
        and _plain_columns(records, built_keys)
    ):
        encode = _orjson.dumps
        try:
            data = b"".join([encode(r, None, _LINE_OPTIONS) for r in records])
        except (TypeError, ValueError, RecursionError):  # big ints, other types, nesting
            data = None
        if data is not None and data.isascii() and b"\x7f" not in data:
            return data.decode()
    return "".join([dumps(r) + "\n" for r in records])


def _plain_columns(records: Sequence[dict[str, Any]], built_keys: AbstractSet[str]) -> bool:
    """`_plain` over every value of ``records`` but those under ``built_keys`` (vouched for by
    the caller of `dumps_template_lines`), a column at a time: the step records of an episode
    share their keys, so most columns hold one plain type (one set of types, in C)."""
    if not records:
        return True
    if len(set(map(len, records))) > 1:  # (zip would drop the longer records' values)
        return all(_plain(r.values()) for r in records)
    width = len(records[0])
    checked = [k for k in records[0] if k not in built_keys] if built_keys else None
    if checked is None or len(checked) == width:
        columns = zip(*map(dict.values, records))
    elif not checked:
        return True
    else:
        getter = operator.itemgetter(*checked)
        try:  # (for one key, itemgetter gives the values themselves: that column)
            columns = zip(*map(getter, records)) if len(checked) > 1 else [[*map(getter, records)]]
        except KeyError:  # (the records do not share their keys: each is checked whole)
            return all(_plain(r.values()) for r in records)
    return all(map(_plain_column, columns))


def _plain_column(column: tuple[Any, ...]) -> bool:
    """`_plain` over one column of values, looking only at the values that can differ."""
    kinds = set(map(type, column))
    if kinds <= _PLAIN_ATOMS:
        return True
    if kinds <= _FLOATS_OR_NONE:  # (a float's judgement is its value's: each value once)
        return _plain(set(column))
    if kinds <= _FALSE_ALIKE:  # (in a step record: rewards, progress, recoveries, errors)
        return _plain(filter(None, column))
    return _plain(column)


def usage_number(value: Any) -> bool:
    """A number an agent's step note may sum: finite and at most 1e15 in size (not a bool).

    Example:
        >>> import numpy as np
        >>> [usage_number(x) for x in (3, 0.25, np.float32(2), True, float("nan"), 10**16, "1")]
        [True, True, True, False, False, False, False]
    """
    return is_real(value) and bool(abs(value) <= 1e15)
