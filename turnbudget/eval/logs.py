"""The run directory's logs: ``run.json``, ``episodes.jsonl`` and ``steps.jsonl``.

Each finished episode is written as its step lines, then its episode line;
the episode line is what marks the episode complete. A process killed
mid-write leaves at most a torn last line and the steps of an episode without
its episode line; `repair_logs` removes both before a resumed run appends, so
the logs never hold a duplicated or half-logged episode. It also removes the
records of episodes that *failed to run* (they have no steps), so a resumed
run tries them again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "EPISODES_FILE",
    "RUN_FILE",
    "STEPS_FILE",
    "LogWriter",
    "dumps",
    "prepare_out",
    "read_jsonl",
    "repair_logs",
]

RUN_FILE = "run.json"
EPISODES_FILE = "episodes.jsonl"
STEPS_FILE = "steps.jsonl"


def read_jsonl(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int, bool]:
    """Read a JSONL log: ``(records, good_bytes, torn)``.

    A last line without its newline, or one that does not parse, is what a
    killed writer leaves behind: it is reported as ``torn`` and excluded, and
    ``good_bytes`` is where the good part ends. A bad line anywhere else is
    corruption and raises ``ValueError``.
    """
    records: list[dict[str, Any]] = []
    good = 0
    path = Path(path)
    if not path.exists():
        return records, 0, False
    with path.open("rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    # data ends with "\n" when the last line is whole: the final element is then b"".
    for i, line in enumerate(lines[:-1]):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 2 and lines[-1] == b"":
                return records, good, True
            raise ValueError(f"{path}: line {i + 1} is not JSON; the log is corrupt") from None
        records.append(rec)
        good += len(line) + 1
    return records, good, lines[-1] != b""


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                return
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                return


def repair_logs(out: Path, planned: set[str]) -> set[str]:
    """Keep only whole, planned, complete episodes in the logs; return their ids."""
    episodes_path, steps_path = out / EPISODES_FILE, out / STEPS_FILE
    episodes, _, torn = read_jsonl(episodes_path)
    done: set[str] = set()
    keep_eps: list[dict[str, Any]] = []
    for rec in episodes:
        eid = rec.get("episode_id")
        # An episode that failed to run is tried again: its record goes.
        if eid in planned and eid not in done and not rec.get("failed_to_run"):
            done.add(eid)
            keep_eps.append(rec)
    dirty = torn or len(keep_eps) != len(episodes)
    if steps_path.exists():
        seen: set[tuple[str, int]] = set()
        step_ok = True
        with steps_path.open("rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    step_ok = False
                    break
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    step_ok = False
                    break
                key = (rec.get("episode_id"), rec.get("turn"))
                if key[0] not in done or key in seen:
                    step_ok = False
                    break
                seen.add(key)
        dirty = dirty or not step_ok
    if dirty:
        tmp = episodes_path.with_suffix(".jsonl.tmp")
        with tmp.open("w") as f:
            f.writelines(dumps(r) + "\n" for r in keep_eps)
        if steps_path.exists():
            tmp_steps = steps_path.with_suffix(".jsonl.tmp")
            seen = set()
            with tmp_steps.open("w") as f:
                for rec in _iter_jsonl(steps_path):
                    key = (rec.get("episode_id"), rec.get("turn"))
                    if key[0] in done and key not in seen:
                        seen.add(key)
                        f.write(dumps(rec) + "\n")
            os.replace(tmp_steps, steps_path)
        os.replace(tmp, episodes_path)
    return done


def dumps(record: Mapping[str, Any]) -> str:
    """One record as a compact JSON line (without the newline)."""
    return json.dumps(record, separators=(",", ":"))


class LogWriter:
    """Appends finished episodes to the logs: step lines first, then the episode line."""

    def __init__(self, out: Path):
        self._episodes = (out / EPISODES_FILE).open("a")
        self._steps = (out / STEPS_FILE).open("a")

    def write(self, episode: dict[str, Any], steps: list[dict[str, Any]] | str) -> None:
        if steps:
            self._steps.write(
                steps if isinstance(steps, str) else "".join(dumps(s) + "\n" for s in steps)
            )
            self._steps.flush()
        self._episodes.write(dumps(episode) + "\n")
        self._episodes.flush()

    def close(self) -> None:
        self._steps.close()
        self._episodes.close()


def prepare_out(out: Path, config: Any, overwrite: bool) -> None:
    """Create ``out`` and its ``run.json`` (``config`` is an `EvalConfig`), or check that
    the run already there has the same configuration; ``overwrite`` starts afresh."""
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    if overwrite:
        for name in (RUN_FILE, EPISODES_FILE, STEPS_FILE):
            (out / name).unlink(missing_ok=True)
    if run_file.exists():
        previous = json.loads(run_file.read_text())
        if previous != config.to_dict():
            diff = sorted(
                k
                for k in set(previous) | set(config.to_dict())
                if previous.get(k) != config.to_dict().get(k)
            )
            raise ValueError(
                f"{out} holds a run with a different configuration (differs in: "
                f"{', '.join(diff)}). Resume only with the same settings, or choose "
                "a new output directory (or pass overwrite=True / --overwrite)."
            )
    else:
        run_file.write_text(json.dumps(config.to_dict(), indent=2) + "\n")
