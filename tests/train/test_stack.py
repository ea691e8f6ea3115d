"""The training stack (`turnbudget.train.make_env`): features, task seeds, shaping at the budget's end."""

from __future__ import annotations

import numpy as np
import pytest

import turnbudget
from turnbudget.train import TrainConfig, make_env
from turnbudget.wrappers.process_reward import ProcessReward

MAZE = "turnbudget/Maze-Easy-v0"


def _find(env, cls):
    while not isinstance(env, cls):
        env = env.env
    return env


def _config(**kwargs) -> TrainConfig:
    base = dict(
        env_id=MAZE,
        turn_budget=6,
        process_reward=True,
        text_dim=16,
        command_dim=4,
        history=2,
        max_actions=6,
    )
    return TrainConfig(**{**base, **kwargs})


def _play(env, seed: int, steps: int) -> list[tuple[float, bool, dict]]:
    """Step a fixed action sequence (slot ``i % mask.sum()``) through whole episodes."""
    out = []
    _, info = env.reset(seed=seed)
    for i in range(steps):
        mask = info["action_mask"]
        action = int(np.flatnonzero(mask)[i % int(mask.sum())])
        _, reward, terminated, truncated, info = env.step(action)
        out.append((float(reward), truncated and not terminated, info["process_reward"]))
        if terminated or truncated:
            _, info = env.reset()
    return out


def test_shaping_is_zero_at_the_budget_end_exactly_when_the_learner_does_not_bootstrap():
    """A visible budget (auto: no bootstrap) zeroes Φ where the budget runs out, which is
    what the old ZeroPotentialAtBudgetEnd wrapper did after the fact: keep's reward minus
    γ·Φ(s') on the truncated turn, the same reward on every other turn."""
    zero = make_env(_config(reveal="always"))
    keep = make_env(_config(reveal="always", bootstrap_at_budget="yes"))
    assert _find(zero, ProcessReward).potential_at_truncation == "zero"
    assert _find(keep, ProcessReward).potential_at_truncation == "keep"
    assert _find(make_env(_config(reveal="never")), ProcessReward).potential_at_truncation == "keep"
    cut = 0
    for (r_zero, truncated, _), (r_keep, _, shaping) in zip(_play(zero, 3, 60), _play(keep, 3, 60)):
        if truncated:
            cut += 1
            assert r_zero == pytest.approx(r_keep - 0.99 * shaping["potential"], abs=1e-12)
            assert shaping["potential"] < 0  # Φ(s') kept: the cut was worth something
        else:
            assert r_zero == r_keep
    assert cut >= 5


def test_task_seeds_stay_in_the_training_range_and_follow_the_seed():
    config = _config(task_pool=5, process_reward=False)
    env = make_env(config, index=1)
    seen = set()
    for _ in range(30):
        env.reset()
        seen.add(env.unwrapped.np_random_seed)
    assert seen <= set(range(config.task_seed_base, config.task_seed_base + 5))
    assert len(seen) > 1


def _tasks_and_budgets(env, episodes: int, seed: int | None = None) -> list[tuple[int, int]]:
    """(task seed, turn budget) of each of ``episodes`` resets, the first with ``seed``."""
    drawn = []
    for i in range(episodes):
        _, info = env.reset(seed=seed if i == 0 else None)
        drawn.append((env.unwrapped.np_random_seed, info["turn_budget"]))
    return drawn


@pytest.mark.parametrize("batched", [False, True])
def test_a_budget_mix_draws_a_new_budget_for_every_episode_of_a_task(batched):
    """A pool's task met again meets new draws: the task seed reaches the game alone, not
    the BudgetMix's stream (which it once restarted, so that each task kept one budget)."""
    config = _config(task_pool=2, budget_mix="uniform:12-40", process_reward=False)
    drawn = _tasks_and_budgets(make_env(config, index=1, batched=batched), 60)
    per_task: dict[int, set[int]] = {}
    for task, budget in drawn:
        per_task.setdefault(task, set()).add(budget)
    assert set(per_task) == {config.task_seed_base, config.task_seed_base + 1}
    assert all(len(budgets) >= 8 for budgets in per_task.values()), per_task


