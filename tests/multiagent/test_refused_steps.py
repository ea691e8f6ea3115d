"""A refused team step changes nothing; a hostile command is a spent turn, under every team wrapper."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from turnbudget.multiagent import all_games, make_team

GAMES = sorted(all_games)
# Every team wrapper, errors of every kind often enough to fire in a few rounds.
FULL_STACK = dict(turn_budget=40, errors=0.5, record=True, reveal="always")
# What a step refuses: each raises before the round counts, with the error type it raises.
REFUSED = [
    ({"nobody": "wait"}, ValueError),
    ("wait", TypeError),
    (None, TypeError),
    ([("operator", "wait")], TypeError),
]
# Commands no agent should send: each is a spent turn with feedback, never an exception.
HOSTILE = [[1, 2], np.array(["go north", "wait"]), {"go": "north"}, object(), b"wait", 3.5]


def _admissible_round(infos, rng):
    return {a: str(rng.choice(i["admissible_actions"] or ["wait"])) for a, i in infos.items()}


@pytest.mark.parametrize("name", GAMES)
def test_a_refused_parallel_step_changes_nothing(name):
    env, twin = make_team(name, **FULL_STACK), make_team(name, **FULL_STACK)
    _, infos = env.reset(seed=3)
    twin.reset(seed=3)
    rng = np.random.default_rng(0)
    while env.agents:
        actions = _admissible_round(infos, rng)
        snapshot = pickle.dumps(env)
        for bad, error in [*REFUSED, ({**actions, "nobody": "wait"}, ValueError)]:
            with pytest.raises(error, match="Expect"):
                env.step(bad)
            # The world, the error schedules, the budget, the records and every RNG as they were.
            assert pickle.dumps(env) == snapshot
        *result, infos = env.step(actions)
        assert (*result, infos) == twin.step(actions)
    assert env.records == twin.records


# Slips at every round: they once hashed the agent's command and crashed halfway through a round.
SLIPS = {"schedule": {t: "slip" for t in range(1, len(HOSTILE) + 1)}}


@pytest.mark.parametrize("name", GAMES)
def test_hostile_commands_are_spent_turns_under_the_full_stack(name):
    env = make_team(name, turn_budget=len(HOSTILE), errors=SLIPS, record=True, reveal="always")
    env.reset(seed=0)
    for bad in HOSTILE:
        observations, _, _, _, infos = env.step(dict.fromkeys(env.agents, bad))
        assert not any(i["valid_action"] for i in infos.values())
        assert all(o["text"].strip() for o in observations.values())  # feedback, not silence
    steps = [r for r in env.records if r["record"] == "step"]
    assert len(steps) == len(HOSTILE) * len(env.possible_agents)
    assert not any(r["valid_action"] or r["optimal"] for r in steps)


@pytest.mark.parametrize("name", GAMES)
def test_hostile_commands_are_spent_turns_under_the_full_aec_stack(name):
    env = make_team(name, aec=True, turn_budget=len(HOSTILE), errors=SLIPS, record=True)
    env.reset(seed=0)
    rounds = 0
    for turn, _agent in enumerate(env.agent_iter(max_iter=100)):
        _, _, terminated, truncated, info = env.last()
        assert info.get("valid_action", False) is False
        rounds = turn // len(env.possible_agents)
        env.step(None if terminated or truncated else HOSTILE[rounds])
    assert rounds == len(HOSTILE)  # every round played, then each agent's final step


@pytest.mark.parametrize("name", GAMES)
def test_step_before_reset_raises_under_every_stack(name):
    module = all_games[name]
    for env in (module.raw_env(), module.parallel_env(), make_team(name, **FULL_STACK)):
        with pytest.raises(gym.error.ResetNeeded, match="reset"):
            env.step(dict.fromkeys(env.possible_agents, "wait"))
        with pytest.raises(gym.error.ResetNeeded, match="reset"):
            env.step({})
    for env in (module.env(), make_team(name, aec=True, **FULL_STACK)):
        with pytest.raises(AssertionError, match="reset"):  # PettingZoo's own AEC check
            env.step("wait")


@pytest.mark.parametrize("name", GAMES)
def test_a_refused_aec_step_changes_nothing(name):
    """AEC: a step before reset is refused and leaves nothing behind; then play matches a fresh env."""
    env, twin = (make_team(name, aec=True, **FULL_STACK) for _ in range(2))
    with pytest.raises(AssertionError, match="reset"):
        env.step("wait")
    env.reset(seed=3)
    twin.reset(seed=3)
    rng = np.random.default_rng(0)
    for _agent in env.agent_iter(max_iter=200):
        observation, reward, terminated, truncated, info = env.last()
        assert (observation, reward, terminated, truncated, info) == twin.last()
        action = None if terminated or truncated else str(rng.choice(info["admissible_actions"]))
        env.step(action)
        twin.step(action)


@pytest.mark.parametrize("name", GAMES)
def test_a_refused_reset_leaves_no_half_reset_stack(name):
    """Errors outside the budget once restarted their schedule while the old episode played on."""
    env, twin = make_team(name, **FULL_STACK), make_team(name, **FULL_STACK)
    env.reset(seed=3)
    env.step(dict.fromkeys(env.agents, "wait"))
    for options in ({"turn_budget": 0}, {"repeat": -1}):
        with pytest.raises(ValueError, match="Expect"):
            env.reset(seed=5, options=options)
        with pytest.raises(gym.error.ResetNeeded, match="refused"):
            env.step(dict.fromkeys(env.possible_agents, "wait"))
    # A reset that succeeds starts exactly the episode a fresh env starts.
    observations, infos = env.reset(seed=5)
    assert (observations, infos) == twin.reset(seed=5)
    rng = np.random.default_rng(0)
    while env.agents:
        actions = _admissible_round(infos, rng)
        *result, infos = env.step(actions)
        assert (*result, infos) == twin.step(actions)


@pytest.mark.parametrize("stack", [{}, FULL_STACK], ids=["raw", "full"])
@pytest.mark.parametrize("name", GAMES)
def test_a_refused_aec_reset_is_no_reset(name, stack):
    """The AEC form counted a refused first reset as a reset: its next step failed inside
    PettingZoo ("'_CheckedAEC' object has no attribute 'agents'"). After a refused later
    reset, the round's first step was taken and buffered on the old episode's world."""
    env, twin = make_team(name, aec=True, **stack), make_team(name, aec=True, **stack)
    with pytest.raises(ValueError, match="Expect `seed`"):
        env.reset(seed=-1)
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before step"):
        env.step("wait")
    env.reset(seed=3)
    env.step("wait")
    with pytest.raises(ValueError, match="Expect `seed`"):
        env.reset(seed=-1)
    with pytest.raises(gym.error.ResetNeeded, match="refused"):
        env.step("wait")
    env.reset(seed=4)
    twin.reset(seed=4)
    for _agent in env.agent_iter(max_iter=40):
        last = env.last()
        assert last == twin.last()
        action = None if last[2] or last[3] else "wait"
        env.step(action)
        twin.step(action)


class _EqualsAnything(str):
    """A command whose own ``==`` says yes to every text (a str subclass may define it)."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize("name", GAMES)
