"""Stacks a wrapper cannot work on are refused when they are built, with a ValueError that
says why, never an error from deep inside an episode."""

from __future__ import annotations

import gymnasium as gym
import pytest
from _wrapper_stub import LineWorld

from turnbudget.wrappers import (
    DiscreteActions,
    InjectErrors,
    NumericInfo,
    TextFeatures,
    TurnBudget,
)

MAZE = "turnbudget/Maze-Easy-v0"


@pytest.mark.parametrize("kinds", [["slip"], ["transient"], ["setback"]])
def test_inject_errors_refuses_observations_that_are_not_text(kinds):
    with pytest.raises(ValueError, match="InjectErrors needs a Text observation space, got Box"):
        InjectErrors(TextFeatures(gym.make(MAZE)), rate=1.0, kinds=kinds)


def test_discrete_actions_refuses_a_numeric_info_below_it():
    for env in (
        NumericInfo(gym.make(MAZE)),
        gym.Wrapper(NumericInfo(gym.make(MAZE))),  # anywhere below
    ):
        with pytest.raises(ValueError, match="NumericInfo drops"):
            DiscreteActions(env)


class NoList(LineWorld):
    """A text env whose info lacks admissible_actions."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        del info["admissible_actions"]
        return obs, info


def test_discrete_actions_on_an_env_without_the_list_is_a_value_error_at_reset():
    env = DiscreteActions(TurnBudget(NoList(), turn_budget=5))
    with pytest.raises(ValueError, match=r"needs info\['admissible_actions'\].*'goal'"):
        env.reset(seed=0)


class _CountsCloses(LineWorld):
    closed = 0

    def close(self):
        type(self).closed += 1
        super().close()


def test_an_outside_id_refused_for_its_missing_budget_closes_the_env_it_made():
    import turnbudget

    gym.register(id="tests/CountsCloses-v0", entry_point=_CountsCloses)
    try:
        with pytest.raises(ValueError, match="has no TurnBudget: pass `turn_budget`"):
            turnbudget.make("tests/CountsCloses-v0")
        assert _CountsCloses.closed == 1
    finally:
        gym.registry.pop("tests/CountsCloses-v0")


def test_an_outside_id_takes_the_turn_budget_its_refusal_asks_for():
    """`make` passed ``turn_budget`` to the outside game's constructor, which refused it: the
    fix the 'has no TurnBudget: pass `turn_budget`' message gave could not work."""
    import turnbudget
    from turnbudget.envs.native.maze import Maze
    from turnbudget.wrappers import TurnBudget

    if "outside/Maze-v0" not in gym.registry:
        gym.register("outside/Maze-v0", entry_point=Maze, disable_env_checker=True)
    with pytest.raises(ValueError, match="has no TurnBudget: pass `turn_budget`"):
        turnbudget.make("outside/Maze-v0")
    env = turnbudget.make("outside/Maze-v0", turn_budget=7, discrete_actions=8)
    assert env.get_wrapper_attr("turn_budget") == 7
    assert isinstance(env.env, TurnBudget)
    env.close()
    for bad in (42, None, b"turnbudget/Maze-Easy-v0", ["turnbudget/Maze-Easy-v0"]):
        with pytest.raises(ValueError, match="Expect `env_id` to be a registered id or an env"):
            turnbudget.make(bad)


def test_a_budget_schedule_checks_its_reset_options():
    """Junk options ended in "'str' object is not a mapping" inside the schedule."""
    import turnbudget
    from turnbudget.train.stack import BudgetSchedule

    env = BudgetSchedule(
        turnbudget.make("turnbudget/Maze-Easy-v0"), ["uniform:12-14"], steps_per_phase=100, seed=0
    )
    with pytest.raises(ValueError, match="options"):
        env.reset(seed=0, options="junk")
    with pytest.raises(ValueError, match="turn_budget"):
        env.reset(seed=0, options={"turn_budget": 0})
    env.close()


def test_inject_errors_refuses_a_recorder_below_it():
    """Recorded below the errors, a slip's substitute was recorded as the agent's command and
    a setback as its error: an oracle agent had self-inflicted errors and half its steps
    non-optimal, silently."""
    import turnbudget
    from turnbudget.wrappers import RecordStepOutcomes

    for env in (
        RecordStepOutcomes(gym.make(MAZE)),
        gym.Wrapper(RecordStepOutcomes(gym.make(MAZE))),  # anywhere below
    ):
        with pytest.raises(ValueError, match="InjectErrors must sit inside RecordStepOutcomes"):
            InjectErrors(env, rate=1.0, kinds=["slip", "setback"])
    with pytest.raises(ValueError, match="InjectErrors must sit inside RecordStepOutcomes"):
        turnbudget.make(RecordStepOutcomes(gym.make(MAZE)), errors=0.5)
    # (the order make builds still records the agent apart from the errors)
    env = turnbudget.make(MAZE, turn_budget=6, errors={"rate": 1.0, "kinds": ["setback"]},
                          record=True)  # fmt: skip
    env.reset(seed=0)
    for _ in range(6):
        env.step(env.unwrapped.optimal_actions()[0])
    episode = env.get_wrapper_attr("records")[-1]
    assert episode["n_errors_self"] == 0 and episode["n_errors_injected"] == 6


def test_the_recorder_refuses_discrete_actions_below_it():
    """Recorded below DiscreteActions, the agent's action was an index, never one of the
    oracle's commands: every step of an oracle agent was judged non-optimal, silently."""
    import turnbudget
    from turnbudget.wrappers import RecordStepOutcomes

    with pytest.raises(ValueError, match=r"needs a Text action space, got Discrete\(8\)"):
        RecordStepOutcomes(DiscreteActions(gym.make(MAZE), max_actions=8))
    with pytest.raises(ValueError, match="put DiscreteActions outside it"):
        turnbudget.make(DiscreteActions(gym.make(MAZE)), record=True)
    # (without the oracle nothing is judged: the indices are recorded as they are)
    RecordStepOutcomes(DiscreteActions(gym.make(MAZE)), oracle=False)
    # (the order make builds judges the command the index plays)
    env = turnbudget.make(MAZE, turn_budget=4, record=True, discrete_actions=8)
    _, info = env.reset(seed=0)
    for _ in range(4):
        best = env.unwrapped.optimal_actions()[0]
        _, _, _, _, info = env.step(info["action_commands"].index(best))
    assert env.get_wrapper_attr("records")[-1]["optimal_step_rate"] == 1.0


