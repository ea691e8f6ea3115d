"""``turnbudget list``: every registered id with its family, difficulty and budget; ``--zoo``:
the trained policies the package ships (``policy:zoo/...`` agent specs)."""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym

__all__ = ["add_arguments", "env_table", "run", "team_table", "zoo_table"]

#: The most seeds ``--seeds`` measures the optimal lengths over.
MAX_SEEDS = 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from turnbudget.cli.flags import non_negative_int

    def seed_count(text: str) -> int:
        count = non_negative_int(text)
        if count > MAX_SEEDS:  # (each seed solves every game once: 10**20 would never end)
            raise argparse.ArgumentTypeError(f"expect at most {MAX_SEEDS:,} seeds, got {text!r}")
        return count

    parser.add_argument(
        "--seeds", type=seed_count, default=5,
        help="seeds over which to measure the optimal-solution length (default: 5; 0 skips it)",
    )  # fmt: skip
    parser.add_argument(
        "--family",
        help="only ids whose family contains this text (with --team: games whose name does; "
        "with --zoo: policies whose spec or env does)",
    )
    parser.add_argument(
        "--all-games", action="store_true",
        help="also measure games that are slow to generate (TextWorld); default: show '-' for them",
    )  # fmt: skip
    parser.add_argument(
        "--team", action="store_true",
        help="list the multi-agent (PettingZoo) games instead (needs the multiagent extra)",
    )  # fmt: skip
    parser.add_argument(
        "--zoo", action="store_true",
        help="list the trained policies the package ships (agent specs policy:zoo/...)",
    )  # fmt: skip


_DIFFICULTY_ORDER = {"Easy": 0, "Medium": 1, "Hard": 2}


def _split_id(env_id: str) -> tuple[str, str]:
    """``turnbudget/KeyQuest-Hard-v0`` -> ("KeyQuest", "Hard")."""
    parts = env_id.split("/", 1)[1].rsplit("-", 1)[0].split("-")
    return parts[0], "-".join(parts[1:]) or "-"


def env_table(seeds: int = 5, family: str | None = None, all_games: bool = False) -> list[dict]:
    """One row per registered ``turnbudget/`` id."""
    rows = []
    ids = sorted(
        (env_id for env_id in gym.registry if env_id.startswith("turnbudget/")),
        key=lambda env_id: (
            _split_id(env_id)[0],
            _DIFFICULTY_ORDER.get(_split_id(env_id)[1], 9),
            env_id,
        ),
    )
    for env_id in ids:
        spec = gym.registry[env_id]
        fam, difficulty = _split_id(env_id)
        if family and family.lower() not in fam.lower():
            continue
        native = str(spec.kwargs.get("game_entry_point", "")).startswith("turnbudget.envs.native")
        lengths = []
        note = "-"
        if seeds > 0 and (native or all_games):
            try:
                env = gym.make(env_id)
            except (TypeError, ValueError) as error:  # e.g. an id that needs a game file
                note = f"- ({str(error).split(',')[0]})"
            else:
                try:  # (a TextWorld game cache it cannot write, a game TextWorld cannot make)
                    for seed in range(seeds):
                        env.reset(seed=seed)
                        lengths.append(env.unwrapped.distance_to_goal())
                except (ValueError, RuntimeError) as error:
                    lengths, note = [], f"- ({str(error).split(',')[0]})"
                finally:
                    env.close()
        rows.append(
            {
                "id": env_id,
                "family": fam,
                "difficulty": difficulty,
                # the free ``-v0`` ids derive their budget from the config kwargs
                "turn_budget": spec.kwargs.get("turn_budget") or "by kwargs",
                "optimal": f"{min(lengths)}-{max(lengths)}" if lengths else note,
            }
        )
    return rows


