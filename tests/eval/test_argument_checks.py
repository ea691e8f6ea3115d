"""Bad arguments to the evaluation front doors and the estimator are refused up front.

Each case was a hole: a switch read for its truthiness (``overwrite="no"`` deleted the
previous run), an agent that is not one (every episode failed, or the label read
``<property object ...>``), a seed of -1 refused by NumPy after ``run.json`` was written
(and 1.9 silently run as 1), an unbounded ``n_bootstrap`` that ran every episode and
then ran out of memory, task counts that overflowed, labels that failed when the report
was written, probe budgets that overflowed, and estimator functions that returned
numbers for impossible inputs. Each must now be a ``ValueError`` / ``TypeError`` that
names the argument and says what was expected, before anything runs or is written.
"""

from __future__ import annotations

import json
import math
import re
import shutil

import numpy as np
import pytest
from _support import nested

from turnbudget.agents import RandomAgent
from turnbudget.eval import (
    bootstrap_seeds_tasks,
    clustered_rate,
    estimate_grid,
    evaluate,
    evaluate_team,
    pass_at_k,
    pass_at_kt,
    probe,
    wilson_interval,
)
from turnbudget.eval.estimator import MAX_BOOTSTRAP, estimate_from_task_grids
from turnbudget.eval.probes.plan import ProbeConfig, probe_budget
from turnbudget.eval.probes.team import team_step_probe
from turnbudget.eval.run.plan import MAX_TASKS, task_seeds
from turnbudget.records import RUN_FILE

MAZE = "turnbudget/Maze-Easy-v0"
SMALL = dict(ks=[1], ts=[3], tasks=1, n_bootstrap=0)
TEAM = {"operator": "oracle", "runner": "oracle"}


class Counting(RandomAgent):
    """A random agent that counts its episodes (none may start when a call is refused)."""

    resets = 0

    def reset(self, seed: int) -> None:
        type(self).resets += 1
        super().reset(seed)


@pytest.fixture
def agent():
    Counting.resets = 0
    yield Counting()
    assert Counting.resets == 0, "an episode ran before the bad argument was refused"


# --------------------------------------------------------------------------- switches


@pytest.mark.parametrize("flag", ["overwrite", "record_steps", "progress"])
@pytest.mark.parametrize("value", ["no", 0, 1, None, 0.5])
def test_evaluate_switches_must_be_bools(flag, value, agent):
    with pytest.raises(ValueError, match=rf"Expect `{flag}` to be True or False"):
        evaluate(MAZE, agent, **{flag: value}, **SMALL)


def test_overwrite_no_keeps_the_previous_run(tmp_path):
    out = tmp_path / "run"
    first = evaluate(MAZE, RandomAgent(), out=out, **SMALL)
    before = (out / RUN_FILE).read_text(), (out / "episodes.jsonl").read_text()
    with pytest.raises(ValueError, match="`overwrite`"):
        evaluate(MAZE, RandomAgent(), out=out, overwrite="no", **SMALL)
    assert ((out / RUN_FILE).read_text(), (out / "episodes.jsonl").read_text()) == before
    assert evaluate(MAZE, RandomAgent(), out=out, **SMALL).n_run == 0 < first.n_run


@pytest.mark.parametrize("flag", ["overwrite", "progress", "record"])
def test_evaluate_team_switches_must_be_bools(flag):
    with pytest.raises(ValueError, match=rf"Expect `{flag}` to be True or False"):
        evaluate_team("vault_v0", TEAM, **{flag: "no"}, **SMALL)


# --------------------------------------------------------------------------- agents


@pytest.mark.parametrize("bad", [None, 3, "random", object(), [RandomAgent()]])
def test_evaluate_refuses_what_is_not_an_agent(bad):
    with pytest.raises(TypeError, match=r"Expect `agent` to be an agent: .*reset\(seed\) and act"):
        evaluate(MAZE, bad, **SMALL)


def test_evaluate_refuses_an_agent_class_with_a_hint():
    with pytest.raises(
        TypeError, match=r"got the class RandomAgent: instantiate it.*RandomAgent\(\)"
    ):
        evaluate(MAZE, RandomAgent, **SMALL)


def test_evaluate_team_refuses_what_is_not_an_agent():
    with pytest.raises(TypeError, match=r"`agents\['runner'\]` to be an agent instance"):
        evaluate_team("vault_v0", {"operator": "oracle", "runner": RandomAgent}, **SMALL)
    with pytest.raises(TypeError, match=r"`agents\['runner'\]` to be an agent: .*spec string"):
        evaluate_team("vault_v0", {"operator": "oracle", "runner": None}, **SMALL)
    with pytest.raises(ValueError, match=r"Expect `agents` to map each role"):
        evaluate_team("vault_v0", 3, **SMALL)


# --------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("seed", [-1, 1.9, "7", True, None, 2**64, math.nan])
def test_evaluate_seed_must_be_a_non_negative_int_before_anything_is_written(seed, tmp_path, agent):
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=r"Expect `seed` to be an int from 0 to"):
        evaluate(MAZE, agent, out=out, seed=seed, **SMALL)
    assert not out.exists()


def test_numpy_int_seeds_are_seeds_and_numpy_floats_are_not():
    np = pytest.importorskip("numpy")
    a = evaluate(MAZE, RandomAgent(), seed=np.int64(3), **SMALL)
    b = evaluate(MAZE, RandomAgent(), seed=3, **SMALL)
    assert a.config == b.config and a.episodes == b.episodes
    with pytest.raises(ValueError, match=r"Expect `seed`"):
        evaluate(MAZE, RandomAgent(), seed=np.float64(3.0), **SMALL)


@pytest.mark.parametrize("seed", [-1, 1.5, "0"])
def test_team_seeds_are_checked(seed):
    with pytest.raises(ValueError, match=r"Expect `seed` to be an int from 0"):
        evaluate_team("vault_v0", TEAM, seed=seed, **SMALL)
    with pytest.raises(ValueError, match=r"Expect `seed` to be an int from 0"):
        team_step_probe("vault_v0", TEAM, seed=seed, tasks=1)


# --------------------------------------------------------------------------- n_bootstrap