def test_the_training_stack_replays_its_tasks_and_budgets_from_its_seed():
    config = _config(task_pool=0, budget_mix="uniform:12-40", process_reward=False)
    first = _tasks_and_budgets(make_env(config, index=3), 12)
    assert _tasks_and_budgets(make_env(config, index=3), 12) == first  # from the config's seed
    assert _tasks_and_budgets(make_env(config, index=4), 12) != first
    seeded = _tasks_and_budgets(make_env(config, index=3), 12, seed=7)  # a reset's seed restarts
    assert _tasks_and_budgets(make_env(config, index=4), 12, seed=7) == seeded != first
    assert all(task >= config.task_seed_base for task, _ in seeded)


def test_task_seeds_put_the_task_world_above_the_game_and_below_leave_the_seed_alone():
    import gymnasium as gym

    from turnbudget.train import TaskSeeds, TaskWorld

    env = TaskSeeds(turnbudget.make(MAZE, budget_mix="uniform:5-9"), 100, 3, 0)
    layer = env.env
    while not isinstance(layer, TaskWorld):
        layer = layer.env
    assert not isinstance(layer.env, gym.Wrapper)  # just above the game
    env.reset()
    assert env.unwrapped.np_random_seed in (100, 101, 102)
    env.env.reset(seed=5)  # from below TaskSeeds: that seed's world
    assert env.unwrapped.np_random_seed == 5
    assert TaskSeeds(env.env, 100, 3, 0).env is env.env  # one TaskWorld a stack


def test_the_observation_is_the_vector_the_encoding_describes():
    from turnbudget.agents.policy import _feature_size
    from turnbudget.train import training_encoding

    config = _config()
    obs, _ = make_env(config).reset(seed=0)
    assert obs.shape == (_feature_size(training_encoding(config, "Tanh")),)


@pytest.mark.rl
def test_the_learners_vector_env_carries_only_small_infos():
    """SB3 deep-copies every info of every step: the learner's envs keep plain scalars only
    (issue 26: the text keys cost more to copy than the game's step)."""
    pytest.importorskip("stable_baselines3")
    from turnbudget.train import _sb3
    from turnbudget.train.stack import TRAINING_INFO_KEYS

    venv = _sb3.vec_env(_config(n_envs=2))
    try:
        venv.reset()
        masks = venv.env_method("action_masks")
        _, _, _, infos = venv.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
        for info in infos:
            assert set(info) - {"TimeLimit.truncated", "episode", "terminal_observation"} == set(
                TRAINING_INFO_KEYS
            )
            assert all(type(info[key]) in (bool, int) for key in TRAINING_INFO_KEYS)
    finally:
        venv.close()


def _first_tasks(seed: int, vec_env: str) -> list[tuple[int, int]]:
    """(task seed, turn budget) of each sub-env's first episode in the learner's vector env
    seeded as MaskablePPO(seed=seed) seeds it."""
    from turnbudget.train import _sb3

    venv = _sb3.vec_env(
        _config(n_envs=3, task_pool=0, budget_mix="uniform:12-40", seed=seed, vec_env=vec_env)
    )
    try:
        venv.seed(seed)
        venv.reset()
        budgets = venv.env_method("get_wrapper_attr", "turn_budget")
        tasks = venv.env_method("get_wrapper_attr", "np_random_seed")  # the game's: its task
        return list(zip(tasks, budgets))
    finally:
        venv.close()


@pytest.mark.rl
@pytest.mark.parametrize("vec_env", ["dummy", "subproc"])
def test_training_seeds_share_no_sub_env_stream(vec_env):
    """SB3 seeds sub-env i with seed + i: runs seeded s and s + 1 played the same tasks and
    budgets in all but one of their sub-envs, and intervals over training seeds took them
    for independent runs."""
    pytest.importorskip("stable_baselines3")
    first = {seed: _first_tasks(seed, vec_env) for seed in (0, 1)}
    assert first[0] == _first_tasks(0, vec_env)  # still a function of the seed
    tasks = [task for seed in (0, 1) for task, _ in first[seed]]
    assert len(set(tasks)) == len(tasks), first


def test_a_thousandth_sub_env_shares_no_schedule_with_the_next_seed():
    """Sub-env 1000 + j of the run seeded s drew the budgets and tasks of sub-env j of the
    run seeded s + 1 (their seeds were seed * 1000 + index), with n_envs up to 1,024."""
    config = {"env_id": "turnbudget/Maze-Easy-v0", "n_envs": 1024, "total_steps": 10**5,
              "budget_schedule": ("uniform:5-60", "uniform:5-60")}  # fmt: skip
    late, next_seed = (
        make_env(TrainConfig(**config, seed=seed), index, batched=True)
        for seed, index in ((0, 1000), (1, 0))
    )
    drawn = [[env.reset()[1]["turn_budget"] for _ in range(8)] for env in (late, next_seed)]
    assert drawn[0] != drawn[1]


