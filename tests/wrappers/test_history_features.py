"""HistoryFeatures: its features can be rebuilt from text alone, and it records what was executed."""

from __future__ import annotations

import re

import numpy as np
import pytest

import turnbudget
from turnbudget.wrappers import InjectErrors
from turnbudget.wrappers.history_features import (
    FeatureEncoder,
    HistoryFeatures,
    text_features_vector,
)
from turnbudget.wrappers.text_features import hashed_ngrams

IDS = ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0"]


def make(env_id: str, reveal: str | None = "always", **kwargs):
    env = turnbudget.make(env_id, turn_budget=20, reveal=reveal, discrete_actions=10,
                          text_features={"block_dim": 32}, info="text", **kwargs)  # fmt: skip
    return HistoryFeatures(env, history=3, command_dim=8, budget=reveal == "always")


def test_the_budget_features_show_only_on_the_turns_the_text_shows_the_budget():
    """With ``reveal="final=2"`` the numbers (turns left / 100, turns left / budget,
    1 / turns left) were in every observation: a policy learnt the budget the text hid."""

    def episode(budget: int) -> list[tuple[bool, np.ndarray]]:
        env = HistoryFeatures(
            turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=budget, reveal="final=2",
                            discrete_actions=6, text_features={"block_dim": 32}, info="text"),
            history=2, command_dim=8, budget=True,
        )  # fmt: skip
        obs, info = env.reset(seed=0)
        seen = [(info["budget_visible"], obs[-3:])]
        while True:
            obs, _, terminated, truncated, info = env.step(
                int(np.flatnonzero(info["action_mask"])[0])
            )
            seen.append((info["budget_visible"], obs[-3:]))
            if terminated or truncated:
                return seen

    short, long = episode(12), episode(30)
    hidden = [tail for visible, tail in short + long if not visible]
    shown = [(visible, tail) for visible, tail in short if visible]
    assert hidden and all(tail.tolist() == [0.0, 0.0, 1.0] for tail in hidden)
    # (turns left 2, 1 and the last observation's 0)
    assert len(shown) == 3 and shown[0][1].tolist() == pytest.approx([0.02, 2 / 12, 0.5])
    # (the hidden turns of a 12- and a 30-turn episode give the same vectors: no budget in them)
    assert [t.tolist() for _, t in short[:5]] == [t.tolist() for _, t in long[:5]]


@pytest.mark.parametrize("env_id", IDS)
def test_features_rebuilt_from_text_match_the_wrapper(env_id):
    env = make(env_id)
    spec = env.spec_dict()
    rng = np.random.default_rng(0)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        encoder = FeatureEncoder(spec["max_actions"], spec["history"], spec["command_dim"], True)
        goal = info["goal"]
        encoder.reset(goal)
        done = False
        while True:
            text = info["text_observation"]
            commands = sorted(info["admissible_actions"])[: spec["max_actions"]]
            base = text_features_vector(text, goal, info["admissible_actions"],
                                        spec["text_features"])  # fmt: skip
            rebuilt = np.concatenate([base, encoder.encode(text, commands, info["turns_left"],
                                                           info["turn_budget"])])  # fmt: skip
            np.testing.assert_array_equal(rebuilt, obs)
            if done:
                break
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            encoder.record(info["action_commands"][action])
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated


def test_a_slip_is_recorded_as_the_command_that_ran():
    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=30)
    env = InjectErrors(env, schedule={1: "slip"})
    env = HistoryFeatures(turnbudget.make(env, reveal="never", discrete_actions=6, text_features=16,
                                          info="text"), history=2, command_dim=8)  # fmt: skip
    _, info = env.reset(seed=3)
    _, _, _, _, info = env.step(0)
    slip = info["injected_error"]
    assert slip["kind"] == "slip"
    if slip["applied"]:
        assert list(env.encoder._executed) == [slip["replaced_action"]]


