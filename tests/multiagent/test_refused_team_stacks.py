"""Team stacks built by hand in an order that would record or inject wrongly are refused when
they are built, with a ValueError that says the right order (as the single-agent stacks in
tests/wrappers/test_refused_stacks.py), never silently or from deep inside an episode."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test

from turnbudget.multiagent import all_games, make_team
from turnbudget.multiagent.wrappers import (
    InjectTeamErrors,
    RecordTeamOutcomes,
    RevealTeamBudget,
    TeamDiscreteActions,
    TeamNumericInfo,
    TeamTextFeatures,
    TeamTurnBudget,
)

GAMES = sorted(all_games)


def _oracle_round(env):
    game = env.unwrapped
    house = getattr(game, "house_action", None)
    return {
        a: game.house_action(a)
        if house is not None and a != "player_0"
        else (game.optimal_actions(a) or ["wait"])[0]
        for a in env.agents
    }


@pytest.mark.parametrize("name", GAMES)
def test_team_errors_refuse_a_recorder_below_them(name):
    """Recorded below the errors, a slip's substitute was the agent's command and a setback
    its error: an oracle team had self-inflicted errors and no injected one, silently."""
    module = all_games[name]
    for env in (
        RecordTeamOutcomes(module.parallel_env()),
        RevealTeamBudget(RecordTeamOutcomes(module.parallel_env())),  # anywhere below
    ):
        with pytest.raises(ValueError, match="InjectTeamErrors must sit inside RecordTeamOutcomes"):
            InjectTeamErrors(env, rate=0.5, kinds=["slip", "setback"])
    # the right order records the injected errors apart from the agents' commands
    env = RecordTeamOutcomes(InjectTeamErrors(module.parallel_env(), rate=0.5))
    env.reset(seed=0)
    while env.agents:
        env.step(_oracle_round(env))
    episodes = [r for r in env.records if r["record"] == "episode"]
    assert sum(r["n_errors_injected"] for r in episodes) > 0


@pytest.mark.parametrize("name", GAMES)
def test_team_recorder_refuses_indices_for_commands(name):
    """Over TeamDiscreteActions the records held '1' for 'go south'."""
    env = TeamDiscreteActions(all_games[name].parallel_env(), max_actions=8)
    with pytest.raises(ValueError, match="put TeamDiscreteActions outside it"):
        RecordTeamOutcomes(env)
    RecordTeamOutcomes(env, oracle=False)  # nothing judged against the oracle


@pytest.mark.parametrize("name", GAMES)
def test_team_errors_refuse_the_classic_rl_adapters_below_them(name):
    """Slips and transient errors sent a command into an index space (a ValueError on the
    round one fired), a narration went into an array (IndexError), and over TeamNumericInfo
    no slip ever fired (no command list to slip to)."""
    module = all_games[name]
    for kinds in (["slip"], ["transient"]):
        with pytest.raises(ValueError, match="put TeamDiscreteActions outside InjectTeamErrors"):
            InjectTeamErrors(TeamDiscreteActions(module.parallel_env(), 8), rate=1.0, kinds=kinds)
    for kinds in (["slip"], ["transient"], ["setback"]):
        with pytest.raises(ValueError, match="put TeamTextFeatures outside InjectTeamErrors"):
            InjectTeamErrors(TeamTextFeatures(module.parallel_env(), 64), rate=1.0, kinds=kinds)
    with pytest.raises(ValueError, match="put TeamNumericInfo outside InjectTeamErrors"):
        InjectTeamErrors(TeamNumericInfo(module.parallel_env()), rate=1.0, kinds=["slip"])
    # what needs no command list nor a text action still works there
    InjectTeamErrors(TeamDiscreteActions(module.parallel_env(), 8), rate=1.0, kinds=["setback"])
    InjectTeamErrors(TeamNumericInfo(module.parallel_env()), rate=1.0, kinds=["transient"])


@pytest.mark.parametrize("name", GAMES)
def test_numeric_info_below_what_reads_the_info_it_drops_is_refused(name):
    """The recorder counted no injected error, the discrete adapter raised KeyError at reset,
    and the text features' goal and command blocks were all zeros, silently."""
    module = all_games[name]
    inner = TeamNumericInfo(InjectTeamErrors(module.parallel_env(), rate=0.5))
    with pytest.raises(ValueError, match="put TeamNumericInfo outside RecordTeamOutcomes"):
        RecordTeamOutcomes(inner)
    RecordTeamOutcomes(TeamNumericInfo(module.parallel_env()))  # no error to lose
    with pytest.raises(ValueError, match="put TeamNumericInfo outside TeamDiscreteActions"):
        TeamDiscreteActions(TeamNumericInfo(module.parallel_env()), 8)
    with pytest.raises(ValueError, match="put TeamNumericInfo outside TeamTextFeatures"):
        TeamTextFeatures(TeamNumericInfo(module.parallel_env()), 64)
    TeamTextFeatures(TeamNumericInfo(module.parallel_env()), 64, include_goal=False)