def test_inject_errors_refuses_a_numeric_info_below_it_for_slips():
    """NumericInfo drops the admissible commands a slip is drawn from: at rate 1.0 no slip
    ever fired (every turn's error had applied=False), silently."""
    for env in (NumericInfo(gym.make(MAZE)), gym.Wrapper(NumericInfo(gym.make(MAZE)))):
        with pytest.raises(ValueError, match=r"slips draw from .* which NumericInfo drops"):
            InjectErrors(env, rate=1.0, kinds=["slip", "setback"])
    # (a setback needs no list: it still fires there)
    env = InjectErrors(NumericInfo(gym.make(MAZE)), rate=1.0, kinds=["setback"])
    env.reset(seed=0)
    assert env.step("look")[4]["injected_error"]["applied"] is True


def test_text_features_refuse_a_numeric_info_below_them_for_the_goal_or_commands():
    """NumericInfo drops info['goal'] and info['admissible_actions']: the goal's block of
    TextFeatures over it was all zeros (4.85 in all without NumericInfo), silently."""
    for kwargs in ({}, {"include_goal": False, "include_admissible": True}):
        with pytest.raises(ValueError, match=r"TextFeatures reads .* which NumericInfo drops"):
            TextFeatures(NumericInfo(gym.make(MAZE)), **kwargs)
    # (the observation's own block needs neither)
    env = TextFeatures(NumericInfo(gym.make(MAZE)), include_goal=False)
    assert env.reset(seed=0)[0].any()


