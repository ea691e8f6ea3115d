"""PettingZoo's own API and seed tests over every game and difficulty."""

from __future__ import annotations

import pickle
import warnings

import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    seed_test,
)

from turnbudget.multiagent import TEXT_KEY, all_games

DIFFICULTIES = ("easy", "medium", "hard")
CASES = [(name, d) for name in sorted(all_games) for d in DIFFICULTIES]
IDS = [f"{name.split('/')[-1]}-{d}" for name, d in CASES]


@pytest.fixture(autouse=True)
def _quiet_pettingzoo_warnings():
    # api_test's advice for array games: text games have neither NumPy observations nor
    # Box/Discrete spaces, and roles ("operator", "runner") say more than "player_0".
    with warnings.catch_warnings():
        for message in (
            "Observation is not a NumPy array",
            "Observation space for each agent probably",
            "Action space for each agent probably",
            "We recommend agents to be named",
        ):
            warnings.filterwarnings("ignore", message=message)
        yield


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_aec_api(name, difficulty):
    api_test(all_games[name].env(difficulty=difficulty), num_cycles=200)


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_parallel_api(name, difficulty):
    parallel_api_test(all_games[name].parallel_env(difficulty=difficulty), num_cycles=200)


@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=IDS)
def test_seed(name, difficulty):
    module = all_games[name]
    seed_test(lambda: module.env(difficulty=difficulty), num_cycles=50)
    parallel_seed_test(lambda: module.parallel_env(difficulty=difficulty), num_cycles=50)


@pytest.mark.parametrize("name", sorted(all_games))
def test_max_cycles(name):
    """PettingZoo's own test: ``max_cycles`` is the team budget in rounds (issue 25)."""
    max_cycles_test(all_games[name])
    with pytest.raises(ValueError, match="pass one"):
        all_games[name].parallel_env(turn_budget=5, max_cycles=4)


@pytest.mark.parametrize("name", sorted(all_games))
def test_module_shape(name):
    module = all_games[name]
    for attr in ("env", "parallel_env", "raw_env"):
        assert callable(getattr(module, attr)), attr
    raw = module.raw_env()
    assert raw.metadata["name"] == name.split("/")[-1]
    for agent in raw.possible_agents:
        assert raw.observation_space(agent) is raw.observation_space(agent)
        assert raw.action_space(agent) is raw.action_space(agent)
    observations, _ = raw.reset(seed=0)
    for agent, obs in observations.items():
        assert set(obs) == {TEXT_KEY}
        assert raw.observation_space(agent).contains(obs)


@pytest.mark.parametrize("name", sorted(all_games))
def test_pickle_round_trip(name):
    env = all_games[name].parallel_env()
    env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(env))
    actions = {a: "wait" for a in env.agents}
    assert clone.step(actions) == env.step(actions)


@pytest.mark.parametrize("name", sorted(all_games))
def test_bad_difficulty_and_render_mode(name):
    module = all_games[name]
    with pytest.raises(ValueError, match="difficulty"):
        module.raw_env(difficulty="impossible")
    with pytest.raises(ValueError, match="render_mode"):
        module.raw_env(render_mode="rgb_array")


@pytest.mark.parametrize("name", sorted(all_games))
def test_human_mode_shows_each_round_as_it_is_played(name, capsys):
    """PettingZoo's "human": rendered during reset and step. Nothing was shown until
    render() was called."""
    env = all_games[name].parallel_env(render_mode="human")
    env.reset(seed=0)
    first = capsys.readouterr().out
    assert first.strip() and all(f"[{agent}]" in first for agent in env.possible_agents)
    env.step({agent: "wait" for agent in env.agents})
    assert capsys.readouterr().out.strip()


def test_missing_pettingzoo_names_the_extra():
    """The team games without PettingZoo raised a bare "No module named 'pettingzoo'" from
    deep in the package (`turnbudget.eval.evaluate_team` too); TextWorld and training name
    their extra."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['pettingzoo'] = None\n"
        "for name in ('turnbudget.multiagent', 'turnbudget.eval'):\n"
        "    try:\n"
        "        exec(f'from {name} import evaluate_team' if name == 'turnbudget.eval' "
        "else f'import {name}')\n"
        "    except ModuleNotFoundError as e:\n"
        "        assert \"pip install -e '.[multiagent]' in the turnbudget checkout\" in str(e), e\n"
        "    else:\n"
        "        raise SystemExit(f'{name}: no ModuleNotFoundError')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
