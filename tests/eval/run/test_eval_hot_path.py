"""What the evaluation's per-step work no longer repeats (issue 26), and that the answers stay
the same: oracle queries once per state, a turn's generator only for errors that draw,
records encoded as `json.dumps` would, budget counts as the array version gave them."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import uuid

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnbudget  # noqa: F401 - registers the envs
from turnbudget.agents import make_agent
from turnbudget.eval.analysis import _step_counts, budget_counts
from turnbudget.eval.run.episodes import build_env
from turnbudget.eval.run.plan import make_config
from turnbudget.records import BUDGET_COUNTERS, dumps, dumps_lines, dumps_template_lines, schema
from turnbudget.wrappers import InjectErrors


def _walk(env_id: str, seed: int, turns: int):
    """A random walk's games, one per turn (the same state asked twice in a row)."""
    env = gym.make(env_id)
    _, info = env.reset(seed=seed)
    agent = make_agent("random")
    agent.reset(seed)
    game = env.unwrapped
    for _ in range(turns):
        yield game
        _, _, terminated, truncated, info = env.step(agent.act("", info))
        if terminated or truncated:
            return


def test_keyquest_searches_its_optimal_commands_once_per_state(monkeypatch):
    from turnbudget.envs.native.keyquest import KeyQuest

    calls = []
    successors = KeyQuest._successors

    def counting(self, state):
        calls.append(state)
        return successors(self, state)

    monkeypatch.setattr(KeyQuest, "_successors", counting)
    states = set()
    for game in _walk("turnbudget/KeyQuest-Medium-v0", 3, 60):
        first = game.optimal_actions()
        first.append("mutated by the caller")  # a copy: the memo is not touched
        assert game.optimal_actions() == first[:-1]
        states.add(game._oracle_state())
    assert len(calls) <= len(states)  # was two per turn


def test_maze_optimal_commands_are_built_once_per_room_and_handed_out_as_copies():
    for game in _walk("turnbudget/Maze-Medium-v0", 1, 40):
        room, target = game._room, game.distance_to_goal() - 1
        expected = [
            f"go {d}" for d, step in game._exits(room) if game._distance[room + step] == target
        ]
        first = game.optimal_actions()
        assert first == expected and game._room_optimal[room] == tuple(expected)
        first.clear()
        assert game.optimal_actions() == expected


@pytest.mark.parametrize(
    ("kind", "draws"), [("transient", False), ("slip", True), ("setback", True)]
)
def test_only_errors_that_draw_build_their_turns_generator(monkeypatch, kind, draws):
    built = []
    env = InjectErrors(gym.make("turnbudget/Maze-Medium-v0"), schedule={2: kind})
    turn_rng = env.turn_rng
    monkeypatch.setattr(env, "turn_rng", lambda turn: built.append(turn) or turn_rng(turn))
    _, info = env.reset(seed=0)
    for _ in range(3):
        _, _, _, _, info = env.step(info["admissible_actions"][0])
    assert built == ([2] if draws else [])  # a generator costs more than a Maze step


RECORDS = [
    {"record": "step", "turn": 3, "optimal": None, "progress": 0.25, "reward": 1.0, "won": True},
    {"action": 'say "héllo"\n\t\u2028\\', "recoveries": [1, 2], "event": {"kind": "slip"}},
    {"nan": math.nan, "inf": -math.inf, "big": 10**30, "tiny": 5e-324, "neg": -0.0},
    {"nested": [{"a": [None, True, False]}, [], {}], "unicode": "\U0001f600 \x00"},
    {},
]


# Both encoders: orjson where installed (the fast extra, in dev), the standard library's without.
ENCODERS = ["orjson", "stdlib"]


@dataclasses.dataclass
class _Card:
    name: str


@pytest.fixture(params=ENCODERS)
def encoder(request, monkeypatch):
    if request.param == "stdlib":
        monkeypatch.setattr(schema, "_orjson", None)
    else:
        pytest.importorskip("orjson")
    return request.param