def test_the_recorder_refuses_a_numeric_info_over_injected_errors_below_it():
    """NumericInfo drops info['injected_error']: a recorder over it counted no injected error,
    and a setback as the agent's own, silently."""
    from turnbudget.wrappers import RecordStepOutcomes

    env = NumericInfo(InjectErrors(gym.make(MAZE), rate=0.5, kinds=["setback"]))
    with pytest.raises(ValueError, match=r"RecordStepOutcomes reads .* which NumericInfo drops"):
        RecordStepOutcomes(env, memory=True)
    # (without injected errors it has nothing to lose there)
    RecordStepOutcomes(NumericInfo(gym.make(MAZE)), memory=True).close()


def test_the_recorder_refuses_a_process_reward_below_it():
    """A step record's ``reward`` is the env's own: over ProcessReward it silently held the
    shaped reward (and a Maze success recorded more than the game's 1.0)."""
    from turnbudget.wrappers import ProcessReward, RecordStepOutcomes

    for env in (
        ProcessReward(gym.make(MAZE)),
        gym.Wrapper(ProcessReward(gym.make(MAZE))),  # anywhere below
    ):
        with pytest.raises(ValueError, match="put ProcessReward outside RecordStepOutcomes"):
            RecordStepOutcomes(env, memory=True)
    # In the documented order the records keep the env's rewards, the agent sees the shaped ones.
    env = ProcessReward(RecordStepOutcomes(gym.make(MAZE), memory=True), gamma=1.0, scale=0.5)
    env.reset(seed=0)
    env_rewards, shaped_rewards, terminated = [], [], False
    while not terminated:
        _, shaped, terminated, _, info = env.step(env.unwrapped.optimal_actions()[0])
        env_rewards.append(info["process_reward"]["env_reward"])
        shaped_rewards.append(shaped)
    assert env_rewards[-1] == 1.0 and shaped_rewards[0] > 0 == env_rewards[0]
    steps = [r for r in env.env.records if r["record"] == "step"]
    assert [r["reward"] for r in steps] == env_rewards


def test_a_turn_budget_refuses_a_second_turn_limit_below_it():
    """The inner limit ended the episode while info and the revealed budget told the agent the
    outer one's: a TurnBudget of 50 over a registered id's 30 truncated at turn 30 saying
    "[20 turns left]"."""
    from gymnasium.wrappers import TimeLimit

    from turnbudget.wrappers import RevealBudget

    with pytest.raises(ValueError, match="got one with a TurnBudget of 30 turns"):
        TurnBudget(gym.make(MAZE), turn_budget=50)
    with pytest.raises(ValueError, match="got one with a TurnBudget of 30 turns"):
        TurnBudget(RevealBudget(gym.make(MAZE), "always"), turn_budget=50)  # anywhere below
    with pytest.raises(ValueError, match="got one with Gymnasium's TimeLimit of 10 steps"):
        TurnBudget(TimeLimit(gym.make(MAZE).unwrapped, 10), turn_budget=50)
    # One limit: on the bare game, or right over a TimeLimit of its own budget (taken over).
    for env in (
        TurnBudget(gym.make(MAZE).unwrapped, turn_budget=5),
        TurnBudget(TimeLimit(gym.make(MAZE).unwrapped, 5), turn_budget=5),
    ):
        env.reset(seed=0)
        steps = [env.step("look") for _ in range(5)]
        assert [truncated for _, _, _, truncated, _ in steps] == [False] * 4 + [True]
        assert steps[-1][4]["turns_left"] == 0


def _inner_recorder(game):
    from turnbudget.wrappers import RecordStepOutcomes

    return RecordStepOutcomes(game)


