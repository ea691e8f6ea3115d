"""`check_group_seeding` on GEM's and TextArena's games, run in THEIR venv.

Not for turnbudget's venv: `group_seeding.py --peers-python /tmp/peers/bin/python` runs
this file with that interpreter and reads one JSON object per line from its stdout.
It imports the peers' packages and `turnbudget.utils` (install turnbudget there too, or
put the repository on PYTHONPATH); a peer that is not installed is reported as skipped,
never an error.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install gem-llm textarena -e .
    /tmp/peers/bin/python benchmarks/peer_group_seeding.py

Every game is checked as its own package ships it (``gem.make(id)``, ``ta.make(id)``
with its default wrappers), with actions in the game's own format: what the rollouts
play, and idle actions that spend a turn without ending the game, so that the cap
check can reach the cap. TextArena's API is multi-player and reports one ``done``
(no truncation): `TextArenaAdapter` maps it onto Gymnasium's two calls, ``done`` ->
``terminated``, which is what a trainer sees from it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any


def boxed(*commands: str) -> list[str]:
    return [f"\\boxed{{{c}}}" for c in commands]


def bracketed(*commands: str) -> list[str]:
    return [f"[{c}]" for c in commands]


MOVES = ("up", "down", "left", "right")
CODES = [" ".join(code) for code in itertools.permutations("654321", 4)]
#: (id, rollout actions, idle actions) per peer, in each package's action format.
GEM_GAMES = [
    ("game:Sokoban-v0-easy", boxed(*MOVES), boxed("up", "down")),
    ("game:GuessTheNumber-v0-easy", boxed(*map(str, range(1, 11))), boxed("999")),
    ("game:Mastermind-v0-easy", boxed("1 2", "3 4", "5 6", "2 1"), boxed("1")),
    ("game:TowerofHanoi-v0-easy", boxed("A B", "A C", "B C", "C A"), boxed("A B", "B A")),
    ("game:FifteenPuzzle-v0-easy", boxed(*MOVES), boxed("left", "right")),
]
TEXTARENA_GAMES = [
    ("Sokoban-v0", bracketed(*MOVES), bracketed("up", "down")),
    # A repeated guess is an invalid move and a second invalid move in a row ends the game:
    # the idle actions are new guesses (the cap check is inconclusive on a seed they win).
    ("GuessTheNumber-v0", bracketed(*map(str, range(1, 21))), bracketed(*map(str, range(1, 11)))),
    ("Mastermind-v0", bracketed("1 2 3 4", "5 6 1 2", "2 1 4 3"), bracketed(*CODES[:20])),
    ("TowerOfHanoi-v0", bracketed("A B", "A C", "B C", "C A"), bracketed("A B", "B A")),
    ("FifteenPuzzle-v0", bracketed(*MOVES), bracketed("left", "right")),
]


class TextArenaAdapter:
    """A single-player TextArena env behind Gymnasium's ``reset(seed=)`` and 5-tuple ``step``.

    TextArena: ``reset(num_players, seed)``, ``get_observation() -> (player, obs)``,
    ``step(action) -> (done, info)``, and the rewards from ``close()`` once done. It
    reports one ``done``, so ``terminated = done`` and ``truncated`` is always False.
    """

    def __init__(self, env: Any):
        self.env = env

    def reset(self, *, seed: int | None = None) -> tuple[str, dict]:
        self.env.reset(num_players=1, seed=seed)
        _, obs = self.env.get_observation()
        return str(obs), {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        done, info = self.env.step(action)
        reward = 0.0
        if done:
            rewards, _ = self.env.close()
            reward = float((rewards or {}).get(0, 0.0))
        _, obs = self.env.get_observation()
        return str(obs), reward, bool(done), False, dict(info or {})


def check(name: str, make: Callable[[], Any], actions, idle, cap: int, args) -> dict:
    from turnbudget.utils import check_group_seeding

    make.__name__ = name  # what the failure messages call it

    report = check_group_seeding(
        make,
        seeds=tuple(range(args.seeds)),
        group_size=args.group_size,
        steps=args.steps,
        actions=actions,
        idle_actions=idle,
        turn_cap=cap,
    )
    return {
        "env_id": name,
        "checks": report.checks,
        "failures": {f.check: f.message for f in report.failures},
        "skipped": report.skipped,
    }


def gem_rows(args) -> list[dict]:
    import gem

    rows = []
    for env_id, actions, idle in GEM_GAMES:
        cap = gem.make(env_id).max_turns

        def make(env_id: str = env_id) -> Any:
            return gem.make(env_id)

        rows.append(check(f"GEM {env_id}", make, actions, idle, cap, args))
    return rows


def textarena_rows(args) -> list[dict]:
    import textarena as ta

    rows = []
    for env_id, actions, idle in TEXTARENA_GAMES:
        cap = ta.make(env_id).max_turns

        def make(env_id: str = env_id) -> TextArenaAdapter:
            return TextArenaAdapter(ta.make(env_id))

        rows.append(check(f"TextArena {env_id}", make, actions, idle, cap, args))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--only", choices=("gem-llm", "textarena"), default=None)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the peers log every episode
    for name, rows in (("gem-llm", gem_rows), ("textarena", textarena_rows)):
        if args.only and name != args.only:
            continue
        try:
            results = rows(args)
        except ImportError as error:
            results = [{"env_id": name, "skipped": f"not installed ({error})"}]
        for row in results:
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