@pytest.mark.parametrize("record", RECORDS)
def test_records_are_encoded_as_json_dumps_would(encoder, record):
    assert dumps(record) == json.dumps(record, separators=(",", ":"))


def test_a_record_json_cannot_encode_still_raises(encoder):
    with pytest.raises(TypeError):
        dumps({"object": object()})
    # orjson would write these; json.dumps refuses them, and so does `dumps`.
    for value in [datetime.date(2026, 1, 1), _Card("Maze"), uuid.UUID(int=7)]:
        with pytest.raises(TypeError):
            dumps({"card": value})


def _step_records(env_id: str, seeds: range, budget: int, errors: float):
    """The step records of a random agent's episode per seed, on the stack `evaluate` builds."""
    config = make_config(
        [env_id], make_agent("random"), ks=[1], ts=[budget], n=1, tasks=1, mode="truncate",
        reveal=None, errors=errors, seed=0, label=None, record_steps=True,
    )  # fmt: skip
    records: list = []
    env = build_env(env_id, config, records.append)
    agent = make_agent("random")
    for seed in seeds:
        records.clear()
        _, info = env.reset(seed=seed, options={"turn_budget": budget, "repeat": 0})
        agent.reset(seed)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(agent.act("", info))
            done = terminated or truncated
        yield [r for r in records if r["record"] == "step"]


def _standard_library_calls(monkeypatch) -> list:
    """Count the records the standard library's encoder writes from here on."""
    calls: list = []
    c_encode = schema._C_ENCODE

    def counted(record, level):
        calls.append(record)
        return c_encode(record, level)

    monkeypatch.setattr(schema, "_C_ENCODE", counted)
    return calls


def test_the_step_records_an_evaluation_writes_take_the_fast_encoder(monkeypatch):
    """The guard lets the records it is for through: an injected error's and plain turns."""
    pytest.importorskip("orjson")
    (steps,) = _step_records("turnbudget/KeyQuest-Medium-v0", range(3, 4), 40, 0.3)
    assert any(s["injected_error"] for s in steps) and any(s["recoveries"] for s in steps)
    calls = _standard_library_calls(monkeypatch)
    for step in steps:
        assert dumps(step) == json.dumps(step, separators=(",", ":"))
    assert calls == []


def test_text_and_floats_the_encoders_write_differently_go_to_the_standard_library(monkeypatch):
    pytest.importorskip("orjson")
    calls = _standard_library_calls(monkeypatch)
    values = [1e-5, 2.5e-8, -1e-300, 1e16, math.nan, math.inf, "é", "\x7f", 2**64, (math.nan,)]
    for value in values:
        record = {"x": [{"y": value}]}
        assert dumps(record) == json.dumps(record, separators=(",", ":"))
        assert calls[-1] is record, value


def test_an_orjson_release_that_writes_a_probe_value_otherwise_is_not_used(monkeypatch):
    """The import-time check `dumps` relies on: it tells a release that formats a float its
    own way from one that matches the standard library."""

    class Standard:
        @staticmethod
        def dumps(value):
            return json.dumps(value, separators=(",", ":")).encode()

    class OwnFloats(Standard):
        @staticmethod
        def dumps(value):
            return Standard.dumps(value).replace(b"0.0001", b"1e-4")

    monkeypatch.setattr(schema, "_orjson", Standard)
    assert schema._orjson_agrees()
    monkeypatch.setattr(schema, "_orjson", OwnFloats)
    assert not schema._orjson_agrees()


_KEYS = st.text(max_size=4)
_ATOMS = (
    st.none() | st.booleans() | st.floats() | st.text(max_size=12)
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(min_value=-1e17, max_value=1e17).map(lambda x: round(x, 3))
)  # fmt: skip
_VALUES = st.recursive(
    _ATOMS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_KEYS, inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(_KEYS, _VALUES, max_size=8))