def _inner_shaping(game):
    from turnbudget.wrappers import ProcessReward

    return ProcessReward(game, gamma=1.0, potential_at_truncation="zero")


@pytest.mark.parametrize(
    "inner, name",
    [
        (_inner_recorder, "RecordStepOutcomes"),
        (_inner_shaping, "ProcessReward"),
        (DiscreteActions, "DiscreteActions"),
    ],
)
def test_a_wrapper_that_must_see_the_budget_end_is_refused_under_a_turn_budget(inner, name):
    """Under the budget, the recorder never saw the truncation and dropped every episode the
    budget ended as abandoned; ProcessReward's "zero" at truncation did not apply; the action
    mask outlived the episode. turnbudget.make over such an env built exactly that order."""
    import turnbudget

    with pytest.raises(ValueError, match=f"Expect {name} outside the TurnBudget"):
        TurnBudget(gym.Wrapper(inner(gym.make(MAZE).unwrapped)), 3)
    with pytest.raises(ValueError, match=f"Expect {name} outside the TurnBudget"):
        turnbudget.make(inner(gym.make(MAZE).unwrapped), turn_budget=3)


def test_a_time_limit_over_a_budget_mix_is_refused_not_dropped():
    """turnbudget.make took the TimeLimit's 5 as the default budget, which the mix's draw
    replaced every episode: 20 turns under a 5-step limit, the spec saying 5."""
    import turnbudget
    from turnbudget.wrappers.stack import absorb_time_limit

    for take_over in (turnbudget.make, absorb_time_limit):
        limited = gym.wrappers.TimeLimit(gym.make(MAZE, budget_mix=[20, 30]), 5)
        with pytest.raises(ValueError, match=r"TimeLimit of 5 steps .* budget_mix draws one"):
            take_over(limited)


def test_a_turn_budget_beside_a_budget_mix_is_refused_not_ignored():
    """The mix draws every episode's budget, so a turn_budget given beside it was never
    played: 31 turns asked for, 8 or 16 played, and no word of it."""
    import turnbudget
    from turnbudget.multiagent import make_team

    refused = r"turn_budget=31 and a budget_mix, which draws each episode's budget"
    for make in (turnbudget.make, gym.make):
        with pytest.raises(ValueError, match=refused):
            make(MAZE, turn_budget=31, budget_mix=[8, 16])
    with pytest.raises(ValueError, match=refused):
        make_team("vault_v0", turn_budget=31, budget_mix=[8, 16])
    # Either alone is played as asked, and a made stack's spec, which names its own
    # budget, still takes a mix.
    assert gym.make(MAZE, turn_budget=31).reset(seed=0)[1]["turn_budget"] == 31
    mixed = gym.make(gym.make(MAZE, turn_budget=31).spec, budget_mix=[8, 16])
    assert mixed.reset(seed=0)[1]["turn_budget"] in (8, 16)
    # A mixed stack's own spec remakes it (its spec kept turn_budget=31 beside the mix).
    assert gym.make(mixed.spec).reset(seed=0)[1]["turn_budget"] in (8, 16)
    vector = gym.make_vec(mixed.spec, num_envs=2, vectorization_mode="sync")
    assert set(vector.reset(seed=0)[1]["turn_budget"]) <= {8, 16}
    vector.close()


def test_an_outside_game_takes_the_turn_budget_its_budget_mix_builds_on():
    """An outside game has no TurnBudget: make asks for a turn_budget to build one, and
    refused it beside a budget_mix, so no mix could be played on an outside id."""
    import turnbudget
    from turnbudget.envs.native.maze import Maze

    gym.register("outside/MixedMaze-v0", entry_point=Maze, disable_env_checker=True)
    try:
        env = turnbudget.make("outside/MixedMaze-v0", turn_budget=16, budget_mix=[8, 12])
        assert env.reset(seed=0)[1]["turn_budget"] in (8, 12)
    finally:
        del gym.registry["outside/MixedMaze-v0"]
