"""``turnbudget export-policy``: a trained policy in the zoo format (plays without torch).

The command-line face of `turnbudget.agents.policy.export_policy`: reads a
policy directory written by ``turnbudget train`` (reading its ``policy.zip``
needs torch) and writes ``weights.npz`` (the actor's float32 arrays) and
``encoding.json``, plus ``card.json`` from ``--card`` (a JSON file) if given.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="a saved policy directory (from `turnbudget train`)")
    parser.add_argument("destination", help="the directory to write the zoo-format policy into")
    parser.add_argument("--card", help="a JSON file saying how it was trained (-> card.json)")


def run(args: argparse.Namespace) -> int:
    from turnbudget.agents.policy import export_policy

    try:
        card = None
        if args.card:
            card = json.loads(Path(args.card).read_text())
            if not isinstance(card, dict):
                raise ValueError(f"Expect --card to hold a JSON object, got {type(card).__name__}")
        out = export_policy(args.source, args.destination, card=card)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"turnbudget export-policy: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0