@pytest.mark.parametrize("name", GAMES)
def test_team_budget_refuses_a_recorder_inside_it(name):
    """Inside the budget the recorder never saw the team truncated: every episode the budget
    ended was dropped as abandoned at the next reset, and no record came out."""
    with pytest.raises(ValueError, match="wrap the env in TeamTurnBudget first"):
        TeamTurnBudget(RecordTeamOutcomes(all_games[name].raw_env()), turn_budget=3)


@pytest.mark.parametrize("name", GAMES)
def test_team_wrappers_refuse_an_aec_env(name):
    """Over the AEC form a team wrapper's reset failed with "cannot unpack non-iterable
    NoneType object"."""
    for wrap in (
        lambda env: TeamTurnBudget(env, turn_budget=5),
        lambda env: InjectTeamErrors(env, rate=0.5),
        RecordTeamOutcomes,
        RevealTeamBudget,
        TeamDiscreteActions,
        lambda env: TeamTextFeatures(env, 64),
        TeamNumericInfo,
    ):
        with pytest.raises(ValueError, match="wraps a parallel team env, got the AEC env"):
            wrap(all_games[name].env())


@pytest.mark.parametrize("name", GAMES)
def test_the_full_classic_rl_stack_passes_pettingzoo_api_tests(name):
    kwargs = dict(errors=0.3, record=True, reveal="final=3", discrete_actions=8, text_features=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # naming and array-game advice
        parallel_api_test(make_team(name, turn_budget=12, **kwargs), num_cycles=40)
        api_test(make_team(name, aec=True, turn_budget=12, **kwargs), num_cycles=40)


@pytest.mark.parametrize(
    "option, value, expect",
    [
        ("reveal", "sometimes", "Expect `reveal` to be one of"),
        ("errors", "garbage", r"Expect `errors` to be a number in \[0, 1\]"),
        ("errors", 2.0, r"Expect `errors` to be a number in \[0, 1\]"),
        ("discrete_actions", 0, "Expect `discrete_actions`"),
    ],
)
def test_an_option_given_as_one_value_is_refused_by_its_own_name(option, value, expect):
    """make_team(reveal="sometimes") said "Expect `mode` ...", a name make_team has not (and
    evaluate_team has a `mode` of its own); make(...) already said `reveal`."""
    from turnbudget.agents import RandomAgent
    from turnbudget.eval import evaluate_team

    with pytest.raises(ValueError, match=expect):
        make_team("vault_v0", **{option: value})
    if option != "discrete_actions":
        with pytest.raises(ValueError, match=expect):
            evaluate_team("vault_v0", {"operator": RandomAgent(), "runner": RandomAgent()},
                          ks=[1], ts=[3], tasks=1, **{option: value})  # fmt: skip
    # (given as keyword arguments, the wrapper's own names stand)
    keyword = {"reveal": "mode", "errors": "rate", "discrete_actions": "max_actions"}[option]
    with pytest.raises(ValueError, match=f"`{keyword}`"):
        make_team("vault_v0", **{option: {keyword: value}})
