"""`GameSession`, the game behind every trainer's door: a row in, the agent's view out, the
row's T as the turn cap, and the outcome kept apart (won, lost, truncated, unfinished)."""

from __future__ import annotations

import random

import pytest
from _scripted_player import oracle_plan

import turnbudget.adapters.session as session_module
from turnbudget.adapters.session import GameSession
from turnbudget.wrappers.stack import make

ENV = "turnbudget/Maze-Easy-v0"


def test_a_row_starts_the_same_state_and_its_t_ends_the_episode():
    first = {GameSession().start(ENV, seed=3, turn_budget=4) for _ in range(4)}
    assert len(first) == 1  # a group with one seed shares its first observation
    assert GameSession().start(ENV, seed=4, turn_budget=4) not in first
    session = GameSession()
    for budget in (2, 5):  # the same session (and env) under each row's own T
        session.start(ENV, seed=3, turn_budget=budget)
        texts = [session.play("look") for _ in range(budget)]
        assert session.outcome == "truncated" and session.turns_used == budget
        assert texts[-1].endswith("[The episode is over: the turn budget is spent.]")
        assert all("Commands:" in text for text in texts[:-1])
        assert "over" in session.play("look") and session.turns_used == budget  # nothing played
        assert session.episode["turn_budget"] == budget and not session.episode["success"]


def test_a_reset_mid_episode_starts_clean():
    session = GameSession()
    first = session.start(ENV, seed=1, turn_budget=5)
    session.play("look")
    session.play("go north")
    assert session.start(ENV, seed=1, turn_budget=5) == first
    assert session.turns_used == 0 and session.outcome == "unfinished" and session.episode is None
    for _ in range(5):
        session.play("look")
    assert session.episode["turns_used"] == 5 and session.episode["seed"] == 1


def test_winning_within_t_is_won_and_recorded():
    plan = oracle_plan(ENV, 3)
    session = GameSession()
    session.start(ENV, seed=3, turn_budget=len(plan))  # won on the last budgeted turn
    for command in plan:
        assert session.outcome == "unfinished"
        text = session.play(command)
    assert session.outcome == "won" and text.endswith("[The episode is over: you won.]")
    assert session.first_success_turn == len(plan) == session.episode["first_success_turn"]
    assert session.total_reward == 1.0 and session.episode["success"]


def test_a_lost_game_is_lost_not_truncated():
    rng = random.Random(0)
    env = make("turnbudget/Sokoban-Easy-v0")
    for seed in range(50):  # a random walk that deadlocks a box, found once and replayed
        _, info = env.reset(seed=seed, options={"turn_budget": 60})
        moves = []
        while True:
            moves.append(rng.choice(info["admissible_actions"]))
            *_, terminated, truncated, info = env.step(moves[-1])
            if terminated or truncated:
                break
        if info["lost"]:
            break
    assert info["lost"], "no random walk lost a Sokoban game"
    session = GameSession()
    session.start("turnbudget/Sokoban-Easy-v0", seed=seed, turn_budget=60)
    for move in moves:
        session.play(move)
    assert session.outcome == "lost" and session.turns_used == len(moves) < 60
    assert session.play("look").endswith("the game is lost. Nothing more happens.]")


def test_the_text_follows_the_evaluators_agent_view(monkeypatch):
    calls = []

    def spy(info, *, show_budget, **kwargs):
        calls.append(show_budget)
        return real(info, show_budget=show_budget, **kwargs)

    real = session_module.agent_info
    monkeypatch.setattr(session_module, "agent_info", spy)
    hidden = GameSession()
    text = hidden.start(ENV, seed=0, turn_budget=6) + hidden.play("look")
    assert calls == [False, False] and "turns left" not in text
    shown = GameSession(reveal="always")
    text = shown.start(ENV, seed=0, turn_budget=6)
    assert calls[2:] == [True] and "[6 turns left]" in text
    final = GameSession(reveal="final=1")
    text = final.start(ENV, seed=0, turn_budget=2)
    assert "turns left" not in text and "[1 turns left]" in final.play("look")


