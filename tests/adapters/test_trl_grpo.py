"""End to end on this CPU: TRL's multi-turn GRPO trains a tiny random model on a game.

The model and its tokenizer are built in-process (no download); its tool calls
are forced to what a scripted player picks from the conversation (half the
members of a group follow the oracle, half waste their turns), so the game's
tool is really called, groups hold wins and truncations, and the rewards reach
the loss. Marker ``llmrl``: needs the ``trl`` extra.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import _hf_offline  # noqa: F401  (offline, before any Hugging Face import)
import pytest

pytestmark = pytest.mark.llmrl
pytest.importorskip("trl")

from _scripted_player import OVER, TOOL_CALL, ScriptedPlayer, oracle_plan  # noqa: E402
from _tiny_chat import force_tool_calls, tiny_chat_model  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from turnbudget.adapters.rows import task_rows, turn_cap  # noqa: E402
from turnbudget.adapters.trl import (  # noqa: E402
    DEFAULT_PROMPT,
    GameEnvironment,
    game_environment,
    trl_dataset,
)

ENV = "turnbudget/Maze-Easy-v0"
STEPS = 3
GROUP = 4


def _rows() -> list[dict[str, Any]]:
    """One row per optimizer step, each with its own T: the plan's length plus 1, 2 or 3."""
    return [
        {"env_id": ENV, "seed": seed, "T": len(oracle_plan(ENV, seed)) + extra}
        for seed, extra in zip((0, 1, 2), (1, 2, 3), strict=True)
    ]


def test_grpo_trains_on_a_game_through_its_tool(tmp_path, record_property):
    rows = _rows()
    player = ScriptedPlayer(rows, seed=0)
    played: list[dict[str, Any]] = []

    class Recorded(game_environment()):
        """The game environment, recording what each rollout started from and reached."""

        def reset(self, **row: Any) -> str:
            self._first = super().reset(**row)
            self._row = {key: row[key] for key in ("env_id", "seed", "T")}
            return self._first

        def get_reward(self) -> float | None:
            played.append({**self._row, "first": self._first, "outcome": self.outcome,
                           "turns": self.turns_used})  # fmt: skip
            return super().get_reward()

    def choose(conversation: str) -> str | None:
        user = conversation.split("<|im_start|>assistant", 1)
        played_now = TOOL_CALL.findall(user[1]) if len(user) > 1 else []
        return player.next_command(conversation, played_now)

    texts = [
        DEFAULT_PROMPT,
        *player.plans,
        OVER,
        '{"name": "command", "arguments": {"command": "look"}}',
    ]
    model, tokenizer = tiny_chat_model(texts * 10)
    force_tool_calls(model, tokenizer, choose)
    args = GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, bf16=False, seed=0, max_steps=STEPS,
        per_device_train_batch_size=GROUP, num_generations=GROUP, shuffle_dataset=False,
        max_completion_length=2048, max_tool_calling_iterations=turn_cap(rows),
        learning_rate=1e-3, logging_steps=1, report_to="none", save_strategy="no",
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=model, args=args, train_dataset=trl_dataset(rows),
        processing_class=tokenizer, environment_factory=Recorded,
    )  # fmt: skip
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    record_property("grpo_smoke_wall_s", round(wall, 1))
    print(f"\nGRPO smoke run: {STEPS} optimizer steps in {wall:.1f} s")

    assert trainer.state.global_step == STEPS
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == STEPS
    # The game's tool was really called, and every call went through without failing.
    assert all(entry["tools/call_frequency"] > 0 for entry in logs)
    assert all(entry["tools/failure_frequency"] == 0 for entry in logs)
    assert len(played) == STEPS * GROUP
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for rollout in played:
        groups[(rollout["env_id"], rollout["seed"], rollout["T"])].append(rollout)
    assert sorted(groups) == sorted((r["env_id"], r["seed"], r["T"]) for r in rows)
    for (env_id, seed, turns), members in groups.items():
        # A group shares its start: one seed, one first observation.
        assert len(members) == GROUP and len({m["first"] for m in members}) == 1
        plan = oracle_plan(env_id, seed)
        for member in members:
            # The row's T is the turn cap: the oracle's members win in its plan, the
            # others are truncated after exactly T commands, never more.
            assert member["outcome"] in ("won", "truncated")
            expected = len(plan) if member["outcome"] == "won" else turns
            assert member["turns"] == expected
    # Groups hold wins and truncations, so the rewards vary and reach the gradient.
    assert any(entry["reward_std"] > 0 for entry in logs)
    assert any(entry["grad_norm"] > 0 for entry in logs)


def test_the_dataset_carries_each_rows_start_and_budget():
    rows = task_rows(ENV, seeds=3, turn_budget="4,8")
    dataset = trl_dataset(rows, prompt="Play well.")
    assert dataset.column_names == ["prompt", "env_id", "seed", "T"]
    assert [{k: r[k] for k in ("env_id", "seed", "T")} for r in dataset] == rows
    assert dataset[0]["prompt"] == [{"role": "user", "content": "Play well."}]
    with pytest.raises(ValueError, match="Expect at least one row"):
        trl_dataset([])
    with pytest.raises(ValueError, match="Expect `prompt` to be a str"):
        trl_dataset(rows, prompt=["Play."])


def test_trl_reads_the_one_tool_schema():
    schema = get_json_schema(GameEnvironment().command)["function"]
    assert schema["name"] == "command"
    assert schema["parameters"]["properties"]["command"]["type"] == "string"
    assert schema["parameters"]["required"] == ["command"]
