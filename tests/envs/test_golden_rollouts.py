"""Speed work must not change a game: fixed seeds and actions replay to recorded digests.

Each digest covers, for every turn of a seeded rollout of the bare game, the
observation, reward, flags and info, the oracle's answers (``distance_to_goal``,
``optimal_actions``), the rendered screen and, now and then, an injected setback's
narration. The actions mix admissible commands with free-form and invalid ones,
so the feedback for a refused command is replayed too. The digests were recorded
on the code before the issue-26 speed work (main at c019b2b); a difference means
a seeded world, an observation or an info value changed, which the registered
``-v0`` ids must never do.

The training features (`TextFeatures` and `HistoryFeatures` on the training
stack of `turnbudget.train.stack`) are replayed the same way: the float32 bytes
of every observation vector. Their digests were recorded again when `TaskSeeds`
stopped restarting the stack's streams with each task seed (a BudgetMix then drew
one budget per task): the episodes' budgets changed and nothing else (with one fixed
budget, the features replayed to the same digests before and after that change).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import turnbudget  # noqa: F401 - registers the envs

# Commands a player might type that are not (always) admissible.
_FREE_FORM = (
    "N",
    "  go   WEST ",
    "push box north",
    "pull the box",
    "craft stick",
    "craft iron sword",
    "gather stone",
    "gather plank",
    "craft wood",
    "craft dragon",
    "xyzzy",
    "",
    "go up",
)


def _bare(env_id: str, render_mode: str | None = "ansi") -> Any:
    kwargs = dict(gym.registry[env_id].kwargs)
    module_name, _, attr = kwargs.pop("game_entry_point").partition(":")
    kwargs.pop("turn_budget")
    return getattr(importlib.import_module(module_name), attr)(render_mode=render_mode, **kwargs)


def game_digest(env_id: str, seed: int, steps: int = 150) -> str:
    """Hash of a seeded rollout of the bare game with the oracle queried every turn."""
    game = _bare(env_id)
    rng = np.random.default_rng([seed, 26])
    digest = hashlib.sha256()

    def feed(*items: Any) -> None:
        digest.update(json.dumps(items, sort_keys=True, default=str).encode())

    obs, info = game.reset(seed=seed)
    feed(obs, info, game.render())
    episode = 0
    for _ in range(steps):
        roll = rng.random()
        actions = info["admissible_actions"] or ["look"]
        if roll < 0.15:
            action = _FREE_FORM[int(rng.integers(len(_FREE_FORM)))]
        else:
            action = actions[int(rng.integers(len(actions)))]
        obs, reward, terminated, truncated, info = game.step(action)
        feed(action, obs, float(reward), terminated, truncated, info, game.render())
        feed(game.distance_to_goal(), game.optimal_actions(), game.admissible_actions())
        if roll > 0.97 and not terminated:
            feed(game.inject_setback(np.random.default_rng([seed, episode, 7])))
            feed(game._describe(), game.admissible_actions(), game.distance_to_goal())
        if terminated or truncated:
            episode += 1
            obs, info = game.reset(seed=seed + 1000 * episode)
            feed(obs, info, game.render())
    return digest.hexdigest()


def features_digest(env_id: str, seed: int, steps: int = 150) -> str:
    """Hash of the training stack's feature vectors along a seeded rollout."""
    from turnbudget.train.config import TrainConfig
    from turnbudget.train.stack import make_env

    env = make_env(TrainConfig(env_id=env_id, budget_mix="uniform:12-40", seed=seed))
    rng = np.random.default_rng([seed, 27])
    digest = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    digest.update(obs.tobytes())
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(_mask(env))))
        obs, reward, terminated, truncated, info = env.step(action)
        digest.update(obs.tobytes())
        digest.update(f"{float(reward)!r} {terminated} {truncated}".encode())
        if terminated or truncated:
            obs, info = env.reset()
            digest.update(obs.tobytes())
    return digest.hexdigest()


def _mask(env: gym.Env) -> np.ndarray:
    from turnbudget.wrappers._common import find_wrapper
    from turnbudget.wrappers.discrete_actions import DiscreteActions

    return find_wrapper(env, DiscreteActions).action_masks()