@pytest.mark.parametrize("n_bootstrap", [10**9, MAX_BOOTSTRAP + 1, -1, 2.5, "100", None])
def test_n_bootstrap_is_bounded_before_the_run(n_bootstrap, agent):
    expect = r"Expect `n_bootstrap` to be an int from 0 to 100,000"
    with pytest.raises(ValueError, match=expect):
        evaluate(MAZE, agent, ks=[1], ts=[3], tasks=1, n_bootstrap=n_bootstrap)
    with pytest.raises(ValueError, match=expect):
        evaluate_team("vault_v0", TEAM, ks=[1], ts=[3], tasks=1, n_bootstrap=n_bootstrap)
    with pytest.raises(ValueError, match=expect):
        estimate_grid({"a": [1, None]}, [1], [1], n_bootstrap=n_bootstrap)
    with pytest.raises(ValueError, match=r"Expect `n_bootstrap` to be an int from 1 to 100,000"):
        bootstrap_seeds_tasks([[0.0, 1.0], [1.0, 1.0]], n_bootstrap=n_bootstrap)


# --------------------------------------------------------------------------- envs, options


def test_envs_and_backend_options_are_checked(agent):
    with pytest.raises(
        ValueError, match=r"Expect `envs` to be an env id or a list of env ids, got 3"
    ):
        evaluate(3, agent, **SMALL)
    # A set's order changes between processes, and with it the records' env indices, the
    # report's order and whether the same command may resume the run.
    for ids in ({MAZE, "turnbudget/KeyQuest-Easy-v0"}, frozenset({MAZE})):
        with pytest.raises(ValueError, match=r"Expect `envs` to be an env id or a list"):
            evaluate(ids, agent, **SMALL)
    with pytest.raises(ValueError, match=r"Expect `backend_options` to be a dict"):
        evaluate(MAZE, agent, backend_options=3, **SMALL)
    with pytest.raises(ValueError, match=r"Expect `backend_options` to be a dict"):
        evaluate_team("vault_v0", TEAM, backend_options=[1], **SMALL)
    with pytest.raises(ValueError, match=r"Expect `ks` to be a list of positive ints, got 3"):
        evaluate(MAZE, agent, ks=3, ts=[3], tasks=1)


# --------------------------------------------------------------------------- tasks, labels


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize(
    "tasks",
    [99999999999999999999999, 2**31, 3 * 10**9, MAX_TASKS + 1, range(10**30),
     iter(range(10**12)), [2**31]],
)  # fmt: skip
def test_huge_or_bad_task_lists_are_refused_without_building_them(tasks, agent):
    with pytest.raises(ValueError, match=r"`tasks`"):
        evaluate(MAZE, agent, ks=[1], ts=[3], tasks=tasks)


def test_task_seeds_keep_their_meaning():
    assert task_seeds(3) == (0, 1, 2)
    assert task_seeds(range(2, 5)) == (2, 3, 4)
    assert task_seeds(iter([7, 2**31 - 1])) == (7, 2**31 - 1)
    assert len(task_seeds(MAX_TASKS)) == MAX_TASKS
    with pytest.raises(
        ValueError, match=r"Expect `tasks` to be a positive int \(a count from 1 to 1,000,000\)"
    ):
        task_seeds(MAX_TASKS + 1)


@pytest.mark.parametrize(
    "label, expect",
    [("\udcff", "valid Unicode"), ("x" * 300, "at most 128 bytes"), ("é" * 65, "at most 128"),
     ("", "non-empty"), ("..", "stay inside"), ("a/../b", "stay inside"), ("/abs", "stay inside"),
     ("a\nb", "printable"), (3, "non-empty string"), (" ", "no leading or trailing"),
     ("run ", "no leading or trailing"),
     # (runs/<label> where no report looks: hidden, or past the depth it searches)
     (".v2", "no part starting with '.'"), ("grp/.x", "no part starting with '.'"),
     ("/".join("abcdefghijklmnopq"), "nest at most 16 folders deep")],
)  # fmt: skip
def test_labels_are_checked_before_the_run(label, expect, tmp_path, agent):
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=rf"Expect `label` .*{expect}"):
        evaluate(MAZE, agent, out=out, label=label, **SMALL)
    assert not out.exists()
    with pytest.raises(ValueError, match=rf"Expect `label` .*{expect}"):
        evaluate_team("vault_v0", TEAM, label=label, **SMALL)


def test_a_label_may_hold_an_agent_name_with_a_slash():
    result = evaluate(MAZE, RandomAgent(), label="policy:zoo/maze-easy", **SMALL)
    assert result.config.label == "policy:zoo/maze-easy"
    with pytest.raises(ValueError, match=r"Expect `label` to stay inside a directory"):
        evaluate(MAZE, RandomAgent(), label="policy:zoo/../maze-easy", **SMALL)


# --------------------------------------------------------------------------- probe budgets


@pytest.mark.parametrize("factor", [math.inf, math.nan, 0.5, 1e6, 10**400, "2", None])
def test_probe_budget_factor_is_finite_and_in_range(factor):
    with pytest.raises(ValueError, match=r"Expect `budget_factor` to be a number from 1 to 1000"):
        ProbeConfig(("a",), (MAZE,), ("a",), (0,), budget_factor=factor)


@pytest.mark.parametrize("slack", [99999999999999, -1, 2.0, True])
def test_probe_budget_slack_is_bounded(slack):
    with pytest.raises(ValueError, match=r"Expect `budget_slack` to be an int >= 0"):
        ProbeConfig(("a",), (MAZE,), ("a",), (0,), budget_slack=slack)


def test_probe_config_checks_seed_and_labels():
    with pytest.raises(ValueError, match=r"Expect `seed`"):
        ProbeConfig(("a",), (MAZE,), ("a",), (0,), seed=-1)
    with pytest.raises(ValueError, match=r"every label of the agents probed"):
        ProbeConfig(("\udcff",), (MAZE,), ("a",), (0,))


def test_a_probe_budget_past_an_int32_is_refused():
    config = ProbeConfig((), (), (), (), budget_factor=1000.0, budget_slack=10**6)
    assert probe_budget(10, config) == 10_000 + 10**6
    with pytest.raises(ValueError, match=r"turn budgets of at most 2,147,483,647"):
        probe_budget(3_000_000, config)


# --------------------------------------------------------------------------- the estimator