def test_any_record_is_encoded_as_json_dumps_would(record):
    """Byte for byte, whichever encoder takes it: floats in any range, NaN and infinities,
    big ints, any text, tuples and nesting."""
    assert dumps(record) == json.dumps(record, separators=(",", ":"))
    schema_orjson = schema._orjson
    try:
        schema._orjson = None
        assert dumps(record) == json.dumps(record, separators=(",", ":"))
    finally:
        schema._orjson = schema_orjson


def _json_lines(records) -> str:
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


# An episode's step records share their keys: records drawn from one key set, as columns.
_EPISODES = st.lists(_KEYS, unique=True, max_size=6).flatmap(
    lambda keys: st.lists(st.fixed_dictionaries({k: _VALUES for k in keys}), max_size=6)
)


@settings(max_examples=300, deadline=None)
@given(records=_EPISODES | st.lists(st.dictionaries(_KEYS, _VALUES, max_size=5), max_size=5))
def test_any_records_are_written_as_json_lines_as_json_dumps_would(records):
    """`dumps_lines` checks a column at a time: a value in any column that orjson writes
    otherwise (a float out of range, NaN, text, a big int, nested) sends it to `dumps`."""
    assert dumps_lines(records) == _json_lines(records)
    schema_orjson = schema._orjson
    try:
        schema._orjson = None
        assert dumps_lines(records) == _json_lines(records)
    finally:
        schema._orjson = schema_orjson


def test_one_odd_value_in_an_episode_sends_only_its_record_to_the_standard_library(monkeypatch):
    pytest.importorskip("orjson")
    (steps,) = _step_records("turnbudget/Maze-Medium-v0", range(5, 6), 40, 0.3)
    calls = _standard_library_calls(monkeypatch)
    assert dumps_lines(steps) == _json_lines(steps)
    assert calls == []  # an evaluation's step records: orjson, checked a column at a time
    for value in [1e-5, math.nan, "é", 2**64, [math.inf], {"x": -1e17}]:
        odd = [dict(s) for s in steps]
        odd[7]["reward"] = value
        calls.clear()
        assert dumps_lines(odd) == _json_lines(odd), value
        assert calls == [odd[7]], value
    with pytest.raises(TypeError):  # what json.dumps refuses, refused as before
        dumps_lines([*steps, {"card": uuid.UUID(int=7)}])


@pytest.mark.parametrize("column", ["reward", "progress", "recoveries", "injected_error"])
@pytest.mark.parametrize("odd", [1e-5, -1e17, math.nan, [0.0, 1e-5], {"d": [math.inf]}, -0.0])
def test_a_column_is_judged_by_every_value_it_holds(monkeypatch, column, odd):
    """A column's values are looked at once each (floats) or only where true (empty lists,
    None, zeros): an odd value among the repeated or false ones still counts, and so does
    the same NaN object twice."""
    pytest.importorskip("orjson")
    (steps,) = _step_records("turnbudget/Maze-Medium-v0", range(5, 6), 40, 0.3)
    records = [dict(s) for s in steps]
    for i in (3, 9):  # (one object twice: a set of the column keeps it once)
        records[i][column] = odd
    calls = _standard_library_calls(monkeypatch)
    assert dumps_lines(records) == _json_lines(records)
    plain = odd == 0.0  # (-0.0: both encoders write it alike)
    assert calls == ([] if plain else [records[3], records[9]])


