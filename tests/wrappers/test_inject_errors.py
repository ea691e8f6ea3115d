"""InjectErrors: the three kinds, schedules, common random numbers, construction errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from _wrapper_stub import STUB_ID, LineWorld
from hypothesis import given, settings
from hypothesis import strategies as st

from turnbudget.wrappers import DiscreteActions, InjectErrors, TurnBudget
from turnbudget.wrappers._common import seed_sequence, seeded_rng


def stub(**kwargs) -> gym.Env:
    return gym.make(STUB_ID, **{"length": 50, "turn_budget": 40, **kwargs})


def test_setback_on_schedule_increases_distance_and_narrates():
    env = InjectErrors(stub(), schedule={3: "setback"})
    env.reset(seed=0)
    events = []
    for _ in range(4):
        obs, _, _, _, info = env.step("forward")
        events.append(info.get("injected_error"))
    assert events[0] is None and events[1] is None and events[3] is None
    event = events[2]
    assert event["kind"] == "setback" and event["turn"] == 3 and event["applied"]
    assert event["distance_after"] > event["distance_before"]
    assert info["valid_action"]


def test_setback_narration_precedes_the_observation():
    env = InjectErrors(stub(), schedule=[(1, "setback")])
    env.reset(seed=0)
    obs, *_ = env.step("forward")
    assert obs.startswith("A wind blows you back") and "You step forward." in obs


def test_transient_spends_the_turn_and_changes_nothing():
    env = InjectErrors(stub(), schedule={1: "transient"})
    _, info0 = env.reset(seed=0)
    pos = env.unwrapped.pos
    obs, reward, terminated, truncated, info = env.step("forward")
    assert env.unwrapped.pos == pos
    assert info["turns_used"] == 1 and info["turns_left"] == info0["turns_left"] - 1
    assert info["valid_action"] is True  # the agent's command was fine; the env failed it
    assert obs.startswith("Your attempt fails") and "You can't do that" not in obs
    event = info["injected_error"]
    assert event["kind"] == "transient" and event["distance_before"] == event["distance_after"]
    _, _, _, _, info = env.step("forward")
    assert env.unwrapped.pos == pos + 1


def test_slip_replaces_the_command_with_a_safe_non_optimal_one():
    for seed in range(30):
        env = InjectErrors(stub(), schedule={1: "slip"})
        env.reset(seed=seed)
        obs, _, terminated, _, info = env.step("forward")
        event = info["injected_error"]
        assert event["applied"] and event["replaced_action"] in ("back", "wait")
        assert not env.unwrapped.lost and not terminated  # never the trap
        assert event["distance_after"] >= event["distance_before"]
        assert obs.startswith("Your hand slips")


def test_slip_does_not_apply_when_no_safe_alternative_exists():
    env = InjectErrors(stub(trap=True), schedule={1: "slip"})
    env.reset(seed=0)
    env.unwrapped.pos = 0
    env.get_wrapper_attr("_admissible")[:] = ["forward", "jump"]  # only the trap is not optimal
    _, _, terminated, _, info = env.step("forward")
    assert info["injected_error"]["applied"] is False
    assert env.unwrapped.pos == 1 and not terminated


def test_rate_zero_never_fires_and_rate_one_always_does():
    quiet = InjectErrors(stub(), rate=0.0)
    loud = InjectErrors(stub(), rate=1.0, kinds=["transient"])
    for env, expected in ((quiet, False), (loud, True)):
        env.reset(seed=1)
        for _ in range(10):
            info = env.step("wait")[-1]
            assert ("injected_error" in info) == expected


def test_rate_matches_frequency_and_weights():
    env = InjectErrors(
        stub(length=10**6, turn_budget=10**6), rate=0.2, kinds=["slip", "transient"], weights=[1, 3]
    )
    env.reset(seed=5)
    kinds = [env.step("wait")[-1].get("injected_error") for _ in range(3000)]
    fired = [k["kind"] for k in kinds if k is not None]
    assert abs(len(fired) / 3000 - 0.2) < 0.03
    assert abs(fired.count("transient") / len(fired) - 0.75) < 0.06


def schedule_of(env: InjectErrors, seed: int, actions: list[str]) -> list[tuple[int, str]]:
    env.reset(seed=seed)
    out = []
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        if "injected_error" in info:
            out.append((info["injected_error"]["turn"], info["injected_error"]["kind"]))
        if terminated or truncated:
            break
    return out


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    rate=st.floats(0.0, 1.0),
    agent_a=st.lists(
        st.sampled_from(["forward", "back", "wait", "dance"]), min_size=30, max_size=30
    ),
    agent_b=st.lists(
        st.sampled_from(["forward", "back", "wait", "dance"]), min_size=30, max_size=30
    ),
)
def test_common_random_numbers_errors_do_not_depend_on_actions(seed, rate, agent_a, agent_b):
    def make():
        return InjectErrors(stub(length=1000, trap=False), rate=rate)

    a, b = schedule_of(make(), seed, agent_a), schedule_of(make(), seed, agent_b)
    assert a == b
    planned = make()
    planned.reset(seed=seed)
    assert a == [(t, k) for t in range(1, 31) if (k := planned.planned_error(t)) is not None]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    rate=st.floats(0.1, 1.0),
    actions=st.lists(
        st.sampled_from(["forward", "back", "wait", "dance", "jump"]), min_size=1, max_size=40
    ),
)
def test_task_stays_solvable_after_every_slip_and_setback(seed, rate, actions):
    env = InjectErrors(stub(length=8, turn_budget=40), rate=rate, kinds=["slip", "setback"])
    env.reset(seed=seed)
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        event = info.get("injected_error")
        if event is not None and event["applied"]:
            assert event["distance_after"] is not None
            if event["kind"] == "slip":
                assert event["replaced_action"] != "jump"
        if terminated or truncated:
            break


def test_unseeded_resets_continue_a_seeded_stream():
    def run():
        env = InjectErrors(stub(length=1000), rate=0.3)
        return [schedule_of(env, 9, ["wait"] * 20)] + [
            schedule_of_unseeded(env, ["wait"] * 20) for _ in range(3)
        ]

    def schedule_of_unseeded(env, actions):
        env.reset()
        return [env.step(a)[-1].get("injected_error") for a in actions]

    assert run() == run()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": -0.1}, r"\[0, 1\], got -0.1"),
        ({"rate": 1.5}, r"\[0, 1\]"),
        ({"rate": float("nan")}, r"\[0, 1\]"),
        ({"rate": "0.1"}, r"\[0, 1\]"),
        ({"rate": 0.1, "kinds": ["slip", "meteor"]}, "Unknown error kind 'meteor'"),
        ({"rate": 0.1, "kinds": []}, "at least one"),
        ({"rate": 0.1, "kinds": "slip"}, "sequence of error kinds"),
        ({"rate": 0.1, "kinds": ["slip", "slip"]}, "without repeats"),
        ({"rate": 0.1, "kinds": ["slip"], "weights": [1, 2]}, "one weight per kind"),
        ({"rate": 0.1, "kinds": ["slip"], "weights": [-1]}, "weight"),
        ({"schedule": {0: "slip"}}, "positive int"),
        ({"schedule": {3: "meteor"}}, "Unknown error kind"),
        ({"schedule": [(3, "slip"), (3, "setback")]}, "twice"),
        ({"schedule": [3, 4]}, "Expect `schedule`"),
        ({"transient_message": None}, "transient_message"),
    ],
)
def test_bad_configuration_raises_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InjectErrors(stub(), **kwargs)


def test_env_without_the_oracle_raises_at_construction():
    bare = gym.make(STUB_ID, oracle=False)
    with pytest.raises(TypeError, match="distance_to_goal"):
        InjectErrors(bare, rate=0.1, kinds=["transient"])
    with pytest.raises(TypeError, match="inject_setback"):

        class NoSetback(LineWorld):
            inject_setback = None

        InjectErrors(TurnBudget(NoSetback(), 5), schedule={1: "setback"})
    InjectErrors(TurnBudget(NoSetback(), 5), rate=0.5, kinds=["slip", "transient"])  # fine


def test_wraps_once():
    with pytest.raises(ValueError, match="already in this stack"):
        InjectErrors(InjectErrors(stub(), rate=0.1), rate=0.1)


def test_seeds_past_63_bits_draw_their_own_budgets_and_errors():
    """The seeder masked a seed to 63 bits: seeds 5 and 5 + 2**63 (both valid, up to
    2**64 - 1) drew the same BudgetMix budget and the same error schedule. Seeds below
    2**63 draw as before (seed 5's draws, recorded)."""
    import turnbudget

    def draws(seed: int) -> tuple[int, str]:
        env = turnbudget.make("turnbudget/Maze-Easy-v0", budget_mix="uniform:5-1000", errors=0.5)
        _, info = env.reset(seed=seed)
        planned = env.get_wrapper_attr("planned_error")
        return info["turn_budget"], "".join((planned(t) or "-")[0] for t in range(1, 30))

    assert draws(5) == (195, "-t--ssst-ss--s-ts---s---s-ss-")
    assert draws(5 + 2**63) != draws(5) and draws(2**64 - 1) != draws(2**63 - 1)
    assert draws(5 + 2**63) == draws(5 + 2**63)


def test_errors_are_rng_local():
    state = np.random.get_state()[1].copy()
    env = InjectErrors(stub(), rate=0.5)
    schedule_of(env, 0, ["wait"] * 20)
    assert (np.random.get_state()[1] == state).all()


def test_unchecked_slips_can_hit_the_trap_checked_ones_never_do():
    picks = {True: set(), False: set()}
    for check in (True, False):
        for seed in range(40):
            env = InjectErrors(stub(), schedule={1: "slip"}, check_slips=check)
            env.reset(seed=seed)
            picks[check].add(env.step("forward")[-1]["injected_error"]["replaced_action"])
    assert "jump" not in picks[True] and "jump" in picks[False]


def test_a_setback_whose_blind_command_would_lose_the_game_does_not_fire():
    """Sokoban: a setback moved the player, and the command it had chosen (optimal for the
    state it saw) then pushed a box into a corner: 9 of 40 episodes of an always-optimal
    agent lost to an error that is meant to be recoverable. Checked, the setback does not
    fire there (``applied`` False, nothing narrated); unchecked, the loss is still there."""

    def play(check: bool) -> tuple[int, list[dict]]:
        lost, held_back = 0, []
        for seed in range(40):
            env = gym.make("turnbudget/Sokoban-Easy-v0", turn_budget=200,
                           errors={"rate": 0.3, "kinds": ["setback"], "check_slips": check})  # fmt: skip
            env.reset(seed=seed)
            while True:
                obs, _, terminated, truncated, info = env.step(env.unwrapped.optimal_actions()[0])
                event = info.get("injected_error")
                if event and not event["applied"]:
                    held_back.append(event)
                    assert not obs.startswith(("A trapdoor", "Distracted"))
                if terminated or truncated:
                    break
            lost += info["lost"]
        return lost, held_back

    lost, held_back = play(check=True)
    assert lost == 0 and held_back
    assert all(e["distance_after"] == e["distance_before"] for e in held_back)
    assert play(check=False)[0] > 0


def test_a_setbacks_look_ahead_plays_the_action_through_the_wrappers_below():
    """Setbacks take any action space: the look-ahead sent an index from `DiscreteActions`
    straight to the game ("Expect the action to be a str, got int"), failing every turn."""
    from turnbudget.wrappers import DiscreteActions

    env = InjectErrors(
        DiscreteActions(gym.make("turnbudget/Sokoban-Easy-v0"), max_actions=8),
        kinds=["setback"],
        rate=1.0,
    )
    env.reset(seed=0)
    events = [env.step(0)[-1]["injected_error"] for _ in range(5)]
    assert all(e["kind"] == "setback" for e in events) and any(e["applied"] for e in events)


@pytest.mark.parametrize(
    "env_id",
    ["turnbudget/Maze-Medium-v0", "turnbudget/KeyQuest-Medium-v0", "turnbudget/Crafting-Medium-v0"],
)
def test_a_game_whose_commands_keep_it_solvable_is_not_copied_for_a_slip(env_id, monkeypatch):
    """A checked slip plays its candidate on a copy of the game (~40 us) unless the game
    declares ``commands_keep_solvable``: then the check could only pass, so it is skipped,
    and the slips and observations are those the look-ahead gives."""
    from turnbudget.envs.native.base import TextGame

    def play(declared: bool) -> list:
        env = InjectErrors(gym.make(env_id), rate=0.5, kinds=["slip"])
        if not declared:
            env._look_ahead = True  # (what the wrapper did before the declaration)
        seen = []
        for seed in range(6):
            env.reset(seed=seed)
            for turn in range(40):
                actions = env.unwrapped.admissible_actions()
                obs, _, terminated, truncated, info = env.step(actions[turn % len(actions)])
                seen.append((obs, info.get("injected_error")))
                if terminated or truncated:
                    break
        return seen

    checked = play(declared=False)
    copies = []
    real_copy = TextGame.__deepcopy__
    monkeypatch.setattr(
        TextGame, "__deepcopy__", lambda self, memo: copies.append(1) or real_copy(self, memo)
    )
    declared = play(declared=True)
    assert not copies
    assert declared == checked
    slips = [e for _, e in declared if e and e["applied"]]
    assert len(slips) > 50


class _Interrupted(Exception):
    """Stands in for what an evaluation raises in an episode past its time (a SIGALRM)."""


def _slip_on_a_game_whose_copy_raises(error: Exception, caplog) -> dict:
    env = InjectErrors(stub(), schedule={1: "slip"})
    env.reset(seed=0)

    def copy_raises(memo):
        raise error

    env.unwrapped.__deepcopy__ = copy_raises  # (the instance's own: `copy` looks it up there)
    with caplog.at_level("WARNING", logger="turnbudget.wrappers.inject_errors"):
        return env.step("forward")[-1]["injected_error"]


@pytest.mark.parametrize(
    "error", [TypeError("cannot pickle '_thread.lock' object"), RecursionError()]
)
def test_a_game_that_cannot_be_copied_slips_unchecked_with_a_warning(error, caplog):
    event = _slip_on_a_game_whose_copy_raises(error, caplog)
    assert event["applied"] and event["replaced_action"] in ("back", "wait", "jump")
    assert "slips and setbacks are not checked for solvability" in caplog.text


def test_an_interruption_while_a_slip_copies_the_game_is_not_swallowed(caplog):
    """An episode's timeout landing in the copy must end the step, not read as 'cannot copy'
    (the episode would play on, its one alarm spent)."""
    with pytest.raises(_Interrupted):
        _slip_on_a_game_whose_copy_raises(_Interrupted(), caplog)
    assert "not checked" not in caplog.text


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.integers(0, 2**130) | st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**63 - 1]), max_size=6
    )
)
def test_seeded_rng_is_default_rng_of_the_same_values(values):
    """The wrappers' per-episode and per-turn generators (`seeded_rng`) are NumPy's own, word for
    word: the runs they seed draw what they drew with ``default_rng``."""
    assert (
        seeded_rng(*values).bit_generator.state == np.random.default_rng(values).bit_generator.state
    )
    assert (
        seed_sequence(*values).generate_state(3) == np.random.SeedSequence(values).generate_state(3)
    ).all()