@pytest.mark.parametrize(
    "call, expect",
    [
        (lambda: pass_at_k(4, 1.5, 1), "c a whole number"),
        (lambda: pass_at_k(4, None, 1), "c a whole number"),
        (lambda: wilson_interval(1.5, 10), "Expect `p` to be a number in"),
        (lambda: wilson_interval(math.nan, 10), "Expect `p`"),
        (lambda: wilson_interval(None, 10), "Expect `p`"),
        (lambda: wilson_interval(0.5, 10**400), "Expect `n` to be a finite number"),
        (lambda: wilson_interval(0.5, math.nan), "Expect `n`"),
        (lambda: wilson_interval(0.5, 10, None), "Expect `confidence`"),
        (lambda: clustered_rate([2], [1]), "from 0 to its `trials`"),
        (lambda: clustered_rate([-1], [1]), "from 0 to its `trials`"),
        (lambda: clustered_rate([math.nan], [1]), "from 0 to its `trials`"),
        (lambda: clustered_rate([1], [1], max_trials=math.nan), "`max_trials`"),
        (lambda: clustered_rate([1], [1], max_trials=0), "`max_trials`"),
        (lambda: clustered_rate([1], [1], max_trials=-1), "`max_trials`"),
        (lambda: clustered_rate("ab", "cd"), "`hits` to be numbers"),
        (lambda: clustered_rate([1], None), "`trials` to be numbers"),
        (lambda: pass_at_kt([1], [1], [0]), "`ts` to hold positive ints"),
        (lambda: pass_at_kt([1], [1], [math.nan]), "`ts` to hold positive ints"),
        (lambda: pass_at_kt([1], [1], [2.5]), "`ts` to hold positive ints"),
        (lambda: pass_at_kt([1, 2], [1, 1], [3]), "`ks` values to be distinct"),
        (lambda: pass_at_kt([1, 2], [1], [3, 3]), "`ts` values to be distinct"),
        (lambda: pass_at_kt([1], 1, [3]), "`ks` to be a list"),
        (lambda: pass_at_kt(None, [1], [1]), "first-success turns of a task to be a list"),
        (lambda: pass_at_kt(["a"], [1], [1]), "every first-success turn"),
        (lambda: pass_at_kt([-1], [1], [1]), "every first-success turn"),
        (lambda: pass_at_kt([1.5], [1], [1]), "every first-success turn"),
        (lambda: estimate_grid([[1]], [1], [1]), "Expect `tasks` to map each task"),
        (lambda: estimate_grid({"a": [1]}, [1.5], [1]), "`ks` to hold positive ints"),
        (lambda: estimate_grid({"a": [1]}, [1], [1], seed=-1), "Expect `seed`"),
        (lambda: estimate_from_task_grids([[[1.5]]], [1], [1], n_per_task=1), "in \\[0, 1\\]"),
        (lambda: estimate_from_task_grids([[[1.0]]], [1], [1], n_per_task=0), "`n_per_task`"),
        # (an interval from max(1, n // k) = 1 trial a task, for Pass@4 of 2 episodes)
        (
            lambda: estimate_from_task_grids([[[0.5], [0.5]]], [1, 4], [1], n_per_task=2),
            "n=2 < k=4",
        ),
    ],
)
def test_the_estimator_refuses_impossible_inputs(call, expect):
    with pytest.raises(ValueError, match=expect):
        call()


def test_the_estimator_keeps_its_values():
    assert pass_at_k(4, 1, 1) == 0.25 and pass_at_k(4.0, 1.0, 4) == 1.0
    assert pass_at_kt([3, None, 9, math.inf], ks=[1, 2], ts=[5, 10]).tolist() == [
        [0.25, 0.5],
        [0.5, 0.8333333333333333],
    ]
    assert [round(x, 4) for x in wilson_interval(1.0, 25)] == [0.8668, 1.0]
    assert wilson_interval(0.5, 0) == (0.0, 1.0) == wilson_interval(0.5, -3)
    rate, low, high = clustered_rate([8] * 25, [8] * 25)
    assert (rate, round(low, 3), high) == (1.0, 0.867, 1.0)
    est = estimate_grid({"a": [1, None], "b": [None, None]}, ks=(1, 2), ts=[1])
    assert est.mean.tolist() == [[0.25], [0.5]] and est.ks == (1, 2)
    with pytest.raises(ValueError, match="c a whole number"):  # (it gave 0.375)
        pass_at_k(4, 1.5, 1)


# --------------------------------------------------------------------------- probe's front door

PROBE_SMALL = dict(tasks=1, baseline_repeats=1, n_bootstrap=0)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(progress="no"), r"`progress`"),
        (dict(sealed="yes"), r"`sealed`"),
        (dict(n_bootstrap=10**9), r"`n_bootstrap`"),
        (dict(backend_options=3), r"`backend_options`"),
        (dict(seed=-1), r"`seed`"),
        (dict(seed=1.9), r"`seed`"),
        (dict(seed="7"), r"`seed`"),
        (dict(budget_factor=math.inf), r"`budget_factor`"),
        (dict(budget_factor=10**400), r"`budget_factor`"),
        (dict(budget_factor=True), r"`budget_factor`"),
        (dict(label="x\udcff"), r"`label`"),
        (dict(label="../up"), r"`label`"),
        # (read a character at a time, "0.5" failed on "."; ["0.5"] passed as 0.5)
        (dict(prefixes="0.5"), r"Expect `prefixes` to be fractions in \[0, 1\), got '0.5'"),
        (dict(prefixes=0.5), r"`prefixes`"),
        (dict(prefixes=[None]), r"`prefixes`"),
        (dict(prefixes=["0.5"]), r"`prefixes`"),
        (dict(prefixes=[True]), r"`prefixes`"),
        (dict(out=""), r"Expect `out` to be a directory path, got an empty one"),
        (dict(kinds=None), r"Expect `kinds` to be distinct kinds from .*, got None"),  # (a bare
        (dict(kinds=5), r"Expect `kinds` to be distinct kinds"),  # TypeError named nothing)
        (dict(kinds="slip"), r"Expect `kinds` to be distinct kinds"),
        (dict(envs=[MAZE, MAZE]), r"Expect distinct env ids"),  # (each env's probes ran twice)
        # (a set's order, which orders the probes and their files, changes between processes)
        (
            dict(envs={MAZE, "turnbudget/KeyQuest-Easy-v0"}),
            r"Expect `envs` to be an env id or a list",
        ),
        (dict(kinds={"slip", "setback"}), r"Expect `kinds` to be distinct kinds"),
        (dict(kinds=frozenset({"slip"})), r"Expect `kinds` to be distinct kinds"),
    ],
)
def test_probe_refuses_bad_arguments_before_any_probe(agent, bad, match):
    from turnbudget.eval import probe

    with pytest.raises(ValueError, match=match):
        probe(bad.pop("envs", MAZE), agent, **{**PROBE_SMALL, **bad})


