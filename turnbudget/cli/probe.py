"""``turnbudget probe``: teacher-forced probes of single-step and recovery skill.

The flags are `turnbudget eval`'s where they mean the same (``--env``,
``--agent``, ``--tasks``, ``--out``, ``--seed``, ``--label``, ``--quiet``,
``--workers``, ``--backend``, ``--ray-address``, ``--timeout``, ``--retries``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from turnbudget._checks import escaped_controls
from turnbudget.cli.eval import add_backend_arguments, add_sealed_argument
from turnbudget.cli.flags import directory_path, non_negative_int

__all__ = ["NOTHING_SAVED", "add_arguments", "run"]

#: What an interrupted ``probe`` or ``validate`` leaves: probes write their results once
#: every probe has run, so a rerun starts again.
NOTHING_SAVED = (
    "no probe result saved (they are written when every probe has run); "
    "rerun the same command to start again"
)


def summary_stamp(out: str | os.PathLike[str] | None) -> tuple[int, int, int] | None:
    """The probe summary in ``out`` as the file system tells one write from another (its
    inode, size and time), None when there is none: what `interrupted_note` compares."""
    from turnbudget.eval.probes.summary import PROBE_SUMMARY_FILE

    if out is None:
        return None
    try:
        found = os.stat(os.path.join(out, PROBE_SUMMARY_FILE))
    except (OSError, ValueError):  # (a NUL in the path: the run refuses it in one line)
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


def interrupted_note(
    out: str | os.PathLike[str] | None,
    before: tuple[int, int, int] | None,
    also: str = "",
) -> str:
    """What an interrupted ``probe`` or ``validate`` left in ``out``: `NOTHING_SAVED`, unless
    its probes had all run and their results were written (the report, or ``also``, not).
    ``before``: the `summary_stamp` before the run (an earlier run's summary there was read
    as this run's results "saved")."""
    after = summary_stamp(out)
    if after is None or after == before:
        return NOTHING_SAVED
    return f"the probe results are saved in {escaped_controls(str(out))}{also}"


def _fractions(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]  # (an empty item fails float())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expect comma-separated fractions, got {text!r}"
        ) from None
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expect distinct fractions, got {text!r}")
    return values


