"""Hostile input at the doors that need no trainer package: `GameSession` (what a trainer's
model drives), TRL's `GameEnvironment` and the rows. Bad input is a clear error or a spent
turn with feedback, never a crash deep in the game, a leftover episode or a run that
differs between two plays of the same seed."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from turnbudget._checks import MAX_SEED
from turnbudget.adapters.rows import check_row, check_rows, task_rows, turn_cap
from turnbudget.adapters.session import GameSession
from turnbudget.adapters.trl import GameEnvironment, rows_per_step

ENV = "turnbudget/Maze-Easy-v0"


class _Opaque:
    """A value whose ``repr`` holds its address: it must never reach the text."""


#: What a model's tool call may carry as the command (any JSON value), and worse.
HOSTILE_COMMANDS = [None, 5, -3.5, True, ["go", "north"], {"command": "look"}, {1: 2, "a": 3},
                    "", "   ", "x" * 2**20, "lo\x00ok", "\ud800go north", "\x07\x1b[2J",
                    "look\ngo north", b"look", float("nan"), 10**5000]  # fmt: skip


def _play(commands: list, make_object: bool) -> list[str]:
    session = GameSession()
    texts = [session.start(ENV, seed=7, turn_budget=len(commands) + 2)]
    for command in commands:
        texts.append(session.play(command))
    if make_object:
        texts.append(session.play(_Opaque()))
    return texts


def test_any_command_value_is_a_spent_turn_with_the_same_text_every_time():
    first, second = _play(HOSTILE_COMMANDS, True), _play(HOSTILE_COMMANDS, True)
    assert first == second  # no address or other per-process detail reaches the text
    assert len(first) == len(HOSTILE_COMMANDS) + 2
    assert all(isinstance(text, str) and text for text in first)
    assert "0x" not in first[-1]


def test_a_refused_start_leaves_no_episode_running():
    session = GameSession()
    session.start(ENV, seed=1, turn_budget=5)
    session.play("look")
    for bad in ({"seed": -1}, {"seed": MAX_SEED + 1}, {"turn_budget": 0}, {"env_id": None}):
        args = {"env_id": ENV, "seed": 1, "turn_budget": 5, **bad}
        with pytest.raises(ValueError, match="Expect"):
            session.start(**args)
        with pytest.raises(RuntimeError, match="No episode"):
            session.play("look")  # not the previous episode's fourth turn
        with pytest.raises(RuntimeError, match="No episode"):
            session.outcome  # noqa: B018
    fresh = GameSession().start(ENV, seed=1, turn_budget=5)
    assert session.start(ENV, seed=1, turn_budget=5) == fresh  # the session goes on


def test_a_refused_start_after_an_ended_episode_shows_nothing_of_it():
    """`play` and `outcome` said no episode ran after a refused start, but `episode`,
    `turns_used`, `turn_budget` and `total_reward` still described the one before (TRL's
    `GameEnvironment.episode` passed it on as the new row's)."""
    session = GameSession()
    session.start(ENV, seed=0, turn_budget=2)
    session.play("look")
    session.play("look")
    assert session.outcome == "truncated" and session.episode["turns_used"] == 2
    with pytest.raises(ValueError, match="Expect `seed`"):
        session.start(ENV, seed=-1, turn_budget=5)
    assert session.episode is None
    assert (session.turns_used, session.turn_budget, session.total_reward) == (0, 0, 0.0)
    assert session.first_success_turn is None and session.commands == []


@pytest.mark.parametrize(
    "bad", [{"T": None}, {"seed": None}, {"env_id": None}, {"seed": -1}, {"T": 0}, {"T": "4"}]
)
def test_a_refused_row_leaves_no_episode_of_the_previous_rollout_running(bad):
    """TRL reuses an environment across rollouts: a row refused before it reached the game
    left the previous episode running, so the next tool call played on it and get_reward
    scored it as the new row's."""
    env = GameEnvironment()
    env.reset(env_id=ENV, seed=1, T=5)
    env.command("look")
    row = {key: value for key, value in {"env_id": ENV, "seed": 1, "T": 5, **bad}.items()
           if value is not None}  # fmt: skip
    with pytest.raises(ValueError, match="Expect"):
        env.reset(**row)
    for call in (lambda: env.command("look"), env.get_reward, lambda: env.outcome):
        with pytest.raises(RuntimeError, match=r"No episode: call reset\(\) first"):
            call()
    assert env.episode is None and env.turns_used == 0
    assert env.reset(env_id=ENV, seed=1, T=5) == GameEnvironment().reset(env_id=ENV, seed=1, T=5)


def test_a_call_before_any_episode_names_the_method_that_starts_one():
    """The session's users start episodes by different names: TRL's class has reset(), no
    start(), so its message must not send the reader to a method that does not exist."""
    with pytest.raises(RuntimeError, match=r"No episode: call start\(\) first"):
        GameSession().play("look")
    env = GameEnvironment()
    assert not hasattr(env, "start")
    for call in (lambda: env.command("look"), env.get_reward, lambda: env.outcome):
        with pytest.raises(RuntimeError, match=r"No episode: call reset\(\) first"):
            call()
    env.reset(env_id=ENV, seed=0, T=2)
    assert env.outcome == "unfinished"
    for bad in (None, 5, "", "  "):
        with pytest.raises(ValueError, match="Expect `start_call` to be a method's name"):
            GameSession(start_call=bad)


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        (None, "Expect `env_id` to be a registered id, got None"),
        (["turnbudget/Maze-Easy-v0"], "Expect `env_id` to be a registered id, got \\["),
        ({"id": 1}, "Expect `env_id` to be a registered id"),
        ("", "Expect `env_id` to be a registered id"),
        ("CartPole-v1", "has no TurnBudget"),
    ],
)
def test_a_bad_env_id_is_a_clear_error(env_id, message):
    with pytest.raises(ValueError, match=message):
        GameSession().start(env_id, seed=0, turn_budget=3)