def test_vouched_columns_are_not_checked_and_the_lines_stay_json_dumps(monkeypatch):
    """`evaluate` vouches for the columns `RecordStepOutcomes` builds itself (`PLAIN_STEP_KEYS`):
    only the others are checked, the lines are json.dumps' still, and a value orjson refuses
    in a vouched column (a str subclass) sends the episode to the standard library."""
    pytest.importorskip("orjson")
    from turnbudget.wrappers.record_step_outcomes import PLAIN_STEP_KEYS

    (steps,) = _step_records("turnbudget/KeyQuest-Medium-v0", range(3, 4), 40, 0.3)
    assert set(steps[0]) >= PLAIN_STEP_KEYS
    checked = []
    monkeypatch.setattr(schema, "_plain_column", lambda column: checked.append(column) or True)
    assert dumps_template_lines(steps, PLAIN_STEP_KEYS) == _json_lines(steps)
    assert len(checked) == len(steps[0]) - len(PLAIN_STEP_KEYS)
    monkeypatch.undo()

    class Text(str):
        pass

    odd = [dict(s) for s in steps]
    odd[4]["action"] = Text("go north")
    assert dumps_template_lines(odd, PLAIN_STEP_KEYS) == _json_lines(odd)
    # Records that do not share their keys (one checked key renamed): each is checked whole.
    renamed = {("bonus" if k == "reward" else k): v for k, v in steps[1].items()}
    renamed["bonus"] = 1e-5
    records = [steps[0], renamed]
    calls = _standard_library_calls(monkeypatch)
    assert dumps_template_lines(records, PLAIN_STEP_KEYS) == _json_lines(records)
    assert calls == [renamed]


def _array_budget_counts(steps, ts):
    """`budget_counts` as it was (commit 0f24d13): a cumulative NumPy array."""
    width = len(BUDGET_COUNTERS)
    rows = sorted(steps, key=lambda s: s["turn"])
    turns = [s["turn"] for s in rows]
    counts = np.array([_step_counts(s) for s in rows], dtype=np.int64).reshape(-1, width)
    cumulative = np.cumsum(counts, axis=0)
    out = {}
    for t in ts:
        upto = int(np.searchsorted(turns, int(t), side="right"))
        snapshot = cumulative[upto - 1] if upto else np.zeros(width, dtype=np.int64)
        out[str(int(t))] = [int(x) for x in snapshot]
    return out


def test_budget_counts_are_the_array_versions():
    for steps in _step_records("turnbudget/KeyQuest-Medium-v0", range(6), 64, 0.2):
        for ts in ([1, 5, 64], [0, 200], [30]):
            assert budget_counts(steps, ts) == _array_budget_counts(steps, ts)
    assert budget_counts([], [4]) == _array_budget_counts([], [4])


NATIVE_MEDIUM = [
    f"turnbudget/{game}-Medium-v0" for game in ("Maze", "KeyQuest", "Crafting", "Shop", "Sokoban")
]


@pytest.mark.parametrize("env_id", NATIVE_MEDIUM)
@pytest.mark.parametrize("oracle", [True, False])
def test_the_recorder_counts_at_each_budget_what_the_step_records_sum_to(env_id, oracle):
    """`RecordStepOutcomes(budget_counts=...)`, counted as the episode runs, equals
    `budget_counts` of its step records: budgets before, at and past the end, 0, repeated
    and out of order; errors of every kind, episodes that win and that run out."""
    ts = [7, 0, 30, 2, 7, 500, 1]
    env = gym.make(
        env_id, turn_budget=60, errors=0.25, record={"oracle": oracle, "budget_counts": ts}
    )
    agents = [make_agent("random"), make_agent("oracle:0.1")]
    kinds_seen, won = set(), 0
    for seed in range(8):
        agent = agents[seed % 2]
        n = len(env.records)
        _, info = env.reset(seed=seed)
        agent.reset(seed)
        done = False
        while not done:
            info = {**info, "oracle_actions": env.unwrapped.optimal_actions()}
            _, _, terminated, truncated, info = env.step(agent.act("", info))
            done = terminated or truncated
        records = env.records[n:]
        steps, episode = records[:-1], records[-1]
        kinds_seen |= {s["injected_error"]["kind"] for s in steps if s["injected_error"]}
        won += episode["success"]
        assert list(episode["budget_counts"]) == ["7", "0", "30", "2", "500", "1"]
        assert episode["budget_counts"] == budget_counts(steps, ts)
    assert kinds_seen == {"slip", "setback", "transient"}
    assert 0 < won < 8