def test_seeded_rng_refuses_a_negative_value_as_numpy_does():
    with pytest.raises(ValueError):
        np.random.default_rng([3, -1])
    with pytest.raises(ValueError, match=">= 0"):
        seeded_rng(3, -1)


def test_an_oracle_answering_numpy_ints_gives_records_evaluate_can_write(tmp_path):
    """A game whose ``distance_to_goal`` answers NumPy ints: the injected error kept them, the
    step records then held NumPy values in six columns, and with ``out=`` every episode with an
    error 'failed to run' (TypeError: Object of type int64 is not JSON serializable)."""
    import json

    from turnbudget.agents import make_agent
    from turnbudget.eval import evaluate

    class NumpyLine(LineWorld):
        def distance_to_goal(self):
            distance = super().distance_to_goal()
            return None if distance is None else np.int64(distance)

    env_id = "turnbudget-test/NumpyLine-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=lambda **kw: TurnBudget(NumpyLine(length=8), 30),
                     disable_env_checker=True)  # fmt: skip
    kwargs = dict(ks=[1], ts=[30], tasks=4, n=2, errors=0.3, seed=0, n_bootstrap=0)
    kept = evaluate(env_id, make_agent("random"), **kwargs)
    written = evaluate(env_id, make_agent("random"), out=tmp_path / "run", **kwargs)
    assert sum(bool(s["injected_error"]) for s in kept.steps) > 5
    assert not any(e.get("failed_to_run") for e in written.episodes)
    lines = (tmp_path / "run" / "steps.jsonl").read_text().splitlines()
    assert sorted(lines) == sorted(json.dumps(s, separators=(",", ":")) for s in kept.steps)


