"""``turnbudget play ID``: play an env at the terminal."""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "env_id", help="e.g. turnbudget/KeyQuest-Easy-v0 (the prefix may be omitted)"
    )
    parser.add_argument("--seed", type=int, default=None, help="game seed (default: random)")
    parser.add_argument(
        "--turn-budget", dest="budget", type=int, default=None,
        help="turn budget T (default: the id's; --budget is its old name)",
    )  # fmt: skip
    # (its own dest: given both, the later one silently won, where train refuses the pair)
    parser.add_argument(
        "--budget", dest="old_budget", type=int, default=None, help=argparse.SUPPRESS
    )


def _read_command(prompt: str) -> str | None:
    """The player's next line; None at the end of input, and also when stdin or stdout is
    closed (``<&-``, ``>&-``: Python sets it to None, and `input` raises RuntimeError)."""
    if sys.stdin is None or sys.stdout is None:
        return None
    try:
        return input(prompt)
    except EOFError:
        return None


def run(args: argparse.Namespace) -> int:
    from turnbudget.cli import error_line
    from turnbudget.cli.ids import resolve_env_id
    from turnbudget.wrappers import TurnBudget
    from turnbudget.wrappers._common import find_wrapper

    try:
        env_id = resolve_env_id(args.env_id)
    except ValueError as error:
        print(error_line("play", error), file=sys.stderr)
        return 2
    if env_id not in gym.registry:
        print(
            error_line("play", f"Unknown env id {env_id!r}; `turnbudget list` shows them all."),
            file=sys.stderr,
        )
        return 2
    if args.old_budget is not None:
        if args.budget is not None:
            print(
                error_line(
                    "play", "Got --turn-budget and its old name --budget: pass --turn-budget"
                ),
                file=sys.stderr,
            )
            return 2
        args.budget = args.old_budget
    options = None if args.budget is None else {"turn_budget": args.budget}
    try:
        env = gym.make(env_id)
    except (gym.error.Error, TypeError, ValueError, ImportError) as error:
        print(error_line("play", f"Cannot make {env_id!r}: {error}"), file=sys.stderr)
        return 2
    if find_wrapper(env, TurnBudget) is None:  # (as `turnbudget.make`, so eval, refuses it)
        env.close()
        print(
            f"turnbudget play: error: {env_id!r} has no TurnBudget: play takes the text games "
            "with turn budgets (`turnbudget list` shows them)",
            file=sys.stderr,
        )
        return 2
    try:
        obs, info = env.reset(seed=args.seed, options=options)
    except (ValueError, RuntimeError) as error:  # (a bad --seed or --turn-budget; a
        # TextWorld game TextWorld cannot make: GenerationError)
        print(error_line("play", error), file=sys.stderr)
        return 2
    print(obs)
    print("(type `help` for the admissible commands, `quit` to leave)")
    # A line that is not UTF-8 (a Latin-1 paste) ended the game in a UnicodeDecodeError
    # traceback under a strict stdin (LANG=en_US.UTF-8): such bytes are now a command of
    # U+FFFD, which the game answers as any command it does not know.
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")
    while True:
        command = _read_command(f"\n[{info['turns_left']} turns left] > ")
        if command is None:
            print()
            return 0
        if command.strip().lower() in ("quit", "exit"):
            return 0
        if command.strip().lower() == "help":
            print("You can: " + ", ".join(info["admissible_actions"]))
            continue
        obs, reward, terminated, truncated, info = env.step(command)
        print(obs)
        if terminated or truncated:
            outcome = (
                "You won!"
                if info.get("won")
                else "You lost."
                if info.get("lost")
                else "Out of turns."
            )
            print(f"\n{outcome} Turns used: {info['turns_used']} of {info['turn_budget']}.")
            return 0