def test_commands_are_one_line_and_anything_is_a_spent_turn():
    session = GameSession(show_commands=False)
    assert "Commands:" not in session.start(ENV, seed=0, turn_budget=5)
    for command in ("go north\ngo east", "x" * 10**6, 42, ""):
        session.play(command)
    assert session.turns_used == 4 and session.outcome == "unfinished"


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="Cannot make 'turnbudget/Nowhere-v0' for a row"):
        GameSession().start("turnbudget/Nowhere-v0", seed=0, turn_budget=5)
    with pytest.raises(ValueError, match="Cannot make 'turnbudget/Nowhere-v0' for a row"):
        GameSession().check([ENV, "turnbudget/Nowhere-v0"])
    with pytest.raises(ValueError, match="Expect `seed` to be an int >= 0"):
        GameSession().start(ENV, seed=-2, turn_budget=5)
    with pytest.raises(ValueError, match="Expect `turn_budget` to be a positive int"):
        GameSession().start(ENV, seed=0, turn_budget=0)
    with pytest.raises(ValueError, match="Expect `mode` to be one of"):
        GameSession(reveal="sometimes")
    with pytest.raises(ValueError, match="Expect `show_commands` to be True or False"):
        GameSession(show_commands="yes")
    with pytest.raises(RuntimeError, match="call start"):
        GameSession().play("look")


def test_two_threads_on_one_session_are_refused_and_the_budget_holds():
    """Two threads playing one session played past T (4 turns of 3) and failed inside the
    recorder (TypeError, AttributeError); one call at a time is the session's rule now."""
    import threading

    session = GameSession()
    session.start("turnbudget/Maze-Easy-v0", 0, 3)
    gate, refused = threading.Barrier(4), []
    entered = threading.Event()
    original = session._play

    def slow_play(command: str) -> str:  # (holds the session until every thread has tried)
        entered.set()
        gate.wait()
        return original(command)

    session._play = slow_play

    def other() -> None:
        entered.wait()
        try:
            session.play("look")
        except RuntimeError as exc:
            refused.append(str(exc))
        finally:
            gate.wait()

    threads = [threading.Thread(target=other) for _ in range(3)]
    for thread in threads:
        thread.start()
    session.play("look")
    for thread in threads:
        thread.join()
    assert len(refused) == 3 and all("in a call already" in r for r in refused)
    assert session.turns_used == 1


def test_check_takes_one_id_or_a_list_of_them():
    """A str was iterated: its characters were made one by one ("Cannot make 't'"), and None
    was Python's "'NoneType' object is not iterable", naming no argument."""
    session = GameSession()
    session.check("turnbudget/Maze-Easy-v0")
    session.check(["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"])
    for bad in (None, 5, {"turnbudget/Maze-Easy-v0": 1}, b"turnbudget/Maze-Easy-v0"):
        with pytest.raises(ValueError, match=r"Expect `env_ids` to be a registered id or a list"):
            session.check(bad)
    session.close()


@pytest.mark.parametrize(
    "spacing", ["\u00a0", "\u3000", "\x1c", "  "], ids=["nbsp", "ideographic", "fs", "two"]
)
def test_a_command_reaches_the_game_as_evaluate_gives_it(spacing):
    """The session folded every Unicode space and cut long commands before the game read
    them: the oracle's plan written with no-break spaces won through TRL (reward 1.0) and
    lost under `evaluate`, where the game refuses a look-alike space."""
    env = make(ENV)
    env.reset(seed=0)
    command = "go" + spacing + "north"
    expected, *_ = env.step(command)
    session = GameSession()
    session.start(ENV, seed=0, turn_budget=10)
    assert session.play(command).startswith(expected.split("\n")[0])
    env.close()


def test_a_command_past_the_games_limit_is_the_games_to_refuse():
    session = GameSession()
    session.start(ENV, seed=0, turn_budget=10)
    assert "too long" in session.play("go north" + " the" * 100)


def test_a_command_past_the_games_limit_is_refused_with_its_own_length():
    """The session cut a command at 4097 characters first: a 5000-character one was
    "too long (4097 characters)", where evaluate's game said 5000."""
    session = GameSession()
    session.start(ENV, seed=0, turn_budget=10)
    assert "too long (5000 characters)" in session.play("x" * 5000)