@pytest.mark.parametrize("bad", [None, RandomAgent, "random", [RandomAgent(), None]])
def test_probe_refuses_what_is_not_an_agent(bad):
    from turnbudget.eval import probe

    with pytest.raises(TypeError, match=r"`agent"):
        probe(MAZE, bad, **PROBE_SMALL)


def test_probe_refuses_an_out_that_is_a_file_before_any_probe(agent, tmp_path):
    """Its ``out`` was first used after every probe had run: a file there lost them all to a
    FileExistsError. It is held as `evaluate` holds its own (one run a directory)."""
    from turnbudget.eval import probe

    file = tmp_path / "file"
    file.write_text("mine")
    with pytest.raises(ValueError, match=r"Expect `out` to be a directory, but .* is an existing"):
        probe(MAZE, agent, **PROBE_SMALL, out=file)
    assert file.read_text() == "mine"


@pytest.mark.parametrize("out", [5, b"run", ["run"]])
def test_an_out_that_is_no_path_is_refused_by_name(agent, out):
    """``out=5`` was pathlib's "expected str, bytes or os.PathLike object, not int"."""
    from turnbudget.eval import probe

    with pytest.raises(ValueError, match=r"Expect `out` to be a directory path \(a str or a Path"):
        evaluate(MAZE, agent, **SMALL, out=out)
    with pytest.raises(ValueError, match=r"Expect `out` to be a directory path \(a str or a Path"):
        probe(MAZE, agent, **PROBE_SMALL, out=out)


class _ObserveNotAMethod(RandomAgent):
    observe = 5


class _StepNoteNotAMethod(RandomAgent):
    step_note = "note"


@pytest.mark.parametrize("bad", [_ObserveNotAMethod, _StepNoteNotAMethod])
def test_an_optional_hook_that_is_no_method_is_refused_before_the_run(bad):
    """An ``observe`` that was not callable failed every probe with a forced turn ("'int'
    object is not callable", 15 of 80 failed to run) where the agent could be refused."""
    from turnbudget.eval import probe

    hook = "observe" if bad is _ObserveNotAMethod else "step_note"
    with pytest.raises(TypeError, match=rf"Expect `agent.{hook}` to be a method \(or absent"):
        probe(MAZE, bad(), **PROBE_SMALL)
    with pytest.raises(TypeError, match=rf"Expect `agent.{hook}` to be a method \(or absent"):
        evaluate(MAZE, bad(), **SMALL)


def test_evaluate_refuses_an_empty_out_and_writes_nothing(agent, tmp_path, monkeypatch):
    """``out=""`` wrote the run into the working directory (the command line refuses it)."""
    monkeypatch.chdir(tmp_path)
    for out in ("", "  "):
        with pytest.raises(ValueError, match=r"Expect `out` to be a directory path, got an empty"):
            evaluate(MAZE, agent, **SMALL, out=out)
    assert list(tmp_path.iterdir()) == []


class _Batch:
    """A batch agent that plays each episode's first command in sorted order."""

    name = "batch"
    max_batch_size = 4

    def reset_episode(self, episode_id, seed):
        pass

    def act_batch(self, episode_ids, observations, infos):
        return [sorted(info["admissible_actions"])[0] for info in infos]


class _Plain(RandomAgent):
    pass


@pytest.mark.parametrize("size", [10**12, 4097, 0, -5, 2.7, "3", None, True])
def test_a_batch_agents_max_batch_size_is_an_int_from_1_to_4096(size, tmp_path):
    """10**12 ran out of memory building the driver's slots; 0, 2.7 and "3" passed."""
    from turnbudget.eval import probe

    agent = _Batch()
    agent.max_batch_size = size
    with pytest.raises(ValueError, match=r"Expect `agent.max_batch_size` to be an int from 1 to "):
        evaluate(MAZE, agent, **SMALL, out=tmp_path / "run")
    with pytest.raises(ValueError, match=r"`agent.max_batch_size`"):
        probe(MAZE, agent, **PROBE_SMALL)
    assert not (tmp_path / "run").exists()


def _failures(out) -> list[str]:
    import json

    lines = (out / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line).get("error") for line in lines]


@pytest.mark.parametrize("answer", ["look", {"look": 1, "north": 2}, {"look"}, None, 3], ids=type)
def test_a_batch_answer_that_is_no_list_of_commands_fails_its_episodes_clearly(answer, tmp_path):
    """A str of the right length was played a character at a time ("look": "l", "o", ...), a
    dict by its keys; None failed with ``object of type 'NoneType' has no len()``."""

    class Odd(_Batch):
        def act_batch(self, episode_ids, observations, infos):
            return answer

    with pytest.raises(ValueError, match=r"failed to run"):  # (no episode ran)
        evaluate(MAZE, Odd(), **SMALL, n=1, retries=0, out=tmp_path / "run")
    assert _failures(tmp_path / "run") == [
        f"TypeError: Expect Odd.act_batch to return a list of commands, one for each of its "
        f"1 episodes, got {answer!r}"
    ]


def test_batch_step_notes_that_are_no_list_fail_their_episodes_clearly(tmp_path):
    class Noted(_Batch):
        def step_notes(self, episode_ids):
            return None

    with pytest.raises(ValueError, match=r"failed to run"):
        evaluate(MAZE, Noted(), **SMALL, n=1, retries=0, out=tmp_path / "run")
    assert _failures(tmp_path / "run") == [
        "TypeError: Expect Noted.step_notes to return a list of notes, one for each of its 1 "
        "episodes, got None"
    ]