@pytest.mark.parametrize(
    "bad",
    ["8", [3, -1], [2.5], [True], 8, {"8": 1}, [None], [2**31], range(10**12), iter(range(10**12))],
)
def test_budget_counts_must_be_budgets(bad):
    with pytest.raises(ValueError, match="budget_counts"):
        gym.make("turnbudget/Maze-Easy-v0", record={"budget_counts": bad})


def _full_solve(game, start):
    """KeyQuest's `_solve_from` as it was (commit 0f24d13): the whole closure of ``start``
    searched again, known states or not; the distances it finds, in a fresh dict."""
    from collections import deque

    successors = {start: []}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        nexts = game._next_states(state)
        successors[state] = nexts
        for nxt in nexts:
            if nxt not in successors:
                successors[nxt] = []
                queue.append(nxt)
    predecessors = {s: [] for s in successors}
    for state, nexts in successors.items():
        for nxt in nexts:
            predecessors[nxt].append(state)
    distance = dict.fromkeys(successors)
    frontier = deque(s for s in successors if game._can_deliver(s))
    for state in frontier:
        distance[state] = 1
    while frontier:
        state = frontier.popleft()
        for prev in predecessors[state]:
            if distance[prev] is None:
                distance[prev] = distance[state] + 1
                frontier.append(prev)
    return distance


@pytest.mark.parametrize("env_id", ["turnbudget/KeyQuest-Medium-v0", "turnbudget/KeyQuest-Hard-v0"])
def test_keyquest_solves_only_new_states_and_finds_the_same_distances(env_id, monkeypatch):
    """Setbacks (a dropped key, a door locked again) lead to states the start's search never
    met: the memo then searches only those, and every distance is the full search's."""
    from turnbudget.envs.native.keyquest import KeyQuest

    searched = []
    next_states = KeyQuest._next_states

    def counting(self, state):
        searched.append(state)
        return next_states(self, state)

    monkeypatch.setattr(KeyQuest, "_next_states", counting)
    env = InjectErrors(gym.make(env_id), rate=0.3, kinds=["setback"])
    agent = make_agent("random")
    again = full = 0  # states searched by the later searches of an episode, and by full ones
    for seed in range(4):
        _, info = env.reset(seed=seed)
        first = True
        agent.reset(seed)
        game = env.unwrapped
        done = False
        while not done:
            before = len(searched)
            state = game._oracle_state()
            distance = game.distance_to_goal()
            if len(searched) > before and not game._won:  # a search: check it all
                monkeypatch.setattr(KeyQuest, "_next_states", next_states)
                reference = _full_solve(game, state)
                monkeypatch.setattr(KeyQuest, "_next_states", counting)
                assert all(game._oracle[s] == d for s, d in reference.items())
                if not first:  # (the start's search meets no known state)
                    again, full = again + len(searched) - before, full + len(reference)
                first = False
            elif not game._won:
                assert distance == _full_solve(game, state)[state]
            _, _, terminated, truncated, info = env.step(agent.act("", info))
            done = terminated or truncated
    assert 0 < again < full  # (was the whole closure again, each time)


def _planned_per_turn(schedule, seed, turns):
    """`ErrorSchedule.planned` as it was (commit 5334dd6): the t-th (fires, pick) pair of the
    episode's stream decided at turn t, a fixed error taking precedence."""
    import bisect
    import itertools

    stream = np.random.default_rng([seed, 0])
    draws = stream.random((-(-turns // 64) * 64, 2)).tolist()
    cumulative = list(itertools.accumulate(schedule.probabilities))
    out = []
    for turn in range(1, turns + 1):
        fires, pick = draws[turn - 1]
        if turn in schedule.schedule:
            out.append(schedule.schedule[turn])
        elif fires < schedule.rate:
            index = bisect.bisect_right(cumulative, pick)
            out.append(schedule.kinds[min(index, len(schedule.kinds) - 1)])
        else:
            out.append(None)
    return out


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0.05},
        {"rate": 0.5, "kinds": ("setback", "slip"), "weights": (3, 1)},
        {"rate": 1.0, "kinds": ("transient",)},
        {"rate": 0.2, "schedule": {1: "slip", 64: "setback", 65: "transient", 200: "slip"}},
        {"schedule": [(3, "setback"), (128, "slip")]},
    ],
)
def test_error_schedules_decided_per_block_are_the_per_turn_ones(kwargs):
    """Kinds decided 64 turns at a time (one list lookup per turn) are those decided turn by
    turn from the same draws, across block edges and whatever order turns are asked in."""
    from turnbudget.wrappers.inject_errors import ErrorSchedule

    schedule = ErrorSchedule(**kwargs)
    for seed in (0, 7, 2**63 + 5):
        expected = _planned_per_turn(schedule, seed, 300)
        schedule.start(seed)
        assert [schedule.planned(t) for t in range(1, 301)] == expected
        schedule.start(seed)
        assert [schedule.planned(t) for t in (200, 1, 65, 64, 300)] == [
            expected[t - 1] for t in (200, 1, 65, 64, 300)
        ]