GAME_DIGESTS: dict[tuple[str, int], str] = {
    (
        "turnbudget/Crafting-Easy-v0",
        0,
    ): "a463140eb2359460d83844db878430510281ba74b63f87569363dc04d2f757c9",
    (
        "turnbudget/Crafting-Easy-v0",
        1,
    ): "c6528cd5649d106fe5cb4ed80e1cf6069fe632ac2de6e49c0b78c2422abe7527",
    (
        "turnbudget/Crafting-Easy-v0",
        2,
    ): "13372fb3975c249f69c84822791d01922c0928b184edbda6f71bfdd29af16512",
    (
        "turnbudget/Crafting-Hard-v0",
        0,
    ): "ffca94badcaf55cb3bc9fc9fc334be8ed9c85dc54a8c1dc9a7ae4347a938a0b0",
    (
        "turnbudget/Crafting-Hard-v0",
        1,
    ): "ed6d7f19f12c5a2a98489b2d0366e1ac54dc1f680b5db3fb56e365949d8e7888",
    (
        "turnbudget/Crafting-Hard-v0",
        2,
    ): "9419facaa437222e94f1207e6c3e2fd382f233ed7ef2e9be17882a276db56e1f",
    (
        "turnbudget/Crafting-Medium-v0",
        0,
    ): "539bf32e444958225437906164a6538da9331468ec36f61155eef075da89cd38",
    (
        "turnbudget/Crafting-Medium-v0",
        1,
    ): "0cc4640d14249af5b4a43993675f59e252dda6fde34082cf8673ba3e70b8fdce",
    (
        "turnbudget/Crafting-Medium-v0",
        2,
    ): "c7f3026406534210d4aae461fc720d605ee590349c4f71e36ee2110465b5a3bf",
    (
        "turnbudget/Sokoban-Easy-v0",
        0,
    ): "5017552909ba1f8d7fc8589b171a3faf0b1fb67d22f99ee5832fefdeb4b7016d",
    (
        "turnbudget/Sokoban-Easy-v0",
        1,
    ): "70d835927a904aa6f7923c508970dc8b44096d3e0857d2ca39db7011929266c7",
    (
        "turnbudget/Sokoban-Easy-v0",
        2,
    ): "c0b509e2a4ee9389bc727cb9c372ad7a3dac6d509dbcf89b92df09fa445d9c78",
    (
        "turnbudget/Sokoban-Hard-v0",
        0,
    ): "573b92054c6a6f30ac7b4f6973ec4999a59099827201a10c68eb254e2a900749",
    (
        "turnbudget/Sokoban-Hard-v0",
        1,
    ): "d3fe03d7d6cf3f5074b592cc8d4cf4d5ebe6078a7d1e417120d61db2556e36b4",
    (
        "turnbudget/Sokoban-Hard-v0",
        2,
    ): "f7875e0e05d9ef08303b844f1fcdbbdca55301872fcf3a31934d54c2d6a2db4c",
    (
        "turnbudget/Sokoban-Medium-v0",
        0,
    ): "9528676dcf40b6cf5220221d755a2505e166d347026f7cd46f9786cb48792863",
    (
        "turnbudget/Sokoban-Medium-v0",
        1,
    ): "a666faebfba067c60b593abf43ca4545f1df5ddfe3cbc32202a386424198a72d",
    (
        "turnbudget/Sokoban-Medium-v0",
        2,
    ): "794b4bee5546b264e1ea987d4454ef239d509d654bed4ad3b1d539f7ff0a8e9e",
    # Recorded at 0f24d13, before the engine's step path was trimmed (the other games
    # share it).
    (
        "turnbudget/KeyQuest-Medium-v0",
        0,
    ): "58aefaf2f8550da8dfcbccdcda4f2695390d711293dcd61519baf2c12becb512",
    (
        "turnbudget/KeyQuest-Medium-v0",
        1,
    ): "76acabc9720f38f6eaa6bd6267dad820259e8324d7732fc1daf27a99137a9f9f",
    (
        "turnbudget/Maze-Medium-v0",
        0,
    ): "229db1ed09dc59cefbfa4b0cd2b2f86804f30d70d9f950956276a158b23c03ca",
    (
        "turnbudget/Maze-Medium-v0",
        1,
    ): "b3a907c2c51a69b4534eeb34a790078bb2a7972b2b0dce5909c0472f89edd6a4",
    (
        "turnbudget/Shop-Medium-v0",
        0,
    ): "0f3347822206e256ce64b37df0c890137126ea2c0cd5a2113f2e12b8866e06ce",
    (
        "turnbudget/Shop-Medium-v0",
        1,
    ): "f4e02ab8b5556e0292c2c85e15d26e9d66fc0f6b1c771b976279edc86dca53fb",
    (
        "turnbudget/KeyQuest-Hard-v0",
        0,
    ): "ca47ea103dadeaa036b9fd827ac55f71541119e43f9b715f5eb6a921a0a5b548",
    (
        "turnbudget/KeyQuest-Hard-v0",
        1,
    ): "da0999e174fce902504cad31ee1201a5eb8aa324de9da7895ef812c5fe897d39",
    (
        "turnbudget/Maze-Hard-v0",
        0,
    ): "05f11e61ef08209b96c8b8c1198663d1ffed61e2afd20d770e533c6d40d536f7",
    (
        "turnbudget/Maze-Hard-v0",
        1,
    ): "ab59eb2178793359486a45f4076d19d1430aac5f3b95ad4dc3a2dda6fd3f732e",
    (
        "turnbudget/Shop-Hard-v0",
        0,
    ): "22650301c6b7158c9e406bb0f5b4e9d2a17e12b4d64aac1b6e972d6a9f95f2b0",
    (
        "turnbudget/Shop-Hard-v0",
        1,
    ): "a9d1ae0177d8c851970a6151827b65fb2eb99676d9e6ab866845cc21ae05319e",
}

