"""``turnbudget train``: behaviour cloning or MaskablePPO on a game (the rl extra).

The command-line face of `turnbudget.train.train`: one flag per `TrainConfig`
field. ``--help`` needs only the config (no torch); a run without the rl
extra stops with the command that installs it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

__all__ = ["add_arguments", "run"]

EXAMPLES = """\
examples:
  turnbudget train --algo bc --env-id turnbudget/Maze-Easy-v0 --out runs/bc
  turnbudget train --init runs/bc --budget-mix uniform:12-40 --ent-coef 0 \\
      --total-steps 50000 --progress --out runs/mix
  turnbudget eval --env turnbudget/Maze-Easy-v0 --agent policy:runs/mix --reveal always

Training needs the rl extra (torch, stable-baselines3, sb3-contrib):
  pip install -e '.[rl]' in the turnbudget checkout"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from turnbudget.cli.flags import add_config_arguments
    from turnbudget.train.config import TrainConfig

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXAMPLES
    add_config_arguments(parser, TrainConfig)
    # (unset: None, so that `run` tells --turn-budget 30, the default's value, from no flag)
    parser.set_defaults(turn_budget=None)
    parser.add_argument(
        "--budget", type=int, default=None, help="deprecated: the old name of --turn-budget"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the training run --out holds (an evaluation run's directory is refused)",
    )


def run(args: argparse.Namespace) -> int:
    from turnbudget.cli import error_line
    from turnbudget.cli.flags import config_from_args
    from turnbudget.train.config import TrainConfig

    try:
        given, args.turn_budget = args.turn_budget, TrainConfig.turn_budget
        if given is not None:
            args.turn_budget = given
        if args.budget is not None:
            print(
                "turnbudget train: warning: --budget is deprecated: use --turn-budget (the same "
                "number); --budget will be removed in the next release",
                file=sys.stderr,
            )
            if given is not None:
                raise ValueError("Got --turn-budget and its old name --budget: pass --turn-budget")
            args.turn_budget = args.budget
        from turnbudget.cli.ids import resolve_env_id

        # (one rule for every subcommand: the turnbudget/ prefix may be left out)
        args.env_id = resolve_env_id(args.env_id)
        config = config_from_args(TrainConfig, args)
        # Before torch loads: its thread pool reads this once.
        os.environ.setdefault("OMP_NUM_THREADS", str(config.torch_threads))
        from turnbudget.train import train

        summary = train(config, overwrite=args.overwrite)  # (an ImportError: the rl extra)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(error_line("train", exc), file=sys.stderr)  # (a path's ESC sequences escaped)
        return 2
    print(json.dumps(summary))
    return 0