def test_injected_errors_are_recorded_as_plain_json_values():
    """An event's NumPy ints become ints and a long narration is capped; plain values are
    kept as they are (bools stay bools, None stays None)."""
    from turnbudget.records import MAX_RECORD_TEXT
    from turnbudget.wrappers.record_step_outcomes import _jsonable

    event = {
        "kind": "setback", "turn": np.int64(3), "applied": True, "distance_before": 4,
        "distance_after": None, "narration": "x" * (MAX_RECORD_TEXT + 10),
        "replaced_action": "go west", "weight": 0.5, "extra": [np.int32(2), "b"],
    }  # fmt: skip
    record = _jsonable(event)
    assert record["turn"] == 3 and type(record["turn"]) is int
    assert record["applied"] is True and record["distance_after"] is None
    assert record["distance_before"] == 4 and record["weight"] == 0.5
    assert len(record["narration"]) == MAX_RECORD_TEXT
    assert record["replaced_action"] == "go west" and record["extra"] == [2, "b"]
    assert _jsonable({}) is None and _jsonable(None) is None


def test_the_errors_that_fire_are_the_planned_ones_across_blocks():
    """`InjectErrors.step` reads the schedule's decided turns directly: the kind that fires at
    each turn of a 200-turn episode (4 blocks) is the one `planned_error` gives for that turn."""
    import gymnasium as gym

    from turnbudget.wrappers import InjectErrors

    env = InjectErrors(gym.make("turnbudget/Maze-Easy-v0", turn_budget=200), rate=0.3)
    for seed in (0, 11):
        env.reset(seed=seed)
        fired = []
        for _ in range(200):
            *_, terminated, truncated, info = env.step("look")
            event = info.get("injected_error")
            fired.append(event["kind"] if event else None)
            if terminated or truncated:
                break
        assert len(fired) == 200
        assert fired == [env.planned_error(t) for t in range(1, 201)]
        assert sum(k is not None for k in fired[64:]) > 20  # (errors past the first block)


