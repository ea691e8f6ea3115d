"""``turnbudget eval``: run a Pass@(K,T) evaluation (resumable) and write its report.

The command-line face of `turnbudget.eval.evaluate`; the evaluator, the
agents and the report load only when the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from turnbudget._checks import escaped_controls
from turnbudget.cli.flags import directory_path, non_negative_int

__all__ = [
    "SEALED_SOURCES",
    "add_arguments",
    "load_agent",
    "parse_ints",
    "parse_setting",
    "parse_tasks",
    "run",
]

#: Where an agent's code comes from (`turnbudget.agents.registry.spec_source`) when the
#: command seals it by default: code that is not turnbudget's nor registered by the caller.
SEALED_SOURCES = ("entry_point", "module", "file")

logger = logging.getLogger(__name__)


def parse_ints(text: str) -> list[int]:
    """``"1,2,4,8"`` -> ``[1, 2, 4, 8]``.

    Example:
        >>> parse_ints("1, 2,4")
        [1, 2, 4]
    """
    items = text.split(",")
    if any(not x.strip() for x in items):
        raise argparse.ArgumentTypeError(
            f"expect comma-separated integers with no empty item, got {text!r}"
        )
    try:
        values = [int(x) for x in items]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expect comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expect positive integers, got {text!r}")
    return values


def parse_tasks(text: str) -> int | list[int]:
    """A count (``"20"`` -> seeds 0..19), a range (``"100-119"``) or a list (``"3,5,8"``).

    Example:
        >>> parse_tasks("3"), parse_tasks("10-12"), parse_tasks("4,9")
        (3, [10, 11, 12], [4, 9])
    """
    from turnbudget.eval.run.plan import MAX_TASKS

    text = text.strip()
    try:
        if "," in text:
            return [int(x) for x in text.split(",")]  # (an empty item fails int())
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            if not 0 <= lo <= hi or hi - lo >= MAX_TASKS:  # (never a list past the cap)
                raise argparse.ArgumentTypeError(  # (why, where "expect a range" left it out)
                    f"expect a seed range LO-HI with 0 <= LO <= HI, at most {MAX_TASKS:,} "
                    f"seeds, got {text!r}"
                )
            return list(range(lo, hi + 1))
        count = int(text)
        if count < 1:
            raise ValueError
        return count
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expect a task count, a seed range LO-HI or a comma list of seeds, got {text!r}"
        ) from None


def parse_setting(text: str | None, flag: str = "the setting") -> Any:
    """An ``--errors`` / ``--reveal`` value: JSON when it parses, else the plain string;
    ValueError, naming ``flag``, for JSON nested past the parser's depth.

    Example:
        >>> parse_setting('{"rate": 0.1}'), parse_setting("always")
        ({'rate': 0.1}, 'always')
        >>> parse_setting("[" * 100_000, "--errors")
        Traceback (most recent call last):
        ...
        ValueError: Expect --errors to be JSON nested less deeply, or a plain string
    """
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:  # (not JSON; or a number past 4,300 digits, which no setting takes)
        return text
    except RecursionError:  # (nested past the parser's depth: a traceback otherwise)
        raise ValueError(
            f"Expect {flag} to be JSON nested less deeply, or a plain string"
        ) from None


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``llm:MODEL`` agents (`ChatAgent`), shared by ``eval`` and ``probe``."""
    llm = parser.add_argument_group(
        "LLM agents (llm:MODEL on a server, llm:local in this process; needs the llm extra)"
    )
    llm.add_argument(
        "--base-url",
        default=None,
        help="OpenAI-compatible server root, e.g. http://127.0.0.1:8080/v1 "
        "(default: $OPENAI_BASE_URL; `turnbudget serve-local` starts one)",
    )
    llm.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY); "
        "the key itself is never written anywhere",
    )
    llm.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="episodes in flight per worker for LLM agents (default: 8)",
    )
    llm.add_argument(
        "--parse",
        choices=["strict", "lenient"],
        default=None,
        help="reply parsing (default: lenient)",
    )
    llm.add_argument(
        "--constrain",
        choices=["auto", "grammar", "guided_choice", "json_schema", "none"],
        default=None,
        help="constrained decoding over the admissible commands (default: auto, from the server)",
    )
    llm.add_argument(
        "--llm-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds one request may take, from sending it to the whole answer, before it is "
        "retried (default: 60)",
    )
    llm.add_argument(
        "--llm-retries",
        type=int,
        default=None,
        metavar="N",
        help="retries of a request that timed out, lost its connection or got HTTP 408, 409, "
        "429 or 5xx, before its episode fails (default: 4)",
    )


#: The flags of the options `llm_options` gives whose names differ from the option's.
_LLM_FLAGS = {"timeout": "--llm-timeout", "max_retries": "--llm-retries"}


