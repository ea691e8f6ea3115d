"""``turnbudget textworld pregen``: fill the game cache ahead of a run."""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

#: Game ids are TextWorld's 32-bit seeds.
MAX_GAME_ID = 2**32 - 1
#: The most games one ``pregen`` generates (about 0.4 MB and a second each).
MAX_PREGEN_GAMES = 1_000_000

__all__ = ["add_arguments", "parse_seeds", "run"]


def parse_seeds(text: str) -> list[int]:
    """Parse ``"0-9"``, ``"3"`` or ``"0-4,10,12-13"`` into a sorted list of game ids.

    Example:
        >>> parse_seeds("0-2,7,5-5")
        [0, 1, 2, 5, 7]
    """
    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Expect seeds like '0-99' or '1,5,7', got {text!r}"
            ) from None
        if first < 0 or last < first:
            raise argparse.ArgumentTypeError(
                f"Expect a non-empty range of non-negative seeds, got {part!r}"
            )
        # (before the set is built: "0-1000000000000" ran out of memory; game ids are 32-bit)
        if last > MAX_GAME_ID or len(seeds) + last - first + 1 > MAX_PREGEN_GAMES:
            raise argparse.ArgumentTypeError(
                f"Expect at most {MAX_PREGEN_GAMES:,} seeds from 0 to {MAX_GAME_ID:,}, got {text!r}"
            )
        seeds.update(range(first, last + 1))
    return sorted(seeds)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from turnbudget.cli.flags import directory_path

    sub = parser.add_subparsers(dest="textworld_command", required=True, metavar="COMMAND")
    pregen = sub.add_parser(
        "pregen",
        help="generate games into the cache ahead of a run",
        description="Generate the games of TextWorld env ids into the game cache "
        "(safe to run in several processes at once). A game TextWorld cannot make (one too "
        "big for its story file) is one line on stderr naming the id and game id; the other "
        "games go on, and the exit status is 1.",
    )
    pregen.add_argument(
        "env_ids",
        nargs="*",
        metavar="ENV_ID",
        help="e.g. turnbudget/Cooking-Hard-v0 (default: every generated TextWorld id)",
    )
    pregen.add_argument(
        "--seeds",
        type=parse_seeds,
        default=parse_seeds("0-9"),
        help="game ids (reset seeds) to generate, e.g. 0-99 or 1,5,7 (default: 0-9)",
    )
    pregen.add_argument(
        "--cache-dir",
        type=directory_path,  # ("" fell back to the default cache, which `cache_dir=""` refuses)
        default=None,
        help="cache root (default: $TURNBUDGET_TEXTWORLD_CACHE or the user cache dir)",
    )
    pregen.add_argument(
        "--workers", type=int, default=1,
        help="parallel processes, at most one per game (default: 1)",
    )  # fmt: skip
    pregen.add_argument("--no-progress", action="store_true", help="no progress bar")
    pregen.add_argument("--json", action="store_true",
                        help="print one JSON line per id with its walkthrough lengths")  # fmt: skip


def _build(env_id: str, cache_dir: str | None) -> Any:
    import gymnasium as gym

    import turnbudget  # noqa: F401 - registers the ids (in a spawned worker too)
    from turnbudget._checks import load_object

    kwargs = dict(gym.spec(env_id).kwargs)
    cls = load_object(kwargs.pop("game_entry_point"), what=f"game of {env_id!r}")
    kwargs.pop("turn_budget", None)
    return cls(**kwargs, cache_dir=cache_dir)


def _pregen_one(job: tuple[str, int, str | None]) -> tuple[str, int, int | None]:
    env_id, seed, cache_dir = job
    path = _build(env_id, cache_dir).pregenerate(seed)
    game = path.with_suffix(".json")
    try:
        with open(game, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError) as exc:  # (a cache entry changed by hand: a bare traceback)
        raise ValueError(f"{game}: cannot read its walkthrough: {exc}") from None
    metadata = saved.get("metadata") if isinstance(saved, dict) else None
    walkthrough = metadata.get("walkthrough") if isinstance(metadata, dict) else None
    if walkthrough is not None and not isinstance(walkthrough, list):
        raise ValueError(f"{game}: its walkthrough is {type(walkthrough).__name__}, not a list")
    if not isinstance(metadata, dict) and saved is not None:
        raise ValueError(f"{game}: not a TextWorld game's .json (no metadata object)")
    return env_id, seed, None if walkthrough is None else len(walkthrough)


