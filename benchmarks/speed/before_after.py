"""Before and after: speed ratios of two revisions, in alternating rounds of one run.

Exports the ``turnbudget`` package of a git revision (``--before``, default ``HEAD~1``) to
a temporary folder and measures it beside the working tree's, round by round (before,
after, before, after, ...), each measurement in a fresh process; prints the median of the
rounds. Every figure is already a ratio taken within one process (a game against the
trivial env, the training envs against the bare game), so the machine's load mostly
cancels; alternating the revisions cancels what is left.

Figures (``--figures``, comma-separated):

- ``vs-trivial:<id>``: the bare game's step rate over `TrivialTextEnv`'s
  (`throughput.vs_trivial`; goal >= 0.05 on Medium); ``vs-trivial-cpu:<id>`` the same
  in CPU time (`throughput.vs_trivial_cpu`), for a machine other jobs keep busy;
- ``env-side:<id>``: CPU per env step of the 16-env training vector env over the bare
  game's (`rl_speed.env_side`; goal <= 5).

Run:
    python benchmarks/speed/before_after.py --before 0f24d13 \\
        --figures vs-trivial:turnbudget/Sokoban-Medium-v0,vs-trivial:turnbudget/Crafting-Medium-v0
    python benchmarks/speed/before_after.py --before 0f24d13 --figures env-side:turnbudget/Maze-Easy-v0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# One measurement, run in HERE (its sibling scripts import as modules) with the revision's
# package first on the path; it prints the figure as JSON.
_MEASURE = {
    "vs-trivial": "import throughput; r = throughput.vs_trivial({id!r}, {seconds}, 0)",
    "vs-trivial-cpu": "import throughput; r = throughput.vs_trivial_cpu({id!r}, {seconds}, 0)",
    "env-side": "import rl_speed; e, b = rl_speed.env_side({id!r}, {steps}); r = e / b",
}


def export(revision: str, folder: Path) -> Path:
    """The revision's ``turnbudget`` package, unpacked under ``folder``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "turnbudget"],
        capture_output=True,
        check=True,
    ).stdout
    path = folder / "archive.tar"
    path.write_bytes(archive)
    with tarfile.open(path) as tar:
        tar.extractall(folder, filter="data")
    return folder


def measure(figure: str, tree: Path, seconds: float, steps: int) -> float:
    kind, _, env_id = figure.partition(":")
    code = _MEASURE[kind].format(id=env_id, seconds=seconds, steps=steps)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", f"{code}; import json; print(json.dumps(r))"],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(json.loads(out.splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", default="HEAD~1", help="git revision measured as before")
    parser.add_argument("--figures", required=True, help="comma-separated, see above")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0, help="per vs-trivial figure")
    parser.add_argument("--steps", type=int, default=400, help="vector steps per env-side figure")
    args = parser.parse_args(argv)
    figures = [f for f in args.figures.split(",") if f]
    unknown = [f for f in figures if f.partition(":")[0] not in _MEASURE or ":" not in f]
    if unknown:
        parser.error(
            f"expect figures like {', '.join(k + ':<id>' for k in _MEASURE)}, got {unknown}"
        )
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": export(args.before, Path(tmp)), "after": ROOT}
        for _ in range(args.rounds):
            for figure in figures:
                for side, tree in trees.items():
                    value = measure(figure, tree, args.seconds, args.steps)
                    results.setdefault((figure, side), []).append(value)
    print(f"median of {args.rounds} alternating rounds; before = {args.before}")
    print("| figure | before | after | rounds before | rounds after |")
    print("|---|---|---|---|---|")
    for figure in figures:
        before, after = results[figure, "before"], results[figure, "after"]
        print(
            f"| {figure} | {statistics.median(before):.3f} | {statistics.median(after):.3f} "
            f"| {', '.join(f'{v:.3f}' for v in before)} | {', '.join(f'{v:.3f}' for v in after)} |"
        )


if __name__ == "__main__":
    main()