@pytest.mark.parametrize("command", ["LOOK", "  Look ", "l"])
def test_a_slip_never_replaces_a_command_by_itself_respelt(command):
    """A slip replaces the command by another admissible one: an agent's "LOOK" (the game
    plays "look") was replaced by "look" on 28 seeds in 40, an error narrated and counted
    that changed nothing."""
    import turnbudget

    applied = 0
    for seed in range(40):
        env = turnbudget.make("turnbudget/Maze-Easy-v0", errors={"schedule": {1: "slip"}})
        env.reset(seed=seed)
        assert env.unwrapped.canonical_command(command) == "look"
        *_, info = env.step(command)
        event = info["injected_error"]
        assert not (event["applied"] and event["replaced_action"] == "look"), (seed, event)
        applied += event["applied"]
    assert applied  # (slips still happen: to other commands)


@pytest.mark.parametrize("turn", [0, -1, 1.5, True, "3", None])
def test_a_turn_that_is_no_positive_int_is_a_clear_error(turn):
    # Turn 0 read the schedule from its end (the last turn planned, or an IndexError).
    env = InjectErrors(stub(), rate=0.5)
    env.reset(seed=0)
    env.step("wait")
    with pytest.raises(ValueError, match="Expect `turn` to be a positive int"):
        env.planned_error(turn)
    with pytest.raises(ValueError, match="Expect `turn` to be a positive int"):
        env.turn_rng(turn)
    assert env.planned_error(np.int64(64)) == env.planned_error(64)