def _pregen_or_why(job: tuple[str, int, str | None]) -> tuple[str, int, int | None, str | None]:
    """`_pregen_one`, or why TextWorld could not make the game (the other games go on: the
    first such game was a traceback that ended the run)."""
    from turnbudget.envs.textworld.generated import GenerationError

    try:
        return (*_pregen_one(job), None)
    except GenerationError as exc:
        return job[0], job[1], None, str(exc)


def _generated_ids() -> list[str]:
    from turnbudget.envs.textworld.variants import TEXTWORLD_VARIANTS

    return [f"turnbudget/{i}" for i in TEXTWORLD_VARIANTS if i != "TextWorldFile-v0"]


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from turnbudget._checks import brief
    from turnbudget.cli import error_line
    from turnbudget.cli.ids import resolve_env_id
    from turnbudget.eval.run.backends import MAX_LOCAL_WORKERS

    known = set(_generated_ids())
    problem = None
    try:  # (the turnbudget/ prefix may be left out, as in every subcommand; a team game's
        # name is refused with the route that plays it)
        env_ids = list(dict.fromkeys(map(resolve_env_id, args.env_ids or _generated_ids())))
    except ValueError as exc:
        env_ids, problem = [], str(exc)
    problem = problem or next(
        (f"Unknown generated TextWorld id {brief(env_id)}; expected one of {sorted(known)}"
         for env_id in env_ids if env_id not in known),
        None,
    )  # fmt: skip
    if problem is None and args.workers < 1:
        problem = f"Expect --workers to be a positive int, got {args.workers}"
    if problem is None and args.workers > MAX_LOCAL_WORKERS:  # (each one a process, at once)
        problem = f"Expect --workers to be at most {MAX_LOCAL_WORKERS}, got {args.workers}"
    cache_dir = os.fspath(args.cache_dir) if args.cache_dir else None
    if problem is None and cache_dir is not None and os.path.isfile(cache_dir):
        problem = f"Expect --cache-dir to be a directory, but {cache_dir!r} is a file"
    if problem is None:
        try:  # (a cache root it cannot use, or no textworld, found before any worker starts)
            for env_id in env_ids:
                _build(env_id, cache_dir)
        except (ValueError, ImportError) as exc:
            problem = str(exc)
    if problem is not None:  # (one line and exit 2, as the other commands say it)
        print(error_line("textworld", problem), file=sys.stderr)
        return 2
    jobs = [(env_id, seed, cache_dir) for env_id in env_ids for seed in args.seeds]
    lengths: dict[str, list[int | None]] = {env_id: [] for env_id in env_ids}
    failed = 0
    workers = max(1, min(args.workers, len(jobs)))
    bar = tqdm(total=len(jobs), unit="game", desc="pregen",
               disable=args.no_progress or sys.stderr is None)  # fmt: skip

    def record(env_id: str, seed: int, length: int | None, why: str | None) -> None:
        nonlocal failed
        if why is None:
            lengths[env_id].append(length)
        else:  # (one line each, as they happen, above the bar)
            failed += 1
            tqdm.write(error_line("textworld", f"{env_id} game {seed}: {why}"), file=sys.stderr)
        bar.update()

    try:
        with bar:
            if workers == 1:
                for result in map(_pregen_or_why, jobs):
                    record(*result)
            else:
                with ProcessPoolExecutor(workers) as pool:
                    for result in pool.map(_pregen_or_why, jobs):
                        record(*result)
    except ValueError as exc:  # (a cache folder it cannot create, e.g. under /proc)
        print(error_line("textworld", exc), file=sys.stderr)
        return 2
    for env_id in env_ids:
        known_lengths = [n for n in lengths[env_id] if n is not None]
        summary = {
            "env_id": env_id,
            "games": len(lengths[env_id]),
            "max_walkthrough": max(known_lengths, default=None),
            "walkthrough_lengths": lengths[env_id],
        }
        if args.json:
            print(json.dumps(summary))
        else:
            print(f"{env_id}: {summary['games']} games ready, longest walkthrough "
                  f"{summary['max_walkthrough']}")  # fmt: skip
    return 1 if failed else 0
