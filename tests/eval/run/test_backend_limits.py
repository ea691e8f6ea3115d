"""What the backends audit found: a timeout past the clocks' range, an agent that fails while
it is built or raises GeneratorExit, and a grid of more budgets than a tally should hold are
each one clear error or one failed episode, the same on every backend."""

from __future__ import annotations

import pytest

from turnbudget.agents import OracleAgent
from turnbudget.cli import main
from turnbudget.eval import evaluate
from turnbudget.eval.run.backends import MAX_TIMEOUT, check_timeout
from turnbudget.eval.run.plan import MAX_BUDGETS

MAZE = "turnbudget/Maze-Easy-v0"


@pytest.mark.parametrize(
    "timeout", [1e10, 10**400, MAX_TIMEOUT + 1], ids=["1e10", "1e400", "max+1"]
)
def test_a_timeout_past_the_clocks_range_is_refused(timeout, tmp_path, capsys):
    """Past about 9.2e9 s the clocks that enforce a timeout overflow: every local episode
    failed with an OverflowError, a pool run with a traceback (10**400: float() raised)."""
    with pytest.raises(ValueError, match=f"at most {MAX_TIMEOUT:,}"):
        check_timeout(timeout)
    with pytest.raises(ValueError, match="timeout"):
        evaluate(MAZE, "random", ks=[1], ts=[4], tasks=1, timeout=timeout, out=tmp_path / "a")
    assert check_timeout(MAX_TIMEOUT) == MAX_TIMEOUT
    run = ["eval", "--env", MAZE, "--t", "4", "--tasks", "1", "--quiet", "--no-plots",
           "--out", str(tmp_path / "run"), "--timeout", str(timeout)]  # fmt: skip
    assert main(run) == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget eval: error: ") and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("spec", ["builtins:divmod", "tests_missing_module_never:Agent"])
def test_an_agent_that_fails_while_it_is_built_is_one_line(spec, tmp_path, capsys):
    """In this process (``--no-sealed``), an agent whose constructor or factory raises was a
    traceback and exit 1 (sealed, one line): now one line and exit 2 either way."""
    run = ["eval", "--env", MAZE, "--t", "4", "--tasks", "1", "--quiet", "--no-plots",
           "--out", str(tmp_path / "run"), "--agent", spec, "--no-sealed"]  # fmt: skip
    assert main(run) == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget eval: error: ") and len(err.splitlines()) == 1, err


class _GivesUp(OracleAgent):
    """The oracle, raising GeneratorExit on its second command of the first episode it plays
    (in each process that plays it)."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.episodes = 0

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.turn, self.episodes = 0, self.episodes + 1

    def act(self, observation, info):
        self.turn += 1
        if self.turn == 2 and self.episodes == 1:
            raise GeneratorExit("agent gave up")
        return super().act(observation, info)


@pytest.mark.parametrize(("backend", "workers"), [("local", 1), ("pool", 2)])
def test_an_agent_raising_generator_exit_fails_its_episodes_only(backend, workers, tmp_path):
    """GeneratorExit from an agent ended a local run (and a pool's worker: worker_lost): it is
    an episode error, as on a sealed agent, whatever the backend."""
    result = evaluate(MAZE, _GivesUp(), ks=[1], ts=[6], tasks=4, retries=0, backend=backend,
                      workers=workers, out=tmp_path / "run", n_bootstrap=0)  # fmt: skip
    failed = [e for e in result.episodes if e.get("failed_to_run")]
    assert failed and len(failed) < len(result.episodes), result.episodes
    assert {e["failure"] for e in failed} == {"exception"}, failed  # (never worker_lost)
    assert all("GeneratorExit" in e["error"] for e in failed)


def test_a_grid_of_more_budgets_than_a_tally_holds_is_refused(tmp_path):
    """Each task's tally keeps a row of |T| counts per budget run: 20,000 budgets held about
    3 GB a task. More than `MAX_BUDGETS` are refused before anything runs."""
    with pytest.raises(ValueError, match=f"at most {MAX_BUDGETS:,} values"):
        evaluate(MAZE, "random", ks=[1], ts=range(1, MAX_BUDGETS + 2), tasks=1,
                 out=tmp_path / "run")  # fmt: skip
    assert not (tmp_path / "run").exists()