@pytest.mark.parametrize("form", [tuple, np.array], ids=["tuple", "array"])
def test_a_batch_answer_in_a_tuple_or_an_array_is_played(form, tmp_path):
    class Formed(_Batch):
        def act_batch(self, episode_ids, observations, infos):
            return form(super().act_batch(episode_ids, observations, infos))

    plain = evaluate(MAZE, _Batch(), **SMALL, n=2, out=tmp_path / "plain")
    formed = evaluate(MAZE, Formed(), **SMALL, n=2, out=tmp_path / "formed")
    assert formed.n_run == plain.n_run == 2 and formed.summary["groups"] == plain.summary["groups"]
    for log in ("steps.jsonl", "episodes.jsonl"):
        assert (tmp_path / "formed" / log).read_bytes() == (tmp_path / "plain" / log).read_bytes()


@pytest.mark.parametrize("concurrency", [10**12, 4097, 0])
def test_an_async_agents_concurrency_is_bounded_too(concurrency):
    from turnbudget.agents.base import AsyncBatch, in_flight

    class Async:
        def reset_async(self, seed):
            pass

        def act_async(self, observation, info):
            pass

    with pytest.raises(ValueError, match=r"Expect `concurrency` to be an int from 1 to 4,096"):
        in_flight(Async(), concurrency)
    with pytest.raises(ValueError, match=r"Expect `max_batch_size` to be an int from 1 to 4,096"):
        AsyncBatch(Async, max_batch_size=concurrency)


@pytest.mark.parametrize("attribute", ["concurrency", "default_concurrency"])
@pytest.mark.parametrize("value", ["many", 2.5, 10**30, -1])
def test_an_async_agents_own_concurrency_is_checked_by_name(attribute, value):
    """``int()`` of it said only "invalid literal for int()" of "many", named `max_batch_size`
    for 10**30 and took 2.5 as 2."""
    from turnbudget.agents.base import in_flight

    class Async:
        def reset_async(self, seed):
            pass

        def act_async(self, observation, info):
            pass

    agent = Async()
    setattr(agent, attribute, value)
    with pytest.raises(ValueError, match=rf"Expect `agent.{attribute}` to be an int from 1 to"):
        in_flight(agent)


@pytest.mark.parametrize("flag", ["needs_oracle", "budget_aware"])
@pytest.mark.parametrize("value", ["False", "no", 0, 1, None, [True]])
def test_an_agents_flags_must_be_bools_not_truthy_values(flag, value, tmp_path):
    """``needs_oracle = "False"`` was read as True: the agent got the oracle's actions (and
    ``budget_aware = "False"`` the hidden budget), in process and sealed alike."""
    from turnbudget.eval import probe

    agent = _Plain()
    setattr(agent, flag, value)
    for sealed in (False, True):
        with pytest.raises(TypeError, match=rf"Expect `agent.{flag}` to be True or False, got"):
            evaluate(MAZE, agent, **SMALL, out=tmp_path / "run", sealed=sealed)
    with pytest.raises(TypeError, match=rf"`agent.{flag}`"):
        probe(MAZE, agent, **PROBE_SMALL)
    with pytest.raises(TypeError, match=rf"Expect `agents\['operator'\].{flag}` to be True or"):
        evaluate_team("vault_v0", {"operator": agent, "runner": "oracle"}, **SMALL)
    assert not (tmp_path / "run").exists()


def test_a_sealed_spec_agents_flags_are_checked_in_its_process(tmp_path):
    """A spec is built only in the sealed process: its flags are checked there."""
    module = tmp_path / "flagged.py"
    module.write_text(
        "from turnbudget.agents import RandomAgent\n"
        "class Flagged(RandomAgent):\n    budget_aware = 'no'\n"
    )
    from turnbudget.eval.run.sealed import seal

    with pytest.raises(Exception, match=r"Expect `agent.budget_aware` to be True or False"):
        seal(f"{module}:Flagged")


def test_probe_refuses_envs_that_are_not_env_ids(agent):
    from turnbudget.eval import probe

    with pytest.raises(ValueError, match=r"`envs`"):
        probe(3, agent, **PROBE_SMALL)


# --------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"ks": [10**20]}, r"Expect `ks` to hold ints at most 100,000"),
        ({"ks": [1], "n": 10**20}, r"Expect `n` to be a positive int \(at most 100,000\)"),
        ({"ks": [1], "n": 0}, r"Expect `n` to be a positive int"),
        ({"retries": 10**20}, r"Expect `retries` to be a non-negative int \(at most 100\)"),
        ({"retries": -1}, r"Expect `retries` to be a non-negative int"),
    ],
)
def test_episode_counts_and_retries_are_bounded_before_the_run(kwargs, says, agent):
    """10**20 episodes per task overflowed (OverflowError) and 10**20 retries of an episode
    that always fails would never end."""
    with pytest.raises(ValueError, match=says):
        evaluate(MAZE, agent, **{**SMALL, **kwargs})


@pytest.mark.parametrize("name", ["repeats", "baseline_repeats"])
@pytest.mark.parametrize("value", [10**20, 10_001, 0])
def test_probe_repeats_are_bounded(name, value):
    with pytest.raises(ValueError, match=rf"Expect `{name}` to be an int >= 1 and at most 10,000"):
        ProbeConfig(("a",), (MAZE,), ("a",), (0,), **{name: value})


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"ks": [10**20]}, r"Expect `ks` to hold ints at most 100,000"),
        ({"n": 10**20}, r"Expect `n` to be a positive int \(at most 100,000\)"),
        ({"retries": 10**20}, r"Expect `retries` to be a non-negative int \(at most 100\)"),
    ],
)
def test_team_episode_counts_and_retries_are_bounded(kwargs, says):
    with pytest.raises(ValueError, match=says):
        evaluate_team("vault_v0", TEAM, **{**SMALL, **kwargs})