def team_table(seeds: int = 5, family: str | None = None) -> list[dict]:
    """One row per team game and difficulty: roles, default team budget, oracle plan lengths
    (``family``: only games whose name contains this text)."""
    from turnbudget.multiagent import all_games

    rows = []
    for name, module in sorted(all_games.items()):
        if family and family.lower() not in name.lower():
            continue
        for difficulty, budget in module.DEFAULT_BUDGETS.items():
            env = module.raw_env(difficulty=difficulty)
            lengths = []
            for seed in range(seeds):
                env.reset(seed=seed)
                lengths.append(env.distance_to_goal(env.possible_agents[0]))
            rows.append(
                {
                    "id": module.raw_env.metadata["name"],
                    "family": ", ".join(env.possible_agents),
                    "difficulty": difficulty.capitalize(),
                    "turn_budget": budget,
                    "optimal": f"{min(lengths)}-{max(lengths)}" if lengths else "-",
                }
            )
    return rows


def zoo_table() -> list[dict]:
    """One row per policy of the zoo: its agent spec, game, arm, seed and how it was trained."""
    from turnbudget.agents.policy import zoo_card, zoo_policies

    rows = []
    for spec in zoo_policies():
        card = zoo_card(spec)
        rows.append({"id": f"policy:{spec}", "family": card["env_id"], "how": card["how"]})
    return rows


def run(args: argparse.Namespace) -> int:
    from turnbudget.cli import error_line

    if args.zoo and args.team:  # (--team was ignored: no team game has a policy in the zoo)
        print("turnbudget list: error: expect --zoo or --team, not both", file=sys.stderr)
        return 2
    if args.zoo:
        rows = zoo_table()
        if args.family:  # (it was ignored: every policy listed)
            wanted = args.family.lower()
            rows = [r for r in rows if wanted in r["id"].lower() or wanted in r["family"].lower()]
            if not rows:
                print(
                    error_line(
                        "list",
                        f"no zoo policy's spec or env contains {args.family!r}; "
                        "`turnbudget list --zoo` shows them all.",
                    ),
                    file=sys.stderr,
                )
                return 2
        header = {"id": "agent spec", "family": "env", "how": "trained"}
        widths = {k: max(len(str(r[k])) for r in [header, *rows]) for k in header}
        for row in [header, *rows]:
            print("  ".join(str(row[k]).ljust(widths[k]) for k in header).rstrip())
        print("\nEach policy's card.json (next to its weights.npz) says how it was trained.")
        return 0
    if args.team:
        try:
            rows = team_table(args.seeds, args.family)
        except ImportError as error:
            # (it names the extra to install)
            print(error_line("list", f"Cannot list the team games: {error}"), file=sys.stderr)
            return 1
    else:
        rows = env_table(args.seeds, args.family, args.all_games)
    if not rows and args.family:  # (a header alone read as nothing registered)
        what, flag = ("team game's name", " --team") if args.team else ("id's family", "")
        print(
            error_line(
                "list",
                f"no {what} contains {args.family!r}; `turnbudget list{flag}` shows them all.",
            ),
            file=sys.stderr,
        )
        return 2
    header = {"id": "id", "family": "family", "difficulty": "difficulty",
              "turn_budget": "budget", "optimal": f"optimal ({args.seeds} seeds)"}  # fmt: skip
    if args.team:
        header["id"], header["family"] = "game", "roles"
    widths = {k: max(len(str(r[k])) for r in [header, *rows]) for k in header}
    for row in [header, *rows]:
        print("  ".join(str(row[k]).ljust(widths[k]) for k in header).rstrip())
    if any(r["optimal"] == "-" for r in rows):
        if args.seeds == 0:  # (nothing measured: not a slow game's '-')
            print("\n'-': not measured (--seeds 0).")
        elif not args.all_games:
            print("\n'-': slow to generate, not measured; --all-games measures them too.")
    if args.team:
        print(
            "\nTeam games are PettingZoo games, not Gymnasium ids: "
            'turnbudget.multiagent.make_team("vault_v0", difficulty="easy") makes one, '
            "turnbudget.eval.evaluate_team evaluates it."
        )
    return 0