def _kinds(text: str) -> list[str]:
    """``--kinds``: comma-separated error kinds, at least one (`probe` checks which)."""
    kinds = [k.strip() for k in text.split(",")]
    if not all(kinds):  # (",," and "" were read as no recovery probe at all)
        raise argparse.ArgumentTypeError(
            f"expect comma-separated error kinds (slip, setback), got {text!r}"
        )
    return kinds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from turnbudget.cli.eval import add_llm_arguments, parse_tasks

    parser.add_argument(
        "--env", action="append", required=True, metavar="ID",
        help="env id (repeat the flag or give a comma list), e.g. turnbudget/Maze-Medium-v0",
    )  # fmt: skip
    parser.add_argument(
        "--agent", action="append", default=None,
        help="random | oracle[:EPSILON] | control:NAME | llm:MODEL | a name registered in "
        "turnbudget.agents.registry or through an entry point | MODULE:ATTR[:ARGS] or "
        "PATH.py:ATTR[:ARGS] (repeat for several agents; default: random)",
    )  # fmt: skip
    add_sealed_argument(parser)
    add_llm_arguments(parser)
    parser.add_argument(
        "--tasks", type=parse_tasks, default=20,
        help="task count, seed range LO-HI, or seed list (default: 20)",
    )  # fmt: skip
    parser.add_argument(
        "--out",
        type=directory_path,
        default=None,
        help="output directory (default: runs/probe-<label>); one that holds other probes' "
        "results is refused unless --overwrite",
    )
    parser.add_argument(
        "--overwrite", action="store_true",
        help="replace the results of other probes in --out (the same probes again are "
        "always replaced)",
    )  # fmt: skip
    parser.add_argument(
        "--prefixes", type=_fractions, default=[0.0, 0.25, 0.5, 0.75],
        help="prefix lengths as fractions of the optimal plan (default: 0,0.25,0.5,0.75)",
    )  # fmt: skip
    parser.add_argument(
        "--kinds",
        type=_kinds,
        default=["slip", "setback"],
        help="error kinds of the recovery probes (default: slip,setback)",
    )
    parser.add_argument(
        "--budget-factor",
        type=float,
        default=1.5,
        help="budgets: ceil(F * d) + S turns, d the plan's length (single-step probes) or "
        "the distance after the error (recovery probes and their controls) (default: 1.5)",
    )
    parser.add_argument("--budget-slack", type=int, default=2, help="S in the budgets (default: 2)")
    parser.add_argument(
        "--repeats", type=int, default=1, help="probes per state for the agent (default: 1)"
    )
    parser.add_argument(
        "--baseline-repeats",
        type=int,
        default=4,
        help="probes per state for the random baseline (default: 4)",
    )
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="base seed (plans, errors, agents)"
    )
    parser.add_argument(
        "--label", default=None, help="name of the agent in the results (one agent)"
    )
    add_backend_arguments(parser, "probe")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from turnbudget._checks import check_label
    from turnbudget.cli import error_line, interrupted
    from turnbudget.cli.eval import (
        backend_options,
        close_sealed,
        llm_options,
        load_agent,
        note_other_game,
    )
    from turnbudget.cli.ids import env_ids
    from turnbudget.eval.probes.run import probe
    from turnbudget.eval.report import write_probe_report
    from turnbudget.eval.report.markdown import probe_failure_bounds
    from turnbudget.eval.run.backends import EvaluationAborted, WorkersUnavailable
    from turnbudget.eval.run.driver import AgentNotReady
    from turnbudget.eval.run.lock import hold_output_dir
    from turnbudget.eval.run.plan import agent_name
    from turnbudget.eval.run.sealed import SealedAgentError

    agents: list = []
    out, before = args.out, summary_stamp(args.out)
    try:
        envs = env_ids(args.env)
        options = llm_options(args)
        specs = args.agent or ["random"]
        is_llm = [spec.strip().lower().startswith("llm") for spec in specs]
        given = [name for name, value in options.items() if value is not None]
        if given and not any(is_llm):  # (eval refuses them too: no agent would read them)
            flag = "--" + given[0].replace("_", "-")
            raise ValueError(f"{flag} is an option of llm agents, and no --agent is one")
        for spec, llm in zip(specs, is_llm, strict=True):
            agents.append(load_agent(spec, options if llm else {}, args.sealed))
            note_other_game(agents[-1], envs)
        label = args.label if args.label is not None else "+".join(agent_name(a) for a in agents)
        if args.out is None:  # (the default folder, named after the agents: before runs/ is made)
            try:
                check_label(label)
            except ValueError as exc:  # (a name the caller never gave, nor can give: --label
                # is for one agent)
                raise ValueError(
                    f"The default folder runs/probe-<agents> cannot be named after these "
                    f"agents ({exc}): give --out DIR"
                ) from None
        out = args.out or Path("runs") / f"probe-{label}"
        if args.out is None:  # (the default folder, named only now)
            before = summary_stamp(out)
        # Held across the probes and their report (`probe.unlocked` holds nothing itself).
        with hold_output_dir(out):
            result = probe.unlocked(
                envs, agents, tasks=args.tasks, prefixes=args.prefixes,
                kinds=args.kinds,
                budget_factor=args.budget_factor, budget_slack=args.budget_slack,
                repeats=args.repeats, baseline_repeats=args.baseline_repeats, seed=args.seed,
                label=args.label, out=out, progress=not args.quiet, workers=args.workers,
                backend=args.backend, backend_options=backend_options(args),
                timeout=args.timeout, retries=args.retries, overwrite=args.overwrite,
            )  # fmt: skip
            write_probe_report(out, result.summary)
    except (ValueError, KeyError, TypeError, ImportError, EvaluationAborted) as exc:
        print(error_line("probe", exc), file=sys.stderr)
        return 2
    # An LLM server, Ray or workers down, an agent that could not start (its ready() or
    # preflight() hung, or raised in its sealed process):
    except (ConnectionError, WorkersUnavailable, AgentNotReady, SealedAgentError) as exc:
        print(error_line("probe", exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # (probes write their results once all have run)
        return interrupted("probe", interrupted_note(out, before, ", its report not written"))
    finally:
        close_sealed(agents)

    def interval(s: dict) -> str:  # None when the chance rate is 1 (every answer optimal)
        return "–" if s["mean"] is None else f"{s['mean']:.2f} [{s['low']:.2f}, {s['high']:.2f}]"

    for name, groups in result.summary["agents"].items():
        g = groups["all"] if "all" in groups else next(iter(groups.values()))
        print(
            f"{name}: single_step_skill {interval(g['single_step_skill'])} "
            f"(no-op rate {interval(g['noop_rate'])}), "
            f"recovery_specific_skill {interval(g['recovery_specific_skill'])}"
        )
    shown_out = escaped_controls(str(out))  # (as the error lines: a path's ESC sequences)
    if result.failed:
        print(
            f"{len(result.failed)} probes failed to run (left out of the skills; see {shown_out})"
        )
        if result.summary.get("failed_to_run_bounds"):
            print("Counted against the agent, then for it, the skills would be:")
        for label, group, cells in probe_failure_bounds(result.summary):
            print(f"{escaped_controls(label)}, {group}: {cells}")
    print(f"results: {shown_out}")
    return 0