@pytest.mark.parametrize("spelt", ["turnbudget/Maze-Easy", f"turnbudget:{MAZE}"])
def test_an_id_spelt_as_gym_make_takes_it_is_the_id_played(spelt, tmp_path):
    """An unversioned id, or one after ``module:``, played (gym.make takes both) under records
    that named the id played: the run then had no episode of its own env, and a rerun and the
    report refused its logs for good."""
    from turnbudget.eval import probe
    from turnbudget.eval.run.plan import played_env_id

    assert played_env_id(spelt) == MAZE
    assert played_env_id("turnbudget/No-Such-v0") == "turnbudget/No-Such-v0"  # (make says)
    out = tmp_path / "run"
    result = evaluate([spelt], RandomAgent(), **SMALL, out=out)
    assert result.config.envs == (MAZE,) and result.n_run == 1
    assert {e["env_id"] for e in result.episodes} == {MAZE}
    again = evaluate([spelt], RandomAgent(), **SMALL, out=out, overwrite=False)
    assert again.n_run == 0 and len(again.episodes) == 1  # (resumed: nothing left to play)
    with pytest.raises(ValueError, match="Expect distinct env ids"):
        evaluate([spelt, MAZE], RandomAgent(), **SMALL)
    probed = probe([spelt], RandomAgent(), tasks=1, kinds=["setback"], baseline_repeats=1,
                   n_bootstrap=0)  # fmt: skip
    assert probed.config.envs == (MAZE,) and {r["env_id"] for r in probed.records} == {MAZE}


def test_an_out_holding_no_evaluation_run_is_refused_before_anything_is_written(tmp_path):
    """A training run's folder (its summary.json) or a hand-made summary.json was overwritten
    by the run's summary, exit 0; now refused before any episode, whatever `overwrite` says."""
    import shutil
    from importlib import resources

    policy = tmp_path / "policy"  # (an exported policy, as the zoo ships them)
    shutil.copytree(resources.files("turnbudget") / "zoo/maze-easy/base/seed0", policy)
    training = tmp_path / "training"
    training.mkdir()
    (training / "config.json").write_text('{"algo": "bc"}\n')
    (training / "summary.json").write_text('{"algo": "bc", "steps": 64}\n')
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "summary.json").write_text('{"precious": true}\n')
    for out in (policy, training, precious):
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        for overwrite in (False, True):
            with pytest.raises(ValueError, match="of no evaluation run"):
                evaluate(MAZE, Counting(), **SMALL, out=out, overwrite=overwrite)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert Counting.resets == 0


def test_an_out_holding_a_report_md_of_no_report_of_ours_is_refused_before_anything_runs(
    tmp_path,
):
    """A report.md that `turnbudget report` did not write (notes, another program's findings):
    with `overwrite` the run deleted it and wrote its own, exit 0; without, every episode ran
    before the report refused it."""
    Counting.resets = 0
    out = tmp_path / "notes"
    out.mkdir()
    (out / "report.md").write_text("# my findings\n\nnot a run's report\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=r"holds report\.md of no evaluation run"):
            evaluate(MAZE, Counting(), **SMALL, out=out, overwrite=overwrite)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert Counting.resets == 0


def test_a_probe_run_and_a_training_run_or_a_policy_never_share_a_directory(tmp_path):
    """Only an evaluation's run.json marked a directory as an evaluation's: training and an
    export wrote beside a probe run's probes.jsonl, and a probe wrote beside a policy."""
    import shutil
    from importlib import resources

    from turnbudget.agents.policy import export_policy
    from turnbudget.eval import probe
    from turnbudget.eval.probes.run import PROBE_CONFIG_FILE, PROBES_FILE
    from turnbudget.eval.probes.summary import PROBE_SUMMARY_FILE
    from turnbudget.records import EVALUATION_FILES
    from turnbudget.train.config import TrainConfig, check_out

    assert {PROBE_CONFIG_FILE, PROBES_FILE, PROBE_SUMMARY_FILE} <= set(EVALUATION_FILES)
    probed = tmp_path / "probed"
    probe(MAZE, RandomAgent(), tasks=1, kinds=["slip"], repeats=1, baseline_repeats=1,
          n_bootstrap=0, out=probed)  # fmt: skip
    before = {p.name: p.read_bytes() for p in probed.iterdir()}
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=r"holds an evaluation run \(probe\.json"):
            check_out(TrainConfig(out=str(probed)), overwrite=overwrite)
        with pytest.raises(ValueError, match=r"holds an evaluation run \(probe\.json"):
            export_policy("zoo/maze-easy/base/seed0", probed, overwrite=overwrite)
    assert {p.name: p.read_bytes() for p in probed.iterdir()} == before
    policy = tmp_path / "policy"
    shutil.copytree(resources.files("turnbudget") / "zoo/maze-easy/base/seed0", policy)
    before = {p.name: p.read_bytes() for p in policy.iterdir()}
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=r"holds a training run or a policy \(weights"):
            probe(MAZE, Counting(), tasks=1, kinds=["slip"], repeats=1, baseline_repeats=1,
                  n_bootstrap=0, out=policy, overwrite=overwrite)  # fmt: skip
    assert {p.name: p.read_bytes() for p in policy.iterdir()} == before
    assert Counting.resets == 0