def test_a_str_subclass_plays_as_its_plain_text(name):
    env, twin = make_team(name, **FULL_STACK), make_team(name, **FULL_STACK)
    _, infos = env.reset(seed=5)
    twin.reset(seed=5)
    rng = np.random.default_rng(1)
    while env.agents:
        actions = _admissible_round(infos, rng)
        actions[next(iter(actions))] = "dance"  # not admissible: its twin's == must not admit it
        hostile = {agent: _EqualsAnything(command) for agent, command in actions.items()}
        *result, infos = env.step(hostile)
        assert (*result, infos) == twin.step(actions)
    assert env.records == twin.records


@pytest.mark.parametrize("name", GAMES)
def test_the_aec_form_refuses_a_bad_action_at_its_agent_s_step(name):
    """AEC: an index out of range is refused at the step of the agent who gave it, naming it,
    and changes nothing (PettingZoo's conversion stored it and raised it at the round's last
    agent, then at every step until a reset); an action for a done agent is a ValueError and
    the done agent's None step still works (it was an AssertionError, then a KeyError on
    every step). Play then goes on exactly as a fresh env's."""
    env, twin = (make_team(name, aec=True, discrete_actions=8, turn_budget=2) for _ in range(2))
    env.reset(seed=3)
    twin.reset(seed=3)
    first = env.agent_selection
    for bad in (99, -1, 1.5):
        with pytest.raises(ValueError, match=f"Agent '{first}': Expect an action in Discrete"):
            env.step(bad)
        assert env.agent_selection == first
    for _agent in env.agent_iter(max_iter=50):
        assert pickle.dumps(env.last()) == pickle.dumps(twin.last())
        *_, terminated, truncated, _ = env.last()
        if terminated or truncated:
            with pytest.raises(ValueError, match=r"is done .* step it with None"):
                env.step(0)
            action = None
        else:
            action = 0
        env.step(action)
        twin.step(action)
    assert not env.agents
    for aec in (all_games[name].env(turn_budget=1), make_team(name, aec=True, turn_budget=1)):
        aec.reset(seed=0)
        for _ in aec.agents:  # one round: every agent is then truncated
            aec.step("wait")
        with pytest.raises(ValueError, match="is done"):
            aec.step("wait")
        while aec.agents:
            aec.step(None)


class _Unwritable:
    def __repr__(self) -> str:
        raise TypeError("__repr__ returned non-string")

    __str__ = __repr__


@pytest.mark.parametrize(
    "key",
    [10**5000, _Unwritable(), "x" * 1_000_000],
    ids=["huge int", "no repr", "a megabyte"],
)
def test_an_unknown_agent_is_named_briefly(key):
    """The message wrote every unknown key with ``str()``: a huge int or a key whose str()
    raises escaped as their own errors, and a 1 MB name made a 1 MB message."""
    env = make_team("vault_v0", record=True)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"Expect actions only for live agents") as refused:
        env.step({key: "wait", "runner": "wait"})
    assert len(str(refused.value)) < 300
    many = {f"ghost{i}": "wait" for i in range(10_000)}
    with pytest.raises(ValueError, match=r"got 'ghost0', 'ghost1', 'ghost10' and 9,997 more"):
        env.step(many)