def test_spec_round_trips_the_stack_settings():
    spec = make("turnbudget/Maze-Easy-v0").spec_dict()
    assert spec["text_features"] == {"dim": 32, "ngrams": 2, "include_goal": True,
                                     "include_admissible": False}  # fmt: skip
    assert spec["max_actions"] == 10 and spec["history"] == 3 and spec["budget"] is True
    assert spec["reveal"]["mode"] == "always"
    assert make("turnbudget/Maze-Easy-v0", reveal=None).spec_dict()["reveal"] is None


def test_bad_stacks_and_arguments_are_refused():
    with pytest.raises(ValueError, match="info='text'"):
        HistoryFeatures(turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=5,
                                        text_features=16))  # fmt: skip
    with pytest.raises(ValueError, match="DiscreteActions then TextFeatures"):
        HistoryFeatures(turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=5))
    with pytest.raises(ValueError, match="RevealBudget"):
        HistoryFeatures(turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=5,
                                        text_features=16, info="text"), budget=True)  # fmt: skip
    with pytest.raises(ValueError, match="`history` to be a positive int"):
        make_plain = turnbudget.make(
            "turnbudget/Maze-Easy-v0", discrete_actions=5, text_features=16, info="text"
        )
        HistoryFeatures(make_plain, history=0)


def test_revisits_show_in_the_memory_features():
    encoder = FeatureEncoder(max_actions=2, history=2, command_dim=4, budget=False)
    encoder.reset("Find the Amber Hall.")
    room_a, room_b = (
        "You are in Red Room. Exits lead north.",
        "You are in Blue Den. Exits lead south.",
    )
    first = encoder.encode(room_a, ["go north", "look"])
    encoder.record("go north")
    encoder.encode(room_b, ["go south", "look"])
    encoder.record("go south")
    back = encoder.encode(room_a, ["go north", "look"])
    memory = slice(2 * encoder.slot_size + 2 * 4, 2 * encoder.slot_size + 2 * 4 + 3)
    assert first[memory].tolist() == [0.0, 0.0, 0.0]  # nothing seen before
    assert back[memory][1] == pytest.approx(1.0)  # two turns ago: the same room
    assert back[memory][2] == pytest.approx(1.0)  # the best match anywhere in the episode
    assert back[memory][0] < 1.0


def _plain_features(obs, commands, executed, goal, turns, seen, left, budget, sizes):
    """`FeatureEncoder`'s features computed plainly from text, in the order its docstring lists
    them (no memo): the reference its memoized blocks must equal bit for bit (issue 26)."""
    max_actions, history, dim = sizes
    goal_words = _plain_words(goal)
    slots = np.zeros((max_actions, dim + 1 + history))
    for slot, command in enumerate(commands[:max_actions]):
        slots[slot, :dim] = hashed_ngrams(command, dim, 2)
        words = _plain_words(command)
        slots[slot, dim] = len(words & goal_words) / max(1, len(words))
        for lag, done in enumerate(executed):
            slots[slot, dim + 1 + lag] = float(done == command)
    window = np.zeros((history, dim))
    for lag, done in enumerate(executed):
        window[lag] = hashed_ngrams(done, dim, 2)
    unit = hashed_ngrams(obs, 64, 1).astype(np.float64)
    unit /= max(np.sqrt(unit @ unit), 1e-8)
    similarity = (np.array(seen) @ unit).tolist() if seen else []
    recent = (similarity[::-1] + [0.0] * history)[:history]
    seen.append(unit)
    tail = [*recent, max(similarity, default=0.0)]
    tail += [len(goal_words & _plain_words(obs)) / max(1, len(goal_words)), turns / 100]
    tail += [left / 100, left / budget, 1 / max(left, 1)]
    return np.concatenate([slots.ravel(), window.ravel(), tail]).astype(np.float32)


def _plain_words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