def llm_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `make_agent` options given by `add_llm_arguments` flags (None: not given)."""
    return {
        "base_url": args.base_url, "api_key_env": args.api_key_env,
        "concurrency": args.concurrency, "parse": args.parse, "constrain": args.constrain,
        "timeout": args.llm_timeout, "max_retries": args.llm_retries,
    }  # fmt: skip


class _OneAgent(argparse.Action):
    """``--agent`` once: a second one was taken in place of the first without a word (``probe``
    takes several, and one evaluation run is one agent's)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        if getattr(namespace, "_agent_given", False):
            parser.error(
                f"argument --agent: given twice ({getattr(namespace, self.dest)!r}, then "
                f"{values!r}): a run evaluates one agent; run eval once per agent (with "
                "another --out), or `turnbudget probe`, which takes several"
            )
        namespace._agent_given = True
        setattr(namespace, self.dest, values)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env", action="append", required=True, metavar="ID",
        help="env id (repeat the flag or give a comma list), e.g. turnbudget/Maze-Medium-v0",
    )  # fmt: skip
    parser.add_argument(
        "--agent", default="random", metavar="NAME[:ARGS]", action=_OneAgent,
        help="random | oracle[:EPSILON] | llm:MODEL | any name registered in "
        "turnbudget.agents.registry or through a `turnbudget.agents` entry point | "
        "MODULE:ATTR[:ARGS] or PATH.py:ATTR[:ARGS] naming an agent class or factory "
        "(default: random)",
    )  # fmt: skip
    add_sealed_argument(parser)
    add_llm_arguments(parser)
    parser.add_argument(
        "--k",
        type=parse_ints,
        default=[1, 2, 4, 8],
        help="K values (default: 1,2,4,8; K=1 is always estimated too)",
    )
    parser.add_argument(
        "--t", type=parse_ints, default=[8, 16, 32, 64], help="turn budgets T (default: 8,16,32,64)"
    )
    parser.add_argument("--n", type=int, default=None, help="episodes per task (default: max K)")
    parser.add_argument(
        "--tasks",
        type=parse_tasks,
        default=10,
        help="task count, seed range LO-HI, or seed list (default: 10)",
    )
    parser.add_argument(
        "--mode", choices=["auto", "truncate", "rerun", "both"], default="auto",
        help="truncate: each episode once at max(T), exact for agents that cannot see their "
        "budget; rerun: once per T; both: both, and the gap; auto (default): rerun when the "
        "budget shows (--reveal) or the agent is budget-aware, else truncate",
    )  # fmt: skip
    parser.add_argument(
        "--errors", default=None, help="errors= setting of turnbudget.make (JSON or a string)"
    )
    parser.add_argument(
        "--reveal", default=None, help="reveal= setting of turnbudget.make, e.g. always or final=3"
    )
    add_backend_arguments(parser, "episode")
    parser.add_argument(
        "--out", type=directory_path, default=None, help="run directory (default: runs/<label>)"
    )
    parser.add_argument("--seed", type=non_negative_int, default=0, help="base seed of the agents")
    parser.add_argument(
        "--label", default=None, help="name of the run in reports (default: the agent)"
    )
    parser.add_argument(
        "--shared-errors",
        action="store_true",
        help="one error schedule per task for all its repeats (default: drawn per repeat)",
    )
    parser.add_argument(
        "--no-steps",
        action="store_true",
        help="skip per-step records (steps.jsonl); the analysis needs only episode records",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="discard a previous run in --out instead of resuming",
    )
    parser.add_argument(
        "--no-plots", action="store_true", help="write report.md and summary.json only"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_sealed_argument(parser: argparse.ArgumentParser) -> None:
    """``--sealed`` / ``--no-sealed``: the flag `turnbudget eval` and `turnbudget probe` share."""
    parser.add_argument(
        "--sealed", action=argparse.BooleanOptionalAction, default=None,
        help="run the agent in a process of its own that sees only its view of each turn, "
        "so it cannot reach the env, the oracle or a hidden budget (default: sealed for "
        "MODULE:ATTR, PATH.py:ATTR and entry-point agents, in-process for built-in ones)",
    )  # fmt: skip


def load_agent(spec: str, options: dict[str, Any], sealed: bool | None) -> Any:
    """The agent ``spec`` names, built in this process, or sealed (`seal`: built in its own
    process only) when ``sealed`` says so; ``None``: sealed when its code comes from
    outside turnbudget (`SEALED_SOURCES`)."""
    from turnbudget.agents import make_agent
    from turnbudget.agents.registry import spec_source
    from turnbudget.eval.run.driver import describe
    from turnbudget.eval.run.sealed import seal

    outside = spec_source(spec) in SEALED_SOURCES
    if sealed is None:  # (sealing needs POSIX: elsewhere the default is in-process)
        sealed = os.name == "posix" and outside
    if sealed:
        agent = seal(spec, options=options)
    else:
        try:
            agent = make_agent(spec, **options)
            _profile(agent)
        except ValueError as exc:  # (the registry's own errors: they say what is wrong)
            # (and the flags that set an option of another name: "['timeout']" read as the
            # episodes' --timeout)
            refused = re.fullmatch(r"Agent .* takes no option\(s\) \[(.*)\]", str(exc))
            flags = [
                f"{name}: {_LLM_FLAGS[name]}"
                for name in (refused[1].replace("'", "").split(", ") if refused else ())
                if name in _LLM_FLAGS
            ]  # fmt: skip
            if not flags:
                raise
            raise ValueError(f"{exc} (set by {'; '.join(flags)})") from None
        except (KeyError, FileNotFoundError, ImportError):
            raise  # (the registry's own errors: they say what is wrong)
        except (Exception, SystemExit) as exc:  # (the agent's own code failed: one line, as
            # sealed; its sys.exit() while it was built ended the command with exit code 0)
            raise ValueError(f"Cannot build the agent {spec!r}: {describe(exc)}") from exc
    if outside:
        _note_grants(spec, agent)
    return agent


def note_other_game(agent: Any, envs: list[str]) -> None:
    """Say on stderr when a trained policy plays a game it was not trained on: allowed (a
    transfer is a fair question), but its features mean what they did in training only on
    its own game, and nothing else in the run says which that was."""
    from turnbudget.agents.policy import PolicyAgent
    from turnbudget.eval.run.plan import agent_name

    if not isinstance(agent, PolicyAgent):
        return
    others = [env for env in envs if env != agent.env_id]
    if others:
        print(
            f"turnbudget: note: {agent_name(agent)} was trained on {agent.env_id}, and plays "
            f"{', '.join(others)} here",
            file=sys.stderr,
            flush=True,
        )


def _profile(agent: Any) -> None:
    """Read what the engine reads of an agent before it plays (its form and flags, its name
    and its repr), as a sealed agent's process does when it starts: a flag that is no bool,
    a ``name`` or ``__repr__`` that raises, failed there in one line but here in a traceback."""
    from turnbudget._checks import check_agent
    from turnbudget.eval.run.plan import _agent_repr, agent_name

    check_agent(agent)
    agent_name(agent)
    _agent_repr(agent)


def _note_grants(spec: str, agent: Any) -> None:
    """Say on stderr what an agent from outside turnbudget is shown beyond a player's view by
    its own flags: sealing keeps the env from it, but a submission that declares
    ``needs_oracle`` or ``budget_aware`` is handed the oracle's actions or its budget every
    turn (the report's Runs table says so too)."""
    from turnbudget.agents.base import agent_flags

    needs_oracle, budget_aware = agent_flags(agent)
    grants = [
        f"{flag} = True: it is shown {what} on every turn"
        for flag, granted, what in (
            ("needs_oracle", needs_oracle, "the oracle's actions"),
            ("budget_aware", budget_aware, "its turn budget"),
        )
        if granted
    ]
    if grants:
        from turnbudget.agents.secrets import redact

        line = f"turnbudget: note: the agent {spec!r:.200} declares " + "; and ".join(grants)
        print(redact(line), file=sys.stderr, flush=True)


def close_sealed(agents: list[Any]) -> None:
    """End the processes of the sealed agents among ``agents``."""
    from turnbudget.eval.run.sealed import Sealed

    for agent in agents:
        if isinstance(agent, Sealed):
            agent.close()


def add_backend_arguments(parser: argparse.ArgumentParser, unit: str) -> None:
    """Where the work runs and what happens when a ``unit`` ("episode", "probe") fails:
    the flags `turnbudget eval` and `turnbudget probe` share."""
    parser.add_argument(
        "--workers", type=int, default=1,
        help=f"worker processes, at most as many as there are {unit}s to run (results do not "
        "depend on it)",
    )  # fmt: skip
    parser.add_argument(
        "--backend", default=None, metavar="NAME",
        help=f"where {unit}s run: local | pool | ray | ... (default: local for one worker, "
        "else pool; results do not depend on it)",
    )  # fmt: skip
    parser.add_argument(
        "--ray-address", default=None, metavar="ADDR",
        help="with --backend ray: the cluster to join (auto, ray://host:10001, host:6379); "
        "default: a local Ray instance for the run",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="SECONDS",
        help=f"seconds one {unit} may run before it is stopped and counted as failed to run "
        "(at most 10,000,000; default: no limit)",
    )  # fmt: skip
    parser.add_argument(
        "--retries", type=int, default=2,
        help=f"how many more times a failed {unit} is retried (default: 2)",
    )  # fmt: skip


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """``backend_options`` for `evaluate` / `probe` from the shared flags."""
    if args.ray_address is None:
        return {}
    if args.backend != "ray":
        raise ValueError("--ray-address needs --backend ray")
    return {"address": args.ray_address}


def _saved_episodes(out: Path | None) -> str:
    """What an interrupted run left in ``out`` (its complete episode lines), in words."""
    from turnbudget.records import EPISODES_FILE

    if out is None:
        return "no episode saved; rerun the same command to start again"
    count = 0
    with contextlib.suppress(OSError), (out / EPISODES_FILE).open("rb") as log:  # (none: 0)
        for block in iter(lambda: log.read(1 << 20), b""):
            count += block.count(b"\n")  # (a torn last line is not an episode)
    episodes = "episode" if count == 1 else "episodes"
    return f"{count} {episodes} saved in {out}; rerun the same command to resume"


def run(args: argparse.Namespace) -> int:
    from turnbudget._checks import check_label
    from turnbudget.cli import error_line, interrupted
    from turnbudget.cli.ids import env_ids
    from turnbudget.eval import evaluate
    from turnbudget.eval.report import (
        build_report,
        check_plotting,
        failure_bounds_lines,
        report_is_current,
    )
    from turnbudget.eval.run.backends import EvaluationAborted, WorkersUnavailable
    from turnbudget.eval.run.driver import AgentNotReady
    from turnbudget.eval.run.lock import hold_output_dir
    from turnbudget.eval.run.plan import agent_name
    from turnbudget.eval.run.sealed import SealedAgentError

    agent = None
    out: Path | None = args.out
    try:
        envs = env_ids(args.env)
        if not args.no_plots:
            check_plotting()
        agent = load_agent(args.agent, llm_options(args), args.sealed)
        note_other_game(agent, envs)
        label = args.label if args.label is not None else agent_name(agent)
        out = args.out or Path("runs") / check_label(label)  # (checked before runs/ is made)
        # Held across the run and its report (`evaluate.unlocked` holds nothing itself).
        with hold_output_dir(out, run_dir=True):
            result = evaluate.unlocked(
                envs, agent, ks=args.k, ts=args.t, n=args.n, tasks=args.tasks, mode=args.mode,
                errors=parse_setting(args.errors, "--errors"),
                reveal=parse_setting(args.reveal, "--reveal"),
                workers=args.workers, backend=args.backend, out=out, seed=args.seed,
                label=label, backend_options=backend_options(args), timeout=args.timeout,
                retries=args.retries, record_steps=not args.no_steps,
                progress=not args.quiet, overwrite=args.overwrite,
                error_draws="shared" if args.shared_errors else "per_repeat",
            )  # fmt: skip
            if result.n_run or not report_is_current(out, plots=not args.no_plots):
                if not args.quiet:  # (plots take seconds after the bar has reached 100%)
                    print(f"writing the report in {out} ...", file=sys.stderr, flush=True)
                build_report(out, plots=not args.no_plots, summaries={out: result.summary})
    except (ValueError, KeyError, FileNotFoundError, ImportError, EvaluationAborted) as exc:
        print(error_line("eval", exc), file=sys.stderr)
        return 2
    # A server, Ray or workers down, an agent that could not start (its ready() or
    # preflight() hung, or raised in its sealed process):
    except (ConnectionError, WorkersUnavailable, AgentNotReady, SealedAgentError) as exc:
        print(error_line("eval", exc), file=sys.stderr)  # what finished is kept
        return 1
    except RuntimeError as exc:
        from turnbudget.agents.llm import RequestRejected

        if not isinstance(exc, RequestRejected):
            raise
        print(error_line("eval", exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # every finished episode is in the logs: the run resumes
        return interrupted("eval", _saved_episodes(out))
    finally:
        close_sealed([agent])
    grid = result.grid()
    row = grid["mean"][grid["ks"].index(1)]
    print(
        f"{label}: {result.summary['n_episodes']} episodes ({result.n_run} run now); Pass@(1,T) "
        + ", ".join(f"T={t}: {v:.2f}" for t, v in zip(grid["ts"], row, strict=True))
    )
    failed = result.summary["failed_to_run"]
    if failed["episodes"]:
        print(
            f"{failed['episodes']} episodes failed to run ({failed['by_kind']}): left out of "
            "every table; rerun the same command to retry them. Were they losses or "
            "successes, Pass@(1,T) would be:"
        )
        for line in failure_bounds_lines({escaped_controls(label): result.summary}):
            print(line)
    print(f"report: {escaped_controls(str(out / 'report.md'))}")
    return 0