FEATURE_DIGESTS: dict[tuple[str, int], str] = {
    (
        "turnbudget/Crafting-Medium-v0",
        0,
    ): "d8b641477afc784dcca1bbb6109c1a514a2a2b38b6eabd1a86fbb456e78b57d5",
    (
        "turnbudget/Crafting-Medium-v0",
        1,
    ): "9ef56f52435a8c3a6813062ec6db78582e2a9a9bd9bb9baae38200649c0939b0",
    (
        "turnbudget/KeyQuest-Medium-v0",
        0,
    ): "7df25b27ea5a0148b5fb1d41475f78b6ccfdfe96eaeddf7589efe59202248891",
    (
        "turnbudget/KeyQuest-Medium-v0",
        1,
    ): "947b168f29796a969799bf374eb42a4ba091dd87712707537ba82537e39dd757",
    (
        "turnbudget/Maze-Easy-v0",
        0,
    ): "fe078279dc6d2dd9420d0bf5ea07741791535fab3cd523f6759f2bce9d21c524",
    (
        "turnbudget/Maze-Easy-v0",
        1,
    ): "00828f8084adf624f767847386477c38e84c2204a59bbd30260709f93afcedad",
    (
        "turnbudget/Shop-Medium-v0",
        0,
    ): "ee54220ec44bcffa84f91933f53b35622e8eae943529b7ae411ca3d45a205dd4",
    (
        "turnbudget/Shop-Medium-v0",
        1,
    ): "c85581572b1a918adf86ea69f6488d64d3e10dffbf5f47113d91ed7f4c8cb6be",
    (
        "turnbudget/Sokoban-Medium-v0",
        0,
    ): "47132d7267e53e527d84a572961dc5d0c8615acffc55ccddc5d639302c6c7917",
    (
        "turnbudget/Sokoban-Medium-v0",
        1,
    ): "aac5a32f05c34b00963cdaee698166ddb57070eae6f471df20731762dd9f3895",
}


@pytest.mark.parametrize("key", sorted(GAME_DIGESTS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_game_replays_to_the_recorded_digest(key: tuple[str, int]) -> None:
    assert game_digest(*key) == GAME_DIGESTS[key]


@pytest.mark.parametrize("key", sorted(FEATURE_DIGESTS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_training_features_replay_to_the_recorded_digest(key: tuple[str, int]) -> None:
    assert features_digest(*key) == FEATURE_DIGESTS[key]
