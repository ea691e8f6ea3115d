"""`GameEnvironment`, TRL's ``environment_factory`` class, without TRL: one tool, the row's
start and T, and a reward per outcome that the user chooses (truncated is not lost)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from _scripted_player import oracle_plan
from _support import HANG_GUARD

from turnbudget.adapters.trl import GameEnvironment, OutcomeRewards, game_environment, rows_per_step

ENV = "turnbudget/Maze-Easy-v0"


def _tools(cls: type) -> list[str]:
    """The methods TRL turns into tools (its own rule: public functions but reset and get_reward)."""
    names = [name for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)]
    return [n for n in names if not n.startswith("_") and n not in ("reset", "get_reward")]


def test_one_tool_with_the_signature_trl_reads():
    for cls in (GameEnvironment, game_environment(reveal="always")):
        assert _tools(cls) == ["command"]
        assert cls.__name__ == "GameEnvironment"  # TRL logs the reward under this name
    signature = inspect.signature(GameEnvironment.command)
    assert signature.parameters["command"].annotation in (str, "str")
    doc = inspect.getdoc(GameEnvironment.command)
    assert "Args:\n    command:" in doc and "Returns:" in doc


def test_a_group_shares_its_start_and_the_rows_t_is_the_cap():
    row = {"prompt": [{"role": "user", "content": "Play."}], "env_id": ENV, "seed": 5, "T": 3}
    group = [GameEnvironment() for _ in range(4)]
    assert len({env.reset(**row) for env in group}) == 1
    for env in group:
        for _ in range(5):  # more calls than T: the game stops at T
            env.command("look")
        assert env.outcome == "truncated" and env.turns_used == env.turn_budget == 3
        assert env.episode["turns_used"] == 3 and env.get_reward() == 0.0
    assert group[0].reset(**{**row, "T": 7}) and group[0].turn_budget == 7  # reused, new T


def test_each_outcome_gets_the_reward_the_user_chose():
    plan = oracle_plan(ENV, 2)
    rewards = OutcomeRewards(won=2.0, truncated=-1.0, unfinished=None)
    env = game_environment(rewards=rewards)()
    env.reset(env_id=ENV, seed=2, T=len(plan) + 2)
    assert env.outcome == "unfinished" and env.get_reward() is None
    for command in plan:
        env.command(command)
    assert env.outcome == "won" and env.get_reward() == 2.0
    env.reset(env_id=ENV, seed=2, T=1)
    env.command("look")
    assert env.outcome == "truncated" and env.get_reward() == -1.0
    default = GameEnvironment()
    default.reset(env_id=ENV, seed=2, T=4)
    assert default.get_reward() == 0.0  # unfinished: a failure by default
    assert OutcomeRewards().reward("lost") == 0.0 and OutcomeRewards(lost=None).lost is None


def test_bad_settings_and_rows_are_clear_errors():
    with pytest.raises(
        ValueError, match="Expect the reward for `truncated` to be a finite number or None"
    ):
        OutcomeRewards(truncated="zero")
    for bad in (float("inf"), float("-inf"), float("nan"), 10**400):  # (inf reached TRL)
        with pytest.raises(ValueError, match="Expect the reward for `won` to be a finite"):
            OutcomeRewards(won=bad)
    with pytest.raises(ValueError, match="Expect an outcome in"):
        OutcomeRewards().reward("draw")
    with pytest.raises(ValueError, match="Expect `rewards` to be an OutcomeRewards"):
        game_environment(rewards={"won": 1.0})
    with pytest.raises(ValueError, match="Expect `mode` to be one of"):
        game_environment(reveal="sometimes")
    with pytest.raises(ValueError, match="got one without 'T'"):
        GameEnvironment().reset(env_id=ENV, seed=0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):  # (it has no start())
        GameEnvironment().get_reward()


def _args(**changes: object) -> SimpleNamespace:
    args = dict(
        shuffle_dataset=False, generation_batch_size=8, num_generations=4, num_iterations=1,
        steps_per_generation=1, gradient_accumulation_steps=1,
    )  # fmt: skip
    return SimpleNamespace(**{**args, **changes})


def test_rows_per_step_follows_the_trainers_batches():
    assert rows_per_step(_args()) == 2
    assert rows_per_step(_args(generation_batch_size=16, steps_per_generation=2,
                               gradient_accumulation_steps=2)) == 4  # fmt: skip
    assert rows_per_step(_args(generation_batch_size=8, gradient_accumulation_steps=2)) == 4
    with pytest.raises(ValueError, match="shuffle_dataset=False"):
        rows_per_step(_args(shuffle_dataset=True))
    with pytest.raises(ValueError, match="reads 3/2 rows per optimizer step"):
        rows_per_step(_args(generation_batch_size=6))
    # A generation batch TRL trains over several steps is shuffled across them (and trained
    # again at each iteration): rows would meet other steps' T (they were taken as 1 a step).
    for changes in ({"num_iterations": 2}, {"steps_per_generation": 4}):
        with pytest.raises(ValueError, match=r"over [0-9]+ optimizer steps, shuffled"):
            rows_per_step(_args(**changes))


def test_the_environment_needs_neither_trl_nor_datasets():
    code = textwrap.dedent("""
        import sys
        for name in ("trl", "datasets", "transformers", "torch", "verifiers"):
            sys.modules[name] = None  # unimportable
        from turnbudget.adapters.trl import GameEnvironment, trl_dataset
        env = GameEnvironment()
        env.reset(env_id="turnbudget/Maze-Easy-v0", seed=0, T=1)
        env.command("look")
        assert env.outcome == "truncated"
        try:
            trl_dataset([{"env_id": "turnbudget/Maze-Easy-v0", "seed": 0, "T": 1}])
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert out.returncode == 0, out.stderr
    assert "pip install -e '.[trl]' in the turnbudget checkout" in out.stdout


def test_a_configured_class_and_its_environments_pickle_with_their_settings():
    """A class made by game_environment had no name pickle could find it by: neither it nor
    its environments could go to a spawned worker (PicklingError)."""
    import pickle

    rewards = OutcomeRewards(won=2.0)
    configured = game_environment(reveal="final=2", rewards=rewards, show_commands=False)
    again = pickle.loads(pickle.dumps(configured))
    assert again.__name__ == "GameEnvironment" and issubclass(again, GameEnvironment)
    assert (again.reveal, again.rewards, again.show_commands) == ("final=2", rewards, False)
    env = configured()
    first = env.reset(env_id="turnbudget/Maze-Easy-v0", seed=3, T=6)
    copy = pickle.loads(pickle.dumps(env))
    assert copy.command("look") == env.command("look")
    assert (type(copy).reveal, type(copy).show_commands) == ("final=2", False)
    assert first


class ShapedReward(game_environment(rewards=OutcomeRewards(truncated=-0.5))):
    """A user's subclass of a configured class, with a reward of its own."""

    def get_reward(self) -> float:
        return 42.0


def test_a_subclass_of_a_configured_class_pickles_as_itself():
    """Every subclass inherited the configured class's pickling, as the call that makes it:
    a user's subclass, and its environments, came back as the base class, its own reward
    silently gone (on a spawned worker or a Ray actor)."""
    import pickle

    assert pickle.loads(pickle.dumps(ShapedReward)) is ShapedReward
    env = pickle.loads(pickle.dumps(ShapedReward()))
    assert type(env) is ShapedReward
    env.reset(env_id="turnbudget/Maze-Easy-v0", seed=0, T=1)
    env.command("look")
    assert env.get_reward() == 42.0