def test_vouched_columns_hold_plain_values_whatever_types_the_game_and_caller_use():
    """`PLAIN_STEP_KEYS` lets `dumps_lines` skip checking columns `RecordStepOutcomes` builds
    itself: a game, a wrapper or a caller handing it NumPy ints, NumPy bools, a float distance,
    ``np.str_`` commands and ids must still give json.dumps' lines, byte for byte."""
    pytest.importorskip("orjson")
    from turnbudget.wrappers import RecordStepOutcomes
    from turnbudget.wrappers.record_step_outcomes import PLAIN_STEP_KEYS

    class OddInfo(gym.Wrapper):
        def reset(self, **kwargs):
            obs, info = self.env.reset(**kwargs)
            return obs, self._odd(info)

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            return obs, np.float32(reward), np.bool_(terminated), truncated, self._odd(info)

        @staticmethod
        def _odd(info):
            info = dict(info, won=np.bool_(info["won"]), progress=np.float32(info["progress"]))
            info["turn_budget"] = np.int64(info["turn_budget"])
            return info

    inner = gym.make("turnbudget/KeyQuest-Easy-v0", turn_budget=40)
    game = inner.unwrapped
    distance, optimal = game.distance_to_goal, game.optimal_actions
    game.distance_to_goal = lambda: None if distance() is None else float(distance()) + 1e16
    game.optimal_actions = lambda: [np.str_(a) for a in optimal()]
    env = RecordStepOutcomes(OddInfo(inner), env_index=np.int64(3))
    rng = np.random.default_rng(0)
    for seed in range(3):
        _, info = env.reset(seed=seed, options={"episode_id": np.str_(f"odd{seed}")})
        done = False
        while not done:
            commands = info["admissible_actions"] or ["look"]
            action = np.str_(commands[int(rng.integers(len(commands)))])
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    steps = [r for r in env.records if r["record"] == "step"]
    assert len(steps) > 20
    assert dumps_template_lines(steps, PLAIN_STEP_KEYS) == _json_lines(steps)
    for key in PLAIN_STEP_KEYS:
        kinds = {type(v) for s in steps for v in ([s[key]] if key != "recoveries" else s[key])}
        assert kinds <= {str, int, bool, type(None)}, (key, kinds)


@pytest.mark.parametrize(
    ("odd", "plain"),
    [
        ({}, True),
        ({"reward": 0.5, "progress": 0.25}, True),
        ({"reward": -0.0}, True),
        ({"reward": 1e-5}, False),
        ({"reward": math.nan}, False),
        ({"progress": 2e16}, False),
        ({"distance": 1e-5}, False),  # an injected error's distance: every column it reaches
        ({"distance": 2}, True),
        ({"narration": [math.inf]}, False),
    ],
)
def test_the_recorder_vouches_for_a_column_only_where_its_values_encode_alike(odd, plain):
    """`RecordStepOutcomes.plain_step_keys`: every key after an episode whose step records
    hold only values orjson writes as json.dumps does, `PLAIN_STEP_KEYS` after one with any
    other (a reward or progress out of range, NaN, an injected error's float distance, which
    reaches `distance_injected`, `command_effect` and the errors judged from them), found
    where the values are made; `evaluate` writes them by it, json.dumps' lines either way."""
    pytest.importorskip("orjson")
    from turnbudget.records import encodes_alike
    from turnbudget.wrappers import RecordStepOutcomes
    from turnbudget.wrappers.record_step_outcomes import PLAIN_STEP_KEYS, STEP_KEY_SET

    class Odd(gym.Wrapper):
        """On turn 3, the odd values: a reward or progress, or a setback with them."""

        def reset(self, **kwargs):
            self.turn = 0
            return self.env.reset(**kwargs)

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            self.turn += 1
            if self.turn == 3:
                reward, info = odd.get("reward", reward), dict(info)
                info["progress"] = odd.get("progress", info["progress"])
                if "distance" in odd or "narration" in odd:
                    distance = odd.get("distance", 2)
                    info["injected_error"] = {
                        "kind": "setback", "turn": 3, "applied": True, "distance_before": distance,
                        "distance_after": distance, "narration": odd.get("narration", "Swept!"),
                        "replaced_action": None,
                    }  # fmt: skip
            return obs, reward, terminated, truncated, info

    env = RecordStepOutcomes(Odd(gym.make("turnbudget/Maze-Easy-v0", turn_budget=8)))
    for seed in range(2):  # (the second episode starts plain again)
        env.reset(seed=seed)
        for _ in range(8):
            env.step("look")
        steps = env.records[:-1]
        env.records.clear()
        vouched = env.plain_step_keys
        assert vouched == (STEP_KEY_SET if plain else PLAIN_STEP_KEYS)
        for key in vouched:
            assert encodes_alike(s[key] for s in steps), key
        assert dumps_template_lines(steps, vouched) == _json_lines(steps)
        if "distance" in odd:  # (the odd turn reached the record as it came)
            assert steps[2]["distance_injected"] == odd["distance"]
