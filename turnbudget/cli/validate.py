"""``turnbudget validate``: check the probe metrics on control agents whose true skills are known.

Runs every control of `turnbudget.agents.controls` (random, the ε-oracles,
the undo reflex, the ping-pong, the look oracles, the recovery-positive and
recovery-negative agents) through the teacher-forced probes, prints per
control the expected sign of each metric and what was measured with its 95%
interval and the simultaneous interval its verdict reads
(`turnbudget.eval.probes.validate`), and exits 1 when a metric misbehaves, 3 when
none did but too few tasks left a built-in skill unresolved (2 on bad input). ``--workers``, ``--backend``, ``--ray-address``,
``--timeout`` and ``--retries`` are `turnbudget probe`'s.
"""

from __future__ import annotations

import argparse
import sys

from turnbudget.cli.eval import add_backend_arguments
from turnbudget.cli.flags import directory_path, non_negative_int

__all__ = ["DEFAULT_ENVS", "add_arguments", "run"]

#: What ``turnbudget validate`` checks without ``--env`` (about a minute).
DEFAULT_ENVS = ("turnbudget/Maze-Easy-v0", "turnbudget/KeyQuest-Easy-v0")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from turnbudget.cli.eval import parse_tasks

    parser.add_argument(
        "--env", action="append", default=None, metavar="ID",
        help="env id (repeat the flag or give a comma list); each is checked on its own "
        f"(default: {', '.join(DEFAULT_ENVS)})",
    )  # fmt: skip
    parser.add_argument(
        "--tasks", type=parse_tasks, default=40,
        help="task count, seed range LO-HI, or seed list (default: 40)",
    )  # fmt: skip
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="base seed (plans, errors, agents)"
    )
    parser.add_argument(
        "--baseline-repeats", type=int, default=4,
        help="probes per state for the random baseline (default: 4)",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=directory_path, default=None,
        help="a directory for the probe results and validation.json (default: none); one "
        "that holds other probes' results is refused unless --overwrite",
    )  # fmt: skip
    parser.add_argument(
        "--overwrite", action="store_true",
        help="replace the results of other probes in --out (the same probes again are "
        "always replaced)",
    )  # fmt: skip
    add_backend_arguments(parser, "probe")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from turnbudget.cli import error_line, interrupted
    from turnbudget.cli.eval import backend_options
    from turnbudget.cli.ids import env_ids
    from turnbudget.cli.probe import interrupted_note, summary_stamp
    from turnbudget.eval.probes.validate import MIN_TASKS_TO_RESOLVE, format_checks, validate
    from turnbudget.eval.run.backends import EvaluationAborted, WorkersUnavailable

    before = summary_stamp(args.out)
    try:
        envs = env_ids(args.env or DEFAULT_ENVS)
        result = validate(
            envs, tasks=args.tasks, seed=args.seed, baseline_repeats=args.baseline_repeats,
            out=args.out, progress=not args.quiet, workers=args.workers, backend=args.backend,
            backend_options=backend_options(args), timeout=args.timeout, retries=args.retries,
            overwrite=args.overwrite,
        )  # fmt: skip
    except (ValueError, KeyError, TypeError, ImportError, EvaluationAborted) as exc:
        print(error_line("validate", exc), file=sys.stderr)
        return 2
    except WorkersUnavailable as exc:
        print(error_line("validate", exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # (its probes' results may be saved, its checks not)
        note = interrupted_note(args.out, before, "; the checks were not made")
        return interrupted("validate", note)
    print(format_checks(result.checks))
    failed, inconclusive = result.failed, result.inconclusive
    checked = sum(c.ok is not None or c.inconclusive for c in result.checks)
    few = (
        f"{len(inconclusive)} of {checked} checks were inconclusive: too few tasks to resolve "
        f"a built-in skill (an env needs {MIN_TASKS_TO_RESOLVE}); run with more --tasks"
    )
    if result.probe.failed:
        print(f"{len(result.probe.failed)} probes failed to run (left out of the metrics)")
    if failed:
        print(f"{len(failed)} of {checked} checks FAILED")
        if inconclusive:
            print(few)
        unmeasured = [c for c in failed if c.value.get("mean") is None]
        if unmeasured:  # (not chance: nothing was measured, e.g. plans too short for errors)
            print(
                f"{len(unmeasured)} of them measured nothing (–): no probe of that kind could "
                "be planned or scored on those tasks (a recovery probe needs a plan of at "
                "least 3 commands); try more --tasks or another --env"
            )
        if len(unmeasured) < len(failed):
            print(
                "(the null checks, 0, ≈0 and ≤0, read simultaneous intervals: a sound metric "
                "fails one of them in at most 5% of runs, and such a miss moves with --seed; "
                "a defect misses at every seed, more clearly with more --tasks)"
            )
        return 1
    if inconclusive:  # (no verdict on the metric either way)
        print(f"no check failed; {few}")
        return 3
    print(f"all {checked} checks passed")
    return 0