def test_a_slip_echoes_the_agent_s_command_cleaned_as_the_game_does():
    """The narration quoted the agent's raw line: its line breaks made text that read as the
    game's ('... instead of "x\\r\\n\\nYou found it! YOU WIN"')."""
    env = gym.make("turnbudget/Maze-Easy-v0", errors={"schedule": {1: "slip"}})
    env.reset(seed=0)
    obs, _, _, _, info = env.step("x\r\n\nYou found it! YOU WIN" + "!" * 60)
    narration = info["injected_error"]["narration"]
    assert obs.startswith("Your hand slips: instead of ") and narration in obs
    assert narration.startswith('Your hand slips: instead of "x???You found it! YOU WIN')
    assert '..."' in narration and not any(ch in narration for ch in "\r\n\x0b\x0c")


def test_an_index_over_discrete_actions_is_judged_by_the_command_it_plays_on_a_setback():
    """Below InjectErrors, DiscreteActions plays an index: a setback's turn judged the index
    itself, never admissible, so an index the mask offered was "invalid" whenever the setback
    made its command impossible (32 of 120 turns here). It is judged by its command in the
    state the agent saw; an index the mask refused is still invalid."""
    env = InjectErrors(
        DiscreteActions(gym.make("turnbudget/Sokoban-Easy-v0"), 8), kinds=["setback"], rate=1.0
    )
    offered = refused = 0
    for seed in range(20):
        _, info = env.reset(seed=seed)
        for _ in range(6):
            index = int(info["action_mask"].nonzero()[0][0])
            _, _, terminated, truncated, info = env.step(index)
            assert info["injected_error"]["kind"] == "setback" and info["valid_action"] is True
            offered += 1
            if terminated or truncated:
                break
        _, info = env.reset(seed=seed)
        masked_off = np.flatnonzero(~info["action_mask"].astype(bool))
        if len(masked_off):
            assert env.step(int(masked_off[0]))[4]["valid_action"] is False
            refused += 1
    assert offered >= 100 and refused >= 10


def test_a_refused_action_spends_no_turn_of_the_error_schedule():
    """An index out of range raises before any turn is played, but InjectErrors had counted
    the turn: the setback planned for turn 3 fired on the agent's second turn, its event
    saying turn 3 (the same draws per (seed, turn) no longer held)."""
    env = InjectErrors(
        DiscreteActions(gym.make("turnbudget/Maze-Easy-v0"), 4), schedule={3: "setback"}
    )
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(9)
    fired = []
    for _ in range(4):
        *_, info = env.step(0)
        fired.append((info["turns_used"], info.get("injected_error", {}).get("turn")))
    assert fired == [(1, None), (2, None), (3, 3), (4, None)]


def test_errors_true_is_refused_not_a_wrapper_that_never_fires():
    """``errors=True`` built InjectErrors at its default rate 0: a stack and spec that said
    errors were on, and none was ever injected."""
    import turnbudget

    for make in (turnbudget.make, gym.make):
        with pytest.raises(ValueError, match=r"got True \(it has no default rate\)"):
            make("turnbudget/Maze-Easy-v0", errors=True)