def test_runs_nested_at_any_depth_are_reported_and_never_nested_in_a_run(tmp_path):
    """A label with a slash nests its run (runs/team/a): the report of runs/ read only its
    subdirectories and left that run out without a word; a run made in a folder of runs, or
    inside another run's directory, was read alone by that folder's report."""
    from turnbudget.eval import build_report, probe

    runs = tmp_path / "runs"
    evaluate(MAZE, RandomAgent(), **SMALL, out=runs / "team" / "a", label="team/a")
    evaluate(MAZE, RandomAgent(), **SMALL, out=runs / "b", label="b")
    probe(MAZE, RandomAgent(), tasks=1, kinds=["setback"], baseline_repeats=1, n_bootstrap=0,
          label="team/p", out=runs / "probe-team" / "p")  # fmt: skip
    summary = build_report(runs, plots=False, n_bootstrap=0)
    assert sorted(summary["runs"]) == ["b", "team/a"]
    assert len(summary["probes"]) == 1  # (nested as deep: read too)
    for out, refusal in (
        (runs, "is a folder of runs"),
        (runs / "team", "is a folder of runs"),
        (runs / "b" / "inner", "lies inside the run directory"),
        (runs / "b" / "x" / "y", "lies inside the run directory"),
    ):
        with pytest.raises(ValueError, match=refusal):
            evaluate(MAZE, Counting(), **SMALL, out=out)
    assert Counting.resets == 0
    assert not (runs / "b" / "inner").exists() and not (runs / "b" / "x").exists()
    # The deepest label's run is reported; one deeper, or in a folder that cannot be listed,
    # is warned of (it was left out without a word).
    deepest = "/".join("abcdefghijklmnop")
    evaluate(MAZE, RandomAgent(), **SMALL, out=runs / deepest, label=deepest)
    assert deepest in build_report(runs, plots=False, n_bootstrap=0)["runs"]
    shutil.copytree(runs / "b", runs / "deep" / deepest / "b")
    with pytest.warns(UserWarning, match=r"Did not look for runs in the folders of .*deep/a/b"):
        assert "b" in build_report(runs, plots=False, n_bootstrap=0)["runs"]
    shutil.rmtree(runs / "deep")
    # A run that lost its run.json, however deep, is named, never passed over.
    (runs / "team" / "a" / "run.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"team/a holds episodes.jsonl but no run.json"):
        build_report(runs, plots=False, n_bootstrap=0)


def test_a_folder_of_runs_that_cannot_be_listed_is_warned_of(tmp_path, monkeypatch):
    """Its runs were left out of the report without a word (the code said "a report says
    so"). (Root reads any folder: the refusal is the file system's, raised here.)"""
    from pathlib import Path

    from turnbudget.eval import build_report

    runs = tmp_path / "runs"
    evaluate(MAZE, RandomAgent(), **SMALL, out=runs / "grp" / "x", label="grp/x")
    evaluate(MAZE, RandomAgent(), **SMALL, out=runs / "b", label="b")
    listing = Path.iterdir

    def iterdir(self):
        if self.name == "grp":
            raise PermissionError(13, "Permission denied", str(self))
        return listing(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    with pytest.warns(UserWarning, match=r"Cannot look for runs in .*grp: Permission denied"):
        assert list(build_report(runs, plots=False, n_bootstrap=0)["runs"]) == ["b"]


_RUN = {"label": "a", "envs": ["e"], "ks": [1], "ts": [5, 10], "n": 2, "tasks": [0],
        "mode": "truncate"}  # fmt: skip


def _record(rep, **fields):
    return {"episode_id": f"e|seed=0|rep={rep}|T=10", "env_id": "e", "seed": 0, "rep": rep,
            "turn_budget": 10, "success": False, "first_success_turn": None, "turns_used": 10,
            **fields}  # fmt: skip


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"success": "False", "first_success_turn": "3"}, "`success` to be true or false"),
        ({"success": True, "first_success_turn": 5.5}, "`first_success_turn`"),
        ({"seed": "0"}, "`seed`"),
        ({"turn_budget": 10.5}, "`turn_budget`"),
        ({"n_wasted": -5}, "`n_wasted`"),
        ({"turns_to_recover": "12"}, "`turns_to_recover`"),
    ],
)
def test_a_record_of_the_wrong_types_is_refused_before_it_is_counted(fields, says):
    """Read without an error, each was counted as what it looked like ("False" a success)."""
    from turnbudget.eval.analysis import feasibility_analysis, step_stats, summarize_run

    records = [_record(0), _record(1, **fields)]
    with pytest.raises(ValueError, match=re.escape(says)):
        summarize_run(_RUN, records, n_bootstrap=0)
    with pytest.raises(ValueError, match=re.escape(says)):
        feasibility_analysis(records, [1], [5, 10], "truncate", n_bootstrap=0)
    if "seed" not in fields and "turn_budget" not in fields:  # (no identity read there)
        with pytest.raises(ValueError, match=re.escape(says)):
            step_stats(records)


@pytest.mark.parametrize(
    "records, says",
    [
        ([_record(0, success=True, first_success_turn=3)] * 2, "counted already"),
        ([_record(0), _record(1, env_id="zzz")], "is no episode of run"),
        ([_record(0), _record(1, seed=7)], "is no episode of run"),
        ([_record(0), _record(1, turn_budget=5)], "is no episode of run"),
        ([_record(0), _record(2)], "is no repeat of run"),
        ([_record(0), _record(1), {**_record(1), "rep": None}], "already has the 2 episodes"),
    ],
)
def test_a_record_outside_the_plan_or_given_twice_is_refused(records, says):
    """The run is complete when its count of records is; a duplicate or a stray record took a
    missing one's place in that count (a run of one success given twice scored 1.0)."""
    from turnbudget.eval.analysis import summarize_run

    with pytest.raises(ValueError, match=says):
        summarize_run(_RUN, records, n_bootstrap=0)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"n": "2"}, "n to be an int"),
        ({"n": True}, "n to be an int"),
        ({"envs": []}, "envs to be a list"),
        ({"envs": "e"}, "envs to be a list"),
        ({"tasks": [0, 0]}, "without repeats"),
        ({"tasks": [-1]}, "tasks to be a list"),
        ({"tasks": "0"}, "tasks to be a list"),
    ],
)
def test_a_run_config_the_tally_cannot_count_is_refused(change, says):
    from turnbudget.eval.analysis import RunTally

    with pytest.raises(ValueError, match=says):
        RunTally({**_RUN, **change})


def test_a_run_config_s_task_count_and_numpy_budgets_are_read_as_evaluate_writes_them():
    from turnbudget.eval.analysis import summarize_run

    config = {**_RUN, "tasks": 1, "ts": np.array([5, 10]), "ks": np.array([1])}
    summary = summarize_run(config, [_record(0), _record(1)], n_bootstrap=0)
    assert summary["config"]["tasks"] == [0] and summary["config"]["ts"] == [5, 10]
    json.dumps(summary)  # (a NumPy array in the config made it no JSON)


@pytest.mark.parametrize(
    "steps, ts, says",
    [
        ([{"turn": 1, "errors_opened": "3"}], [1], "`errors_opened`"),  # (a raw TypeError)
        ([{"turn": "1"}], [1], "`turn`"),  # (read as turn 1)
        ([{"turn": 1, "recoveries": [1.5]}], [1], "`recoveries`"),
        ([{"turn": 1}], [1.5], "`ts` to be a list of budgets"),  # (budget '1')
        ([{"turn": 1}], [-1], "`ts` to be a list of budgets"),
        ([{"turn": 1}], "12", "`ts` to be a list of budgets"),
    ],
)
def test_budget_counts_checks_its_steps_and_budgets_first(steps, ts, says):
    from turnbudget.eval.analysis import budget_counts

    with pytest.raises(ValueError, match=re.escape(says)):
        budget_counts(steps, ts)


