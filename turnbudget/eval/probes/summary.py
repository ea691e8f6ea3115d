"""Probe results: chance-normalized skills with bootstrap intervals over tasks.

`summarize_probes` turns the probe records (``probes.jsonl``) into
``probe_summary.json``: per agent and env group, ``single_step_skill``,
``recovery_skill`` (back to the pre-error distance within the budget) and
``prompt_recovery_skill`` (back within the turns the error added plus
`PROMPT_SLACK`: how *fast*, where the budget is generous enough for any
agent that heads back), each ``{"mean", "low", "high"}``, with the raw rates.
Their Markdown and their pairing with evaluation runs are the report's
(`turnbudget.eval.report`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "PROBE_SUMMARY_FILE",
    "skill",
    "summarize_probes",
    "write_probe_summary",
]

PROBE_SUMMARY_FILE = "probe_summary.json"
ALL = "all"
#: Prompt recovery: back within the turns the error added plus this many (a setback's first
#: command was chosen for the state before it, so a perfect agent may need one more, twice).
PROMPT_SLACK = 2


def _prompt(record: Mapping[str, Any]) -> bool:
    if not record.get("recovered"):
        return False
    added = int(record["distance_after"]) - int(record["distance_before"])
    return int(record["turns_to_recover"]) <= added + PROMPT_SLACK


def skill(p: float, p_random: float) -> float | None:
    """Chance-normalized skill ``(p - p_random) / (1 - p_random)``: 0 for chance, 1 for perfect.

    None when chance is already perfect (nothing to normalize by).

    Example:
        >>> round(skill(0.55, 0.1), 6)
        0.5
    """
    if p_random >= 1.0:
        return None
    return (p - p_random) / (1.0 - p_random)


def _round(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def _skill_interval(
    per_task: np.ndarray, n_bootstrap: int, confidence: float = 0.95
) -> dict[str, Any]:
    """``per_task``: rows (agent hits, agent probes, baseline hits, baseline probes) per task.

    The point estimate pools the probes of every task; the interval resamples tasks (agent
    and baseline together, so the comparison stays paired).
    """
    hits, n, base_hits, base_n = per_task.sum(axis=0)
    mean = skill(hits / n, base_hits / base_n) if n and base_n else None
    low = high = mean
    if mean is not None and n_bootstrap > 0 and len(per_task) > 1:
        rng = np.random.default_rng(0)
        index = rng.integers(0, len(per_task), size=(n_bootstrap, len(per_task)))
        sums = per_task[index].sum(axis=1)  # (n_bootstrap, 4)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = sums[:, 0] / sums[:, 1]
            r = sums[:, 2] / sums[:, 3]
            boot = (p - r) / (1.0 - r)
        boot = boot[np.isfinite(boot)]
        if boot.size:
            alpha = (1.0 - confidence) / 2.0
            low, high = (float(x) for x in np.quantile(boot, [alpha, 1.0 - alpha]))
    return {"mean": _round(mean), "low": _round(low), "high": _round(high)}


def _per_task(
    agent: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]], key: str
) -> np.ndarray:
    counts: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for offset, records in ((0, agent), (2, base)):
        for r in records:
            row = counts[(r["env_id"], int(r["task_seed"]))]
            row[offset] += bool(r[key])
            row[offset + 1] += 1
    rows = [counts[t] for t in sorted(counts) if counts[t][1] and counts[t][3]]
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def _rate(records: Sequence[Mapping[str, Any]], key: str) -> float | None:
    return _round(sum(bool(r[key]) for r in records) / len(records)) if records else None


def _single(agent: list[dict], base: list[dict], n_bootstrap: int) -> dict[str, Any]:
    return {
        "probes": len(agent),
        "rate": _rate(agent, "optimal"),
        "baseline_rate": _rate(base, "optimal"),
        # The exact chance rate: a uniform pick among the admissible commands.
        "chance_rate": _round(np.mean([r["n_optimal"] / r["n_admissible"] for r in agent]))
        if agent and all(r["n_admissible"] for r in agent)
        else None,
        "skill": _skill_interval(_per_task(agent, base, "optimal"), n_bootstrap),
    }


def _recovery(
    agent: list[dict], base: list[dict], control: list[dict], base_control: list[dict],
    skipped: int, n_bootstrap: int,
) -> dict[str, Any]:  # fmt: skip
    turns = sorted(int(r["turns_to_recover"]) for r in agent if r.get("recovered"))
    agent = [{**r, "prompt": _prompt(r)} for r in agent]
    base = [{**r, "prompt": _prompt(r)} for r in base]
    win = _rate(agent, "won")
    control_win = _rate(control, "won")
    return {
        "probes": len(agent),
        "skipped": skipped,  # states where no error of this kind raised the distance
        "recovery_rate": _rate(agent, "recovered"),
        "baseline_recovery_rate": _rate(base, "recovered"),
        "skill": _skill_interval(_per_task(agent, base, "recovered"), n_bootstrap),
        "prompt_recovery_rate": _rate(agent, "prompt"),
        "baseline_prompt_recovery_rate": _rate(base, "prompt"),
        "prompt_skill": _skill_interval(_per_task(agent, base, "prompt"), n_bootstrap),
        "turns_to_recover_mean": _round(np.mean(turns)) if turns else None,
        "turns_to_recover_median": float(np.median(turns)) if turns else None,
        "win_rate": win,
        "control_win_rate": control_win,
        "error_cost": _round(control_win - win)
        if win is not None and control_win is not None
        else None,
        "baseline_win_rate": _rate(base, "won"),
        "baseline_control_win_rate": _rate(base_control, "won"),
    }


def _group(
    records: Sequence[Mapping[str, Any]], label: str, kinds: Sequence[str], n_bootstrap: int
) -> dict[str, Any]:
    def pick(role: str, probe: str, kind: str | None = None, who: str | None = None) -> list[dict]:
        return [
            r for r in records
            if r["role"] == role and r["probe"] == probe and (who is None or r["agent"] == who)
            and (kind is None or r["kind"] == kind) and r.get("applied", True)
        ]  # fmt: skip

    tasks = {(r["env_id"], r["task_seed"]) for r in records}
    single = _single(pick("agent", "single", who=label), pick("baseline", "single"), n_bootstrap)
    recovery = {}
    for kind in [*kinds, None]:
        skipped = sum(
            r["role"] == "agent" and r["agent"] == label and r["probe"] == "recovery"
            and not r.get("applied", True) and (kind is None or r["kind"] == kind)
            for r in records
        )  # fmt: skip
        recovery[kind or ALL] = _recovery(
            pick("agent", "recovery", kind, label), pick("baseline", "recovery", kind),
            pick("agent", "control", kind, label), pick("baseline", "control", kind),
            skipped, n_bootstrap,
        )  # fmt: skip
    return {
        "tasks": len(tasks),
        "single_step_skill": single["skill"],
        "recovery_skill": recovery[ALL]["skill"],
        "prompt_recovery_skill": recovery[ALL]["prompt_skill"],
        "single_step": single,
        "recovery": recovery,
    }


def summarize_probes(
    config: Mapping[str, Any], records: Sequence[Mapping[str, Any]], *, n_bootstrap: int = 1000
) -> dict[str, Any]:
    """Skills per agent and env group (each env id, and "all" when there are several)."""
    envs = list(config["envs"])
    groups = [*envs, ALL] if len(envs) > 1 else envs
    agents: dict[str, Any] = {}
    for label in config["labels"]:
        agents[label] = {
            group: _group(
                [r for r in records if group == ALL or r["env_id"] == group],
                label,
                config["kinds"],
                n_bootstrap,
            )
            for group in groups
        }
    return {"config": dict(config), "n_records": len(records), "agents": agents}


def write_probe_summary(out: str | Path, summary: Mapping[str, Any]) -> Path:
    path = Path(out) / PROBE_SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return path