@pytest.mark.parametrize("env_id", ["x" * 10**6, "\ud800", "turnbudget/Maze\x00-v0"])
def test_a_bad_env_id_is_quoted_never_repeated(env_id):
    # (gym's own message repeated the id whole: 2 MB for a 1 MB id, a lone surrogate raw)
    for start in (
        lambda: GameSession().start(env_id, seed=0, turn_budget=3),
        lambda: task_rows(env_id, seeds=1, turn_budget=3),
    ):
        with pytest.raises(ValueError, match=r"Cannot make .* for a row") as error:
            start()
        message = str(error.value)
        assert len(message) < 500
        message.encode("utf-8")  # (writable to any log or terminal)


def test_an_endless_list_of_env_ids_is_refused_without_reading_it_all():
    """range(10**12) was listed whole first: MemoryError."""
    import itertools

    for ids in (range(10**12), itertools.repeat("turnbudget/Maze-Easy-v0")):
        with pytest.raises(ValueError, match=r"Expect at most 10,000 `env_ids`"):
            task_rows(ids, seeds=1, turn_budget=3)


class _NoStr:
    def __str__(self) -> str:
        raise RuntimeError("a key whose str() fails")


@pytest.mark.parametrize(
    "row", [{"x" * 10**6: 1}, {i: i for i in range(10**5)}, {10**5000: 1}, {_NoStr(): 1}]
)
def test_a_row_without_its_keys_names_a_few_of_its_keys_cut(row):
    # (every key by str(): a message as long as the row, or an unrelated error)
    with pytest.raises(ValueError, match="Expect a row with keys 'env_id', 'seed' and 'T'") as e:
        check_row(row)
    assert len(str(e.value)) < 300


