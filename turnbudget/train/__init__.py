"""Train policies on the games: behaviour cloning from the ε-oracle, then MaskablePPO (the rl extra).

A run is configured by one `TrainConfig` (every field is a ``turnbudget
train`` flag) and played on the library's own stack (`make_env`)::

    TurnBudget (fixed T) or SampleTurnBudget (BudgetMix) -> ProcessReward (optional)
    -> RevealBudget -> DiscreteActions -> TextFeatures -> HistoryFeatures -> TaskSeeds

(`TaskSeeds` draws each episode's task and resets the game with it through a
`TaskWorld` just above the game: the stack's own streams run on across episodes.)

- ``algo="bc"`` (`behaviour_clone`): collect ``bc_episodes`` episodes of the
  ε-oracle (``bc_epsilon``) and fit the policy to the commands it played and
  its value head to the Monte-Carlo returns: the "SFT" stage.
- ``algo="ppo"`` (`train_ppo`): sb3-contrib ``MaskablePPO`` (masks from
  `DiscreteActions`), optionally starting from a saved policy (``init``, e.g.
  the BC base).

Memory: the policy sees a window of the last ``history`` executed commands,
per-slot command features and a revisit signal (`HistoryFeatures`), not an
LSTM: measured here, ``RecurrentPPO`` ran at about a third of MaskablePPO's
speed and cannot use action masks, and a short window covers what these
games hide (where you just came from, what you already took).

Training worlds come from task seeds >= ``task_seed_base`` (1,000,000 by
default), drawn per episode from a generator seeded by ``seed``, so they are
disjoint from evaluation seeds (0..9,999) by construction. With one torch
thread a run is bit-for-bit reproducible on the same build: its weights and
optimizer state, and the values of ``progress.csv`` (whose columns SB3 orders
by a set's iteration, which follows the process's hash seed).

Output (``out``): ``policy.zip`` (SB3), ``encoding.json`` (what
`turnbudget.agents.policy.PolicyAgent` needs to rebuild the features and,
with the weights, the network; written by `turnbudget.agents.policy.write_encoding`),
``config.json``, ``progress.csv`` (or TensorBoard events with
``log="tensorboard"``), ``checkpoints/`` and ``summary.json`` (steps/s, share
of time in the envs). Play the result with ``--agent policy:DIR``.

Importing this package imports neither torch nor SB3; a run imports them and,
when they are missing, raises an ImportError that says
``pip install -e '.[rl]' in the turnbudget checkout``.

Example::

    from turnbudget.train import TrainConfig, train

    train(TrainConfig(algo="bc", out="runs/bc"))
    train(TrainConfig(init="runs/bc", budget_mix="uniform:12-40", out="runs/mix"))

or on the command line: ``turnbudget train --algo bc --out runs/bc``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from turnbudget.train.config import TrainConfig, check_config, check_out

if TYPE_CHECKING:
    from turnbudget.train._sb3 import RL_EXTRA, require_rl
    from turnbudget.train.bc import behaviour_clone, collect_demos, fit_policy
    from turnbudget.train.ppo import train_ppo
    from turnbudget.train.stack import TaskSeeds, TaskWorld, make_env, training_encoding

__all__ = [
    "RL_EXTRA",
    "TaskSeeds",
    "TaskWorld",
    "TrainConfig",
    "behaviour_clone",
    "check_out",
    "collect_demos",
    "fit_policy",
    "make_env",
    "require_rl",
    "train",
    "train_ppo",
    "training_encoding",
]

# name -> submodule: loaded on first use, so `turnbudget train --help` (which reads only
# TrainConfig) does not pull in the stack, the agents and the wrappers.
_LAZY = {
    "RL_EXTRA": "_sb3",
    "require_rl": "_sb3",
    "behaviour_clone": "bc",
    "collect_demos": "bc",
    "fit_policy": "bc",
    "train_ppo": "ppo",
    "TaskSeeds": "stack",
    "TaskWorld": "stack",
    "make_env": "stack",
    "training_encoding": "stack",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def train(config: TrainConfig, *, overwrite: bool = False) -> dict[str, Any]:
    """Run ``config.algo`` (`behaviour_clone` or `train_ppo`); save the policy under
    ``config.out``; return the run's summary (also written to ``summary.json``). An ``out``
    that holds another run is refused unless ``overwrite`` (`check_out`)."""
    config = check_config(config)
    if config.algo == "bc":
        from turnbudget.train.bc import behaviour_clone

        return behaviour_clone(config, overwrite=overwrite)
    from turnbudget.train.ppo import train_ppo

    return train_ppo(config, overwrite=overwrite)