def _budgets(env, episodes: int, steps_per_episode: int) -> list[int]:
    """The turn budget of each of ``episodes`` episodes, each cut after a fixed number of steps."""
    budgets = []
    for _ in range(episodes):
        _, info = env.reset()
        budgets.append(info["turn_budget"])
        for i in range(steps_per_episode):
            mask = info["action_mask"]
            _, _, terminated, truncated, info = env.step(int(np.flatnonzero(mask)[i % mask.sum()]))
            if terminated or truncated:
                break
    return budgets


def test_a_budget_schedule_draws_short_budgets_first_then_longer_ones():
    """The progressive horizon: phase i of the schedule sets the budgets of the episodes that
    start in the i-th share of this sub-env's steps (total_steps / n_envs)."""
    config = _config(
        process_reward=False,
        budget_mix="uniform:12-40",  # replaced by the schedule's phases
        budget_schedule=("3", "uniform:5-6", "9"),
        total_steps=120,
        n_envs=4,  # 30 steps per sub-env: 10 per phase
    )
    env = make_env(config, index=2)
    # 3 steps per episode (no maze is won in 3: d* >= 5): episodes start at steps 0, 3, 6, ...
    budgets = _budgets(env, episodes=12, steps_per_episode=3)
    assert budgets[:4] == [3] * 4, budgets  # starting at steps 0..9: the first phase
    assert set(budgets[4:7]) <= {5, 6}, budgets  # 12..18: the second
    assert budgets[7:] == [9] * 5, budgets  # 21 on: the last phase, which runs on
    assert _budgets(make_env(config, index=2), 12, 3) == budgets  # reproducible from the seed


def test_a_budget_schedule_is_checked_before_training():
    with pytest.raises(ValueError, match="Cannot parse budget mix"):
        TrainConfig(budget_schedule=("uniform:5-9", "lots"))
    with pytest.raises(ValueError, match="Expect `budget_schedule` to be a sequence"):
        TrainConfig(budget_schedule="uniform:5-9")
    assert TrainConfig(budget_schedule=["10", "20"]).budget_schedule == ("10", "20")


def test_the_hidden_budget_stack_has_no_budget_features():
    """budgetmix-hidden's stack: the same world and commands, the budget in no feature."""
    shown = make_env(_config(process_reward=False, budget_mix="uniform:4-30", reveal="always"))
    hidden = make_env(_config(process_reward=False, budget_mix="uniform:4-30", reveal="never"))
    obs_shown, _ = shown.reset(seed=1)
    obs_hidden, _ = hidden.reset(seed=1)
    assert obs_hidden.shape[0] < obs_shown.shape[0]
    # Two episodes with other budgets give the hidden policy the same first observation.
    firsts = []
    for budget in (4, 30):
        obs, _ = hidden.reset(seed=1, options={"turn_budget": budget})
        firsts.append(obs)
    np.testing.assert_array_equal(*firsts)


@pytest.mark.parametrize(
    "settings",
    [{}, {"reveal": "never"}, {"budget_mix": "uniform:12-40", "process_reward": True}],
    ids=["default", "never", "mix-shaping"],
)
def test_the_training_stack_passes_gymnasiums_env_checker(settings):
    """Its spec listed the game's id with the stack's options and the wrappers `make_env`
    adds: `check_env` rebuilt it from the spec and failed ("TaskWorld wrapper does not
    inherit from RecordConstructorArgs"). No spec rebuilds this stack, so it has none."""
    from gymnasium.utils.env_checker import check_env

    env = make_env(TrainConfig(env_id="turnbudget/Maze-Easy-v0", **settings), 0)
    assert env.spec is None
    check_env(env, skip_render_check=True)


def test_a_budget_schedule_takes_no_bool_for_its_phase_length():
    """`steps_per_phase=True` was taken as 1 step per phase (a bool is an int to Python)."""
    from turnbudget.train.stack import BudgetSchedule

    env = turnbudget.make("turnbudget/Maze-Easy-v0")
    with pytest.raises(ValueError, match="`steps_per_phase` to be a positive int, got True"):
        BudgetSchedule(env, ["uniform:5-10"], True, 0)