def test_a_row_never_imports_the_module_it_names(tmp_path, monkeypatch):
    (tmp_path / "hostile_row_module.py").write_text("IMPORTED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="never a module to import"):
        GameSession().start("hostile_row_module:Maze-Easy-v0", seed=0, turn_budget=3)
    with pytest.raises(ValueError, match="never a module to import"):
        task_rows("hostile_row_module:Maze-Easy-v0", seeds=1, turn_budget=3)
    assert "hostile_row_module" not in sys.modules


def test_seeds_past_a_64_bit_word_are_refused_everywhere():
    with pytest.raises(ValueError, match="Expect `seed` to be an int >= 0"):
        GameSession().start(ENV, seed=2**64, turn_budget=3)
    with pytest.raises(ValueError, match="Expect the row's `seed` to be an int >= 0"):
        check_row({"env_id": ENV, "seed": 2**70, "T": 3})
    with pytest.raises(ValueError, match="Expect the row's `seed` to be an int >= 0"):
        GameEnvironment().reset(env_id=ENV, seed=2**64, T=3)
    assert check_row({"env_id": ENV, "seed": MAX_SEED, "T": 3})[1] == MAX_SEED
    for seed in (-1, 2**64, True, 1.5):
        with pytest.raises(ValueError, match="Expect `seed` to be an int"):
            task_rows(ENV, seeds=2, turn_budget="4,8", seed=seed)


def test_the_episode_record_handed_out_is_the_callers_own():
    session = GameSession()
    session.start(ENV, seed=0, turn_budget=1)
    session.play("look")
    record = session.episode
    record["success"], record["turn_budget"] = True, 99
    assert session.episode["success"] is False and session.episode["turn_budget"] == 1


@pytest.mark.parametrize(
    ("env_ids", "message"),
    [
        (None, "Expect `env_ids` to be a registered id or a list of them, got None"),
        (5, "Expect `env_ids` to be a registered id or a list of them, got 5"),
        ({ENV, "turnbudget/KeyQuest-Easy-v0"}, "Expect `env_ids` to be a registered id or a list"),
        ({ENV: 1}, "Expect `env_ids` to be a registered id or a list"),
        ([ENV, ENV], "Expect `env_ids` to be distinct ids"),
        ([ENV, ENV.removesuffix("-v0")], "Expect `env_ids` to be distinct ids"),  # (one game)
        ("turnbudget/NoSuchGame-v0", "Cannot make 'turnbudget/NoSuchGame-v0' for a row"),
        ("CartPole-v1", "Cannot make 'CartPole-v1' for a row: .* has no TurnBudget"),
    ],
)
def test_bad_env_ids_fail_when_the_rows_are_built(env_ids, message):
    with pytest.raises(ValueError, match=message):
        task_rows(env_ids, seeds=2, turn_budget=5)


def test_rows_name_the_id_their_records_name_and_an_unversioned_repeat_is_refused():
    """``turnbudget/Maze-Easy`` plays turnbudget/Maze-Easy-v0: a row of each passed as two
    tasks, which verifiers' rewards scored as two and `pass_at_kt` (keyed on the records'
    id) pooled as one, so the two pass@k readings of one run disagreed."""
    unversioned = ENV.removesuffix("-v0")
    assert [row["env_id"] for row in task_rows(unversioned, seeds=2, turn_budget=5)] == [ENV] * 2
    rows = [{"env_id": unversioned, "seed": 0, "T": 8}, {"env_id": ENV, "seed": 0, "T": 8}]
    assert [row["env_id"] for row in check_rows(rows)] == [ENV, ENV]
    with pytest.raises(ValueError, match=r"got row 1 repeating row 0"):
        check_rows(rows, distinct=True)


@pytest.mark.parametrize("turn_budget", [True, 5.0, float("nan")])
def test_a_budget_that_is_not_an_int_names_turn_budget(turn_budget):
    with pytest.raises(
        ValueError, match="Expect `turn_budget` to be a positive int T or a BudgetMix"
    ):
        task_rows(ENV, seeds=2, turn_budget=turn_budget)


@pytest.mark.parametrize("rows", [None, "rows", {"env_id": ENV, "seed": 0, "T": 3}, 7])
def test_turn_cap_needs_a_list_of_rows(rows):
    with pytest.raises(ValueError, match="Expect `rows` to be a list of rows"):
        turn_cap(rows)


def test_rows_per_step_refuses_empty_batches_clearly():
    args = SimpleNamespace(shuffle_dataset=False, generation_batch_size=8, num_generations=0,
                           num_iterations=1, steps_per_generation=1,
                           gradient_accumulation_steps=1)  # fmt: skip
    with pytest.raises(ValueError, match=r"Expect `args\.num_generations` to be a positive int"):
        rows_per_step(args)


def test_a_tool_call_with_any_json_arguments_is_a_spent_turn_or_a_clear_type_error():
    """TRL calls ``command(**arguments)`` with the model's JSON and shows a raised error to
    the model: any value is a spent turn, and a call of the wrong shape is a TypeError that
    names the tool, played identically by two environments of one group."""
    calls = ['{"command": null}', '{"command": 7}', '{"command": ["look"]}',
             '{"command": {"a": {"b": [1, 2.5, false]}}}', '{"command": "\\u0000\\ud800"}',
             '{}', '{"command": "look", "why": "because"}', '{"cmd": "look"}']  # fmt: skip

    def play() -> list[str]:
        env, out = GameEnvironment(), []
        out.append(env.reset(env_id=ENV, seed=4, T=20, prompt=[{"role": "user"}]))
        for call in calls:
            try:
                out.append(env.command(**json.loads(call)))
            except TypeError as error:
                assert "command()" in str(error)
                out.append(f"error: {error}")
        out.append(str(env.turns_used))
        return out

    first = play()
    assert first == play()
    assert first[-1] == "5" and sum(text.startswith("error:") for text in first) == 3
