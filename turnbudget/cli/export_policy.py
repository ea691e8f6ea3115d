"""``turnbudget export-policy``: a trained policy in the zoo format (plays without torch).

The command-line face of `turnbudget.agents.policy.export_policy`: reads a
policy directory written by ``turnbudget train`` (reading its ``policy.zip``
needs torch) and writes ``weights.npz`` (the actor's float32 arrays) and
``encoding.json``, plus ``card.json`` from ``--card`` (a JSON file) if given, else the
source's own ``card.json`` if it has one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from turnbudget._checks import escaped_controls

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="a saved policy directory (from `turnbudget train`)")
    parser.add_argument("destination", help="the directory to write the zoo-format policy into")
    parser.add_argument(
        "--card",
        help="a JSON file saying how it was trained (-> card.json; default: the source's card)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a policy DESTINATION holds already (its card.json too: by --card's, or the "
        "source's, else removed)",
    )


def run(args: argparse.Namespace) -> int:
    from turnbudget.agents.policy import export_policy
    from turnbudget.cli import error_line

    try:
        for name in ("source", "destination"):
            if not getattr(args, name).strip():
                raise ValueError(f"Expect {name.upper()} to be a directory, got an empty path")
        card = None if args.card is None else _read_card(args.card)
        out = export_policy(args.source, args.destination, card=card, overwrite=args.overwrite)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(error_line("export-policy", exc), file=sys.stderr)  # (a path's ESC sequences escaped)
        return 2
    print(f"wrote {escaped_controls(str(out))}")  # (as the error lines: a path's ESC sequences)
    return 0


_MAX_CARD_BYTES = 1 << 20  # (a card is a few hundred bytes; the zoo's reader refuses more)


def _read_card(path: str) -> dict:
    """The ``--card`` file: a JSON object; a ValueError naming the flag and the file if it
    cannot be read or is not one."""
    where = f"--card {path!r}"
    if not path.strip():
        raise ValueError("Expect --card to name a JSON file, got an empty path")
    try:
        card = Path(path)
        if card.exists() and not card.is_file():  # (/dev/zero was read out of memory)
            raise ValueError(f"Expect {where} to be a file (a card is a small JSON file)")
        with open(path, "rb") as card_file:
            data = card_file.read(_MAX_CARD_BYTES + 1)
        if len(data) > _MAX_CARD_BYTES:
            raise ValueError(f"Expect {where} to be at most {_MAX_CARD_BYTES:,} bytes")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"Cannot read {where}: {reason}") from None
    try:
        card = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:  # (JSONDecodeError is one)
        raise ValueError(f"Expect {where} to hold JSON: {exc}") from None
    except RecursionError:  # (100k nested brackets)
        raise ValueError(f"Expect {where} to hold JSON nested less deeply") from None
    if not isinstance(card, dict):
        raise ValueError(f"Expect {where} to hold a JSON object, got {type(card).__name__}")
    return card


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")