@pytest.mark.parametrize(
    "better, worse",
    [([-math.inf, 1], [0, 0]), ([math.nan, 1], [0, 0]), ("ab", [0, 0]), ([0.5, 2], [0, 0]),
     ([0.5, 0.9], [0, None])],
)  # fmt: skip
def test_advantage_halving_budget_needs_rates(better, worse):
    """-inf gave nan, NaN a quiet None, a str a raw TypeError."""
    from turnbudget.eval.analysis import advantage_halving_budget

    with pytest.raises(ValueError, match="to be a list of rates in"):
        advantage_halving_budget([10, 20], better, worse)


@pytest.mark.parametrize("lengths", [[math.inf], "123", [1.5, 2.7], [-1], ["a"]])
def test_length_buckets_needs_lengths(lengths):
    """inf was an OverflowError, "123" three lengths, 1.5 a length of 1."""
    from turnbudget.eval.analysis import length_buckets

    with pytest.raises(ValueError, match="initial_distances"):
        length_buckets(lengths)


def test_feasibility_does_not_depend_on_the_order_of_records_without_ids():
    """Records without an episode id gave a task the d* of whichever came last."""
    from turnbudget.eval.analysis import feasibility_analysis

    def record(seed, fst, d_star):
        return {"env_id": "e", "seed": seed, "turn_budget": 10, "success": fst is not None,
                "first_success_turn": fst, "turns_used": fst or 10, "initial_distance": d_star}  # fmt: skip

    records = [record(0, 6, 4), record(0, 9, 7), record(1, None, 12), record(1, None, 12)]
    forward = feasibility_analysis(records, [1], [5, 10], "truncate", n_bootstrap=0)
    assert forward == feasibility_analysis(records[::-1], [1], [5, 10], "truncate", n_bootstrap=0)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"confidence": 7}, "confidence"),
        ({"ks": [1, 1]}, "`ks` values to be distinct"),
        ({"ks": None}, "`ks` to be a list"),
        ({"mean": [[0.5]]}, "`mean` to be a grid of 1 x 2"),
        ({"mean": "x"}, "`mean` to be a grid"),
        ({"low": [[math.nan, 0.1]]}, "`low` to be a grid"),
        ({"n_tasks": "x"}, "`n_tasks` to be an int"),
        ({"n_per_task": 0}, "`n_per_task` to be an int"),
    ],
)
def test_a_grid_estimate_is_read_back_only_from_a_grid(change, says):
    """Each was taken as it was (confidence 7, a 1 x 1 mean for 1 x 2 budgets) or raised a
    raw TypeError."""
    from turnbudget.eval.estimator import GridEstimate

    good = estimate_from_task_grids(np.full((4, 1, 2), 0.5), [1], [5, 10], n_per_task=2)
    assert GridEstimate.from_dict(good.to_dict()).to_dict() == good.to_dict()
    with pytest.raises(ValueError, match=re.escape(says)):
        GridEstimate.from_dict({**good.to_dict(), **change})


def test_a_run_beside_another_or_linked_into_one_is_told_by_where_it_really_is(
    tmp_path, monkeypatch
):
    """The check read the path as written: ``../b`` from inside run ``a`` was refused as lying
    inside it, and a link from outside into a run's directory was let through."""
    evaluate(MAZE, RandomAgent(), **SMALL, out=tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    evaluate(MAZE, RandomAgent(), **SMALL, out="../b")  # (a sibling of a: no refusal)
    assert (tmp_path / "b" / "run.json").is_file()
    (tmp_path / "a" / "inner").mkdir()
    (tmp_path / "sneaky").symlink_to(tmp_path / "a" / "inner")
    with pytest.raises(ValueError, match="lies inside the run directory"):
        evaluate(MAZE, RandomAgent(), **SMALL, out=tmp_path / "sneaky")
    assert not any((tmp_path / "a" / "inner").iterdir())


@pytest.mark.parametrize(
    "call",
    [
        lambda: evaluate(MAZE, RandomAgent(), **{**SMALL, "ks": [10**5000]}),
        lambda: evaluate(MAZE, RandomAgent(), **{**SMALL, "ks": ["x" * 10**6]}),
        lambda: evaluate(MAZE, RandomAgent(), **{**SMALL, "ts": nested(3000)}),
        lambda: evaluate(MAZE, RandomAgent(), **SMALL, errors=10**5000),
        lambda: evaluate(MAZE, RandomAgent(), **SMALL, errors=nested(3000)),
        lambda: evaluate(MAZE, RandomAgent(), **SMALL, reveal=np.array(["always", "never"])),
        lambda: evaluate(
            MAZE, RandomAgent(), **SMALL, errors={"rate": 0.1, "kinds": ["x" * 10**6]}
        ),
        lambda: evaluate(MAZE, RandomAgent(), **SMALL, reveal="x" * 10**6),
        lambda: evaluate_team(
            "vault_v0",
            dict.fromkeys(("runner", "operator"), RandomAgent()),
            **SMALL,
            reveal=np.array([1, 2]),
        ),
        lambda: evaluate(["x" * 10**6], RandomAgent(), **SMALL),
        lambda: probe(["x" * 10**6], RandomAgent(), tasks=1),
        lambda: evaluate(MAZE, RandomAgent(), **SMALL, workers=10**5000),
        lambda: evaluate(MAZE, 10**5000, **SMALL),
    ],
    ids=[
        "huge-k",
        "long-k",
        "deep-t",
        "huge-errors",
        "deep-errors",
        "array-reveal",
        "long-kinds",
        "long-reveal",
        "team-array-reveal",
        "long-id",
        "long-probe-id",
        "huge-workers",
        "huge-agent",
    ],
)
def test_a_hostile_argument_is_a_short_error_naming_it(call):
    """Each was an unrelated error from deep inside (RecursionError, "Exceeds the limit
    (4300 digits)", NumPy's "truth value ... is ambiguous") or a message of megabytes
    repeating the value."""
    with pytest.raises((ValueError, TypeError)) as refused:
        call()
    message = str(refused.value)
    assert len(message) < 600 and message.startswith(("Expect", "Cannot")), message