@pytest.mark.parametrize(
    "env_id",
    ["turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0", "turnbudget/Crafting-Easy-v0",
     "turnbudget/Sokoban-Easy-v0", "turnbudget/Shop-Easy-v0"],
)  # fmt: skip
def test_memoized_features_equal_the_plain_computation(env_id):
    # Slots, window, memory, goal share and budget along real episodes, one encoder over
    # several episodes (its memos warm: states, windows and their pairs repeat, and new ones
    # come), against a computation from the text alone.
    sizes = (4, 3, 8)  # max_actions (fewer slots than some games' commands), history, command_dim
    encoder = FeatureEncoder(*sizes, budget=True)
    env = turnbudget.make(env_id, turn_budget=25, reveal="always", info="text")
    rng = np.random.default_rng(1)
    for seed in range(3):  # (the features of each episode's last observation included)
        obs, info = env.reset(seed=seed)
        goal, executed, seen, turns, done = info["goal"], [], [], 0, False
        encoder.reset(goal)
        while True:
            commands = sorted(info["admissible_actions"])
            left, budget = info["turns_left"], info["turn_budget"]
            expected = _plain_features(obs, commands, executed, goal, turns, seen, left, budget,
                                       sizes)  # fmt: skip
            np.testing.assert_array_equal(encoder.encode(obs, commands, left, budget), expected)
            if done:
                break
            command = commands[int(rng.integers(min(len(commands), sizes[0])))] if commands else ""
            encoder.record(command)
            executed = [command, *executed][: sizes[1]]
            turns += 1
            obs, _, terminated, truncated, info = env.step(command)
            done = terminated or truncated


def test_an_empty_batch_has_no_rows_and_the_batch_equals_its_turns_one_at_a_time():
    encoder = FeatureEncoder(4, 2, 8, budget=True)
    assert encoder.encode_batch([], [], [], [], []).shape == (0, encoder.size())
    episodes = [encoder.episode("find the exit"), encoder.episode("take the key")]
    texts = ["A hall.\n[3 turns left]", "A cellar with a key.\n[9 turns left]"]
    commands = [["go north", "look"], ["take key"]]
    batch = encoder.encode_batch(episodes, texts, commands, [3, 9], [5, 12])
    alone = FeatureEncoder(4, 2, 8, budget=True)
    for row, (goal, text, shown, left, budget) in enumerate(
        zip(["find the exit", "take the key"], texts, commands, [3, 9], [5, 12])
    ):
        alone.reset(goal)
        np.testing.assert_array_equal(batch[row], alone.encode(text, shown, left, budget))


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_a_copy_made_mid_episode_plays_on_as_the_original(copier):
    """The episode's memory held a memoryview: pickle and deepcopy of the stack were a
    TypeError ('cannot pickle memoryview objects')."""
    import copy
    import pickle

    clone = (lambda env: pickle.loads(pickle.dumps(env))) if copier == "pickle" else copy.deepcopy
    env = HistoryFeatures(
        turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=100, discrete_actions=6,
                        text_features={"block_dim": 32}, info="text"),
        history=3, command_dim=8,
    )  # fmt: skip
    _, info = env.reset(seed=0)
    for turns in (3, 70):  # (past 64 observations the memory has grown once)
        while env.encoder._episode.turns < turns:
            _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        twin = clone(env)
        runs = []
        for played in (env, twin):  # one after the other: the copy shares no memory
            actions = [int(np.flatnonzero(info["action_mask"])[0]), 5, 0, 1, 0]
            runs.append([played.step(a)[:4] for a in actions])
        for (obs, *rest), (twin_obs, *twin_rest) in zip(*runs):
            assert obs.tobytes() == twin_obs.tobytes() and rest == twin_rest
        info = env.step(0)[4]


@pytest.mark.parametrize("template", ["\n[Hurry up!]", "\n[{turns_used} turns used]"])
def test_budget_features_are_refused_when_the_revealed_text_shows_no_budget(template):
    """The features gave the policy the exact budget (turns left / T) while its text showed
    none: what a player could not see."""
    import turnbudget
    from turnbudget.wrappers import HistoryFeatures

    stack = turnbudget.make(
        "turnbudget/Maze-Easy-v0", discrete_actions=6, text_features=32, info="text",
        reveal={"mode": "always", "template": template},
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"template with \{turns_left\} or \{turn_budget\}"):
        HistoryFeatures(stack, history=2, command_dim=8, budget=True)
    assert HistoryFeatures(stack, history=2, command_dim=8, budget=False) is not None
